//! [`Way::Phases`](super::Way::Phases), for a strategy that runs in phases
//! (the portfolio, [`Split::Phases`](wasmrace_explore::Split::Phases)): the
//! openings run side by side, one per worker, then every worker takes its
//! share of the sampling phase's indices; the report is the one-thread
//! run's.
//!
//! **Why the report does not depend on N.** An opening depends on nothing
//! but itself, so running it on its own thread changes nothing; the run's
//! verdict is read from the openings in their order (the first that ends
//! the run, by a bug or a proof, ends it; later ones are thrown away). The
//! sampling phase starts from what the openings settled (how many
//! executions they used, their longest execution for the PCT member), and its
//! execution `j` depends on `j` alone, so it is cut as any run split by
//! execution is ([`Cuts`]): at the lowest failing index.
//!
//! Workers beyond the number of openings wait for the openings before
//! sampling; runs whose budget the openings could use up are not split
//! (the room keeps them on one thread: the openings' budgets would depend
//! on each other).

use super::cuts::Cuts;
use super::workers::{on_threads, progress_ticks};
use crate::check::options::CheckOptions;
use crate::check::single::{explore_err, Explored};
use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use wasmrace_explore::explorer::partition::merge_reports;
use wasmrace_explore::{Explorer, LowestBug, Partition, Phase, Report, Role};

/// What the openings settled, once they have all run (or one ended the
/// run): whether the sampling phase runs, and from where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    /// Opening `i` ended the run (its bug, or a proof): nothing samples.
    Ended(usize),
    /// A worker failed before the openings were in: nothing samples, and
    /// the run's error is that worker's.
    Abandoned,
    /// The sampling phase runs after `executions` opening executions, with
    /// the openings' longest execution for the PCT member.
    Sample { executions: u64, longest: usize },
}

/// An opening's report and its longest execution
/// (`Standing::longest`).
type Opened = (Report, usize);

/// The openings' reports as they finish, and what they settle.
struct Openings {
    /// Each opening's, once it ran.
    reports: Mutex<(Vec<Option<Opened>>, Option<Settled>)>,
    settled: Condvar,
    /// Raised when the run is settled as ended: running openings stop.
    cancel: Arc<AtomicBool>,
}

impl Openings {
    fn new(count: usize) -> Self {
        Openings {
            reports: Mutex::new((vec![None; count], None)),
            settled: Condvar::new(),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Records opening `i`'s report and its longest execution; settles
    /// the run when the openings before the first one that ends it (or
    /// all) are in.
    fn finished(&self, i: usize, report: Report, longest: usize) {
        let mut guard = self.reports.lock().unwrap_or_else(|e| e.into_inner());
        let (reports, settled) = &mut *guard;
        reports[i] = Some((report, longest));
        if settled.is_some() {
            return;
        }
        let (mut executions, mut longest) = (0, 0);
        for (i, r) in reports.iter().enumerate() {
            let Some((r, opening_longest)) = r else {
                return;
            };
            if ends_the_run(r) {
                *settled = Some(Settled::Ended(i));
                self.cancel.store(true, Ordering::Relaxed);
                self.settled.notify_all();
                return;
            }
            executions += r.executions;
            longest = longest.max(*opening_longest);
        }
        *settled = Some(Settled::Sample {
            executions,
            longest,
        });
        self.settled.notify_all();
    }

    /// Gives up on the run if it is not settled yet (a worker failed or
    /// panicked before its openings were in): waiting workers leave.
    fn abandon(&self) {
        let mut guard = self.reports.lock().unwrap_or_else(|e| e.into_inner());
        if guard.1.is_none() {
            guard.1 = Some(Settled::Abandoned);
            self.cancel.store(true, Ordering::Relaxed);
            self.settled.notify_all();
        }
    }

    /// Waits until the openings settle the run.
    fn wait(&self) -> Settled {
        let mut guard = self.reports.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(s) = guard.1 {
                return s;
            }
            guard = self.settled.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Abandons the run when a worker leaves without settling it (an error, a
/// panic), so that no worker waits for its openings for ever.
struct AbandonOnDrop<'a>(&'a Openings);

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// An opening's report ends the whole run: it found the bug (every check
/// stops at its first), or explored its whole space with no bound.
fn ends_the_run(r: &Report) -> bool {
    !r.bugs.is_empty() || (r.exhausted && r.strategy_bound.is_none())
}

/// One worker's work: its openings' reports are in [`Openings`]; its
/// sampling report, if it sampled, with its cuts.
struct Worker<'a> {
    explorer: Explorer<WasmProgram>,
    executions: u64,
    sampled: Option<(Report, Cuts<'a>)>,
}

/// The run of a strategy of
/// [`Split::Phases`](wasmrace_explore::Split::Phases) with `openings`
/// openings, on `jobs` workers; see the module documentation.
pub(super) fn explore_phases(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    jobs: usize,
    openings: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Explored, HostError> {
    let tick = progress_ticks(progress);
    let tick = &tick;
    let openings = Openings::new(openings);
    let lowest = LowestBug::default();
    let frontier: Vec<AtomicU64> = (0..jobs)
        .map(|w| AtomicU64::new(share(w, jobs).nth_index(0)))
        .collect();
    let run = Run {
        guest,
        test,
        opts,
        jobs,
        openings: &openings,
        lowest: &lowest,
        tick,
        started: std::time::Instant::now(),
    };
    let frontier = &frontier;
    let mut workers = on_threads(jobs, |w| {
        let _abandon = AbandonOnDrop(run.openings);
        run.worker(w, Cuts::new(w, frontier, run.lowest, None))
    })?;
    let (reports, settled) =
        std::mem::take(&mut *openings.reports.lock().unwrap_or_else(|e| e.into_inner()));
    let mut report = merge_phases(
        reports,
        settled,
        &workers,
        &lowest,
        (opts.explore.max_executions, opts.explore.time_budget),
    );
    // The phases ran one after the other: the run took from the first
    // opening's start to the last sampler's end.
    report.elapsed = run.started.elapsed();
    workers.sort_by_key(|w| std::cmp::Reverse(w.executions));
    let explorer = workers.swap_remove(0).explorer;
    Ok(Explored {
        explorer,
        report,
        strategy: opts.strategy.build(opts.seed).name().to_string(),
    })
}

/// What every worker of one phased run shares.
struct Run<'a> {
    guest: &'a Guest,
    test: &'a str,
    opts: &'a CheckOptions,
    jobs: usize,
    openings: &'a Openings,
    lowest: &'a LowestBug,
    tick: &'a (dyn Fn() + Sync),
    /// When the run began: `--time-budget` covers the phases together.
    started: std::time::Instant,
}

impl<'a> Run<'a> {
    /// Worker `w`: openings `w`, `w + jobs`, ... alone, then its share of
    /// the sampling phase once the openings settled it.
    fn worker(&self, w: usize, mut cuts: Cuts<'a>) -> Result<Worker<'a>, HostError> {
        let mut explore = self.opts.explore.clone();
        explore.cancel = Some(self.openings.cancel.clone());
        let mut explorer = Explorer::new(self.guest.program(self.test)?, explore);
        let mut executions = self.openings_of(w, &mut explorer)?;
        let Settled::Sample {
            executions: used,
            longest,
        } = self.openings.wait()
        else {
            cuts.finished();
            return Ok(Worker {
                explorer,
                executions,
                sampled: None,
            });
        };
        let report = self.sample(w, &mut explorer, &mut cuts, used, longest);
        cuts.finished();
        let report = report?;
        executions += report.executions;
        Ok(Worker {
            explorer,
            executions,
            sampled: Some((report, cuts)),
        })
    }

    /// Runs worker `w`'s openings, each alone, into [`Openings`]; returns
    /// their executions.
    fn openings_of(
        &self,
        w: usize,
        explorer: &mut Explorer<WasmProgram>,
    ) -> Result<u64, HostError> {
        let mut executions = 0;
        let count = self.openings.reports.lock().map_or(0, |g| g.0.len());
        for i in (w..count).step_by(self.jobs) {
            let mut strategy = self.opts.strategy.build(self.opts.seed);
            enter(&mut *strategy, Phase::Opening(i));
            let report = explorer
                .run_with_progress(&mut *strategy, &mut |_| (self.tick)())
                .map_err(explore_err)?;
            executions += report.executions;
            let longest = strategy.standing().longest;
            self.openings.finished(i, report, longest);
        }
        Ok(executions)
    }

    /// Runs worker `w`'s share of the sampling phase, after `used` opening
    /// executions whose longest took `longest` steps.
    fn sample(
        &self,
        w: usize,
        explorer: &mut Explorer<WasmProgram>,
        cuts: &mut Cuts<'a>,
        used: u64,
        longest: usize,
    ) -> Result<Report, HostError> {
        let mut strategy = self.opts.strategy.build(self.opts.seed);
        enter(&mut *strategy, Phase::Sampling { longest });
        explorer.config.cancel = None;
        explorer.config.partition = Some(share(w, self.jobs));
        explorer.config.lowest_bug = Some(self.lowest.clone());
        explorer.config.max_executions = self.opts.explore.max_executions - used;
        explorer.config.time_budget =
            (self.opts.explore.time_budget).map(|t| t.saturating_sub(self.started.elapsed()));
        explorer
            .run_with_progress(&mut *strategy, &mut |r| {
                cuts.record(r);
                (self.tick)();
            })
            .map_err(explore_err)
    }
}

/// Restricts a phased strategy to `phase`.
fn enter(strategy: &mut dyn wasmrace_explore::Strategy, phase: Phase) {
    if let Some(s) = strategy.splitting() {
        s.take_role(Role::Phase(phase));
    }
}

/// Worker `w`'s share of the sampling phase's indices.
fn share(w: usize, jobs: usize) -> Partition {
    Partition {
        index: w as u32,
        count: jobs as u32,
    }
}

/// The one-thread report from the openings' reports (in order, up to the
/// one that ended the run) and the sampling phase's, cut at its lowest
/// failing index; sampling executions are numbered after the openings'.
fn merge_phases(
    openings: Vec<Option<Opened>>,
    settled: Option<Settled>,
    workers: &[Worker],
    lowest: &LowestBug,
    (max_executions, time_budget): (u64, Option<std::time::Duration>),
) -> Report {
    let ended = match settled {
        Some(Settled::Ended(i)) => Some(i),
        _ => None,
    };
    let mut parts: Vec<Report> = openings
        .into_iter()
        .take(ended.map_or(usize::MAX, |i| i + 1))
        .flatten()
        .map(|(r, _)| r)
        .collect();
    let mut used = 0;
    for part in &mut parts {
        for bug in &mut part.bugs {
            bug.execution += used;
        }
        used += part.executions;
    }
    // The last opening that ran: whether it proved the run, its bound
    // and its counters are the run's.
    let last = parts.last().map(|r| {
        let proof = ended.is_some() && r.bugs.is_empty() && r.exhausted;
        (proof, r.strategy_bound.clone(), r.strategy_stats.clone())
    });
    if matches!(settled, Some(Settled::Sample { .. })) {
        for w in workers {
            let Some((report, cuts)) = &w.sampled else {
                continue;
            };
            let mut r = match lowest.get() {
                Some(bug) => cuts.before(bug, report),
                None => report.clone(),
            };
            for bug in &mut r.bugs {
                bug.execution += used;
            }
            parts.push(r);
        }
    }
    let mut report = merge_reports(&parts);
    let (proof, bound, stats) = last.unwrap_or_default();
    report.exhausted = proof;
    report.strategy_bound = bound;
    report.strategy_stats = stats;
    if let Some(hit) = &mut report.stopped_by {
        // The sampling phase ran with what the openings left of the budget.
        match hit.knob {
            "--max-executions" => hit.value = max_executions,
            "--time-budget" => hit.value = time_budget.map_or(0, |t| t.as_secs()),
            _ => {}
        }
    }
    report
}
