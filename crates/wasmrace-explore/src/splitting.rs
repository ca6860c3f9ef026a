//! The part a strategy plays in a split run that its
//! [`Profile`](crate::strategy::Profile) alone cannot say: the
//! [`Splitting`] of the few strategies that must be set up for it (a pool
//! shared between the threads of `check --jobs`, a partition's jobs of
//! `--partition`, rounds, phases), and the [`Phase`]s of a phased strategy.
//! A strategy that splits by execution or not at all never mentions it.

use crate::explorer::partition::Partition;
use crate::explorer::rounds::RoundsPool;
use crate::explorer::steal::SubtreePool;
use crate::explorer::Config;
use std::sync::Arc;

/// A strategy's part in a split run, given to it before its first `begin`
/// ([`Splitting::take_role`]).
#[derive(Clone, Debug)]
pub enum Role {
    /// One of several workers sharing the strategy's search tree through
    /// the pool (work stealing, `check --jobs`; `Split::ByPrefix`,
    /// `Split::Shared` and `Split::Jobs`). A strategy that takes it
    /// explores only subtrees it takes from the pool (the first is the
    /// root), donates when the pool is hungry, and ends when the pool says
    /// the run is over.
    Shared(Arc<SubtreePool>),
    /// Partition `.0`'s share of a strategy that splits by jobs
    /// (`Split::Jobs`): it runs the jobs of fewer than `.1` levels (each
    /// partition does, to reach its own), and of the jobs `.1` levels deep
    /// only those whose key hashes to the partition, with everything below
    /// them.
    Partition(Partition, usize),
    /// One of the workers of a pool made by [`Splitting::rounds`] of a
    /// strategy built with the same options (`Split::Rounds`): it runs only
    /// the executions the pool hands it, and tells the pool how each ended.
    Rounds(Arc<dyn RoundsPool>),
    /// One phase of a phased strategy (`Split::Phases`, the portfolio).
    Phase(Phase),
}

/// How a strategy is set up for its part of a split run, for the
/// strategies that need it (DFS and `dpor --dpor trust` share a pool, SES
/// runs in rounds, the portfolio in phases). Reached through
/// [`Strategy::splitting`](crate::Strategy::splitting).
pub trait Splitting {
    /// Takes `role` before the first `begin`; false when the strategy
    /// cannot, and then nothing changed.
    fn take_role(&mut self, role: Role) -> bool;

    /// For a strategy that runs in rounds (`Split::Rounds`): a fresh pool
    /// for the `workers` of one run with `cfg` (its budget, whether it
    /// stops at its first bug, the bugs it keeps), which each worker's
    /// strategy joins as [`Role::Rounds`]. `None` (the default) for the
    /// others.
    fn rounds(&self, _cfg: &Config, _workers: usize) -> Option<Arc<dyn RoundsPool>> {
        None
    }

    /// For a strategy that runs in phases (`Split::Phases`, the
    /// portfolio): the executions each opening member runs at most, in
    /// order; `None` (the default) for the others.
    fn openings(&self) -> Option<Vec<u64>> {
        None
    }
}

/// One phase of a phased strategy ([`Role::Phase`]).
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
