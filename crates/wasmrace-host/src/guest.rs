//! A loaded guest: validated, audited, instrumented, compiled (through the
//! on-disk cache) and linked against the hooks. Cheap to clone and shared by
//! every program (test run) made from it.

use crate::config::HostConfig;
use crate::error::{one_line, runtime, HostError};
use crate::load::{self, Analysis, HOOK_MODULE};
use crate::program::{HostState, Mode, WasmProgram};
use crate::world::Op;
use std::path::Path;
use std::sync::Arc;
use wasmrace_trace::{Failure, FailureKind};
use wasmtime::{Caller, Engine, InstancePre, Linker};

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

pub(crate) struct GuestInner {
    pub name: String,
    pub module_hash: String,
    pub config: HostConfig,
    pub engine: Engine,
    pub pre: InstancePre<HostState>,
    pub analysis: Analysis,
    pub from_cache: bool,
}

/// A guest module ready to run. Clone it freely: clones share the compiled
/// code.
#[derive(Clone)]
pub struct Guest {
    pub(crate) inner: Arc<GuestInner>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("name", &self.inner.name)
            .field("tests", &self.inner.analysis.tests)
            .finish()
    }
}

impl Guest {
    /// Loads a module from a file.
    pub fn load(path: &Path, config: HostConfig) -> Result<Guest, HostError> {
        let bytes = std::fs::read(path).map_err(|source| HostError::Io {
            path: path.to_path_buf(),
            cause: source,
        })?;
        let name = path.display().to_string();
        Guest::from_bytes(&name, &bytes, config)
    }

    /// Loads a module from bytes; `name` is used in messages.
    pub fn from_bytes(name: &str, bytes: &[u8], config: HostConfig) -> Result<Guest, HostError> {
        let analysis = load::analyze(name, bytes)?;
        let module_hash = blake3::hash(bytes).to_hex().to_string();
        let engine = make_engine(&config)?;
        let (module, from_cache) = load::compiled_module(name, bytes, &engine, &config)?;
        let linker = make_linker(&engine)?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| HostError::Compile {
                name: name.into(),
                message: one_line(&format!("{e:#}")),
            })?;
        Ok(Guest {
            inner: Arc::new(GuestInner {
                name: name.into(),
                module_hash,
                config,
                engine,
                pre,
                analysis,
                from_cache,
            }),
        })
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The tests the module exports, sorted by name.
    pub fn tests(&self) -> &[String] {
        &self.inner.analysis.tests
    }

    /// blake3 (hex) of the original module bytes; schedule files carry it.
    pub fn module_hash(&self) -> &str {
        &self.inner.module_hash
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// Whether the compiled module came from the on-disk cache.
    pub fn from_cache(&self) -> bool {
        self.inner.from_cache
    }

    /// A program that runs test `test`, ready for exploration.
    pub fn program(&self, test: &str) -> Result<WasmProgram, HostError> {
        if !self.tests().iter().any(|t| t == test) {
            return Err(HostError::UnknownTest {
                name: self.inner.name.clone(),
                test: test.into(),
                available: format!("`{}`", self.tests().join("`, `")),
            });
        }
        WasmProgram::new(self.inner.clone(), test)
    }
}

fn make_engine(config: &HostConfig) -> Result<Engine, HostError> {
    let mut c = wasmtime::Config::new();
    c.consume_fuel(true);
    c.memory_init_cow(true);
    // A program holds one instance at a time (two while it re-instantiates
    // for a restore), so a small pool is plenty; each slot reserves address
    // space for a 4 GiB memory plus guards.
    let mut pool = wasmtime::PoolingAllocationConfig::default();
    pool.total_memories(16)
        .total_core_instances(16)
        .total_tables(16);
    pool.max_memory_size(config.max_memory_bytes.max(1 << 20) as usize);
    c.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&c) {
        Ok(e) => Ok(e),
        // Where that much address space cannot be reserved (a `ulimit -v`,
        // valgrind), allocate instances on demand: slower resets, same results.
        Err(_) => {
            c.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
            Engine::new(&c).map_err(runtime)
        }
    }
}

fn fault(msg: String) -> wasmtime::Error {
    wasmtime::Error::new(GuestFault(Failure::new(FailureKind::Misuse, None, msg)))
}

/// The `len` bytes of guest memory at `ptr`, a hook's argument; the error
/// is the guest's fault.
pub(crate) fn guest_bytes(mem: &[u8], ptr: i64, len: i64) -> Result<Vec<u8>, String> {
    let (p, l) = (ptr as u32 as usize, len as u32 as usize);
    mem.get(p..p.saturating_add(l))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| format!("hook argument points outside guest memory (`{p:#x}`, {l} bytes)"))
}

/// Writes `bytes` into guest memory at `ptr`, a hook's output; the error is
/// the guest's fault.
pub(crate) fn put_guest_bytes(mem: &mut [u8], ptr: u32, bytes: &[u8]) -> Result<(), String> {
    let p = ptr as usize;
    match mem.get_mut(p..p.saturating_add(bytes.len())) {
        Some(s) => {
            s.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(format!(
            "hook output points outside guest memory (`{p:#x}`, {} bytes)",
            bytes.len()
        )),
    }
}

fn read_bytes(caller: &mut Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let ex = caller.data().ex();
    guest_bytes(ex.memory.data(&*caller), ptr.into(), len.into()).map_err(fault)
}

fn write_bytes(caller: &mut Caller<'_, HostState>, ptr: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    let ex = caller.data().ex();
    put_guest_bytes(ex.memory.data_mut(&mut *caller), ptr, bytes).map_err(fault)
}

/// Index of a suspending hook in `load::SUSPENDING_HOOKS`, at compile time
/// (a name missing from the list fails the build).
const fn hook_index(name: &str) -> usize {
    let hooks = load::SUSPENDING_HOOKS;
    let mut i = 0;
    while i < hooks.len() {
        let (a, b) = (hooks[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a suspending hook")
}

/// Builds the operation of a suspending hook call from its raw parameters:
/// `hook` indexes `load::SUSPENDING_HOOKS`, `a` holds the parameters before
/// the site in order (`i32`s zero-extended, as the wasm hook wrappers
/// record them), and byte arguments are read from `mem`. The one place
/// that knows each hook's parameters (docs/ABI.md); both ways a hook is
/// reached (the wrappers' record, the linked host functions) come here.
/// An error is a guest fault, e.g. a pointer outside memory.
pub(crate) fn decode_op(hook: usize, a: [i64; load::OP_ARGS], mem: &[u8]) -> Result<Op, String> {
    let bytes = |ptr: i64, len: i64| guest_bytes(mem, ptr, len);
    let [a0, a1, a2, a3] = a;
    let (u0, u1, u2) = (a0 as u64, a1 as u64, a2 as u64);
    const SPAWN: usize = hook_index("spawn");
    const JOIN: usize = hook_index("join");
    const YIELD_NOW: usize = hook_index("yield_now");
    const SEND: usize = hook_index("send");
    const RECV: usize = hook_index("recv");
    const RECV_FROM: usize = hook_index("recv_from");
    const CELL_NEW: usize = hook_index("cell_new");
    const CELL_GET: usize = hook_index("cell_get");
    const CELL_SET: usize = hook_index("cell_set");
    const ATOMIC_NEW: usize = hook_index("atomic_new");
    const ATOMIC_LOAD: usize = hook_index("atomic_load");
    const ATOMIC_STORE: usize = hook_index("atomic_store");
    const ATOMIC_SWAP: usize = hook_index("atomic_swap");
    const ATOMIC_FETCH_ADD: usize = hook_index("atomic_fetch_add");
    const ATOMIC_CAS: usize = hook_index("atomic_compare_exchange");
    const MUTEX_NEW: usize = hook_index("mutex_new");
    const MUTEX_LOCK: usize = hook_index("mutex_lock");
    const MUTEX_UNLOCK: usize = hook_index("mutex_unlock");
    const CONDVAR_NEW: usize = hook_index("condvar_new");
    const CONDVAR_WAIT: usize = hook_index("condvar_wait");
    const NOTIFY_ONE: usize = hook_index("condvar_notify_one");
    const NOTIFY_ALL: usize = hook_index("condvar_notify_all");
    const TABLE_NEW: usize = hook_index("table_new");
    const TABLE_INSERT: usize = hook_index("table_insert");
    const TABLE_GET: usize = hook_index("table_get");
    const TABLE_REMOVE: usize = hook_index("table_remove");
    const REGISTER: usize = hook_index("register");
    const WHEREIS: usize = hook_index("whereis");
    const UNREGISTER: usize = hook_index("unregister");
    const CHOOSE: usize = hook_index("choose");
    const PHASE: usize = hook_index("phase");
    Ok(match hook {
        SPAWN => Op::Spawn { arg: a0 as u32 },
        JOIN => Op::Join { target: u0 },
        YIELD_NOW => Op::Yield,
        SEND => Op::Send {
            to: u0,
            data: bytes(a1, a2)?,
        },
        RECV => Op::Recv,
        RECV_FROM => Op::RecvFrom { from: u0 },
        CELL_NEW => Op::CellNew { init: u0 },
        CELL_GET => Op::CellGet { h: u0 },
        CELL_SET => Op::CellSet { h: u0, v: u1 },
        ATOMIC_NEW => Op::AtomicNew { init: u0 },
        ATOMIC_LOAD => Op::AtomicLoad { h: u0 },
        ATOMIC_STORE => Op::AtomicStore { h: u0, v: u1 },
        ATOMIC_SWAP => Op::AtomicSwap { h: u0, v: u1 },
        ATOMIC_FETCH_ADD => Op::AtomicFetchAdd { h: u0, v: u1 },
        ATOMIC_CAS => Op::AtomicCas {
            h: u0,
            current: u1,
            new: u2,
        },
        MUTEX_NEW => Op::MutexNew,
        MUTEX_LOCK => Op::MutexLock { h: u0 },
        MUTEX_UNLOCK => Op::MutexUnlock { h: u0 },
        CONDVAR_NEW => Op::CondvarNew,
        CONDVAR_WAIT => Op::CondvarWait { cv: u0, m: u1 },
        NOTIFY_ONE => Op::NotifyOne { cv: u0 },
        NOTIFY_ALL => Op::NotifyAll { cv: u0 },
        TABLE_NEW => Op::TableNew,
        TABLE_INSERT => Op::TableInsert {
            h: u0,
            k: u1,
            v: u2,
            out: a3 as u32,
        },
        TABLE_GET => Op::TableGet {
            h: u0,
            k: u1,
            out: a2 as u32,
        },
        TABLE_REMOVE => Op::TableRemove {
            h: u0,
            k: u1,
            out: a2 as u32,
        },
        REGISTER => Op::Register {
            name: bytes(a0, a1)?,
            tid: u2,
        },
        WHEREIS => Op::Whereis {
            name: bytes(a0, a1)?,
            out: a2 as u32,
        },
        UNREGISTER => Op::Unregister {
            name: bytes(a0, a1)?,
        },
        CHOOSE => Op::Choose { n: a0 as u32 },
        PHASE => Op::Phase {
            name: bytes(a0, a1)?,
        },
        _ => return Err(format!("unknown suspending hook `{hook}`")),
    })
}

/// A hook parameter as `decode_op` takes it.
trait RawArg {
    fn raw(self) -> i64;
}
impl RawArg for i32 {
    fn raw(self) -> i64 {
        self as u32 as i64
    }
}
impl RawArg for i64 {
    fn raw(self) -> i64 {
        self
    }
}

/// A hook's wasm result from the resumed operation's value.
trait FromResume {
    fn from_resume(v: i64) -> Self;
}
impl FromResume for i64 {
    fn from_resume(v: i64) -> Self {
        v
    }
}
impl FromResume for i32 {
    fn from_resume(v: i64) -> Self {
        v as i32
    }
}
impl FromResume for () {
    fn from_resume(_: i64) -> Self {}
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
    args: [i64; load::OP_ARGS],
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
            let t = &mut st.world.threads[cur];
            t.pending = op;
            t.site = site as u32;
            st.mode = Mode::Unwinding;
            let buf = st.world.slot_bases[t.slot as usize];
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

fn make_linker(engine: &Engine) -> Result<Linker<HostState>, HostError> {
    let mut l: Linker<HostState> = Linker::new(engine);
    let m = HOOK_MODULE;
    // Suspending hooks, with their wasm signatures (docs/ABI.md); every
    // one takes the call site last. What each means is `decode_op`'s.
    macro_rules! hook {
        ($name:literal ($($a:ident : $t:ty),*) -> $r:ty) => {
            l.func_wrap(m, $name, |mut c: Caller<'_, HostState> $(, $a: $t)*, site: i32| -> wasmtime::Result<$r> {
                let given: &[i64] = &[$(RawArg::raw($a)),*];
                let mut args = [0i64; load::OP_ARGS];
                args[..given.len()].copy_from_slice(given);
                suspend(&mut c, const { hook_index($name) }, args, site).map(<$r>::from_resume)
            }).map_err(runtime)?;
        };
    }
    hook!("spawn"(arg: i32) -> i64);
    hook!("join"(tid: i64) -> ());
    hook!("yield_now"() -> ());
    hook!("send"(to: i64, ptr: i32, len: i32) -> ());
    hook!("recv"() -> i32);
    hook!("recv_from"(from: i64) -> i32);
    hook!("cell_new"(init: i64) -> i64);
    hook!("cell_get"(h: i64) -> i64);
    hook!("cell_set"(h: i64, v: i64) -> ());
    hook!("atomic_new"(init: i64) -> i64);
    hook!("atomic_load"(h: i64) -> i64);
    hook!("atomic_store"(h: i64, v: i64) -> ());
    hook!("atomic_swap"(h: i64, v: i64) -> i64);
    hook!("atomic_fetch_add"(h: i64, v: i64) -> i64);
    hook!("atomic_compare_exchange"(h: i64, cur: i64, new: i64) -> i64);
    hook!("mutex_new"() -> i64);
    hook!("mutex_lock"(h: i64) -> ());
    hook!("mutex_unlock"(h: i64) -> ());
    hook!("condvar_new"() -> i64);
    hook!("condvar_wait"(cv: i64, mx: i64) -> ());
    hook!("condvar_notify_one"(cv: i64) -> ());
    hook!("condvar_notify_all"(cv: i64) -> ());
    hook!("table_new"() -> i64);
    hook!("table_insert"(h: i64, k: i64, v: i64, out: i32) -> i32);
    hook!("table_get"(h: i64, k: i64, out: i32) -> i32);
    hook!("table_remove"(h: i64, k: i64, out: i32) -> i32);
    hook!("register"(name: i32, len: i32, tid: i64) -> i32);
    hook!("whereis"(name: i32, len: i32, out: i32) -> i32);
    hook!("unregister"(name: i32, len: i32) -> i32);
    hook!("choose"(n: i32) -> i32);
    hook!("phase"(name: i32, len: i32) -> ());

    // Plain hooks: run inside the current step.
    l.func_wrap(m, "current", |c: Caller<'_, HostState>| -> i64 {
        let st = c.data();
        st.world.threads[st.cur].tid.0 as i64
    })
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "recv_take",
        |mut c: Caller<'_, HostState>, buf: i32, out_from: i32| -> wasmtime::Result<()> {
            let st = c.data_mut();
            let cur = st.cur;
            let Some(msg) = st.world.threads[cur].taken.take() else {
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
            if c.data().tracing {
                let b = read_bytes(&mut c, ptr, len)?;
                c.data_mut()
                    .logs
                    .push(String::from_utf8_lossy(&b).into_owned());
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
            let cur = st.cur;
            st.world.threads[cur].panic = Some((msg, format!("{file}:{line}:{col}")));
            Ok(())
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "thread_name",
        |mut c: Caller<'_, HostState>, tid: i64, buf: i32, cap: i32| -> wasmtime::Result<i32> {
            let name = c.data().world.thread_name(wasmrace_trace::Tid(tid as u64));
            let n = name.len().min(cap.max(0) as usize);
            write_bytes(&mut c, buf as u32, &name.as_bytes()[..n])?;
            Ok(name.len() as i32)
        },
    )
    .map_err(runtime)?;
    Ok(l)
}
