//! Partitioned runs (`--partition K/N`): which executions of a run belong to
//! partition `K` of `N`, so that `N` processes on any machines explore
//! between them exactly what one run explores, with no coordinator.
//!
//! A strategy says how its work splits ([`Split`]): by execution index
//! (execution `i` depends only on the seed and `i`: partition `K` runs the
//! indices `i` with `i % N == K - 1`) or by prefix (the subtree below a
//! prefix does not depend on the rest of the search: partition `K` runs the
//! executions whose first `split_depth` decisions hash to `K - 1`).

use super::blocks::Blocks;
use super::{Bug, Report};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wasmrace_trace::{mix64, Decision};

/// One of `count` deterministic shares of a run; `index` is 0-based (the
/// command line's `--partition K/N` is `index = K - 1`, `count = N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Which share, `0..count`.
    pub index: u32,
    /// How many shares the run is split into, at least 1.
    pub count: u32,
}

impl Partition {
    /// Share `index` (0-based) of `count`; `None` unless `index < count`.
    pub fn new(index: u32, count: u32) -> Option<Self> {
        (index < count).then_some(Partition { index, count })
    }

    /// Whether the global 0-based execution index `i` is this share's
    /// ([`Split::ByExecution`]).
    pub fn owns_index(self, i: u64) -> bool {
        i % u64::from(self.count) == u64::from(self.index)
    }

    /// The `j`-th (0-based) global execution index of this share.
    pub fn nth_index(self, j: u64) -> u64 {
        j.saturating_mul(u64::from(self.count))
            .saturating_add(u64::from(self.index))
    }

    /// The global index of this share's next execution after `after` (its
    /// first with `None`) when executions come in `blocks`: the next of the
    /// prologue, which every share runs, or of the same block, else the
    /// first of the share's next block. A share owns whole blocks: block
    /// `b` is share `b % count`'s.
    ///
    /// With [`Blocks::Open`] the layout cannot tell where a block ends:
    /// `ended` says whether the strategy ended the block of `after`.
    pub fn next_owned(self, blocks: Blocks, after: Option<u64>, ended: bool) -> u64 {
        let next = after.map_or(0, |i| i.saturating_add(1));
        if next < blocks.prologue() {
            return next;
        }
        // Located once: with rounds of samples it walks the rounds.
        let place = after.map(|i| (i, blocks.locate(i)));
        if let Some((i, p)) = &place {
            let ends = match blocks {
                Blocks::Open => ended,
                _ => p.is_last(*i),
            };
            if !ends {
                return next;
            }
        }
        // The first block after `after`'s that is this share's.
        let (count, index) = (u64::from(self.count), u64::from(self.index));
        let first = place.map_or(0, |(_, p)| p.block.saturating_add(1));
        let block = first.saturating_add((index + count - first % count) % count);
        blocks.start(block)
    }

    /// Whether execution `index` counts in this share: its block is the
    /// share's (an index of the prologue may be another's).
    pub fn owns(self, blocks: Blocks, index: u64) -> bool {
        blocks.locate(index).block % u64::from(self.count) == u64::from(self.index)
    }

    /// Whether an execution starting with `prefix` (its first
    /// `split_depth` decisions, or all of them if it ended sooner) is this
    /// share's ([`Split::ByPrefix`]).
    pub fn owns_prefix(self, prefix: &[Decision]) -> bool {
        prefix_hash(prefix) % u64::from(self.count) == u64::from(self.index)
    }
}

/// How a strategy's work splits into partitions
/// ([`Profile::split`](crate::Profile::split)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// It cannot (the default): what it explores depends on everything
    /// explored before (adaptive estimates, caches, race lists, shared
    /// frontiers).
    #[default]
    None,
    /// Execution `i` depends only on the seed and `i` (sampling strategies
    /// that draw execution `i` from random stream `i`).
    ByExecution,
    /// The executions below a prefix do not depend on the rest of the
    /// search (plain depth-first search, without a state cache), and the
    /// strategy reports each execution's place in its exploration order
    /// ([`Standing::order_key`](crate::Standing::order_key)).
    ByPrefix,
    /// Like `ByPrefix`, but subtrees depend on each other through a state
    /// cache (`dfs --state-cache`): the threads of one process share the
    /// tree and the cache ([`SubtreePool`](super::steal::SubtreePool),
    /// [`SharedVisits`](super::visits::SharedVisits)); partitions, which
    /// cannot share the cache, are refused.
    Shared,
    /// Its executions come in rounds (`ses`'s delay bounds): those of a
    /// round depend on the earlier rounds and, through a state cache that
    /// ends each where it reaches a state seen before, on the earlier
    /// executions of their round. The threads of one process run a
    /// round's executions side by side and hand them over in order
    /// ([`RoundsPool`](super::rounds::RoundsPool)); partitions, which
    /// cannot share the cache, are refused.
    Rounds,
    /// It runs in phases ([`Splitting::openings`](crate::Splitting::openings),
    /// the portfolio): opening members one after the other, each alone,
    /// then a sampling phase that splits by execution. `check --jobs`
    /// runs the openings side by side and shares the sampling phase's
    /// indices; partitions each run the openings as a prologue
    /// ([`Blocks::Prologue`]) when the strategy gives one.
    Phases,
    /// Its jobs depend on nothing but themselves (`dpor --dpor trust`),
    /// and it gives each its place in its order
    /// ([`Standing::order_key`](crate::Standing::order_key)): the
    /// threads of one process share them through a
    /// [`SubtreePool`](super::steal::SubtreePool), each job a subtree
    /// whose root is a graph rather than a prefix of decisions, so the
    /// bug and the budget's cut are one thread's. A partition runs every
    /// job above the split depth (counting only those whose key hashes to
    /// it) and, below, the subtrees whose key at that depth does
    /// ([`Role::Partition`](crate::Role::Partition)).
    Jobs,
}

/// This run's share of the work, from `Config::partition` and the
/// strategy's [`Split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Share {
    /// Not partitioned: every execution.
    Whole,
    /// The global execution indices of the partition's blocks.
    Indices(Partition, Blocks),
    /// The executions whose prefix of `depth` decisions hashes to the
    /// partition.
    Prefixes(Partition, usize),
    /// The jobs whose key at `depth` levels hashes to the partition, and
    /// the jobs above it that every partition runs ([`Split::Jobs`]): the
    /// strategy knows which are its own ([`Standing::foreign`](crate::Standing::foreign)).
    Jobs(Partition, usize),
}

impl Share {
    /// The share of `partition` for a strategy that splits as `split` in
    /// `blocks`; `None` when it cannot split.
    pub(crate) fn of(
        partition: Option<Partition>,
        split: Split,
        depth: usize,
        blocks: Blocks,
    ) -> Option<Self> {
        let Some(p) = partition else {
            // Open blocks are numbered by position in every run.
            return Some(match blocks {
                Blocks::Open => Share::Indices(Partition { index: 0, count: 1 }, blocks),
                _ => Share::Whole,
            });
        };
        match split {
            Split::None | Split::Shared | Split::Rounds => None,
            Split::Jobs => Some(Share::Jobs(p, depth)),
            // A phased strategy partitions with its phases as a prologue.
            Split::Phases if blocks.prologue() > 0 => Some(Share::Indices(p, blocks)),
            Split::Phases => None,
            Split::ByExecution => Some(Share::Indices(p, blocks)),
            Split::ByPrefix => Some(Share::Prefixes(p, depth)),
        }
    }

    /// The index to pass to `Strategy::begin` for the next execution, given
    /// the index passed last (`None` before the first) and the executions
    /// run and skipped so far: by execution, the partition's next global
    /// index; else the executions begun.
    /// `ended` is whether the strategy ended its block ([`Blocks::Open`]).
    pub(crate) fn next_index(
        self,
        last: Option<u64>,
        ended: bool,
        executions: u64,
        skipped: u64,
    ) -> u64 {
        match self {
            Share::Indices(p, blocks) => p.next_owned(blocks, last, ended),
            Share::Whole | Share::Prefixes(..) | Share::Jobs(..) => executions + skipped,
        }
    }

    /// Whether execution `index` (as passed to `begin`), just ended,
    /// counts in this share: only a prologue's may not ([`Blocks`]).
    pub(crate) fn counts(self, index: u64) -> bool {
        match self {
            Share::Indices(p, blocks) => p.owns(blocks, index),
            Share::Whole | Share::Prefixes(..) | Share::Jobs(..) => true,
        }
    }

    /// Whether the execution with these decisions, just ended, is this
    /// share's.
    pub(crate) fn owns(self, decisions: &[Decision]) -> bool {
        match self {
            Share::Prefixes(p, depth) => p.owns_prefix(&decisions[..depth.min(decisions.len())]),
            Share::Whole | Share::Indices(..) | Share::Jobs(..) => true,
        }
    }

    /// Whether an execution now `decisions` long, not yet checked, must be
    /// abandoned as another partition's: checked once, when it reaches the
    /// split depth, so that the strategy backtracks past the whole subtree.
    pub(crate) fn foreign_at(self, decisions: &[Decision]) -> bool {
        match self {
            Share::Prefixes(p, depth) if decisions.len() >= depth => {
                !p.owns_prefix(&decisions[..depth])
            }
            _ => false,
        }
    }

    /// Whether executions are split by prefix, and so checked for
    /// ownership at the split depth during the execution (`foreign_at`).
    pub(crate) fn by_prefix(self) -> bool {
        matches!(self, Share::Prefixes(..))
    }

    /// Whether `foreign_at` can still say yes at this length.
    pub(crate) fn checks_at(self, len: usize) -> bool {
        matches!(self, Share::Prefixes(_, depth) if len >= depth)
    }
}

/// The lowest global execution index known to fail, shared by the
/// workers of one run that splits by execution (`check --jobs`): a worker
/// begins no execution above it, so none runs far past the bug one run
/// would report, and every index below it is still run to the end (the
/// run reports the failing execution with the lowest index).
#[derive(Clone, Debug)]
pub struct LowestBug(Arc<AtomicU64>);

impl Default for LowestBug {
    fn default() -> Self {
        LowestBug(Arc::new(AtomicU64::new(u64::MAX)))
    }
}

impl LowestBug {
    /// The lowest failing index so far (0-based), if any.
    pub fn get(&self) -> Option<u64> {
        Some(self.0.load(Ordering::Acquire)).filter(|&i| i != u64::MAX)
    }

    /// Whether execution `index` comes after a known failing one, and so
    /// cannot be the bug reported nor count in the run.
    pub fn passed(&self, index: u64) -> bool {
        index > self.0.load(Ordering::Acquire)
    }

    /// Execution `index` failed.
    pub fn found(&self, index: u64) {
        self.0.fetch_min(index, Ordering::AcqRel);
    }
}

/// Where a partition's bug stands in the whole run's order: the smallest
/// rank is the bug one run reports first. The smallest order key decides
/// for strategies that split by prefix (their keys differ, execution
/// numbers are per partition); the lowest global execution index for those
/// that split by execution (no keys). `--jobs` ([`first_of`]) and
/// `wasmrace merge` (from the parts' JSON) both rank by this one rule.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BugRank {
    order_key: Option<Vec<u32>>,
    execution: u64,
}

impl BugRank {
    /// The rank of a bug with this order key and execution number.
    pub fn new(order_key: Option<Vec<u32>>, execution: u64) -> Self {
        BugRank {
            order_key,
            execution,
        }
    }

    /// The rank of `bug`.
    pub fn of(bug: &Bug) -> Self {
        BugRank::new(bug.order_key.clone(), bug.execution)
    }
}

/// The bug one run would report first among bugs of different partitions
/// of it (the smallest [`BugRank`]).
pub fn first_of<'a>(bugs: impl IntoIterator<Item = &'a Bug>) -> Option<&'a Bug> {
    bugs.into_iter().min_by_key(|b| BugRank::of(b))
}

/// The reports of all the partitions of one run, as one report: counts
/// added up, exhausted only if every partition exhausted its share, the
/// first bound that stopped or pruned one, the first bug by [`first_of`]
/// (with `stop_on_first_bug`, each partition's first bug only), counters
/// added by name, and the longest wall-clock time (they ran side by side).
pub fn merge_reports(reports: &[Report]) -> Report {
    let mut out = Report {
        exhausted: !reports.is_empty(),
        ..Report::default()
    };
    for r in reports {
        out.executions += r.executions;
        out.partition_skipped += r.partition_skipped;
        out.steps += r.steps;
        out.replayed_steps += r.replayed_steps;
        out.snapshots_taken += r.snapshots_taken;
        out.restores += r.restores;
        out.failing_executions += r.failing_executions;
        out.exhausted &= r.exhausted;
        out.stopped_by = out.stopped_by.take().or_else(|| r.stopped_by.clone());
        out.strategy_bound = out
            .strategy_bound
            .take()
            .or_else(|| r.strategy_bound.clone());
        out.saved_with_snapshot += r.saved_with_snapshot;
        out.saved_as_prefix += r.saved_as_prefix;
        out.saved_restored += r.saved_restored;
        out.saved_replayed += r.saved_replayed;
        out.state_hashes += r.state_hashes;
        for stat in &r.strategy_stats {
            match out.strategy_stats.iter_mut().find(|s| s.name == stat.name) {
                Some(s) => s.combine(stat.value),
                None => out.strategy_stats.push(stat.clone()),
            }
        }
        for race in &r.real_races {
            merge_race(&mut out.real_races, race);
        }
        out.elapsed = out.elapsed.max(r.elapsed);
    }
    out.bugs = first_of(reports.iter().filter_map(Report::first_bug))
        .cloned()
        .into_iter()
        .collect();
    out
}

/// Adds one partition's (or worker's) real race to the union `races`, kept
/// ordered by sites then object as one run orders them: counts added, the
/// first execution the earliest. Returns where it is. The one rule for
/// `--jobs` and `wasmrace merge`.
pub fn merge_race(races: &mut Vec<crate::RealRace>, race: &crate::RealRace) -> usize {
    let key = |r: &crate::RealRace| (r.sites, r.obj);
    match races.binary_search_by_key(&key(race), key) {
        Ok(i) => {
            let r = &mut races[i];
            r.count += race.count;
            r.executions += race.executions;
            r.first_execution = r.first_execution.min(race.first_execution);
            i
        }
        Err(i) => {
            races.insert(i, race.clone());
            i
        }
    }
}

/// A stable hash of a decision sequence (never std's per-process random
/// state: partitions run in different processes and must agree).
pub fn prefix_hash(prefix: &[Decision]) -> u64 {
    let mut h = mix64(prefix.len() as u64 ^ 0x7061_7274_6974_696f);
    for d in prefix {
        h = mix64(h ^ d.tid.0);
        h = mix64(h ^ u64::from(d.alt));
    }
    h
}

/// Test support for phased strategies: the sampling phase run apart in
/// `n` partitions, each instance from `build` restricted to it with
/// `longest` (as `check --jobs` runs it) and checked to split by
/// execution, by `run`; the lowest failing execution among them.
#[cfg(test)]
pub(crate) fn lowest_bug_sampled_apart<S: crate::Strategy>(
    n: u32,
    longest: usize,
    build: impl Fn() -> S,
    run: impl Fn(&mut S, crate::explorer::Config) -> crate::Report,
) -> Bug {
    (0..n)
        .filter_map(|k| {
            let mut s = build();
            let phase = crate::Role::Phase(crate::Phase::Sampling { longest });
            assert!(s.splitting().is_some_and(|s| s.take_role(phase)));
            assert_eq!(s.profile().split, Split::ByExecution);
            let config = crate::explorer::Config {
                partition: Some(Partition::new(k, n).unwrap()),
                ..Default::default()
            };
            run(&mut s, config).bugs.into_iter().next()
        })
        .min_by_key(|b| b.execution)
        .expect("a partition finds the bug")
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_trace::Tid;

    #[test]
    fn indices_are_dealt_round_robin() {
        let p = Partition::new(1, 3).unwrap();
        let owned: Vec<u64> = (0..10).filter(|&i| p.owns_index(i)).collect();
        assert_eq!(owned, [1, 4, 7]);
        assert_eq!((0..3).map(|j| p.nth_index(j)).collect::<Vec<_>>(), owned);
        assert_eq!(Partition::new(3, 3), None);
    }

    #[test]
    fn blocks_are_dealt_whole_and_round_robin() {
        let blocks = Blocks::Rounds { c1: 2, c2: 2 };
        // Blocks: [0] [1] [2 3] [4 5] [6 7] [8 9] [10 11 12] ...
        let walk = |k, n| {
            let p = Partition::new(k, n).unwrap();
            let mut owned = vec![p.next_owned(blocks, None, false)];
            while owned.len() < 6 {
                owned.push(p.next_owned(blocks, owned.last().copied(), false));
            }
            owned
        };
        assert_eq!(walk(0, 2), [0, 2, 3, 6, 7, 10]);
        assert_eq!(walk(1, 2), [1, 4, 5, 8, 9, 13]);
        assert_eq!(walk(0, 1), [0, 1, 2, 3, 4, 5]);
        // A prologue is every share's, counted by the owner of its index.
        let p = Partition::new(1, 3).unwrap();
        let mut walk = vec![p.next_owned(Blocks::Prologue(4), None, false)];
        while walk.len() < 7 {
            walk.push(p.next_owned(Blocks::Prologue(4), walk.last().copied(), false));
        }
        assert_eq!(walk, [0, 1, 2, 3, 4, 7, 10]);
        let counted: Vec<_> = walk
            .iter()
            .filter(|&&i| p.owns(Blocks::Prologue(4), i))
            .collect();
        assert_eq!(counted, [&1, &4, &7, &10]);
        // Single executions are dealt as `nth_index` deals them.
        let p = Partition::new(2, 3).unwrap();
        let mut i = p.next_owned(Blocks::Single, None, false);
        for j in 0..5 {
            assert_eq!(i, p.nth_index(j));
            i = p.next_owned(Blocks::Single, Some(i), false);
        }
        // Open blocks go on until the strategy ends them.
        let open = |b, o| crate::explorer::blocks::open_position(b, o);
        let p = Partition::new(1, 2).unwrap();
        assert_eq!(p.next_owned(Blocks::Open, None, false), open(1, 0));
        assert_eq!(
            p.next_owned(Blocks::Open, Some(open(1, 0)), false),
            open(1, 1)
        );
        assert_eq!(
            p.next_owned(Blocks::Open, Some(open(1, 1)), true),
            open(3, 0)
        );
    }

    #[test]
    fn each_prefix_has_exactly_one_owner() {
        let d = |t, a| Decision::new(Tid(t), a);
        let prefixes = [
            vec![],
            vec![d(1, 0)],
            vec![d(1, 0), d(2, 1)],
            vec![d(2, 1), d(1, 0)],
        ];
        for n in [1, 2, 3, 7] {
            for p in &prefixes {
                let owners = (0..n)
                    .filter(|&k| Partition::new(k, n).unwrap().owns_prefix(p))
                    .count();
                assert_eq!(owners, 1, "{p:?} of {n}");
            }
        }
        // Order and length matter: the hash is of the sequence.
        assert_ne!(prefix_hash(&prefixes[2]), prefix_hash(&prefixes[3]));
        assert_ne!(prefix_hash(&prefixes[0]), prefix_hash(&[d(0, 0)]));
    }

    /// Counts add up over the partitions; peaks (a largest size, a delay
    /// bound) are the largest partition's, not the sum.
    #[test]
    fn merged_counters_add_counts_and_keep_peaks() {
        use crate::Stat;
        let report = |count, peak| Report {
            strategy_stats: vec![Stat::new("count", count), Stat::peak("peak", peak)],
            ..Report::default()
        };
        let merged = merge_reports(&[report(3, 7), report(4, 5), report(0, 2)]);
        assert_eq!(
            merged.strategy_stats,
            [Stat::new("count", 7), Stat::peak("peak", 7)]
        );
    }
}
