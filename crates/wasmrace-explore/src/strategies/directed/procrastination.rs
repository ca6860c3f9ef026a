//! PULSE procrastination (Arts, Hughes, Norell, Smallbone, Svensson:
//! "Accelerating Race Condition Detection through Procrastination", Erlang
//! Workshop 2011): run the program once on a random schedule, find pairs of
//! potentially conflicting decisions in what ran, and re-run the program on
//! schedules that postpone ("procrastinate") the earlier decision of a pair
//! past the later one.
//!
//! # How the paper's pieces map onto wasmrace
//!
//! - **Decisions are named, not numbered** (paper §3, §6.3: `{A, {deliver,
//!   B}}`). A schedule is a list of [`Action`]s: thread + operation kind +
//!   the objects it touches (for a send, the receiver's mailbox) + the
//!   alternative to take. The same action keeps its meaning when the
//!   decisions around it move, which is what lets a reordered schedule be
//!   followed at all.
//! - **Relaxed schedule following** (§3): the next action of the schedule is
//!   taken if some enabled thread's pending operation is exactly that action
//!   (the paper's "check that the action we are about to take is in the set
//!   we would have chosen from at random"); otherwise it is *discarded* and
//!   the next one is tried. When the schedule runs out, the strategy falls
//!   back to PULSE's random scheduling (thread first, then alternative, as
//!   [`RandomWalk`](crate::strategies::RandomWalk)). A procrastinated
//!   schedule can therefore never make the execution do anything a random
//!   scheduler could not.
//! - **Conflicts** (§3, §5 "Dealing with side effects"): two actions of
//!   *different* threads potentially conflict when they touch the same object
//!   and one writes (ets: "same table and at least one of them is a write"),
//!   which includes the paper's message conflict: in wasmrace a send delivers
//!   at once, so two deliveries to one mailbox are two sends to one receiver,
//!   both writes of `Oid::mailbox(receiver)`. A receive's access to its *own*
//!   mailbox is not a conflict: mailboxes are FIFO and receives block, so a
//!   receive commutes with every send it can also run after; the order of
//!   messages is decided by the sends alone, exactly as the paper only counts
//!   deliveries. Pairs that can never be reordered are not conflicts either:
//!   two actions of one thread (the paper's "from two *distinct* processes")
//!   and a spawn with any action of the thread it creates. Users add
//!   conflicts the objects do not show (§5: "we rely on the user to define
//!   which operations potentially conflict, via a simple call-back
//!   function") with [`Procrastination::declare_conflict`] (two call sites)
//!   or [`Procrastination::conflict_when`] (a predicate).
//! - **Procrastinating one decision** (§3): action `i` is removed from the
//!   schedule and reinserted right after the conflicting action `k`; nothing
//!   else moves ([`procrastinate`]).
//! - **The four steps of §5 "Implementing procrastination"**, for each
//!   schedule: (1) it has run; (2) for each action find the later actions it
//!   conflicts with; (3) for each action that has some, in schedule order,
//!   run the schedule with it moved past the *last* of them, and record which
//!   of its conflicting actions were actually taken before it (the *feasible
//!   procrastinations*); (4) for each feasible procrastination `(i, k)` run
//!   the schedule with `i` moved right after `k` (skipping the one step 3
//!   already ran).
//! - **Limit** (§5 "Controlling the amount of procrastination"): at most
//!   `limit` procrastinated executions per schedule, steps 3 and 4 together.
//!   The paper: "each test using procrastination executes the test case at
//!   most 11 times (we are using a limit of 10 procrastinations)", so the
//!   step-3 runs count too. Default ⟨10⟩, the paper's best setting for
//!   ProcReg.
//! - **Level** (§5 "Higher-order procrastination"): rather than applying
//!   several procrastinations at once, every procrastinated execution that
//!   finished is itself procrastinated, with the next level's limit, up to
//!   `level` levels. Levels are explored breadth-first, so raising the level
//!   never delays what a lower level finds.
//! - **Iteration**: when a schedule's procrastinations (at every level) are
//!   used up, the next execution is a fresh random one, whose schedule is
//!   procrastinated in turn, like PULSE running the next QuickCheck test.
//!   The strategy never runs out; bound it with `--max-executions`.
//!
//! Every execution starts fresh. A random execution and the procrastinated
//! executions that follow it (at every level) form a *family*, whose
//! executions depend on nothing outside it. With finite limits a family's
//! size is bounded, and the executions are numbered by position (family
//! `f`'s execution `o` is `f << 24 | o`, [`Blocks::Open`]): each draws its
//! random fallback from the ChaCha8 stream of its position, everything
//! else is a function of its family's earlier executions, so the same seed
//! and options give the same exploration, and `check --jobs` deals whole
//! families out to its threads, numbering the executions (and cutting the
//! budget) from the families' sizes as they end. With an unlimited level
//! (`None` in `limit`) a family is unbounded: execution `n` then draws from
//! stream `n` and the run stays on one thread.

use crate::explorer::blocks::{split_position, Blocks, OPEN_SHIFT};
use crate::explorer::partition::Split;
use crate::program::{Pending, StepInfo};
use crate::strategies::descriptor::{Descriptor, StrategyOptions};
use crate::strategy::{Context, Outcome, Profile, Standing, Start, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc;
use wasmrace_trace::{Access, Decision, Oid, OpKind, Tid};

/// `procrastination` in the [registry](crate::strategies::registry).
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "procrastination",
    about:
        "PULSE procrastination: postpone a decision past a conflicting one (Erlang Workshop 2011)",
    takes: &[],
    always: &[],
    defaults: StrategyOptions::NONE,
    refuses: &[],
    build: |_, seed| Box::new(Procrastination::new(seed)),
    describe: |_, seed| format!("procrastination, seed {seed}"),
    options_json: |_| serde_json::Map::new(),
};

/// One scheduling decision, named the way the paper names them: by who does
/// what to which objects, not by its position in the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// The thread that does it.
    pub tid: Tid,
    /// The alternative taken (`choose`, `notify_one`); 0 otherwise.
    pub alt: u32,
    /// What it does.
    pub op: OpKind,
    /// The objects the operation touches, as predicted before the step
    /// (`Pending::accesses`): the identity the schedule is followed by, and a
    /// safe over-approximation for conflicts (a failed compare-exchange is
    /// still a potential write).
    pub accesses: Vec<Access>,
    /// Call site, for user-declared conflicts; not part of the identity, so
    /// that a schedule survives code that moves.
    pub site: u64,
    /// Threads the step created (known once it has run).
    pub spawned: Vec<Tid>,
}

impl Action {
    fn pending(tid: Tid, alt: u32, p: &Pending) -> Self {
        Action {
            tid,
            alt,
            op: p.op,
            accesses: p.accesses.clone(),
            site: p.site,
            spawned: Vec::new(),
        }
    }

    /// Whether thread `tid`, about to run `p`, is this action.
    fn is(&self, tid: Tid, p: &Pending) -> bool {
        self.tid == tid && self.op == p.op && self.accesses == p.accesses
    }

    /// The accesses that count for conflicts: a receive's access to its own
    /// mailbox does not (see the module documentation).
    fn conflict_accesses(&self) -> impl Iterator<Item = &Access> + '_ {
        let own = match self.op {
            OpKind::Recv | OpKind::RecvFrom => Some(Oid::mailbox(self.tid)),
            _ => None,
        };
        self.accesses.iter().filter(move |a| Some(a.obj) != own)
    }
}

/// The schedule `schedule` with the decision at `i` postponed to right after
/// the one at `past` (`i < past`), everything else in place: the paper's
/// re-ordered schedule (§3). Panics unless `i < past < schedule.len()`.
pub fn procrastinate<T: Clone>(schedule: &[T], i: usize, past: usize) -> Vec<T> {
    assert!(
        i < past && past < schedule.len(),
        "procrastinate({i}, {past}) on {}",
        schedule.len()
    );
    let mut out = Vec::with_capacity(schedule.len());
    out.extend_from_slice(&schedule[..i]);
    out.extend_from_slice(&schedule[i + 1..=past]);
    out.push(schedule[i].clone());
    out.extend_from_slice(&schedule[past + 1..]);
    out
}

/// The paper's two knobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcrastinationOptions {
    /// Levels of procrastination (paper: *Level*). 0 is plain PULSE (random
    /// schedules only), 1 first-order procrastination, 2 also procrastinates
    /// the schedules first-order procrastination ran, and so on.
    pub level: usize,
    /// Procrastinated executions per schedule at each level, `limit[0]` for
    /// level 1 (paper: *Limit* ⟨l1, l2, ...⟩); `None`, or a missing entry,
    /// is ∞ (every procrastination).
    pub limit: Vec<Option<usize>>,
}

impl Default for ProcrastinationOptions {
    /// Level 1, Limit ⟨10⟩: the paper's best setting for ProcReg (Fig. 2).
    fn default() -> Self {
        ProcrastinationOptions {
            level: 1,
            limit: vec![Some(10)],
        }
    }
}

impl ProcrastinationOptions {
    /// The limit at `level` (1-based).
    fn limit_at(&self, level: usize) -> Option<usize> {
        self.limit.get(level - 1).copied().flatten()
    }
}

/// What the latest execution was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunKind {
    /// A random execution, the root of a round of procrastination.
    Base,
    /// A schedule with one action postponed.
    Procrastinated {
        /// 1 for first-order procrastination of a base schedule, 2 for
        /// procrastinating a level-1 execution, ...
        level: usize,
        /// Step 3 (postponed past its last conflict, to learn which
        /// conflicts are feasible) or step 4 (a feasible procrastination).
        probe: bool,
        /// Index of the postponed action in the schedule it came from.
        index: usize,
        /// Index of the action it was moved past.
        past_index: usize,
        /// The postponed action.
        moved: Action,
        /// The action it was moved past.
        past: Action,
    },
}

/// Running totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcrastinationStats {
    /// Random (base) executions.
    pub bases: u64,
    /// Step-3 executions (postpone past the last conflict).
    pub probes: u64,
    /// Step-4 executions (one feasible procrastination each).
    pub procrastinated: u64,
    /// Feasible procrastinations found by probes.
    pub feasible: u64,
    /// Scheduled actions discarded as infeasible while following.
    pub discarded: u64,
    /// Decisions taken at random after a schedule ran out.
    pub random_decisions: u64,
}

type ConflictFn = dyn Fn(&Action, &Action) -> bool + Send + Sync;

/// One schedule being procrastinated at one level.
#[derive(Clone, Debug)]
struct Job {
    base: Vec<Action>,
    level: usize,
    /// For each action, the later actions it potentially conflicts with.
    later: Vec<Vec<usize>>,
    /// Step 3: actions still to probe, in schedule order.
    probes: VecDeque<usize>,
    /// Step 4: feasible procrastinations `(i, k)` found so far.
    feasible: Vec<(usize, usize)>,
    next_feasible: usize,
    /// Procrastinated executions spent on this schedule.
    runs: usize,
}

/// Which procrastination the current execution runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Base,
    Probe { i: usize, past: usize },
    Swap { i: usize, past: usize },
}

/// PULSE procrastination; see the module documentation.
pub struct Procrastination {
    seed: u64,
    options: ProcrastinationOptions,
    declared: BTreeSet<(u64, u64)>,
    predicates: Vec<Arc<ConflictFn>>,
    rng: ChaCha8Rng,
    /// The schedule being procrastinated and the schedules waiting for the
    /// next level (breadth-first).
    active: Option<Job>,
    queue: VecDeque<Job>,
    run: Run,
    /// Families are numbered by position ([`Blocks::Open`]).
    open: bool,
    /// The schedule the current execution follows, as indices into the
    /// active job's base, and how far it has got.
    plan: Vec<usize>,
    cursor: usize,
    /// Per base index: the step at which the action was taken as scheduled,
    /// or discarded.
    followed_at: Vec<Option<usize>>,
    discarded_at: Vec<Option<usize>>,
    /// What the current execution ran.
    ran: Vec<Action>,
    stats: ProcrastinationStats,
}

impl fmt::Debug for Procrastination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Procrastination")
            .field("seed", &self.seed)
            .field("options", &self.options)
            .field("declared", &self.declared)
            .field("predicates", &self.predicates.len())
            .field("run", &self.run)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Procrastination {
    /// First-order procrastination with the paper's Limit ⟨10⟩.
    pub fn new(seed: u64) -> Self {
        Self::with_options(seed, ProcrastinationOptions::default())
    }

    /// Procrastination with `options`; `seed` seeds its random scheduler
    /// (base executions, and steps past the schedule being followed).
    pub fn with_options(seed: u64, options: ProcrastinationOptions) -> Self {
        let open = family_bound(&options).is_some();
        Procrastination {
            seed,
            options,
            declared: BTreeSet::new(),
            predicates: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            active: None,
            queue: VecDeque::new(),
            run: Run::Base,
            open,
            plan: Vec::new(),
            cursor: 0,
            followed_at: Vec::new(),
            discarded_at: Vec::new(),
            ran: Vec::new(),
            stats: ProcrastinationStats::default(),
        }
    }

    /// Declares that any two operations at call sites `a` and `b` (in either
    /// order, `a == b` allowed) potentially conflict when different threads
    /// run them, whatever objects they touch: for effects the host cannot
    /// see, such as two calls into the same external service. Site 0
    /// ("unknown") never matches.
    pub fn declare_conflict(&mut self, site_a: u64, site_b: u64) -> &mut Self {
        self.declared
            .insert((site_a.min(site_b), site_a.max(site_b)));
        self
    }

    /// Adds a predicate: `f(earlier, later)` returning true makes the two
    /// actions potentially conflict (the paper's call-back). It is only asked
    /// about actions of different threads that could be reordered; it adds
    /// conflicts and never removes the ones the objects show.
    pub fn conflict_when(
        &mut self,
        f: impl Fn(&Action, &Action) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.predicates.push(Arc::new(f));
        self
    }

    /// The options it runs with.
    pub fn options(&self) -> &ProcrastinationOptions {
        &self.options
    }

    /// Its running totals.
    pub fn stats(&self) -> &ProcrastinationStats {
        &self.stats
    }

    /// What the current (or just ended) execution is.
    pub fn run_kind(&self) -> RunKind {
        let (i, past, probe) = match self.run {
            Run::Base => return RunKind::Base,
            Run::Probe { i, past } => (i, past, true),
            Run::Swap { i, past } => (i, past, false),
        };
        let job = self
            .active
            .as_ref()
            .expect("a procrastinated run has a job");
        RunKind::Procrastinated {
            level: job.level,
            probe,
            index: i,
            past_index: past,
            moved: job.base[i].clone(),
            past: job.base[past].clone(),
        }
    }

    /// Whether `earlier` and `later` (in that order in one schedule)
    /// potentially conflict: see the module documentation.
    pub fn conflicting(&self, earlier: &Action, later: &Action) -> bool {
        if earlier.tid == later.tid || earlier.spawned.contains(&later.tid) {
            return false;
        }
        let objects = earlier
            .conflict_accesses()
            .any(|a| later.conflict_accesses().any(|b| a.conflicts(b)));
        objects
            || (earlier.site != 0
                && later.site != 0
                && self
                    .declared
                    .contains(&(earlier.site.min(later.site), earlier.site.max(later.site))))
            || self.predicates.iter().any(|p| p(earlier, later))
    }

    /// For each action of `base`, the later actions it conflicts with, in
    /// order. Checking every pair costs O(n²) `conflicting` calls per
    /// execution, several times the cost of running it; object conflicts
    /// need only the pairs that touch a common object, found by sorting the
    /// accesses by object. Declared site pairs and predicates can relate
    /// any two actions, so with those every pair is checked.
    fn later_conflicts(&self, base: &[Action]) -> Vec<Vec<usize>> {
        if !self.declared.is_empty() || !self.predicates.is_empty() {
            return self.later_conflicts_pairwise(base);
        }
        let mut touches: Vec<(Oid, usize, bool)> = base
            .iter()
            .enumerate()
            .flat_map(|(k, a)| {
                a.conflict_accesses()
                    .map(move |x| (x.obj, k, !x.kind.is_shared()))
            })
            .collect();
        // Stable: each object's touches stay in step order.
        touches.sort_by_key(|t| t.0);
        let mut later = vec![Vec::new(); base.len()];
        for group in touches.chunk_by(|a, b| a.0 == b.0) {
            for (x, &(_, i, wi)) in group.iter().enumerate() {
                for &(_, k, wk) in &group[x + 1..] {
                    // The same as `conflicting` on one common object.
                    if k > i
                        && (wi || wk)
                        && base[i].tid != base[k].tid
                        && !base[i].spawned.contains(&base[k].tid)
                    {
                        later[i].push(k);
                    }
                }
            }
        }
        for l in &mut later {
            l.sort_unstable();
            l.dedup();
        }
        later
    }

    /// `later_conflicts` by its definition: `conflicting` on every pair.
    fn later_conflicts_pairwise(&self, base: &[Action]) -> Vec<Vec<usize>> {
        (0..base.len())
            .map(|i| {
                (i + 1..base.len())
                    .filter(|&k| self.conflicting(&base[i], &base[k]))
                    .collect()
            })
            .collect()
    }

    fn job(&self, base: Vec<Action>, level: usize) -> Job {
        let later = self.later_conflicts(&base);
        let probes = (0..base.len()).filter(|&i| !later[i].is_empty()).collect();
        Job {
            base,
            level,
            later,
            probes,
            feasible: Vec::new(),
            next_feasible: 0,
            runs: 0,
        }
    }

    /// The next procrastinated run of the active job, if its limit and its
    /// procrastinations allow one; taken from the job.
    fn next_run(&mut self) -> Option<Run> {
        let (run, next_feasible) = self.peek_run(self.active.as_ref()?)?;
        let job = self.active.as_mut()?;
        job.runs += 1;
        match run {
            Run::Probe { .. } => {
                job.probes.pop_front();
            }
            _ => job.next_feasible = next_feasible,
        }
        Some(run)
    }

    /// The run `job` makes next, if its limit and its procrastinations
    /// allow one, and where its feasible procrastinations then stand
    /// (read only: [`next_run`](Self::next_run) takes it).
    fn peek_run(&self, job: &Job) -> Option<(Run, usize)> {
        if (self.options.limit_at(job.level)).is_some_and(|l| job.runs >= l) {
            return None;
        }
        if let Some(&i) = job.probes.front() {
            let past = *job.later[i].last().expect("probes have conflicts");
            return Some((Run::Probe { i, past }, job.next_feasible));
        }
        let mut next = job.next_feasible;
        while let Some(&(i, past)) = job.feasible.get(next) {
            next += 1;
            // Moving `i` past its last conflict is the probe, already run.
            if job.later[i].last() != Some(&past) {
                return Some((Run::Swap { i, past }, next));
            }
        }
        None
    }

    /// Whether the family has executions left: the active job's, or a
    /// queued one's.
    fn family_goes_on(&self) -> bool {
        self.active
            .iter()
            .chain(&self.queue)
            .any(|job| self.peek_run(job).is_some())
    }

    fn start(&mut self, run: Run) {
        self.run = run;
        self.cursor = 0;
        self.ran.clear();
        let n = self.active.as_ref().map_or(0, |j| j.base.len());
        self.plan = match run {
            Run::Base => Vec::new(),
            Run::Probe { i, past } | Run::Swap { i, past } => {
                procrastinate(&(0..n).collect::<Vec<_>>(), i, past)
            }
        };
        self.followed_at = vec![None; n];
        self.discarded_at = vec![None; n];
    }

    /// Step 3's bookkeeping: the conflicting actions that were taken before
    /// the postponed one ran become feasible procrastinations.
    fn record_feasible(&mut self, i: usize) {
        let Some(job) = self.active.as_mut() else {
            return;
        };
        let target = &job.base[i];
        // When the postponed action did not fit where it was put, it may
        // still have run later (at random); until then it was postponed.
        let ran_at = self.followed_at[i].or_else(|| {
            let from = self.discarded_at[i]?;
            (from..self.ran.len()).find(|&s| {
                let a = &self.ran[s];
                a.tid == target.tid && a.op == target.op && a.accesses == target.accesses
            })
        });
        for &k in &job.later[i] {
            if let Some(s) = self.followed_at[k] {
                if ran_at.is_none_or(|t| s < t) {
                    job.feasible.push((i, k));
                    self.stats.feasible += 1;
                }
            }
        }
    }
}

impl Strategy for Procrastination {
    fn name(&self) -> &str {
        "procrastination"
    }

    fn begin(&mut self, index: u64) -> Option<Start> {
        // `index` is a position when families are open blocks: offset 0
        // starts family `index >> OPEN_SHIFT`, whatever this instance ran
        // before (`check --jobs` deals families out).
        if self.open && split_position(index).1 == 0 {
            self.active = None;
            self.queue.clear();
        }
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(index);
        let run = loop {
            if let Some(run) = self.next_run() {
                break run;
            }
            match self.queue.pop_front() {
                Some(job) => self.active = Some(job),
                None => {
                    self.active = None;
                    break Run::Base;
                }
            }
        };
        self.start(run);
        Some(Start::Fresh)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let step = ctx.step;
        if let Some(job) = &self.active {
            while let Some(&idx) = self.plan.get(self.cursor) {
                self.cursor += 1;
                let a = &job.base[idx];
                let fits = ctx
                    .thread(a.tid)
                    .filter(|t| t.pending.enabled && a.alt < t.pending.alts)
                    .is_some_and(|t| a.is(t.tid, &t.pending));
                if fits {
                    self.followed_at[idx] = Some(step);
                    let pending = &ctx.thread(a.tid)?.pending;
                    self.ran.push(Action::pending(a.tid, a.alt, pending));
                    return Some(Decision::new(a.tid, a.alt));
                }
                self.discarded_at[idx] = Some(step);
                self.stats.discarded += 1;
            }
        }
        // The schedule ran out: PULSE's random scheduler.
        let enabled = ctx.threads.iter().filter(|t| t.pending.enabled).count();
        if enabled == 0 {
            return None;
        }
        let pick = self.rng.random_range(0..enabled);
        let t = ctx.threads.iter().filter(|t| t.pending.enabled).nth(pick)?;
        let alt = if t.pending.alts > 1 {
            self.rng.random_range(0..t.pending.alts)
        } else {
            0
        };
        self.stats.random_decisions += 1;
        self.ran.push(Action::pending(t.tid, alt, &t.pending));
        Some(Decision::new(t.tid, alt))
    }

    fn observe(&mut self, step: &StepInfo) {
        if let Some(a) = self.ran.last_mut() {
            a.spawned = step.spawned.clone();
        }
    }

    fn end(&mut self, outcome: &Outcome) {
        // Counted here, not in `begin`: the explorer may begin an execution
        // and then not run it (its execution bound).
        let level = match self.run {
            Run::Base => {
                self.stats.bases += 1;
                0
            }
            Run::Probe { i, .. } => {
                self.stats.probes += 1;
                self.record_feasible(i);
                self.active.as_ref().map_or(0, |j| j.level)
            }
            Run::Swap { .. } => {
                self.stats.procrastinated += 1;
                self.active.as_ref().map_or(0, |j| j.level)
            }
        };
        // A failing execution needs no more provoking; a finished one is the
        // next level's schedule.
        if *outcome == Outcome::Finished && level < self.options.level {
            let ran = std::mem::take(&mut self.ran);
            let job = self.job(ran, level + 1);
            if level == 0 {
                self.active = Some(job);
            } else {
                self.queue.push_back(job);
            }
        }
    }

    /// Families as open blocks (see the module documentation).
    fn profile(&self) -> Profile {
        Profile {
            split: if self.open {
                Split::ByExecution
            } else {
                Split::None
            },
            blocks: if self.open {
                Blocks::Open
            } else {
                Blocks::Single
            },
            ..Profile::default()
        }
    }

    /// The seed, and whether the family goes on.
    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: self.seed,
            block_goes_on: self.family_goes_on(),
            ..Standing::default()
        }
    }
}

/// The most executions a family can have with these options (its random
/// execution, and at each level every execution of the level above
/// procrastinated at most that level's limit), if finite and below
/// `1 << OPEN_SHIFT`.
fn family_bound(options: &ProcrastinationOptions) -> Option<u64> {
    let (mut total, mut level_runs) = (1u64, 1u64);
    for level in 1..=options.level {
        let limit = options.limit_at(level)? as u64;
        level_runs = level_runs.checked_mul(limit)?;
        total = total.checked_add(level_runs)?;
    }
    (total < 1 << OPEN_SHIFT).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::ThreadView;

    /// The object index finds exactly the pairs that checking every pair
    /// with `conflicting` finds, on random actions over few objects (reads,
    /// writes, syncs, several accesses per action, own mailboxes, spawns).
    #[test]
    fn indexed_conflicts_equal_the_pairwise_definition() {
        use rand::Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let p = Procrastination::new(1);
        for _ in 0..300 {
            let n = rng.random_range(0..40);
            let base: Vec<Action> = (0..n)
                .map(|_| {
                    let tid = rng.random_range(0..4u64);
                    let accesses = (0..rng.random_range(0..3))
                        .map(|_| {
                            let obj = if rng.random_bool(0.2) {
                                Oid::mailbox(Tid(tid))
                            } else {
                                Oid(rng.random_range(0..5))
                            };
                            match rng.random_range(0..3) {
                                0 => Access::read(obj),
                                1 => Access::write(obj),
                                _ => Access::sync(obj),
                            }
                        })
                        .collect();
                    let op = if rng.random_bool(0.3) {
                        OpKind::Recv
                    } else {
                        OpKind::CellSet
                    };
                    let mut a = action(tid, op, accesses);
                    if rng.random_bool(0.1) {
                        a.spawned = vec![Tid(rng.random_range(0..4))];
                    }
                    a
                })
                .collect();
            assert_eq!(p.later_conflicts(&base), p.later_conflicts_pairwise(&base));
        }
    }

    fn action(tid: u64, op: OpKind, accesses: Vec<Access>) -> Action {
        Action {
            tid: Tid(tid),
            alt: 0,
            op,
            accesses,
            site: 0,
            spawned: vec![],
        }
    }

    fn view(a: &Action, enabled: bool) -> ThreadView {
        ThreadView {
            tid: a.tid,
            pending: Pending {
                op: a.op,
                enabled,
                alts: 1,
                accesses: a.accesses.clone(),
                site: a.site,
            },
        }
    }

    #[test]
    fn procrastinate_moves_one_decision_right_after_the_other() {
        let s = [0, 1, 2, 3, 4, 5];
        assert_eq!(procrastinate(&s, 1, 3), vec![0, 2, 3, 1, 4, 5]);
        assert_eq!(procrastinate(&s, 0, 5), vec![1, 2, 3, 4, 5, 0]);
        assert_eq!(procrastinate(&s, 4, 5), vec![0, 1, 2, 3, 5, 4]);
    }

    #[test]
    fn conflicts_are_deliveries_to_one_mailbox_and_writes_to_one_object() {
        let p = Procrastination::new(0);
        let c = Tid(3);
        let mc = Oid::mailbox(c);
        let x = Oid(77);
        let send_a = action(1, OpKind::Send, vec![Access::write(mc)]);
        let send_b = action(2, OpKind::Send, vec![Access::write(mc)]);
        let recv_c = action(3, OpKind::Recv, vec![Access::write(mc)]);
        assert!(p.conflicting(&send_a, &send_b), "two deliveries to c");
        assert!(
            !p.conflicting(&send_a, &recv_c),
            "receives commute with sends"
        );
        assert!(!p.conflicting(&recv_c, &send_a));
        let again = action(1, OpKind::Send, vec![Access::write(mc)]);
        assert!(!p.conflicting(&send_a, &again), "one thread: program order");
        let rd = |t| action(t, OpKind::CellGet, vec![Access::read(x)]);
        let wr = |t| action(t, OpKind::CellSet, vec![Access::write(x)]);
        assert!(!p.conflicting(&rd(1), &rd(2)));
        assert!(p.conflicting(&rd(1), &wr(2)));
        assert!(p.conflicting(&wr(1), &rd(2)));
        let mut spawn = action(1, OpKind::Spawn, vec![Access::write(Oid::liveness(Tid(2)))]);
        spawn.spawned = vec![Tid(2)];
        let exit = action(2, OpKind::Exit, vec![Access::write(Oid::liveness(Tid(2)))]);
        assert!(!p.conflicting(&spawn, &exit), "a child cannot act first");
    }

    #[test]
    fn users_declare_conflicts_by_site_or_predicate() {
        let mut p = Procrastination::new(0);
        let mut a = action(1, OpKind::Yield, vec![]);
        let mut b = action(2, OpKind::Yield, vec![]);
        (a.site, b.site) = (10, 20);
        assert!(!p.conflicting(&a, &b));
        p.declare_conflict(20, 10);
        assert!(p.conflicting(&a, &b) && p.conflicting(&b, &a));
        let (mut c, mut d) = (a.clone(), b.clone());
        (c.site, d.site) = (30, 30);
        assert!(!p.conflicting(&c, &d));
        p.conflict_when(|x, y| x.site == 30 && y.site == 30);
        assert!(p.conflicting(&c, &d));
        d.tid = c.tid;
        assert!(!p.conflicting(&c, &d), "never within one thread");
    }

    #[test]
    fn following_discards_infeasible_actions_then_falls_back_to_random() {
        let mut p = Procrastination::new(5);
        let a = action(1, OpKind::Yield, vec![]);
        let b = action(2, OpKind::Send, vec![Access::write(Oid::mailbox(Tid(9)))]);
        let c = action(3, OpKind::Yield, vec![]);
        let mut job = p.job(vec![a.clone(), b.clone(), c.clone()], 1);
        job.probes.clear();
        p.active = Some(job);
        p.start(Run::Swap { i: 0, past: 1 }); // plan: b, a, c
                                              // b's thread is blocked: b is discarded, a is taken.
        let ts = [view(&a, true), view(&b, false), view(&c, true)];
        let ctx = Context {
            step: 0,
            threads: &ts,
            hidden: 0,
            last: None,
            prefix: &[],
        };
        assert_eq!(p.decide(&ctx), Some(Decision::new(Tid(1), 0)));
        assert_eq!(p.discarded_at[1], Some(0));
        // c's thread now runs something else: discarded; the schedule is
        // over and the choice is random among the enabled.
        let mut other = c.clone();
        other.op = OpKind::CellNew;
        let ts = [view(&a, true), view(&other, true)];
        let ctx = Context {
            step: 1,
            threads: &ts,
            hidden: 0,
            last: None,
            prefix: &[],
        };
        let d = p.decide(&ctx).unwrap();
        assert!(d.tid == Tid(1) || d.tid == Tid(3));
        assert_eq!(p.stats().discarded, 2);
        assert_eq!(p.stats().random_decisions, 1);
    }
}
