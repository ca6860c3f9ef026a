//! Host-side state of one execution: the thread table (stable ids, pending
//! operations, mailboxes, registered names) and the shared objects guests
//! reach through hooks. Pure Rust, no wasm: it decides what an operation
//! does, whether it is enabled, what it touches and how it is described.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use wasmrace_trace::{mix64, Access, Failure, FailureKind, Oid, OpKind, ThreadPath, Tid, Waiting};

/// Extra id domain: "the name a thread is registered under", so that two
/// registrations of one thread conflict.
const NAME_SLOT_TAG: u64 = 6;

fn name_slot(t: Tid) -> Oid {
    Oid::derive(NAME_SLOT_TAG, t.0, 0)
}

/// A pending operation with its arguments, recorded when the guest called
/// the hook and run when the scheduler picks the thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Placeholder before a thread's first segment has run.
    Start,
    Spawn {
        arg: u32,
    },
    Join {
        target: u64,
    },
    Yield,
    Exit,
    Send {
        to: u64,
        data: Vec<u8>,
    },
    Recv,
    RecvFrom {
        from: u64,
    },
    CellNew {
        init: u64,
    },
    CellGet {
        h: u64,
    },
    CellSet {
        h: u64,
        v: u64,
    },
    AtomicNew {
        init: u64,
    },
    AtomicLoad {
        h: u64,
    },
    AtomicStore {
        h: u64,
        v: u64,
    },
    AtomicSwap {
        h: u64,
        v: u64,
    },
    AtomicFetchAdd {
        h: u64,
        v: u64,
    },
    AtomicCas {
        h: u64,
        current: u64,
        new: u64,
    },
    MutexNew,
    MutexLock {
        h: u64,
    },
    MutexUnlock {
        h: u64,
    },
    CondvarNew,
    CondvarWait {
        cv: u64,
        m: u64,
    },
    CondvarWake {
        cv: u64,
        m: u64,
    },
    NotifyOne {
        cv: u64,
    },
    NotifyAll {
        cv: u64,
    },
    TableNew,
    TableInsert {
        h: u64,
        k: u64,
        v: u64,
        out: u32,
    },
    TableGet {
        h: u64,
        k: u64,
        out: u32,
    },
    TableRemove {
        h: u64,
        k: u64,
        out: u32,
    },
    Register {
        name: Vec<u8>,
        tid: u64,
    },
    Whereis {
        name: Vec<u8>,
        out: u32,
    },
    Unregister {
        name: Vec<u8>,
    },
    Choose {
        n: u32,
    },
    /// `wasmrace::phase(name)`: the guest announces a phase; no effect on
    /// the world, touches nothing.
    Phase {
        name: Vec<u8>,
    },
}

impl Op {
    pub fn kind(&self) -> OpKind {
        use Op::*;
        match self {
            Start => OpKind::Yield,
            Spawn { .. } => OpKind::Spawn,
            Join { .. } => OpKind::Join,
            Yield => OpKind::Yield,
            Exit => OpKind::Exit,
            Send { .. } => OpKind::Send,
            Recv => OpKind::Recv,
            RecvFrom { .. } => OpKind::RecvFrom,
            CellNew { .. } => OpKind::CellNew,
            CellGet { .. } => OpKind::CellGet,
            CellSet { .. } => OpKind::CellSet,
            AtomicNew { .. } => OpKind::AtomicNew,
            AtomicLoad { .. } => OpKind::AtomicLoad,
            AtomicStore { .. } => OpKind::AtomicStore,
            AtomicSwap { .. } => OpKind::AtomicSwap,
            AtomicFetchAdd { .. } => OpKind::AtomicFetchAdd,
            AtomicCas { .. } => OpKind::AtomicCompareExchange,
            MutexNew => OpKind::MutexNew,
            MutexLock { .. } => OpKind::MutexLock,
            MutexUnlock { .. } => OpKind::MutexUnlock,
            CondvarNew => OpKind::CondvarNew,
            CondvarWait { .. } => OpKind::CondvarWait,
            CondvarWake { .. } => OpKind::CondvarWake,
            NotifyOne { .. } => OpKind::CondvarNotifyOne,
            NotifyAll { .. } => OpKind::CondvarNotifyAll,
            TableNew => OpKind::TableNew,
            TableInsert { .. } => OpKind::TableInsert,
            TableGet { .. } => OpKind::TableGet,
            TableRemove { .. } => OpKind::TableRemove,
            Register { .. } => OpKind::Register,
            Whereis { .. } => OpKind::Whereis,
            Unregister { .. } => OpKind::Unregister,
            Choose { .. } => OpKind::Choose,
            Phase { .. } => OpKind::Phase,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjKind {
    Cell,
    Atomic,
    Mutex,
    Condvar,
    Table,
}

impl ObjKind {
    fn name(self) -> &'static str {
        match self {
            ObjKind::Cell => "cell",
            ObjKind::Atomic => "atomic",
            ObjKind::Mutex => "mutex",
            ObjKind::Condvar => "condvar",
            ObjKind::Table => "table",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Object {
    Cell(u64),
    Atomic(u64),
    Mutex { holder: Option<Tid> },
    Condvar { waiters: VecDeque<Tid> },
    Table(BTreeMap<u64, u64>),
}

impl Object {
    fn kind(&self) -> ObjKind {
        match self {
            Object::Cell(_) => ObjKind::Cell,
            Object::Atomic(_) => ObjKind::Atomic,
            Object::Mutex { .. } => ObjKind::Mutex,
            Object::Condvar { .. } => ObjKind::Condvar,
            Object::Table(_) => ObjKind::Table,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjEntry {
    pub obj: Object,
    pub creator: Tid,
    pub index: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Message {
    pub from: Tid,
    /// Index of this send among the sender's sends.
    pub seq: u32,
    pub data: Vec<u8>,
}

/// How a thread is entered on the wasm side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    /// The test export (main thread).
    Test,
    /// `__wasmrace_thread_start(arg)`.
    ThreadStart(u32),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    pub path: ThreadPath,
    pub tid: Tid,
    pub exited: bool,
    pub pending: Op,
    /// Guest call site of the pending operation.
    pub site: u32,
    pub spawns: u32,
    pub objects: u32,
    /// Messages sent so far (the next send's `seq`).
    pub sends: u32,
    pub mailbox: VecDeque<Message>,
    /// Message taken by the last receive, waiting for `recv_take`.
    pub taken: Option<Message>,
    pub name: Option<Vec<u8>>,
    /// Set by `notify_*` while the thread waits on a condition variable.
    pub notified: bool,
    pub entry: Entry,
    /// Memory slot (Asyncify buffer + shadow stack) index.
    pub slot: u32,
    /// Saved `__stack_pointer` while suspended.
    pub sp: u32,
    /// Lowest stack pointer this thread ever had: its stack pages below
    /// were never written.
    pub low: u32,
    /// True once the first segment ran (the entry is then resumed by rewind).
    pub started: bool,
    /// Panic reported through `report_panic` during the current segment.
    pub panic: Option<(String, String)>,
}

/// A value handed back to the guest when its hook returns, plus an optional
/// `u64` written at an `out` pointer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ret {
    pub val: i64,
    pub out: Option<(u32, u64)>,
}

impl Ret {
    fn val(v: u64) -> Self {
        Ret {
            val: v as i64,
            out: None,
        }
    }
    fn unit() -> Self {
        Ret::default()
    }
    fn opt(out: u32, v: Option<u64>) -> Self {
        match v {
            Some(v) => Ret {
                val: 1,
                out: Some((out, v)),
            },
            None => Ret { val: 0, out: None },
        }
    }
}

pub enum Outcome {
    /// The operation completed: resume the guest with this value.
    Return(Ret),
    /// The thread stays suspended with a new pending operation.
    Continue,
    /// The thread has exited.
    Exited,
    /// The operation failed the execution.
    Fail(Failure),
}

/// What one executed step did, for strategies and traces.
pub struct Executed {
    pub outcome: Outcome,
    /// The message a send sent or a receive took (see `StepInfo::message`).
    pub message: Option<(Tid, u32)>,
    /// Human-readable object and detail, filled only when tracing.
    pub object: Option<String>,
    pub detail: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct World {
    pub threads: Vec<Thread>,
    index: BTreeMap<Tid, usize>,
    pub objects: BTreeMap<u64, ObjEntry>,
    pub names: BTreeMap<Vec<u8>, Tid>,
    /// Threads created by the last step whose first segment has not run.
    pub unstarted: Vec<usize>,
    /// Base address of each thread slot (Asyncify buffer, then shadow
    /// stack) in pages the host grew itself.
    pub slot_bases: Vec<u32>,
    /// Slots of exited threads, reused last-in first-out.
    pub free_slots: Vec<u32>,
    /// Per slot: the lowest stack pointer of any thread that ran in it (a
    /// reused slot keeps its first user's writes).
    pub slot_lows: Vec<u32>,
}

fn fmt_name(name: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(name))
}

impl World {
    pub fn new() -> Self {
        World::default()
    }

    /// Adds a thread; the slot is assigned by the caller.
    pub fn add_thread(&mut self, path: ThreadPath, entry: Entry, slot: u32, sp: u32) -> usize {
        let tid = path.tid();
        let i = self.threads.len();
        self.threads.push(Thread {
            path,
            tid,
            exited: false,
            pending: Op::Start,
            site: 0,
            spawns: 0,
            objects: 0,
            sends: 0,
            mailbox: VecDeque::new(),
            taken: None,
            name: None,
            notified: false,
            entry,
            slot,
            sp,
            low: sp,
            started: false,
            panic: None,
        });
        self.index.insert(tid, i);
        i
    }

    /// Heap bytes this world holds, approximately (B-tree nodes are
    /// estimated at one and a half times their entries). Saved snapshots
    /// each hold a clone, so their memory budget counts this
    /// (`Program::snapshot_bytes`).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let op = |op: &Op| match op {
            Op::Send { data, .. } => data.capacity(),
            Op::Register { name, .. }
            | Op::Whereis { name, .. }
            | Op::Unregister { name }
            | Op::Phase { name } => name.capacity(),
            _ => 0,
        };
        let message = |m: &Message| size_of::<Message>() + m.data.capacity();
        let threads: usize = self
            .threads
            .iter()
            .map(|t| {
                t.path.0.capacity() * size_of::<u32>()
                    + op(&t.pending)
                    + t.mailbox.capacity() * size_of::<Message>()
                    + t.mailbox.iter().map(|m| m.data.capacity()).sum::<usize>()
                    + t.taken.as_ref().map_or(0, message)
                    + t.name.as_ref().map_or(0, Vec::capacity)
                    + t.panic
                        .as_ref()
                        .map_or(0, |(a, b)| a.capacity() + b.capacity())
            })
            .sum::<usize>()
            + self.threads.capacity() * size_of::<Thread>();
        let btree = |entries: usize, entry: usize| entries * entry * 3 / 2;
        let objects: usize = btree(self.objects.len(), size_of::<u64>() + size_of::<ObjEntry>())
            + self
                .objects
                .values()
                .map(|e| match &e.obj {
                    Object::Condvar { waiters } => waiters.capacity() * size_of::<Tid>(),
                    Object::Table(t) => btree(t.len(), 2 * size_of::<u64>()),
                    _ => 0,
                })
                .sum::<usize>();
        let names = btree(self.names.len(), size_of::<Vec<u8>>() + size_of::<Tid>())
            + self.names.keys().map(Vec::capacity).sum::<usize>();
        threads
            + objects
            + names
            + btree(self.index.len(), size_of::<Tid>() + size_of::<usize>())
            + (self.unstarted.capacity() * size_of::<usize>())
            + (self.slot_bases.capacity() + self.free_slots.capacity() + self.slot_lows.capacity())
                * size_of::<u32>()
    }

    pub fn thread_index(&self, tid: Tid) -> Option<usize> {
        self.index.get(&tid).copied()
    }

    pub fn thread_name(&self, tid: Tid) -> String {
        match self.thread_index(tid) {
            Some(i) => self.threads[i].path.to_string(),
            None => format!("<unknown thread {:#x}>", tid.0),
        }
    }

    fn alive(&self, tid: Tid) -> bool {
        self.thread_index(tid)
            .is_some_and(|i| !self.threads[i].exited)
    }

    pub fn object_name(&self, h: u64) -> String {
        match self.objects.get(&h) {
            Some(e) => format!(
                "{} {}#{}",
                e.obj.kind().name(),
                self.thread_name(e.creator),
                e.index
            ),
            None => format!("<unknown handle {h:#x}>"),
        }
    }

    /// Whether thread `i`'s pending operation can run now.
    pub fn enabled(&self, i: usize) -> bool {
        let t = &self.threads[i];
        if t.exited {
            return false;
        }
        match &t.pending {
            Op::Join { target } => !self.alive(Tid(*target)),
            Op::Recv => !t.mailbox.is_empty(),
            Op::RecvFrom { from } => t.mailbox.iter().any(|m| m.from.0 == *from),
            Op::MutexLock { h } => match self.objects.get(h) {
                Some(ObjEntry {
                    obj: Object::Mutex { holder },
                    ..
                }) => holder.is_none(),
                // Unknown handle: let it run so it fails as misuse.
                _ => true,
            },
            Op::CondvarWake { m, .. } => {
                t.notified
                    && match self.objects.get(m) {
                        Some(ObjEntry {
                            obj: Object::Mutex { holder },
                            ..
                        }) => holder.is_none(),
                        _ => true,
                    }
            }
            _ => true,
        }
    }

    /// Number of alternatives of thread `i`'s pending operation.
    pub fn alts(&self, i: usize) -> u32 {
        match &self.threads[i].pending {
            Op::Choose { n } => (*n).max(1),
            Op::NotifyOne { cv } => match self.objects.get(cv) {
                Some(ObjEntry {
                    obj: Object::Condvar { waiters },
                    ..
                }) => (waiters.len() as u32).max(1),
                _ => 1,
            },
            _ => 1,
        }
    }

    /// The objects thread `i`'s pending operation would touch if run now.
    pub fn accesses(&self, i: usize, out: &mut Vec<Access>) {
        out.clear();
        let t = &self.threads[i];
        match &t.pending {
            Op::Start | Op::Spawn { .. } | Op::Yield | Op::Choose { .. } | Op::Phase { .. } => {}
            Op::CellNew { .. }
            | Op::AtomicNew { .. }
            | Op::MutexNew
            | Op::CondvarNew
            | Op::TableNew => {}
            Op::Join { target } => out.push(Access::sync(Oid::liveness(Tid(*target)))),
            Op::Exit => {
                out.push(Access::write(Oid::liveness(t.tid)));
                out.push(Access::write(name_slot(t.tid)));
                if let Some(n) = &t.name {
                    out.push(Access::write(Oid::name(n)));
                }
            }
            Op::Send { to, .. } => out.push(Access::write(Oid::mailbox(Tid(*to)))),
            Op::Recv | Op::RecvFrom { .. } => out.push(Access::write(Oid::mailbox(t.tid))),
            Op::CellGet { h } | Op::AtomicLoad { h } => out.push(Access::read(Oid(*h))),
            Op::CellSet { h, .. }
            | Op::AtomicStore { h, .. }
            | Op::AtomicSwap { h, .. }
            | Op::AtomicFetchAdd { h, .. }
            | Op::AtomicCas { h, .. } => out.push(Access::write(Oid(*h))),
            Op::MutexLock { h } | Op::MutexUnlock { h } => out.push(Access::sync(Oid(*h))),
            Op::CondvarWait { cv, m } | Op::CondvarWake { cv, m } => {
                out.push(Access::sync(Oid(*cv)));
                out.push(Access::sync(Oid(*m)));
            }
            Op::NotifyOne { cv } | Op::NotifyAll { cv } => out.push(Access::sync(Oid(*cv))),
            Op::TableGet { h, k, .. } => out.push(Access::read(Oid::table_key(Oid(*h), *k))),
            Op::TableInsert { h, k, .. } | Op::TableRemove { h, k, .. } => {
                out.push(Access::write(Oid::table_key(Oid(*h), *k)))
            }
            Op::Register { name, tid } => {
                out.push(Access::write(Oid::name(name)));
                out.push(Access::read(Oid::liveness(Tid(*tid))));
                out.push(Access::write(name_slot(Tid(*tid))));
            }
            Op::Whereis { name, .. } => out.push(Access::read(Oid::name(name))),
            Op::Unregister { name } => {
                out.push(Access::write(Oid::name(name)));
                if let Some(owner) = self.names.get(name) {
                    out.push(Access::write(name_slot(*owner)));
                }
            }
        }
    }

    /// What a blocked thread waits for, for deadlock reports.
    pub fn waits_for(&self, i: usize) -> String {
        let t = &self.threads[i];
        match &t.pending {
            Op::Join { target } => {
                format!("thread `{}` to exit (join)", self.thread_name(Tid(*target)))
            }
            Op::Recv => "a message (recv on an empty mailbox)".into(),
            Op::RecvFrom { from } => format!(
                "a message from `{}` (recv_from)",
                self.thread_name(Tid(*from))
            ),
            Op::MutexLock { h } => {
                let holder = match self.objects.get(h) {
                    Some(ObjEntry {
                        obj: Object::Mutex { holder: Some(hd) },
                        ..
                    }) => self.thread_name(*hd),
                    _ => "nobody".into(),
                };
                format!("`{}` held by `{holder}`", self.object_name(*h))
            }
            Op::CondvarWake { cv, m } => {
                if t.notified {
                    format!(
                        "`{}` to re-acquire after a notification",
                        self.object_name(*m)
                    )
                } else {
                    format!("a notification on `{}`", self.object_name(*cv))
                }
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    pub fn deadlock(&self) -> Failure {
        let waiting: Vec<Waiting> = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.exited)
            .map(|(i, t)| Waiting {
                thread: t.path.to_string(),
                waits_for: self.waits_for(i),
            })
            .collect();
        let mut f = Failure::new(
            FailureKind::Deadlock,
            None,
            format!(
                "every live thread is blocked ({} thread{})",
                waiting.len(),
                if waiting.len() == 1 { "" } else { "s" }
            ),
        );
        f.waiting = waiting;
        f
    }

    fn misuse(&self, i: usize, msg: String) -> Outcome {
        Outcome::Fail(Failure::new(
            FailureKind::Misuse,
            Some(self.threads[i].path.to_string()),
            msg,
        ))
    }

    fn new_object(&mut self, i: usize, obj: Object) -> u64 {
        let t = &mut self.threads[i];
        let index = t.objects;
        t.objects += 1;
        let creator = t.tid;
        let mut h = Oid::object(creator, index).0;
        if h == 0 {
            h = mix64(1);
        }
        self.objects.insert(
            h,
            ObjEntry {
                obj,
                creator,
                index,
            },
        );
        h
    }

    /// Creates the child thread of a spawn; the caller assigns its memory slot.
    pub fn spawn_child(&mut self, parent: usize, arg: u32, slot: u32, sp: u32) -> usize {
        let p = &mut self.threads[parent];
        p.spawns += 1;
        let path = p.path.child(p.spawns);
        let c = self.add_thread(path, Entry::ThreadStart(arg), slot, sp);
        self.unstarted.push(c);
        c
    }

    /// Runs thread `i`'s pending operation with alternative `alt`. Spawns are
    /// handled by the caller (they need a memory slot) before calling this
    /// with the child's id as `spawned`.
    /// `accesses` receives what the operation touched (a reused buffer: no
    /// allocation per step).
    pub fn execute(
        &mut self,
        i: usize,
        alt: u32,
        spawned: Option<Tid>,
        tracing: bool,
        accesses: &mut Vec<Access>,
    ) -> Executed {
        self.accesses(i, accesses);
        self.execute_with(i, alt, spawned, tracing, accesses)
    }

    /// `execute` for a caller that already holds thread `i`'s pending
    /// accesses (`accesses(i)`) in `accesses`, as the program's views do.
    pub fn execute_with(
        &mut self,
        i: usize,
        alt: u32,
        spawned: Option<Tid>,
        tracing: bool,
        accesses: &mut Vec<Access>,
    ) -> Executed {
        let op = std::mem::replace(&mut self.threads[i].pending, Op::Start);
        let me = self.threads[i].tid;
        let mut object = None;
        let mut detail = String::new();
        let mut message = None;
        macro_rules! obj_mut {
            ($h:expr, $pat:pat => $body:expr) => {
                match self.objects.get_mut(&$h) {
                    Some(ObjEntry { obj: $pat, .. }) => Some($body),
                    _ => None,
                }
            };
        }
        if tracing {
            object = match &op {
                Op::CellGet { h }
                | Op::CellSet { h, .. }
                | Op::AtomicLoad { h }
                | Op::AtomicStore { h, .. }
                | Op::AtomicSwap { h, .. }
                | Op::AtomicFetchAdd { h, .. }
                | Op::AtomicCas { h, .. }
                | Op::MutexLock { h }
                | Op::MutexUnlock { h } => Some(self.object_name(*h)),
                Op::CondvarWait { cv, .. }
                | Op::CondvarWake { cv, .. }
                | Op::NotifyOne { cv }
                | Op::NotifyAll { cv } => Some(self.object_name(*cv)),
                Op::TableInsert { h, k, .. }
                | Op::TableGet { h, k, .. }
                | Op::TableRemove { h, k, .. } => Some(format!("{}[{k}]", self.object_name(*h))),
                Op::Send { to, .. } => Some(format!("mailbox {}", self.thread_name(Tid(*to)))),
                Op::Recv | Op::RecvFrom { .. } => Some(format!("mailbox {}", self.threads[i].path)),
                Op::Join { target } => Some(format!("thread {}", self.thread_name(Tid(*target)))),
                Op::Register { name, .. } | Op::Whereis { name, .. } | Op::Unregister { name } => {
                    Some(format!("name {}", fmt_name(name)))
                }
                _ => None,
            };
        }
        let outcome = match op {
            Op::Start => Outcome::Return(Ret::unit()),
            Op::Spawn { .. } => {
                let child = spawned.expect("spawn executed with a child");
                if tracing {
                    detail = format!("-> {}", self.thread_name(child));
                }
                Outcome::Return(Ret::val(child.0))
            }
            Op::Join { target } => {
                if self.thread_index(Tid(target)).is_none() {
                    self.misuse(i, format!("join on unknown thread id `{target:#x}`"))
                } else {
                    Outcome::Return(Ret::unit())
                }
            }
            Op::Yield => Outcome::Return(Ret::unit()),
            Op::Phase { name } => {
                if tracing {
                    detail = fmt_name(&name);
                }
                Outcome::Return(Ret::unit())
            }
            Op::Exit => {
                let t = &mut self.threads[i];
                t.exited = true;
                if let Some(n) = t.name.take() {
                    self.names.remove(&n);
                }
                Outcome::Exited
            }
            Op::Send { to, data } => {
                if tracing {
                    detail = format!("{} bytes {:?}", data.len(), String::from_utf8_lossy(&data));
                }
                match self.thread_index(Tid(to)) {
                    None => self.misuse(i, format!("send to unknown thread id `{to:#x}`")),
                    Some(j) => {
                        let seq = self.threads[i].sends;
                        self.threads[i].sends += 1;
                        message = Some((me, seq));
                        // Erlang semantics: a message to an exited thread is dropped.
                        if !self.threads[j].exited {
                            self.threads[j].mailbox.push_back(Message {
                                from: me,
                                seq,
                                data,
                            });
                        } else if tracing {
                            detail.push_str(" (dropped: receiver has exited)");
                        }
                        Outcome::Return(Ret::unit())
                    }
                }
            }
            Op::Recv | Op::RecvFrom { .. } => {
                let t = &mut self.threads[i];
                let pos = match op {
                    Op::RecvFrom { from } => t.mailbox.iter().position(|m| m.from.0 == from),
                    _ => (!t.mailbox.is_empty()).then_some(0),
                };
                let m = t
                    .mailbox
                    .remove(pos.expect("recv scheduled while disabled"))
                    .expect("message");
                let len = m.data.len() as u64;
                message = Some((m.from, m.seq));
                if tracing {
                    detail = format!("<- {} bytes {:?}", len, String::from_utf8_lossy(&m.data));
                    let from = m.from;
                    t.taken = Some(m);
                    let _ = write!(detail, " from {}", self.thread_name(from));
                } else {
                    t.taken = Some(m);
                }
                Outcome::Return(Ret::val(len))
            }
            Op::CellNew { init } => {
                let h = self.new_object(i, Object::Cell(init));
                if tracing {
                    detail = format!("{init} -> {}", self.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::AtomicNew { init } => {
                let h = self.new_object(i, Object::Atomic(init));
                if tracing {
                    detail = format!("{init} -> {}", self.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::MutexNew | Op::CondvarNew | Op::TableNew => {
                let obj = match op {
                    Op::MutexNew => Object::Mutex { holder: None },
                    Op::CondvarNew => Object::Condvar {
                        waiters: VecDeque::new(),
                    },
                    _ => Object::Table(BTreeMap::new()),
                };
                let h = self.new_object(i, obj);
                if tracing {
                    detail = format!("-> {}", self.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::CellGet { h } => match obj_mut!(h, Object::Cell(v) => *v) {
                Some(v) => {
                    if tracing {
                        detail = format!("-> {v}");
                    }
                    Outcome::Return(Ret::val(v))
                }
                None => self.misuse(
                    i,
                    format!("cell.get on `{}`, which is not a cell", self.object_name(h)),
                ),
            },
            Op::CellSet { h, v } => match obj_mut!(h, Object::Cell(x) => *x = v) {
                Some(()) => {
                    if tracing {
                        detail = format!("{v}");
                    }
                    Outcome::Return(Ret::unit())
                }
                None => self.misuse(
                    i,
                    format!("cell.set on `{}`, which is not a cell", self.object_name(h)),
                ),
            },
            Op::AtomicLoad { h } => match obj_mut!(h, Object::Atomic(v) => *v) {
                Some(v) => {
                    if tracing {
                        detail = format!("-> {v}");
                    }
                    Outcome::Return(Ret::val(v))
                }
                None => self.misuse(
                    i,
                    format!(
                        "atomic.load on `{}`, which is not an atomic",
                        self.object_name(h)
                    ),
                ),
            },
            Op::AtomicStore { h, v } => match obj_mut!(h, Object::Atomic(x) => *x = v) {
                Some(()) => {
                    if tracing {
                        detail = format!("{v}");
                    }
                    Outcome::Return(Ret::unit())
                }
                None => self.misuse(
                    i,
                    format!(
                        "atomic.store on `{}`, which is not an atomic",
                        self.object_name(h)
                    ),
                ),
            },
            Op::AtomicSwap { h, v } => {
                match obj_mut!(h, Object::Atomic(x) => std::mem::replace(x, v)) {
                    Some(old) => {
                        if tracing {
                            detail = format!("{v} -> {old}");
                        }
                        Outcome::Return(Ret::val(old))
                    }
                    None => self.misuse(
                        i,
                        format!(
                            "atomic.swap on `{}`, which is not an atomic",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::AtomicFetchAdd { h, v } => {
                match obj_mut!(h, Object::Atomic(x) => { let old = *x; *x = old.wrapping_add(v); old })
                {
                    Some(old) => {
                        if tracing {
                            detail = format!("{v} -> {old}");
                        }
                        Outcome::Return(Ret::val(old))
                    }
                    None => self.misuse(
                        i,
                        format!(
                            "atomic.fetch_add on `{}`, which is not an atomic",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::AtomicCas { h, current, new } => {
                match obj_mut!(h, Object::Atomic(x) => { let old = *x; if old == current { *x = new; } old })
                {
                    Some(old) => {
                        if old != current {
                            // A failed compare-exchange only reads.
                            accesses.clear();
                            accesses.push(Access::read(Oid(h)));
                        }
                        if tracing {
                            detail = if old == current {
                                format!("{current} => {new}: ok")
                            } else {
                                format!("{current} => {new}: failed, found {old}")
                            };
                        }
                        Outcome::Return(Ret::val(old))
                    }
                    None => self.misuse(
                        i,
                        format!(
                            "atomic.compare_exchange on `{}`, which is not an atomic",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::MutexLock { h } => {
                match obj_mut!(h, Object::Mutex { holder } => { *holder = Some(me); }) {
                    Some(()) => Outcome::Return(Ret::unit()),
                    None => self.misuse(
                        i,
                        format!(
                            "mutex.lock on `{}`, which is not a mutex",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::MutexUnlock { h } => {
                match obj_mut!(h, Object::Mutex { holder } => { let ok = *holder == Some(me); if ok { *holder = None; } ok })
                {
                    Some(true) => Outcome::Return(Ret::unit()),
                    Some(false) => self.misuse(
                        i,
                        format!(
                            "mutex.unlock of `{}`, which this thread does not hold",
                            self.object_name(h)
                        ),
                    ),
                    None => self.misuse(
                        i,
                        format!(
                            "mutex.unlock on `{}`, which is not a mutex",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::CondvarWait { cv, m } => {
                let held = matches!(self.objects.get(&m), Some(ObjEntry { obj: Object::Mutex { holder: Some(h) }, .. }) if *h == me);
                let is_cv = matches!(
                    self.objects.get(&cv),
                    Some(ObjEntry {
                        obj: Object::Condvar { .. },
                        ..
                    })
                );
                if !is_cv {
                    self.misuse(
                        i,
                        format!(
                            "condvar.wait on `{}`, which is not a condvar",
                            self.object_name(cv)
                        ),
                    )
                } else if !held {
                    self.misuse(
                        i,
                        format!(
                            "condvar.wait with `{}`, which this thread does not hold",
                            self.object_name(m)
                        ),
                    )
                } else {
                    obj_mut!(m, Object::Mutex { holder } => *holder = None);
                    obj_mut!(cv, Object::Condvar { waiters } => waiters.push_back(me));
                    let t = &mut self.threads[i];
                    t.notified = false;
                    t.pending = Op::CondvarWake { cv, m };
                    if tracing {
                        detail = format!("releases {}", self.object_name(m));
                    }
                    Outcome::Continue
                }
            }
            Op::CondvarWake { m, .. } => {
                obj_mut!(m, Object::Mutex { holder } => *holder = Some(me));
                self.threads[i].notified = false;
                if tracing {
                    detail = format!("re-acquires {}", self.object_name(m));
                }
                Outcome::Return(Ret::unit())
            }
            Op::NotifyOne { cv } => match obj_mut!(cv, Object::Condvar { waiters } => {
                if waiters.is_empty() { None } else { waiters.remove(alt as usize) }
            }) {
                Some(woken) => {
                    if let Some(w) = woken {
                        if let Some(j) = self.thread_index(w) {
                            self.threads[j].notified = true;
                        }
                        if tracing {
                            detail = format!("wakes {}", self.thread_name(w));
                        }
                    } else if tracing {
                        detail = "no waiter".into();
                    }
                    Outcome::Return(Ret::unit())
                }
                None => self.misuse(
                    i,
                    format!(
                        "condvar.notify_one on `{}`, which is not a condvar",
                        self.object_name(cv)
                    ),
                ),
            },
            Op::NotifyAll { cv } => {
                match obj_mut!(cv, Object::Condvar { waiters } => std::mem::take(waiters)) {
                    Some(woken) => {
                        for w in &woken {
                            if let Some(j) = self.thread_index(*w) {
                                self.threads[j].notified = true;
                            }
                        }
                        if tracing {
                            let names: Vec<String> =
                                woken.iter().map(|w| self.thread_name(*w)).collect();
                            detail = format!("wakes [{}]", names.join(", "));
                        }
                        Outcome::Return(Ret::unit())
                    }
                    None => self.misuse(
                        i,
                        format!(
                            "condvar.notify_all on `{}`, which is not a condvar",
                            self.object_name(cv)
                        ),
                    ),
                }
            }
            Op::TableInsert { h, k, v, out } => {
                match obj_mut!(h, Object::Table(t) => t.insert(k, v)) {
                    Some(old) => {
                        if tracing {
                            detail = format!("{v} -> {old:?}");
                        }
                        Outcome::Return(Ret::opt(out, old))
                    }
                    None => self.misuse(
                        i,
                        format!(
                            "table.insert on `{}`, which is not a table",
                            self.object_name(h)
                        ),
                    ),
                }
            }
            Op::TableGet { h, k, out } => match obj_mut!(h, Object::Table(t) => t.get(&k).copied())
            {
                Some(v) => {
                    if tracing {
                        detail = format!("-> {v:?}");
                    }
                    Outcome::Return(Ret::opt(out, v))
                }
                None => self.misuse(
                    i,
                    format!(
                        "table.get on `{}`, which is not a table",
                        self.object_name(h)
                    ),
                ),
            },
            Op::TableRemove { h, k, out } => match obj_mut!(h, Object::Table(t) => t.remove(&k)) {
                Some(v) => {
                    if v.is_none() {
                        accesses.clear();
                        accesses.push(Access::read(Oid::table_key(Oid(h), k)));
                    }
                    if tracing {
                        detail = format!("-> {v:?}");
                    }
                    Outcome::Return(Ret::opt(out, v))
                }
                None => self.misuse(
                    i,
                    format!(
                        "table.remove on `{}`, which is not a table",
                        self.object_name(h)
                    ),
                ),
            },
            Op::Register { name, tid } => {
                let target = Tid(tid);
                let code = if self.names.contains_key(&name) {
                    1
                } else if !self.alive(target) {
                    2
                } else if self.threads[self.thread_index(target).expect("alive")]
                    .name
                    .is_some()
                {
                    3
                } else {
                    let j = self.thread_index(target).expect("alive");
                    self.threads[j].name = Some(name.clone());
                    self.names.insert(name.clone(), target);
                    0
                };
                if tracing {
                    detail = format!(
                        "{} -> {}",
                        self.thread_name(target),
                        [
                            "ok",
                            "error: name taken",
                            "error: thread not alive",
                            "error: thread already registered"
                        ][code as usize]
                    );
                }
                Outcome::Return(Ret::val(code))
            }
            Op::Whereis { name, out } => {
                let v = self.names.get(&name).map(|t| t.0);
                if tracing {
                    detail = format!(
                        "-> {}",
                        v.map(|t| self.thread_name(Tid(t)))
                            .unwrap_or_else(|| "none".into())
                    );
                }
                Outcome::Return(Ret::opt(out, v))
            }
            Op::Unregister { name } => {
                let removed = self.names.remove(&name);
                if let Some(t) = removed {
                    if let Some(j) = self.thread_index(t) {
                        self.threads[j].name = None;
                    }
                }
                if tracing {
                    detail = format!("-> {}", removed.is_some());
                }
                Outcome::Return(Ret::val(u64::from(removed.is_some())))
            }
            Op::Choose { n } => {
                if n == 0 {
                    self.misuse(i, "choose(0): there is no value in 0..0".into())
                } else {
                    if tracing {
                        detail = format!("{n} -> {alt}");
                    }
                    Outcome::Return(Ret::val(u64::from(alt)))
                }
            }
        };
        Executed {
            outcome,
            message,
            object,
            detail,
        }
    }

    /// Feeds the whole state into a blake3 hasher: the derived `Hash`
    /// (every collection here is ordered, so the byte stream is canonical)
    /// written into one buffer, then one `update`.
    pub fn hash_into(&self, h: &mut blake3::Hasher) {
        struct Sink(Vec<u8>);
        impl std::hash::Hasher for Sink {
            fn write(&mut self, bytes: &[u8]) {
                self.0.extend_from_slice(bytes);
            }
            fn finish(&self) -> u64 {
                0
            }
        }
        let mut sink = Sink(Vec::with_capacity(1024));
        std::hash::Hash::hash(self, &mut sink);
        h.update(&sink.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world2() -> World {
        let mut w = World::new();
        w.add_thread(ThreadPath::main(), Entry::Test, 0, 0);
        w.spawn_child(0, 7, 1, 0);
        w
    }

    fn run(w: &mut World, i: usize, op: Op) -> Outcome {
        w.threads[i].pending = op;
        w.execute(i, 0, None, true, &mut Vec::new()).outcome
    }

    fn ret(o: Outcome) -> Ret {
        match o {
            Outcome::Return(r) => r,
            _ => panic!("expected a return"),
        }
    }

    #[test]
    fn mutex_blocks_and_unlock_by_other_is_misuse() {
        let mut w = world2();
        let m = ret(run(&mut w, 0, Op::MutexNew)).val as u64;
        ret(run(&mut w, 0, Op::MutexLock { h: m }));
        w.threads[1].pending = Op::MutexLock { h: m };
        assert!(!w.enabled(1));
        assert!(
            w.waits_for(1).contains("held by `main`"),
            "{}",
            w.waits_for(1)
        );
        assert!(
            matches!(run(&mut w, 1, Op::MutexUnlock { h: m }), Outcome::Fail(f) if f.kind == FailureKind::Misuse)
        );
        ret(run(&mut w, 0, Op::MutexUnlock { h: m }));
        w.threads[1].pending = Op::MutexLock { h: m };
        assert!(w.enabled(1));
    }

    #[test]
    fn condvar_wait_notify_one_picks_waiter_by_alt() {
        let mut w = world2();
        w.spawn_child(0, 8, 2, 0);
        let m = ret(run(&mut w, 0, Op::MutexNew)).val as u64;
        let cv = ret(run(&mut w, 0, Op::CondvarNew)).val as u64;
        for i in [1, 2] {
            ret(run(&mut w, i, Op::MutexLock { h: m }));
            assert!(matches!(
                run(&mut w, i, Op::CondvarWait { cv, m }),
                Outcome::Continue
            ));
            assert!(!w.enabled(i));
        }
        w.threads[0].pending = Op::NotifyOne { cv };
        assert_eq!(w.alts(0), 2);
        w.execute(0, 1, None, false, &mut Vec::new());
        assert!(!w.enabled(1));
        assert!(w.enabled(2), "alt 1 wakes the second waiter");
        ret(w.execute(2, 0, None, false, &mut Vec::new()).outcome);
        assert!(!w.enabled(1));
    }

    #[test]
    fn registry_follows_erlang_rules() {
        let mut w = world2();
        let child = w.threads[1].tid.0;
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Register {
                    name: b"p".to_vec(),
                    tid: child
                }
            ))
            .val,
            0
        );
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Register {
                    name: b"p".to_vec(),
                    tid: 0
                }
            ))
            .val,
            1
        );
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Register {
                    name: b"q".to_vec(),
                    tid: child
                }
            ))
            .val,
            3
        );
        let r = ret(run(
            &mut w,
            0,
            Op::Whereis {
                name: b"p".to_vec(),
                out: 64,
            },
        ));
        assert_eq!(
            r,
            Ret {
                val: 1,
                out: Some((64, child))
            }
        );
        assert!(matches!(run(&mut w, 1, Op::Exit), Outcome::Exited));
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Whereis {
                    name: b"p".to_vec(),
                    out: 64
                }
            ))
            .val,
            0,
            "exit unregisters"
        );
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Register {
                    name: b"r".to_vec(),
                    tid: child
                }
            ))
            .val,
            2
        );
    }

    #[test]
    fn mailbox_selective_receive_and_dependence() {
        let mut w = world2();
        w.spawn_child(0, 9, 2, 0);
        let main = w.threads[0].tid.0;
        let (t1, t2) = (w.threads[1].tid.0, w.threads[2].tid.0);
        ret(run(
            &mut w,
            1,
            Op::Send {
                to: main,
                data: b"a".to_vec(),
            },
        ));
        ret(run(
            &mut w,
            2,
            Op::Send {
                to: main,
                data: b"b".to_vec(),
            },
        ));
        w.threads[0].pending = Op::RecvFrom { from: t2 };
        assert!(w.enabled(0));
        assert_eq!(
            ret(w.execute(0, 0, None, false, &mut Vec::new()).outcome).val,
            1
        );
        assert_eq!(w.threads[0].taken.as_ref().unwrap().data, b"b");
        w.threads[0].pending = Op::RecvFrom { from: t2 };
        assert!(!w.enabled(0));
        let (mut a, mut b) = (vec![], vec![]);
        w.threads[1].pending = Op::Send {
            to: main,
            data: vec![],
        };
        w.threads[2].pending = Op::Send {
            to: main,
            data: vec![],
        };
        w.accesses(1, &mut a);
        w.accesses(2, &mut b);
        assert!(a[0].conflicts(&b[0]), "two sends to one mailbox conflict");
        let _ = t1;
    }

    #[test]
    fn failed_cas_is_a_read_and_table_conflicts_are_per_key() {
        let mut w = world2();
        let a = ret(run(&mut w, 0, Op::AtomicNew { init: 5 })).val as u64;
        w.threads[0].pending = Op::AtomicCas {
            h: a,
            current: 1,
            new: 2,
        };
        let mut acc = Vec::new();
        let e = w.execute(0, 0, None, false, &mut acc);
        assert_eq!(acc, vec![Access::read(Oid(a))]);
        assert_eq!(ret(e.outcome).val, 5);
        let t = ret(run(&mut w, 0, Op::TableNew)).val as u64;
        let (mut x, mut y) = (vec![], vec![]);
        w.threads[0].pending = Op::TableInsert {
            h: t,
            k: 1,
            v: 0,
            out: 0,
        };
        w.threads[1].pending = Op::TableInsert {
            h: t,
            k: 2,
            v: 0,
            out: 0,
        };
        w.accesses(0, &mut x);
        w.accesses(1, &mut y);
        assert!(!x[0].conflicts(&y[0]));
    }

    #[test]
    fn deadlock_lists_every_blocked_thread() {
        let mut w = world2();
        let m = ret(run(&mut w, 0, Op::MutexNew)).val as u64;
        ret(run(&mut w, 1, Op::MutexLock { h: m }));
        w.threads[0].pending = Op::MutexLock { h: m };
        w.threads[1].pending = Op::Recv;
        let f = w.deadlock();
        assert_eq!(f.waiting.len(), 2);
        assert!(f.waiting[1].waits_for.contains("message"));
    }
}
