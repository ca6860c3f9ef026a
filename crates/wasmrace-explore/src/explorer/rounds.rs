//! Runs in rounds on several threads (`check --jobs N` for strategies that
//! split as [`Split::Rounds`](super::Split::Rounds), `ses`): every worker
//! runs the executions the strategy's shared [`RoundsPool`] hands it, with
//! its own program instance, and the pool, which sees each execution end,
//! makes one thread's report of them ([`RoundsPool::settle`]).
//!
//! The explorer's part is small: the pool, not each worker, numbers the
//! bugs and spends the budget (a worker's execution may turn out not to be
//! one thread's as it ran), so a worker runs without either, and when a
//! worker's run ends before the pool's (an error, a time budget, a
//! cancel) the pool is stopped, since the other workers may wait for an
//! execution it had taken.

use super::{Config, ExploreError, Explorer, ProgressFn, Report};
use crate::observer::Observer;
use crate::program::Program;
use crate::strategy::Strategy;
use std::any::Any;
use std::sync::Arc;

/// The state a run in rounds shares between its workers, made by the
/// strategy ([`Splitting::rounds`](crate::Splitting::rounds)) and joined by
/// each worker's strategy ([`Role::Rounds`](crate::Role::Rounds)).
pub trait RoundsPool: Send + Sync + std::fmt::Debug {
    /// The workers' reports as one thread's: its executions, bugs (numbered
    /// in its order, at most [`Config::bugs_kept`]), failing executions,
    /// whether it exhausted its space, the bounds that stopped or pruned
    /// it and the strategy's counters; the work the workers did (steps,
    /// snapshots, restores, saved states) added up, and `executions_run`
    /// the executions they ran in all.
    fn settle(&self, reports: &[Report], cfg: &Config) -> Report;

    /// A worker's run ended; if the pool's is not over, it stops, and every
    /// worker's next `begin` ends its run.
    fn leave(&self);

    /// The pool as `Any`, for the strategy to take its own type back.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<P: Program> Explorer<P> {
    /// Runs `strategy` with `observer` beside it as one of the workers of
    /// `pool` (see the module documentation), each on a thread of its own;
    /// [`RoundsPool::settle`] makes their reports one. The strategy must
    /// join the pool ([`Role::Rounds`](crate::Role::Rounds)),
    /// else this is [`ExploreError::CannotSplit`].
    pub fn run_rounds<O: Observer + ?Sized>(
        &mut self,
        strategy: &mut dyn Strategy,
        observer: &mut O,
        progress: &mut ProgressFn<'_>,
        pool: &Arc<dyn RoundsPool>,
    ) -> Result<Report, ExploreError<P::Error>> {
        let joined = strategy
            .splitting()
            .is_some_and(|s| s.take_role(crate::Role::Rounds(pool.clone())));
        if !joined {
            pool.leave();
            return Err(ExploreError::CannotSplit {
                strategy: strategy.name().to_string(),
            });
        }
        // The pool numbers bugs and spends the budget in one thread's order.
        let cfg = Config {
            stop_on_first_bug: false,
            max_bugs_kept: 0,
            max_executions: u64::MAX,
            ..self.config.clone()
        };
        let report = self.run_in(&cfg, strategy, observer, progress, None);
        pool.leave();
        report
    }
}
