//! What `check` found: the outcome of one test's exploration, its first
//! bug traced into a schedule file, the real races RaceFuzzer created and
//! why a test had nothing to interleave.

use crate::program::WasmProgram;
use wasmrace_explore::Report;
use wasmrace_trace::{Failure, Schedule, TraceEvent};

/// A bug with everything needed to understand and reproduce it.
#[derive(Clone, Debug)]
pub struct BugReport {
    /// What went wrong.
    pub failure: Failure,
    /// The strategy that found it (a portfolio names its member).
    pub found_by: String,
    /// The failing interleaving, step by step.
    pub trace: Vec<TraceEvent>,
    /// The schedule file contents that replay it.
    pub schedule: Schedule,
    /// 1-based index of the execution that found it.
    pub execution: u64,
    /// The size of the schedule the strategy found, when the one above is
    /// its shrunk form ([`shrink_bug`](crate::shrink_bug)); `None` when it
    /// is the strategy's own.
    pub shrunk_from: Option<crate::ScheduleStats>,
}

/// What [`check`](fn@crate::check) did and found.
#[derive(Clone, Debug)]
pub struct CheckOutcome {
    /// The test explored.
    pub test: String,
    /// The strategy's name (`portfolio`, `dfs`, ...).
    pub strategy: String,
    /// The seed it ran with.
    pub seed: u64,
    /// The explorer's report: executions, bounds hit, counters.
    pub report: Report,
    /// The first bug, traced and with its schedule; `None` if none was
    /// found.
    pub bug: Option<BugReport>,
    /// Real races RaceFuzzer created (empty for other strategies).
    pub races: Vec<RaceReport>,
    /// Under `--data-races report`: the distinct data races on plain
    /// memory the run met (empty otherwise).
    pub data_races: crate::hooks::races::ReportedRaces,
    /// Why the test had no interleavings to explore, when it had none: a
    /// pass then means less than usual, and reports say so.
    pub nothing_to_interleave: Option<NothingToInterleave>,
}

/// Why a test had no interleavings to explore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NothingToInterleave {
    /// The test returned without reaching a scheduling point (no SDK
    /// operation that suspends).
    NoSchedulingPoint,
    /// The test spawned no thread: only its `choose` alternatives, if it
    /// has any, were explored.
    NoThread,
}

impl NothingToInterleave {
    /// Why, in words: `the test spawned no thread`.
    pub fn reason(self) -> &'static str {
        match self {
            NothingToInterleave::NoSchedulingPoint => "the test ran no scheduling point",
            NothingToInterleave::NoThread => "the test spawned no thread",
        }
    }

    /// Why `program`'s test had nothing to interleave, once explored.
    pub(super) fn of(program: &WasmProgram) -> Option<Self> {
        if !program.reached_a_scheduling_point() {
            Some(NothingToInterleave::NoSchedulingPoint)
        } else if !program.spawned_a_thread() {
            Some(NothingToInterleave::NoThread)
        } else {
            None
        }
    }
}

/// A real race: two statements RaceFuzzer brought to the same object at
/// the same time, with conflicting accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceReport {
    /// The two statements, as `file:line:col` where the guest tells us.
    pub sites: (String, String),
    /// The object they race on (`cell main#0`).
    pub object: String,
    /// Times the race was created, and in how many executions.
    pub count: u64,
    /// Executions in which it was created.
    pub executions: u64,
    /// 1-based execution that created it first.
    pub first_execution: u64,
    /// The two sites and the object as the strategy numbers them: the
    /// order races are listed in, and what partitions' races merge by
    /// (`wasmrace merge`).
    pub key: (u64, u64, u64),
}
