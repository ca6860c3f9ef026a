//! The walrus passes after Asyncify: export Asyncify's control globals,
//! route every suspending hook call through a wasm wrapper that records
//! the operation and unwinds, and add an entry trampoline per test and for
//! the thread start, so that a step is one call into wasm.

use super::{
    ASYNCIFY_DATA_EXPORT, ASYNCIFY_STATE_EXPORT, DIRTY_SPAN_EXPORT, ENTER_PREFIX, HOOK_MODULE,
    ONWARD_HOOK, OP_ARGS, STACK_LOW_EXPORT, STACK_POINTER_EXPORT, SUSPENDING_HOOKS, TEST_PREFIX,
    THREAD_START,
};
use crate::error::{one_line, HostError};

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
    offer: walrus::GlobalId,
    record: &OpRecord,
    low: Option<walrus::GlobalId>,
) -> bool {
    let hooks = suspending_hooks(module);
    if !wrappable(module, &hooks) {
        return false;
    }
    let wrapping = Wrapping {
        state,
        resume,
        offer,
        record,
        low,
        onward: add_onward_import(module),
    };
    let wrappers = hooks
        .into_iter()
        .map(|(hook, index)| (hook, wrapping.wrapper(module, hook, index)))
        .collect();
    redirect_calls(module, &wrappers);
    true
}

/// The module's imports of suspending hooks, with each hook's index in
/// `SUSPENDING_HOOKS`.
fn suspending_hooks(module: &walrus::Module) -> Vec<(walrus::FunctionId, usize)> {
    module
        .imports
        .iter()
        .filter_map(|i| match i.kind {
            walrus::ImportKind::Function(f) if i.module == HOOK_MODULE => SUSPENDING_HOOKS
                .iter()
                .position(|h| *h == i.name)
                .map(|index| (f, index)),
            _ => None,
        })
        .collect()
}

/// Whether every call of `hooks` can go through a wrapper: each has a
/// signature the record holds, and none is referenced other than by a
/// direct call (a table entry, `ref.func`), which would bypass it.
fn wrappable(module: &walrus::Module, hooks: &[(walrus::FunctionId, usize)]) -> bool {
    use walrus::ir::{Instr, Visitor};
    use walrus::{ElementItems, ValType};
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
    !find.found
}

/// One hook's call as its wrapper sees it: the hook's index in
/// `SUSPENDING_HOOKS`, the site, the other parameters with their types, and
/// the hook's results.
struct HookCall<'a> {
    index: usize,
    site: walrus::LocalId,
    rest: Vec<(walrus::LocalId, walrus::ValType)>,
    results: &'a [walrus::ValType],
}

/// What every hook wrapper reads and writes.
struct Wrapping<'a> {
    state: walrus::GlobalId,
    resume: walrus::GlobalId,
    offer: walrus::GlobalId,
    record: &'a OpRecord,
    low: Option<walrus::GlobalId>,
    onward: walrus::FunctionId,
}

impl Wrapping<'_> {
    /// Adds the wrapper of `hook` (at `index` in `SUSPENDING_HOOKS`): the
    /// end of a rewind, else the offer to go on in place, else the record
    /// and the unwind.
    fn wrapper(
        &self,
        module: &mut walrus::Module,
        hook: walrus::FunctionId,
        index: usize,
    ) -> walrus::FunctionId {
        use walrus::ValType;
        let ty = module.funcs.get(hook).ty();
        let (params, results) = module.types.params_results(ty);
        let (params, results) = (params.to_vec(), results.to_vec());
        let args: Vec<walrus::LocalId> = params.iter().map(|t| module.locals.add(*t)).collect();
        let (go, val) = (
            module.locals.add(ValType::I32),
            module.locals.add(ValType::I64),
        );
        let mut b = walrus::FunctionBuilder::new(&mut module.types, &params, &results);
        let mut body = b.func_body();
        let (site, rest) = args.split_last().expect("checked: the site is last");
        let call = HookCall {
            index,
            site: *site,
            rest: rest.iter().copied().zip(params.iter().copied()).collect(),
            results: &results,
        };
        self.end_rewind(&mut body, &results);
        self.offer_onward(&mut body, &call, (go, val));
        self.record_and_unwind(&mut body, &call);
        b.finish(args, &mut module.funcs)
    }

    /// A rewind ends here: state back to normal, and the result.
    fn end_rewind(&self, body: &mut walrus::InstrSeqBuilder, results: &[walrus::ValType]) {
        use walrus::ir::{BinaryOp, UnaryOp};
        let (state, resume) = (self.state, self.resume);
        body.global_get(state)
            .i32_const(2)
            .binop(BinaryOp::I32Eq)
            .if_else(
                None,
                |stop| {
                    stop.i32_const(0).global_set(state);
                    match results {
                        [] => {}
                        [walrus::ValType::I64] => {
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
    }

    /// A fresh call, when the trampoline says the host may go on in place:
    /// offer it (`__onward`); if it ran the operation, return its result.
    fn offer_onward(
        &self,
        body: &mut walrus::InstrSeqBuilder,
        call: &HookCall<'_>,
        (go, val): (walrus::LocalId, walrus::LocalId),
    ) {
        use walrus::ir::UnaryOp;
        use walrus::ValType;
        body.global_get(self.offer).if_else(
            None,
            |o| {
                o.i32_const(call.index as i32).local_get(call.site);
                for (a, t) in &call.rest {
                    o.local_get(*a);
                    if *t == ValType::I32 {
                        o.unop(UnaryOp::I64ExtendUI32);
                    }
                }
                for _ in call.rest.len()..OP_ARGS {
                    o.i64_const(0);
                }
                match self.low {
                    Some(low) => o.global_get(low),
                    None => o.i32_const(0),
                };
                o.call(self.onward).local_set(val).local_set(go);
                o.local_get(go).if_else(
                    None,
                    |ret| {
                        ret.local_get(val);
                        if call.results == [ValType::I32] {
                            ret.unop(UnaryOp::I32WrapI64);
                        } else if call.results.is_empty() {
                            ret.drop();
                        }
                        ret.return_();
                    },
                    |_| {},
                );
            },
            |_| {},
        );
    }

    /// Else: record the operation, then unwind. The result is not used by
    /// an unwinding caller.
    fn record_and_unwind(&self, body: &mut walrus::InstrSeqBuilder, call: &HookCall<'_>) {
        use walrus::ir::UnaryOp;
        use walrus::ValType;
        for ((a, t), g) in call.rest.iter().zip(&self.record.args) {
            body.local_get(*a);
            if *t == ValType::I32 {
                body.unop(UnaryOp::I64ExtendUI32);
            }
            body.global_set(*g);
        }
        body.local_get(call.site).global_set(self.record.site);
        body.i32_const(call.index as i32)
            .global_set(self.record.hook);
        body.i32_const(1).global_set(self.state);
        match call.results {
            [] => {}
            [ValType::I64] => {
                body.i64_const(0);
            }
            _ => {
                body.i32_const(0);
            }
        }
    }
}

/// Makes every call of a hook, outside the wrappers, call its wrapper.
fn redirect_calls(
    module: &mut walrus::Module,
    wrappers: &std::collections::BTreeMap<walrus::FunctionId, walrus::FunctionId>,
) {
    use walrus::ir::{Instr, VisitorMut};
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
    let mut v = Redirect { wrappers };
    for (id, f) in module.funcs.iter_local_mut() {
        if wrapper_ids.contains(&id) {
            continue;
        }
        let entry = f.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, f, entry);
    }
}

/// Imports the host's offer to go on in place, `__onward(hook, site, a0,
/// a1, a2, a3, low) -> (go, result)` (`program::onward`), which a hook
/// wrapper calls before it would unwind.
fn add_onward_import(module: &mut walrus::Module) -> walrus::FunctionId {
    use walrus::ValType::{I32, I64};
    let ty = module
        .types
        .add(&[I32, I32, I64, I64, I64, I64, I32], &[I32, I64]);
    module.add_import_func(HOOK_MODULE, ONWARD_HOOK, ty).0
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
    let Some(sp) = exported_global(module, STACK_POINTER_EXPORT) else {
        return;
    };
    let low = exported_global(module, STACK_LOW_EXPORT);
    // Asyncify's buffer is in memory 0; a module without memory has no
    // Asyncify to drive.
    let Some(mem) = module.memories.iter().next().map(|m| m.id()) else {
        return;
    };
    let (resume, offer, record) = add_record_globals(module);
    if !wrap_suspending_hooks(module, state, resume, offer, &record, low) {
        for g in [resume, offer, record.hook, record.site]
            .into_iter()
            .chain(record.args)
        {
            module.globals.delete(g);
        }
        return;
    }
    let trampolines = Trampolines {
        mem,
        span: exported_func(module, DIRTY_SPAN_EXPORT),
        sp,
        low,
        state,
        data,
        resume,
        offer,
        record,
    };
    for (name, entry) in entries(module) {
        let id = trampolines.add(module, entry);
        module.exports.add(&format!("{ENTER_PREFIX}{name}"), id);
    }
}

/// The function exported as `name`, if any.
fn exported_func(module: &walrus::Module, name: &str) -> Option<walrus::FunctionId> {
    module.exports.iter().find_map(|e| match e.item {
        walrus::ExportItem::Function(f) if e.name == name => Some(f),
        _ => None,
    })
}

/// The global exported as `name`, if any.
fn exported_global(module: &walrus::Module, name: &str) -> Option<walrus::GlobalId> {
    module.exports.iter().find_map(|e| match e.item {
        walrus::ExportItem::Global(g) if e.name == name => Some(g),
        _ => None,
    })
}

/// Adds the globals the hook wrappers and trampolines share, zeroed: the
/// resumed hook's result (`i64`), whether the host may go on in place
/// (`i32`: the wrappers then offer it, `__onward`) and the `OpRecord`.
fn add_record_globals(
    module: &mut walrus::Module,
) -> (walrus::GlobalId, walrus::GlobalId, OpRecord) {
    use walrus::ValType;
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
    let offer = global(ValType::I32);
    let record = OpRecord {
        hook: global(ValType::I32),
        site: global(ValType::I32),
        args: [0; OP_ARGS].map(|_| global(ValType::I64)),
    };
    (resume, offer, record)
}

/// The entry functions that get a trampoline: every test and the thread
/// start, by export name.
fn entries(module: &walrus::Module) -> Vec<(String, walrus::FunctionId)> {
    module
        .exports
        .iter()
        .filter_map(|e| match e.item {
            walrus::ExportItem::Function(f)
                if e.name.starts_with(TEST_PREFIX) || e.name == THREAD_START =>
            {
                Some((e.name.clone(), f))
            }
            _ => None,
        })
        .collect()
}

/// A trampoline's parameters: `(arg, sp, low, state, data, end, resume,
/// offer)`.
const TRAMPOLINE_PARAMS: [walrus::ValType; 8] = {
    use walrus::ValType::{I32, I64};
    [I32, I32, I32, I32, I32, I32, I64, I32]
};

/// A trampoline's results: `(sp << 32 | low, hook, site, a0, a1, a2, a3)`.
const TRAMPOLINE_RESULTS: [walrus::ValType; 7] = {
    use walrus::ValType::{I32, I64};
    [I64, I32, I32, I64, I64, I64, I64]
};

/// The locals holding a trampoline's parameters.
struct TrampolineArgs {
    arg: walrus::LocalId,
    sp: walrus::LocalId,
    low: walrus::LocalId,
    state: walrus::LocalId,
    data: walrus::LocalId,
    end: walrus::LocalId,
    resume: walrus::LocalId,
    offer: walrus::LocalId,
}

/// What every trampoline of a module reads and writes.
struct Trampolines {
    mem: walrus::MemoryId,
    /// The dirty-page map's span marker (`load::track_dirty_pages`).
    span: Option<walrus::FunctionId>,
    sp: walrus::GlobalId,
    low: Option<walrus::GlobalId>,
    state: walrus::GlobalId,
    data: walrus::GlobalId,
    resume: walrus::GlobalId,
    offer: walrus::GlobalId,
    record: OpRecord,
}

impl Trampolines {
    /// Adds the trampoline of `entry` and returns it.
    fn add(&self, module: &mut walrus::Module, entry: walrus::FunctionId) -> walrus::FunctionId {
        let takes_arg = module.types.params(module.funcs.get(entry).ty()) == [walrus::ValType::I32];
        let mut b = walrus::FunctionBuilder::new(
            &mut module.types,
            &TRAMPOLINE_PARAMS,
            &TRAMPOLINE_RESULTS,
        );
        let locals: Vec<walrus::LocalId> = TRAMPOLINE_PARAMS
            .iter()
            .map(|t| module.locals.add(*t))
            .collect();
        let args = TrampolineArgs {
            arg: locals[0],
            sp: locals[1],
            low: locals[2],
            state: locals[3],
            data: locals[4],
            end: locals[5],
            resume: locals[6],
            offer: locals[7],
        };
        let mut body = b.func_body();
        self.set_thread_state(&mut body, &args);
        self.write_buffer_header(&mut body, &args);
        body.i32_const(-1).global_set(self.record.hook);
        if takes_arg {
            body.local_get(args.arg);
        }
        body.call(entry);
        self.trap_on_buffer_overflow(&mut body, &args);
        // Stop an unwind; a returned entry left the state normal already.
        body.i32_const(0).global_set(self.state);
        self.mark_buffer(&mut body, &args);
        self.return_record(&mut body);
        b.finish(locals, &mut module.funcs)
    }

    /// Puts back the thread's stack pointer and its mark, and sets
    /// Asyncify's state and data pointer and the resumed hook's result.
    fn set_thread_state(&self, body: &mut walrus::InstrSeqBuilder, args: &TrampolineArgs) {
        body.local_get(args.sp).global_set(self.sp);
        if let Some(low) = self.low {
            body.local_get(args.low).global_set(low);
        }
        body.local_get(args.state)
            .global_set(self.state)
            .local_get(args.data)
            .global_set(self.data)
            .local_get(args.resume)
            .global_set(self.resume)
            .local_get(args.offer)
            .global_set(self.offer);
    }

    /// Writes Asyncify's buffer header `[data + 8, end]` unless the thread
    /// is being rewound (state 2).
    fn write_buffer_header(&self, body: &mut walrus::InstrSeqBuilder, args: &TrampolineArgs) {
        use walrus::ir::BinaryOp;
        let (mem, data, end) = (self.mem, args.data, args.end);
        body.local_get(args.state)
            .i32_const(2)
            .binop(BinaryOp::I32Ne)
            .if_else(
                None,
                |h| {
                    h.local_get(data)
                        .local_get(data)
                        .i32_const(8)
                        .binop(BinaryOp::I32Add)
                        .store(mem, STORE32, mem_arg32(0))
                        .local_get(data)
                        .local_get(end)
                        .store(mem, STORE32, mem_arg32(4));
                },
                |_| {},
            );
    }

    /// Marks the pages of Asyncify's buffer this segment wrote, header
    /// included (`[data, *data)`), in the dirty-page map: Asyncify's
    /// writes come after the pass that marks the guest's own.
    fn mark_buffer(&self, body: &mut walrus::InstrSeqBuilder, args: &TrampolineArgs) {
        let Some(span) = self.span else {
            return;
        };
        let load32 = walrus::ir::LoadKind::I32 { atomic: false };
        body.local_get(args.data)
            .local_get(args.data)
            .load(self.mem, load32, mem_arg32(0))
            .local_get(args.data)
            .binop(walrus::ir::BinaryOp::I32Sub)
            .call(span);
    }

    /// Traps when the unwind went past the buffer's end.
    fn trap_on_buffer_overflow(&self, body: &mut walrus::InstrSeqBuilder, args: &TrampolineArgs) {
        // Asyncify writes a suspended stack without checking the buffer's
        // end: trap if it went past, while the state still says unwinding
        // (so the host reports the buffer, not a bare trap), before the
        // overflow corrupts anything else.
        let load32 = walrus::ir::LoadKind::I32 { atomic: false };
        body.local_get(args.data)
            .load(self.mem, load32, mem_arg32(0))
            .local_get(args.end)
            .binop(walrus::ir::BinaryOp::I32GtU)
            .if_else(
                None,
                |t| {
                    t.unreachable();
                },
                |_| {},
            );
    }

    /// Leaves the results on the stack: the stack pointer and its mark in
    /// one `i64`, then the operation record.
    fn return_record(&self, body: &mut walrus::InstrSeqBuilder) {
        use walrus::ir::{BinaryOp, UnaryOp};
        body.global_get(self.sp)
            .unop(UnaryOp::I64ExtendUI32)
            .i64_const(32)
            .binop(BinaryOp::I64Shl);
        match self.low {
            Some(low) => body.global_get(low).unop(UnaryOp::I64ExtendUI32),
            None => body.i64_const(0),
        };
        body.binop(BinaryOp::I64Or);
        body.global_get(self.record.hook)
            .global_get(self.record.site);
        for g in self.record.args {
            body.global_get(g);
        }
    }
}

const STORE32: walrus::ir::StoreKind = walrus::ir::StoreKind::I32 { atomic: false };

/// A 4-byte-aligned memory access at `offset`.
fn mem_arg32(offset: u64) -> walrus::ir::MemArg {
    walrus::ir::MemArg { align: 4, offset }
}
