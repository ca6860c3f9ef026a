//! The atomic instructions of a std guest, rewritten at load time
//! (`load/wasi.rs` drives the whole rewrite): each becomes a call of a
//! small generated function, one per shape and static offset, that checks
//! the effective address and calls the instruction's `mem_*` hook, a
//! scheduling point whose operation the host performs
//! (`world/memory.rs`); in wasi-libc's own functions, one that performs
//! it in place instead (`runs_in_place`).

use super::walk::{code_section_start, rewrite_seqs, site_of};
use std::collections::HashMap;
use walrus::ir::{
    AtomicOp, AtomicWidth, BinaryOp, Call, Const, Instr, InstrLocId, LoadKind, StoreKind, UnaryOp,
    Value,
};
use walrus::{FunctionBuilder, FunctionId, LocalId, Module, ValType};

/// The `mem_*` hook imports (docs/ABI.md, "Std guests").
pub(super) struct MemHooks {
    load: FunctionId,
    store: FunctionId,
    rmw: FunctionId,
    cmpxchg: FunctionId,
    wait: FunctionId,
    notify: FunctionId,
}

impl MemHooks {
    pub(super) fn import(module: &mut Module) -> MemHooks {
        use ValType::{I32, I64};
        let mut add = |name: &str, params: &[ValType], results: &[ValType]| {
            let ty = module.types.add(params, results);
            module.add_import_func(crate::ops::HOOK_MODULE, name, ty).0
        };
        // Suspending hooks take their call site last.
        MemHooks {
            load: add("mem_load", &[I32, I32, I32], &[I64]),
            store: add("mem_store", &[I32, I32, I64, I32], &[]),
            rmw: add("mem_rmw", &[I32, I32, I32, I64, I32], &[I64]),
            cmpxchg: add("mem_cmpxchg", &[I32, I32, I64, I64, I32], &[I64]),
            wait: add("mem_wait", &[I32, I32, I64, I64, I32], &[I32]),
            notify: add("mem_notify", &[I32, I32, I32], &[I32]),
        }
    }
}

/// With the race detector on: which functions' in-place atomics
/// synchronise, and the hooks that tell the detector (`load/races.rs`
/// makes it: wasi-libc's thread exit, join and locks).
pub(super) struct InPlaceSync {
    /// `race_acquire(addr, len, site)`.
    pub acquire: FunctionId,
    /// `race_release(addr, len, site)`.
    pub release: FunctionId,
    /// The functions whose in-place atomics synchronise.
    pub functions: std::collections::HashSet<FunctionId>,
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
pub(super) fn rewrite_atomics(
    module: &mut Module,
    mem: walrus::MemoryId,
    hooks: &MemHooks,
    races: Option<&InPlaceSync>,
) -> Vec<u32> {
    let code_start = code_section_start(module);
    let mut sites = Vec::new();
    let mut helpers: HashMap<(Shape, u64, bool, bool), FunctionId> = HashMap::new();
    let ids: Vec<FunctionId> = module.funcs.iter_local().map(|(id, _)| id).collect();
    for id in ids {
        let in_place = runs_in_place(module.funcs.get(id).name.as_deref());
        // libc's join and exit synchronise through their in-place atomics.
        let sync = races.filter(|r| r.functions.contains(&id));
        rewrite_seqs(module, id, |module, instrs| {
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
                let key = (shape, offset, plain, sync.is_some());
                let helper = *helpers.entry(key).or_insert_with(|| {
                    if plain {
                        plain_helper(module, mem, shape, offset, sync)
                    } else {
                        helper(module, hooks, shape, offset)
                    }
                });
                let site = site_of(loc, code_start);
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
            out
        });
    }
    sites
}

/// The helper of one atomic shape at one static offset: `(addr, operands...,
/// site) -> result`, checking that `addr + offset` does not overflow (an
/// out-of-bounds trap in wasm) and calling the shape's hook.
fn helper(module: &mut Module, hooks: &MemHooks, shape: Shape, offset: u64) -> FunctionId {
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
///
/// With the race detector on (`races`), the helper first tells it of the
/// synchronisation (`load/races.rs`: libc's atomics order its threads):
/// a load acquires its address, anything else releases it.
fn plain_helper(
    module: &mut Module,
    mem: walrus::MemoryId,
    shape: Shape,
    offset: u64,
    races: Option<&InPlaceSync>,
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
    if let Some(r) = races {
        let (hook, width) = match shape {
            Shape::Load { width, .. } => (r.acquire, width),
            Shape::Store { width, .. }
            | Shape::Rmw { width, .. }
            | Shape::Cmpxchg { width, .. } => (r.release, width),
            Shape::Wait { .. } | Shape::Notify => unreachable!("waits and notifies stay hooks"),
        };
        body.local_get(addr)
            .i32_const(offset as u32 as i32)
            .binop(BinaryOp::I32Add)
            .i32_const(width as i32)
            .i32_const(0)
            .call(hook);
    }
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
