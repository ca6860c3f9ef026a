//! Replaying a schedule file exactly: one execution that takes the file's
//! decisions, traced, with where it stopped fitting the program.

use super::single::explore_err;
use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::strategies::{Divergence, Replay};
use wasmrace_explore::{Config, Explorer};
use wasmrace_trace::{Failure, Schedule, TraceEvent};

/// What replaying a schedule file did.
#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// The failure the schedule led to, if it did.
    pub failure: Option<Failure>,
    /// The interleaving replayed, step by step.
    pub trace: Vec<TraceEvent>,
    /// Where the schedule stopped fitting the program, if it did.
    pub divergence: Option<Divergence>,
    /// Steps replayed.
    pub steps: usize,
}

impl ReplayOutcome {
    /// The failure recorded in the file came back, identical (its hint
    /// aside: a file written before the host knew a hint still matches).
    pub fn reproduces(&self, schedule: &Schedule) -> bool {
        let without_hint = |f: &Option<Failure>| {
            f.clone().map(|mut f| {
                f.hint = None;
                f
            })
        };
        self.failure.is_some() && without_hint(&self.failure) == without_hint(&schedule.failure)
    }
}

/// Replays a schedule file against `guest`, refusing one recorded on another
/// module or for a test the module does not have.
pub fn replay(
    guest: &Guest,
    schedule: &Schedule,
    max_steps: u64,
) -> Result<ReplayOutcome, HostError> {
    if schedule.module_blake3 != guest.module_hash() {
        return Err(HostError::ScheduleModule {
            name: guest.name().into(),
            expected: schedule.module_blake3.clone(),
            found: guest.module_hash().into(),
        });
    }
    let mut program = guest.program(&schedule.test)?;
    program.set_tracing(true);
    let mut strategy = Replay::from_schedule(schedule);
    // The schedule's decisions were each schedulable when recorded, fair
    // or not: a replay takes them as they are, whatever fairness bound
    // found them (yields are still counted, so a livelock is one again).
    let config = Config {
        max_executions: 1,
        max_steps,
        snapshot_every_cost: None,
        fairness_bound: None,
        ..Config::default()
    };
    let mut explorer = Explorer::new(program, config);
    let report = explorer.run(&mut strategy).map_err(explore_err)?;
    let failure = report.first_bug().map(|b| b.failure.clone());
    let trace = explorer.program.take_trace();
    Ok(ReplayOutcome {
        failure,
        trace,
        divergence: strategy.divergence().cloned(),
        steps: strategy.replayed(),
    })
}
