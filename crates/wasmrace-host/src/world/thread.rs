//! Threads' own operations: the start placeholder, `spawn`, `join`,
//! `yield_now`, the exit step, `choose` and `phase`. The thread table itself
//! is `World`'s (`mod.rs`).

use super::registry::name_slot;
use super::{fmt_name, Cx, Kind, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid, Tid};

pub(super) struct Ops;

impl Kind for Ops {
    fn enabled(w: &World, _i: usize, op: &Op) -> bool {
        match op {
            Op::Join { target } => !w.alive(Tid(*target)),
            _ => true,
        }
    }

    fn alts(_w: &World, _i: usize, op: &Op) -> u32 {
        match op {
            Op::Choose { n } => (*n).max(1),
            _ => 1,
        }
    }

    fn accesses(w: &World, i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::Join { target } => out.push(Access::sync(Oid::liveness(Tid(*target)))),
            Op::Exit => {
                let t = &w.threads[i];
                out.push(Access::write(Oid::liveness(t.tid)));
                out.push(Access::write(name_slot(t.tid)));
                if let Some(n) = &t.name {
                    out.push(Access::write(Oid::name(n)));
                }
            }
            _ => {}
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::Join { target } => {
                format!("thread `{}` to exit (join)", w.thread_name(Tid(*target)))
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::Join { target } => Some(format!("thread {}", w.thread_name(Tid(*target)))),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::Spawn { .. } => {
                let child = cx.spawned.expect("spawn executed with a child");
                if cx.tracing {
                    cx.detail = format!("-> {}", w.thread_name(child));
                }
                Outcome::Return(Ret::val(child.0))
            }
            Op::Join { target } => {
                if w.thread_index(Tid(target)).is_none() {
                    w.misuse(i, format!("join on unknown thread id `{target:#x}`"))
                } else {
                    Outcome::Return(Ret::unit())
                }
            }
            Op::Phase { name } => {
                if cx.tracing {
                    cx.detail = fmt_name(&name);
                }
                Outcome::Return(Ret::unit())
            }
            Op::Exit => {
                let t = &mut w.threads[i];
                t.exited = true;
                if let Some(n) = t.name.take() {
                    w.names.remove(&n);
                }
                Outcome::Exited
            }
            Op::Choose { n } => {
                if n == 0 {
                    w.misuse(i, "choose(0): there is no value in 0..0".into())
                } else {
                    if cx.tracing {
                        cx.detail = format!("{n} -> {}", cx.alt);
                    }
                    Outcome::Return(Ret::val(u64::from(cx.alt)))
                }
            }
            // `Start`, `Yield`: nothing to do.
            _ => Outcome::Return(Ret::unit()),
        }
    }
}
