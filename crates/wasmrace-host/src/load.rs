//! Loading a guest: validation (with byte offsets), the import audit (hooks
//! are the only door to the outside world), test discovery, instrumentation
//! (export the mutable globals with walrus, then Binaryen Asyncify over the
//! suspending hooks only) and the on-disk cache of instrumented and compiled
//! modules.

use crate::error::{one_line, HostError};
use std::path::{Path, PathBuf};
use std::process::Command;

// The hook names and the record's size are the operation table's (`ops.rs`).
pub use crate::ops::{HOOK_MODULE, PLAIN_HOOKS, SUSPENDING_HOOKS};

pub const TEST_PREFIX: &str = "wasmrace_test_";
pub const THREAD_START: &str = "__wasmrace_thread_start";
pub const INIT: &str = "__wasmrace_init";
pub const STACK_POINTER_EXPORT: &str = "__wasmrace_stack_pointer";
pub const GLOBAL_EXPORT_PREFIX: &str = "__wasmrace_global_";
pub const ASYNCIFY_STATE_EXPORT: &str = "__wasmrace_asyncify_state";
pub const STACK_LOW_EXPORT: &str = "__wasmrace_stack_low";
pub const STACK_REGION_EXPORT: &str = "__wasmrace_stack_region";
pub const ASYNCIFY_DATA_EXPORT: &str = "__wasmrace_asyncify_data";
/// The guest's view of its memory size in wasm pages (`virtualize_memory_size`).
pub const MEMORY_PAGES_EXPORT: &str = "__wasmrace_memory_pages";
/// Prefix of the trampolines `add_trampolines` adds: `__wasmrace_enter_`
/// followed by the name of the entry export it calls.
pub const ENTER_PREFIX: &str = "__wasmrace_enter_";

/// Bump when instrumentation changes, to invalidate cached modules. Adding
/// a suspending hook needs no bump: a module importing it was refused by the
/// import audit (which runs before the cache is consulted), so no cached
/// entry was instrumented without it, and Asyncify ignores listed imports a
/// module does not have.
const INSTRUMENTATION_VERSION: u32 = 11;

/// What the audit learned about a module.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub tests: Vec<String>,
    pub has_thread_start: bool,
    pub imports_spawn: bool,
    /// The code changes a table at run time (`table.set`, `table.grow`,
    /// ...). Snapshots hold memory, globals and host objects, not tables,
    /// so such a guest gets no snapshots: exploration replays instead.
    pub mutates_tables: bool,
}

/// Validates `bytes` and audits its imports and exports.
pub fn analyze(name: &str, bytes: &[u8]) -> Result<Analysis, HostError> {
    use wasmparser::{ExternalKind, Payload, TypeRef, ValType};

    let mut validator =
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::default());
    validator
        .validate_all(bytes)
        .map_err(|e| HostError::Invalid {
            name: name.into(),
            message: e.message().to_string(),
            offset: e.offset(),
        })?;

    let mut func_types: Vec<(Vec<ValType>, Vec<ValType>)> = Vec::new();
    let mut func_type_of: Vec<u32> = Vec::new();
    let mut forbidden = Vec::new();
    let mut unknown = Vec::new();
    let mut analysis = Analysis::default();
    let mut has_memory = false;
    let mut exports = Vec::new();
    let err = |e: wasmparser::BinaryReaderError| HostError::Invalid {
        name: name.into(),
        message: e.message().to_string(),
        offset: e.offset(),
    };
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(err)? {
            Payload::TypeSection(r) => {
                for rec in r.into_iter_err_on_gc_types() {
                    let ft = rec.map_err(err)?;
                    func_types.push((ft.params().to_vec(), ft.results().to_vec()));
                }
            }
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    let imp = imp.map_err(err)?;
                    let full = format!("`{}::{}`", imp.module, imp.name);
                    if imp.module != HOOK_MODULE {
                        forbidden.push(full);
                    } else if !SUSPENDING_HOOKS.contains(&imp.name)
                        && !PLAIN_HOOKS.contains(&imp.name)
                    {
                        unknown.push(full);
                    } else if imp.name == "spawn" {
                        analysis.imports_spawn = true;
                    }
                    if let TypeRef::Func(t) = imp.ty {
                        func_type_of.push(t);
                    }
                }
            }
            Payload::FunctionSection(r) => {
                for t in r {
                    func_type_of.push(t.map_err(err)?);
                }
            }
            Payload::CodeSectionEntry(body) if !analysis.mutates_tables => {
                use wasmparser::Operator as O;
                let mut ops = body.get_operators_reader().map_err(err)?;
                while !ops.eof() {
                    if matches!(
                        ops.read().map_err(err)?,
                        O::TableSet { .. }
                            | O::TableGrow { .. }
                            | O::TableFill { .. }
                            | O::TableCopy { .. }
                            | O::TableInit { .. }
                    ) {
                        analysis.mutates_tables = true;
                        break;
                    }
                }
            }
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e.map_err(err)?;
                    exports.push((e.name.to_string(), e.kind, e.index));
                }
            }
            _ => {}
        }
    }
    if !forbidden.is_empty() {
        return Err(HostError::ForbiddenImports {
            name: name.into(),
            imports: forbidden.join(", "),
        });
    }
    if !unknown.is_empty() {
        let mut provided: Vec<&str> = SUSPENDING_HOOKS
            .iter()
            .chain(PLAIN_HOOKS)
            .copied()
            .collect();
        provided.sort_unstable();
        return Err(HostError::UnknownHook {
            name: name.into(),
            hooks: unknown.join(", "),
            provided: format!("`{}`", provided.join("`, `")),
        });
    }
    for (ename, kind, index) in exports {
        match kind {
            ExternalKind::Memory if ename == "memory" => has_memory = true,
            ExternalKind::Func => {
                let ty = func_type_of
                    .get(index as usize)
                    .and_then(|t| func_types.get(*t as usize));
                let nullary = ty.is_some_and(|(p, r)| p.is_empty() && r.is_empty());
                if let Some(test) = ename.strip_prefix(TEST_PREFIX) {
                    if nullary && !test.is_empty() {
                        analysis.tests.push(test.to_string());
                    }
                } else if ename == THREAD_START {
                    analysis.has_thread_start =
                        ty.is_some_and(|(p, r)| p == &[ValType::I32] && r.is_empty());
                }
            }
            _ => {}
        }
    }
    if !has_memory {
        return Err(HostError::NoMemory { name: name.into() });
    }
    if analysis.tests.is_empty() {
        return Err(HostError::NoTests { name: name.into() });
    }
    if analysis.imports_spawn && !analysis.has_thread_start {
        return Err(HostError::NoThreadStart { name: name.into() });
    }
    analysis.tests.sort();
    Ok(analysis)
}

/// Exports every defined mutable global so the host can save and restore it
/// (the stack pointer under its own name), with walrus.
pub fn export_globals(name: &str, bytes: &[u8]) -> Result<Vec<u8>, HostError> {
    let mut module = walrus::Module::from_buffer(bytes).map_err(|e| HostError::Instrument {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
    })?;
    let mutable: Vec<(walrus::GlobalId, Option<String>, walrus::ValType)> = module
        .globals
        .iter()
        .filter(|g| g.mutable && matches!(g.kind, walrus::GlobalKind::Local(_)))
        .map(|g| (g.id(), g.name.clone(), g.ty))
        .collect();
    // The stack pointer: by name when the name section has it, else LLVM's
    // convention of the first mutable i32 global.
    let sp = mutable
        .iter()
        .find(|(_, n, _)| n.as_deref() == Some("__stack_pointer"))
        .or_else(|| mutable.iter().find(|(_, _, t)| *t == walrus::ValType::I32))
        .map(|(id, _, _)| *id);
    let Some(sp) = sp else {
        return Err(HostError::Instrument {
            name: name.into(),
            message: "no mutable i32 global to use as the shadow stack pointer (`__stack_pointer`)"
                .into(),
        });
    };
    module.exports.add(STACK_POINTER_EXPORT, sp);
    let mut mutable = mutable;
    if let Some(pages) = virtualize_memory_size(&mut module) {
        // A global like the others: snapshots save it, restores rewind it.
        module.exports.add(MEMORY_PAGES_EXPORT, pages);
        mutable.push((pages, None, walrus::ValType::I32));
    }
    for (i, (id, _, _)) in mutable.iter().enumerate() {
        module
            .exports
            .add(&format!("{GLOBAL_EXPORT_PREFIX}{i}"), *id);
    }
    track_stack_low(&mut module, sp);
    Ok(module.emit_wasm())
}

/// Gives the guest a memory size of its own: a global holding the size in
/// pages that `memory.size` reads and `memory.grow` raises (growing the
/// real memory only past its current size). Wasm memories cannot shrink, so
/// without this an execution that grows memory (a guest's allocator asking
/// for its first heap pages after the start state, the common case) left
/// `reset` no way back to the start state but a fresh instance, tens of
/// microseconds and dozens of page faults per execution. With it, rewinding
/// the global (a snapshot holds it like every mutable global) rewinds the
/// size the guest sees, and the pages above it are kept zero by restores,
/// so the next growth finds them as fresh memory would be.
///
/// The one difference a guest could see: an out-of-bounds access between
/// its size and the real size does not trap. Skipped (no global) for
/// modules with several or 64-bit memories.
fn virtualize_memory_size(module: &mut walrus::Module) -> Option<walrus::GlobalId> {
    use walrus::ir::{
        BinaryOp, Call, GlobalGet, Instr, MemoryGrow, MemorySize, Return, Select, Value, VisitorMut,
    };
    use walrus::{ConstExpr, FunctionBuilder, ValType};
    let mut memories = module.memories.iter();
    let memory = memories.next()?;
    if memories.next().is_some() || memory.memory64 {
        return None;
    }
    let (mem, initial) = (memory.id(), memory.initial as i32);
    let pages = module.globals.add_local(
        ValType::I32,
        true,
        false,
        ConstExpr::Value(Value::I32(initial)),
    );

    // grow(n) -> old size or -1, like memory.grow.
    let mut b = FunctionBuilder::new(&mut module.types, &[ValType::I32], &[ValType::I32]);
    let n = module.locals.add(ValType::I32);
    let old = module.locals.add(ValType::I32);
    let new = module.locals.add(ValType::I32);
    let delta = module.locals.add(ValType::I32);
    let mut body = b.func_body();
    body.global_get(pages).local_set(old);
    // n > 65536 pages (4 GiB) fails; then old + n cannot overflow.
    body.local_get(n)
        .i32_const(65536)
        .binop(BinaryOp::I32GtU)
        .if_else(
            None,
            |fail| {
                fail.i32_const(-1).instr(Instr::Return(Return {}));
            },
            |_| {},
        );
    body.local_get(old)
        .local_get(n)
        .binop(BinaryOp::I32Add)
        .local_tee(new)
        .i32_const(65536)
        .binop(BinaryOp::I32GtU)
        .if_else(
            None,
            |fail| {
                fail.i32_const(-1).instr(Instr::Return(Return {}));
            },
            |_| {},
        );
    // Grow the real memory by max(new - real, 0), without a branch: the
    // same instructions run whether or not an earlier execution already
    // grew it, so a step's cost (fuel) does not depend on that history.
    body.local_get(new)
        .instr(Instr::MemorySize(MemorySize { memory: mem }))
        .binop(BinaryOp::I32Sub)
        .local_tee(delta)
        .i32_const(0)
        .local_get(delta)
        .i32_const(0)
        .binop(BinaryOp::I32GtS)
        .instr(Instr::Select(Select { ty: None }))
        .instr(Instr::MemoryGrow(MemoryGrow { memory: mem }))
        .i32_const(-1)
        .binop(BinaryOp::I32Eq)
        .if_else(
            None,
            |fail| {
                fail.i32_const(-1).instr(Instr::Return(Return {}));
            },
            |_| {},
        );
    body.local_get(new).global_set(pages).local_get(old);
    let grow = b.finish(vec![n], &mut module.funcs);

    struct Rewrite {
        mem: walrus::MemoryId,
        pages: walrus::GlobalId,
        grow: walrus::FunctionId,
    }
    impl VisitorMut for Rewrite {
        fn visit_instr_mut(&mut self, instr: &mut Instr, _: &mut walrus::InstrLocId) {
            match instr {
                Instr::MemorySize(m) if m.memory == self.mem => {
                    *instr = Instr::GlobalGet(GlobalGet { global: self.pages });
                }
                Instr::MemoryGrow(m) if m.memory == self.mem => {
                    *instr = Instr::Call(Call { func: self.grow });
                }
                _ => {}
            }
        }
    }
    let mut v = Rewrite { mem, pages, grow };
    for (id, f) in module.funcs.iter_local_mut() {
        if id == grow {
            continue;
        }
        let entry = f.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, f, entry);
    }
    Some(pages)
}

/// Adds a low-water mark of the stack pointer: a global that every write
/// of `__stack_pointer` lowers to the new value when it is lower (eight
/// instructions, no branch: `select`). Stack pages below a thread's mark
/// were never written, so snapshots, restores and hashes need not read
/// them: most of a guest's memory is its 1 MiB stack region, untouched.
///
/// Also exports the bottom of the main stack's region: 0 when the module
/// lays its stack out first (below every data segment, LLVM's default for
/// Rust), else the initial stack pointer itself, meaning "no region": the
/// memory below the stack may then hold data, and nothing is skipped.
fn track_stack_low(module: &mut walrus::Module, sp: walrus::GlobalId) {
    use walrus::ir::{
        BinaryOp, Binop, GlobalGet, GlobalSet, Instr, InstrLocId, InstrSeq, LocalGet, LocalTee,
        Select,
    };
    use walrus::{ir::Value, ConstExpr, GlobalKind};

    let init = match &module.globals.get(sp).kind {
        GlobalKind::Local(e @ ConstExpr::Value(Value::I32(_))) => e.clone(),
        _ => return,
    };
    let ConstExpr::Value(Value::I32(init_sp)) = init else {
        return;
    };
    let low = module
        .globals
        .add_local(walrus::ValType::I32, true, false, init.clone());
    module.exports.add(STACK_LOW_EXPORT, low);
    let data_low = module
        .data
        .iter()
        .filter_map(|d| match &d.kind {
            walrus::DataKind::Active {
                offset: ConstExpr::Value(Value::I32(o)),
                ..
            } => Some(*o as u32),
            walrus::DataKind::Active { .. } => Some(0),
            walrus::DataKind::Passive => None,
        })
        .min();
    let stack_first = data_low.is_none_or(|d| d >= init_sp as u32);
    let region = if stack_first { 0 } else { init_sp };
    let region = module.globals.add_local(
        walrus::ValType::I32,
        false,
        false,
        ConstExpr::Value(Value::I32(region)),
    );
    module.exports.add(STACK_REGION_EXPORT, region);

    struct Rewrite {
        sp: walrus::GlobalId,
        low: walrus::GlobalId,
        t: walrus::LocalId,
    }
    impl walrus::ir::VisitorMut for Rewrite {
        fn start_instr_seq_mut(&mut self, seq: &mut InstrSeq) {
            if !seq
                .instrs
                .iter()
                .any(|(i, _)| matches!(i, Instr::GlobalSet(g) if g.global == self.sp))
            {
                return;
            }
            let loc = InstrLocId::default;
            let mut out = Vec::with_capacity(seq.instrs.len() + 16);
            for (instr, l) in seq.instrs.drain(..) {
                let is_sp_set = matches!(&instr, Instr::GlobalSet(g) if g.global == self.sp);
                if !is_sp_set {
                    out.push((instr, l));
                    continue;
                }
                // low = new_sp < low ? new_sp : low
                out.push((Instr::LocalTee(LocalTee { local: self.t }), loc()));
                out.push((instr, l));
                out.push((Instr::LocalGet(LocalGet { local: self.t }), loc()));
                out.push((Instr::GlobalGet(GlobalGet { global: self.low }), loc()));
                out.push((Instr::LocalGet(LocalGet { local: self.t }), loc()));
                out.push((Instr::GlobalGet(GlobalGet { global: self.low }), loc()));
                out.push((
                    Instr::Binop(Binop {
                        op: BinaryOp::I32LtU,
                    }),
                    loc(),
                ));
                out.push((Instr::Select(Select { ty: None }), loc()));
                out.push((Instr::GlobalSet(GlobalSet { global: self.low }), loc()));
            }
            seq.instrs = out;
        }
    }
    let t = module.locals.add(walrus::ValType::I32);
    let mut v = Rewrite { sp, low, t };
    for (_, f) in module.funcs.iter_local_mut() {
        let entry = f.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, f, entry);
    }
}

/// Exports Asyncify's two control globals (its state and its data pointer),
/// found through the bodies of `asyncify_get_state` (reads the state) and
/// `asyncify_start_unwind` (sets state, then data). The host then switches
/// threads by setting two globals instead of calling four exported
/// functions, each call into wasm costing about a thousand instructions of
/// runtime entry and exit. Modules where the pattern is not found keep
/// working through the exported functions.
pub fn export_asyncify_globals(name: &str, bytes: &[u8]) -> Result<Vec<u8>, HostError> {
    let mut module = walrus::Module::from_buffer(bytes).map_err(|e| HostError::Instrument {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
    })?;
    let globals_of = |module: &walrus::Module, export: &str, set: bool| -> Vec<walrus::GlobalId> {
        let Ok(f) = module.exports.get_func(export) else {
            return Vec::new();
        };
        let walrus::FunctionKind::Local(local) = &module.funcs.get(f).kind else {
            return Vec::new();
        };
        local
            .block(local.entry_block())
            .instrs
            .iter()
            .filter_map(|(i, _)| match i {
                walrus::ir::Instr::GlobalSet(g) if set => Some(g.global),
                walrus::ir::Instr::GlobalGet(g) if !set => Some(g.global),
                _ => None,
            })
            .collect()
    };
    let state = globals_of(&module, "asyncify_get_state", false);
    let sets = globals_of(&module, "asyncify_start_unwind", true);
    if let ([state], [a, b]) = (state.as_slice(), sets.as_slice()) {
        let data = if a == state { *b } else { *a };
        if data != *state {
            module.exports.add(ASYNCIFY_STATE_EXPORT, *state);
            module.exports.add(ASYNCIFY_DATA_EXPORT, data);
            add_trampolines(&mut module, *state, data);
            return Ok(module.emit_wasm());
        }
    }
    Ok(bytes.to_vec())
}

/// Where a hook wrapper leaves the operation a thread suspends on, for
/// the trampoline to return: the hook's index in `SUSPENDING_HOOKS` (-1
/// while none), its call site, and its other parameters (`i32`s
/// zero-extended).
struct OpRecord {
    hook: walrus::GlobalId,
    site: walrus::GlobalId,
    args: [walrus::GlobalId; OP_ARGS],
}

pub use crate::ops::OP_ARGS;

/// Routes every call of a suspending hook through a wasm wrapper that does
/// the whole suspension in wasm, so a step makes no call into the host
/// besides the trampoline's. When the state is rewinding, the call is the
/// resumption: the wrapper stops the rewind and returns the operation's
/// result, which the trampoline left in `resume` (the host already wrote
/// any `out` value into memory before the step). Otherwise the wrapper
/// records the hook and its arguments (`OpRecord`) and starts the unwind
/// (the trampoline already pointed Asyncify's data at the thread's
/// buffer); the trampoline returns the record and the host decodes the
/// operation (`guest::decode_op`), reading any byte arguments from memory,
/// which an unwind does not touch. Every suspending hook call suspends, so
/// the state alone decides. The imports themselves are then never called.
///
/// Why: each call from wasm into the host costs about 150 instructions of
/// wasmtime's trampolines, and each of the host's global accessors about
/// 100; in wasm these are a few instructions.
///
/// Returns false, changing nothing, when a hook is referenced other than
/// by a direct call (a table entry, `ref.func`), as such a call would
/// bypass the wrapper, or when a hook's signature is not one the record
/// holds (linking refuses such an import anyway). The module then keeps the
/// host-side bookkeeping.
fn wrap_suspending_hooks(
    module: &mut walrus::Module,
    state: walrus::GlobalId,
    resume: walrus::GlobalId,
    record: &OpRecord,
) -> bool {
    use walrus::ir::{BinaryOp, Instr, UnaryOp, Visitor, VisitorMut};
    use walrus::{ElementItems, FunctionBuilder, ImportKind, ValType};
    let hooks: Vec<(walrus::FunctionId, usize)> = module
        .imports
        .iter()
        .filter_map(|i| match i.kind {
            ImportKind::Function(f) if i.module == HOOK_MODULE => SUSPENDING_HOOKS
                .iter()
                .position(|h| *h == i.name)
                .map(|index| (f, index)),
            _ => None,
        })
        .collect();
    let recordable = |f: &walrus::FunctionId| {
        let (params, results) = module.types.params_results(module.funcs.get(*f).ty());
        params.len() <= OP_ARGS + 1
            && params.last() == Some(&ValType::I32)
            && params
                .iter()
                .all(|t| matches!(t, ValType::I32 | ValType::I64))
            && matches!(results, [] | [ValType::I32] | [ValType::I64])
    };
    if !hooks.iter().all(|(f, _)| recordable(f)) {
        return false;
    }
    let referenced = |f: &walrus::FunctionId| {
        module.elements.iter().any(|e| match &e.items {
            ElementItems::Functions(fs) => fs.contains(f),
            ElementItems::Expressions(_, es) => es
                .iter()
                .any(|x| matches!(x, walrus::ConstExpr::RefFunc(g) if g == f)),
        })
    };
    if hooks.iter().any(|(f, _)| referenced(f)) {
        return false;
    }
    struct FindRef<'a> {
        hooks: &'a [walrus::FunctionId],
        found: bool,
    }
    impl<'instr> Visitor<'instr> for FindRef<'_> {
        fn visit_instr(&mut self, instr: &'instr Instr, _: &'instr walrus::InstrLocId) {
            if let Instr::RefFunc(r) = instr {
                self.found |= self.hooks.contains(&r.func);
            }
        }
    }
    let hook_ids: Vec<walrus::FunctionId> = hooks.iter().map(|(f, _)| *f).collect();
    let mut find = FindRef {
        hooks: &hook_ids,
        found: false,
    };
    for (_, f) in module.funcs.iter_local() {
        walrus::ir::dfs_in_order(&mut find, f, f.entry_block());
    }
    if find.found {
        return false;
    }

    let mut wrappers = std::collections::BTreeMap::new();
    for (hook, index) in hooks {
        let ty = module.funcs.get(hook).ty();
        let (params, results) = module.types.params_results(ty);
        let (params, results) = (params.to_vec(), results.to_vec());
        let mut b = FunctionBuilder::new(&mut module.types, &params, &results);
        let args: Vec<walrus::LocalId> = params.iter().map(|t| module.locals.add(*t)).collect();
        let mut body = b.func_body();
        // A rewind ends here: state back to normal, and the result.
        body.global_get(state)
            .i32_const(2)
            .binop(BinaryOp::I32Eq)
            .if_else(
                None,
                |stop| {
                    stop.i32_const(0).global_set(state);
                    match results.as_slice() {
                        [] => {}
                        [ValType::I64] => {
                            stop.global_get(resume);
                        }
                        _ => {
                            stop.global_get(resume).unop(UnaryOp::I32WrapI64);
                        }
                    }
                    stop.return_();
                },
                |_| {},
            );
        // A fresh call: record the operation, then unwind. The result is
        // not used by an unwinding caller.
        let (site, rest) = args.split_last().expect("checked: the site is last");
        for ((a, t), g) in rest.iter().zip(&params).zip(&record.args) {
            body.local_get(*a);
            if *t == ValType::I32 {
                body.unop(UnaryOp::I64ExtendUI32);
            }
            body.global_set(*g);
        }
        body.local_get(*site).global_set(record.site);
        body.i32_const(index as i32).global_set(record.hook);
        body.i32_const(1).global_set(state);
        match results.as_slice() {
            [] => {}
            [ValType::I64] => {
                body.i64_const(0);
            }
            _ => {
                body.i32_const(0);
            }
        }
        let id = b.finish(args, &mut module.funcs);
        wrappers.insert(hook, id);
    }
    struct Redirect<'a> {
        wrappers: &'a std::collections::BTreeMap<walrus::FunctionId, walrus::FunctionId>,
    }
    impl VisitorMut for Redirect<'_> {
        fn visit_instr_mut(&mut self, instr: &mut Instr, _: &mut walrus::InstrLocId) {
            if let Instr::Call(c) = instr {
                if let Some(w) = self.wrappers.get(&c.func) {
                    c.func = *w;
                }
            }
        }
    }
    let wrapper_ids: Vec<walrus::FunctionId> = wrappers.values().copied().collect();
    let mut v = Redirect {
        wrappers: &wrappers,
    };
    for (id, f) in module.funcs.iter_local_mut() {
        if wrapper_ids.contains(&id) {
            continue;
        }
        let entry = f.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, f, entry);
    }
    true
}

/// Adds, for every entry function (each test and the thread start), a
/// trampoline `__wasmrace_enter_<entry>(arg, sp, low, state, data, end,
/// resume) -> (sp << 32 | low, hook, site, a0, a1, a2, a3)` that sets the
/// stack pointer, its low-water mark, Asyncify's state and data pointer
/// and the resumed hook's result (`resume`, handed back by the hook
/// wrapper), writes Asyncify's buffer header `[data + 8, end]` unless the
/// thread is being rewound, calls the entry (with `arg` for the thread
/// start), stops an unwind (state back to normal), and returns the stack
/// pointer and its mark with the operation the thread suspended on (see
/// `OpRecord`; hook -1 when the entry returned).
///
/// Why: a step used to make seven checked `Global` gets and sets from the
/// host around the call into wasm, each about a hundred instructions of
/// wasmtime's API, plus two calls into the host from the hooks and a header
/// write through the host's memory view; in wasm they are one instruction
/// each, and the values ride on the call the step makes anyway. The header:
/// a finished rewind leaves it as a fresh unwind needs it (Asyncify pops
/// what it pushed), so only a thread's first segment and a reused slot need
/// it written, and writing it whenever the thread is not being rewound
/// covers both. Added after Asyncify, so the trampolines themselves are not
/// instrumented: they are never on a suspended stack. Added only together
/// with the hook wrappers (`wrap_suspending_hooks`): the host relies on
/// both or neither.
fn add_trampolines(module: &mut walrus::Module, state: walrus::GlobalId, data: walrus::GlobalId) {
    use walrus::ir::{BinaryOp, UnaryOp};
    use walrus::{ExportItem, FunctionBuilder, ValType};
    let global = |module: &walrus::Module, name: &str| {
        module.exports.iter().find_map(|e| match e.item {
            ExportItem::Global(g) if e.name == name => Some(g),
            _ => None,
        })
    };
    let Some(sp) = global(module, STACK_POINTER_EXPORT) else {
        return;
    };
    let low = global(module, STACK_LOW_EXPORT);
    // Asyncify's buffer is in memory 0; a module without memory has no
    // Asyncify to drive.
    let Some(mem) = module.memories.iter().next().map(|m| m.id()) else {
        return;
    };
    let mut global = |ty: ValType| {
        let zero = match ty {
            ValType::I64 => walrus::ir::Value::I64(0),
            _ => walrus::ir::Value::I32(0),
        };
        module
            .globals
            .add_local(ty, true, false, walrus::ConstExpr::Value(zero))
    };
    let resume = global(ValType::I64);
    let record = OpRecord {
        hook: global(ValType::I32),
        site: global(ValType::I32),
        args: [0; OP_ARGS].map(|_| global(ValType::I64)),
    };
    if !wrap_suspending_hooks(module, state, resume, &record) {
        for g in [resume, record.hook, record.site]
            .into_iter()
            .chain(record.args)
        {
            module.globals.delete(g);
        }
        return;
    }
    let entries: Vec<(String, walrus::FunctionId)> = module
        .exports
        .iter()
        .filter_map(|e| match e.item {
            ExportItem::Function(f)
                if e.name.starts_with(TEST_PREFIX) || e.name == THREAD_START =>
            {
                Some((e.name.clone(), f))
            }
            _ => None,
        })
        .collect();
    for (name, f) in entries {
        let takes_arg = module.types.params(module.funcs.get(f).ty()) == [ValType::I32];
        let params = [
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I64,
        ];
        let results = [
            ValType::I64,
            ValType::I32,
            ValType::I32,
            ValType::I64,
            ValType::I64,
            ValType::I64,
            ValType::I64,
        ];
        let mut b = FunctionBuilder::new(&mut module.types, &params, &results);
        let args: Vec<walrus::LocalId> = params.iter().map(|t| module.locals.add(*t)).collect();
        let [arg, sp_in, low_in, state_in, data_in, end_in, resume_in] = [
            args[0], args[1], args[2], args[3], args[4], args[5], args[6],
        ];
        let mut body = b.func_body();
        body.local_get(sp_in).global_set(sp);
        if let Some(low) = low {
            body.local_get(low_in).global_set(low);
        }
        body.local_get(state_in)
            .global_set(state)
            .local_get(data_in)
            .global_set(data)
            .local_get(resume_in)
            .global_set(resume);
        let store32 = walrus::ir::StoreKind::I32 { atomic: false };
        let arg32 = |offset| walrus::ir::MemArg { align: 4, offset };
        body.local_get(state_in)
            .i32_const(2)
            .binop(BinaryOp::I32Ne)
            .if_else(
                None,
                |h| {
                    h.local_get(data_in)
                        .local_get(data_in)
                        .i32_const(8)
                        .binop(BinaryOp::I32Add)
                        .store(mem, store32, arg32(0))
                        .local_get(data_in)
                        .local_get(end_in)
                        .store(mem, store32, arg32(4));
                },
                |_| {},
            );
        body.i32_const(-1).global_set(record.hook);
        if takes_arg {
            body.local_get(arg);
        }
        body.call(f);
        // Asyncify writes a suspended stack without checking the buffer's
        // end: trap if it went past, while the state still says unwinding
        // (so the host reports the buffer, not a bare trap), before the
        // overflow corrupts anything else.
        let load32 = walrus::ir::LoadKind::I32 { atomic: false };
        body.local_get(data_in)
            .load(mem, load32, arg32(0))
            .local_get(end_in)
            .binop(BinaryOp::I32GtU)
            .if_else(
                None,
                |t| {
                    t.unreachable();
                },
                |_| {},
            );
        // Stop an unwind; a returned entry left the state normal already.
        body.i32_const(0).global_set(state);
        body.global_get(sp)
            .unop(UnaryOp::I64ExtendUI32)
            .i64_const(32)
            .binop(BinaryOp::I64Shl);
        match low {
            Some(low) => body.global_get(low).unop(UnaryOp::I64ExtendUI32),
            None => body.i64_const(0),
        };
        body.binop(BinaryOp::I64Or);
        body.global_get(record.hook).global_get(record.site);
        for g in record.args {
            body.global_get(g);
        }
        let id = b.finish(args, &mut module.funcs);
        module.exports.add(&format!("{ENTER_PREFIX}{name}"), id);
    }
}

pub fn find_wasm_opt(configured: Option<&Path>) -> Result<PathBuf, HostError> {
    let candidate = configured
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("WASMRACE_WASM_OPT").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("wasm-opt"));
    match Command::new(&candidate).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(candidate),
        _ => Err(HostError::WasmOptMissing {
            tried: candidate.display().to_string(),
        }),
    }
}

/// Runs Binaryen's Asyncify over the suspending hooks.
pub fn asyncify(name: &str, bytes: &[u8], wasm_opt: &Path) -> Result<Vec<u8>, HostError> {
    let dir = tempdir()?;
    let input = dir.join("in.wasm");
    let output = dir.join("out.wasm");
    std::fs::write(&input, bytes).map_err(|source| HostError::Io {
        path: input.clone(),
        cause: source,
    })?;
    let imports: Vec<String> = SUSPENDING_HOOKS
        .iter()
        .map(|h| format!("{HOOK_MODULE}.{h}"))
        .collect();
    let result = Command::new(wasm_opt)
        .arg(&input)
        // The standard features our validator and wasmtime accept. Rust
        // modules declare theirs in a target_features section, which
        // wasm-opt reads; modules without one (hand-written, other
        // toolchains) would otherwise be held to MVP, which also forbids
        // the mutable globals we export ourselves.
        .args([
            "--enable-mutable-globals",
            "--enable-sign-ext",
            "--enable-nontrapping-float-to-int",
            "--enable-bulk-memory",
            "--enable-reference-types",
            "--enable-multivalue",
            "--enable-simd",
        ])
        .arg("--asyncify")
        .arg(format!("--pass-arg=asyncify-imports@{}", imports.join(",")))
        // Asyncify's output is large and slow until optimized.
        .arg("-O2")
        .arg("-o")
        .arg(&output)
        .output();
    let out = result.map_err(|_| HostError::WasmOptMissing {
        tried: wasm_opt.display().to_string(),
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(HostError::WasmOpt {
            name: name.into(),
            message: one_line(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    let bytes = std::fs::read(&output).map_err(|source| HostError::Io {
        path: output.clone(),
        cause: source,
    });
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

fn tempdir() -> Result<PathBuf, HostError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "wasmrace-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|source| HostError::Io {
        path: dir.clone(),
        cause: source,
    })?;
    Ok(dir)
}

/// Cache key of an instrumented module: the input, our instrumentation
/// version and the options that shape the output.
pub fn cache_key(bytes: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(bytes);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(&INSTRUMENTATION_VERSION.to_le_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// Writes `bytes` to `path` atomically (temp file + rename), so a
/// concurrent reader never sees half a file. Failures are ignored: the
/// cache is an optimization.
pub fn cache_write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
