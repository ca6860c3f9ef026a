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
use wasmtime::{Caller, Engine, InstancePre, Linker, Module};

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
        let key = load::cache_key(bytes);
        let cache = config.cache_dir.clone();
        let mut from_cache = false;
        let mut module = None;
        if let Some(dir) = &cache {
            // Read the file rather than `deserialize_file`, which maps it:
            // a mapped cache file rewritten by another process would crash
            // this one with SIGBUS.
            if let Ok(ser) = std::fs::read(dir.join(format!("{key}.cwasm"))) {
                // SAFETY: the bytes come from this host's own cache
                // directory; wasmtime checks they were made by a compatible
                // engine, and anything it rejects is recompiled.
                if let Ok(m) = unsafe { Module::deserialize(&engine, &ser) } {
                    module = Some(m);
                    from_cache = true;
                }
            }
        }
        let module = match module {
            Some(m) => m,
            None => {
                let cached = cache
                    .as_ref()
                    .and_then(|d| std::fs::read(d.join(format!("{key}.wasm"))).ok());
                // A cached instrumented module that no longer compiles (a
                // corrupt entry) is instrumented again.
                let compiled_cached = cached.and_then(|b| Module::new(&engine, &b).ok());
                let m = match compiled_cached {
                    Some(m) => m,
                    None => {
                        let wasm_opt = load::find_wasm_opt(config.wasm_opt.as_deref())?;
                        let exported = load::export_globals(name, bytes)?;
                        let b = load::asyncify(name, &exported, &wasm_opt)?;
                        let b = load::export_asyncify_globals(name, &b)?;
                        if let Some(d) = &cache {
                            load::cache_write(&d.join(format!("{key}.wasm")), &b);
                        }
                        Module::new(&engine, &b).map_err(|e| HostError::Compile {
                            name: name.into(),
                            message: one_line(&format!("{e:#}")),
                        })?
                    }
                };
                if let Some(d) = &cache {
                    if let Ok(ser) = m.serialize() {
                        load::cache_write(&d.join(format!("{key}.cwasm")), &ser);
                    }
                }
                m
            }
        };
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

fn read_bytes(caller: &mut Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let ex = caller.data().ex();
    let data = ex.memory.data(&*caller);
    let (p, l) = (ptr as u32 as usize, len as u32 as usize);
    match data.get(p..p.saturating_add(l)) {
        Some(s) => Ok(s.to_vec()),
        None => Err(fault(format!(
            "hook argument points outside guest memory (`{p:#x}`, {l} bytes)"
        ))),
    }
}

fn write_bytes(caller: &mut Caller<'_, HostState>, ptr: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    let ex = caller.data().ex();
    let data = ex.memory.data_mut(&mut *caller);
    let p = ptr as usize;
    match data.get_mut(p..p.saturating_add(bytes.len())) {
        Some(s) => {
            s.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(fault(format!(
            "hook output points outside guest memory (`{p:#x}`, {} bytes)",
            bytes.len()
        ))),
    }
}

/// The heart of quiescent stepping. A fresh call records the operation as
/// the thread's pending one and unwinds the thread (Asyncify) back to the
/// host; the call seen again while rewinding is the thread being resumed
/// after the scheduler ran the operation: stop the rewind and hand back the
/// result.
fn suspend(
    caller: &mut Caller<'_, HostState>,
    site: i32,
    make: impl FnOnce(&mut Caller<'_, HostState>) -> wasmtime::Result<Op>,
) -> wasmtime::Result<i64> {
    match caller.data().mode {
        // Only without trampolines: their hook wrappers end the rewind and
        // return the result themselves, never calling the host.
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
            let op = make(caller)?;
            let st = caller.data_mut();
            let cur = st.cur;
            let t = &mut st.world.threads[cur];
            t.pending = op;
            t.site = site as u32;
            st.mode = Mode::Unwinding;
            // With trampolines, the trampoline wrote Asyncify's header and
            // pointed its data at this buffer, and the hook's wasm wrapper
            // starts the unwind.
            if st.ex.as_ref().is_some_and(|ex| ex.enter.is_some()) {
                return Ok(0);
            }
            let buf = st.world.slot_bases[t.slot as usize];
            let end = buf + st.asyncify_bytes;
            // Asyncify's data header: [current, end], data right after it.
            let mut header = [0u8; 8];
            header[..4].copy_from_slice(&(buf + 8).to_le_bytes());
            header[4..].copy_from_slice(&end.to_le_bytes());
            write_bytes(caller, buf, &header)?;
            caller.data().ex().asyncify.start_unwind(&mut *caller, buf)?;
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
    macro_rules! hook {
        ($name:literal, |$c:ident $(, $a:ident : $t:ty)*| -> i64 $body:block) => {
            l.func_wrap(m, $name, |mut $c: Caller<'_, HostState> $(, $a: $t)*, site: i32| -> wasmtime::Result<i64> {
                suspend(&mut $c, site, |$c| { let _ = &$c; Ok($body) })
            }).map_err(runtime)?;
        };
        ($name:literal, |$c:ident $(, $a:ident : $t:ty)*| -> i32 $body:block) => {
            l.func_wrap(m, $name, |mut $c: Caller<'_, HostState> $(, $a: $t)*, site: i32| -> wasmtime::Result<i32> {
                suspend(&mut $c, site, |$c| { let _ = &$c; Ok($body) }).map(|v| v as i32)
            }).map_err(runtime)?;
        };
        ($name:literal, |$c:ident $(, $a:ident : $t:ty)*| $body:block) => {
            l.func_wrap(m, $name, |mut $c: Caller<'_, HostState> $(, $a: $t)*, site: i32| -> wasmtime::Result<()> {
                suspend(&mut $c, site, |$c| { let _ = &$c; Ok($body) }).map(|_| ())
            }).map_err(runtime)?;
        };
    }
    hook!("spawn", |c, arg: i32| -> i64 {
        Op::Spawn { arg: arg as u32 }
    });
    hook!("join", |c, tid: i64| { Op::Join { target: tid as u64 } });
    hook!("yield_now", |c| { Op::Yield });
    hook!("send", |c, to: i64, ptr: i32, len: i32| {
        Op::Send {
            to: to as u64,
            data: read_bytes(c, ptr, len)?,
        }
    });
    hook!("recv", |c| -> i32 { Op::Recv });
    hook!("recv_from", |c, from: i64| -> i32 {
        Op::RecvFrom { from: from as u64 }
    });
    hook!("cell_new", |c, init: i64| -> i64 {
        Op::CellNew { init: init as u64 }
    });
    hook!("cell_get", |c, h: i64| -> i64 {
        Op::CellGet { h: h as u64 }
    });
    hook!("cell_set", |c, h: i64, v: i64| {
        Op::CellSet {
            h: h as u64,
            v: v as u64,
        }
    });
    hook!("atomic_new", |c, init: i64| -> i64 {
        Op::AtomicNew { init: init as u64 }
    });
    hook!("atomic_load", |c, h: i64| -> i64 {
        Op::AtomicLoad { h: h as u64 }
    });
    hook!("atomic_store", |c, h: i64, v: i64| {
        Op::AtomicStore {
            h: h as u64,
            v: v as u64,
        }
    });
    hook!("atomic_swap", |c, h: i64, v: i64| -> i64 {
        Op::AtomicSwap {
            h: h as u64,
            v: v as u64,
        }
    });
    hook!("atomic_fetch_add", |c, h: i64, v: i64| -> i64 {
        Op::AtomicFetchAdd {
            h: h as u64,
            v: v as u64,
        }
    });
    hook!("atomic_compare_exchange", |c,
                                      h: i64,
                                      cur: i64,
                                      new: i64|
     -> i64 {
        Op::AtomicCas {
            h: h as u64,
            current: cur as u64,
            new: new as u64,
        }
    });
    hook!("mutex_new", |c| -> i64 { Op::MutexNew });
    hook!("mutex_lock", |c, h: i64| { Op::MutexLock { h: h as u64 } });
    hook!("mutex_unlock", |c, h: i64| {
        Op::MutexUnlock { h: h as u64 }
    });
    hook!("condvar_new", |c| -> i64 { Op::CondvarNew });
    hook!("condvar_wait", |c, cv: i64, mx: i64| {
        Op::CondvarWait {
            cv: cv as u64,
            m: mx as u64,
        }
    });
    hook!("condvar_notify_one", |c, cv: i64| {
        Op::NotifyOne { cv: cv as u64 }
    });
    hook!("condvar_notify_all", |c, cv: i64| {
        Op::NotifyAll { cv: cv as u64 }
    });
    hook!("table_new", |c| -> i64 { Op::TableNew });
    hook!("table_insert", |c,
                           h: i64,
                           k: i64,
                           v: i64,
                           out: i32|
     -> i32 {
        Op::TableInsert {
            h: h as u64,
            k: k as u64,
            v: v as u64,
            out: out as u32,
        }
    });
    hook!("table_get", |c, h: i64, k: i64, out: i32| -> i32 {
        Op::TableGet {
            h: h as u64,
            k: k as u64,
            out: out as u32,
        }
    });
    hook!("table_remove", |c, h: i64, k: i64, out: i32| -> i32 {
        Op::TableRemove {
            h: h as u64,
            k: k as u64,
            out: out as u32,
        }
    });
    hook!("register", |c, name: i32, len: i32, tid: i64| -> i32 {
        Op::Register {
            name: read_bytes(c, name, len)?,
            tid: tid as u64,
        }
    });
    hook!("whereis", |c, name: i32, len: i32, out: i32| -> i32 {
        Op::Whereis {
            name: read_bytes(c, name, len)?,
            out: out as u32,
        }
    });
    hook!("unregister", |c, name: i32, len: i32| -> i32 {
        Op::Unregister {
            name: read_bytes(c, name, len)?,
        }
    });
    hook!("choose", |c, n: i32| -> i32 { Op::Choose { n: n as u32 } });
    hook!("phase", |c, name: i32, len: i32| {
        Op::Phase {
            name: read_bytes(c, name, len)?,
        }
    });

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
