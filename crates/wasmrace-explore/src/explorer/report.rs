//! What a run reports: its counts, its bugs, the bounds that stopped or
//! pruned it, the strategy's counters and real races.

use crate::strategy::{BoundHit, RealRace, Stat};
use std::time::Duration;
use wasmrace_trace::{Decision, Failure};

/// A failing execution: the failure and the decisions that lead to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bug {
    /// What went wrong.
    pub failure: Failure,
    /// The strategy that ran the failing execution (`Strategy::active`).
    pub found_by: String,
    /// The decisions from the initial state to the failure; replaying them
    /// reproduces it.
    pub schedule: Vec<Decision>,
    /// 1-based index of the execution that found it; in a partition of a
    /// strategy that splits by execution, the global index (as in the
    /// whole run).
    pub execution: u64,
    /// The execution's place in the strategy's exploration order
    /// ([`Standing::order_key`](crate::Standing::order_key)), for
    /// strategies that answer it: the smallest key among the partitions'
    /// bugs is the bug the whole run finds first.
    pub order_key: Option<Vec<u32>>,
}

/// What a run of the explorer did and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Executions started, the failing ones included (in a partitioned
    /// run, only this partition's).
    pub executions: u64,
    /// Executions of other partitions this one started and abandoned when
    /// their prefix showed they were not its own (strategies that split by
    /// prefix; not in `executions`).
    pub partition_skipped: u64,
    /// Steps the program ran, replayed prefixes included.
    pub steps: u64,
    /// Steps run only to get back to a resume point.
    pub replayed_steps: u64,
    /// Snapshots taken along the current path, to resume executions from
    /// (those of saved states count in `saved_with_snapshot`).
    pub snapshots_taken: u64,
    /// Snapshots restored to start an execution (at a resume point or a
    /// saved state).
    pub restores: u64,
    /// Bugs found, in the order found; at most one with
    /// `Config::stop_on_first_bug`, else at most `Config::max_bugs_kept`
    /// (every failing execution is counted in `failing_executions`).
    pub bugs: Vec<Bug>,
    /// Executions that failed (the hit count used by sampling statistics).
    pub failing_executions: u64,
    /// The strategy explored its whole space (within its own bound).
    pub exhausted: bool,
    /// The explorer bound that ended the run early, if one did.
    pub stopped_by: Option<BoundHit>,
    /// A bound of the strategy that pruned part of the space, if one did.
    pub strategy_bound: Option<BoundHit>,
    /// States saved at the strategy's request (`Strategy::save_request`):
    /// with a snapshot, and with only their prefix (over
    /// `max_saved_snapshots` or `max_saved_bytes`, or a program that cannot
    /// snapshot).
    pub saved_with_snapshot: u64,
    /// States saved with only their prefix (see `saved_with_snapshot`).
    pub saved_as_prefix: u64,
    /// Executions started from a saved state (`Start::Saved`), by restoring
    /// its snapshot and by replaying its prefix.
    pub saved_restored: u64,
    /// Executions started from a saved state by replaying its prefix (see
    /// `saved_restored`).
    pub saved_replayed: u64,
    /// State hashes computed for strategies that asked for them
    /// (`Profile::hashes_states`).
    pub state_hashes: u64,
    /// The strategy's own counters at the end of the run (`Strategy::stats`:
    /// states explored, cache hits, ...).
    pub strategy_stats: Vec<Stat>,
    /// The real races the strategy created (`Standing::real_races`:
    /// RaceFuzzer), ordered by sites then object, at the end of the run.
    pub real_races: Vec<RealRace>,
    /// The index passed to `Strategy::begin` for the last execution
    /// counted (a position, for open blocks): where a report passed to the
    /// progress callback stands in the run.
    pub last_index: Option<u64>,
    /// Wall-clock time of the run (not deterministic: never compare it).
    pub elapsed: Duration,
    /// Executions the workers of a run sharing its tree ran in all
    /// (`check --jobs` with `dfs`): past the bug or the budget until they
    /// heard of it, and below expansions a shared state cache killed; 0
    /// when no pool settled the run. Timing-dependent, like `elapsed`.
    pub executions_run: u64,
}

impl Report {
    /// The first bug found, if any.
    pub fn first_bug(&self) -> Option<&Bug> {
        self.bugs.first()
    }
}
