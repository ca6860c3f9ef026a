//! An observer that measures what a strategy does, for `wasmrace bench`
//! (the explorer runs it beside any strategy): executions, failing executions, the first failing one and when
//! it ended, and the distinct partial orders (Mazurkiewicz traces) covered,
//! each remembered as a 128-bit canonical hash instead of the whole
//! happens-before relation that [`PartialOrders`](crate::strategies::PartialOrders)
//! keeps.
//!
//! **The canonical hash.** Events are named as in `PartialOrders`:
//! `(thread, index in the thread, alternative)`, the same in every
//! execution. Two executions are the same Mazurkiewicz trace iff they have
//! the same events and order every conflicting pair the same way. So the
//! hash covers, per thread in `Tid` order, the alternatives of its events
//! (which fixes the set of events), then, per object in `Oid` order, the
//! sequence of events that accessed it, where each maximal run of
//! consecutive reads is sorted (reads commute; a write orders itself against
//! everything else on the object). An event touching an object several times
//! counts as one read only if every one of its accesses to it is a read.
//! Sorting the accesses costs O(n log n) for n accesses, against
//! `PartialOrders`' O(n²) pairs; the two count the same orders (tested).
//! The one difference: the hash also tells an event that read an object
//! from the same event that wrote it, which the conflict sets alone cannot
//! when no other thread touched the object.
//!
//! **Resumed executions.** An execution resumed after a prefix shows the
//! observer only the new steps; it keeps the previous execution's steps and cuts
//! them to the prefix, as `PartialOrders` does, so the hash always covers the
//! whole execution. States the strategy saves (`Start::Saved`) keep their
//! history as a chain of shared segments, each holding the steps since the
//! previous save of the same execution: SES saves dozens of states per
//! execution, and a full copy each made this measure, not the strategy, the
//! bench's largest memory user (0.5 GB of 0.85 on `world_hello_100`).
//!
//! The clock is read only to time the first failure, never to decide.

use crate::observer::Observer;
use crate::program::StepInfo;
use crate::strategy::{Context, Outcome, Start};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmrace_trace::{Decision, Oid, Tid};

/// One step of the current execution: who ran it, which alternative, and
/// where its accesses end in the flat access list.
#[derive(Clone, Copy, Debug)]
struct StepRec {
    tid: Tid,
    alt: u32,
    accesses_end: usize,
}

/// The steps and accesses recorded since the previous segment of the chain,
/// and the totals up to this segment's end.
#[derive(Debug)]
struct Segment {
    parent: Option<Arc<Segment>>,
    steps: Vec<StepRec>,
    accesses: Vec<(Oid, bool)>,
    steps_len: usize,
    accesses_len: usize,
}

impl Segment {
    /// The whole history the chain ending here holds.
    fn history(&self) -> (Vec<StepRec>, Vec<(Oid, bool)>) {
        let mut chain = Vec::new();
        let mut at = Some(self);
        while let Some(seg) = at {
            chain.push(seg);
            at = seg.parent.as_deref();
        }
        let mut steps = Vec::with_capacity(self.steps_len);
        let mut accesses = Vec::with_capacity(self.accesses_len);
        for seg in chain.iter().rev() {
            steps.extend_from_slice(&seg.steps);
            accesses.extend_from_slice(&seg.accesses);
        }
        (steps, accesses)
    }
}

/// Measures an exploration; see the module documentation.
#[derive(Debug)]
pub struct Metrics {
    steps: Vec<StepRec>,
    /// Every access of the current execution's steps, in step order:
    /// object and whether it was shared (a read or a shared sync, which
    /// commute with each other: `AccessKind::is_shared`).
    accesses: Vec<(Oid, bool)>,
    orders: BTreeSet<u128>,
    executions: u64,
    failing: u64,
    abandoned: u64,
    first_failure: Option<u64>,
    first_failure_after: Option<Duration>,
    started: Instant,
    last_order: Option<u128>,
    /// The history of the states the strategy saved, per id, to hash
    /// whole executions after a `Start::Saved`.
    saved: BTreeMap<u64, Arc<Segment>>,
    /// The chain that holds a prefix of the current history (the last save
    /// of this execution, or the saved state it started from).
    frozen: Option<Arc<Segment>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A new measure; the time to the first failure counts from here.
    pub fn new() -> Self {
        Metrics {
            steps: Vec::new(),
            accesses: Vec::new(),
            orders: BTreeSet::new(),
            executions: 0,
            failing: 0,
            abandoned: 0,
            first_failure: None,
            first_failure_after: None,
            started: Instant::now(),
            last_order: None,
            saved: BTreeMap::new(),
            frozen: None,
        }
    }

    /// Executions that ended (abandoned ones included).
    pub fn executions(&self) -> u64 {
        self.executions
    }

    /// Executions that failed.
    pub fn failing_executions(&self) -> u64 {
        self.failing
    }

    /// Executions the strategy abandoned; they have no partial order.
    pub fn abandoned_executions(&self) -> u64 {
        self.abandoned
    }

    /// 1-based index of the first failing execution.
    pub fn first_failure(&self) -> Option<u64> {
        self.first_failure
    }

    /// Wall-clock time from [`Metrics::new`] to the end of the first failing
    /// execution.
    pub fn first_failure_after(&self) -> Option<Duration> {
        self.first_failure_after
    }

    /// Distinct partial orders among the executions that were not abandoned.
    pub fn distinct_orders(&self) -> usize {
        self.orders.len()
    }

    /// The canonical hashes of those partial orders.
    pub fn order_hashes(&self) -> &BTreeSet<u128> {
        &self.orders
    }

    /// The canonical hash of the last execution that was not abandoned.
    pub fn last_order(&self) -> Option<u128> {
        self.last_order
    }

    fn truncate(&mut self, len: usize) {
        if len < self.steps.len() {
            self.steps.truncate(len);
            let end = self.steps.last().map_or(0, |s| s.accesses_end);
            self.accesses.truncate(end);
        }
        // The chain must stay a prefix of the history; an ancestor may
        // still be one, but dropping it costs only one longer segment.
        if self.frozen.as_ref().is_some_and(|f| f.steps_len > len) {
            self.frozen = None;
        }
    }

    /// The canonical hash of the current execution.
    fn order_hash(&self) -> u128 {
        // Name the events: index in their thread, and each thread's
        // alternatives in order (that list fixes the set of events).
        let mut per_thread: BTreeMap<Tid, Vec<u32>> = BTreeMap::new();
        let mut index: Vec<u32> = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let alts = per_thread.entry(s.tid).or_default();
            index.push(alts.len() as u32);
            alts.push(s.alt);
        }
        // One entry per (event, object): read only if every access of the
        // event to the object is a read.
        let mut items: Vec<(Oid, u32, bool)> = Vec::with_capacity(self.accesses.len());
        let mut from = 0;
        for (pos, s) in self.steps.iter().enumerate() {
            let mine = &self.accesses[from..s.accesses_end];
            from = s.accesses_end;
            let first = items.len();
            for &(obj, read) in mine {
                match items[first..].iter_mut().find(|(o, _, _)| *o == obj) {
                    Some(item) => item.2 &= read,
                    None => items.push((obj, pos as u32, read)),
                }
            }
        }
        items.sort_unstable_by_key(|&(obj, pos, _)| (obj, pos));

        let mut h = blake3::Hasher::new();
        h.update(b"wasmrace partial order v1");
        h.update(&(per_thread.len() as u64).to_le_bytes());
        for (tid, alts) in &per_thread {
            h.update(&tid.0.to_le_bytes());
            h.update(&(alts.len() as u64).to_le_bytes());
            for a in alts {
                h.update(&a.to_le_bytes());
            }
        }
        let event = |pos: u32| -> [u8; 12] {
            let mut b = [0u8; 12];
            b[..8].copy_from_slice(&self.steps[pos as usize].tid.0.to_le_bytes());
            b[8..].copy_from_slice(&index[pos as usize].to_le_bytes());
            b
        };
        let mut reads: Vec<[u8; 12]> = Vec::new();
        let flush = |h: &mut blake3::Hasher, reads: &mut Vec<[u8; 12]>| {
            if !reads.is_empty() {
                reads.sort_unstable();
                h.update(b"R");
                h.update(&(reads.len() as u64).to_le_bytes());
                for r in reads.iter() {
                    h.update(r);
                }
                reads.clear();
            }
        };
        let mut current: Option<Oid> = None;
        for &(obj, pos, read) in &items {
            if current != Some(obj) {
                flush(&mut h, &mut reads);
                h.update(b"O");
                h.update(&obj.0.to_le_bytes());
                current = Some(obj);
            }
            if read {
                reads.push(event(pos));
            } else {
                flush(&mut h, &mut reads);
                h.update(b"W");
                h.update(&event(pos));
            }
        }
        flush(&mut h, &mut reads);
        let out = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&out.as_bytes()[..16]);
        u128::from_le_bytes(b)
    }
}

impl Observer for Metrics {
    fn begin(&mut self, start: Start, _prefix: &[Decision]) {
        // A resumed execution keeps the prefix it shares with the last one.
        let keep = match start {
            Start::Fresh => 0,
            Start::Resume { prefix_len } => prefix_len,
            Start::Saved { id } => {
                match self.saved.remove(&id) {
                    Some(seg) => {
                        (self.steps, self.accesses) = seg.history();
                        self.frozen = Some(seg);
                    }
                    None => {
                        self.steps.clear();
                        self.accesses.clear();
                        self.frozen = None;
                    }
                }
                self.steps.len()
            }
        };
        self.truncate(keep);
    }

    fn decided(&mut self, ctx: &Context<'_>, _decision: Decision) {
        // The explorer replayed or restored the prefix up to here.
        self.truncate(ctx.step);
    }

    fn step(&mut self, step: &StepInfo) {
        self.accesses
            .extend(step.accesses.iter().map(|a| (a.obj, a.kind.is_shared())));
        self.steps.push(StepRec {
            tid: step.tid,
            alt: step.alt,
            accesses_end: self.accesses.len(),
        });
    }

    fn saved(&mut self, id: u64, depth: usize) {
        debug_assert_eq!(depth, self.steps.len(), "saved before the step ran");
        let (steps_from, accesses_from) = self
            .frozen
            .as_ref()
            .map_or((0, 0), |f| (f.steps_len, f.accesses_len));
        let seg = match &self.frozen {
            Some(f) if steps_from == self.steps.len() => f.clone(),
            _ => Arc::new(Segment {
                parent: self.frozen.take(),
                steps: self.steps[steps_from..].to_vec(),
                accesses: self.accesses[accesses_from..].to_vec(),
                steps_len: self.steps.len(),
                accesses_len: self.accesses.len(),
            }),
        };
        self.frozen = Some(seg.clone());
        self.saved.insert(id, seg);
    }

    fn end(&mut self, outcome: &Outcome, _path: &[Decision]) {
        self.executions += 1;
        match outcome {
            Outcome::Abandoned => {
                self.abandoned += 1;
                return;
            }
            Outcome::Failed(_) => {
                self.failing += 1;
                if self.first_failure.is_none() {
                    self.first_failure = Some(self.executions);
                    self.first_failure_after = Some(self.started.elapsed());
                }
            }
            Outcome::Finished => {}
        }
        let hash = self.order_hash();
        self.orders.insert(hash);
        self.last_order = Some(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::{Config, Explorer, Report};
    use crate::model::{reg, Model, ModelBuilder};
    use crate::strategies::pos::testing::running_example;
    use crate::strategies::{Dfs, MicroBenchmark, PartialOrders, Pos, RandomWalk};
    use crate::strategy::Strategy;

    /// Both measures of one exploration, and the strategy's name.
    struct Both(Metrics, PartialOrders, String);

    impl std::ops::Deref for Both {
        type Target = Metrics;
        fn deref(&self) -> &Metrics {
            &self.0
        }
    }

    impl Both {
        fn inner(&self) -> &PartialOrders {
            &self.1
        }
        fn name(&self) -> &str {
            &self.2
        }
    }

    /// Explores `model` with `strategy`, observed by both measures (so both
    /// see the same executions), without stopping at bugs.
    fn both<S: Strategy>(
        model: Model,
        mut strategy: S,
        budget: u64,
        snapshot_every_cost: Option<u64>,
    ) -> (Both, Report) {
        let mut measures = (Metrics::new(), PartialOrders::new());
        let cfg = Config {
            max_executions: budget,
            stop_on_first_bug: false,
            snapshot_every_cost,
            // `None`: replayed from the start, every time.
            snapshot_resume_returns: snapshot_every_cost.and(Some(1)),
            snapshot_forced_prefix: snapshot_every_cost.is_some(),
            ..Config::default()
        };
        let r = Explorer::new(model, cfg)
            .run_observed(&mut strategy, &mut measures)
            .unwrap();
        let (m, po) = measures;
        (Both(m, po, strategy.name().to_string()), r)
    }

    fn assert_same_count(name: &str, model: impl Fn() -> Model, expected: Option<usize>) {
        // Exhaustive DFS resumes after prefixes: with a snapshot after every
        // step and with none, the wrapper must see whole executions.
        for snaps in [Some(0), None] {
            let (m, r) = both(model(), Dfs::unbounded(), u64::MAX, snaps);
            assert!(r.exhausted, "{name}");
            let po = m.inner().orders().len();
            assert_eq!(m.distinct_orders(), po, "{name}, snapshots {snaps:?}");
            if let Some(n) = expected {
                assert_eq!(po, n, "{name}");
            }
            assert_eq!(m.executions(), r.executions, "{name}");
            assert_eq!(m.failing_executions(), r.failing_executions, "{name}");
        }
        // Fresh starts only (random walk), fewer executions than orders.
        let (m, _) = both(model(), RandomWalk::new(3), 200, Some(0));
        assert_eq!(m.distinct_orders(), m.inner().orders().len(), "{name}");
        // Starts from saved states (SES's frontier), whose histories the
        // wrapper keeps as shared segments: the same orders again.
        let ses = crate::strategies::Ses::new(
            crate::strategies::RoundRobin::new(),
            5,
            crate::strategies::SesOptions::default(),
        );
        let (m, r) = both(model(), ses, 500, Some(0));
        assert!(r.saved_restored + r.saved_replayed > 0, "{name}: {r:?}");
        assert_eq!(m.distinct_orders(), m.inner().orders().len(), "{name}");
        assert_eq!(m.executions(), r.executions, "{name}");
    }

    /// Two threads writing one variable: two orders; reading it instead:
    /// one order, however many interleavings.
    #[test]
    fn reads_commute_and_writes_do_not() {
        for (read, orders) in [(false, 2), (true, 1)] {
            let model = move || {
                let mut b = ModelBuilder::new();
                let x = b.var("x", 0);
                let t = b.thread("t", |t| {
                    if read {
                        t.read(x, 0).read(x, 1);
                    } else {
                        t.write(x, 1);
                    }
                });
                b.main(|m| {
                    m.spawn(t, 0).spawn(t, 1).join(reg(0)).join(reg(1));
                });
                b.build().unwrap()
            };
            let (m, r) = both(model(), Dfs::unbounded(), u64::MAX, None);
            assert!(r.executions > orders as u64, "several interleavings");
            assert_eq!(m.distinct_orders(), orders, "read {read}");
            assert_eq!(m.inner().orders().len(), orders);
        }
    }

    #[test]
    fn counts_what_partial_orders_counts_on_models() {
        assert_same_count("running example", running_example, None);
        // `choose` alternatives are different events.
        assert_same_count(
            "choose",
            || {
                let mut b = ModelBuilder::new();
                let x = b.var("x", 0);
                let t = b.thread("t", |t| {
                    t.choose(3, 0).write(x, reg(0));
                });
                b.main(|m| {
                    m.spawn(t, 0).read(x, 1).join(reg(0));
                });
                b.build().unwrap()
            },
            None,
        );
        // Locks, and a lost update that fails on some orders.
        assert_same_count(
            "lost update under a lock and without",
            || {
                let mut b = ModelBuilder::new();
                let x = b.var("x", 0);
                let y = b.var("y", 0);
                let l = b.mutex("l");
                let t = b.thread("t", |t| {
                    t.lock(l).read(x, 0).write(x, reg(0) + 1).unlock(l);
                    t.read(y, 0).write(y, reg(0) + 1);
                });
                b.main(|m| {
                    m.spawn(t, 0).spawn(t, 1).join(reg(0)).join(reg(1));
                    m.read(y, 2).assert(reg(2).equals(2), "lost update");
                });
                b.build().unwrap()
            },
            None,
        );
        // Messages: the receive order is the partial order.
        assert_same_count(
            "mailbox",
            || {
                let mut b = ModelBuilder::new();
                let t = b.thread("t", |t| {
                    t.send(crate::model::parent_id(), 1);
                });
                b.main(|m| {
                    m.spawn(t, 0).spawn(t, 1).recv(2).recv(3);
                });
                b.build().unwrap()
            },
            None,
        );
    }

    /// POS micro benchmarks: exhaustively where that is quick (2 threads;
    /// the 2 x 6 configuration whose 57 orders pos_bench counts), and by
    /// sampling at the bench suite's size (3 threads x 4 events, uniform and
    /// skewed, with and without reads), where both wrappers see the same
    /// executions.
    #[test]
    fn counts_what_partial_orders_counts_on_micro_benchmarks() {
        for (bench, expected) in [
            (
                MicroBenchmark {
                    threads: 2,
                    events: 6,
                    accesses: vec![4, 4, 4],
                    reads: 0,
                    seed: 0,
                },
                Some(57),
            ),
            (
                MicroBenchmark {
                    threads: 2,
                    events: 5,
                    accesses: vec![1, 4, 5],
                    reads: 5,
                    seed: 1,
                },
                None,
            ),
        ] {
            assert_same_count(&format!("{bench:?}"), || bench.model(), expected);
        }
        for seed in [0, 1] {
            for bench in [
                MicroBenchmark {
                    threads: 3,
                    events: 4,
                    accesses: vec![3, 3, 3, 3],
                    reads: 0,
                    seed,
                },
                MicroBenchmark {
                    threads: 3,
                    events: 4,
                    accesses: vec![1, 1, 5, 5],
                    reads: 6,
                    seed,
                },
            ] {
                let (m, _) = both(bench.model(), Pos::new(seed), 1500, None);
                let po = m.inner().orders().len();
                assert_eq!(m.distinct_orders(), po, "{bench:?}");
                assert!(po > 20, "{bench:?}: {po} orders, a real comparison");
            }
        }
    }

    /// Sampling resumes nothing, DFS resumes everything: both, on the same
    /// program, reach the same set of hashes once DFS has covered it all.
    #[test]
    fn hashes_agree_across_strategies() {
        let bench = MicroBenchmark {
            threads: 2,
            events: 6,
            accesses: vec![4, 4, 4],
            reads: 6,
            seed: 0,
        };
        let (dfs, _) = both(bench.model(), Dfs::unbounded(), u64::MAX, Some(0));
        let (pos, _) = both(bench.model(), Pos::new(1), 3000, None);
        assert_eq!(dfs.distinct_orders(), 53);
        assert!(pos.order_hashes().is_subset(dfs.order_hashes()));
        assert_eq!(pos.distinct_orders(), pos.inner().orders().len());
    }

    #[test]
    fn counts_failures_and_the_first_one() {
        let (m, r) = both(running_example(), Dfs::unbounded(), u64::MAX, None);
        // One order of the statements fails; B's exit may come before or
        // after A4, so two interleavings do.
        assert_eq!(r.failing_executions, 2);
        assert_eq!(m.failing_executions(), 2);
        assert_eq!(m.first_failure(), Some(r.first_bug().unwrap().execution));
        assert!(m.first_failure_after().is_some());
        let (m, _) = both(running_example(), Dfs::unbounded(), 3, None);
        assert_eq!((m.executions(), m.first_failure()), (3, None));
        assert_eq!(m.first_failure_after(), None);
        assert_eq!(m.name(), "dfs");
    }
}
