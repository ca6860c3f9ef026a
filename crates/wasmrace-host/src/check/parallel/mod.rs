//! The parallel room: everything about splitting one test's run between
//! the threads of this process (`check --jobs N`) and between machines
//! (`check --partition K/N`, whose reports `wasmrace merge` joins). `check`
//! makes one call here ([`explore`]); the room picks the run's [`Way`]
//! once, runs it, and hands back what was explored for `check` to turn
//! into the outcome, as the one-thread run (`check/single.rs`, the layer
//! below) hands it back. Nothing here calls `check`'s entries.
//!
//! **Glossary** (the room's words, and only these):
//! - *run*: one test's exploration as `check` reports it: one report and
//!   at most one bug, whatever the jobs and partitions.
//! - *jobs*: how many workers `--jobs` asks for. *Worker*: one thread of
//!   this process with its own program instance (`workers.rs`).
//! - *partition* (`--partition K/N`): one machine's part of a run's
//!   executions; the explorer walks only its indices.
//! - *share*: one worker's part of a run split by execution: worker `j` of
//!   partition `K/N` explores partition `K + N * j` of `N * jobs`
//!   (`shares.rs`).
//! - *way*: how the workers split a run, read from the strategy's
//!   `Profile::split`: [`Way::Shares`] (by execution, or a search tree
//!   the workers share through a `SubtreePool`), [`Way::Rounds`] (`ses`:
//!   each round's executions side by side, `rounds.rs`), [`Way::Phases`]
//!   (the portfolio: its *openings* one per worker, then the *sampling*
//!   phase in shares, `phases.rs`), or [`Way::OneThread`].
//! - *lowest bug*: the failing execution with the lowest index
//!   (`LowestBug`); no worker begins one above it, and the run stops there
//!   as one thread stops at it.
//! - *frontier*, *cut*: per worker, the index at or below its next
//!   execution; a worker's report as of the executions below an index,
//!   the lowest bug's or the budget's (`cuts.rs`).
//! - *settle*: turn the workers' reports into the one-thread report:
//!   merged (`merge_reports`, as `wasmrace merge` merges partitions),
//!   numbered and cut in one thread's order.

mod cuts;
mod phases;
mod rounds;
mod shares;
mod workers;

use crate::check::options::CheckOptions;
use crate::check::single::{self, Explored};
use crate::config::instance_slots_for;
use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::{Blocks, Split};

/// How the workers split one run, chosen once from the strategy's profile
/// before any worker starts.
enum Way {
    /// On this thread alone: one job; a partition on one job (the explorer
    /// walks its indices); `--data-races report`, whose list of races is
    /// the one run's, whichever executions workers would have run past a
    /// bug or a budget; and the portfolio when its openings could use up
    /// the budget (each opening's share would then depend on the ones
    /// before it).
    OneThread,
    /// The portfolio's phases (`Split::Phases`, no partition): this many
    /// openings, then the sampling phase.
    Phases { openings: usize },
    /// `Split::Rounds` (`ses`).
    Rounds,
    /// Shares of the executions, or of a search tree the workers share.
    Shares { split: Split, blocks: Blocks },
}

impl Way {
    /// The way `opts`' strategy splits a run on `jobs` workers, or the
    /// refusal of more workers than the module's instance slots hold.
    fn of(guest: &Guest, opts: &CheckOptions, jobs: u32) -> Result<Way, HostError> {
        if jobs <= 1 || guest.config().data_races == wasmrace_trace::DataRaces::Report {
            return Ok(Way::OneThread);
        }
        let (needed, slots) = (instance_slots_for(jobs), guest.config().instance_slots);
        if needed > slots {
            return Err(HostError::TooManyJobs {
                jobs,
                needed,
                slots,
            });
        }
        let mut strategy = opts.strategy.build(opts.seed);
        let wasmrace_explore::Profile { split, blocks, .. } = strategy.profile();
        Ok(match split {
            Split::Phases if opts.explore.partition.is_none() => {
                let openings = (strategy.splitting())
                    .and_then(|s| s.openings())
                    .unwrap_or_default();
                if opts.explore.max_executions <= openings.iter().sum::<u64>() {
                    Way::OneThread
                } else {
                    Way::Phases {
                        openings: openings.len(),
                    }
                }
            }
            Split::Rounds => Way::Rounds,
            _ => Way::Shares { split, blocks },
        })
    }
}

/// `test`'s run on `jobs` workers, within `opts.explore.partition` when
/// one is given, explored as one thread explores it where the strategy
/// allows: its report, and the explorer of the worker that ran most (its
/// program says whether the test had anything to interleave, and traces
/// the bug). `progress` is called with the executions all workers ended,
/// every 100 of them.
pub(super) fn explore(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Explored, HostError> {
    match Way::of(guest, opts, jobs)? {
        Way::OneThread => single::explore_counting(guest, test, opts, progress),
        Way::Phases { openings } => {
            phases::explore_phases(guest, test, opts, jobs as usize, openings, progress)
        }
        Way::Rounds => rounds::explore_rounds(guest, test, opts, jobs as usize, progress),
        Way::Shares { split, blocks } => {
            shares::explore_shares(guest, test, opts, jobs, (split, blocks), progress)
        }
    }
}
