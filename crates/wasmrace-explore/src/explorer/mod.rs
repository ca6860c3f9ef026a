//! The exploration loop: runs a strategy against a program, one execution
//! after another, within explicit bounds; resumes executions from held
//! snapshots or by replaying a prefix; starts them from states saved at the
//! strategy's request; hashes states for strategies that cache them; stops
//! at the first bug (by default). Three rooms: the loop over executions
//! (here), the current path with its snapshots (`path.rs`) and the saved
//! states (`saved.rs`); which executions a partitioned run owns is
//! `partition.rs`'s (and `blocks.rs`'s), the bounds are `config.rs`'s, and
//! what a run reports is `report.rs`'s.

mod between;
pub mod blocks;
mod config;
mod decide;
pub mod fairness;
mod forced;
mod livelock;
pub mod partition;
mod path;
mod report;
pub mod rounds;
mod saved;
mod start;
pub mod steal;
pub mod visits;

use crate::observer::Observer;
use crate::program::{Program, Status, StepInfo, ThreadView};
use crate::strategy::{active_name, BoundHit, Outcome, Profile, Role, Strategy};
use between::Between;
pub use blocks::Blocks;
pub use config::Config;
use decide::{decide, record, take_in, Ahead, Decided};
use fairness::Fairness;
use forced::ForcedPrefix;
use partition::Share;
pub use partition::{LowestBug, Partition, Split};
use path::PathSnapshots;
pub use report::{Bug, Report};
use saved::SavedStates;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use steal::{StopOnDrop, SubtreePool};
use wasmrace_trace::Decision;

/// Why a run stopped without a report: the program failed to run (not a bug
/// in the guest: the host itself failed) or the strategy broke its contract.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError<E: std::error::Error + 'static> {
    /// The program's own error (`Program::Error`).
    #[error(transparent)]
    Program(E),
    /// The strategy chose a thread that is not enabled, or an alternative
    /// out of range.
    #[error("strategy `{strategy}` chose thread `{thread}` (alternative {alt}) at step {step}, which is not enabled")]
    InvalidDecision {
        /// The strategy's name.
        strategy: String,
        /// The thread chosen.
        thread: String,
        /// The alternative chosen.
        alt: u32,
        /// 0-based index of the step in the execution.
        step: usize,
    },
    /// The strategy asked to resume after more steps than the previous
    /// execution ran.
    #[error("strategy `{strategy}` asked to resume after {prefix_len} steps, but the previous execution had only {len}")]
    BadResume {
        /// The strategy's name.
        strategy: String,
        /// The steps it asked to keep.
        prefix_len: usize,
        /// The steps the previous execution ran.
        len: usize,
    },
    /// The strategy asked to start from a saved state that does not exist
    /// (never saved, or already used: saved states are used once).
    #[error("strategy `{strategy}` asked to start from saved state {id}, which it never saved or already used")]
    UnknownSaved {
        /// The strategy's name.
        strategy: String,
        /// The id it asked for.
        id: u64,
    },
    /// A partitioned run (`Config::partition`) of a strategy that cannot
    /// split its work.
    #[error("strategy `{strategy}` cannot split its work into partitions")]
    CannotSplit {
        /// The strategy's name.
        strategy: String,
    },
    /// The program broke its contract: running, yet no thread is enabled.
    #[error("the program reports running with no enabled thread at step {step} (a program must report a deadlock itself)")]
    NoEnabledThread {
        /// 0-based index of the step in the execution.
        step: usize,
    },
}

/// Progress notifications, e.g. for a progress bar. Called after each
/// execution with the executions run so far.
pub type ProgressFn<'a> = dyn FnMut(&Report) + 'a;

/// Runs a [`Strategy`] against a [`Program`], one execution after another,
/// within the bounds of its [`Config`]: takes and restores snapshots of the
/// current path, keeps the states the strategy saves, and collects bugs.
pub struct Explorer<P: Program> {
    /// The program explored; still usable after a run, e.g. to replay a
    /// bug's schedule with tracing on.
    pub program: P,
    /// The bounds and snapshot policy of the next run.
    pub config: Config,
}

impl<P: Program> Explorer<P> {
    /// An explorer of `program` within `config`.
    pub fn new(program: P, config: Config) -> Self {
        Explorer { program, config }
    }

    /// Explores until the strategy is exhausted, a bound of `config` is
    /// hit, or (with `stop_on_first_bug`) a bug is found.
    pub fn run(&mut self, strategy: &mut dyn Strategy) -> Result<Report, ExploreError<P::Error>> {
        self.run_with(strategy, &mut (), &mut |_| {})
    }

    /// [`Explorer::run`], calling `progress` after each execution.
    pub fn run_with_progress(
        &mut self,
        strategy: &mut dyn Strategy,
        progress: &mut ProgressFn<'_>,
    ) -> Result<Report, ExploreError<P::Error>> {
        self.run_with(strategy, &mut (), progress)
    }

    /// Runs `strategy` with `observer` beside it (e.g. [`Metrics`](crate::strategies::Metrics)).
    pub fn run_observed<O: Observer + ?Sized>(
        &mut self,
        strategy: &mut dyn Strategy,
        observer: &mut O,
    ) -> Result<Report, ExploreError<P::Error>> {
        self.run_with(strategy, observer, &mut |_| {})
    }

    /// Runs `strategy` with `observer` beside it, calling `progress` after
    /// each execution.
    pub fn run_with<O: Observer + ?Sized>(
        &mut self,
        strategy: &mut dyn Strategy,
        observer: &mut O,
        progress: &mut ProgressFn<'_>,
    ) -> Result<Report, ExploreError<P::Error>> {
        let cfg = self.config.clone();
        self.run_in(&cfg, strategy, observer, progress, None)
    }

    /// Runs `strategy` with `observer` beside it as one of the workers
    /// sharing `pool` ([`steal`]): each worker runs this on a thread of its
    /// own (the workers wait for one another, and the pool tells them
    /// apart by thread), with its own program instance and strategy, and
    /// [`SubtreePool::settle`] adds
    /// their reports up, numbers the bugs and cuts them at
    /// `--max-executions` as one run does (the workers run past the budget
    /// until what it keeps is explored); a time bound
    /// that stops one worker stops them all. The
    /// strategy must accept the pool ([`Role::Shared`]),
    /// else this is [`ExploreError::CannotSplit`].
    pub fn run_shared<O: Observer + ?Sized>(
        &mut self,
        strategy: &mut dyn Strategy,
        observer: &mut O,
        pool: &Arc<SubtreePool>,
    ) -> Result<Report, ExploreError<P::Error>> {
        self.run_shared_with_progress(strategy, observer, &mut |_| {}, pool)
    }

    /// Like [`run_shared`](Self::run_shared), calling `progress` after
    /// each of this worker's executions with its own report so far.
    pub fn run_shared_with_progress<O: Observer + ?Sized>(
        &mut self,
        strategy: &mut dyn Strategy,
        observer: &mut O,
        progress: &mut ProgressFn<'_>,
        pool: &Arc<SubtreePool>,
    ) -> Result<Report, ExploreError<P::Error>> {
        let shares = strategy
            .splitting()
            .is_some_and(|s| s.take_role(Role::Shared(pool.clone())));
        if !shares {
            // Not one of the workers after all: nobody must wait for it.
            pool.stop();
            return Err(ExploreError::CannotSplit {
                strategy: strategy.name().to_string(),
            });
        }
        let cfg = self.config.clone();
        self.run_in(&cfg, strategy, observer, progress, Some(pool))
    }

    /// The executions this run owns, in the strategy's split. Open blocks
    /// number every run by position, and are partitioned only with the
    /// sizes table the workers share.
    fn share(cfg: &Config, strategy: &dyn Strategy) -> Result<Share, ExploreError<P::Error>> {
        let Profile { split, blocks, .. } = strategy.profile();
        let cannot = || ExploreError::CannotSplit {
            strategy: strategy.name().to_string(),
        };
        if blocks == Blocks::Open && cfg.partition.is_some() && cfg.open_sizes.is_none() {
            return Err(cannot());
        }
        Share::of(cfg.partition, split, cfg.split_depth, blocks).ok_or_else(cannot)
    }

    /// Runs `strategy` under `cfg` (the explorer's own, or a worker's in a
    /// run in rounds), as one of the workers of `pool` if given.
    fn run_in<O: Observer + ?Sized>(
        &mut self,
        cfg: &Config,
        strategy: &mut dyn Strategy,
        observer: &mut O,
        progress: &mut ProgressFn<'_>,
        pool: Option<&SubtreePool>,
    ) -> Result<Report, ExploreError<P::Error>> {
        let share = Self::share(cfg, strategy)?;
        if let Share::Jobs(p, depth) = share {
            let splitting = strategy.splitting().expect("a strategy that splits");
            splitting.take_role(Role::Partition(p, depth));
        }
        let mut run = Run {
            share,
            last_index: None,
            block_len: 0,
            block_ended: true,
            pool,
            stretch: None,
            forward: false,
            prunes: (0, None),
            checked: false,
            foreign: false,
            path: PathSnapshots::new(
                cfg.snapshot_every_cost,
                cfg.snapshot_resume_returns,
                cfg.max_snapshots,
            ),
            saved: SavedStates::new(cfg),
            fair: Fairness::new(cfg.fairness_bound),
            forced: ForcedPrefix::new(
                cfg.snapshot_forced_prefix
                    && !share.by_prefix()
                    && !strategy.profile().hashes_states,
            ),
            hashes: Vec::new(),
            ahead: None,
            program: &mut self.program,
            cfg,
            strategy,
            observer,
            report: Report::default(),
            started: Instant::now(),
        };
        // Until the run ends normally, its end (a bound, an error, a panic)
        // ends every worker's.
        let mut stop = StopOnDrop { pool };
        let ended = run.executions(progress)?;
        if ended {
            stop.pool = None;
        }
        drop(stop);
        let mut report = run.report;
        let standing = run.strategy.standing();
        report.strategy_bound = standing.bound_hit;
        report.strategy_stats = standing.stats;
        report.real_races = standing.real_races;
        report.elapsed = run.started.elapsed();
        Ok(report)
    }
}

/// One run of the exploration loop: the strategy and its observer, the
/// current path with its snapshots, the saved states and the report.
struct Run<'a, P: Program, O: ?Sized> {
    /// The executions this run owns (all, unless partitioned).
    share: Share,
    /// The index passed to the strategy's last `begin`.
    last_index: Option<u64>,
    /// Executions of the current open block so far, and whether the
    /// strategy ended its block with the last execution (asked once).
    block_len: u64,
    block_ended: bool,
    /// The current execution's ownership was checked at the split depth.
    checked: bool,
    /// The current execution was abandoned as another partition's.
    foreign: bool,
    /// The pool shared with other workers, in a run of several.
    pool: Option<&'a SubtreePool>,
    /// With a pool: the current stretch (the strategy's
    /// `Standing::stretch`, and the pool's handle of it: index, counter,
    /// log; see [`steal`]).
    stretch: Option<(u64, steal::StretchHandle)>,
    /// With a pool: the strategy's `bound_prunes` after the last execution,
    /// and the stretch whose pruning the pool was last told of.
    prunes: (u64, Option<usize>),
    program: &'a mut P,
    cfg: &'a Config,
    strategy: &'a mut dyn Strategy,
    observer: &'a mut O,
    path: PathSnapshots<P::Snapshot>,
    saved: SavedStates<P::Snapshot>,
    /// Fair scheduling's state along the current path.
    fair: Fairness,
    /// The steps every execution starts with, learnt once and then shown
    /// rather than run (`forced.rs`).
    forced: ForcedPrefix,
    /// The current execution starts after the forced prefix
    /// (`Run::fast_forward`, at its first step).
    forward: bool,
    /// For strategies that cache states: `hashes[i]` is the hash of the
    /// state after `i` steps of the current path (`None` where not
    /// computed), to tell a lasso from a cut at another execution's state.
    hashes: Vec<Option<[u8; 32]>>,
    /// The next step's decision, taken while the program went on in place.
    ahead: Option<Ahead>,
    report: Report,
    started: Instant,
}

impl<P: Program, O: Observer + ?Sized> Run<'_, P, O> {
    /// The loop over executions, until the strategy is done, a bound is hit
    /// or (by default) a bug is found; true when it ended because the
    /// strategy was done (or, alone, at its first bug).
    fn executions(
        &mut self,
        progress: &mut ProgressFn<'_>,
    ) -> Result<bool, ExploreError<P::Error>> {
        loop {
            // Ask the strategy first: a strategy that has just finished its
            // space must be reported exhausted, not "stopped by a bound",
            // even when the bound is reached at the same time. An execution
            // begun and then cut by a bound is simply never run.
            let index = self.share.next_index(
                self.last_index,
                self.block_ended,
                self.report.executions,
                self.report.partition_skipped,
            );
            self.last_index = Some(index);
            let Some(start) = self.strategy.begin(index) else {
                // Workers that stopped at a bug did not explore everything,
                // even if the bug was the last execution (as one run).
                let stopped_at_bug =
                    self.cfg.stop_on_first_bug && self.pool.is_some_and(|p| p.has_bug());
                self.report.exhausted = self.strategy.standing().exhausted && !stopped_at_bug;
                return Ok(true);
            };
            if self.pool.is_some_and(|p| p.is_stopped()) {
                // Another worker hit a bound (and reports it) or failed.
                return Ok(false);
            }
            if self
                .cfg
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Ok(false);
            }
            if self.passed_a_bug(index) {
                // Another worker's execution with a lower index failed.
                return Ok(false);
            }
            if let Some(hit) = self.bound_reached(index) {
                self.report.stopped_by = Some(hit);
                return Ok(false);
            }
            self.start(start)?;
            self.observer.begin(start, self.path.decisions());
            // Only a split by prefix checks ownership during an execution;
            // for the others it is settled, so the step loop tests one bool.
            (self.checked, self.foreign) = (!self.share.by_prefix(), false);
            let outcome = self.execution()?;
            // Only a split by jobs has jobs of other partitions; asking
            // the others would build their standing every execution.
            let foreign = matches!(self.share, Share::Jobs(..)) && self.strategy.standing().foreign;
            // Another partition's: the strategy moves past it (a DFS
            // backtracks past the whole subtree; a job above the split
            // depth still made its children), and nothing counts.
            if foreign || self.foreign || !self.share.owns(self.path.decisions()) {
                self.report.partition_skipped += 1;
                self.strategy.end(&Outcome::Abandoned);
                self.observer
                    .end(&Outcome::Abandoned, self.path.decisions());
                continue;
            }
            if !self.share.counts(index) {
                if self.prologue_of_another(index, &outcome) {
                    return Ok(true);
                }
                continue;
            }
            self.report.executions += 1;
            let order_key = match outcome {
                Outcome::Failed(_) => self.strategy.standing().order_key,
                _ => None,
            };
            let place = self.pool.map(|pool| self.place(pool));
            self.strategy.end(&outcome);
            self.report.last_index = Some(index);
            self.count_in_block(index, &outcome);
            self.observer.end(&outcome, self.path.decisions());
            if let Outcome::Failed(failure) = outcome {
                self.report.failing_executions += 1;
                // Under a pool, the pool's `settle` numbers the bug.
                let execution = match self.share {
                    // Renumbered from the sizes by whoever shares them.
                    Share::Indices(_, Blocks::Open) if self.cfg.open_sizes.is_none() => {
                        self.report.executions
                    }
                    Share::Indices(..) => index + 1,
                    _ => self.report.executions,
                };
                let bug = Bug {
                    failure,
                    found_by: active_name(&*self.strategy),
                    schedule: self.path.decisions().to_vec(),
                    execution,
                    order_key,
                };
                if let (Some(pool), Some(place)) = (self.pool, place) {
                    self.keep_in_order(bug, pool, place);
                } else {
                    if let (Some(lowest), true) = (&self.cfg.lowest_bug, self.cfg.stop_on_first_bug)
                    {
                        lowest.found(index);
                    }
                    if self.report.bugs.len() < self.cfg.bugs_kept() {
                        self.report.bugs.push(bug);
                    }
                    if self.cfg.stop_on_first_bug {
                        return Ok(true);
                    }
                }
            }
            self.keep_cuttable();
            progress(&self.report);
        }
    }

    /// Counts the execution at `index` in its open block, and publishes
    /// the block's size when the strategy ended it; a failing execution's
    /// block is marked first, so that its bug can be numbered.
    fn count_in_block(&mut self, index: u64, outcome: &Outcome) {
        if !matches!(self.share, Share::Indices(_, Blocks::Open)) {
            return;
        }
        let sizes = self.cfg.open_sizes.as_ref();
        if let (Outcome::Failed(_), Some(sizes)) = (outcome, sizes) {
            sizes.bug_at(index);
        }
        self.block_len += 1;
        self.block_ended = !self.strategy.standing().block_goes_on;
        if self.block_ended {
            if let Some(sizes) = sizes {
                sizes.ended(blocks::split_position(index).0, self.block_len);
            }
            self.block_len = 0;
        }
    }

    /// An execution of the prologue every share runs ([`Blocks::Prologue`])
    /// that another share counts: the strategy learns from it, nothing
    /// counts here but a skip. True when it failed and the run stops at its
    /// first bug: this share stops there too (the owner reports it, and
    /// nothing after it counts), and tells the other workers.
    fn prologue_of_another(&mut self, index: u64, outcome: &Outcome) -> bool {
        self.report.partition_skipped += 1;
        self.strategy.end(outcome);
        self.observer.end(outcome, self.path.decisions());
        let stops = matches!(outcome, Outcome::Failed(_)) && self.cfg.stop_on_first_bug;
        if let (true, Some(lowest)) = (stops, &self.cfg.lowest_bug) {
            lowest.found(index);
        }
        stops
    }

    /// In a run split by execution between workers (`check --jobs`), which
    /// is cut at another worker's bug from the progress reports: gives the
    /// report the strategy's counters and real races as of this execution,
    /// so that it is cut exactly.
    fn keep_cuttable(&mut self) {
        if self.cfg.lowest_bug.is_some() {
            let standing = self.strategy.standing();
            self.report.strategy_stats = standing.stats;
            self.report.real_races = standing.real_races;
        }
    }

    /// A worker's bug, among the others it found: kept in the search order
    /// ([`BugRank`](partition::BugRank)), only the first when the run stops
    /// at its first bug, whose key then goes to the pool so that every
    /// worker abandons the work after it (see [`steal`]).
    fn keep_in_order(&mut self, bug: Bug, pool: &SubtreePool, place: steal::Place) {
        let rank = partition::BugRank::of(&bug);
        let stops = self.cfg.stop_on_first_bug;
        if let Some(key) = &bug.order_key {
            // Without `stops`, only numbered: the run goes on past it.
            pool.found(key.clone(), place, stops);
        }
        let at = self
            .report
            .bugs
            .partition_point(|b| partition::BugRank::of(b) <= rank);
        self.report.bugs.insert(at, bug);
        // Every worker's least `keep` bugs together hold the run's least
        // `keep`.
        // With a shared cache the pool drops the bugs one thread never
        // meets, so a worker cannot tell which of its own are the least
        // that count: it keeps them all (the cap holds for the others).
        if stops || pool.cached().is_none() {
            self.report.bugs.truncate(self.cfg.bugs_kept());
        }
    }

    /// With a pool: counts the execution just ended in its stretch (opening
    /// a stretch when the strategy started another) and against the
    /// budget, tells the pool when the strategy's bound pruned during it,
    /// logs it when the strategy does (`Standing::logged`: a shared state
    /// cache), and returns the execution's place.
    fn place(&mut self, pool: &SubtreePool) -> steal::Place {
        let standing = self.strategy.standing();
        let id = standing.stretch;
        let key = || standing.order_key.clone().unwrap_or_default();
        if !matches!(&self.stretch, Some((open, _)) if *open == id) {
            self.stretch = Some((id, pool.open_stretch(key())));
        }
        let Some((_, stretch)) = &self.stretch else {
            unreachable!("opened above")
        };
        let (index, at) = (
            stretch.index,
            stretch.count.fetch_add(1, Ordering::Relaxed) + 1,
        );
        // Within a stretch keys grow: its first pruning execution is the
        // only one of it the pool could need.
        let prunes = standing.prunes();
        if prunes > self.prunes.0 {
            if self.prunes.1 != Some(index) {
                pool.pruned_at(key(), (index, at));
            }
            self.prunes = (prunes, Some(index));
        }
        if let Some(logged) = standing.logged {
            // A strategy logs only with the pool's cache, set up before
            // its first stretch.
            let log = stretch.log.as_ref().expect("the pool shares a cache");
            visits::lock(log).push(logged);
        }
        pool.counted(self.cfg.max_executions);
        (index, at)
    }

    /// The explorer bound (executions, time) that ends the run now, before
    /// the execution of `index` (as passed to `begin`), if one does. A
    /// partition by execution counts global indices: `--max-executions` is
    /// the budget of the whole run.
    /// Whether execution `index` (of a run split by execution) comes after
    /// one another worker found failing ([`Config::lowest_bug`]).
    fn passed_a_bug(&self, index: u64) -> bool {
        matches!(self.share, Share::Indices(..))
            && self.cfg.stop_on_first_bug
            && self
                .cfg
                .lowest_bug
                .as_ref()
                .is_some_and(|l| l.passed(index))
    }

    fn bound_reached(&mut self, index: u64) -> Option<BoundHit> {
        let used = match (self.pool, self.share) {
            // Workers cut the budget in the search order instead (`steal`).
            (Some(_), _) => 0,
            // Positions: as many executions as certainly come before.
            (None, Share::Indices(_, Blocks::Open)) => match &self.cfg.open_sizes {
                Some(sizes) => sizes.lower_bound(index),
                None => self.report.executions,
            },
            (None, Share::Indices(..)) => index,
            (None, _) => self.report.executions,
        };
        if used >= self.cfg.max_executions {
            return Some(BoundHit {
                bound: "executions",
                value: self.cfg.max_executions,
                knob: "--max-executions",
            });
        }
        let budget = self.cfg.time_budget?;
        (self.started.elapsed() >= budget).then_some(BoundHit {
            bound: "time budget (seconds)",
            value: budget.as_secs(),
            knob: "--time-budget",
        })
    }

    /// Runs the current execution to its end, one decision at a time.
    fn execution(&mut self) -> Result<Outcome, ExploreError<P::Error>> {
        if std::mem::take(&mut self.forward) {
            self.fast_forward()?;
        }
        loop {
            match self.program.status() {
                Status::Running => {}
                Status::Finished => return Ok(Outcome::Finished),
                Status::Failed(f) => return Ok(Outcome::Failed(f.clone())),
            }
            if !self.checked && self.share.checks_at(self.path.len()) {
                self.checked = true;
                if self.share.foreign_at(self.path.decisions()) {
                    self.foreign = true;
                    return Ok(Outcome::Abandoned);
                }
            }
            if self.path.len() as u64 >= self.cfg.max_steps {
                return Ok(Outcome::Failed(livelock::at_step_limit(
                    &*self.program,
                    self.fair.state(),
                    self.path.decisions(),
                    self.path.ops(),
                    self.cfg.max_steps,
                )));
            }
            if !self.step()? {
                // A state cache cut the execution: at a state of its own
                // path, round a cycle it could take for ever, it livelocks.
                let hashes = &self.hashes;
                let lasso = livelock::lasso(&*self.program, hashes, self.path.decisions());
                return Ok(lasso.map_or(Outcome::Abandoned, Outcome::Failed));
            }
        }
    }

    /// Whether steps may go on in place ([`Program::step_on`]): not for a
    /// strategy that compares states, since a state reached in place may
    /// differ from the same one reached step by step in bytes no execution
    /// reads (a wasm thread's Asyncify buffer past its data), which its
    /// hash would tell apart.
    fn in_place(&self) -> bool {
        !self.strategy.profile().hashes_states
    }

    /// Asks the strategy for a decision and takes it, going on in place
    /// while the strategy keeps the same thread ([`Program::step_on`]);
    /// false when the strategy abandoned the execution.
    fn step(&mut self) -> Result<bool, ExploreError<P::Error>> {
        let step = self.path.len();
        let (d, save) = match self.ahead.take() {
            Some(Ahead::Decided { d, save }) => (d, save),
            Some(Ahead::Invalid(d)) => return Err(self.invalid(d, step)),
            Some(Ahead::Abandoned) => return Ok(false),
            None => match self.decide(step)? {
                Some(decided) => decided,
                None => return Ok(false),
            },
        };
        if let Some(id) = save {
            self.saved
                .save(
                    id,
                    self.program,
                    (&self.path, &self.hashes),
                    self.fair.state(),
                    &mut self.report,
                )
                .map_err(ExploreError::Program)?;
            self.observer.saved(id, step);
        }
        let in_place = self.in_place();
        let mut between = Between {
            strategy: &mut *self.strategy,
            observer: &mut *self.observer,
            report: &mut self.report,
            path: &mut self.path,
            fair: &mut self.fair,
            forced: &mut self.forced,
            ahead: &mut self.ahead,
            cfg: self.cfg,
            share: &self.share,
            checked: self.checked,
            taken: false,
        };
        let info = if in_place {
            let onward =
                &mut |info: &StepInfo, views: &[ThreadView], tid| between.offer(info, views, tid);
            self.program.step_on(d, onward)
        } else {
            self.program.step(d)
        }
        .map_err(ExploreError::Program)?;
        if !between.taken {
            let due = self.path.snapshot_due(info.cost);
            let (strategy, observer) = (&mut *self.strategy, &mut *self.observer);
            take_in(strategy, observer, &mut self.report, info);
            self.forced.took(info);
            let (d, what) = (Decision::new(info.tid, info.alt), (info.op, info.cost));
            let views = self.program.threads();
            record(&mut self.path, &mut self.fair, d, what, views);
            if due {
                self.path
                    .snapshot(self.program, &mut self.report)
                    .map_err(ExploreError::Program)?;
            }
        }
        Ok(true)
    }

    /// Asks the strategy for the decision of step `step` (hashing the state
    /// first if it asks), checks it and shows it to the observer: the
    /// decision and the strategy's save request with it, `None` when the
    /// strategy abandoned the execution.
    fn decide(&mut self, step: usize) -> Result<Option<Decided>, ExploreError<P::Error>> {
        self.learn_forced(step)?;
        let strategy = &mut *self.strategy;
        if strategy.profile().hashes_states && step >= strategy.known_hashes().len() {
            let hash = self.program.state_hash().map(|h| self.fair.key(h));
            self.report.state_hashes += u64::from(hash.is_some());
            strategy.observe_state(hash);
            // The states before, where not hashed: those of the known
            // prefix, as the strategy has them.
            self.hashes.truncate(step);
            let (from, known) = (self.hashes.len(), strategy.known_hashes());
            let before = (from..step).map(|i| known.get(i).copied().flatten());
            self.hashes.extend(before);
            self.hashes.push(hash);
        }
        let (strategy, observer) = (&mut *self.strategy, &mut *self.observer);
        let views = self.program.threads();
        match decide(strategy, observer, &mut self.fair, &self.path, views, step) {
            None => Err(ExploreError::NoEnabledThread { step }),
            Some(Ahead::Invalid(d)) => Err(self.invalid(d, step)),
            Some(Ahead::Abandoned) => Ok(None),
            Some(Ahead::Decided { d, save }) => Ok(Some((d, save))),
        }
    }

    /// The error of a strategy that decided `d`, which the program cannot
    /// take, at step `step`.
    fn invalid(&self, d: Decision, step: usize) -> ExploreError<P::Error> {
        ExploreError::InvalidDecision {
            strategy: self.strategy.name().to_string(),
            thread: self.program.thread_name(d.tid),
            alt: d.alt,
            step,
        }
    }
}
