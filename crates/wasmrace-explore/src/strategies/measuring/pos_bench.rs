//! The micro benchmark of the POS paper (Yuan, Yang & Gu, CAV 2018, §6.1)
//! as model programs, and an observer that tells executions apart by
//! partial order (Mazurkiewicz trace), to measure how a sampler covers them.
//!
//! **Programs.** `t` threads each run `m` events; every event accesses one of
//! `o` shared objects. How many events access each object is given (the
//! paper's `t = m = o = 4` with `{4,4,4,4}`, *uniform*, or `{2,2,6,6}`,
//! *skewed*), and which event accesses which object is a seeded random
//! shuffle. The *50% read* variants (the paper's Table 2) make a random half
//! of the events reads; the others are writes. `main` spawns the threads and
//! exits; spawns and exits race with no event, so they add interleavings but
//! no partial order.
//!
//! **Partial orders.** [`PartialOrders`] records each execution's events,
//! named `(thread, index in the thread, alternative)` so that names agree
//! across executions, and its happens-before as, for every event, the set of
//! earlier events of other threads it conflicts with (same object, not both
//! reads: `Access::conflicts`). Two executions have the same such sets iff
//! they are the same Mazurkiewicz trace (program order plus the order of
//! every conflicting pair determines the partial order). Under exhaustive
//! [`Dfs`](crate::strategies::Dfs) it also sums, per partial order, the exact
//! probability that [`RandomWalk`](crate::strategies::RandomWalk) runs an execution of
//! it (the product of `1 / enabled threads` and `1 / alternatives` along the
//! schedule), which is how the paper measures random walk.

use crate::model::{Model, ModelBuilder};
use crate::observer::Observer;
use crate::program::StepInfo;
use crate::strategy::{Context, Outcome, Start};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use wasmrace_trace::{Access, Decision, Tid};

/// One generated micro-benchmark program; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroBenchmark {
    /// Threads the program spawns.
    pub threads: usize,
    /// Events per thread.
    pub events: usize,
    /// Events accessing each object; sums to `threads * events`.
    pub accesses: Vec<usize>,
    /// Events that are reads (the others write).
    pub reads: usize,
    /// Seed of the shuffle placing objects and reads.
    pub seed: u64,
}

impl MicroBenchmark {
    /// The paper's uniform configuration: 4 threads x 4 events, objects
    /// accessed {4,4,4,4} times, all writes.
    pub fn uniform(seed: u64) -> Self {
        MicroBenchmark {
            threads: 4,
            events: 4,
            accesses: vec![4, 4, 4, 4],
            reads: 0,
            seed,
        }
    }

    /// The paper's skewed configuration: objects accessed {2,2,6,6} times.
    pub fn skewed(seed: u64) -> Self {
        MicroBenchmark {
            accesses: vec![2, 2, 6, 6],
            ..Self::uniform(seed)
        }
    }

    /// The same program shape with half of the events reads (Table 2).
    pub fn half_reads(self) -> Self {
        MicroBenchmark {
            reads: self.threads * self.events / 2,
            ..self
        }
    }

    /// Each thread's events: `(object, is_read)`.
    pub fn layout(&self) -> Vec<Vec<(usize, bool)>> {
        let total = self.threads * self.events;
        assert_eq!(
            self.accesses.iter().sum::<usize>(),
            total,
            "object access counts must add up to threads x events"
        );
        assert!(self.reads <= total, "more reads than events");
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut objects: Vec<usize> = (0..self.accesses.len())
            .flat_map(|o| std::iter::repeat_n(o, self.accesses[o]))
            .collect();
        objects.shuffle(&mut rng);
        let mut slots: Vec<usize> = (0..total).collect();
        slots.shuffle(&mut rng);
        let reads: BTreeSet<usize> = slots[..self.reads].iter().copied().collect();
        (0..self.threads)
            .map(|t| {
                (0..self.events)
                    .map(|e| {
                        let i = t * self.events + e;
                        (objects[i], reads.contains(&i))
                    })
                    .collect()
            })
            .collect()
    }

    /// The program as a model: `main` spawns thread `i` (`main.{i+1}`) in
    /// order, and exits.
    pub fn model(&self) -> Model {
        let mut b = ModelBuilder::new();
        let vars: Vec<_> = (0..self.accesses.len())
            .map(|o| b.var(&format!("o{o}"), 0))
            .collect();
        let defs: Vec<_> = self
            .layout()
            .into_iter()
            .enumerate()
            .map(|(t, events)| {
                b.thread(&format!("t{t}"), |tb| {
                    for (e, (o, read)) in events.into_iter().enumerate() {
                        if read {
                            tb.read(vars[o], 0);
                        } else {
                            // Distinct values make every write observable.
                            tb.write(vars[o], (t * 100 + e + 1) as i64);
                        }
                    }
                })
            })
            .collect();
        b.main(|tb| {
            for d in defs {
                tb.spawn(d, 0);
            }
        });
        b.build()
            .expect("generated micro benchmarks are well formed")
    }
}

/// An event named the same way in every execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// The thread that ran it.
    pub thread: Tid,
    /// Index of the event among its thread's steps, from 0.
    pub index: u32,
    /// The alternative it ran (the value of a `choose`).
    pub alt: u32,
}

/// The canonical happens-before of an execution: for each event, in
/// `EventId` order, the earlier events of other threads it conflicts with.
pub type HappensBefore = Vec<(EventId, Vec<EventId>)>;

/// What a run of [`PartialOrders`] saw of one partial order.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OrderStats {
    /// Executions with this partial order.
    pub hits: u64,
    /// Probability that one random-walk execution has this partial order,
    /// summed over the executions seen: exact when the observed strategy
    /// enumerates every schedule once (unbounded DFS).
    pub random_walk_probability: f64,
}

/// Groups the executions of an exploration by partial order; see the
/// module documentation.
#[derive(Debug, Default)]
pub struct PartialOrders {
    /// This execution's steps: thread, alternative, accesses.
    steps: Vec<(Tid, u32, Vec<Access>)>,
    /// Random walk's probability of each decision of this execution.
    weights: Vec<f64>,
    orders: BTreeMap<HappensBefore, OrderStats>,
    /// Steps and weights of the states the strategy saved, per id.
    saved: BTreeMap<u64, SavedSteps>,
}

type SavedSteps = (Vec<(Tid, u32, Vec<Access>)>, Vec<f64>);

impl PartialOrders {
    /// An observer that has seen no execution.
    pub fn new() -> Self {
        PartialOrders::default()
    }

    /// Every partial order seen, with its statistics.
    pub fn orders(&self) -> &BTreeMap<HappensBefore, OrderStats> {
        &self.orders
    }

    fn happens_before(&self) -> HappensBefore {
        let mut counts: BTreeMap<Tid, u32> = BTreeMap::new();
        let ids: Vec<EventId> = self
            .steps
            .iter()
            .map(|&(thread, alt, _)| {
                let n = counts.entry(thread).or_insert(0);
                *n += 1;
                EventId {
                    thread,
                    index: *n - 1,
                    alt,
                }
            })
            .collect();
        let mut hb: HappensBefore = (0..self.steps.len())
            .map(|j| {
                let (tj, _, aj) = &self.steps[j];
                let mut before: Vec<EventId> = (0..j)
                    .filter(|&i| {
                        let (ti, _, ai) = &self.steps[i];
                        ti != tj && ai.iter().any(|a| aj.iter().any(|b| a.conflicts(b)))
                    })
                    .map(|i| ids[i])
                    .collect();
                before.sort();
                (ids[j], before)
            })
            .collect();
        hb.sort();
        hb
    }
}

impl Observer for PartialOrders {
    fn begin(&mut self, start: Start, _prefix: &[Decision]) {
        // A resumed execution keeps the prefix it shares with the last one.
        let keep = match start {
            Start::Fresh => 0,
            Start::Resume { prefix_len } => prefix_len,
            Start::Saved { id } => {
                let (steps, weights) = self.saved.remove(&id).unwrap_or_default();
                self.steps = steps;
                self.weights = weights;
                self.steps.len()
            }
        };
        self.steps.truncate(keep);
        self.weights.truncate(keep);
    }
    fn decided(&mut self, ctx: &Context<'_>, d: Decision) {
        self.steps.truncate(ctx.step);
        self.weights.truncate(ctx.step);
        let enabled = ctx.threads.iter().filter(|t| t.pending.enabled).count();
        let alts = ctx.thread(d.tid).map_or(1, |t| t.pending.alts);
        self.weights.push(1.0 / (enabled as f64 * f64::from(alts)));
    }
    fn step(&mut self, step: &StepInfo) {
        self.steps.push((step.tid, step.alt, step.accesses.clone()));
    }
    fn saved(&mut self, id: u64, depth: usize) {
        // The decision about to run has its weight but no step yet.
        self.saved.insert(
            id,
            (self.steps[..depth].to_vec(), self.weights[..depth].to_vec()),
        );
    }
    fn end(&mut self, outcome: &Outcome, _path: &[Decision]) {
        if *outcome == Outcome::Abandoned {
            return;
        }
        let p: f64 = self.weights.iter().product();
        let stats = self.orders.entry(self.happens_before()).or_default();
        stats.hits += 1;
        stats.random_walk_probability += p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::{Config, Explorer};
    use crate::strategies::{Dfs, Pos, PosStar, RandomWalk};
    use crate::strategy::Strategy;

    fn all_orders(bench: &MicroBenchmark) -> PartialOrders {
        let mut po = PartialOrders::new();
        let cfg = Config {
            max_executions: u64::MAX,
            snapshot_every_cost: Some(0),
            ..Config::default()
        };
        let r = Explorer::new(bench.model(), cfg)
            .run_observed(&mut Dfs::unbounded(), &mut po)
            .unwrap();
        assert!(r.exhausted);
        po
    }

    fn covered<S: Strategy>(bench: &MicroBenchmark, mut s: S, budget: u64) -> usize {
        let mut po = PartialOrders::new();
        let cfg = Config {
            max_executions: budget,
            ..Config::default()
        };
        Explorer::new(bench.model(), cfg)
            .run_observed(&mut s, &mut po)
            .unwrap();
        po.orders().len()
    }

    /// 2 threads x 6 events over 3 objects accessed {4,4,4} times (the
    /// uniform configuration scaled down until exhaustive enumeration takes
    /// under a second), all writes, and its 50%-read variant.
    fn small(reads: usize) -> MicroBenchmark {
        MicroBenchmark {
            threads: 2,
            events: 6,
            accesses: vec![4, 4, 4],
            reads,
            seed: 0,
        }
    }

    #[test]
    fn the_generator_follows_the_configuration() {
        for bench in [
            MicroBenchmark::uniform(3),
            MicroBenchmark::skewed(3),
            MicroBenchmark::skewed(3).half_reads(),
        ] {
            let layout = bench.layout();
            assert_eq!(layout.len(), 4);
            assert!(layout.iter().all(|t| t.len() == 4));
            let mut per_object = vec![0; 4];
            for &(o, _) in layout.iter().flatten() {
                per_object[o] += 1;
            }
            per_object.sort();
            let mut want = bench.accesses.clone();
            want.sort();
            assert_eq!(per_object, want);
            let reads = layout.iter().flatten().filter(|e| e.1).count();
            assert_eq!(reads, bench.reads);
            assert_eq!(bench.layout(), layout, "seeded");
        }
        assert_eq!(MicroBenchmark::skewed(3).half_reads().reads, 8);
        assert_ne!(
            MicroBenchmark::uniform(3).layout(),
            MicroBenchmark::uniform(4).layout()
        );
    }

    /// Exhaustive enumeration counts the partial orders and gives random
    /// walk's exact probability of each (they sum to 1); then within the
    /// same budget POS (and POS* on the read variant) covers every partial
    /// order and random walk does not: its rarest orders have probability
    /// 2.4e-4, while POS's hit ratio does not drop that low (§6.1, Table 1).
    /// Not a lucky seed: with seeds 1..=7, POS and POS* covered all 57 (all
    /// 53) within 1500 executions every time, and random walk missed 1 to
    /// 2 orders in 3000 executions for 6 of the 7 seeds.
    #[test]
    fn pos_covers_every_partial_order_where_random_walk_does_not() {
        let budget = 3000;
        for (reads, orders, pos_name) in [(0, 57, "pos"), (6, 53, "pos-star")] {
            let bench = small(reads);
            let all = all_orders(&bench);
            let total: f64 = all
                .orders()
                .values()
                .map(|s| s.random_walk_probability)
                .sum();
            let rarest = all
                .orders()
                .values()
                .map(|s| s.random_walk_probability)
                .fold(1.0, f64::min);
            assert!((total - 1.0).abs() < 1e-9, "{total}");
            assert_eq!(all.orders().len(), orders);
            assert!((rarest - 1.0 / 4096.0).abs() < 1e-12, "{rarest}");
            let pos = if reads == 0 {
                covered(&bench, Pos::new(1), budget)
            } else {
                covered(&bench, PosStar::new(1), budget)
            };
            let rw = covered(&bench, RandomWalk::new(1), budget);
            eprintln!(
                "micro t2 m6 {{4,4,4}} reads {reads}: {orders} partial orders, \
                 random walk's rarest p = {rarest:.2e}; in {budget} executions \
                 {pos_name} covers {pos}, random walk {rw}"
            );
            assert_eq!(pos, orders, "{pos_name} covers every partial order");
            assert!(rw < orders, "random walk misses some: {rw}");
        }
    }
}
