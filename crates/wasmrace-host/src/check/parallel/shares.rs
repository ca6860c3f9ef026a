//! [`Way::Shares`](super::Way::Shares): the workers split a run by
//! execution, or share its search tree, and their reports settle into the
//! one-thread run's.
//!
//! A strategy that splits by prefix (`dfs` without a state cache) shares
//! its search tree between the workers by work stealing
//! ([`SubtreePool`]), within the partition when one is given, and its
//! report is the one-thread run's too (the pool numbers the bug and cuts
//! the budget in the search order, [`SubtreePool::settle`]); one that
//! shares its tree (`dfs` with a state cache, [`Split::Shared`]) does the
//! same and shares the cache as well, and so does one whose jobs depend
//! on nothing but themselves (`dpor --dpor trust`, [`Split::Jobs`]: a
//! subtree is a job's graph). One that splits by execution is split into
//! shares (partition `K` of `N` becomes partitions `K + N * j` of `N *
//! jobs`), and its report is the one-thread run's: the failing execution
//! with the lowest index, counted with exactly the executions below it
//! ([`LowestBug`], [`Cuts`]); so is a phased one within a partition (its
//! phases a prologue every worker runs).

use super::cuts::Cuts;
use super::workers::{on_threads, progress_ticks};
use crate::check::options::CheckOptions;
use crate::check::single::{explore_err, Explored};
use crate::error::HostError;
use crate::guest::Guest;
use std::sync::atomic::AtomicU64;
use wasmrace_explore::explorer::blocks::OpenSizes;
use wasmrace_explore::explorer::partition::merge_reports;
use wasmrace_explore::explorer::steal::SubtreePool;
use wasmrace_explore::{Blocks, Explorer, LowestBug, Partition, Report, Split};

/// The run on `jobs` workers in shares of `split` (with `blocks`), its
/// reports merged as `wasmrace merge` merges partitions
/// ([`merge_reports`]: executions added up, the bug one run reports
/// first), or settled by the pool.
pub(super) fn explore_shares(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: u32,
    (split, blocks): (Split, Blocks),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Explored, HostError> {
    let tick = progress_ticks(progress);
    let tick = &tick;
    let shares_tree = matches!(split, Split::ByPrefix | Split::Shared | Split::Jobs);
    let pool = shares_tree.then(|| SubtreePool::new(jobs as usize));
    let outer = opts
        .explore
        .partition
        .unwrap_or(Partition { index: 0, count: 1 });
    let count = outer.count.saturating_mul(jobs);
    let shares: Vec<Partition> = (0..jobs)
        .map(|j| Partition {
            index: outer.index + outer.count * j,
            count,
        })
        .collect();
    let lowest = LowestBug::default();
    // Sizes are learnt in this process only: within a partition of the
    // run, other partitions' would never be known, and the explorer
    // refuses open blocks without them.
    let open = (blocks == Blocks::Open && opts.explore.partition.is_none())
        .then(|| OpenSizes::new(opts.explore.max_executions));
    let frontier: Vec<AtomicU64> = shares.iter().map(|_| AtomicU64::new(0)).collect();
    let frontier = &frontier;
    let (pool_ref, lowest_ref, shares) = (pool.as_ref(), &lowest, &shares);
    let open_ref = open.as_ref();
    let mut parts = on_threads(jobs as usize, |j| {
        let mut explore = opts.explore.clone();
        if pool_ref.is_none() {
            explore.partition = Some(shares[j]);
            explore.lowest_bug = Some(lowest_ref.clone());
            explore.open_sizes = open_ref.cloned();
        }
        let mut cuts = Cuts::new(j, frontier, lowest_ref, open_ref.cloned());
        let program = guest.program(test);
        let mut explorer = match (program, pool_ref) {
            (Ok(p), _) => Explorer::new(p, explore),
            (Err(e), Some(pool)) => {
                // No worker must wait for this one's donations.
                pool.stop();
                return Err(e);
            }
            (Err(e), None) => return Err(e),
        };
        let mut strategy = opts.strategy.build(opts.seed);
        let report = match pool_ref {
            Some(pool) => {
                explorer.run_shared_with_progress(&mut *strategy, &mut (), &mut |_| tick(), pool)
            }
            None => explorer.run_with_progress(&mut *strategy, &mut |r| {
                cuts.record(r);
                tick();
            }),
        };
        cuts.finished();
        let report = report.map_err(explore_err)?;
        Ok((explorer, report, strategy.name().to_string(), cuts))
    })?;
    let max = opts.explore.max_executions;
    // With open blocks the lowest failing position may lie past the
    // budget, which one thread would not have reached.
    let bug = lowest.get().filter(|&b| {
        open.as_ref()
            .is_none_or(|sizes| sizes.index(b).is_some_and(|i| i < max))
    });
    let reports: Vec<Report> = match (bug, &open) {
        (Some(bug), _) if pool.is_none() => {
            parts.iter().map(|(_, r, _, c)| c.before(bug, r)).collect()
        }
        // Workers with open blocks may run past the budget's last
        // execution, known once the run is over.
        (None, Some(sizes)) => {
            let cut = sizes.last_in_budget();
            parts.iter().map(|(_, r, _, c)| c.through(cut, r)).collect()
        }
        _ => parts.iter().map(|(_, r, _, _)| r.clone()).collect(),
    };
    let report = match (&pool, &open) {
        // Numbered and cut at the budget as one thread numbers and cuts.
        (Some(pool), _) => pool.settle(&reports, &opts.explore),
        (None, Some(sizes)) => {
            let mut report = merge_reports(&reports);
            number_by_position(&mut report, sizes, max);
            report
        }
        (None, None) => merge_reports(&reports),
    };
    // The program of the worker that ran most says whether the test had
    // anything to interleave, and traces the bug.
    parts.sort_by_key(|(_, r, _, _)| std::cmp::Reverse(r.executions));
    let (explorer, _, strategy, _) = parts.swap_remove(0);
    Ok(Explored {
        explorer,
        report,
        strategy,
    })
}

/// A run with open blocks, cut, as one thread reports it: its bugs (found
/// at positions) numbered, and stopped by the budget if it ran all of it.
fn number_by_position(report: &mut Report, sizes: &OpenSizes, max: u64) {
    for bug in &mut report.bugs {
        if let Some(i) = sizes.index(bug.execution - 1) {
            bug.execution = i + 1;
        }
    }
    if report.bugs.is_empty() && report.executions >= max {
        report.executions = max;
        report.stopped_by = Some(wasmrace_explore::strategy::BoundHit {
            bound: "executions",
            value: max,
            knob: "--max-executions",
        });
    }
}
