//! The workers every way of the room runs on: scoped threads of this
//! process, each with its own program instance, and the progress ticks
//! they count together.

use crate::check::single::PROGRESS_EVERY;
use crate::error::HostError;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs `work(0)` to `work(jobs - 1)` on `jobs` scoped threads and
/// collects their results in order: the first error if any failed, a
/// thread's panic carried on.
pub(super) fn on_threads<T: Send>(
    jobs: usize,
    work: impl Fn(usize) -> Result<T, HostError> + Sync,
) -> Result<Vec<T>, HostError> {
    let work = &work;
    let results: Vec<Result<T, HostError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..jobs).map(|j| scope.spawn(move || work(j))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect()
}

/// A tick for every execution any worker ends, calling `progress` with
/// the count every [`PROGRESS_EVERY`], as a run on one thread calls it.
pub(super) fn progress_ticks(progress: &(dyn Fn(u64) + Sync)) -> impl Fn() + Sync + '_ {
    let ended = AtomicU64::new(0);
    move || {
        let n = ended.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            progress(n);
        }
    }
}
