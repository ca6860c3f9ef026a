//! POS, partial order sampling (Yuan, Yang & Gu, "Partial Order Aware
//! Concurrency Sampling", CAV 2018, §4.2 and Algorithm 4): every pending
//! event has a random priority, the enabled event with the highest priority
//! runs, and after it has run every pending event that *races* with it gets
//! a fresh random priority. The reassignment is what sets POS apart from
//! [`BasicPos`](crate::strategies::BasicPos) (fixed priorities, Algorithm 2): an event
//! that lost a race is likely to have a low priority, and without a fresh
//! draw it would also lose the next race on the same object; with one, the
//! order of each race is sampled uniformly on its own.
//!
//! **Events.** The paper's event is `(pid, intr, obj, ind)`: a thread's next
//! operation. Each live thread has exactly one pending event, so priorities
//! are kept per thread and dropped when the thread runs (its next operation
//! is a new event) or when its pending operation changes otherwise (new site
//! or kind). As in Algorithm 4, a priority is drawn on demand when an event
//! is first seen enabled (the paper notes this is equivalent to a priority
//! map fixed in advance, priorities being i.i.d. `U(0,1)`; ours are uniform
//! `u64`s, ties being negligible and broken by creation order).
//!
//! **Races.** `IsRacing(e*, e)` holds when the two events access a common
//! object: the paper's dependence (`e0 ⊥ e1` iff different processes and
//! different objects) without any read/write distinction, with our
//! operations touching sets of objects (any common object counts).
//! Events of the same thread also race, but a thread's event that ran is
//! gone, so only other threads' pending events are reassigned, enabled or
//! not (a disabled one simply gets its fresh priority once enabled).
//! [`PosStar`](crate::strategies::PosStar) is the relaxation of §5 where two reads never
//! race; `Sync` accesses count as writes.
//!
//! **`choose`.** The paper's model has no data nondeterminism: all choice is
//! in which event runs next. A thread whose pending operation has several
//! alternatives is one event (one priority, it touches no object), and once
//! it is picked its value is drawn uniformly from the same stream. Treating
//! each value as an event of its own would make that thread run the max of
//! `n` priorities, i.e. be scheduled earlier the more values it has, which
//! skews the sampling of the orders the paper is about; uniform values are
//! independent of the order and sample each value with probability `1/n`.
//!
//! **Fairness.** Like the paper's implementation (§5, "Fairness
//! Workaround"), all priorities are reset every 1000 `yield` steps, so that
//! a spin loop waiting for a low-priority thread ends soon.
//!
//! **Seeding.** Execution `i` draws from ChaCha8 stream `i` of the seed, so
//! it depends only on `(seed, i)`.
//!
//! On the paper's running example (Fig. 2) POS hits the bug with
//! probability 1/48 and random walk 1/128; the tests reproduce both.

use crate::program::StepInfo;
use crate::strategies::descriptor::{Descriptor, StrategyOptions};
use crate::strategy::{Context, Start, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use wasmrace_trace::{Access, Decision, OpKind, Tid};

/// `pos` in the [registry](crate::strategies::registry).
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "pos",
    about: "Partial-order sampling: priorities of racing events are redrawn",
    takes: &[],
    always: &[],
    defaults: StrategyOptions::NONE,
    refuses: &[],
    build: |_, seed| Box::new(Pos::new(seed)),
    describe: |_, seed| format!("pos, seed {seed}"),
    options_json: |_| serde_json::Map::new(),
};

/// Which of the paper's three algorithms a [`PosEngine`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// Algorithm 2: priorities are never reassigned.
    Basic,
    /// Algorithm 4: events accessing an object the executed event accessed
    /// get fresh priorities.
    Pos,
    /// POS* (§5): as `Pos`, but two reads of an object do not race.
    Star,
}

impl Variant {
    fn races(self, ran: &[Access], pending: &[Access]) -> bool {
        match self {
            Variant::Basic => false,
            Variant::Pos => ran.iter().any(|a| pending.iter().any(|b| a.obj == b.obj)),
            Variant::Star => ran.iter().any(|a| pending.iter().any(|b| a.conflicts(b))),
        }
    }
}

/// The priority of a thread's pending event, and what identifies that event.
#[derive(Clone, Copy, Debug)]
struct Slot {
    priority: u64,
    site: u64,
    op: OpKind,
}

/// `yield` steps between two resets of every priority (§5).
pub(crate) const YIELDS_PER_RESET: u32 = 1000;

/// The priority scheduler shared by [`BasicPos`](crate::strategies::BasicPos), [`Pos`]
/// and [`PosStar`](crate::strategies::PosStar).
#[derive(Clone, Debug)]
pub(crate) struct PosEngine {
    seed: u64,
    variant: Variant,
    rng: ChaCha8Rng,
    slots: BTreeMap<Tid, Slot>,
    /// The step just executed, whose races are reassigned at the next
    /// decision (when the pending events after it are visible).
    /// The thread that ran last (`None` once its races are handled) and
    /// its accesses, in a buffer kept across steps (no allocation per step).
    ran: Option<Tid>,
    ran_accesses: Vec<Access>,
    yields: u32,
}

impl PosEngine {
    pub(crate) fn new(seed: u64, variant: Variant) -> Self {
        PosEngine {
            seed,
            variant,
            rng: ChaCha8Rng::seed_from_u64(seed),
            slots: BTreeMap::new(),
            ran: None,
            ran_accesses: Vec::new(),
            yields: 0,
        }
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn begin(&mut self, executions: u64) -> Option<Start> {
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(executions);
        self.slots.clear();
        self.ran = None;
        self.yields = 0;
        Some(Start::Fresh)
    }

    pub(crate) fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        // Algorithm 4, lines 14-18: the events racing with the one just
        // executed lose their priority.
        if let Some(tid) = self.ran.take() {
            for t in ctx.threads {
                if t.tid != tid && self.variant.races(&self.ran_accesses, &t.pending.accesses) {
                    self.slots.remove(&t.tid);
                }
            }
        }
        // Exited threads, and threads whose pending event is not the one
        // that got the priority, hold none.
        self.slots.retain(|tid, s| {
            ctx.thread(*tid)
                .is_some_and(|t| t.pending.site == s.site && t.pending.op == s.op)
        });
        // Lines 6-9: enabled events without a priority get a fresh one, in
        // creation order so the draws are deterministic.
        let mut best: Option<(u64, Tid)> = None;
        for t in ctx.threads.iter().filter(|t| t.pending.enabled) {
            let slot = match self.slots.get(&t.tid) {
                Some(s) => *s,
                None => {
                    let s = Slot {
                        priority: self.rng.random(),
                        site: t.pending.site,
                        op: t.pending.op,
                    };
                    self.slots.insert(t.tid, s);
                    s
                }
            };
            if best.is_none_or(|(p, _)| slot.priority > p) {
                best = Some((slot.priority, t.tid));
            }
        }
        let (_, tid) = best?;
        let alts = ctx.thread(tid)?.pending.alts;
        let alt = if alts > 1 {
            self.rng.random_range(0..alts)
        } else {
            0
        };
        Some(Decision::new(tid, alt))
    }

    pub(crate) fn observe(&mut self, step: &StepInfo) {
        // The executed event is consumed: its thread's next one is new.
        self.slots.remove(&step.tid);
        self.ran = Some(step.tid);
        self.ran_accesses.clone_from(&step.accesses);
        if step.op == Some(OpKind::Yield) {
            self.yields += 1;
            if self.yields.is_multiple_of(YIELDS_PER_RESET) {
                self.slots.clear();
            }
        }
    }
}

/// Declares one of the three POS strategies: a named type around a
/// [`PosEngine`] of the given variant, delegating the `Strategy` trait to it.
macro_rules! pos_strategy {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $variant:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $ty(PosEngine);

        impl $ty {
            /// The strategy; execution `i` draws from stream `i` of `seed`.
            pub fn new(seed: u64) -> Self {
                $ty(PosEngine::new(seed, $variant))
            }
        }

        impl Strategy for $ty {
            fn name(&self) -> &str {
                $name
            }
            fn begin(&mut self, executions: u64) -> Option<Start> {
                self.0.begin(executions)
            }
            fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
                self.0.decide(ctx)
            }
            fn observe(&mut self, step: &StepInfo) {
                self.0.observe(step)
            }
            // `begin` draws execution `i` from stream `i` and clears every
            // priority: nothing is carried over between executions.
            fn profile(&self) -> $crate::Profile {
                $crate::Profile {
                    split: $crate::explorer::Split::ByExecution,
                    ..$crate::Profile::default()
                }
            }
            fn standing(&self) -> $crate::Standing<'_> {
                $crate::Standing {
                    seed: self.0.seed(),
                    ..$crate::Standing::default()
                }
            }
        }
    };
}
pub(crate) use pos_strategy;

pos_strategy!(
    /// POS (Algorithm 4); see the module documentation.
    Pos,
    "pos",
    Variant::Pos
);

/// Shared test support for the three POS strategies: sampling a model and
/// the paper's running example.
#[cfg(test)]
pub(crate) mod testing {
    use crate::explorer::{Config, Explorer, Report};
    use crate::model::{reg, Model, ModelBuilder};
    use crate::strategies::{Recording, Replay};
    use crate::strategy::Strategy;

    /// Runs `n` executions of `strategy` on `model`, not stopping at bugs.
    pub(crate) fn sample(model: Model, strategy: &mut dyn Strategy, n: u64) -> Report {
        let cfg = Config {
            max_executions: n,
            stop_on_first_bug: false,
            ..Config::default()
        };
        Explorer::new(model, cfg).run(strategy).unwrap()
    }

    /// [`sample`] with the executions recorded.
    pub(crate) fn sample_rec<S: Strategy>(model: Model, rec: &mut Recording<S>, n: u64) -> Report {
        let cfg = Config {
            max_executions: n,
            stop_on_first_bug: false,
            ..Config::default()
        };
        rec.run(&mut Explorer::new(model, cfg)).unwrap()
    }

    /// The running example of the paper (Fig. 2), as reconstructed in
    /// `fixtures/guests/pos_example`: `main` plays thread A and spawns B
    /// first. Its assertion at A4 fails only on the total order
    /// `B1 A1 B2 B3 A2 A3 B4 B5 B6 A4`. Our extra steps do not change the
    /// probabilities: the spawn is the only enabled step at the start (no
    /// choice; it races with nothing B or A do), B's exit can only come
    /// after B6 and whether it runs before A4 or not, A4 fails, and A's join
    /// comes after A4.
    pub(crate) fn running_example() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let y = b.var("y", 0);
        let z = b.var("z", 0);
        let tb = b.thread("B", |t| {
            t.write(x, 1) // B1: x = 1
                .read(x, 0) // B2: a = x
                .write(y, reg(0)) // B3: y = a
                .recv(1) // B4: wait(w)
                .read(y, 2) // B5: b = y
                .write(z, reg(2)); // B6: z = b
        });
        b.main(|t| {
            t.spawn(tb, 0)
                .fetch_add(x, 1, 1) // A1: x++
                .fetch_add(y, 1, 1) // A2: y++
                .send(reg(0), 1) // A3: signal(w)
                .read(z, 2) // A4: assert(z != 3)
                .assert(reg(2).not_equals(3), "A4: z == 3")
                .join(reg(0));
        });
        b.build().unwrap()
    }

    /// Checks that `n` executions hit the running example's bug with
    /// probability `p`, within 4 binomial standard deviations, and returns
    /// the measured rate.
    pub(crate) fn hits_with_probability(strategy: &mut dyn Strategy, n: u64, p: f64) -> f64 {
        let report = sample(running_example(), strategy, n);
        let hits = report.failing_executions as f64;
        let mean = n as f64 * p;
        let sigma = (mean * (1.0 - p)).sqrt();
        let rate = hits / n as f64;
        eprintln!(
            "{}: {hits}/{n} = 1/{:.1}, expected 1/{:.1} (+-4 sigma: {:.0}..{:.0} hits)",
            strategy.name(),
            1.0 / rate,
            1.0 / p,
            mean - 4.0 * sigma,
            mean + 4.0 * sigma
        );
        assert!(
            (hits - mean).abs() <= 4.0 * sigma,
            "{}: {hits} hits in {n}, expected {mean:.1} +- {:.1}",
            strategy.name(),
            4.0 * sigma
        );
        rate
    }

    /// The first bug the strategy finds replays with `Replay`.
    pub(crate) fn found_bug_replays(strategy: &mut dyn Strategy) {
        let cfg = Config {
            max_executions: 5000,
            ..Config::default()
        };
        let report = Explorer::new(running_example(), cfg.clone())
            .run(strategy)
            .unwrap();
        let bug = report.first_bug().expect("finds the running example's bug");
        let mut replay = Replay::new(bug.schedule.clone());
        let again = Explorer::new(running_example(), cfg)
            .run(&mut replay)
            .unwrap();
        assert!(replay.reproduced(), "{:?}", replay.divergence());
        assert_eq!(again.first_bug().unwrap().failure, bug.failure);
        assert_eq!(again.first_bug().unwrap().schedule, bug.schedule);
    }

    /// The schedules of 300 executions with strategy `make(seed)`.
    pub(crate) fn schedules<S: Strategy>(
        make: impl Fn(u64) -> S,
        seed: u64,
    ) -> Vec<Vec<wasmrace_trace::Decision>> {
        let mut rec = Recording::new(make(seed));
        sample_rec(running_example(), &mut rec, 300);
        rec.executions()
            .iter()
            .map(|e| e.decisions.clone())
            .collect()
    }

    /// Same seed, same schedules; another seed, others; and not all equal.
    pub(crate) fn deterministic<S: Strategy>(make: impl Fn(u64) -> S) {
        let a = schedules(&make, 4);
        assert_eq!(a, schedules(&make, 4));
        assert_ne!(a, schedules(&make, 5));
        assert!(a.iter().any(|s| *s != a[0]));
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::model::{reg, ModelBuilder};
    use crate::program::{Pending, ThreadView};
    use crate::strategies::RandomWalk;
    use crate::strategies::{Dfs, Recording};
    use crate::Explorer;
    use wasmrace_trace::Oid;

    #[test]
    fn pos_hits_the_running_example_with_probability_1_48() {
        // 1/2 * 1/2 * 1/2 * 2/3 * 1/2 * 2/3 * 3/4 = 1/48 (see the paper,
        // §2): mean 417 hits, sigma 20.2.
        hits_with_probability(&mut Pos::new(1), 20_000, 1.0 / 48.0);
    }

    #[test]
    fn random_walk_hits_the_running_example_with_probability_1_128() {
        // Seven binary choices (§2): mean 156 hits, sigma 12.4.
        hits_with_probability(&mut RandomWalk::new(1), 20_000, 1.0 / 128.0);
    }

    #[test]
    fn the_running_example_fails_on_exactly_one_order_of_its_statements() {
        // Exhaustively: the failing schedules differ only in where B's exit
        // step goes (before or after A4), so the ten statements have one
        // failing total order, as the paper says.
        let cfg = crate::Config {
            stop_on_first_bug: false,
            ..crate::Config::default()
        };
        let mut rec = Recording::new(Dfs::unbounded());
        let report = rec.run(&mut Explorer::new(running_example(), cfg)).unwrap();
        assert!(report.exhausted);
        let failing: Vec<_> = report.bugs.iter().map(|b| b.schedule.len()).collect();
        assert_eq!(failing.len(), 2, "{failing:?}");
    }

    #[test]
    fn pos_replays_and_is_deterministic() {
        found_bug_replays(&mut Pos::new(3));
        deterministic(Pos::new);
    }

    fn view(tid: u64, obj: u64, write: bool) -> ThreadView {
        let a = if write {
            Access::write(Oid(obj))
        } else {
            Access::read(Oid(obj))
        };
        ThreadView {
            tid: Tid(tid),
            pending: Pending {
                op: if write {
                    OpKind::CellSet
                } else {
                    OpKind::CellGet
                },
                enabled: true,
                alts: 1,
                accesses: vec![a],
                site: tid * 100 + obj,
            },
        }
    }

    fn priorities(e: &PosEngine) -> Vec<(u64, u64)> {
        e.slots.iter().map(|(t, s)| (t.0, s.priority)).collect()
    }

    #[test]
    fn only_events_racing_with_the_executed_one_are_reassigned() {
        // Thread 1 runs a write of object 9; thread 2 reads 9, thread 3
        // reads 8. Thread 4 reads 9 too, and the executed event is a read.
        for (variant, ran_write, reassigned) in [
            (Variant::Basic, true, vec![]),
            (Variant::Pos, true, vec![2, 4]),
            (Variant::Star, true, vec![2, 4]),
            (Variant::Pos, false, vec![2, 4]),
            (Variant::Star, false, vec![]),
        ] {
            let mut e = PosEngine::new(8, variant);
            e.begin(0);
            let ts = [
                view(1, 9, ran_write),
                view(2, 9, false),
                view(3, 8, false),
                view(4, 9, false),
            ];
            let ctx = |ts| Context {
                step: 0,
                threads: ts,
                hidden: 0,
                last: None,
                prefix: &[],
            };
            e.decide(&ctx(&ts)).unwrap();
            let before = priorities(&e);
            e.observe(&StepInfo {
                tid: Tid(1),
                accesses: ts[0].pending.accesses.clone(),
                ..StepInfo::default()
            });
            // Thread 1 now pends on another event.
            let mut after_ts = ts.clone();
            after_ts[0].pending.site += 1;
            e.decide(&ctx(&after_ts)).unwrap();
            let after = priorities(&e);
            let changed: Vec<u64> = before
                .iter()
                .zip(&after)
                .filter(|(b, a)| b.1 != a.1)
                .map(|(b, _)| b.0)
                .filter(|&t| t != 1)
                .collect();
            assert_eq!(changed, reassigned, "{variant:?} ran_write={ran_write}");
            assert_ne!(before[0].1, after[0].1, "the executed thread's next event");
        }
    }

    #[test]
    fn choose_values_are_uniform_and_do_not_favour_their_thread() {
        // main spawns a worker that writes x; main then does choose(8). With
        // one priority per event the worker's write and the choose are
        // equally likely to go first, whatever the number of values.
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let w = b.thread("w", |t| {
            t.write(x, 1);
        });
        b.main(|t| {
            t.spawn(w, 0)
                .choose(8, 1)
                .read(x, 2)
                .when(reg(2).equals(0), |t| {
                    t.when(reg(1).equals(7), |t| {
                        t.fail("choose won and picked 7");
                    });
                });
        });
        // P(choose before the write) = 1/2, then P(x still 0 at the read)
        // = 1/2 (a fresh race), then 1/8: 1/32; mean 125 of 4000, sigma 11.
        let r = sample(b.build().unwrap(), &mut Pos::new(6), 4000);
        assert!((80..170).contains(&r.failing_executions), "{r:?}");
    }

    #[test]
    fn spin_loops_on_yield_end() {
        // main spins on `yield` until the setter has run: each spin step is
        // a new event with a fresh priority, so the setter soon wins.
        let mut b = ModelBuilder::new();
        let flag = b.var("flag", 0);
        let setter = b.thread("setter", |t| {
            t.write(flag, 1);
        });
        b.main(|t| {
            t.spawn(setter, 0)
                .label("spin")
                .read(flag, 1)
                .yield_now()
                .jump_if(reg(1).equals(0), "spin");
        });
        let r = sample(b.build().unwrap(), &mut Pos::new(2), 200);
        assert_eq!(r.failing_executions, 0, "every execution ends");
    }
}
