//! The walrus pass that records which 1 KiB blocks of linear memory the
//! guest writes (`DIRTY_SHIFT`): after every store, `memory.fill`,
//! `memory.copy` and `memory.init`, a byte per written block is set in a
//! map the host places in memory. Snapshots and restores then look at those blocks
//! only (`program/dirty.rs`) instead of scanning and copying every page.
//!
//! The map's address is a constant of the module (its initial memory size:
//! the host grows memory for the map before any guest code runs), so a
//! mark is a shift and a byte store with the address as the store's
//! static offset: no global read and no add on the hot path, which every
//! store of the guest pays.

use super::{DIRTY_BASE_EXPORT, DIRTY_SHIFT, DIRTY_SPAN_EXPORT};
use crate::error::{one_line, HostError};
use walrus::ir::{
    BinaryOp, Binop, Call, Const, Instr, InstrLocId, InstrSeq, LocalGet, LocalSet, LocalTee,
    MemArg, Store, StoreKind, Value, VisitorMut,
};
use walrus::{ConstExpr, FunctionBuilder, ValType};

/// Adds the dirty-page map's marking to every write of memory 0, the
/// exported constant global holding the map's address (`DIRTY_BASE_EXPORT`:
/// the memory's initial size, where the host's first growth puts the map;
/// until then a mark is out of bounds and traps) and the
/// exported function marking a span (`DIRTY_SPAN_EXPORT`, which the
/// trampolines call for Asyncify's buffer). Leaves modules it cannot track
/// alone (several or 64-bit memories, a start function, which would run
/// before the host places the map, a declared memory maximum, under which
/// the map would take memory the guest may need): the host then scans
/// every page.
pub fn track_dirty_pages(name: &str, bytes: &[u8]) -> Result<Vec<u8>, HostError> {
    let mut module = walrus::Module::from_buffer(bytes).map_err(|e| HostError::Instrument {
        name: name.into(),
        message: one_line(&format!("{e:#}")),
    })?;
    let (mem, base) = {
        let mut memories = module.memories.iter();
        match (memories.next(), memories.next()) {
            (Some(m), None) if !m.memory64 && m.maximum.is_none() && module.start.is_none() => {
                // The map must lie below 4 GiB with room for its bytes.
                match u32::try_from(m.initial * 65536) {
                    Ok(base) if base < 0xf000_0000 => (m.id(), base),
                    _ => return Ok(bytes.to_vec()),
                }
            }
            _ => return Ok(bytes.to_vec()),
        }
    };
    let global = module.globals.add_local(
        ValType::I32,
        false,
        false,
        ConstExpr::Value(Value::I32(base as i32)),
    );
    module.exports.add(DIRTY_BASE_EXPORT, global);
    let span = add_span(&mut module, mem, base);
    module.exports.add(DIRTY_SPAN_EXPORT, span);
    let ids: Vec<walrus::FunctionId> = module.funcs.iter_local().map(|(id, _)| id).collect();
    for id in ids {
        if id == span {
            continue;
        }
        let mut v = Marker {
            mem,
            base,
            span,
            values: Vec::new(),
            locals: &mut module.locals,
        };
        let f = module.funcs.get_mut(id).kind.unwrap_local_mut();
        let entry = f.entry_block();
        walrus::ir::dfs_pre_order_mut(&mut v, f, entry);
    }
    Ok(module.emit_wasm())
}

/// `span(from, len)`: marks every block of `[from, from + len)`.
fn add_span(module: &mut walrus::Module, mem: walrus::MemoryId, base: u32) -> walrus::FunctionId {
    let mut b = FunctionBuilder::new(&mut module.types, &[ValType::I32, ValType::I32], &[]);
    let from = module.locals.add(ValType::I32);
    let len = module.locals.add(ValType::I32);
    let page = module.locals.add(ValType::I32);
    let last = module.locals.add(ValType::I32);
    let mut body = b.func_body();
    // Nothing written, nothing marked (and `from + len - 1` would be wrong).
    body.local_get(len)
        .unop(walrus::ir::UnaryOp::I32Eqz)
        .if_else(
            None,
            |t| {
                t.return_();
            },
            |_| {},
        );
    body.local_get(from)
        .i32_const(DIRTY_SHIFT as i32)
        .binop(BinaryOp::I32ShrU)
        .local_set(page)
        .local_get(from)
        .local_get(len)
        .binop(BinaryOp::I32Add)
        .i32_const(1)
        .binop(BinaryOp::I32Sub)
        .i32_const(DIRTY_SHIFT as i32)
        .binop(BinaryOp::I32ShrU)
        .local_set(last);
    body.loop_(None, |l| {
        let again = l.id();
        l.local_get(page)
            .i32_const(1)
            .store(
                mem,
                StoreKind::I32_8 { atomic: false },
                MemArg {
                    align: 1,
                    offset: base.into(),
                },
            )
            .local_get(page)
            .i32_const(1)
            .binop(BinaryOp::I32Add)
            .local_tee(page)
            .local_get(last)
            .binop(BinaryOp::I32LeU)
            .br_if(again);
    });
    b.finish(vec![from, len], &mut module.funcs)
}

/// Rewrites one function's writes: each store is followed by the marking
/// of its block (and the next: a store may straddle two), each bulk write by
/// a call of `span`. The write comes first, so a write that traps marks
/// nothing and the marking itself never leaves the map.
struct Marker<'a> {
    mem: walrus::MemoryId,
    /// The map's address, the marks' static offset.
    base: u32,
    span: walrus::FunctionId,
    /// The locals the rewrite needs, made on first use (an unused local
    /// would still be saved by Asyncify at every unwind through it):
    /// `values[0]` is the address, `values[1]` a bulk write's length, then
    /// one per stored value type.
    values: Vec<(ValType, walrus::LocalId)>,
    locals: &'a mut walrus::ModuleLocals,
}

impl Marker<'_> {
    fn value_local(&mut self, ty: ValType) -> walrus::LocalId {
        if self.values.is_empty() {
            let addr = self.locals.add(ValType::I32);
            let len = self.locals.add(ValType::I32);
            self.values.push((ValType::I32, addr));
            self.values.push((ValType::I32, len));
        }
        if let Some((_, l)) = self.values[2..].iter().find(|(t, _)| *t == ty) {
            return *l;
        }
        let l = self.locals.add(ty);
        self.values.push((ty, l));
        l
    }

    /// `[addr, value] store` -> store, then `map[(addr + offset) >> 10]`
    /// set, the map's address being the mark's static offset (one byte for
    /// a byte store, two for a wider one, which may cross into the next
    /// block).
    fn store(&mut self, out: &mut Vec<(Instr, InstrLocId)>, s: Store, loc: InstrLocId) {
        let ty = match s.kind {
            StoreKind::I32 { .. } | StoreKind::I32_8 { .. } | StoreKind::I32_16 { .. } => {
                ValType::I32
            }
            StoreKind::I64 { .. }
            | StoreKind::I64_8 { .. }
            | StoreKind::I64_16 { .. }
            | StoreKind::I64_32 { .. } => ValType::I64,
            StoreKind::F32 => ValType::F32,
            StoreKind::F64 => ValType::F64,
            StoreKind::V128 => ValType::V128,
        };
        let v = self.value_local(ty);
        let addr = self.values[0].1;
        let (mark_kind, mark_value) = if s.kind.width() == 1 {
            (StoreKind::I32_8 { atomic: false }, 1)
        } else {
            (StoreKind::I32_16 { atomic: false }, 0x0101)
        };
        let offset = s.arg.offset as u32 as i32;
        let l = InstrLocId::default;
        out.extend([
            (Instr::LocalSet(LocalSet { local: v }), l()),
            (Instr::LocalTee(LocalTee { local: addr }), l()),
            (Instr::LocalGet(LocalGet { local: v }), l()),
            (Instr::Store(s), loc),
            (Instr::LocalGet(LocalGet { local: addr }), l()),
        ]);
        if offset != 0 {
            out.push((i32c(offset), l()));
            out.push((binop(BinaryOp::I32Add), l()));
        }
        out.extend([
            (i32c(DIRTY_SHIFT as i32), l()),
            (binop(BinaryOp::I32ShrU), l()),
            (i32c(mark_value), l()),
            (
                Instr::Store(Store {
                    memory: self.mem,
                    kind: mark_kind,
                    arg: MemArg {
                        align: 1,
                        offset: self.base.into(),
                    },
                }),
                l(),
            ),
        ]);
    }

    /// `[dst, x, len] op` -> op, then `span(dst, len)`.
    fn bulk(&mut self, out: &mut Vec<(Instr, InstrLocId)>, op: Instr, loc: InstrLocId) {
        let x = self.value_local(ValType::I32);
        let (addr, len) = (self.values[0].1, self.values[1].1);
        let l = InstrLocId::default;
        out.extend([
            (Instr::LocalSet(LocalSet { local: len }), l()),
            (Instr::LocalSet(LocalSet { local: x }), l()),
            (Instr::LocalTee(LocalTee { local: addr }), l()),
            (Instr::LocalGet(LocalGet { local: x }), l()),
            (Instr::LocalGet(LocalGet { local: len }), l()),
            (op, loc),
            (Instr::LocalGet(LocalGet { local: addr }), l()),
            (Instr::LocalGet(LocalGet { local: len }), l()),
            (Instr::Call(Call { func: self.span }), l()),
        ]);
    }
}

impl VisitorMut for Marker<'_> {
    fn start_instr_seq_mut(&mut self, seq: &mut InstrSeq) {
        let mem = self.mem;
        let writes = move |i: &Instr| match i {
            Instr::Store(s) => s.memory == mem,
            Instr::MemoryFill(f) => f.memory == mem,
            Instr::MemoryCopy(c) => c.dst == mem,
            Instr::MemoryInit(m) => m.memory == mem,
            _ => false,
        };
        if !seq.instrs.iter().any(|(i, _)| writes(i)) {
            return;
        }
        let mut out = Vec::with_capacity(seq.instrs.len() * 2);
        for (instr, loc) in std::mem::take(&mut seq.instrs) {
            if !writes(&instr) {
                out.push((instr, loc));
                continue;
            }
            match instr {
                Instr::Store(s) => self.store(&mut out, s, loc),
                op => self.bulk(&mut out, op, loc),
            }
        }
        seq.instrs = out;
    }
}

fn i32c(v: i32) -> Instr {
    Instr::Const(Const {
        value: Value::I32(v),
    })
}

fn binop(op: BinaryOp) -> Instr {
    Instr::Binop(Binop { op })
}
