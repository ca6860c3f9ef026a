//! The hooks a guest calls and the host state they change: `HostState`
//! (the store's data: the `World`, the running thread, the stepping mode),
//! the running instance's exports, `suspend` (the heart of quiescent
//! stepping for modules without trampolines) and the linker, whose
//! suspending hooks come from the operation table (`ops.rs`).

pub(crate) mod onward;
pub(crate) mod races;
mod wasi;

pub use wasi::WasiEnv;

use crate::error::{runtime, HostError};
use crate::ops::{self, decode_op, guest_bytes, guest_range, OP_ARGS};
use crate::world::{put_guest_bytes, Ret, World};
use std::sync::Arc;
use wasmrace_trace::{Failure, FailureKind};
use wasmtime::{
    AsContextMut, Caller, Engine, Global, Linker, Memory, ResourceLimiter, TypedFunc, Val,
};

/// A guest fault detected inside a hook (bad pointer, bad UTF-8): it fails
/// the execution as API misuse rather than crashing the host.
#[derive(Debug)]
pub(crate) struct GuestFault(pub Failure);

impl std::fmt::Display for GuestFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl std::error::Error for GuestFault {}

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
// One per instance, never moved on the step path: boxing the larger
// variant would only add an indirection.
#[allow(clippy::large_enum_variant)]
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

pub(crate) const ASYNCIFY_NORMAL: i32 = 0;
pub(crate) const ASYNCIFY_UNWINDING: i32 = 1;
pub(crate) const ASYNCIFY_REWINDING: i32 = 2;

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
    /// The module's mutable globals, exported by the loader, with their
    /// types: read once here, not on every restore.
    pub globals: Vec<(Global, wasmtime::GlobalType)>,
    /// The guest's memory size in wasm pages (`load::virtualize_memory_size`),
    /// when instrumented: memory beyond it is zero and not the guest's.
    pub pages: Option<Global>,
    pub site: Option<[TypedFunc<i32, i32>; 4]>,
    /// The trampolines of the test and of the thread start (see
    /// `load::add_trampolines`), when the module has them: a step is then
    /// one call into wasm and no host-side global access (the module's hook
    /// wrappers do Asyncify's bookkeeping, so hooks must not).
    pub enter: Option<Enter>,
    /// The dirty-page map's address global (`load::track_dirty_pages`),
    /// when the module's writes are tracked.
    pub dirty_base: Option<Global>,
    /// A std guest's thread-local base (`load::TLS_BASE_EXPORT`): each
    /// thread has its own, saved in its record while it is suspended.
    pub tls: Option<Global>,
}

/// `(arg, sp, low, asyncify state, asyncify data, buffer end, resumed
/// hook's result) -> (sp << 32 | low, hook, site, a0, a1, a2, a3)` (see
/// `load::add_trampolines`).
pub(crate) type EnterFunc = TypedFunc<(i32, i32, i32, i32, i32, i32, i64, i32), EnterRet>;
pub(crate) type EnterRet = (i64, i32, i32, i64, i64, i64, i64);

pub(crate) struct Enter {
    pub test: EnterFunc,
    pub thread_start: Option<EnterFunc>,
}

/// The memory limit, and whether a growth hit it.
pub(crate) struct Limits {
    pub max: usize,
    pub hit: bool,
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
    /// Log bytes the current execution may still keep (`--max-log-kib`);
    /// reset when an execution starts or a state is restored.
    pub(crate) log_room: u64,
    pub(crate) asyncify_bytes: u32,
    /// Where the dirty-page map is, once placed: the host's own writes
    /// into guest memory mark it as the guest's do.
    pub(crate) dirty_map: Option<u32>,
    /// While a step may go on in place: what `__onward` reaches.
    pub(crate) onward: Option<onward::Onward>,
    /// A std guest's arguments and environment (`hooks/wasi.rs`).
    pub(crate) wasi: Arc<WasiEnv>,
    /// How race reports name sites (`hooks/races.rs`), when races are
    /// detected.
    pub(crate) race_sites: Option<Arc<crate::load::RaceSites>>,
    /// The guest is a std guest (race reports hint differently).
    pub(crate) std_guest: bool,
    /// Under `--data-races report`: the races met since the program last
    /// took them (`WasmProgram::take_races`); `None` when a race fails
    /// the execution.
    pub(crate) race_log: Option<races::RaceLog>,
}

impl HostState {
    /// The store data of a fresh execution of a guest loaded with `config`.
    pub(crate) fn new(config: &crate::config::HostConfig, tracing: bool) -> HostState {
        HostState {
            world: World::with_races(config.data_races != wasmrace_trace::DataRaces::Off),
            cur: 0,
            mode: Mode::Idle,
            resume: Ret::default(),
            ex: None,
            limits: Limits {
                max: config.max_memory_bytes as usize,
                hit: false,
            },
            tracing,
            logs: Vec::new(),
            log_room: config.max_log_bytes,
            asyncify_bytes: config.asyncify_buffer_bytes,
            dirty_map: None,
            onward: None,
            wasi: Arc::default(),
            race_sites: None,
            std_guest: false,
            race_log: (config.data_races == wasmrace_trace::DataRaces::Report)
                .then(|| races::RaceLog::new(config.max_data_race_reports)),
        }
    }

    pub(crate) fn ex(&self) -> Arc<Exports> {
        self.ex
            .clone()
            .expect("exports are set before any guest code runs")
    }
}

/// What one log line costs against `--max-log-kib` beyond its bytes: empty
/// lines in a loop must run out of room too.
const LOG_LINE_BYTES: u64 = 32;

/// Keeps a log line for the trace, within the execution's room; the line
/// that does not fit is cut, followed by one line saying so, and later
/// lines are dropped.
fn log_line(c: &mut Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<()> {
    let room = c.data().log_room;
    if room == 0 {
        return Ok(());
    }
    let take = u64::from(len as u32).min(room);
    let b = read_bytes(c, ptr, take as i32)?;
    // Counted at the length asked for: a line too long is cut.
    keep_log_counted(c.data_mut(), &b, u64::from(len as u32));
    Ok(())
}

/// Keeps `bytes` as a log line (a std guest's output: one line per line
/// written, without the newline), within the execution's room.
pub(crate) fn keep_log(st: &mut HostState, bytes: &[u8]) {
    let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    for line in text.split(|b| *b == b'\n') {
        keep_log_counted(st, line, line.len() as u64);
    }
}

/// Keeps a line that asked for `len` bytes: cut to the room left,
/// followed by one line saying so, after which lines are dropped.
fn keep_log_counted(st: &mut HostState, b: &[u8], len: u64) {
    let room = st.log_room;
    if room == 0 {
        return;
    }
    let want = len + LOG_LINE_BYTES;
    let take = want.min(room).saturating_sub(LOG_LINE_BYTES) as usize;
    st.logs
        .push(String::from_utf8_lossy(&b[..take.min(b.len())]).into_owned());
    st.log_room = room - want.min(room);
    if want > room {
        st.log_room = 0;
        st.logs.push(
            "[wasmrace: this execution logged more than the `--max-log-kib` limit; later log bytes are dropped; raise --max-log-kib]"
                .into(),
        );
    }
}

/// The running thread's index, or a fault when a plain hook is called
/// where no thread runs: from the module's start function, which runs
/// while the instance is made, before the first thread exists (a
/// generated module's start function called `current` and the host
/// indexed an empty thread table).
pub(super) fn running(st: &HostState) -> wasmtime::Result<usize> {
    match st.cur < st.world.threads.len() {
        true => Ok(st.cur),
        false => Err(fault(
            "a wasmrace hook was called where no thread runs (from the module's start function)"
                .into(),
        )),
    }
}

fn fault(msg: String) -> wasmtime::Error {
    wasmtime::Error::new(GuestFault(Failure::new(FailureKind::Misuse, None, msg)))
}

fn read_bytes(
    caller: &mut Caller<'_, HostState>,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<crate::ops::Bytes> {
    let ex = caller.data().ex();
    guest_bytes(ex.memory.data(&*caller), ptr, len).map_err(fault)
}

fn write_bytes(caller: &mut Caller<'_, HostState>, ptr: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    let ex = caller.data().ex();
    let map = caller.data().dirty_map;
    put_guest_bytes(ex.memory.data_mut(&mut *caller), map, ptr, bytes).map_err(fault)
}

/// The heart of quiescent stepping for modules without trampolines (whose
/// hook wrappers do all this in wasm and never call the host: see
/// `load::wrap_suspending_hooks`). A fresh call records the operation as
/// the thread's pending one and unwinds the thread (Asyncify) back to the
/// host; the call seen again while rewinding is the thread being resumed
/// after the scheduler ran the operation: stop the rewind and hand back the
/// result.
fn suspend(
    caller: &mut Caller<'_, HostState>,
    hook: usize,
    args: [i64; OP_ARGS],
    site: i32,
) -> wasmtime::Result<i64> {
    match caller.data().mode {
        Mode::Rewinding => {
            let ex = caller.data().ex();
            ex.asyncify.stop_rewind(&mut *caller)?;
            let st = caller.data_mut();
            st.mode = Mode::Running;
            let r = std::mem::take(&mut st.resume);
            if let Some((addr, v)) = r.out {
                write_bytes(caller, addr, &v.to_le_bytes())?;
            }
            Ok(r.val)
        }
        Mode::Running => {
            let ex = caller.data().ex();
            if ex.enter.is_some() {
                return Err(fault(
                    "a suspending hook was called around its wasm wrapper (instrumentation mismatch)".into(),
                ));
            }
            let op = decode_op(hook, args, ex.memory.data(&*caller)).map_err(fault)?;
            let st = caller.data_mut();
            let cur = st.cur;
            st.world.set_pending(cur, op, site as u32);
            st.mode = Mode::Unwinding;
            let buf = st.world.slot_bases[st.world.threads[cur].slot as usize];
            let end = buf + st.asyncify_bytes;
            // Asyncify's data header: [current, end], data right after it.
            let mut header = [0u8; 8];
            header[..4].copy_from_slice(&(buf + 8).to_le_bytes());
            header[4..].copy_from_slice(&end.to_le_bytes());
            write_bytes(caller, buf, &header)?;
            ex.asyncify.start_unwind(&mut *caller, buf)?;
            Ok(0)
        }
        Mode::Idle | Mode::Unwinding => Err(fault(
            "a scheduling hook was called outside a thread (from `__wasmrace_init` or a nested call)".into(),
        )),
    }
}

pub(crate) fn make_linker(engine: &Engine) -> Result<Linker<HostState>, HostError> {
    let mut l: Linker<HostState> = Linker::new(engine);
    let m = ops::HOOK_MODULE;
    // Suspending hooks: their signatures and meaning are the operation
    // table's (`ops.rs`).
    ops::link_suspending(&mut l, suspend).map_err(runtime)?;

    // The hook wrappers' offer to go on in place (`onward`).
    l.func_wrap(
        m,
        ops::ONWARD_HOOK,
        |c: Caller<'_, HostState>,
         hook: i32,
         site: i32,
         a0: i64,
         a1: i64,
         a2: i64,
         a3: i64,
         low: i32|
         -> wasmtime::Result<(i32, i64)> {
            onward::onward(c, hook, site, [a0, a1, a2, a3], low)
        },
    )
    .map_err(runtime)?;

    // Plain hooks: run inside the current step.
    l.func_wrap(
        m,
        "current",
        |c: Caller<'_, HostState>| -> wasmtime::Result<i64> {
            let st = c.data();
            Ok(st.world.threads[running(st)?].tid.0 as i64)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "recv_take",
        |mut c: Caller<'_, HostState>, buf: i32, out_from: i32| -> wasmtime::Result<()> {
            let st = c.data_mut();
            let cur = running(st)?;
            let Some(msg) = st.world.take_message(cur) else {
                return Err(fault("recv_take without a preceding recv".into()));
            };
            write_bytes(&mut c, buf as u32, &msg.data)?;
            write_bytes(&mut c, out_from as u32, &msg.from.0.to_le_bytes())
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "log",
        |mut c: Caller<'_, HostState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            // A bad pointer is misuse whether or not the line is kept: were
            // it checked only while tracing, exploring would go past the
            // failure that tracing stops at, and the schedule it records
            // would not replay (docs/ABI.md, "Bad arguments").
            {
                let ex = c.data().ex();
                guest_range(ex.memory.data(&c), ptr, len).map_err(fault)?;
            }
            if c.data().tracing {
                log_line(&mut c, ptr, len)?;
            }
            Ok(())
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "report_panic",
        |mut c: Caller<'_, HostState>,
         msg: i32,
         msg_len: i32,
         file: i32,
         file_len: i32,
         line: i32,
         col: i32|
         -> wasmtime::Result<()> {
            let msg = String::from_utf8_lossy(&read_bytes(&mut c, msg, msg_len)?).into_owned();
            let file = String::from_utf8_lossy(&read_bytes(&mut c, file, file_len)?).into_owned();
            let st = c.data_mut();
            let cur = running(st)?;
            st.world.threads[cur].panic = Some((msg, format!("{file}:{line}:{col}")));
            Ok(())
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "thread_name",
        |mut c: Caller<'_, HostState>, tid: i64, buf: i32, cap: i32| -> wasmtime::Result<i32> {
            let name = c
                .data()
                .world
                .thread_full_name(wasmrace_trace::Tid(tid as u64));
            let n = name.len().min(cap.max(0) as usize);
            write_bytes(&mut c, buf as u32, &name.as_bytes()[..n])?;
            Ok(name.len() as i32)
        },
    )
    .map_err(runtime)?;
    wasi::link(&mut l)?;
    races::link(&mut l)?;
    Ok(l)
}
