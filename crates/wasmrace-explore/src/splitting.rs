//! How a strategy's work splits between the threads of one run (`check
//! --jobs`) and the partitions of a run on several machines
//! (`--partition`): the [`Splitting`] a strategy opts into through
//! [`Capabilities::splitting`](crate::Capabilities::splitting), and the
//! [`Phase`]s of a phased strategy. A strategy that does not opt in runs
//! whole, on one thread.

use crate::explorer::blocks::Blocks;
use crate::explorer::partition::{Partition, Split};
use crate::explorer::rounds::RoundsPool;
use crate::explorer::steal::SubtreePool;
use crate::explorer::Config;
use std::sync::Arc;

/// How a strategy's work splits: its [`Split`] and what each kind of split
/// needs (blocks, order keys, a shared pool, phases). Only `split` is
/// required.
pub trait Splitting {
    /// How the strategy's work splits into partitions (`Config::partition`)
    /// and between threads. A strategy says `ByExecution` only if execution
    /// `i` depends on nothing but its seed and `i` (nothing carried over
    /// from earlier executions), and `ByPrefix` only if the executions below
    /// a prefix do not depend on other subtrees and it answers
    /// [`order_key`](Self::order_key).
    fn split(&self) -> Split;

    /// For a strategy that splits by execution: how its executions group
    /// into blocks that depend on one another and so run on one worker, in
    /// order ([`Blocks`]); by default each execution is its own. `begin`
    /// is then given the indices of whole blocks, each block's in order,
    /// and must start a block afresh whenever the index is not the one
    /// after the last.
    fn blocks(&self) -> Blocks {
        Blocks::Single
    }

    /// For a strategy whose blocks are [`Blocks::Open`]: after `end`,
    /// whether the execution that ended was its block's last (the next
    /// `begin` starts a new block). Default: true.
    fn block_ended(&self) -> bool {
        true
    }

    /// The current (or last) execution's place in the strategy's
    /// exploration order, for `Split::ByPrefix` strategies: keys compare
    /// lexicographically, an execution explored earlier has a smaller key,
    /// and a key depends only on the execution (not on which other subtrees
    /// a partition skipped), so the bugs of partitions can be put back in
    /// the order one run would have found them.
    fn order_key(&self) -> Option<Vec<u32>> {
        None
    }

    /// For a strategy that splits by jobs ([`Split::Jobs`]): makes it run
    /// partition `partition`'s share, before its first `begin`. It runs
    /// the jobs of fewer than `depth` levels (each partition does, to reach
    /// its own), and of the jobs `depth` levels deep only those whose key
    /// hashes to the partition, with everything below them.
    fn partition(&mut self, _partition: Partition, _depth: usize) {}

    /// After `begin`: whether the job begun is another partition's (one
    /// above the split depth, run only to reach the jobs below it): its
    /// execution counts nowhere here, and what the strategy counts of it
    /// it forgets at `end`.
    fn foreign(&self) -> bool {
        false
    }

    /// Makes the strategy one of several workers sharing its search tree
    /// through `pool` (work stealing, `check --jobs`), before its first
    /// `begin`; false when it cannot (the default), and then nothing
    /// changed. A strategy that accepts explores only subtrees it takes
    /// from the pool (the first is the root), donates when the pool is
    /// hungry, and ends when the pool says the run is over.
    fn share(&mut self, _pool: Arc<SubtreePool>) -> bool {
        false
    }

    /// For a strategy sharing a pool ([`share`](Self::share)): a number
    /// that changes whenever its next executions stop following its last
    /// ones directly in the exploration order (it took or resumed another
    /// subtree), so that the pool can number executions as one run does
    /// (see [`steal`](crate::explorer::steal)). Default 0.
    fn stretch(&self) -> u64 {
        0
    }

    /// For a strategy sharing a pool and a state cache
    /// ([`SharedVisits`](crate::explorer::visits::SharedVisits)): the last
    /// execution as the pool logs it, so that it can count only the
    /// executions one run has. Default `None` (not logged).
    fn logged(&self) -> Option<crate::explorer::visits::Logged> {
        None
    }

    /// For a strategy that runs in rounds ([`Split::Rounds`]): a fresh pool
    /// for the `workers` of one run with `cfg` (its budget, whether it
    /// stops at its first bug, the bugs it keeps). `None` (the default)
    /// for the others.
    fn rounds(&self, _cfg: &Config, _workers: usize) -> Option<Arc<dyn RoundsPool>> {
        None
    }

    /// Makes the strategy one of the workers of `pool` (made by
    /// [`rounds`](Self::rounds) of a strategy built with the same options),
    /// before its first `begin`; false when it cannot (the default), and
    /// then nothing changed. A strategy that joins runs only the
    /// executions the pool hands it, and tells the pool how each ended.
    fn join_rounds(&mut self, _pool: Arc<dyn RoundsPool>) -> bool {
        false
    }

    /// For a strategy that runs in phases ([`Split::Phases`], the
    /// portfolio): the executions each opening member runs at most, in
    /// order; `None` (the default) for the others.
    fn openings(&self) -> Option<Vec<u64>> {
        None
    }

    /// Restricts a phased strategy (see [`openings`](Self::openings)) to
    /// one phase, before its first `begin`; ignored by the others.
    fn enter_phase(&mut self, _phase: Phase) {}

    /// For a phased strategy after an opening phase: the most decisions
    /// one of its opening executions took, which the sampling phase is
    /// given as `Phase::Sampling { longest }` (the strategy measures it
    /// itself, as a whole run needs it too). Default 0.
    fn longest_execution(&self) -> usize {
        0
    }
}

/// One phase of a phased strategy ([`Splitting::enter_phase`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Opening member `i` alone, for at most its executions: the run ends
    /// when it does. Its report says whether it explored its whole space
    /// (`exhausted`, with no `strategy_bound`), which ends the whole run.
    Opening(usize),
    /// The sampling phase alone, the openings having run: execution `i` is
    /// the phase's `i`-th (so it splits by execution), and `longest` is
    /// the longest opening execution, in steps (0 when none ran).
    Sampling {
        /// The longest execution of the openings, in steps.
        longest: usize,
    },
}
