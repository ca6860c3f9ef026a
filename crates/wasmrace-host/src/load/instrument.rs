//! The walrus passes before Asyncify: export the mutable globals (the
//! stack pointer under its own name), give the guest a memory size of its
//! own, and track the stack pointer's low-water mark.

use super::{
    GLOBAL_EXPORT_PREFIX, MEMORY_PAGES_EXPORT, STACK_LOW_EXPORT, STACK_POINTER_EXPORT,
    STACK_REGION_EXPORT,
};
use crate::error::{one_line, HostError};

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
/// Rust) inside the memory it declares, else the initial stack pointer
/// itself, meaning "no region": the memory below the stack may then hold
/// data, and nothing is skipped.
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
    // A stack pointer past the memory the module declares points at pages
    // the host places there (the dirty-page map, thread slots), not at a
    // stack: no region then (the module fuzzer's modules input 2443 of
    // seed 41 started its stack pointer at 265 MiB in an empty memory).
    let declared = module
        .memories
        .iter()
        .next()
        .map_or(0, |m| m.initial.saturating_mul(65536));
    let inside = u64::from(init_sp as u32) <= declared;
    let region = if stack_first && inside { 0 } else { init_sp };
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
