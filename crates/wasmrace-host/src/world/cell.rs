//! Cells: a host-held `u64` read with `cell.get` and written with
//! `cell.set`; the plain shared variable whose races tests look for.

use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid};

/// A cell's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cell(pub u64);

impl ObjectState for Cell {
    fn describe(&self, _w: &World, _h: u64) -> String {
        format!("value = {}", self.0)
    }
}

pub(super) struct Ops;

impl Kind for Ops {
    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::CellGet { h } => out.push(Access::read(Oid(*h))),
            Op::CellSet { h, .. } => out.push(Access::write(Oid(*h))),
            _ => {}
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::CellGet { h } | Op::CellSet { h, .. } => Some(w.object_name(*h)),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::CellNew { init } => {
                let h = w.new_object(i, Object::Cell(Cell(init)));
                if cx.tracing {
                    cx.detail = format!("{init} -> {}", w.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::CellGet { h } => match w.object::<Cell>(h) {
                Some(&Cell(v)) => {
                    if cx.tracing {
                        cx.detail = format!("-> {v}");
                    }
                    Outcome::Return(Ret::val(v))
                }
                None => not_a_cell(w, i, "cell.get", h),
            },
            Op::CellSet { h, v } => match w.object_mut::<Cell>(h) {
                Some(c) => {
                    c.0 = v;
                    if cx.tracing {
                        cx.detail = format!("{v}");
                    }
                    Outcome::Return(Ret::unit())
                }
                None => not_a_cell(w, i, "cell.set", h),
            },
            _ => unreachable!("not a cell operation"),
        }
    }
}

fn not_a_cell(w: &World, i: usize, what: &str, h: u64) -> Outcome {
    w.misuse(
        i,
        format!("{what} on `{}`, which is not a cell", w.object_name(h)),
    )
}
