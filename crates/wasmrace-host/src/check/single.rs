//! The one-thread run, the layer every check stands on: explore a test
//! with one strategy on this thread ([`explore`]) into an [`Explored`],
//! then turn that into the check's outcome, its first bug traced into a
//! schedule file ([`outcome`]). `check`'s entries call it directly; the
//! parallel room (`parallel/`) falls back to it, and hands its workers'
//! run back as an [`Explored`] too, for the entry to turn into the
//! outcome the same way.

use super::options::CheckOptions;
use super::outcome::{BugReport, CheckOutcome, NothingToInterleave, RaceReport};
use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use wasmrace_explore::{ExploreError, Explorer, Program, Report, Status, Strategy};
use wasmrace_trace::{Decision, Schedule, ScheduleStep, TraceEvent};

/// What an exploration leaves for its outcome: the explorer with its
/// program (which names races and traces the bug), the report, and the
/// strategy's name for the schedule file.
pub(super) struct Explored {
    pub(super) explorer: Explorer<WasmProgram>,
    pub(super) report: Report,
    pub(super) strategy: String,
}

/// Explores `test` with `strategy` on this thread, calling `progress`
/// after every execution.
pub(super) fn explore(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    strategy: &mut dyn Strategy,
    progress: &mut dyn FnMut(&Report),
) -> Result<Explored, HostError> {
    let program = guest.program(test)?;
    let mut explorer = Explorer::new(program, opts.explore.clone());
    let report = explorer
        .run_with_progress(strategy, progress)
        .map_err(explore_err)?;
    Ok(Explored {
        explorer,
        report,
        strategy: strategy.name().to_string(),
    })
}

/// How often, in executions, a counting progress callback is called: often
/// enough for a bar, rarely enough to cost nothing next to the executions.
pub(super) const PROGRESS_EVERY: u64 = 100;

/// [`explore`] with `opts`' strategy, calling `progress` with the
/// executions every [`PROGRESS_EVERY`], as the parallel room's workers
/// count them together: `check --jobs 1`, and a run the room keeps on one
/// thread.
pub(super) fn explore_counting(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Explored, HostError> {
    let mut strategy = opts.strategy.build(opts.seed);
    explore(guest, test, opts, &mut *strategy, &mut |r| {
        if r.executions.is_multiple_of(PROGRESS_EVERY) {
            progress(r.executions)
        }
    })
}

/// The explorer's error as the host's: the program's own, or the
/// explorer's in words.
pub(super) fn explore_err(e: ExploreError<HostError>) -> HostError {
    match e {
        ExploreError::Program(h) => h,
        other => HostError::Runtime {
            message: other.to_string(),
        },
    }
}

/// The outcome of what was explored, on one thread or several: real races
/// named, the first bug traced and turned into a schedule file.
pub(super) fn outcome(
    explored: Explored,
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
) -> Result<CheckOutcome, HostError> {
    let Explored {
        mut explorer,
        report,
        strategy: strategy_name,
    } = explored;
    let races = (report.real_races.iter())
        .map(|r| {
            let mut name = |s: u64| {
                explorer
                    .program
                    .describe_site(s)
                    .unwrap_or_else(|| format!("site {s:#x}"))
            };
            let sites = (name(r.sites.0), name(r.sites.1));
            RaceReport {
                sites,
                object: explorer.program.describe_object(r.obj),
                count: r.count,
                executions: r.executions,
                first_execution: r.first_execution,
                key: (r.sites.0, r.sites.1, r.obj.0),
            }
        })
        .collect();
    let bug = match report.first_bug() {
        Some(b) => {
            let (trace, _) = trace_schedule(&mut explorer.program, &b.schedule)?;
            let steps = schedule_steps(&explorer.program, &b.schedule);
            let mut schedule = Schedule::new(
                guest.module_hash().to_string(),
                test.to_string(),
                strategy_name.clone(),
                opts.seed,
                opts.to_json(),
                Some(b.failure.clone()),
                steps,
            );
            schedule.settings = guest.config().schedule_settings(opts.explore.max_steps);
            Some(BugReport {
                failure: b.failure.clone(),
                found_by: b.found_by.clone(),
                trace,
                schedule,
                execution: b.execution,
                shrunk_from: None,
            })
        }
        None => None,
    };
    Ok(CheckOutcome {
        nothing_to_interleave: NothingToInterleave::of(&explorer.program),
        test: test.into(),
        strategy: strategy_name,
        seed: opts.seed,
        report,
        bug,
        races,
        data_races: explorer.program.take_races().reported(),
    })
}

fn schedule_steps(program: &WasmProgram, decisions: &[Decision]) -> Vec<ScheduleStep> {
    decisions
        .iter()
        .map(|d| ScheduleStep {
            thread: program.thread_name(d.tid),
            alt: d.alt,
        })
        .collect()
}

/// Runs `decisions` from a fresh start with tracing on; returns the trace
/// and the status after the last decision. The program is left at that point.
pub fn trace_schedule(
    program: &mut WasmProgram,
    decisions: &[Decision],
) -> Result<(Vec<TraceEvent>, Status), HostError> {
    program.set_tracing(true);
    let result = (|| {
        program.reset()?;
        for &d in decisions {
            if !matches!(program.status(), Status::Running) {
                break;
            }
            program.step(d)?;
        }
        Ok((program.take_trace(), program.status().clone()))
    })();
    program.set_tracing(false);
    result
}
