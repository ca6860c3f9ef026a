//! Explaining a failing schedule: [`shrink`](shrink::shrink) finds a smaller
//! one with the same failure, [`bisect`](bisect::bisect) finds where along
//! it the failure became likely, then certain. Both run schedules directly
//! on a [`WasmProgram`] with snapshots and restores; this file holds what
//! they share: what "the same failure" means, and a driver that runs a list
//! of decisions leniently and measures the execution it ran.

pub mod bisect;
pub mod shrink;

use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use wasmrace_explore::{is_preemption, Program, Status};
use wasmrace_trace::{Decision, Failure, FailureKind, OpKind, Schedule, Tid};

/// Whether `found` is the same failure as `target`: the same kind at the
/// same source location. The message and the failing thread may differ (an
/// assertion's values, the thread names of a shorter interleaving), the bug
/// may not.
pub fn same_failure(target: &Failure, found: &Failure) -> bool {
    target.kind == found.kind && target.location == found.location
}

/// The failure a schedule file records, or an error saying it records none
/// (shrinking or bisecting a passing schedule means nothing).
pub(crate) fn recorded_failure(schedule: &Schedule) -> Result<Failure, HostError> {
    schedule.failure.clone().ok_or_else(|| HostError::Runtime {
        message: format!(
            "the schedule of test `{}` records no failure to explain",
            schedule.test
        ),
    })
}

/// The program for `schedule`'s test, refusing a schedule recorded on
/// another module.
pub(crate) fn program_for(guest: &Guest, schedule: &Schedule) -> Result<WasmProgram, HostError> {
    if schedule.module_blake3 != guest.module_hash() {
        return Err(HostError::ScheduleModule {
            name: guest.name().into(),
            expected: schedule.module_blake3.clone(),
            found: guest.module_hash().into(),
        });
    }
    guest.program(&schedule.test)
}

/// The status of the current execution as an explorer would end it: a
/// failure, the step bound (`max_steps`, reported as the explorer does), or
/// `None` while it may go on or once it finished.
pub(crate) fn ended_in(program: &WasmProgram, max_steps: u64) -> Option<Failure> {
    match program.status() {
        Status::Failed(f) => Some(f.clone()),
        Status::Finished => None,
        Status::Running if program.steps() >= max_steps => Some(Failure::new(
            FailureKind::StepLimit,
            None,
            format!(
                "execution exceeded `{max_steps}` steps (possible livelock); raise --max-steps"
            ),
        )),
        Status::Running => None,
    }
}

/// Whether the current execution can take another step.
pub(crate) fn running(program: &WasmProgram, max_steps: u64) -> bool {
    matches!(program.status(), Status::Running) && program.steps() < max_steps
}

/// What one step of an executed schedule was, for counting preemptions and
/// switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StepMark {
    pub decision: Decision,
    pub op: Option<OpKind>,
    /// The step switched away from a thread that could have continued.
    pub preemption: bool,
    /// The step ran another thread than the step before it.
    pub switch: bool,
}

/// Runs one decision and says how it related to the previous step.
pub(crate) fn mark_step(
    program: &mut WasmProgram,
    last: Option<StepMark>,
    d: Decision,
) -> Result<StepMark, HostError> {
    let prev = last.map(|m| (m.decision.tid, m.op));
    let preemption = is_preemption(program.threads(), prev, d.tid);
    let switch = last.is_some_and(|m| m.decision.tid != d.tid);
    let op = program.step(d)?.op;
    Ok(StepMark {
        decision: d,
        op,
        preemption,
        switch,
    })
}

/// A list of decisions replayed leniently: the next decision taken is the
/// first planned one whose thread is enabled; planned decisions of threads
/// that exited are dropped, those of blocked threads wait until their thread
/// is enabled. With nothing left to take, the default completion: the last
/// thread keeps running while it is enabled, else the first enabled thread
/// in creation order, alternative 0 (non-preemptive completion). Kept as a
/// linked list so that taking from the middle is O(1).
pub(crate) struct Plan {
    decisions: Vec<Decision>,
    next: Vec<usize>,
    head: usize,
}

const END: usize = usize::MAX;

impl Plan {
    pub(crate) fn new(decisions: Vec<Decision>) -> Self {
        let n = decisions.len();
        let next = (1..=n).map(|i| if i == n { END } else { i }).collect();
        Plan {
            decisions,
            next,
            head: if n == 0 { END } else { 0 },
        }
    }

    fn unlink(&mut self, prev: usize, j: usize) {
        if prev == END {
            self.head = self.next[j];
        } else {
            self.next[prev] = self.next[j];
        }
    }

    /// The next decision to run in `program`'s current state.
    pub(crate) fn pick(&mut self, program: &WasmProgram, last: Option<Tid>) -> Option<Decision> {
        let threads = program.threads();
        let (mut prev, mut j) = (END, self.head);
        while j != END {
            let d = self.decisions[j];
            match threads.iter().find(|t| t.tid == d.tid) {
                None => {
                    self.unlink(prev, j);
                    j = self.next[j];
                    continue;
                }
                Some(t) if t.pending.enabled => {
                    self.unlink(prev, j);
                    return Some(Decision::new(d.tid, d.alt.min(t.pending.alts - 1)));
                }
                Some(_) => {}
            }
            prev = j;
            j = self.next[j];
        }
        let enabled = |tid: Tid| threads.iter().any(|t| t.tid == tid && t.pending.enabled);
        match last {
            Some(t) if enabled(t) => Some(Decision::new(t, 0)),
            _ => threads
                .iter()
                .find(|t| t.pending.enabled)
                .map(|t| Decision::new(t.tid, 0)),
        }
    }
}
