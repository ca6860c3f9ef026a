//! The bounds of an exploration (`Config`), each with its default and the
//! CLI knob that sets it.

use super::blocks::OpenSizes;
use super::fairness;
use super::partition::{LowestBug, Partition};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Every bound of an exploration. Hitting one is reported with the name of
/// the knob that raises it.
#[derive(Clone, Debug)]
pub struct Config {
    /// Executions to run at most (`--max-executions`). Default 100,000.
    pub max_executions: u64,
    /// Steps per execution at most (`--max-steps`); an execution that takes
    /// more fails: as a livelock when every live thread is spinning on
    /// `yield_now` or blocked, else as a step-limit failure. Default 10,000.
    pub max_steps: u64,
    /// Fair scheduling (`--fairness-bound`; `None`, `--fairness-bound off`,
    /// turns it off): from its `bound + 1`-th `yield_now` on, a thread gives
    /// way to the threads it may be starving, so every strategy explores
    /// only fair schedules and a waiting loop ends whenever the thread it
    /// waits for can run (see [`fairness`]). Default
    /// `Some(`[`fairness::DEFAULT_FAIRNESS_BOUND`]`)`.
    pub fairness_bound: Option<u32>,
    /// Wall-clock budget for the whole exploration (`--time-budget`). Only
    /// checked between executions; a run cut by time is not reproducible in
    /// length, which the report says. Default: none.
    pub time_budget: Option<Duration>,
    /// Snapshot policy: take a snapshot after a step once this much cost
    /// (instructions for wasm) has accumulated since the previous one on the
    /// current path. `Some(0)` snapshots after every step, `None` never;
    /// without a snapshot, a resumed execution is replayed from the start.
    /// Default `Some(200_000)`: cheaper to replay than to copy below that.
    pub snapshot_every_cost: Option<u64>,
    /// Snapshot policy at resume points: take a snapshot at the point a
    /// strategy resumes at (`Start::Resume`, or a saved state replayed from
    /// its prefix), when getting there took a replay and the path has come
    /// back to at least that length this many times since its steps up to
    /// there last changed. A strategy that keeps coming back below a prefix
    /// keeps doing so (DFS, once per alternative of every frame below it),
    /// so the snapshot saves the replay from then on; where it came back
    /// only once or twice the snapshot, which copies every page written
    /// since the last, is mostly never restored. `None` never. Default
    /// `Some(5)`: on `benches/peers` (callgrind) DFS runs 27–50% fewer
    /// instructions on four tests and the same on the fifth, whose tree
    /// has 19 executions (benches/peers/RESULTS.md).
    pub snapshot_resume_returns: Option<u32>,
    /// Snapshot policy at the start of every execution: learn, in the
    /// first execution started afresh, the *forced prefix* (the steps
    /// before the first where more than one thread is enabled or a thread
    /// has alternatives: a test's `main` creating its objects and spawning
    /// its first thread), keep a snapshot after it, and start every later
    /// fresh execution from that snapshot, showing the strategy and the
    /// observer the same steps without running them again. Nothing they
    /// see changes. Sampling strategies start every execution afresh, so
    /// this saves them those steps each time: on `benches/peers`'
    /// `transfer_ordered` five of about thirty. Default true.
    pub snapshot_forced_prefix: bool,
    /// Snapshots held at most along the current path (oldest beyond that are
    /// dropped). Default 64.
    pub max_snapshots: usize,
    /// Stop at the first failing execution. Default true.
    pub stop_on_first_bug: bool,
    /// With `stop_on_first_bug` off: bugs kept in `Report::bugs` at most,
    /// the first in the exploration order (under `check --jobs`, the ones
    /// one thread keeps; a partition keeps its own first ones); the others
    /// are only counted in `Report::failing_executions`. Each bug holds its
    /// schedule, so a run whose executions mostly fail (`wasmrace bench`
    /// goes on past its bugs) would otherwise grow with every one:
    /// `bench --executions 1000000` on `lazy01` held 360 MB. Default 1,000.
    pub max_bugs_kept: usize,
    /// Saved states (`Strategy::save_request`, e.g. SES's frontier) held
    /// as snapshots at most (`--max-saved-snapshots`); beyond that a saved
    /// state keeps only its prefix and is replayed when started from, which
    /// is slower, never wrong. Default 65,536.
    pub max_saved_snapshots: usize,
    /// Bytes of saved snapshots held at most (`--saved-snapshots-mb`, as
    /// `Program::snapshot_bytes` counts them); past it, as past the count,
    /// saved states keep only their prefix. Default 512 MiB.
    pub max_saved_bytes: usize,
    /// Run only one deterministic share of the exploration (`--partition`):
    /// with a strategy that splits by execution, the global execution
    /// indices `i` with `i % count == index` (`max_executions` stays the
    /// budget of the whole run, counted in global indices); with one that
    /// splits by prefix, the executions whose first `split_depth` decisions
    /// hash to `index`. The `count` partitions of a run explore between them
    /// exactly what the run explores. A strategy that cannot split is an
    /// error ([`ExploreError::CannotSplit`](crate::ExploreError::CannotSplit)). Default: none, the whole run.
    pub partition: Option<Partition>,
    /// Decisions whose hash picks the partition of an execution, for
    /// strategies that split by prefix (`--split-depth`): deeper spreads
    /// the work more evenly, at the cost of every partition running the
    /// tree above it. Default 6.
    pub split_depth: usize,
    /// Shared by the workers of a run split by execution (`check --jobs`):
    /// a worker stops before an execution whose global index is above the
    /// lowest failing one, and lowers it when its own execution fails (with
    /// `stop_on_first_bug`); the report passed to the progress callback
    /// after each execution then carries the strategy's counters, so that
    /// it can be cut there. Default: none.
    pub lowest_bug: Option<LowestBug>,
    /// Shared by the workers of a run split by execution whose strategy's
    /// blocks are open ([`Blocks::Open`](super::blocks::Blocks::Open)): the
    /// sizes of the blocks that ended, which count the budget and number
    /// the bug (`check --jobs` renumbers it from them). Required to
    /// partition such a run. Default: none.
    pub open_sizes: Option<OpenSizes>,
    /// Set by another worker whose result makes this run moot (`check
    /// --jobs` on a phased strategy, whose earlier opening ended the run):
    /// the run ends before its next execution, and its report is thrown
    /// away. Default: none.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Config {
    /// This configuration with every snapshot policy off
    /// (`snapshot_every_cost`, `snapshot_resume_returns`,
    /// `snapshot_forced_prefix`): every start but a saved state's replays
    /// from the program's initial state. For tests comparing policies.
    pub fn without_snapshots(self) -> Self {
        Config {
            snapshot_every_cost: None,
            snapshot_resume_returns: None,
            snapshot_forced_prefix: false,
            ..self
        }
    }

    /// Bugs a run keeps in `Report::bugs` at most: one when it stops at
    /// its first, else `max_bugs_kept`.
    pub fn bugs_kept(&self) -> usize {
        if self.stop_on_first_bug {
            1
        } else {
            self.max_bugs_kept
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_executions: 100_000,
            max_steps: 10_000,
            fairness_bound: Some(fairness::DEFAULT_FAIRNESS_BOUND),
            time_budget: None,
            snapshot_every_cost: Some(200_000),
            snapshot_resume_returns: Some(5),
            snapshot_forced_prefix: true,
            max_snapshots: 64,
            stop_on_first_bug: true,
            max_bugs_kept: 1_000,
            max_saved_snapshots: 65_536,
            max_saved_bytes: 512 << 20,
            partition: None,
            split_depth: 6,
            lowest_bug: None,
            open_sizes: None,
            cancel: None,
        }
    }
}
