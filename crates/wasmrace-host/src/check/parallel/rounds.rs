//! [`Way::Rounds`](super::Way::Rounds), for a strategy that runs in rounds
//! (`ses`, [`Split::Rounds`](wasmrace_explore::Split::Rounds)): the workers run
//! each round's executions side by side through the pool the strategy
//! makes ([`RoundsPool`]), which counts them in one thread's order; the
//! report is the one-thread run's (the work done, such as saved states
//! and steps, aside).

use super::workers::{on_threads, progress_ticks};
use crate::check::options::CheckOptions;
use crate::check::single::{explore_err, Explored};
use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::{ExploreError, Explorer, Report};

/// The run of a strategy that runs in rounds, on `jobs` workers.
pub(super) fn explore_rounds(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Explored, HostError> {
    let mut strategy = opts.strategy.build(opts.seed);
    let pool = strategy
        .splitting()
        .and_then(|s| s.rounds(&opts.explore, jobs))
        .ok_or_else(|| {
            explore_err(ExploreError::CannotSplit {
                strategy: strategy.name().to_string(),
            })
        })?;
    let tick = progress_ticks(progress);
    let (tick, pool_ref) = (&tick, &pool);
    let mut parts = on_threads(jobs, |_| {
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
    let (explorer, _, strategy) = parts.swap_remove(0);
    Ok(Explored {
        explorer,
        report,
        strategy,
    })
}
