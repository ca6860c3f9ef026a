//! `check --jobs N` for a strategy that runs in rounds (`ses`,
//! [`Split::Rounds`](wasmrace_explore::Split::Rounds)): the threads run
//! each round's executions side by side through the pool the strategy
//! makes ([`RoundsPool`]), which counts them in one thread's order; the
//! report is the one-thread run's (the work done, such as saved states
//! and steps, aside).

use super::threads::{on_threads, progress_ticks};
use super::{explore_err, finish_check, CheckOptions, CheckOutcome};
use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::{ExploreError, Explorer, Report};

/// [`check_jobs`](super::check_jobs) for a strategy that runs in rounds,
/// on `jobs` threads.
pub(super) fn check_rounds(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<CheckOutcome, HostError> {
    let mut strategy = opts.strategy.build(opts.seed);
    let pool = strategy
        .splitting()
        .and_then(|s| s.rounds(&opts.explore, jobs as usize))
        .ok_or_else(|| {
            explore_err(ExploreError::CannotSplit {
                strategy: strategy.name().to_string(),
            })
        })?;
    let tick = progress_ticks(progress);
    let (tick, pool_ref) = (&tick, &pool);
    let mut parts = on_threads(jobs as usize, |_| {
        let program = match guest.program(test) {
            Ok(p) => p,
            Err(e) => {
                // No worker must wait for an execution this one took.
                pool_ref.leave();
                return Err(e);
            }
        };
        let mut explorer = Explorer::new(program, opts.explore.clone());
        let mut strategy = opts.strategy.build(opts.seed);
        let report = explorer
            .run_rounds(&mut *strategy, &mut (), &mut |_| tick(), pool_ref)
            .map_err(explore_err)?;
        Ok((explorer, report, strategy.name().to_string()))
    })?;
    let reports: Vec<Report> = parts.iter().map(|(_, r, _)| r.clone()).collect();
    let report = pool.settle(&reports, &opts.explore);
    // The program of the worker that ran most says whether the test had
    // anything to interleave, and traces the bug.
    parts.sort_by_key(|(_, r, _)| std::cmp::Reverse(r.executions));
    let (explorer, _, name) = parts.swap_remove(0);
    finish_check(guest, test, opts, explorer, report, name)
}
