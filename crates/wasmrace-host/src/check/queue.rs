//! `check --jobs N` for a strategy whose jobs depend on nothing but
//! themselves ([`Split::Jobs`](wasmrace_explore::Split::Jobs), the
//! TruSt-style prototype): N threads, each with its own program instance,
//! take jobs from one queue and put their children back; the executions
//! are the same whichever thread runs which job. Prototype: the budget is
//! each thread's, and the bug reported is the first a thread found.

use super::jobs::{on_threads, progress_ticks};
use super::{explore_err, finish_check, CheckOptions, CheckOutcome};
use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::explorer::partition::merge_reports;
use wasmrace_explore::strategies::systematic::trust::JobQueue;
use wasmrace_explore::{ExploreError, Explorer, Report};

pub(super) fn check_queue(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<CheckOutcome, HostError> {
    let queue = JobQueue::new();
    let tick = progress_ticks(progress);
    let (tick, queue_ref) = (&tick, &queue);
    let mut parts = on_threads(jobs as usize, |_| {
        let program = match guest.program(test) {
            Ok(p) => p,
            Err(e) => {
                queue_ref.stop();
                return Err(e);
            }
        };
        let mut explorer = Explorer::new(program, opts.explore.clone());
        let mut strategy = opts.strategy.build(opts.seed);
        let shared = (strategy.capabilities_mut())
            .and_then(|c| c.splitting_mut())
            .is_some_and(|s| s.share_jobs(queue_ref.clone()));
        if !shared {
            queue_ref.stop();
            return Err(explore_err(ExploreError::CannotSplit {
                strategy: strategy.name().to_string(),
            }));
        }
        let report = explorer
            .run_with_progress(&mut *strategy, &mut |_| tick())
            .map_err(explore_err);
        // A thread that ends (a bug, a bound) ends the run.
        queue_ref.stop();
        Ok((explorer, report?, strategy.name().to_string()))
    })?;
    let reports: Vec<Report> = parts.iter().map(|(_, r, _)| r.clone()).collect();
    let report = merge_reports(&reports);
    // The explorer that found the bug (if any) traces it.
    parts.sort_by_key(|(_, r, _)| std::cmp::Reverse(r.first_bug().is_some()));
    let (explorer, _, name) = parts.swap_remove(0);
    finish_check(guest, test, opts, explorer, report, name)
}
