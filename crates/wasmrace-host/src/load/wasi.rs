//! The load-time rewrite of a std guest (a `wasm32-wasip1-threads` or
//! `wasm32-wasip1` module: std threads, locks and atomics, unmodified)
//! into a module of the hooks, so that every later stage (audit,
//! instrumentation, Asyncify, trampolines, cache) treats it as it treats
//! an SDK guest. Its doors to concurrency become hooks:
//! - each atomic instruction (`*.atomic.load/store/rmw*`, `cmpxchg`,
//!   `memory.atomic.wait32/64`, `memory.atomic.notify`) a call of a small
//!   generated function that checks the effective address and calls the
//!   instruction's hook (`mem_*`): a scheduling point, performed by the host
//!   (`world/memory.rs`); `atomic.fence` goes (one thread runs at a time,
//!   every wasm atomic is sequentially consistent), and so does
//!   `data.drop` (the start function runs in every execution);
//! - `wasi.thread-spawn` the `spawn` hook, the new thread entering through
//!   `__wasmrace_thread_start(arg)`, which calls `wasi_thread_start(tid,
//!   arg)`; `sched_yield` the `yield_now` hook; `proc_exit` the `proc_exit`
//!   hook; `poll_oneoff` (`thread::sleep`) a yield, then the plain hook;
//! - the other WASI calls the host answers deterministically
//!   (`hooks/wasi.rs`) plain hooks of the same signature (`wasi_<name>`),
//!   and any WASI call it does not answer a function returning `ENOSYS`.
//!
//! The shared imported memory becomes the module's own, unshared and
//! without a maximum (the host owns it; one thread runs at a time), and
//! the start function (`__wasm_init_memory`, which copies the data
//! segments once) runs at the start of the test export
//! (`wasmrace_test_main`, which then calls `_start`), in the main thread
//! alone: its once-flag's atomics are steps with no other choice. The
//! result uses no feature beyond WebAssembly 2.0.

use super::atomics::{rewrite_atomics, MemHooks};
use crate::error::{one_line, HostError};
use walrus::ir::Instr;
use walrus::{FunctionBuilder, FunctionId, LocalId, Module, ValType};

/// The WASI calls answered by plain hooks of the same signature, named
/// `wasi_<name>` in the hook module (`hooks/wasi.rs`; docs/ABI.md).
pub const WASI_PLAIN: &[&str] = &[
    "args_get",
    "args_sizes_get",
    "environ_get",
    "environ_sizes_get",
    "clock_time_get",
    "clock_res_get",
    "fd_write",
    "fd_read",
    "fd_close",
    "fd_fdstat_get",
    "fd_seek",
    "fd_prestat_get",
    "fd_prestat_dir_name",
    "random_get",
    "poll_oneoff",
];

/// WASI's "function not supported" errno, what the rewrite makes every
/// other WASI call return.
pub const ENOSYS: i32 = 52;

/// The test a std command module is checked as.
pub const MAIN_TEST: &str = "main";

/// The export the rewrite adds for the thread-local base global, which
/// the host saves and restores per thread.
pub const TLS_BASE_EXPORT: &str = "__wasmrace_tls_base";

/// What the rewrite learned besides the new bytes.
#[derive(Clone, Debug, Default)]
pub struct StdInfo {
    /// The module is a libtest harness (`cargo test`'s test binary): its
    /// tests are listed by running it with `--list`.
    pub harness: bool,
    /// The original module's functions with a name, by the code range of
    /// their body, sorted: `(start, end, demangled name)`. A step's site
    /// (the offset of its atomic instruction in the code section, as DWARF
    /// counts addresses) falls in one.
    pub functions: Vec<(u32, u32, String)>,
    /// The harness's `#[ignore]`d tests (listed by `--list --ignored`).
    pub ignored: Vec<String>,
    /// The source line (`file:line:col`) of each site in the program's own
    /// code, from the module's DWARF (`load/dwarf.rs`), where it has one.
    pub lines: std::collections::BTreeMap<u32, String>,
}

impl StdInfo {
    /// The function whose body holds code offset `site`.
    pub fn function_at(&self, site: u32) -> Option<&str> {
        let i = self
            .functions
            .partition_point(|(start, _, _)| *start <= site);
        let (_, end, name) = self.functions.get(i.checked_sub(1)?)?;
        (site < *end).then_some(name.as_str())
    }
}

/// Whether `bytes` is a std guest: it imports WASI (`wasi` or
/// `wasi_snapshot_preview1`: every `wasm32-wasip1(-threads)` program does)
/// or exports `wasi_thread_start`. A shared memory alone is not enough: an
/// SDK guest built with atomics has one, and is better told to build
/// without them (`load::support`).
pub fn is_std(bytes: &[u8]) -> bool {
    use wasmparser::{Parser, Payload};
    for payload in Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(Payload::ImportSection(r)) => {
                let wasi = |m: &str| m == "wasi_snapshot_preview1" || m == "wasi";
                if r.into_imports().flatten().any(|i| wasi(i.module)) {
                    return true;
                }
            }
            Ok(Payload::ExportSection(r)) => {
                return r
                    .into_iter()
                    .flatten()
                    .any(|e| e.name == "wasi_thread_start");
            }
            Ok(Payload::CodeSectionStart { .. }) | Err(_) => return false,
            _ => {}
        }
    }
    false
}

fn err(name: &str, message: String) -> HostError {
    HostError::StdGuest {
        name: name.into(),
        message,
    }
}

/// Rewrites std guest `bytes` (see the module documentation).
pub fn rewrite(
    name: &str,
    bytes: &[u8],
    races: bool,
) -> Result<(Vec<u8>, StdInfo, Option<super::RaceSites>), HostError> {
    let mut module = Module::from_buffer(bytes).map_err(|e| HostError::Invalid {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
        offset: 0,
    })?;
    drop_debug_info(&mut module);
    let info = StdInfo {
        harness: module.funcs.iter().any(|f| {
            f.name
                .as_deref()
                .is_some_and(|n| n.contains("test_main_static"))
        }),
        functions: super::walk::function_ranges(&module),
        ignored: Vec::new(),
        lines: Default::default(),
    };
    let mem = own_memory(name, &mut module)?;
    let init = module.start.take();
    let hooks = Hooks::import(&mut module);
    replace_wasi_imports(name, &mut module, &hooks)?;
    // Plain accesses first, while atomics are still instructions
    // (`load/races.rs`), with the module's own code offsets as sites.
    let race_hooks = races.then(|| super::races::instrument_races(&mut module, mem, true));
    let sites = rewrite_atomics(
        &mut module,
        mem,
        &hooks.mem,
        race_hooks.as_ref().map(|h| &h.sync),
    );
    let mut info = info;
    info.lines = super::dwarf::site_lines(bytes, &sites);
    add_entries(name, &mut module, &hooks, init)?;
    export_tls_base(&mut module);
    // The hooks nothing calls (a single-threaded module's spawn) go: an
    // imported `spawn` asks for a thread entry.
    walrus::passes::gc::run(&mut module);
    let sites = races.then(|| super::RaceSites::new(bytes, info.functions.clone()));
    Ok((module.emit_wasm(), info, sites))
}

/// Drops the DWARF sections: they are most of a std module built with
/// debug info (3.7 of std_harness's 4.1 MB), no later stage reads them,
/// and Asyncify's optimization carries them along at great cost (13 s of
/// `wasm-opt` on that module). The name section stays.
fn drop_debug_info(module: &mut Module) {
    module.debug = Default::default();
    let debug: Vec<String> = module
        .customs
        .iter()
        .map(|(_, c)| c.name().to_string())
        .filter(|n| n.starts_with(".debug"))
        .collect();
    for n in debug {
        module.customs.remove_raw(&n);
    }
}

/// Makes the one memory the module's own: not imported, not shared, no
/// maximum. A 64-bit memory or several memories are refused.
fn own_memory(name: &str, module: &mut Module) -> Result<walrus::MemoryId, HostError> {
    let ids: Vec<(walrus::MemoryId, bool)> = module
        .memories
        .iter()
        .map(|m| (m.id(), m.memory64))
        .collect();
    let [(id, memory64)] = ids[..] else {
        return Err(err(name, "a std guest must have exactly one memory".into()));
    };
    if memory64 {
        return Err(err(
            name,
            "memory64 (a 64-bit memory) is not supported: build for `wasm32-wasip1-threads`".into(),
        ));
    }
    let m = module.memories.get_mut(id);
    if let Some(import) = m.import.take() {
        module.imports.delete(import);
    }
    m.shared = false;
    m.maximum = None;
    Ok(id)
}

/// The hook imports the rewritten code calls.
struct Hooks {
    spawn: FunctionId,
    yield_now: FunctionId,
    proc_exit: FunctionId,
    wasi_tid: FunctionId,
    wasi_tid_self: FunctionId,
    mem: MemHooks,
}

impl Hooks {
    fn import(module: &mut Module) -> Hooks {
        use ValType::{I32, I64};
        let mut add = |name: &str, params: &[ValType], results: &[ValType]| {
            let ty = module.types.add(params, results);
            module.add_import_func(crate::ops::HOOK_MODULE, name, ty).0
        };
        // Suspending hooks take their call site last (docs/ABI.md).
        Hooks {
            spawn: add("spawn", &[I32, I32], &[I64]),
            yield_now: add("yield_now", &[I32], &[]),
            proc_exit: add("proc_exit", &[I32, I32], &[]),
            wasi_tid: add("wasi_tid", &[I64], &[I32]),
            wasi_tid_self: add("wasi_tid_self", &[], &[I32]),
            mem: MemHooks::import(module),
        }
    }
}

/// Replaces each WASI import (see the module documentation); an import
/// from `wasi` other than `thread-spawn` is refused.
fn replace_wasi_imports(name: &str, module: &mut Module, hooks: &Hooks) -> Result<(), HostError> {
    let imports: Vec<(walrus::ImportId, String, String, FunctionId)> = module
        .imports
        .iter()
        .filter_map(|i| match i.kind {
            walrus::ImportKind::Function(f) => Some((i.id(), i.module.clone(), i.name.clone(), f)),
            _ => None,
        })
        .collect();
    for (id, from, what, f) in imports {
        match (from.as_str(), what.as_str()) {
            ("wasi", "thread-spawn") => replace(module, f, |b, args| {
                b.local_get(args[0])
                    .i32_const(0)
                    .call(hooks.spawn)
                    .call(hooks.wasi_tid);
            })?,
            ("wasi", other) => {
                return Err(err(
                    name,
                    format!("imports `wasi::{other}`, which is not part of wasi-threads (only `thread-spawn` is)"),
                ))
            }
            ("wasi_snapshot_preview1", "sched_yield") => replace(module, f, |b, _| {
                b.i32_const(0).call(hooks.yield_now).i32_const(0);
            })?,
            ("wasi_snapshot_preview1", "proc_exit") => replace(module, f, |b, args| {
                b.local_get(args[0])
                    .i32_const(0)
                    .call(hooks.proc_exit)
                    .unreachable();
            })?,
            ("wasi_snapshot_preview1", call) if WASI_PLAIN.contains(&call) => {
                if call == "poll_oneoff" {
                    // A sleep is a yield (fair scheduling treats a loop of
                    // them as waiting), then the clock moves on.
                    let ty = module.funcs.get(f).ty();
                    let hook = format!("wasi_{call}");
                    let plain = module.add_import_func(crate::ops::HOOK_MODULE, &hook, ty).0;
                    replace(module, f, |b, args| {
                        b.i32_const(0).call(hooks.yield_now);
                        for a in args {
                            b.local_get(*a);
                        }
                        b.call(plain);
                    })?;
                } else {
                    rename(module, id, call);
                }
            }
            ("wasi_snapshot_preview1", _) => {
                let ty = module.funcs.get(f).ty();
                if module.types.get(ty).results() != [ValType::I32] {
                    return Err(err(
                        name,
                        format!("imports `wasi_snapshot_preview1::{what}` with a signature WASI does not have"),
                    ));
                }
                replace(module, f, |b, _| {
                    b.i32_const(ENOSYS);
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Points import `id` at the plain hook `wasi_<call>` and returns the
/// function it imports. A duplicate import keeps its own function.
fn rename(module: &mut Module, id: walrus::ImportId, call: &str) -> FunctionId {
    let i = module.imports.get_mut(id);
    i.module = crate::ops::HOOK_MODULE.into();
    i.name = format!("wasi_{call}");
    match i.kind {
        walrus::ImportKind::Function(f) => f,
        _ => unreachable!("renamed a function import"),
    }
}

/// Replaces imported function `f` by a local one whose body `build` makes
/// from its parameters.
fn replace(
    module: &mut Module,
    f: FunctionId,
    build: impl FnOnce(&mut walrus::InstrSeqBuilder, &Vec<LocalId>),
) -> Result<(), HostError> {
    module
        .replace_imported_func(f, |(b, args)| build(b, args))
        .map(|_| ())
        .map_err(|e| HostError::Runtime {
            message: one_line(&format!("{e:#}")),
        })
}

/// Adds the test export (`wasmrace_test_main`: the old start function,
/// then `_start`) and the thread entry (`__wasmrace_thread_start(arg)`:
/// `wasi_thread_start(tid, arg)`).
fn add_entries(
    name: &str,
    module: &mut Module,
    hooks: &Hooks,
    init: Option<FunctionId>,
) -> Result<(), HostError> {
    let export = |module: &Module, e: &str| {
        module
            .exports
            .iter()
            .find_map(|x| match (x.name == e, x.item) {
                (true, walrus::ExportItem::Function(f)) => Some(f),
                _ => None,
            })
    };
    let Some(start) = export(module, "_start") else {
        return Err(err(
            name,
            "it exports no `_start` (build a `bin` or a test harness, not a library)".into(),
        ));
    };
    let mut b = FunctionBuilder::new(&mut module.types, &[], &[]);
    if let Some(init) = init {
        b.func_body().call(init);
    }
    b.func_body().call(start);
    let main = b.finish(vec![], &mut module.funcs);
    module
        .exports
        .add(&format!("{}{MAIN_TEST}", super::TEST_PREFIX), main);
    if let Some(thread_start) = export(module, "wasi_thread_start") {
        let ty = module.types.get(module.funcs.get(thread_start).ty());
        if ty.params() != [ValType::I32, ValType::I32] || !ty.results().is_empty() {
            return Err(err(
                name,
                "its `wasi_thread_start` is not `(func (param i32 i32))`, as wasi-threads defines it"
                    .into(),
            ));
        }
        let arg = module.locals.add(ValType::I32);
        let mut b = FunctionBuilder::new(&mut module.types, &[ValType::I32], &[]);
        b.func_body()
            .call(hooks.wasi_tid_self)
            .local_get(arg)
            .call(thread_start);
        let f = b.finish(vec![arg], &mut module.funcs);
        module.exports.add(super::THREAD_START, f);
    }
    Ok(())
}

/// Exports `__tls_base` (found by name, else as the second global
/// `wasi_thread_start` sets, after `__stack_pointer`) so that the host can
/// give each thread its own.
///
/// Only a mutable i32 global of the module's own can be it: the host sets
/// each thread's as an i32. A module whose candidate is anything else (a
/// hand-written or generated one: the fuzzer's set an i64 and a funcref
/// here, and every execution failed with a type mismatch) has no
/// thread-local base the host switches.
fn export_tls_base(module: &mut Module) {
    let fits = |g: &walrus::Global| {
        g.mutable && g.ty == walrus::ValType::I32 && matches!(g.kind, walrus::GlobalKind::Local(_))
    };
    let by_name = module
        .globals
        .iter()
        .find(|g| g.name.as_deref() == Some("__tls_base"))
        .map(|g| g.id());
    let found = by_name.or_else(|| tls_by_pattern(module));
    if let Some(g) = found.filter(|&g| fits(module.globals.get(g))) {
        module.exports.add(TLS_BASE_EXPORT, g);
    }
}

/// `__tls_base` in a module without names: wasi-libc's
/// `wasi_thread_start` sets `__stack_pointer`, then `__tls_base`.
fn tls_by_pattern(module: &Module) -> Option<walrus::GlobalId> {
    let f = module
        .exports
        .iter()
        .find_map(|x| match (x.name.as_str(), x.item) {
            ("wasi_thread_start", walrus::ExportItem::Function(f)) => Some(f),
            _ => None,
        })?;
    let local = module.funcs.get(f).kind.unwrap_local();
    let sets: Vec<walrus::GlobalId> = local
        .block(local.entry_block())
        .instrs
        .iter()
        .filter_map(|(i, _)| match i {
            Instr::GlobalSet(g) => Some(g.global),
            _ => None,
        })
        .collect();
    sets.get(1).copied()
}
