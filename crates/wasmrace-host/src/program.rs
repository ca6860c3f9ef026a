//! Quiescent stepping of a wasm guest: one thread runs at a time, from one
//! hook call to the next, and between steps no wasm frame is live, so linear
//! memory + globals + the `World` are the whole state. Implements the
//! explore crate's `Program`, with exact snapshots and state hashes.

use crate::error::{runtime, HostError};
use crate::guest::{GuestFault, GuestInner};
use crate::load;
use crate::snapshot::{self, Snapshot};
use crate::world::{Entry, Op, Outcome, Ret, World};
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmrace_explore::{is_preemption, Pending, Program, Status, StepInfo, ThreadView};
use wasmrace_trace::{Decision, Failure, FailureKind, OpKind, ThreadPath, Tid, TraceEvent};
use wasmtime::{AsContextMut, Global, Memory, ResourceLimiter, Store, Trap, TypedFunc, Val};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Between steps: no wasm frame is live.
    Idle,
    /// A thread runs normally.
    Running,
    /// A thread is being resumed; the next suspending hook call ends the rewind.
    Rewinding,
    /// A hook started unwinding the running thread back to the host.
    Unwinding,
}

/// Asyncify's controls: its two globals when the instrumentation exported
/// them (a global write is far cheaper than a call into wasm), else its
/// four exported functions.
pub(crate) enum Asyncify {
    Globals {
        state: Global,
        data: Global,
    },
    Funcs {
        start_unwind: TypedFunc<i32, ()>,
        stop_unwind: TypedFunc<(), ()>,
        start_rewind: TypedFunc<i32, ()>,
        stop_rewind: TypedFunc<(), ()>,
    },
}

const ASYNCIFY_NORMAL: i32 = 0;
const ASYNCIFY_UNWINDING: i32 = 1;
const ASYNCIFY_REWINDING: i32 = 2;

impl Asyncify {
    fn set(
        &self,
        mut store: impl AsContextMut,
        state: i32,
        data: Option<u32>,
    ) -> wasmtime::Result<()> {
        let Asyncify::Globals { state: s, data: d } = self else {
            unreachable!("only called for the globals variant")
        };
        s.set(&mut store, Val::I32(state))?;
        if let Some(p) = data {
            d.set(&mut store, Val::I32(p as i32))?;
        }
        Ok(())
    }
    pub fn start_unwind(&self, store: impl AsContextMut, buf: u32) -> wasmtime::Result<()> {
        match self {
            Asyncify::Funcs { start_unwind, .. } => start_unwind.call(store, buf as i32),
            Asyncify::Globals { .. } => self.set(store, ASYNCIFY_UNWINDING, Some(buf)),
        }
    }
    pub fn stop_unwind(&self, store: impl AsContextMut) -> wasmtime::Result<()> {
        match self {
            Asyncify::Funcs { stop_unwind, .. } => stop_unwind.call(store, ()),
            Asyncify::Globals { .. } => self.set(store, ASYNCIFY_NORMAL, None),
        }
    }
    pub fn start_rewind(&self, store: impl AsContextMut, buf: u32) -> wasmtime::Result<()> {
        match self {
            Asyncify::Funcs { start_rewind, .. } => start_rewind.call(store, buf as i32),
            Asyncify::Globals { .. } => self.set(store, ASYNCIFY_REWINDING, Some(buf)),
        }
    }
    pub fn stop_rewind(&self, store: impl AsContextMut) -> wasmtime::Result<()> {
        match self {
            Asyncify::Funcs { stop_rewind, .. } => stop_rewind.call(store, ()),
            Asyncify::Globals { .. } => self.set(store, ASYNCIFY_NORMAL, None),
        }
    }
}

/// The running instance's exports the host drives.
pub(crate) struct Exports {
    pub memory: Memory,
    pub asyncify: Asyncify,
    pub test: TypedFunc<(), ()>,
    pub thread_start: Option<TypedFunc<i32, ()>>,
    pub init: Option<TypedFunc<(), ()>>,
    pub sp: Global,
    /// The stack pointer's low-water mark and the bottom of the main
    /// stack's region (see `load::track_stack_low`), when instrumented.
    pub stack_low: Option<Global>,
    pub stack_region: Option<u32>,
    pub globals: Vec<Global>,
    /// The guest's memory size in wasm pages (`load::virtualize_memory_size`),
    /// when instrumented: memory beyond it is zero and not the guest's.
    pub pages: Option<Global>,
    pub site: Option<[TypedFunc<i32, i32>; 4]>,
    /// The trampolines of the test and of the thread start (see
    /// `load::add_trampolines`), when the module has them: a step is then
    /// one call into wasm and no host-side global access (the module's hook
    /// wrappers do Asyncify's bookkeeping, so hooks must not).
    pub enter: Option<Enter>,
}

/// `(arg, sp, low, asyncify state, asyncify data, buffer end, resumed
/// hook's result) -> (sp << 32 | low, hook, site, a0, a1, a2, a3)` (see
/// `load::add_trampolines`).
pub(crate) type EnterFunc = TypedFunc<(i32, i32, i32, i32, i32, i32, i64), EnterRet>;
pub(crate) type EnterRet = (i64, i32, i32, i64, i64, i64, i64);

pub(crate) struct Enter {
    pub test: EnterFunc,
    pub thread_start: Option<EnterFunc>,
}

pub(crate) struct Limits {
    max: usize,
    hit: bool,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }
    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// Store data: everything hooks need.
pub struct HostState {
    pub(crate) world: World,
    pub(crate) cur: usize,
    pub(crate) mode: Mode,
    pub(crate) resume: Ret,
    pub(crate) ex: Option<Arc<Exports>>,
    pub(crate) limits: Limits,
    pub(crate) tracing: bool,
    pub(crate) logs: Vec<String>,
    pub(crate) asyncify_bytes: u32,
}

impl HostState {
    pub(crate) fn ex(&self) -> Arc<Exports> {
        self.ex
            .clone()
            .expect("exports are set before any guest code runs")
    }
}

/// One test of a guest, run one scheduling decision at a time.
pub struct WasmProgram {
    guest: Arc<GuestInner>,
    test: String,
    store: Store<HostState>,
    ex: Arc<Exports>,
    views: Vec<ThreadView>,
    status: Status,
    info: StepInfo,
    steps: u64,
    last: Option<(Tid, Option<OpKind>)>,
    trace: Vec<TraceEvent>,
    sites: BTreeMap<u32, Option<String>>,
    prev_pages: Vec<Option<Arc<snapshot::Page>>>,
    /// The state right after `start` on the current instance: `reset`
    /// restores it (microseconds) instead of instantiating afresh (tens of
    /// microseconds) while memory has not grown past it.
    initial: Option<Snapshot>,
    /// Instances made so far (1 + fresh instances for resets and restores).
    instances: u64,
}

impl std::fmt::Debug for WasmProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmProgram")
            .field("test", &self.test)
            .field("steps", &self.steps)
            .finish()
    }
}

impl WasmProgram {
    pub(crate) fn new(guest: Arc<GuestInner>, test: &str) -> Result<WasmProgram, HostError> {
        let (store, ex) = instantiate(&guest, test, false)?;
        let mut p = WasmProgram {
            guest,
            test: test.into(),
            store,
            ex,
            views: Vec::new(),
            status: Status::Running,
            info: StepInfo::default(),
            steps: 0,
            last: None,
            trace: Vec::new(),
            sites: BTreeMap::new(),
            prev_pages: Vec::new(),
            initial: None,
            instances: 1,
        };
        p.start()?;
        p.initial = p.snapshot()?;
        Ok(p)
    }

    pub fn test(&self) -> &str {
        &self.test
    }

    /// Record a readable trace of the following steps (slower: names and
    /// values are formatted, sites resolved, logs kept).
    pub fn set_tracing(&mut self, on: bool) {
        self.store.data_mut().tracing = on;
    }

    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    pub fn take_trace(&mut self) -> Vec<TraceEvent> {
        std::mem::take(&mut self.trace)
    }

    /// Steps taken in the current execution.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    fn tracing(&self) -> bool {
        self.store.data().tracing
    }

    /// Starts an execution on the current (fresh) instance: the main thread
    /// runs up to its first hook.
    fn start(&mut self) -> Result<(), HostError> {
        let sp = self.ex.sp.get(&mut self.store).i32().unwrap_or(0) as u32;
        let slot = match self.alloc_slot()? {
            Ok(s) => s,
            Err(f) => {
                self.status = Status::Failed(f);
                return Ok(());
            }
        };
        self.store
            .data_mut()
            .world
            .add_thread(ThreadPath::main(), Entry::Test, slot, sp);
        self.status = Status::Running;
        self.steps = 0;
        self.last = None;
        self.trace.clear();
        if let Some(init) = self.ex.init.clone() {
            self.store.data_mut().mode = Mode::Running;
            self.store
                .set_fuel(self.guest.config.fuel_per_step)
                .map_err(runtime)?;
            let r = init.call(&mut self.store, ());
            self.store.data_mut().mode = Mode::Idle;
            // Init ran on the main stack: its writes count toward main's mark.
            if let Some(low) = self.ex.stack_low.clone() {
                let l = low.get(&mut self.store).i32().unwrap_or(0) as u32;
                let main = &mut self.store.data_mut().world.threads[0];
                main.low = main.low.min(l);
            }
            if let Err(e) = r {
                let f = self.classify(0, e);
                self.status = Status::Failed(f);
                self.refresh();
                return Ok(());
            }
        }
        self.run_segment(0, None)?;
        if self.tracing() {
            let logs = std::mem::take(&mut self.store.data_mut().logs);
            if !logs.is_empty() {
                self.trace.push(TraceEvent {
                    step: 0,
                    thread: "main".into(),
                    op: "start".into(),
                    object: None,
                    detail: String::new(),
                    site: None,
                    preemption: false,
                    logs,
                });
            }
        }
        self.refresh();
        Ok(())
    }

    /// Takes a free thread slot, growing memory when there is none. Memory
    /// grows by a batch of slots at a time (four first, then as many as are
    /// in use, at least two): each `memory.grow` is a system call, and most tests spawn
    /// several threads. Deterministic: the batch depends only on the
    /// execution so far. Returns the slot index, or a memory-limit failure.
    /// Bytes of memory the guest has: its own memory size when instrumented
    /// (the real memory may be larger, zero above it), else the real size.
    fn mem_len(&mut self) -> usize {
        match &self.ex.pages {
            Some(g) => g.get(&mut self.store).i32().unwrap_or(0) as u32 as usize * 65536,
            None => self.ex.memory.data_size(&self.store),
        }
    }

    /// Grows the guest's memory by `pages` wasm pages; returns the old size
    /// in pages, like `memory.grow`. With a virtual size, real memory grows
    /// only past its current size.
    fn grow(&mut self, pages: u64) -> wasmtime::Result<u64> {
        let Some(g) = self.ex.pages else {
            return self.ex.memory.grow(&mut self.store, pages);
        };
        let old = (self.mem_len() / 65536) as u64;
        let real = (self.ex.memory.data_size(&self.store) / 65536) as u64;
        if old + pages > real {
            self.ex.memory.grow(&mut self.store, old + pages - real)?;
        }
        g.set(&mut self.store, Val::I32((old + pages) as i32))?;
        Ok(old)
    }

    fn alloc_slot(&mut self) -> Result<Result<u32, Failure>, HostError> {
        if let Some(s) = self.store.data_mut().world.free_slots.pop() {
            return Ok(Ok(s));
        }
        let bytes = self.guest.config.slot_bytes();
        let in_use = self.store.data().world.slot_bases.len() as u64;
        // The first batch makes room for main and three threads, so that
        // most tests never grow memory after the start and `reset` can
        // restore the start state instead of instantiating again.
        let mut batch = if in_use == 0 { 4 } else { in_use.clamp(2, 16) };
        let old = loop {
            match self.grow(batch * bytes / 65536) {
                Ok(old) => break old,
                // Near the limit: fall back to one slot before giving up.
                Err(_) if batch > 1 => {
                    self.store.data_mut().limits.hit = false;
                    batch = 1;
                }
                Err(_) => return Ok(Err(self.memory_failure(None))),
            }
        };
        let w = &mut self.store.data_mut().world;
        let first = w.slot_bases.len() as u32;
        for k in 0..batch {
            let base = u32::try_from(old * 65536 + k * bytes).map_err(runtime)?;
            w.slot_bases.push(base);
            w.slot_lows.push(base + bytes as u32);
        }
        // Hand out the lowest new slot now; keep the rest, lowest on top.
        for k in (1..batch as u32).rev() {
            w.free_slots.push(first + k);
        }
        Ok(Ok(first))
    }

    fn memory_failure(&self, thread: Option<String>) -> Failure {
        Failure::new(
            FailureKind::MemoryLimit,
            thread,
            format!(
                "guest memory would exceed its limit of `{}` MiB; raise --max-memory-mb",
                self.guest.config.max_memory_bytes >> 20
            ),
        )
    }

    fn slot_stack_top(&self, slot: u32) -> u32 {
        let base = self.store.data().world.slot_bases[slot as usize];
        base + self.guest.config.slot_bytes() as u32
    }

    /// Runs thread `i` from its pending hook (or its entry) to its next hook
    /// call, or to its end. `resume` is the value its pending hook returns.
    fn run_segment(&mut self, i: usize, resume: Option<Ret>) -> Result<(), HostError> {
        if self.ex.enter.is_some() {
            return self.run_segment_fast(i, resume);
        }
        let fuel = self.guest.config.fuel_per_step;
        self.store.set_fuel(fuel).map_err(runtime)?;
        let (entry, started, sp, slot) = {
            let t = &self.store.data().world.threads[i];
            (t.entry, t.started, t.sp, t.slot)
        };
        self.ex
            .sp
            .set(&mut self.store, Val::I32(sp as i32))
            .map_err(runtime)?;
        if let Some(low) = &self.ex.stack_low {
            let l = self.store.data().world.threads[i].low;
            low.set(&mut self.store, Val::I32(l as i32))
                .map_err(runtime)?;
        }
        let st = self.store.data_mut();
        st.cur = i;
        if started {
            st.resume = resume.unwrap_or_default();
            st.mode = Mode::Rewinding;
            let buf = st.world.slot_bases[slot as usize];
            self.ex
                .asyncify
                .start_rewind(&mut self.store, buf)
                .map_err(runtime)?;
        } else {
            st.mode = Mode::Running;
            st.world.threads[i].started = true;
        }
        let r = match entry {
            Entry::Test => self.ex.test.call(&mut self.store, ()),
            Entry::ThreadStart(arg) => match &self.ex.thread_start {
                Some(f) => f.call(&mut self.store, arg as i32),
                None => {
                    return Err(HostError::NoThreadStart {
                        name: self.guest.name.clone(),
                    });
                }
            },
        };
        let left = self.store.get_fuel().unwrap_or(0);
        self.info.cost += fuel.saturating_sub(left);
        if let Some(low) = self.ex.stack_low.clone() {
            let l = low.get(&mut self.store).i32().unwrap_or(0) as u32;
            let w = &mut self.store.data_mut().world;
            let t = &mut w.threads[i];
            t.low = t.low.min(l);
            if !matches!(entry, Entry::Test) {
                let s = slot as usize;
                w.slot_lows[s] = w.slot_lows[s].min(l);
            }
        }
        if r.is_ok() && self.store.data().mode == Mode::Unwinding {
            self.ex
                .asyncify
                .stop_unwind(&mut self.store)
                .map_err(runtime)?;
            // Asyncify does not check its buffer's end (the trampolines do
            // this in wasm).
            let buf = self.store.data().world.slot_bases[slot as usize] as usize;
            let end = buf + self.store.data().asyncify_bytes as usize;
            let data = self.ex.memory.data(&self.store);
            let current = data
                .get(buf..buf + 4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
            if current > end {
                let name = self.store.data().world.threads[i].path.to_string();
                self.store.data_mut().mode = Mode::Idle;
                self.status = Status::Failed(self.asyncify_overflow(Some(name)));
                return Ok(());
            }
        }
        let sp = self.ex.sp.get(&mut self.store).i32().unwrap_or(0) as u32;
        self.finish_segment(i, entry, slot, sp, r)
    }

    /// `run_segment` through the module's trampolines: the stack pointer,
    /// its low-water mark and Asyncify's globals travel as arguments and the
    /// result instead of through wasmtime's `Global` API.
    fn run_segment_fast(&mut self, i: usize, resume: Option<Ret>) -> Result<(), HostError> {
        let fuel = self.guest.config.fuel_per_step;
        self.store.set_fuel(fuel).map_err(runtime)?;
        let st = self.store.data_mut();
        let t = &mut st.world.threads[i];
        let (entry, started, sp, low, slot) = (t.entry, t.started, t.sp, t.low, t.slot);
        t.started = true;
        let buf = st.world.slot_bases[slot as usize];
        let end = buf + st.asyncify_bytes;
        st.cur = i;
        // The hook wrapper ends the rewind and returns `val` without
        // calling the host, so the host sees the thread running from the
        // start; an `out` value is written now, which is the same to the
        // guest: nothing runs between here and the hook's return.
        st.mode = Mode::Running;
        let (state, val) = if started {
            let r = resume.unwrap_or_default();
            if let Some((addr, v)) = r.out {
                let mem = self.ex.memory.data_mut(&mut self.store);
                if let Err(message) = crate::guest::put_guest_bytes(mem, addr, &v.to_le_bytes()) {
                    self.fail_misuse(i, message);
                    return Ok(());
                }
            }
            (ASYNCIFY_REWINDING, r.val)
        } else {
            (ASYNCIFY_NORMAL, 0)
        };
        let enter = self.ex.enter.as_ref().expect("checked by run_segment");
        let args = (0, sp as i32, low as i32, state, buf as i32, end as i32, val);
        let r = match entry {
            Entry::Test => enter.test.call(&mut self.store, args),
            Entry::ThreadStart(arg) => match &enter.thread_start {
                Some(f) => f.call(
                    &mut self.store,
                    (arg as i32, args.1, args.2, args.3, args.4, args.5, args.6),
                ),
                None => {
                    return Err(HostError::NoThreadStart {
                        name: self.guest.name.clone(),
                    });
                }
            },
        };
        let left = self.store.get_fuel().unwrap_or(0);
        self.info.cost += fuel.saturating_sub(left);
        let (sp, low) = match &r {
            Ok((v, ..)) => ((*v as u64 >> 32) as u32, *v as u32),
            // A trap skipped the trampoline's return: read the globals (the
            // low-water mark must cover whatever the thread wrote).
            Err(_) => (
                self.ex.sp.get(&mut self.store).i32().unwrap_or(0) as u32,
                match &self.ex.stack_low {
                    Some(g) => g.get(&mut self.store).i32().unwrap_or(0) as u32,
                    None => 0,
                },
            ),
        };
        if self.ex.stack_low.is_some() {
            let w = &mut self.store.data_mut().world;
            let t = &mut w.threads[i];
            t.low = t.low.min(low);
            if !matches!(entry, Entry::Test) {
                let s = slot as usize;
                w.slot_lows[s] = w.slot_lows[s].min(low);
            }
        }
        // The operation the thread suspended on (hook -1: the entry
        // returned, and the thread's next step is its exit).
        if let Ok((_, hook, site, a0, a1, a2, a3)) = r {
            if hook >= 0 {
                let mem = self.ex.memory.data(&self.store);
                match crate::guest::decode_op(hook as usize, [a0, a1, a2, a3], mem) {
                    Ok(op) => {
                        let st = self.store.data_mut();
                        let t = &mut st.world.threads[i];
                        t.pending = op;
                        t.site = site as u32;
                        st.mode = Mode::Unwinding;
                    }
                    Err(message) => {
                        self.fail_misuse(i, message);
                        return Ok(());
                    }
                }
            }
        }
        self.finish_segment(i, entry, slot, sp, r.map(|_| ()))
    }

    /// What `run_segment` does once the thread is back in the host: record
    /// where it stopped, or its end, or its failure.
    fn finish_segment(
        &mut self,
        i: usize,
        entry: Entry,
        slot: u32,
        sp: u32,
        r: wasmtime::Result<()>,
    ) -> Result<(), HostError> {
        match r {
            Ok(()) => match self.store.data().mode {
                Mode::Unwinding => {
                    let st = self.store.data_mut();
                    st.mode = Mode::Idle;
                    st.world.threads[i].sp = sp;
                    if !matches!(entry, Entry::Test) {
                        let bottom = st.world.slot_bases[slot as usize] + st.asyncify_bytes;
                        if sp < bottom {
                            let name = st.world.threads[i].path.to_string();
                            self.status = Status::Failed(Failure::new(
                                FailureKind::Trap,
                                Some(name),
                                format!(
                                    "thread overflowed its `{}` KiB shadow stack; raise --thread-stack-kib",
                                    self.guest.config.thread_stack_bytes >> 10
                                ),
                            ));
                        }
                    }
                }
                Mode::Running => {
                    // The entry function returned: the thread's next step is its exit.
                    let st = self.store.data_mut();
                    st.mode = Mode::Idle;
                    let t = &mut st.world.threads[i];
                    t.pending = Op::Exit;
                    t.site = 0;
                }
                Mode::Rewinding | Mode::Idle => {
                    return Err(HostError::Runtime {
                        message: "a resumed thread returned without reaching its hook (instrumentation mismatch)".into(),
                    });
                }
            },
            Err(e) => {
                let f = self.classify(i, e);
                self.store.data_mut().mode = Mode::Idle;
                self.status = Status::Failed(f);
            }
        }
        Ok(())
    }

    /// Fails the execution: thread `i` misused a hook (a pointer outside
    /// memory), which the host found outside any hook call.
    fn fail_misuse(&mut self, i: usize, message: String) {
        let st = self.store.data_mut();
        st.mode = Mode::Idle;
        let name = st.world.threads[i].path.to_string();
        self.status = Status::Failed(Failure::new(FailureKind::Misuse, Some(name), message));
    }

    /// The failure of a thread whose suspended stack overflowed its
    /// Asyncify buffer. The overflow wrote into stack pages that
    /// `known_zero` would take for zero, possibly in later slots too: no
    /// slot's pages count as known zero any more, so the next restore
    /// looks at them all.
    fn asyncify_overflow(&mut self, thread: Option<String>) -> Failure {
        for low in &mut self.store.data_mut().world.slot_lows {
            *low = 0;
        }
        let bytes = self.guest.config.asyncify_buffer_bytes;
        Failure::new(
            FailureKind::Trap,
            thread,
            format!(
                "the suspended call stack did not fit the {} Asyncify buffer; raise --asyncify-buffer-kib",
                if bytes >= 1024 {
                    format!("`{}` KiB", bytes >> 10)
                } else {
                    format!("`{bytes}`-byte")
                }
            ),
        )
    }

    /// Turns a trap of thread `i` into a failure report.
    fn classify(&mut self, i: usize, e: wasmtime::Error) -> Failure {
        // With trampolines the wasm hook wrapper starts an unwind without
        // the host knowing: Asyncify's state says.
        let unwinding = self.store.data().mode == Mode::Unwinding
            || match &self.ex.asyncify {
                Asyncify::Globals { state, .. } => {
                    state.get(&mut self.store).i32() == Some(ASYNCIFY_UNWINDING)
                }
                Asyncify::Funcs { .. } => false,
            };
        let st = self.store.data_mut();
        let thread = st.world.threads.get(i).map(|t| t.path.to_string());
        if let Some(GuestFault(f)) = e.downcast_ref::<GuestFault>() {
            let mut f = f.clone();
            f.thread = thread;
            return f;
        }
        if st.limits.hit {
            st.limits.hit = false;
            return self.memory_failure(thread);
        }
        if let Some((message, location)) = st.world.threads.get_mut(i).and_then(|t| t.panic.take())
        {
            let mut f = Failure::new(FailureKind::Panic, thread, message);
            f.location = Some(location);
            return f;
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => Failure::new(
                FailureKind::FuelExhausted,
                thread,
                format!(
                    "one step ran `{}` instructions without reaching a scheduling point (a loop with no hook call?); raise --fuel-per-step",
                    self.guest.config.fuel_per_step
                ),
            ),
            Some(Trap::UnreachableCodeReached) if unwinding => self.asyncify_overflow(thread),
            Some(t) => Failure::new(FailureKind::Trap, thread, format!("wasm trap: {t}")),
            None => Failure::new(FailureKind::Trap, thread, crate::error::one_line(&format!("{e:#}"))),
        }
    }

    /// Brings the views up to date after a step of thread `i` that ran an
    /// operation of kind `kind`. Views are in thread order without the
    /// exited threads. Only `i`'s pending operation changed (a thread's next
    /// operation is set by the thread itself), except that a spawn adds the
    /// child, which ran to its first hook and whose view is new, and an
    /// exit removes `i`'s view. The others keep their operation, site and
    /// accesses; their enabledness and alternatives are recomputed only
    /// after an operation that can change them (a release, a send, a
    /// notify, a spawn or an exit: see `changes_others`), and their accesses
    /// only after a registry change (`Unregister` and `Exit` name registry
    /// entries). A failed step recomputes everything.
    fn refresh_after(&mut self, i: usize, kind: OpKind) {
        if matches!(self.status, Status::Failed(_)) {
            return self.refresh();
        }
        let w = &self.store.data().world;
        if w.threads[i].exited {
            let tid = w.threads[i].tid;
            if let Some(at) = self.views.iter().position(|v| v.tid == tid) {
                self.views.remove(at);
            }
        }
        // A spawned thread is the last one in `threads`.
        let first_new = w.threads.len() - self.info.spawned.len();
        for t in &w.threads[first_new..] {
            self.views.push(blank_view(t.tid));
        }
        let others = changes_others(kind);
        let registry = matches!(kind, OpKind::Register | OpKind::Unregister);
        let mut n = 0;
        let mut any_enabled = false;
        for (k, t) in w.threads.iter().enumerate() {
            if t.exited {
                continue;
            }
            let v = &mut self.views[n];
            n += 1;
            if k == i || k >= first_new {
                v.pending.op = t.pending.kind();
                v.pending.site = u64::from(t.site);
                w.accesses(k, &mut v.pending.accesses);
            } else if !others {
                any_enabled |= v.pending.enabled;
                continue;
            } else if registry {
                // The registry is in the accesses of `Unregister` (who holds
                // the name) and of `Exit` (the exiting thread's own name,
                // which another thread may have registered): recompute all,
                // registry changes are rare.
                w.accesses(k, &mut v.pending.accesses);
            }
            v.pending.enabled = w.enabled(k);
            v.pending.alts = w.alts(k);
            any_enabled |= v.pending.enabled;
        }
        debug_assert_eq!(n, self.views.len());
        if any_enabled {
            // Usually running already: no drop and rebuild of the status.
            if !matches!(self.status, Status::Running) {
                self.status = Status::Running;
            }
        } else if n == 0 {
            self.status = Status::Finished;
        } else {
            self.status = Status::Failed(w.deadlock());
        }
    }

    /// Whether steps go through the module's trampolines and hook wrappers
    /// (`load::add_trampolines`) rather than the host-side Asyncify
    /// bookkeeping. For tests.
    #[doc(hidden)]
    pub fn uses_trampolines(&self) -> bool {
        self.ex.enter.is_some()
    }

    /// How many wasm instances this program has made: resets and restores
    /// normally reuse the instance. For tests and benchmarks.
    #[doc(hidden)]
    pub fn instances(&self) -> u64 {
        self.instances
    }

    /// Checks that the views and status kept up by `refresh_after` are what
    /// a full recomputation gives. For tests.
    #[doc(hidden)]
    pub fn verify_views(&mut self) -> Result<(), String> {
        let (views, status) = (self.views.clone(), self.status.clone());
        if matches!(status, Status::Failed(_)) {
            return Ok(());
        }
        self.status = Status::Running;
        self.refresh();
        if self.views != views || self.status != status {
            let msg = format!(
                "incremental views {views:?} / {status:?} differ from recomputed {:?} / {:?}",
                self.views, self.status
            );
            (self.views, self.status) = (views, status);
            return Err(msg);
        }
        Ok(())
    }

    /// Recomputes the thread views and the status after a step.
    fn refresh(&mut self) {
        let w = &self.store.data().world;
        let mut views = std::mem::take(&mut self.views);
        let mut n = 0;
        for (i, t) in w.threads.iter().enumerate() {
            if t.exited {
                continue;
            }
            if n == views.len() {
                views.push(blank_view(t.tid));
            }
            let v = &mut views[n];
            v.tid = t.tid;
            v.pending.op = t.pending.kind();
            v.pending.enabled = w.enabled(i);
            v.pending.alts = w.alts(i);
            v.pending.site = u64::from(t.site);
            w.accesses(i, &mut v.pending.accesses);
            n += 1;
        }
        views.truncate(n);
        if !matches!(self.status, Status::Failed(_)) {
            self.status = if views.is_empty() {
                Status::Finished
            } else if views.iter().any(|v| v.pending.enabled) {
                Status::Running
            } else {
                Status::Failed(w.deadlock())
            };
        }
        self.views = views;
    }

    /// Pages known to be zero without reading them: stack pages below the
    /// low-water mark of the stack region they belong to (the main stack
    /// when the module lays it out first; every thread slot's stack).
    fn known_zero(&self, world: &World, pages: usize) -> Vec<bool> {
        let mut mask = vec![false; pages];
        if self.ex.stack_low.is_none() {
            return mask;
        }
        let page = snapshot::PAGE as u32;
        let mut mark = |from: u32, to: u32| {
            // Whole pages inside [from, to).
            let first = from.div_ceil(page) as usize;
            let end = (to / page) as usize;
            for m in mask.iter_mut().take(end.min(pages)).skip(first) {
                *m = true;
            }
        };
        if let (Some(region), Some(main)) = (self.ex.stack_region, world.threads.first()) {
            if main.low > region {
                mark(region, main.low);
            }
        }
        let async_bytes = self.guest.config.asyncify_buffer_bytes;
        for (base, low) in world.slot_bases.iter().zip(&world.slot_lows) {
            let bottom = base + async_bytes;
            if *low > bottom {
                mark(bottom, *low);
            }
        }
        mask
    }

    /// Checks the low-water-mark reasoning on the current state: every page
    /// `known_zero` skips really is zero. For tests; returns the first page
    /// that is not.
    #[doc(hidden)]
    pub fn verify_known_zero(&self) -> Result<usize, String> {
        let data = self.ex.memory.data(&self.store);
        let zero = self.known_zero(&self.store.data().world, data.len() / snapshot::PAGE);
        for (i, z) in zero.iter().enumerate() {
            if *z && !snapshot::is_zero(&data[i * snapshot::PAGE..(i + 1) * snapshot::PAGE]) {
                return Err(format!("page {i} is assumed zero but is not"));
            }
        }
        Ok(zero.iter().filter(|z| **z).count())
    }

    /// What an access's object is, for reports: `cell main#0` for a host
    /// object; ids derived from other things (a table key, a mailbox, a
    /// registry name) are described by what they identify when a live
    /// thread or object explains them, else shown as an id.
    pub fn describe_object(&self, obj: wasmrace_trace::Oid) -> String {
        let w = &self.store.data().world;
        if w.objects.contains_key(&obj.0) {
            return w.object_name(obj.0);
        }
        for t in &w.threads {
            if wasmrace_trace::Oid::mailbox(t.tid) == obj {
                return format!("mailbox {}", t.path);
            }
            if wasmrace_trace::Oid::liveness(t.tid) == obj {
                return format!("thread {}", t.path);
            }
        }
        format!("object {:#018x}", obj.0)
    }

    /// `file:line:col` of a guest call site (`Pending::site`,
    /// `StepInfo::site`), when the guest exports the site accessors.
    pub fn describe_site(&mut self, site: u64) -> Option<String> {
        self.site_name(u32::try_from(site).ok()?)
    }

    fn site_name(&mut self, site: u32) -> Option<String> {
        if site == 0 {
            return None;
        }
        if let Some(s) = self.sites.get(&site) {
            return s.clone();
        }
        let resolved = self
            .ex
            .site
            .clone()
            .and_then(|[file_ptr, file_len, line, col]| {
                let s = site as i32;
                let fp = file_ptr.call(&mut self.store, s).ok()? as u32 as usize;
                let fl = file_len.call(&mut self.store, s).ok()? as u32 as usize;
                let line = line.call(&mut self.store, s).ok()?;
                let col = col.call(&mut self.store, s).ok()?;
                let file = self.ex.memory.data(&self.store).get(fp..fp + fl)?.to_vec();
                Some(format!("{}:{line}:{col}", String::from_utf8_lossy(&file)))
            });
        self.sites.insert(site, resolved.clone());
        resolved
    }

    fn do_step(&mut self, d: Decision) -> Result<(), HostError> {
        let step_no = self.steps;
        let Some(i) = self.store.data().world.thread_index(d.tid) else {
            return Err(HostError::InvalidDecision {
                thread: format!("{:#x}", d.tid.0),
                alt: d.alt,
                step: step_no,
            });
        };
        {
            let w = &self.store.data().world;
            if !matches!(self.status, Status::Running) || !w.enabled(i) || d.alt >= w.alts(i) {
                return Err(HostError::InvalidDecision {
                    thread: w.thread_name(d.tid),
                    alt: d.alt,
                    step: step_no,
                });
            }
        }
        let tracing = self.tracing();
        let preemption = tracing && is_preemption(&self.views, self.last, d.tid);
        self.info.tid = d.tid;
        self.info.alt = d.alt;
        self.info.spawned.clear();
        self.info.message = None;
        self.info.cost = 0;
        self.info.phase = None;
        let (kind, site, spawn_arg) = {
            let t = &self.store.data().world.threads[i];
            let arg = match &t.pending {
                Op::Spawn { arg } => Some(*arg),
                Op::Phase { name } => {
                    // Rare (a few per execution): one small allocation.
                    self.info.phase = Some(String::from_utf8_lossy(name).into());
                    None
                }
                _ => None,
            };
            (t.pending.kind(), t.site, arg)
        };
        self.info.op = Some(kind);
        self.info.site = u64::from(site);
        let mut spawned = None;
        if let Some(arg) = spawn_arg {
            if self.ex.thread_start.is_none() {
                return Err(HostError::NoThreadStart {
                    name: self.guest.name.clone(),
                });
            }
            match self.alloc_slot()? {
                Ok(slot) => {
                    let top = self.slot_stack_top(slot);
                    let w = &mut self.store.data_mut().world;
                    let c = w.spawn_child(i, arg, slot, top);
                    let tid = w.threads[c].tid;
                    spawned = Some(tid);
                    self.info.spawned.push(tid);
                }
                Err(f) => {
                    let mut f = f;
                    f.thread = Some(self.store.data().world.threads[i].path.to_string());
                    self.status = Status::Failed(f);
                }
            }
        }
        let mut object = None;
        let mut detail = String::new();
        if !matches!(self.status, Status::Failed(_)) {
            // The view of `i` holds its pending accesses; it is at index `i`
            // unless an earlier thread exited. The view's list is rebuilt
            // after the step anyway, so take it rather than recompute it.
            let w = &mut self.store.data_mut().world;
            let ex = match self.views.get_mut(i).filter(|v| v.tid == d.tid) {
                Some(v) => {
                    std::mem::swap(&mut self.info.accesses, &mut v.pending.accesses);
                    w.execute_with(i, d.alt, spawned, tracing, &mut self.info.accesses)
                }
                None => w.execute(i, d.alt, spawned, tracing, &mut self.info.accesses),
            };
            object = ex.object;
            detail = ex.detail;
            self.info.message = ex.message;
            match ex.outcome {
                Outcome::Return(r) => self.run_segment(i, Some(r))?,
                Outcome::Continue => {}
                Outcome::Exited => {
                    let w = &mut self.store.data_mut().world;
                    let slot = w.threads[i].slot;
                    w.free_slots.push(slot);
                }
                Outcome::Fail(f) => self.status = Status::Failed(f),
            }
        } else {
            self.info.accesses.clear();
        }
        // Newly spawned threads run up to their first hook within this step:
        // that code only touches their own state.
        let unstarted = std::mem::take(&mut self.store.data_mut().world.unstarted);
        for c in unstarted {
            if matches!(self.status, Status::Failed(_)) {
                break;
            }
            self.run_segment(c, None)?;
        }
        self.steps += 1;
        self.last = Some((d.tid, Some(kind)));
        if tracing {
            let logs = std::mem::take(&mut self.store.data_mut().logs);
            let site_name = self.site_name(site);
            let thread = self.store.data().world.thread_name(d.tid);
            self.trace.push(TraceEvent {
                step: step_no as u32 + 1,
                thread,
                op: kind.name().into(),
                object,
                detail,
                site: site_name,
                preemption,
                logs,
            });
        }
        self.refresh_after(i, kind);
        // The test suite checks every incremental update against a full
        // recomputation.
        #[cfg(feature = "verify-views")]
        if let Err(e) = self.verify_views() {
            panic!("after step {step_no} ({}): {e}", kind.name());
        }
        Ok(())
    }

    /// Replaces the instance with a fresh one (needed when memory must
    /// shrink, which wasm memories cannot).
    fn reinstantiate(&mut self) -> Result<(), HostError> {
        let tracing = self.tracing();
        let (store, ex) = instantiate(&self.guest, &self.test, tracing)?;
        self.store = store;
        self.ex = ex;
        self.instances += 1;
        Ok(())
    }
}

fn instantiate(
    guest: &GuestInner,
    test: &str,
    tracing: bool,
) -> Result<(Store<HostState>, Arc<Exports>), HostError> {
    let state = HostState {
        world: World::new(),
        cur: 0,
        mode: Mode::Idle,
        resume: Ret::default(),
        ex: None,
        limits: Limits {
            max: guest.config.max_memory_bytes as usize,
            hit: false,
        },
        tracing,
        logs: Vec::new(),
        asyncify_bytes: guest.config.asyncify_buffer_bytes,
    };
    let mut store = Store::new(&guest.engine, state);
    store.limiter(|s| &mut s.limits);
    store
        .set_fuel(guest.config.fuel_per_step)
        .map_err(runtime)?;
    let inst = guest.pre.instantiate(&mut store).map_err(runtime)?;
    let missing = |what: &str| HostError::Instrument {
        name: guest.name.clone(),
        message: format!("instrumented module lacks export `{what}`"),
    };
    let memory = inst
        .get_memory(&mut store, "memory")
        .ok_or_else(|| missing("memory"))?;
    macro_rules! func {
        ($name:expr) => {
            inst.get_typed_func(&mut store, $name)
                .map_err(|_| missing($name))?
        };
    }
    let test_export = format!("{}{}", load::TEST_PREFIX, test);
    let mut globals = Vec::new();
    for i in 0.. {
        match inst.get_global(&mut store, &format!("{}{i}", load::GLOBAL_EXPORT_PREFIX)) {
            Some(g) => globals.push(g),
            None => break,
        }
    }
    let site = match (
        inst.get_typed_func(&mut store, "__wasmrace_site_file_ptr")
            .ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_file_len")
            .ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_line").ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_col").ok(),
    ) {
        (Some(a), Some(b), Some(c), Some(d)) => Some([a, b, c, d]),
        _ => None,
    };
    let asyncify = match (
        inst.get_global(&mut store, load::ASYNCIFY_STATE_EXPORT),
        inst.get_global(&mut store, load::ASYNCIFY_DATA_EXPORT),
    ) {
        (Some(state), Some(data)) => Asyncify::Globals { state, data },
        _ => Asyncify::Funcs {
            start_unwind: func!("asyncify_start_unwind"),
            stop_unwind: func!("asyncify_stop_unwind"),
            start_rewind: func!("asyncify_start_rewind"),
            stop_rewind: func!("asyncify_stop_rewind"),
        },
    };
    let enter_of = |store: &mut Store<HostState>, export: &str| {
        inst.get_typed_func::<(i32, i32, i32, i32, i32, i32, i64), EnterRet>(
            &mut *store,
            &format!("{}{export}", load::ENTER_PREFIX),
        )
        .ok()
    };
    // Trampolines only work with Asyncify's globals exported (they set them).
    let enter = match (&asyncify, enter_of(&mut store, &test_export)) {
        (Asyncify::Globals { .. }, Some(test)) => Some(Enter {
            test,
            thread_start: enter_of(&mut store, load::THREAD_START),
        }),
        _ => None,
    };
    let ex = Arc::new(Exports {
        memory,
        asyncify,
        test: func!(&test_export),
        thread_start: inst.get_typed_func(&mut store, load::THREAD_START).ok(),
        init: inst.get_typed_func(&mut store, load::INIT).ok(),
        sp: inst
            .get_global(&mut store, load::STACK_POINTER_EXPORT)
            .ok_or_else(|| missing(load::STACK_POINTER_EXPORT))?,
        stack_low: inst.get_global(&mut store, load::STACK_LOW_EXPORT),
        stack_region: inst
            .get_global(&mut store, load::STACK_REGION_EXPORT)
            .and_then(|g| g.get(&mut store).i32())
            .map(|v| v as u32),
        globals,
        pages: inst.get_global(&mut store, load::MEMORY_PAGES_EXPORT),
        site,
        enter,
    });
    store.data_mut().ex = Some(ex.clone());
    Ok((store, ex))
}

/// A view for a new thread, filled in by the caller.
fn blank_view(tid: Tid) -> ThreadView {
    ThreadView {
        tid,
        pending: Pending {
            op: OpKind::Yield,
            enabled: false,
            alts: 1,
            accesses: Vec::new(),
            site: 0,
        },
    }
}

/// Whether running an operation of this kind can change another thread's
/// view: its enabledness (a lock taken or released, a message sent, a
/// notification), its alternatives (a condition variable's waiters) or its
/// accesses (`Unregister` reads who holds the name). Everything else
/// touches only the running thread's own view; `verify_views` checks this
/// against a full recomputation in the fixture tests. Exhaustive on
/// purpose: a new operation must be classified here.
fn changes_others(kind: OpKind) -> bool {
    use OpKind::*;
    match kind {
        Spawn | Exit | Send | MutexLock | MutexUnlock | CondvarWait | CondvarWake
        | CondvarNotifyOne | CondvarNotifyAll | Register | Unregister | Block => true,
        Join
        | Yield
        | Recv
        | RecvFrom
        | CellNew
        | CellGet
        | CellSet
        | AtomicNew
        | AtomicLoad
        | AtomicStore
        | AtomicSwap
        | AtomicFetchAdd
        | AtomicCompareExchange
        | MutexNew
        | CondvarNew
        | TableNew
        | TableInsert
        | TableGet
        | TableRemove
        | Whereis
        | Choose
        | Phase => false,
    }
}

impl Program for WasmProgram {
    type Snapshot = Snapshot;
    type Error = HostError;

    fn reset(&mut self) -> Result<(), HostError> {
        // Restoring the start state is exact (the same as starting again)
        // and cheap, but memory cannot shrink: once an execution grew it,
        // start over on a fresh instance and remember that start instead.
        // A traced run starts afresh: the start's own logs belong in the trace.
        let size = self.ex.memory.data_size(&self.store);
        let rewinds_size = self.ex.pages.is_some();
        if let Some(initial) = self.initial.take().filter(|_| !self.tracing()) {
            if (rewinds_size || initial.memory_bytes == size)
                && matches!(initial.status, Status::Running)
            {
                let r = self.restore(&initial);
                self.initial = Some(initial);
                return r;
            }
        }
        self.reinstantiate()?;
        self.start()?;
        self.initial = self.snapshot()?;
        Ok(())
    }

    fn threads(&self) -> &[ThreadView] {
        &self.views
    }

    fn status(&self) -> &Status {
        &self.status
    }

    fn step(&mut self, d: Decision) -> Result<&StepInfo, HostError> {
        self.do_step(d)?;
        Ok(&self.info)
    }

    fn snapshot(&mut self) -> Result<Option<Snapshot>, HostError> {
        if self.guest.analysis.mutates_tables {
            // A snapshot without the tables would not restore exactly.
            return Ok(None);
        }
        let memory_bytes = self.mem_len();
        let zero = self.known_zero(&self.store.data().world, memory_bytes / snapshot::PAGE);
        let data = &self.ex.memory.data(&self.store)[..memory_bytes];
        let pages = snapshot::capture_pages(data, &self.prev_pages, &zero);
        self.prev_pages = pages.clone();
        let mut globals = Vec::with_capacity(self.ex.globals.len());
        for g in &self.ex.globals {
            globals.push(snapshot::val_bits(&g.get(&mut self.store)));
        }
        Ok(Some(Snapshot {
            memory_bytes,
            pages,
            globals,
            world: self.store.data().world.clone(),
            views: self.views.clone(),
            status: self.status.clone(),
            steps: self.steps,
            last: self.last,
        }))
    }

    fn restore(&mut self, s: &Snapshot) -> Result<(), HostError> {
        let size = self.ex.memory.data_size(&self.store);
        if size > s.memory_bytes && self.ex.pages.is_none() {
            self.reinstantiate()?;
        }
        let size = self.ex.memory.data_size(&self.store);
        if size < s.memory_bytes {
            let pages = ((s.memory_bytes - size) / 65536) as u64;
            self.ex
                .memory
                .grow(&mut self.store, pages)
                .map_err(runtime)?;
        }
        // Everything the guest has now or had then; above both, memory is
        // zero already. Pages beyond the snapshot's size become zero (the
        // guest's later growth must find them as fresh memory is).
        let len = self.mem_len().max(s.memory_bytes);
        // Pages zero both now and in the snapshot need no look at all.
        let pages = len / snapshot::PAGE;
        let zero_now = self.known_zero(&self.store.data().world, pages);
        let zero_then = self.known_zero(&s.world, pages);
        let both: Vec<bool> = zero_now
            .iter()
            .zip(&zero_then)
            .map(|(a, b)| *a && *b)
            .collect();
        let data = &mut self.ex.memory.data_mut(&mut self.store)[..len];
        snapshot::restore_pages(data, &s.pages, &both);
        for (g, bits) in self.ex.globals.clone().iter().zip(&s.globals) {
            let v = snapshot::val_from_bits(&g.ty(&self.store), *bits);
            g.set(&mut self.store, v).map_err(runtime)?;
        }
        let st = self.store.data_mut();
        st.world = s.world.clone();
        st.mode = Mode::Idle;
        st.logs.clear();
        self.views = s.views.clone();
        self.status = s.status.clone();
        self.steps = s.steps;
        self.last = s.last;
        self.trace.clear();
        Ok(())
    }

    /// Everything a saved snapshot keeps alive: its page data (pages shared
    /// with other snapshots counted in full, to stay on the safe side), its
    /// page table, globals, `World` clone and views.
    fn snapshot_bytes(&self, s: &Snapshot) -> usize {
        use std::mem::size_of;
        let views: usize = s
            .views
            .iter()
            .map(|v| v.pending.accesses.capacity() * size_of::<wasmrace_trace::Access>())
            .sum::<usize>()
            + s.views.capacity() * size_of::<ThreadView>();
        s.stored_bytes()
            + s.pages.capacity() * size_of::<Option<Arc<snapshot::Page>>>()
            + s.globals.capacity() * size_of::<u128>()
            + s.world.heap_bytes()
            + views
            + size_of::<Snapshot>()
    }

    fn state_hash(&mut self) -> Option<[u8; 32]> {
        let mut h = blake3::Hasher::new();
        // The guest's memory only: the same state hashes the same whatever
        // the real memory grew to in other executions.
        let len = self.mem_len();
        let zero = self.known_zero(&self.store.data().world, len / snapshot::PAGE);
        snapshot::hash_memory(&self.ex.memory.data(&self.store)[..len], &zero, &mut h);
        for g in self.ex.globals.clone() {
            h.update(&snapshot::val_bits(&g.get(&mut self.store)).to_le_bytes());
        }
        self.store.data().world.hash_into(&mut h);
        Some(*h.finalize().as_bytes())
    }

    fn thread_name(&self, tid: Tid) -> String {
        self.store.data().world.thread_name(tid)
    }
}
