//! Atomics: a host-held `u64` with load, store, swap, fetch-add and
//! compare-exchange (sequentially consistent: one operation per step). A
//! failed compare-exchange only reads, which its accesses say after it ran.

use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid};

/// An atomic's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Atomic(pub u64);

impl ObjectState for Atomic {
    fn describe(&self, _w: &World, _h: u64) -> String {
        format!("value = {}", self.0)
    }
}

pub(super) struct Ops;

/// The handle an atomic operation works on (`None` for `atomic.new`).
fn handle(op: &Op) -> Option<u64> {
    match op {
        Op::AtomicLoad { h }
        | Op::AtomicStore { h, .. }
        | Op::AtomicSwap { h, .. }
        | Op::AtomicFetchAdd { h, .. }
        | Op::AtomicCas { h, .. } => Some(*h),
        _ => None,
    }
}

impl Kind for Ops {
    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::AtomicLoad { h } => out.push(Access::read(Oid(*h))),
            op => out.extend(handle(op).map(|h| Access::write(Oid(h)))),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        handle(op).map(|h| w.object_name(h))
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        if let Op::AtomicNew { init } = op {
            let h = w.new_object(i, Object::Atomic(Atomic(init)));
            if cx.tracing {
                cx.detail = format!("{init} -> {}", w.object_name(h));
            }
            return Outcome::Return(Ret::val(h));
        }
        let h = handle(&op).expect("an atomic operation");
        let Some(Atomic(x)) = w.object_mut::<Atomic>(h) else {
            let name = op.kind().name();
            return w.misuse(
                i,
                format!("{name} on `{}`, which is not an atomic", w.object_name(h)),
            );
        };
        let old = *x;
        let tracing = cx.tracing;
        // Details are formatted only when tracing (the step path is hot).
        let mut detail = |d: &dyn Fn() -> String| {
            if tracing {
                cx.detail = d();
            }
        };
        let ret = match op {
            Op::AtomicLoad { .. } => {
                detail(&|| format!("-> {old}"));
                Ret::val(old)
            }
            Op::AtomicStore { v, .. } => {
                *x = v;
                detail(&|| format!("{v}"));
                Ret::unit()
            }
            Op::AtomicSwap { v, .. } => {
                *x = v;
                detail(&|| format!("{v} -> {old}"));
                Ret::val(old)
            }
            Op::AtomicFetchAdd { v, .. } => {
                *x = old.wrapping_add(v);
                detail(&|| format!("{v} -> {old}"));
                Ret::val(old)
            }
            Op::AtomicCas { current, new, .. } => {
                if old == current {
                    *x = new;
                    detail(&|| format!("{current} => {new}: ok"));
                } else {
                    detail(&|| format!("{current} => {new}: failed, found {old}"));
                    // A failed compare-exchange only reads.
                    cx.accesses.clear();
                    cx.accesses.push(Access::read(Oid(h)));
                }
                Ret::val(old)
            }
            _ => unreachable!("not an atomic operation"),
        };
        Outcome::Return(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn failed_cas_is_a_read() {
        let mut w = world2();
        let a = ret(run(&mut w, 0, Op::AtomicNew { init: 5 })).val as u64;
        w.threads[0].pending = Op::AtomicCas {
            h: a,
            current: 1,
            new: 2,
        };
        let mut acc = Vec::new();
        let e = w.execute(0, 0, None, false, &mut acc);
        assert_eq!(acc, vec![Access::read(Oid(a))]);
        assert_eq!(ret(e.outcome).val, 5);
    }
}
