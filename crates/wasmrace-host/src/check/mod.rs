//! High-level entry points for the CLI and embedders: explore a test with a
//! strategy and, on a bug, replay it with tracing to produce a readable
//! interleaving and a schedule file; replay a schedule file exactly.
//!
//! The way through, from the bottom up: `options.rs` says what to run,
//! `single.rs` runs it on one thread and turns what it explored into
//! `outcome.rs`'s [`CheckOutcome`]; `parallel/` splits one run between
//! threads and a run's partitions between machines, and stands on
//! `single.rs` too. An entry here makes one call to explore: into
//! `single.rs`, or for `--jobs` and `--partition` into `parallel/`; then
//! it turns what was explored into the outcome, once.

mod options;
mod outcome;
mod parallel;
mod replay;
mod single;

pub use options::{CheckOptions, StrategyChoice, STRATEGY_NAMES};
pub use outcome::{BugReport, CheckOutcome, NothingToInterleave, RaceReport};
pub use replay::{replay, ReplayOutcome};
pub use single::trace_schedule;

use crate::error::HostError;
use crate::guest::Guest;
use wasmrace_explore::{Report, Strategy};

/// Explores `test` with the chosen strategy.
pub fn check(guest: &Guest, test: &str, opts: &CheckOptions) -> Result<CheckOutcome, HostError> {
    check_with_progress(guest, test, opts, &mut |_| {})
}

/// Explores `test` with a strategy the caller built, for strategies
/// [`StrategyChoice`] cannot name: SES or SS with a custom
/// [`DelayingExplorer`](wasmrace_explore::strategies::DelayingExplorer),
/// say. `opts.explore` bounds the run; `opts.seed` and `opts.to_json()` go
/// into the schedule file of a bug, under the strategy's own name (its seed
/// is the caller's business); `opts.strategy` is not used.
///
/// ```no_run
/// use wasmrace_host::{CheckOptions, Guest, HostConfig};
/// use wasmrace_host::strategies::{RunToCompletion, Ses, SesOptions};
/// let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
/// let mut ses = Ses::new(RunToCompletion::new(), 0, SesOptions::default());
/// let out = wasmrace_host::check_with_strategy(
///     &guest, "two_phase_commit", &CheckOptions::default(), &mut ses, &mut |_| {})?;
/// println!("{} states explored", ses.states_explored());
/// # Ok::<(), wasmrace_host::HostError>(())
/// ```
pub fn check_with_strategy(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    strategy: &mut dyn Strategy,
    progress: &mut dyn FnMut(&Report),
) -> Result<CheckOutcome, HostError> {
    let explored = single::explore(guest, test, opts, strategy, progress)?;
    single::outcome(explored, guest, test, opts)
}

/// Like [`check`], calling `progress` after every execution.
pub fn check_with_progress(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    progress: &mut dyn FnMut(&Report),
) -> Result<CheckOutcome, HostError> {
    let mut strategy = opts.strategy.build(opts.seed);
    let explored = single::explore(guest, test, opts, &mut *strategy, progress)?;
    single::outcome(explored, guest, test, opts)
}

/// [`check`] on `jobs` threads, each exploring with its own program
/// instance of the same loaded module, their reports merged as `wasmrace
/// merge` merges partitions
/// ([`merge_reports`](wasmrace_explore::explorer::partition::merge_reports):
/// executions added up, the bug one run reports first). A strategy that
/// splits by prefix (`dfs` without a state cache) shares its search tree
/// between the threads by work stealing
/// ([`SubtreePool`](wasmrace_explore::explorer::steal::SubtreePool)),
/// within `opts.explore.partition` when one is given, and its report is
/// the one-thread run's too (the pool numbers the bug and cuts the budget
/// in the search order); one that shares its tree (`dfs` with a state
/// cache, [`Split::Shared`](wasmrace_explore::Split::Shared)) does the
/// same and shares the cache as well, and so does one whose jobs depend on
/// nothing but themselves (`dpor --dpor trust`,
/// [`Split::Jobs`](wasmrace_explore::Split::Jobs): a subtree is a job's
/// graph); one that runs in rounds (`ses`,
/// [`Split::Rounds`](wasmrace_explore::Split::Rounds)) runs each round's
/// executions side by side and is counted in one thread's order; one that
/// splits by execution is split into `jobs` partitions (partition `K` of
/// `N` becomes partitions `K + N * j` of `N * jobs`), and its report is
/// the one-thread run's: the failing execution with the lowest index,
/// counted with exactly the executions below it
/// ([`LowestBug`](wasmrace_explore::LowestBug)); so is a phased one within
/// a partition (its phases a prologue every thread runs). How, and why the
/// report does not depend on `jobs`, is the parallel room's
/// (`check/parallel/`). `jobs` of 1 is [`check`]. The strategy must split
/// its work (`Profile::split`), else this is the explorer's `CannotSplit`
/// error; more threads than the module's instance slots hold are
/// [`HostError::TooManyJobs`].
pub fn check_jobs(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
) -> Result<CheckOutcome, HostError> {
    check_jobs_with_progress(guest, test, opts, jobs, &|_| {})
}

/// Like [`check_jobs`], calling `progress` with the executions all
/// threads have ended so far, every 100 of them (from any
/// thread, so it must be `Sync`), for a progress bar. With `jobs` of 1,
/// [`check_with_progress`]. Under `--data-races report` the run is on one
/// thread too: its list of races is the one run's, whichever executions
/// threads would have run past a bug or a budget.
pub fn check_jobs_with_progress(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<CheckOutcome, HostError> {
    let explored = if jobs > 1 || opts.explore.partition.is_some() {
        parallel::explore(guest, test, opts, jobs, progress)?
    } else {
        single::explore_counting(guest, test, opts, progress)?
    };
    single::outcome(explored, guest, test, opts)
}
