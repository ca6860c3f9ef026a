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

use crate::error::{one_line, HostError};
use std::collections::HashMap;
use walrus::ir::{
    AtomicOp, AtomicWidth, BinaryOp, Call, Const, Instr, InstrLocId, InstrSeqId, LoadKind,
    StoreKind, UnaryOp, Value,
};
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

/// Every named local function's body range, demangled (`rustc-demangle`:
/// `std::sync::poison::mutex::Mutex<T>::lock`, without the hash).
fn function_ranges(module: &Module) -> Vec<(u32, u32, String)> {
    let mut v: Vec<(u32, u32, String)> = module
        .funcs
        .iter_local()
        .filter_map(|(id, f)| {
            let range = f.original_range.clone()?;
            let name = module.funcs.get(id).name.as_deref()?;
            let name = format!("{:#}", rustc_demangle::demangle(name));
            Some((range.start as u32, range.end as u32, name))
        })
        .collect();
    v.sort();
    v
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
pub fn rewrite(name: &str, bytes: &[u8]) -> Result<(Vec<u8>, StdInfo), HostError> {
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
        functions: function_ranges(&module),
        ignored: Vec::new(),
        lines: Default::default(),
    };
    let mem = own_memory(name, &mut module)?;
    let init = module.start.take();
    let hooks = Hooks::import(&mut module);
    replace_wasi_imports(name, &mut module, &hooks)?;
    let sites = rewrite_atomics(&mut module, mem, &hooks);
    let mut info = info;
    info.lines = super::dwarf::site_lines(bytes, &sites);
    add_entries(name, &mut module, &hooks, init)?;
    export_tls_base(&mut module);
    // The hooks nothing calls (a single-threaded module's spawn) go: an
    // imported `spawn` asks for a thread entry.
    walrus::passes::gc::run(&mut module);
    Ok((module.emit_wasm(), info))
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
    load: FunctionId,
    store: FunctionId,
    rmw: FunctionId,
    cmpxchg: FunctionId,
    wait: FunctionId,
    notify: FunctionId,
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
            load: add("mem_load", &[I32, I32, I32], &[I64]),
            store: add("mem_store", &[I32, I32, I64, I32], &[]),
            rmw: add("mem_rmw", &[I32, I32, I32, I64, I32], &[I64]),
            cmpxchg: add("mem_cmpxchg", &[I32, I32, I64, I64, I32], &[I64]),
            wait: add("mem_wait", &[I32, I32, I64, I64, I32], &[I32]),
            notify: add("mem_notify", &[I32, I32, I32], &[I32]),
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

/// The shape of an atomic instruction: what its helper does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Shape {
    Load { width: u32, wide: bool },
    Store { width: u32, wide: bool },
    Rmw { width: u32, wide: bool, op: u32 },
    Cmpxchg { width: u32, wide: bool },
    Wait { wide: bool },
    Notify,
}

fn atomic_width(w: AtomicWidth) -> (u32, bool) {
    let wide = matches!(
        w,
        AtomicWidth::I64 | AtomicWidth::I64_8 | AtomicWidth::I64_16 | AtomicWidth::I64_32
    );
    (w.bytes(), wide)
}

fn rmw_code(op: AtomicOp) -> u32 {
    match op {
        AtomicOp::Add => 0,
        AtomicOp::Sub => 1,
        AtomicOp::And => 2,
        AtomicOp::Or => 3,
        AtomicOp::Xor => 4,
        AtomicOp::Xchg => 5,
    }
}

/// The shape and static offset of an atomic instruction, if it is one.
fn shape_of(instr: &Instr) -> Option<(Shape, u64)> {
    Some(match instr {
        Instr::Load(l) if l.kind.atomic() => {
            let wide = matches!(
                l.kind,
                LoadKind::I64 { .. }
                    | LoadKind::I64_8 { .. }
                    | LoadKind::I64_16 { .. }
                    | LoadKind::I64_32 { .. }
            );
            (
                Shape::Load {
                    width: l.kind.width(),
                    wide,
                },
                l.arg.offset,
            )
        }
        Instr::Store(s) if s.kind.atomic() => {
            let wide = matches!(
                s.kind,
                StoreKind::I64 { .. }
                    | StoreKind::I64_8 { .. }
                    | StoreKind::I64_16 { .. }
                    | StoreKind::I64_32 { .. }
            );
            (
                Shape::Store {
                    width: s.kind.width(),
                    wide,
                },
                s.arg.offset,
            )
        }
        Instr::AtomicRmw(r) => {
            let (width, wide) = atomic_width(r.width);
            (
                Shape::Rmw {
                    width,
                    wide,
                    op: rmw_code(r.op),
                },
                r.arg.offset,
            )
        }
        Instr::Cmpxchg(c) => {
            let (width, wide) = atomic_width(c.width);
            (Shape::Cmpxchg { width, wide }, c.arg.offset)
        }
        Instr::AtomicWait(w) => (Shape::Wait { wide: w.sixty_four }, w.arg.offset),
        Instr::AtomicNotify(n) => (Shape::Notify, n.arg.offset),
        _ => return None,
    })
}

/// Whether the atomics of function `name` run in place, without a
/// scheduling point: those of wasi-libc (C: its name is not Rust-mangled),
/// whose locks (the allocator's, the thread list's, thread-specific data's)
/// guard libc's own state, correct code whose internal interleavings would
/// otherwise multiply every allocation's and every thread start's. Its
/// waits and notifies stay scheduling points, so a libc lock that another
/// thread holds still blocks, and the allocator's lock, which spins with
/// `sched_yield` and reaches no scheduling point while held, is always
/// free when taken. Rust's own atomics (std's and the program's) are all
/// scheduling points; so is everything in a module without names
/// (docs/ABI.md, "What exploration covers").
fn runs_in_place(name: Option<&str>) -> bool {
    name.is_some_and(|n| !(n.starts_with("_ZN") || n.starts_with("_R")))
}

/// Rewrites every atomic instruction into a call of its helper (the old
/// start function's too: it now runs in the main thread, alone); in
/// wasi-libc's functions (`runs_in_place`), a helper that performs it in
/// place, without a scheduling point.
fn rewrite_atomics(module: &mut Module, mem: walrus::MemoryId, hooks: &Hooks) -> Vec<u32> {
    let code_start = code_section_start(module);
    let mut sites = Vec::new();
    let mut helpers: HashMap<(Shape, u64, bool), FunctionId> = HashMap::new();
    let ids: Vec<FunctionId> = module.funcs.iter_local().map(|(id, _)| id).collect();
    for id in ids {
        let in_place = runs_in_place(module.funcs.get(id).name.as_deref());
        let seqs: Vec<InstrSeqId> = {
            let f = module.funcs.get(id).kind.unwrap_local();
            let mut all = Vec::new();
            walrus::ir::dfs_in_order(&mut Seqs(&mut all), f, f.entry_block());
            all
        };
        for seq in seqs {
            let instrs = {
                let f = module.funcs.get_mut(id).kind.unwrap_local_mut();
                std::mem::take(&mut f.block_mut(seq).instrs)
            };
            let mut out = Vec::with_capacity(instrs.len());
            for (instr, loc) in instrs {
                // A fence orders nothing when one thread runs at a time. A
                // `data.drop` goes too: every execution runs the old start
                // function again from the restored start state, and its
                // `memory.init` needs the passive segments then.
                if matches!(instr, Instr::AtomicFence(_) | Instr::DataDrop(_)) {
                    continue;
                }
                let Some((shape, offset)) = shape_of(&instr) else {
                    out.push((instr, loc));
                    continue;
                };
                // A wait or notify stays a scheduling point anywhere.
                let plain = in_place && !matches!(shape, Shape::Wait { .. } | Shape::Notify);
                let helper = *helpers.entry((shape, offset, plain)).or_insert_with(|| {
                    if plain {
                        plain_helper(module, mem, shape, offset)
                    } else {
                        helper(module, hooks, shape, offset)
                    }
                });
                let site = match loc.is_default() {
                    true => 0,
                    false => loc.data().saturating_sub(code_start),
                };
                if !plain {
                    sites.push(site);
                }
                out.push((
                    Instr::Const(Const {
                        value: Value::I32(site as i32),
                    }),
                    InstrLocId::default(),
                ));
                out.push((Instr::Call(Call { func: helper }), loc));
            }
            let f = module.funcs.get_mut(id).kind.unwrap_local_mut();
            f.block_mut(seq).instrs = out;
        }
    }
    sites
}

/// Where the code section starts in the file: an instruction's location
/// is its file offset, a body's range is counted from there (walrus keeps
/// the section's offset to itself; every body maps its first instruction
/// both ways).
fn code_section_start(module: &Module) -> u32 {
    module
        .funcs
        .iter_local()
        .find_map(|(_, f)| {
            let (relative, loc) = f.instruction_mapping.first()?;
            (!loc.is_default()).then(|| loc.data().saturating_sub(*relative as u32))
        })
        .unwrap_or(0)
}

/// Collects the ids of every instruction sequence of a function.
struct Seqs<'a>(&'a mut Vec<InstrSeqId>);
impl<'instr> walrus::ir::Visitor<'instr> for Seqs<'_> {
    fn start_instr_seq(&mut self, seq: &'instr walrus::ir::InstrSeq) {
        self.0.push(seq.id());
    }
}

/// The helper of one atomic shape at one static offset: `(addr, operands...,
/// site) -> result`, checking that `addr + offset` does not overflow (an
/// out-of-bounds trap in wasm) and calling the shape's hook.
fn helper(module: &mut Module, hooks: &Hooks, shape: Shape, offset: u64) -> FunctionId {
    use ValType::{I32, I64};
    let val = |wide: bool| if wide { I64 } else { I32 };
    let (params, results): (Vec<ValType>, Vec<ValType>) = match shape {
        Shape::Load { wide, .. } => (vec![I32, I32], vec![val(wide)]),
        Shape::Store { wide, .. } => (vec![I32, val(wide), I32], vec![]),
        Shape::Rmw { wide, .. } => (vec![I32, val(wide), I32], vec![val(wide)]),
        Shape::Cmpxchg { wide, .. } => (vec![I32, val(wide), val(wide), I32], vec![val(wide)]),
        Shape::Wait { wide } => (vec![I32, val(wide), I64, I32], vec![I32]),
        Shape::Notify => (vec![I32, I32, I32], vec![I32]),
    };
    let args: Vec<LocalId> = params.iter().map(|t| module.locals.add(*t)).collect();
    let mut b = FunctionBuilder::new(&mut module.types, &params, &results);
    let mut body = b.func_body();
    let addr = args[0];
    let site = *args.last().expect("a site");
    // addr + offset past 4 GiB traps, as the instruction would.
    if offset > 0 {
        body.local_get(addr)
            .i32_const((u32::MAX as u64 - offset.min(u32::MAX as u64)) as u32 as i32)
            .binop(BinaryOp::I32GtU)
            .if_else(
                None,
                |t| {
                    t.unreachable();
                },
                |_| {},
            );
    }
    let ea = |b: &mut walrus::InstrSeqBuilder| {
        b.local_get(addr);
        if offset > 0 {
            b.i32_const(offset as u32 as i32).binop(BinaryOp::I32Add);
        }
    };
    // A 32-bit operand travels as an i64, zero-extended.
    let operand = |b: &mut walrus::InstrSeqBuilder, l: LocalId, wide: bool| {
        b.local_get(l);
        if !wide {
            b.unop(UnaryOp::I64ExtendUI32);
        }
    };
    let narrow = |b: &mut walrus::InstrSeqBuilder, wide: bool| {
        if !wide {
            b.unop(UnaryOp::I32WrapI64);
        }
    };
    match shape {
        Shape::Load { width, wide } => {
            ea(&mut body);
            body.i32_const(width as i32)
                .local_get(site)
                .call(hooks.load);
            narrow(&mut body, wide);
        }
        Shape::Store { width, wide } => {
            ea(&mut body);
            body.i32_const(width as i32);
            operand(&mut body, args[1], wide);
            body.local_get(site).call(hooks.store);
        }
        Shape::Rmw { width, wide, op } => {
            ea(&mut body);
            body.i32_const(width as i32).i32_const(op as i32);
            operand(&mut body, args[1], wide);
            body.local_get(site).call(hooks.rmw);
            narrow(&mut body, wide);
        }
        Shape::Cmpxchg { width, wide } => {
            ea(&mut body);
            body.i32_const(width as i32);
            operand(&mut body, args[1], wide);
            operand(&mut body, args[2], wide);
            body.local_get(site).call(hooks.cmpxchg);
            narrow(&mut body, wide);
        }
        Shape::Wait { wide } => {
            ea(&mut body);
            body.i32_const(if wide { 8 } else { 4 });
            operand(&mut body, args[1], wide);
            body.local_get(args[2]).local_get(site).call(hooks.wait);
        }
        Shape::Notify => {
            ea(&mut body);
            body.local_get(args[1]).local_get(site).call(hooks.notify);
        }
    }
    b.finish(args, &mut module.funcs)
}

/// The plain (non-atomic) load of `width` bytes, zero-extended.
fn plain_load(width: u32, wide: bool) -> LoadKind {
    use walrus::ir::ExtendedLoad::ZeroExtend;
    match (width, wide) {
        (8, _) => LoadKind::I64 { atomic: false },
        (4, true) => LoadKind::I64_32 { kind: ZeroExtend },
        (2, true) => LoadKind::I64_16 { kind: ZeroExtend },
        (1, true) => LoadKind::I64_8 { kind: ZeroExtend },
        (4, false) => LoadKind::I32 { atomic: false },
        (2, false) => LoadKind::I32_16 { kind: ZeroExtend },
        _ => LoadKind::I32_8 { kind: ZeroExtend },
    }
}

/// The plain store of the low `width` bytes.
fn plain_store(width: u32, wide: bool) -> StoreKind {
    match (width, wide) {
        (8, _) => StoreKind::I64 { atomic: false },
        (4, true) => StoreKind::I64_32 { atomic: false },
        (2, true) => StoreKind::I64_16 { atomic: false },
        (1, true) => StoreKind::I64_8 { atomic: false },
        (4, false) => StoreKind::I32 { atomic: false },
        (2, false) => StoreKind::I32_16 { atomic: false },
        _ => StoreKind::I32_8 { atomic: false },
    }
}

/// A helper with `helper`'s signature that performs a load, store,
/// read-modify-write or compare-exchange in place, as one thread alone
/// does it: plain loads and stores at `offset`.
fn plain_helper(
    module: &mut Module,
    mem: walrus::MemoryId,
    shape: Shape,
    offset: u64,
) -> FunctionId {
    use ValType::{I32, I64};
    let val = |wide: bool| if wide { I64 } else { I32 };
    let (params, results): (Vec<ValType>, Vec<ValType>) = match shape {
        Shape::Load { wide, .. } => (vec![I32, I32], vec![val(wide)]),
        Shape::Store { wide, .. } => (vec![I32, val(wide), I32], vec![]),
        Shape::Rmw { wide, .. } => (vec![I32, val(wide), I32], vec![val(wide)]),
        Shape::Cmpxchg { wide, .. } => (vec![I32, val(wide), val(wide), I32], vec![val(wide)]),
        Shape::Wait { .. } | Shape::Notify => unreachable!("waits and notifies stay hooks"),
    };
    let args: Vec<LocalId> = params.iter().map(|t| module.locals.add(*t)).collect();
    let old = module.locals.add(*results.first().unwrap_or(&I32));
    let mut b = FunctionBuilder::new(&mut module.types, &params, &results);
    let mut body = b.func_body();
    let addr = args[0];
    let arg = |align| walrus::ir::MemArg { align, offset };
    match shape {
        Shape::Load { width, wide } => {
            body.local_get(addr)
                .load(mem, plain_load(width, wide), arg(width));
        }
        Shape::Store { width, wide } => {
            body.local_get(addr).local_get(args[1]).store(
                mem,
                plain_store(width, wide),
                arg(width),
            );
        }
        Shape::Rmw { width, wide, op } => {
            body.local_get(addr)
                .load(mem, plain_load(width, wide), arg(width))
                .local_set(old)
                .local_get(addr);
            if op != 5 {
                body.local_get(old);
            }
            body.local_get(args[1]);
            let ops = if wide {
                [
                    BinaryOp::I64Add,
                    BinaryOp::I64Sub,
                    BinaryOp::I64And,
                    BinaryOp::I64Or,
                    BinaryOp::I64Xor,
                ]
            } else {
                [
                    BinaryOp::I32Add,
                    BinaryOp::I32Sub,
                    BinaryOp::I32And,
                    BinaryOp::I32Or,
                    BinaryOp::I32Xor,
                ]
            };
            if let Some(op) = ops.get(op as usize) {
                body.binop(*op);
            }
            body.store(mem, plain_store(width, wide), arg(width))
                .local_get(old);
        }
        Shape::Cmpxchg { width, wide } => {
            // The old value, zero-extended, against the expected one cut to
            // the width.
            body.local_get(addr)
                .load(mem, plain_load(width, wide), arg(width))
                .local_tee(old)
                .local_get(args[1]);
            match (width, wide) {
                (8, _) | (4, false) => {}
                (w, true) => {
                    body.i64_const(((1u64 << (8 * w)) - 1) as i64)
                        .binop(BinaryOp::I64And);
                }
                (w, false) => {
                    body.i32_const(((1u32 << (8 * w)) - 1) as i32)
                        .binop(BinaryOp::I32And);
                }
            }
            body.binop(if wide {
                BinaryOp::I64Eq
            } else {
                BinaryOp::I32Eq
            })
            .if_else(
                None,
                |t| {
                    t.local_get(addr).local_get(args[2]).store(
                        mem,
                        plain_store(width, wide),
                        arg(width),
                    );
                },
                |_| {},
            );
            body.local_get(old);
        }
        Shape::Wait { .. } | Shape::Notify => {}
    }
    b.finish(args, &mut module.funcs)
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
fn export_tls_base(module: &mut Module) {
    let by_name = module
        .globals
        .iter()
        .find(|g| g.name.as_deref() == Some("__tls_base"))
        .map(|g| g.id());
    if let Some(g) = by_name.or_else(|| tls_by_pattern(module)) {
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
