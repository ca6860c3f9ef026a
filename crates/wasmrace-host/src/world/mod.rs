//! Host-side state of one execution: the thread table (stable ids, pending
//! operations, mailboxes, registered names) and the shared objects guests
//! reach through hooks. Pure Rust, no wasm. Each kind of operation and
//! object lives in its own file (`thread`, `mailbox`, `cell`, `atomic`,
//! `mutex`, `rwlock`, `condvar`, `barrier`, `table`, `registry`, and a std
//! guest's `memory`: its atomics and `wait`/`notify`), which decides what
//! an operation does, whether it is enabled, what it touches and how it is
//! described; `World` dispatches to them through the operation table
//! (`ops::for_each_op!`) and keeps the thread table. `process` is a std
//! guest's threads as a process (its stderr's panic text, its exit);
//! `state` describes what a step touched for traces. The data-race
//! detector (`World::races`) is `wasmrace_explore::datarace`'s.

mod atomic;
mod barrier;
mod cell;
mod condvar;
mod footprint;
use footprint::btree_bytes;
mod mailbox;
mod memory;
mod mutex;
mod process;
mod registry;
mod rwlock;
mod state;
mod table;
mod text;
mod thread;

pub(crate) use memory::{put_guest_bytes, GuestMem};
pub(crate) use state::Target;

use crate::ops::{for_each_op, Op};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use wasmrace_trace::{mix64, Access, Failure, FailureKind, Oid, Tid};

/// The shared objects a guest creates, one variant per kind, each kind's
/// state defined in its own file. Registering a new kind is one line.
macro_rules! objects {
    ($($variant:ident($ty:ty) $name:literal,)*) => {
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Object {
            $($variant($ty),)*
        }

        impl Object {
            /// The kind's name in object names, e.g. `mutex main#0`.
            fn kind_name(&self) -> &'static str {
                match self {
                    $(Object::$variant(_) => $name,)*
                }
            }

            fn heap_bytes(&self) -> usize {
                match self {
                    $(Object::$variant(s) => ObjectState::heap_bytes(s),)*
                }
            }

            /// The state as traces show it (see `ObjectState::describe`).
            fn describe(&self, w: &World, h: u64) -> String {
                match self {
                    $(Object::$variant(s) => ObjectState::describe(s, w, h),)*
                }
            }

            /// Whether `id` is one of the ids this object derives.
            fn owns(&self, h: u64, id: Oid) -> bool {
                match self {
                    $(Object::$variant(s) => ObjectState::owns(s, h, id),)*
                }
            }
        }

        $(
            impl Downcast for $ty {
                fn get(o: &Object) -> Option<&Self> {
                    match o {
                        Object::$variant(s) => Some(s),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn get_mut(o: &mut Object) -> Option<&mut Self> {
                    match o {
                        Object::$variant(s) => Some(s),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )*
    };
}

objects! {
    Cell(cell::Cell) "cell",
    Atomic(atomic::Atomic) "atomic",
    Mutex(mutex::Mutex) "mutex",
    Condvar(condvar::Condvar) "condvar",
    Table(table::Table) "table",
    RwLock(rwlock::RwLock) "rwlock",
    Barrier(barrier::Barrier) "barrier",
}

/// What every object kind's state provides. `describe` has no default:
/// a new kind cannot be registered without saying how traces show it.
trait ObjectState {
    /// The state in short for traces and the HTML report (`value = 3`,
    /// `held by main.1; waiting: main.2`), naming threads through `w`;
    /// `h` is the object's handle. Lists are cut at `text::LIST_ITEMS`.
    fn describe(&self, w: &World, h: u64) -> String;
    /// Whether `id` is an id this object (handle `h`) derives for its
    /// parts (a table's keys), so that a trace can name it.
    fn owns(&self, _h: u64, _id: Oid) -> bool {
        false
    }
    /// Heap bytes the state holds beyond its own size.
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Typed access to one kind's state inside an `Object` (derived by
/// `objects!`).
trait Downcast: Sized {
    fn get(o: &Object) -> Option<&Self>;
    fn get_mut(o: &mut Object) -> Option<&mut Self>;
}

/// The behaviour of the operations of one kind (one file of `world/`); the
/// defaults fit operations that never block, have one alternative and
/// describe no object.
trait Kind {
    /// Whether thread `i`'s pending `op` can run now.
    fn enabled(_w: &World, _i: usize, _op: &Op) -> bool {
        true
    }
    /// Number of alternatives of thread `i`'s pending `op`.
    fn alts(_w: &World, _i: usize, _op: &Op) -> u32 {
        1
    }
    /// What `op` would touch if run now (`out` is cleared by the caller).
    fn accesses(w: &World, i: usize, op: &Op, out: &mut Vec<Access>);
    /// What a blocked thread waits for, for deadlock reports.
    fn waits_for(_w: &World, _i: usize, op: &Op) -> String {
        format!("{} (not blocking)", op.kind().name())
    }
    /// The object a trace names for `op`, before it runs.
    fn object(_w: &World, _i: usize, _op: &Op) -> Option<String> {
        None
    }
    /// Runs `op` for thread `i`.
    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome;
}

/// What an operation's execution reads besides the world, and what it
/// reports beside its outcome.
struct Cx<'a> {
    alt: u32,
    spawned: Option<Tid>,
    tracing: bool,
    /// What the operation touches, as computed before it ran; an operation
    /// that turns out to touch less (a failed compare-exchange) corrects it.
    accesses: &'a mut Vec<Access>,
    /// The thread's `spin` before this step (taken: a step that is not a
    /// load or failed compare-exchange ends a spin).
    spin: Option<(u32, u64)>,
    /// The step read what the thread's last one read: a waiting loop.
    spun: bool,
    detail: String,
    message: Option<(Tid, u32)>,
    /// The guest's memory, for the operations on it (`memory.rs`); `None`
    /// in unit tests of other kinds.
    mem: Option<GuestMem<'a>>,
}

/// `World`'s dispatch from each operation to its kind, derived from the
/// operation table.
macro_rules! dispatch {
    ($(
        $(#[$doc:meta])*
        $v:ident $({ $($f:ident : $ft:ty),* })? => $handler:ident, $kind:ident, $effect:ident
        $(, $hook:literal ($($p:ident : $pt:ty),*) -> $r:ty, |$mem:ident| $decode:expr)?;
    )*) => {
        impl World {
            #[inline]
            fn op_enabled(&self, i: usize, op: &Op) -> bool {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::enabled(self, i, op),)*
                }
            }
            #[inline]
            fn op_alts(&self, i: usize, op: &Op) -> u32 {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::alts(self, i, op),)*
                }
            }
            #[inline]
            fn op_accesses(&self, i: usize, op: &Op, out: &mut Vec<Access>) {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::accesses(self, i, op, out),)*
                }
            }
            fn op_waits_for(&self, i: usize, op: &Op) -> String {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::waits_for(self, i, op),)*
                }
            }
            fn op_object(&self, i: usize, op: &Op) -> Option<String> {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::object(self, i, op),)*
                }
            }
            #[inline]
            fn op_execute(&mut self, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
                match op {
                    $(Op::$v { .. } => <$handler::Ops as Kind>::execute(self, i, op, cx),)*
                }
            }
        }
    };
}
for_each_op!(dispatch);

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
    /// Shared, not copied, by the `World` clones snapshots hold.
    pub data: Arc<[u8]>,
}

/// Index of no thread: `main`'s parent.
pub const NO_PARENT: u32 = u32::MAX;

/// What the host holds for the guest beyond the guest's own bytes, per
/// thread (its record, its view, its slot's bookkeeping), per message, per
/// registered name, per table entry and per object, as counted in
/// `World::held` against `--max-host-memory-mb`: the size of the record
/// plus the collections' overhead, rounded up.
const THREAD_BYTES: u64 = (std::mem::size_of::<Thread>() + 128) as u64;
const MESSAGE_BYTES: u64 = (std::mem::size_of::<Message>() + 16) as u64;
const NAME_BYTES: u64 = 64;
const TABLE_ENTRY_BYTES: u64 = 32;
const OBJECT_BYTES: u64 = (std::mem::size_of::<ObjEntry>() + 32) as u64;

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
    /// Index of the thread that spawned it (`NO_PARENT` for `main`) and its
    /// spawn index there (1-based): the spawn path in constant space per
    /// thread, rendered on demand (`World::thread_path`). A path held per
    /// thread made a chain of 8,000 spawns cost gigabytes.
    pub parent: u32,
    pub index: u32,
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
    pub name: Option<Arc<[u8]>>,
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
    /// Panic reported through `report_panic` during the current segment,
    /// or read from a std guest's standard error: message and location.
    pub panic: Option<(String, String)>,
    /// A std guest's thread-local base (`__tls_base`), saved while the
    /// thread is suspended.
    pub tls: u32,
    /// The last bytes the thread wrote to standard error (std guests), at
    /// most `STDERR_TAIL`: where its panic message is read from.
    pub stderr: Vec<u8>,
    /// Address and value of the thread's last step when it was an atomic
    /// load or a failed compare-exchange: the same again is a spin
    /// (`Executed::spun`).
    pub spin: Option<(u32, u64)>,
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
    /// The step read again what the thread's last step read (a std
    /// guest's spin on an atomic load or a failed compare-exchange): fair
    /// scheduling takes it as a yield, so a correct waiting loop is not a
    /// livelock.
    pub spun: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct World {
    pub threads: Vec<Thread>,
    index: BTreeMap<Tid, usize>,
    pub objects: BTreeMap<u64, ObjEntry>,
    pub names: BTreeMap<Arc<[u8]>, Tid>,
    /// Bytes the guest makes the host hold (thread records, message
    /// contents, pending operations' bytes, names, table entries, objects),
    /// counted as they come and go; the program fails the execution once
    /// it passes `--max-host-memory-mb`. A function of the state, like the
    /// rest of it.
    pub held: u64,
    /// Threads created by the last step whose first segment has not run.
    pub unstarted: Vec<usize>,
    /// Base address of each thread slot (Asyncify buffer, then shadow
    /// stack) in pages the host grew itself, ascending: each batch of
    /// slots is made at the top of memory (`note_written` relies on it).
    pub slot_bases: Vec<u32>,
    /// Slots of exited threads, reused last-in first-out.
    pub free_slots: Vec<u32>,
    /// Per slot: the lowest stack pointer of any thread that ran in it (a
    /// reused slot keeps its first user's writes).
    pub slot_lows: Vec<u32>,
    /// Threads waiting in `memory.atomic.wait`, by address, oldest first.
    pub futex: BTreeMap<u32, VecDeque<Tid>>,
    /// A std guest's virtual clock, in nanoseconds: only sleeps advance it.
    pub clock_ns: u64,
    /// The threads form a process (std guests): its end stops every
    /// thread, so every step reads `Oid::process`.
    pub process: bool,
    /// The data-race detector, when races are detected (`--data-races`):
    /// part of the state snapshots restore; hashes leave it out (its
    /// `Hash` is empty: `wasmrace_explore::datarace::Detector`).
    pub races: Option<Box<wasmrace_explore::datarace::Detector>>,
}

impl World {
    #[cfg(test)]
    pub fn new() -> Self {
        World::default()
    }

    /// A world whose plain accesses are checked for data races when
    /// `races` is set.
    pub fn with_races(races: bool) -> Self {
        World {
            races: races.then(Box::default),
            ..World::default()
        }
    }

    /// Makes this world equal to `src`, keeping this one's buffers: a
    /// restore reuses the `Vec`s an execution grew (threads spawned, the
    /// unstarted list), where `*self = src.clone()` would allocate them
    /// again at `src`'s size and the next execution grow them again, a
    /// reallocation per spawn. The destructuring names every field, so a
    /// new field fails to compile here until it is copied too.
    pub fn assign_from(&mut self, src: &World) {
        let World {
            threads,
            index,
            objects,
            names,
            held,
            unstarted,
            slot_bases,
            free_slots,
            slot_lows,
            futex,
            clock_ns,
            process,
            races,
        } = self;
        threads.clone_from(&src.threads);
        index.clone_from(&src.index);
        objects.clone_from(&src.objects);
        names.clone_from(&src.names);
        *held = src.held;
        unstarted.clone_from(&src.unstarted);
        slot_bases.clone_from(&src.slot_bases);
        free_slots.clone_from(&src.free_slots);
        slot_lows.clone_from(&src.slot_lows);
        futex.clone_from(&src.futex);
        *clock_ns = src.clock_ns;
        *process = src.process;
        races.clone_from(&src.races);
    }

    /// Adds the main thread; the slot is assigned by the caller.
    pub fn add_main(&mut self, slot: u32, sp: u32) -> usize {
        self.add_thread(NO_PARENT, 0, Tid::MAIN, Entry::Test, slot, sp)
    }

    /// Adds a thread; the slot is assigned by the caller.
    fn add_thread(
        &mut self,
        parent: u32,
        index: u32,
        tid: Tid,
        entry: Entry,
        slot: u32,
        sp: u32,
    ) -> usize {
        let i = self.threads.len();
        self.held += THREAD_BYTES;
        self.threads.push(Thread {
            parent,
            index,
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
            tls: 0,
            stderr: Vec::new(),
            spin: None,
        });
        self.index.insert(tid, i);
        i
    }

    /// Creates the child thread of a spawn; the caller assigns its memory slot.
    pub fn spawn_child(&mut self, parent: usize, arg: u32, slot: u32, sp: u32) -> usize {
        let p = &mut self.threads[parent];
        p.spawns += 1;
        let (index, tid) = (p.spawns, p.tid.child(p.spawns));
        let c = self.add_thread(parent as u32, index, tid, Entry::ThreadStart(arg), slot, sp);
        self.unstarted.push(c);
        c
    }

    pub fn thread_index(&self, tid: Tid) -> Option<usize> {
        self.index.get(&tid).copied()
    }

    fn alive(&self, tid: Tid) -> bool {
        self.thread_index(tid)
            .is_some_and(|i| !self.threads[i].exited)
    }

    pub fn object_name(&self, h: u64) -> String {
        match self.objects.get(&h) {
            Some(e) => format!(
                "{} {}#{}",
                e.obj.kind_name(),
                self.thread_name(e.creator),
                e.index
            ),
            None => format!("<unknown handle {h:#x}>"),
        }
    }

    /// The state of object `h` if it is a `T`.
    fn object<T: Downcast>(&self, h: u64) -> Option<&T> {
        self.objects.get(&h).and_then(|e| T::get(&e.obj))
    }

    fn object_mut<T: Downcast>(&mut self, h: u64) -> Option<&mut T> {
        self.objects
            .get_mut(&h)
            .and_then(|e| T::get_mut(&mut e.obj))
    }

    /// Creates an object owned by thread `i`'s creation count; returns its
    /// handle (stable across interleavings).
    fn new_object(&mut self, i: usize, obj: Object) -> u64 {
        let t = &mut self.threads[i];
        let index = t.objects;
        t.objects += 1;
        let creator = t.tid;
        self.held += OBJECT_BYTES;
        let h = handle(creator, index);
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

    /// The failure of thread `i` misusing the API.
    fn misuse(&self, i: usize, msg: String) -> Outcome {
        Outcome::Fail(Failure::new(
            FailureKind::Misuse,
            Some(self.thread_label(i)),
            msg,
        ))
    }

    /// Lowers thread `i`'s stack low-water mark (and its slot's, for a
    /// spawned thread) to `low`, the lowest stack pointer its last segment
    /// set (`None`: the module does not track it).
    pub fn note_low(&mut self, i: usize, low: Option<u32>) {
        let Some(low) = low else {
            return;
        };
        let t = &mut self.threads[i];
        t.low = t.low.min(low);
        if !matches!(t.entry, Entry::Test) {
            let s = t.slot as usize;
            self.slot_lows[s] = self.slot_lows[s].min(low);
        }
    }

    /// Takes back the claim that stack memory at `addr` was never
    /// written, because it was (a dirty-page mark there): the main stack's
    /// (its `region` starting at `region`) or a thread slot's (above its
    /// Asyncify buffer of `async_bytes`). Compiled code never writes below
    /// its stack pointer; a hand-written or hostile module may, and then the
    /// page must not be taken for zero by snapshots, restores and hashes.
    pub fn note_written(&mut self, addr: u32, region: Option<u32>, async_bytes: u32) {
        if let (Some(region), Some(main)) = (region, self.threads.first_mut()) {
            if (region..main.low).contains(&addr) {
                main.low = addr;
            }
        }
        // Every drain of the dirty-page map calls this per marked block:
        // find the one slot that can hold `addr` (slots are laid out in
        // the order they were made, each above the last) rather than look
        // at every slot.
        let i = self.slot_bases.partition_point(|&b| b <= addr);
        if let Some(i) = i.checked_sub(1) {
            let (base, low) = (self.slot_bases[i], &mut self.slot_lows[i]);
            if (base.saturating_add(async_bytes)..*low).contains(&addr) {
                *low = addr;
            }
        }
    }

    /// Makes `op`, called at guest site `site`, thread `i`'s pending
    /// operation; its bytes (a message to send, a name) count as held
    /// until it runs.
    pub fn set_pending(&mut self, i: usize, op: Op, site: u32) {
        self.held += op.heap_bytes() as u64;
        let t = &mut self.threads[i];
        t.pending = op;
        t.site = site;
    }

    /// The message thread `i`'s last receive took, handed to the guest by
    /// `recv_take`: no longer held.
    pub fn take_message(&mut self, i: usize) -> Option<Message> {
        let m = self.threads[i].taken.take()?;
        self.held -= MESSAGE_BYTES + m.data.len() as u64;
        Some(m)
    }

    /// Whether thread `i`'s pending operation can run now.
    #[inline]
    pub fn enabled(&self, i: usize) -> bool {
        let t = &self.threads[i];
        !t.exited && self.op_enabled(i, &t.pending)
    }

    /// Number of alternatives of thread `i`'s pending operation.
    #[inline]
    pub fn alts(&self, i: usize) -> u32 {
        self.op_alts(i, &self.threads[i].pending)
    }

    /// The objects thread `i`'s pending operation would touch if run now.
    #[inline]
    pub fn accesses(&self, i: usize, out: &mut Vec<Access>) {
        out.clear();
        self.op_accesses(i, &self.threads[i].pending, out);
        // The end of the process stops every thread: no step commutes
        // with it.
        if self.process {
            out.push(Access::read(Oid::process()));
        }
    }

    /// What a blocked thread waits for, for deadlock reports.
    pub fn waits_for(&self, i: usize) -> String {
        self.op_waits_for(i, &self.threads[i].pending)
    }

    /// Runs thread `i`'s pending operation with alternative `alt`. Spawns are
    /// handled by the caller (they need a memory slot) before calling this
    /// with the child's id as `spawned`.
    /// `accesses` receives what the operation touched (a reused buffer: no
    /// allocation per step).
    #[cfg(test)]
    pub fn execute(
        &mut self,
        i: usize,
        alt: u32,
        spawned: Option<Tid>,
        tracing: bool,
        accesses: &mut Vec<Access>,
    ) -> Executed {
        self.execute_mem(i, alt, spawned, tracing, accesses, None)
    }

    /// `execute` with the guest's memory, which operations on it need.
    pub fn execute_mem(
        &mut self,
        i: usize,
        alt: u32,
        spawned: Option<Tid>,
        tracing: bool,
        accesses: &mut Vec<Access>,
        mem: Option<GuestMem<'_>>,
    ) -> Executed {
        self.accesses(i, accesses);
        self.execute_with(i, alt, spawned, tracing, accesses, mem)
    }

    /// `execute` for a caller that already holds thread `i`'s pending
    /// accesses (`accesses(i)`) in `accesses`, as the program's views do.
    #[inline]
    pub fn execute_with(
        &mut self,
        i: usize,
        alt: u32,
        spawned: Option<Tid>,
        tracing: bool,
        accesses: &mut Vec<Access>,
        mem: Option<GuestMem<'_>>,
    ) -> Executed {
        let op = std::mem::replace(&mut self.threads[i].pending, Op::Start);
        // Saturating: unit tests set pending operations directly.
        self.held = self.held.saturating_sub(op.heap_bytes() as u64);
        let object = if tracing {
            self.op_object(i, &op)
        } else {
            None
        };
        let spin = self.threads[i].spin.take();
        let mut cx = Cx {
            alt,
            spawned,
            tracing,
            accesses,
            spin,
            spun: false,
            detail: String::new(),
            message: None,
            mem,
        };
        let outcome = self.op_execute(i, op, &mut cx);
        if let Some(d) = self.races.as_mut() {
            d.step(i, cx.accesses);
            if let Some(child) = spawned.and_then(|c| self.index.get(&c)) {
                d.fork(i, *child);
            }
        }
        Executed {
            outcome,
            message: cx.message,
            object,
            detail: cx.detail,
            spun: cx.spun,
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

/// The handle of the `index`-th object `creator` made (never 0, which the
/// guest reads as "none").
fn handle(creator: Tid, index: u32) -> u64 {
    match Oid::object(creator, index).0 {
        0 => mix64(1),
        h => h,
    }
}

/// Helpers for the kinds' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Main and one spawned child.
    pub fn world2() -> World {
        let mut w = World::new();
        w.add_main(0, 0);
        w.spawn_child(0, 7, 1, 0);
        w
    }

    pub fn run(w: &mut World, i: usize, op: Op) -> Outcome {
        w.threads[i].pending = op;
        w.execute(i, 0, None, true, &mut Vec::new()).outcome
    }

    pub fn ret(o: Outcome) -> Ret {
        match o {
            Outcome::Return(r) => r,
            _ => panic!("expected a return"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn assign_from_equals_a_clone_and_keeps_the_buffers() {
        // The state an execution restores to: main only, one object.
        let mut start = World::new();
        start.add_main(0, 0);
        ret(run(&mut start, 0, Op::MutexNew));
        // A world that ran further: a child, more objects, a name.
        let mut w = world2();
        ret(run(&mut w, 1, Op::MutexNew));
        ret(run(&mut w, 0, Op::CellNew { init: 3 }));
        let grown = w.threads.capacity();
        w.assign_from(&start);
        assert_eq!(w, start);
        assert_eq!(w.threads.capacity(), grown, "the threads' buffer is kept");
        // And back: growing from the smaller world equals the larger one.
        let big = world2();
        w.assign_from(&big);
        assert_eq!(w, big);
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
