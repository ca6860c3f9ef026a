//! Schedule shrinking: from a failing schedule, one with the same failure
//! (kind and location) and the fewest preemptions, then the fewest context
//! switches, then the fewest steps.
//!
//! The method is Jalbert & Sen's trace simplification (Tinertia, "A Trace
//! Simplification Technique for Effective Debugging of Concurrent
//! Programs", FSE 2010), as dejafu's trace simplification also does it: view
//! the schedule as blocks of consecutive steps of one thread, and remove a
//! context switch by moving a block next to another block of the same
//! thread; keep the change when a replay still fails the same way and the
//! schedule got smaller, until no move helps. The moves at a switch from
//! thread `t` to `u`, in the order they are tried:
//! - `t` continues with its next block (pulled forward to the switch);
//! - `t` runs on with all its remaining steps (non-preemptive completion of
//!   `t`);
//! - `t`'s block is pushed later, next to its following block;
//! - `u`'s block is deferred to the end.
//!
//! Preemptive switches are tried first. A candidate is a list of decisions
//! replayed leniently (`Plan`): decisions of threads that are blocked wait,
//! those of exited threads are dropped, and after the list the current
//! thread keeps running (the deterministic completion). The schedule kept is
//! the one the replay actually ran, so it replays exactly. Replays restore
//! snapshots taken along the current schedule instead of starting over.
//!
//! The result is 1-minimal when the search reached its fixed point within
//! the budget: at the end every preemption's removal (the first two moves)
//! was replayed and none kept the failure with fewer preemptions
//! ([`Shrunk::one_minimal`]).

use super::{ended_in, mark_step, program_for, recorded_failure, running, same_failure};
use super::{Plan, StepMark};
use crate::check::{trace_schedule, BugReport};
use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use crate::snapshot::Snapshot;
use wasmrace_explore::{Config, Program};
use wasmrace_trace::{Decision, Failure, Schedule, ScheduleStep, Tid};

/// How hard [`shrink`] tries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrinkOptions {
    /// Steps the candidate replays may run in all (a count, not a time, so
    /// the result is deterministic). When it runs out, the best schedule so
    /// far is returned, not known to be 1-minimal.
    pub budget_steps: u64,
    /// Steps an execution may take; `None`: the schedule's recorded
    /// `max_steps`, else the explorer's default.
    pub max_steps: Option<u64>,
}

impl Default for ShrinkOptions {
    /// A budget of 20 million steps (a few seconds at most).
    fn default() -> Self {
        ShrinkOptions {
            budget_steps: 20_000_000,
            max_steps: None,
        }
    }
}

impl ShrinkOptions {
    /// The small budget `check` shrinks each bug within (200,000 steps,
    /// well under a second).
    pub fn for_check() -> Self {
        ShrinkOptions {
            budget_steps: 200_000,
            max_steps: None,
        }
    }
}

/// A schedule's size, as shrinking orders schedules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct ScheduleStats {
    /// Switches away from a thread that could have continued.
    pub preemptions: usize,
    /// Steps that ran another thread than the step before, preemptive or not.
    pub switches: usize,
    /// Steps.
    pub steps: usize,
}

/// What [`shrink`] found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The input schedule's size.
    pub before: ScheduleStats,
    /// The shrunk schedule's size.
    pub after: ScheduleStats,
    /// The shrunk schedule: the input's header and settings, its decisions
    /// and the failure it leads to.
    pub schedule: Schedule,
    /// Candidate schedules replayed.
    pub candidates: u64,
    /// Whether the search reached its fixed point: no single move, removing
    /// a preemption included, keeps the failure and makes the schedule
    /// smaller. False when the budget ran out first.
    pub one_minimal: bool,
}

/// What a lenient replay of a list of decisions ran ([`run_candidate`]).
#[derive(Clone, Debug)]
pub struct CandidateRun {
    /// The decisions actually taken, in order.
    pub decisions: Vec<Decision>,
    /// The failure the execution ended in, if any.
    pub failure: Option<Failure>,
    /// Its size.
    pub stats: ScheduleStats,
}

/// Shrinks `schedule`, which must reproduce the failure it records on
/// `guest` (loaded with the schedule's settings: see `wasmrace replay`).
///
/// ```no_run
/// use wasmrace_host::{Guest, HostConfig, Schedule};
/// use wasmrace_host::{shrink, ShrinkOptions};
/// let schedule = Schedule::read("bug.schedule.json".as_ref())?;
/// let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
/// let small = shrink(&guest, &schedule, &ShrinkOptions::default())?;
/// println!("{} preemptions, was {}", small.after.preemptions, small.before.preemptions);
/// std::fs::write("small.json", small.schedule.to_json())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`HostError::NotReproduced`] when the schedule does not lead to the
/// failure it records; the host's errors otherwise.
pub fn shrink(
    guest: &Guest,
    schedule: &Schedule,
    opts: &ShrinkOptions,
) -> Result<Shrunk, HostError> {
    let target = recorded_failure(schedule)?;
    let mut program = program_for(guest, schedule)?;
    let max_steps = max_steps(schedule, opts);
    let decisions = schedule.decisions();
    let mut shrunk = shrink_decisions(
        &mut program,
        &decisions,
        &target,
        max_steps,
        opts.budget_steps,
    )?;
    shrunk.schedule.module_blake3 = schedule.module_blake3.clone();
    shrunk.schedule.test = schedule.test.clone();
    shrunk.schedule.strategy = schedule.strategy.clone();
    shrunk.schedule.seed = schedule.seed;
    shrunk.schedule.options = schedule.options.clone();
    shrunk.schedule.settings = schedule.settings.clone();
    Ok(shrunk)
}

/// Replaces `bug`'s schedule, trace and failure by their shrunk form when
/// shrinking within `opts` made the schedule smaller, and records in
/// [`BugReport::shrunk_from`] what it was; `wasmrace check` does this for
/// every bug it reports unless given `--no-shrink`.
pub fn shrink_bug(
    guest: &Guest,
    bug: &mut BugReport,
    opts: &ShrinkOptions,
) -> Result<(), HostError> {
    let shrunk = shrink(guest, &bug.schedule, opts)?;
    if shrunk.after >= shrunk.before {
        return Ok(());
    }
    let mut program = guest.program(&bug.schedule.test)?;
    let (trace, _) = trace_schedule(&mut program, &shrunk.schedule.decisions())?;
    bug.trace = trace;
    if let Some(f) = &shrunk.schedule.failure {
        bug.failure = f.clone();
    }
    bug.schedule = shrunk.schedule;
    bug.shrunk_from = Some(shrunk.before);
    Ok(())
}

/// Replays `decisions` leniently from the start of `schedule`'s test, as
/// shrinking replays its candidates, and says what ran.
pub fn run_candidate(
    guest: &Guest,
    schedule: &Schedule,
    decisions: &[Decision],
) -> Result<CandidateRun, HostError> {
    let mut program = program_for(guest, schedule)?;
    let max_steps = max_steps(schedule, &ShrinkOptions::default());
    program.reset()?;
    let mut marks = Vec::new();
    run_plan(
        &mut program,
        Plan::new(decisions.to_vec()),
        &mut marks,
        max_steps,
    )?;
    let failure = ended_in(&program, max_steps);
    Ok(CandidateRun {
        decisions: marks.iter().map(|m| m.decision).collect(),
        failure,
        stats: stats(&marks),
    })
}

fn max_steps(schedule: &Schedule, opts: &ShrinkOptions) -> u64 {
    opts.max_steps
        .or(schedule.settings.max_steps)
        .unwrap_or(Config::default().max_steps)
}

/// Shrinks `decisions`, which must lead `program` to `target`'s failure.
/// The schedule returned has an empty header: the caller fills it in.
pub(crate) fn shrink_decisions(
    program: &mut WasmProgram,
    decisions: &[Decision],
    target: &Failure,
    max_steps: u64,
    budget_steps: u64,
) -> Result<Shrunk, HostError> {
    let mut s = Shrinker {
        program,
        target: target.clone(),
        max_steps,
        budget: budget_steps,
        candidates: 0,
        snaps: Vec::new(),
    };
    let start = s.exact(decisions)?;
    let before = stats(&start.marks);
    let mut current = start;
    let one_minimal = loop {
        match s.improve(&current)? {
            Step::Better(e) => current = e,
            Step::Fixed => break true,
            Step::OutOfBudget => break false,
        }
    };
    let steps = current
        .marks
        .iter()
        .map(|m| ScheduleStep {
            thread: s.program.thread_name(m.decision.tid),
            alt: m.decision.alt,
        })
        .collect();
    let schedule = Schedule::new(
        String::new(),
        String::new(),
        String::new(),
        0,
        serde_json::Value::Null,
        current.failure.clone(),
        steps,
    );
    Ok(Shrunk {
        before,
        after: stats(&current.marks),
        schedule,
        candidates: s.candidates,
        one_minimal,
    })
}

/// Counts a schedule's preemptions, switches and steps.
fn stats(marks: &[StepMark]) -> ScheduleStats {
    ScheduleStats {
        preemptions: marks.iter().filter(|m| m.preemption).count(),
        switches: marks.iter().filter(|m| m.switch).count(),
        steps: marks.len(),
    }
}

/// Runs `plan` leniently from the program's current state, appending each
/// step to `marks`, until the execution ends or the step bound.
fn run_plan(
    program: &mut WasmProgram,
    mut plan: Plan,
    marks: &mut Vec<StepMark>,
    max_steps: u64,
) -> Result<(), HostError> {
    while running(program, max_steps) {
        let last = marks.last().copied();
        let Some(d) = plan.pick(program, last.map(|m| m.decision.tid)) else {
            break;
        };
        marks.push(mark_step(program, last, d)?);
    }
    Ok(())
}

/// An execution of a candidate: its steps and how it ended.
struct Exec {
    marks: Vec<StepMark>,
    failure: Option<Failure>,
}

impl Exec {
    fn decisions(&self) -> Vec<Decision> {
        self.marks.iter().map(|m| m.decision).collect()
    }
}

enum Step {
    Better(Exec),
    Fixed,
    OutOfBudget,
}

/// At most this many snapshots are kept along the current schedule.
const MAX_SNAPSHOTS: usize = 256;

struct Shrinker<'a> {
    program: &'a mut WasmProgram,
    target: Failure,
    max_steps: u64,
    budget: u64,
    candidates: u64,
    /// States before step `k` of the current schedule, `k` increasing.
    snaps: Vec<(usize, Snapshot)>,
}

impl Shrinker<'_> {
    /// Runs `decisions` exactly from the start, snapshotting along the way;
    /// refuses a list that does not lead to the target failure.
    fn exact(&mut self, decisions: &[Decision]) -> Result<Exec, HostError> {
        self.program.reset()?;
        self.snaps.clear();
        let stride = decisions.len().div_ceil(MAX_SNAPSHOTS).max(1);
        let mut marks: Vec<StepMark> = Vec::with_capacity(decisions.len());
        for (k, &d) in decisions.iter().enumerate() {
            if !running(self.program, self.max_steps) {
                break;
            }
            if k % stride == 0 {
                if let Some(snap) = self.program.snapshot()? {
                    self.snaps.push((k, snap));
                }
            }
            let enabled = self
                .program
                .threads()
                .iter()
                .any(|t| t.tid == d.tid && t.pending.enabled && d.alt < t.pending.alts);
            if !enabled {
                return Err(self.not_reproduced(format!(
                    "step {} names `{}`, which is not enabled there",
                    k + 1,
                    self.program.thread_name(d.tid)
                )));
            }
            marks.push(mark_step(self.program, marks.last().copied(), d)?);
        }
        let failure = ended_in(self.program, self.max_steps);
        match &failure {
            Some(f) if same_failure(&self.target, f) => Ok(Exec { marks, failure }),
            Some(f) => Err(self.not_reproduced(format!("it fails with {f}"))),
            None => {
                Err(self.not_reproduced(format!("its {} steps lead to no failure", marks.len())))
            }
        }
    }

    fn not_reproduced(&self, why: String) -> HostError {
        HostError::NotReproduced {
            failure: self.target.to_string(),
            why,
        }
    }

    /// Tries the moves at every switch of `current`, preemptions first, and
    /// returns the first candidate that keeps the failure and is smaller.
    fn improve(&mut self, current: &Exec) -> Result<Step, HostError> {
        let key = stats(&current.marks);
        let decisions = current.decisions();
        let blocks = blocks(&decisions);
        let mut order: Vec<usize> = (0..blocks.len().saturating_sub(1)).collect();
        // Preemptive switches first, each group in schedule order.
        order.sort_by_key(|&i| !current.marks[blocks[i + 1].0].preemption);
        for i in order {
            for (from, plan) in moves(&decisions, &blocks, i) {
                if self.budget == 0 {
                    return Ok(Step::OutOfBudget);
                }
                let e = self.candidate(current, from, plan)?;
                let better = e
                    .failure
                    .as_ref()
                    .is_some_and(|f| same_failure(&self.target, f))
                    && stats(&e.marks) < key;
                if better {
                    // Re-run it exactly, for the snapshots along it.
                    let exact = self.exact(&e.decisions())?;
                    return Ok(Step::Better(exact));
                }
            }
        }
        Ok(Step::Fixed)
    }

    /// Replays `plan`, whose first `from` decisions are `current`'s, from
    /// the latest snapshot at or before `from`.
    fn candidate(
        &mut self,
        current: &Exec,
        from: usize,
        plan: Vec<Decision>,
    ) -> Result<Exec, HostError> {
        self.candidates += 1;
        let at = self.snaps.partition_point(|(k, _)| *k <= from);
        let start = match at.checked_sub(1) {
            Some(i) => {
                self.program.restore(&self.snaps[i].1)?;
                self.snaps[i].0
            }
            None => {
                self.program.reset()?;
                0
            }
        };
        let mut marks: Vec<StepMark> = current.marks[..start].to_vec();
        let before = self.program.steps();
        run_plan(
            self.program,
            Plan::new(plan[start..].to_vec()),
            &mut marks,
            self.max_steps,
        )?;
        let ran = self.program.steps() - before;
        self.budget = self.budget.saturating_sub(ran.max(1));
        Ok(Exec {
            failure: ended_in(self.program, self.max_steps),
            marks,
        })
    }
}

/// The schedule's blocks: `(start, end, thread)` of each maximal run of
/// steps of one thread.
fn blocks(decisions: &[Decision]) -> Vec<(usize, usize, Tid)> {
    let mut out: Vec<(usize, usize, Tid)> = Vec::new();
    for (k, d) in decisions.iter().enumerate() {
        match out.last_mut() {
            Some(b) if b.2 == d.tid => b.1 = k + 1,
            _ => out.push((k, k + 1, d.tid)),
        }
    }
    out
}

/// The candidate moves at the switch after block `i` (see the module
/// documentation), each as the first index it changes and the new list.
fn moves(d: &[Decision], blocks: &[(usize, usize, Tid)], i: usize) -> Vec<(usize, Vec<Decision>)> {
    let (s, e, t) = blocks[i];
    let next_t = blocks[i + 2..].iter().find(|b| b.2 == t).copied();
    let mut out = Vec::new();
    if let Some((ns, ne, _)) = next_t {
        // `t` continues: its next block right after this one.
        out.push((e, [&d[..e], &d[ns..ne], &d[e..ns], &d[ne..]].concat()));
    }
    // `t` runs on: all its later steps first.
    let (mine, others): (Vec<Decision>, Vec<Decision>) = d[e..].iter().partition(|x| x.tid == t);
    if next_t.is_some_and(|(ns, ne, _)| mine.len() > ne - ns) {
        out.push((e, [&d[..e], &mine[..], &others[..]].concat()));
    }
    // This block later, next to `t`'s following block (or at the end).
    let to = next_t.map_or(d.len(), |b| b.0);
    out.push((s, [&d[..s], &d[e..to], &d[s..e], &d[to..]].concat()));
    // The next block deferred to the end.
    let (us, ue, _) = blocks[i + 1];
    if ue < d.len() {
        out.push((us, [&d[..us], &d[ue..], &d[us..ue]].concat()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: u64) -> Decision {
        Decision::new(Tid(t), 0)
    }

    #[test]
    fn blocks_are_maximal_runs_of_one_thread() {
        let ds = [d(1), d(1), d(2), d(1), d(3), d(3)];
        assert_eq!(
            blocks(&ds),
            vec![
                (0, 2, Tid(1)),
                (2, 3, Tid(2)),
                (3, 4, Tid(1)),
                (4, 6, Tid(3))
            ]
        );
    }

    /// At the switch from thread 1 to 2, the moves are: 1 continues, 1 runs
    /// on, 1's block later, 2's block at the end.
    #[test]
    fn moves_at_a_switch() {
        let ds = [d(1), d(2), d(1), d(3), d(1)];
        let b = blocks(&ds);
        let m = moves(&ds, &b, 0);
        let tids = |v: &Vec<Decision>| v.iter().map(|x| x.tid.0).collect::<Vec<_>>();
        assert_eq!(m[0].0, 1);
        assert_eq!(tids(&m[0].1), [1, 1, 2, 3, 1]);
        assert_eq!(tids(&m[1].1), [1, 1, 1, 2, 3]);
        assert_eq!(m[2].0, 0);
        assert_eq!(tids(&m[2].1), [2, 1, 1, 3, 1]);
        assert_eq!(m[3].0, 1);
        assert_eq!(tids(&m[3].1), [1, 1, 3, 1, 2]);
        assert!(m.iter().all(|(_, v)| v.len() == ds.len()));
    }
}
