//! Barriers: `barrier.wait` arrives; the `n`-th arrival of a generation
//! releases it and returns as its leader (`true`, like std's
//! `BarrierWaitResult::is_leader`), the others leave with `barrier.leave`
//! pending, enabled once their generation was released, and return
//! `false`. Reusable: the next arrivals form the next generation; with
//! `n <= 1` every arrival leads at once. Each generation is its own object
//! id, which arrivals sync on and departures share, so that a race
//! detector orders a generation's arrivals before its departures.

use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid};

/// Id domain of barrier generations.
const GENERATION_TAG: u64 = 7;

/// The object id of generation `generation` of barrier `h`.
fn generation_id(h: u64, generation: u32) -> Oid {
    Oid::derive(GENERATION_TAG, h, u64::from(generation))
}

/// A barrier: its size, how many threads have arrived in the current
/// generation, and how many generations were released.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Barrier {
    pub n: u32,
    pub arrived: u32,
    pub generation: u32,
}

impl ObjectState for Barrier {
    fn describe(&self, _w: &World, _h: u64) -> String {
        format!(
            "{} of {} arrived, {} generation{} released",
            self.arrived,
            self.n,
            self.generation,
            if self.generation == 1 { "" } else { "s" }
        )
    }

    fn owns(&self, h: u64, id: Oid) -> bool {
        // Late leavers may still share a generation a few back.
        (self.generation.saturating_sub(3)..=self.generation).any(|g| generation_id(h, g) == id)
    }
}

pub(super) struct Ops;

impl Kind for Ops {
    fn enabled(w: &World, _i: usize, op: &Op) -> bool {
        match op {
            Op::BarrierLeave { h, generation } => w
                .object::<Barrier>(*h)
                .is_none_or(|b| b.generation > *generation),
            _ => true,
        }
    }

    fn accesses(w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            // The current generation: who arrives last decides the leader.
            Op::BarrierWait { h } => {
                let g = w.object::<Barrier>(*h).map_or(0, |b| b.generation);
                out.push(Access::sync(generation_id(*h, g)));
            }
            Op::BarrierLeave { h, generation } => {
                out.push(Access::shared_sync(generation_id(*h, *generation)))
            }
            _ => {}
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::BarrierLeave { h, .. } => {
                let (arrived, n) = w.object::<Barrier>(*h).map_or((0, 0), |b| (b.arrived, b.n));
                format!(
                    "`{}` to be released ({arrived} of {n} threads arrived)",
                    w.object_name(*h)
                )
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::BarrierWait { h } | Op::BarrierLeave { h, .. } => Some(w.object_name(*h)),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::BarrierNew { n } => {
                let b = Barrier {
                    n,
                    arrived: 0,
                    generation: 0,
                };
                let h = w.new_object(i, Object::Barrier(b));
                if cx.tracing {
                    cx.detail = format!("{n} -> {}", w.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::BarrierWait { h } => arrive(w, i, h, cx),
            Op::BarrierLeave { .. } => Outcome::Return(Ret::val(0)),
            _ => unreachable!("not a barrier operation"),
        }
    }
}

fn arrive(w: &mut World, i: usize, h: u64, cx: &mut Cx<'_>) -> Outcome {
    let Some(b) = w.object_mut::<Barrier>(h) else {
        return w.misuse(
            i,
            format!(
                "barrier.wait on `{}`, which is not a barrier",
                w.object_name(h)
            ),
        );
    };
    if b.arrived + 1 >= b.n {
        b.arrived = 0;
        b.generation += 1;
        if cx.tracing {
            cx.detail = "releases (leader)".into();
        }
        return Outcome::Return(Ret::val(1));
    }
    b.arrived += 1;
    let generation = b.generation;
    if cx.tracing {
        cx.detail = format!("{} of {} arrived", b.arrived, b.n);
    }
    w.threads[i].pending = Op::BarrierLeave { h, generation };
    Outcome::Continue
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn the_last_arrival_leads_and_the_barrier_is_reusable() {
        let mut w = world2();
        w.spawn_child(0, 8, 2, 0);
        let b = ret(run(&mut w, 0, Op::BarrierNew { n: 3 })).val as u64;
        for generation in 0..2 {
            assert!(matches!(
                run(&mut w, 1, Op::BarrierWait { h: b }),
                Outcome::Continue
            ));
            assert!(!w.enabled(1));
            assert!(w.waits_for(1).contains("1 of 3"), "{}", w.waits_for(1));
            assert!(matches!(
                run(&mut w, 2, Op::BarrierWait { h: b }),
                Outcome::Continue
            ));
            assert!(!w.enabled(1) && !w.enabled(2));
            assert_eq!(
                ret(run(&mut w, 0, Op::BarrierWait { h: b })).val,
                1,
                "leader"
            );
            assert!(
                w.enabled(1) && w.enabled(2),
                "generation {generation} released"
            );
            for i in [1, 2] {
                let r = w.execute(i, 0, None, false, &mut Vec::new()).outcome;
                assert_eq!(ret(r).val, 0, "not the leader");
            }
        }
    }

    #[test]
    fn zero_and_one_never_block() {
        let mut w = world2();
        for n in [0, 1] {
            let b = ret(run(&mut w, 0, Op::BarrierNew { n })).val as u64;
            assert_eq!(ret(run(&mut w, 0, Op::BarrierWait { h: b })).val, 1);
            assert_eq!(ret(run(&mut w, 0, Op::BarrierWait { h: b })).val, 1);
        }
    }

    #[test]
    fn arrivals_conflict_departures_do_not() {
        let mut w = world2();
        let b = ret(run(&mut w, 0, Op::BarrierNew { n: 3 })).val as u64;
        let (mut x, mut y) = (vec![], vec![]);
        w.threads[0].pending = Op::BarrierWait { h: b };
        w.threads[1].pending = Op::BarrierWait { h: b };
        w.accesses(0, &mut x);
        w.accesses(1, &mut y);
        assert!(x[0].conflicts(&y[0]), "who arrives last leads");
        w.threads[0].pending = Op::BarrierLeave {
            h: b,
            generation: 0,
        };
        w.threads[1].pending = Op::BarrierLeave {
            h: b,
            generation: 0,
        };
        w.accesses(0, &mut x);
        w.accesses(1, &mut y);
        assert!(!x[0].conflicts(&y[0]));
    }
}
