//! Work stealing within one process (`check --jobs N` for strategies that
//! split by prefix): N workers, each an explorer with its own program
//! instance and its own strategy, share one search tree through a pool of
//! subtrees.
//!
//! A subtree is a prefix of decisions (with each decision's mark, so that
//! its place in the search order is known without running it) and the
//! iteration it belongs to. A worker explores one subtree at a time, below
//! its prefix only (reaching it by replaying the prefix); a strategy whose
//! subtrees are not prefixes (`dpor --dpor trust`, whose jobs are graphs)
//! hands its own description over as the subtree's payload instead, the
//! order key doing the rest. When some worker
//! is idle and the pool holds fewer subtrees than there are idle workers,
//! a busy worker donates some of its untried alternatives between two
//! executions. The subtrees are disjoint and each is explored the same
//! whichever worker explores it, so the executions of the run do not
//! depend on the number of workers, only their distribution does.
//!
//! **Bugs.** The rule is the one partitions merge by
//! ([`BugRank`](super::partition::BugRank)): the bug reported is the one
//! with the least order key, which is the one a single run finds first.
//! When the run stops at its first bug, a worker that finds one publishes
//! its key; subtrees whose keys all come after the least published key are
//! abandoned (their executions cannot be the first bug), and every other
//! subtree is still explored, so when the pool runs dry the least key
//! found is the least key of all.
//!
//! **Numbers.** A worker's executions come in *stretches*: those of one
//! subtree it explores (from taking or resuming it until it moves to
//! another, or moves past what it donated: the strategy says so by
//! changing [`Standing::stretch`](crate::Standing::stretch); DFS lets
//! subtrees it deferred in one stretch and explores in a row share one),
//! which are consecutive in the search order. Stretches are disjoint
//! intervals of the order, so sorted by their first key and counted
//! ([`SubtreePool::settle`]) they number every execution as one run does:
//! the bug's number is the count of the stretches before its own plus its
//! place in its own. `--max-executions` is a cut in the same order: once
//! the workers have run that many executions, the stretch holding the
//! last one the budget allows is found by the same count, the work after
//! its first key is abandoned as after a bug, and the rest is explored, so
//! the executions the run keeps are exactly the single run's first ones.
//!
//! **Bounded memory.** Without a shared cache, every `FOLD_EVERY`
//! executions or more (`FOLD_SHARE`) the pool folds the stretches that
//! lie wholly before the
//! *frontier* (the least key an execution still to come can have: the
//! least waiting subtree's, and each busy worker's current stretch's or
//! taken subtree's) into one count, numbering first the bugs and prunes
//! they hold: their counts are final, and every stretch still open or to
//! come orders after them. So the pool holds the stretches between the
//! frontier and the workers, not one per stretch since the start
//! (`condvar_pc` at preemption bound 4 held 740 MB after 1.5 million
//! executions on two threads, when a bounded search opened a stretch
//! every two executions; 139 MB now, as one thread). Folding stops short of the budget, whose cut needs the key of
//! its stretch. The pool knows each worker by its thread.
//!
//! **With a shared state cache** ([`SharedVisits`], `dfs --state-cache`)
//! subtrees are no longer independent: an expansion may be killed later,
//! and the executions below it are not one thread's. Every execution is
//! then logged in its stretch ([`Logged`]), and the counting above counts
//! them as one thread has them (`ledger.rs`, [`Logged::fate`]). Kills can
//! still lower the count before the budget's cut after it was computed,
//! or show a published bug to be one one thread never meets, so work
//! after either is *parked* rather than dropped: once everything else is
//! done both are computed again from final counts, and the parked
//! subtrees still needed are explored.

mod ledger;
mod stretches;

use super::partition::merge_reports;
use super::visits::{ExpId, Logged, SharedVisits};
use super::Report;
use crate::state_cache::{CACHE_HITS, STATES_EXPLORED};
use crate::strategy::BoundHit;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;
use wasmrace_trace::Decision;

/// Executions between two computations of the budget's cut once it is
/// spent, at least (see [`SubtreePool::counted`]).
const RECUT_EVERY: u64 = 256;

/// Executions between two foldings of the finished stretches (see the
/// module documentation), at least: often enough that they hold little
/// memory, rarely enough that the walk under the lock costs nothing.
const FOLD_EVERY: u64 = 4096;

/// The stretches are folded again once the workers ran at least a
/// `1 / FOLD_SHARE` of the number held since: a folding walks them all,
/// and while the frontier waits for a worker behind the other, they pile
/// up (`condvar_pc` at bound 4 on two threads, folded every 4096
/// executions, spent an eighth of its time walking them).
const FOLD_SHARE: u64 = 4;

/// Without a shared cache, the cut is computed again once the workers ran
/// at least a `1 / RECUT_SHARE` of the stretches' number of executions
/// since: a computation walks every stretch, and a bounded search opens a
/// stretch every few executions (`condvar_pc` under bound 3 on two
/// threads, recut every 256 executions, spent a fifth of its time there).
const RECUT_SHARE: u64 = 16;

/// A subtree of the search handed from one worker to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subtree {
    /// The decisions from the initial state to the subtree's root, each with
    /// the strategy's mark of it (its rank, for the order key).
    pub steps: Vec<(Decision, u32)>,
    /// The strategy's iteration the subtree belongs to (DFS's number of
    /// preemptions under a bound; 0 otherwise).
    pub iteration: u32,
    /// Every execution of the subtree has an order key starting with this.
    pub key: Vec<u32>,
    /// With a shared state cache, the deepest expansion on `steps`
    /// ([`NO_EXPANSION`](super::visits::NO_EXPANSION) otherwise).
    pub exp: ExpId,
    /// Subtrees of the same iteration that come after this one in the
    /// search order, in that order, for the same worker to explore after
    /// it: a run handed over as one unit (DFS's deferred subtrees; each
    /// taken alone cost a take and a stretch, 71,000 of each on
    /// `condvar_pc` under bound 3 on two threads). Their keys follow
    /// `key`, so the pool orders, drops and parks the run by `key`.
    pub then: Vec<Later>,
    /// What the strategy needs to start the subtree when a prefix of
    /// decisions cannot say it (a TruSt-style job is a graph, not a
    /// path); `None` for DFS.
    pub payload: Option<Payload>,
}

/// A strategy's own description of a subtree's root, opaque to the pool
/// (see [`Subtree::payload`]); two are equal only if they are the same.
#[derive(Clone)]
pub struct Payload(pub Arc<dyn std::any::Any + Send + Sync>);

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Payload {}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Payload(..)")
    }
}

/// A subtree of a run, explored after the one before it (see
/// [`Subtree::then`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Later {
    /// The decisions from the initial state to its root, with their marks.
    pub steps: Vec<(Decision, u32)>,
    /// As [`Subtree::exp`].
    pub exp: ExpId,
    /// It directly follows the subtree before it in the search order (no
    /// other worker's execution comes between), so exploring it right
    /// after that one continues the stretch.
    pub follows: bool,
}

/// What a worker gets when it asks the pool for work.
#[derive(Debug)]
pub enum Taken {
    /// A subtree to explore.
    Subtree(Subtree),
    /// Nothing is left: every worker is idle and the pool is empty.
    /// `exhausted` is false when subtrees were abandoned after a bug.
    Done {
        /// Whether the whole search space was explored.
        exhausted: bool,
    },
    /// The run was stopped (a bound, an error): leave now.
    Stopped,
}

/// An execution's place: its stretch (index into `State::stretches`) and
/// its 1-based place in it.
pub type Place = (usize, u64);

/// A worker's executions that are consecutive in the search order (see
/// the module documentation).
#[derive(Debug)]
struct Stretch {
    /// The order key of its first execution, shared with `State::by_key`
    /// (keys took a fifth of the pool's peak memory each, twice).
    first: Arc<[u32]>,
    /// Its executions so far.
    count: Arc<AtomicU64>,
    /// Each execution, with a shared state cache (none otherwise: a plain
    /// run opens a stretch every few executions, and its log was an
    /// allocation each, never filled).
    log: Option<Arc<Mutex<Vec<Logged>>>>,
}

/// What the worker running a stretch holds of it.
#[derive(Clone, Debug)]
pub struct StretchHandle {
    /// Its index in the pool.
    pub index: usize,
    /// Its executions so far.
    pub count: Arc<AtomicU64>,
    /// Its executions, with a shared state cache.
    pub log: Option<Arc<Mutex<Vec<Logged>>>>,
}

/// What the lock guards: the subtrees waiting, the least bug key, the
/// stretches and the budget's cut.
#[derive(Debug, Default)]
struct State {
    /// Waiting subtrees by key: the earliest in the search order is taken
    /// first, so the first bug tends to be found early.
    waiting: BTreeMap<Vec<u32>, Subtree>,
    /// Workers waiting in `take`.
    idle: usize,
    /// The least order key of a bug published by `found`, and its place.
    best: Option<(Vec<u32>, Place)>,
    /// Every bug's order key and place, in a run that goes on past its
    /// bugs (to number and count them; a key and a place each, where a
    /// worker's report keeps at most `Config::max_bugs_kept` bugs with
    /// their schedules).
    failures: BTreeMap<Vec<u32>, Place>,
    /// The run stops at its first bug: work after `best` is abandoned.
    stop_at_best: bool,
    /// The first key of the stretch holding the last execution the budget
    /// allows, once the workers have run as many (see the module
    /// documentation).
    cut: Option<Vec<u32>>,
    /// Each stretch's first key and its executions, by index (in order
    /// of opening), but those folded.
    stretches: BTreeMap<usize, Stretch>,
    /// The index of the next stretch.
    next_stretch: usize,
    /// The executions of the folded stretches, and the numbers of the
    /// places they held that the pool still needs (bugs, prunes).
    folded: u64,
    folded_numbers: HashMap<Place, u64>,
    /// For each busy worker (by thread), the least key its executions to
    /// come can have: its current stretch's first, or, before it opens
    /// one, the key of the subtree it took.
    frontier: HashMap<ThreadId, Arc<[u32]>>,
    /// The stretches' indices by first key (ties by index), once the
    /// order is first needed (`State::order`), and from then on kept as
    /// they open: the budget's cut walks them in order now and then past
    /// the budget ([`RECUT_EVERY`], [`RECUT_SHARE`]), and sorting them each
    /// time cost more than the executions (`--jobs 2 --max-executions
    /// 100000` on a bounded dfs spent half its time sorting). Not before:
    /// a run that never reaches its budget (an exhaustive one) needs the
    /// order at most once, at the end, and keeping it as stretches opened
    /// was the largest cost two threads had that one has not (4% of
    /// their CPU time on `condvar_pc` under bound 3, `perf`).
    by_key: Option<BTreeSet<(Arc<[u32]>, usize)>>,
    /// With a shared state cache: subtrees after the budget's cut, kept
    /// in case kills move the cut later (see the module documentation).
    parked: BTreeMap<Vec<u32>, Subtree>,
    /// The budget the cut was last computed for.
    budget: u64,
    /// The bound that stopped the run for every worker (a full shared
    /// state cache).
    stopped_by: Option<BoundHit>,
    /// The least key of an execution during which a strategy's own bound
    /// pruned, and its place.
    pruned: Option<(Vec<u32>, Place)>,
    /// Some subtree was abandoned because of `best` or `cut`.
    abandoned: bool,
    done: bool,
}

impl State {
    /// The key after which work is abandoned: the least of the bug's and
    /// the cut.
    fn threshold(&self) -> Option<&Vec<u32>> {
        let best = self.best.as_ref().filter(|_| self.stop_at_best);
        match (best.map(|b| &b.0), self.cut.as_ref()) {
            (Some(b), Some(c)) => Some(b.min(c)),
            (b, c) => b.or(c),
        }
    }
}

/// The pool the workers of one run share, each on a thread of its own;
/// see the module documentation.
#[derive(Debug)]
pub struct SubtreePool {
    state: Mutex<State>,
    wake: Condvar,
    workers: usize,
    /// Mirrors of `State::idle` and the number waiting, read without the
    /// lock between executions.
    idle: AtomicUsize,
    waiting: AtomicUsize,
    /// How often the threshold (`best` or `cut`) moved, counted under the
    /// lock, so that a worker takes the lock to read it only when it did
    /// ([`threshold_moved`](SubtreePool::threshold_moved)).
    threshold_moves: AtomicU64,
    has_best: AtomicBool,
    stopped: AtomicBool,
    /// Executions counted by all workers (for `--max-executions`).
    executions: AtomicU64,
    /// The executions counted when the budget's cut is next computed
    /// (0: once the budget is spent).
    next_recut: AtomicU64,
    /// The executions counted when the stretches are next folded.
    next_fold: AtomicU64,
    /// Hungry at every `eager`-th question, busy or not (see
    /// [`SubtreePool::eager`]); 0: only when a worker waits.
    eager: u64,
    /// Questions asked of an eager pool.
    asked: AtomicU64,
    /// Executions between two foldings at least, and the share of the
    /// stretches held ([`FOLD_EVERY`], [`FOLD_SHARE`]; tests fold more
    /// often).
    fold_every: u64,
    fold_share: u64,
    /// The state cache the workers share, when they cache states.
    visits: OnceLock<Arc<SharedVisits>>,
}

impl SubtreePool {
    /// A pool for `workers` workers holding the whole search (the root
    /// subtree, the empty prefix).
    pub fn new(workers: usize) -> Arc<Self> {
        let root = Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: vec![0],
            exp: super::visits::NO_EXPANSION,
            then: Vec::new(),
            payload: None,
        };
        let mut waiting = BTreeMap::new();
        waiting.insert(root.key.clone(), root);
        Arc::new(SubtreePool {
            state: Mutex::new(State {
                waiting,
                ..State::default()
            }),
            wake: Condvar::new(),
            workers: workers.max(1),
            idle: AtomicUsize::new(0),
            waiting: AtomicUsize::new(1),
            threshold_moves: AtomicU64::new(0),
            has_best: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            executions: AtomicU64::new(0),
            next_recut: AtomicU64::new(0),
            next_fold: AtomicU64::new(FOLD_EVERY),
            eager: 0,
            asked: AtomicU64::new(0),
            fold_every: FOLD_EVERY,
            fold_share: FOLD_SHARE,
            visits: OnceLock::new(),
        })
    }

    /// A pool whose workers donate between any two executions, hungry or
    /// not: the same exploration with as many hand-overs as it can have
    /// (tests: on small models, one worker is often done before the others
    /// start, and would never donate).
    pub fn eager(workers: usize) -> Arc<Self> {
        Self::eager_every(workers, 1)
    }

    /// A pool whose workers donate at every `n`-th chance, hungry or not
    /// (tests: hand-overs between longer stretches, so that a worker
    /// explores several subtrees it deferred in a row).
    pub fn eager_every(workers: usize, n: u64) -> Arc<Self> {
        let mut pool = Arc::into_inner(Self::new(workers)).expect("just made");
        pool.eager = n.max(1);
        Arc::new(pool)
    }

    /// This pool, folding finished stretches every `n` executions however
    /// many it holds (tests: folding between any two).
    pub fn folding_every(self: Arc<Self>, n: u64) -> Arc<Self> {
        let mut pool = Arc::into_inner(self).expect("not shared yet");
        pool.fold_every = n.max(1);
        pool.fold_share = u64::MAX;
        pool.next_fold = AtomicU64::new(pool.fold_every);
        Arc::new(pool)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked holding the lock left the state whole
        // (every update is one assignment); the run ends anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state cache the workers share, made by the first to ask with
    /// its `cache_mb`: from then on the pool counts by logs, and parks
    /// work after the budget's cut (see the module documentation).
    pub fn visits(&self, cache_mb: u64) -> Arc<SharedVisits> {
        self.visits
            .get_or_init(|| Arc::new(SharedVisits::new(cache_mb)))
            .clone()
    }

    /// Makes the workers share `visits` (tests: a small cap); before any
    /// worker starts. False when a cache is already shared.
    pub fn share_visits(&self, visits: SharedVisits) -> bool {
        self.visits.set(Arc::new(visits)).is_ok()
    }

    /// The shared state cache, if the workers cache states.
    pub fn cached(&self) -> Option<&SharedVisits> {
        self.visits.get().map(|v| &**v)
    }

    /// Where a subtree after the threshold goes: parked when the workers
    /// share a state cache (a kill may still lower the count before the
    /// budget's cut, or show the bug to be one one thread never meets),
    /// dropped otherwise.
    fn set_aside(&self, s: &mut State, t: Subtree) {
        if self.cached().is_some() {
            s.parked.insert(t.key.clone(), t);
        } else {
            s.abandoned = true;
        }
    }

    /// Whether a busy worker should donate: some worker waits for work and
    /// the pool holds fewer subtrees than there are waiting workers.
    pub fn hungry(&self) -> bool {
        if self.eager > 0 {
            let asked = self.asked.fetch_add(1, Ordering::Relaxed);
            return asked.is_multiple_of(self.eager);
        }
        let idle = self.idle.load(Ordering::Relaxed);
        idle > 0 && self.waiting.load(Ordering::Relaxed) < idle
    }

    /// Adds donated subtrees; those after the least bug key are dropped.
    pub fn give(&self, subtrees: Vec<Subtree>) {
        if subtrees.is_empty() {
            return;
        }
        let mut s = self.lock();
        for t in subtrees {
            if s.threshold().is_some_and(|b| t.key > *b) {
                self.set_aside(&mut s, t);
                continue;
            }
            s.waiting.insert(t.key.clone(), t);
        }
        self.waiting.store(s.waiting.len(), Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// The next subtree to explore, waiting while other workers are busy
    /// (they may donate); `Done` once every worker waits and nothing is
    /// left. Called by a worker with no work of its own.
    pub fn take(&self) -> Taken {
        let me = std::thread::current().id();
        let mut s = self.lock();
        // Idle: its executions to come are in the waiting subtrees.
        s.frontier.remove(&me);
        s.idle += 1;
        self.idle.store(s.idle, Ordering::Relaxed);
        let taken = loop {
            if self.stopped.load(Ordering::Relaxed) {
                break Taken::Stopped;
            }
            if let Some((_, t)) = s.waiting.pop_first() {
                if s.threshold().is_some_and(|b| t.key > *b) {
                    // Every other waiting subtree comes later still.
                    for t in std::iter::once(t).chain(std::mem::take(&mut s.waiting).into_values())
                    {
                        self.set_aside(&mut s, t);
                    }
                    continue;
                }
                s.frontier.insert(me, t.key.as_slice().into());
                break Taken::Subtree(t);
            }
            if !s.done && s.idle == self.workers && self.unpark(&mut s) {
                continue;
            }
            if s.done || s.idle == self.workers {
                s.done = true;
                self.wake.notify_all();
                break Taken::Done {
                    exhausted: !s.abandoned,
                };
            }
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        };
        s.idle -= 1;
        self.idle.store(s.idle, Ordering::Relaxed);
        self.waiting.store(s.waiting.len(), Ordering::Relaxed);
        taken
    }

    /// Publishes the order key of a bug found and its place; when the run
    /// `stops` at its first bug, work entirely after the least such key is
    /// abandoned.
    pub fn found(&self, key: Vec<u32>, place: Place, stops: bool) {
        let mut s = self.lock();
        // With a shared cache every bug is kept: one found below a killed
        // expansion is not one thread's, and is left out when counting.
        if !stops || self.cached().is_some() {
            s.failures.insert(key.clone(), place);
        }
        if s.best.as_ref().is_none_or(|b| key < b.0) {
            s.best = Some((key, place));
        }
        if stops {
            s.stop_at_best = true;
            self.has_best.store(true, Ordering::Release);
            self.threshold_moves.fetch_add(1, Ordering::Release);
        }
    }

    /// Whether a bug was published.
    pub fn has_bug(&self) -> bool {
        self.has_best.load(Ordering::Acquire)
    }

    /// The key after which work is abandoned (the least bug key published
    /// so far, or the budget's cut, whichever comes first). Takes the
    /// lock: workers ask [`threshold_moved`](Self::threshold_moved).
    pub fn threshold(&self) -> Option<Vec<u32>> {
        self.lock().threshold().cloned()
    }

    /// The threshold (as [`threshold`](Self::threshold) has it) when it
    /// moved since the caller last read it here (`seen` holds how often it
    /// had moved then), else `None`: a worker asks between any two
    /// executions, and takes the lock only when there is news.
    pub fn threshold_moved(&self, seen: &mut u64) -> Option<Option<Vec<u32>>> {
        if self.threshold_moves.load(Ordering::Acquire) == *seen {
            return None;
        }
        let s = self.lock();
        // Moves happen under the lock: this count goes with this threshold.
        *seen = self.threshold_moves.load(Ordering::Relaxed);
        Some(s.threshold().cloned())
    }

    /// Starts a stretch (see the module documentation) whose first
    /// execution has order key `key`: returns its index and its counter.
    pub fn open_stretch(&self, key: Vec<u32>) -> StretchHandle {
        let count = Arc::new(AtomicU64::new(0));
        let log = self.cached().map(|_| Arc::default());
        let first: Arc<[u32]> = key.into();
        let me = std::thread::current().id();
        let mut s = self.lock();
        let index = s.next_stretch;
        s.next_stretch += 1;
        if let Some(by_key) = &mut s.by_key {
            by_key.insert((Arc::clone(&first), index));
        }
        s.frontier.insert(me, Arc::clone(&first));
        let stretch = Stretch {
            first,
            count: count.clone(),
            log: log.clone(),
        };
        s.stretches.insert(index, stretch);
        StretchHandle { index, count, log }
    }

    /// Records that the execution at `place` (order key `key`) is one
    /// during which the strategy's own bound pruned.
    pub(crate) fn pruned_at(&self, key: Vec<u32>, place: Place) {
        let mut s = self.lock();
        if s.pruned.as_ref().is_none_or(|p| key < p.0) {
            s.pruned = Some((key, place));
        }
    }

    /// The workers' reports as the single run's, once they are all done:
    /// merged ([`merge_reports`]), every bug numbered as one run numbers it
    /// (the first, or with `stop_on_first_bug` off every one, in search
    /// order, at most [`Config::bugs_kept`](super::Config::bugs_kept)) and
    /// the run cut at the budget `cfg.max_executions` (counts, bugs,
    /// failing executions and the strategy's bound as one run has them
    /// after `max` executions; the workers ran past it).
    pub fn settle(&self, reports: &[Report], cfg: &super::Config) -> Report {
        let max = cfg.max_executions;
        let mut report = merge_reports(reports);
        report.executions_run = report.executions;
        let mut s = self.lock();
        let dead = self.cached().map(|v| v.dead());
        // Only the ledger walks the stretches in order: plain numbers sum
        // them, and sorting a bounded search's stretches (one every two
        // executions) took 6% of two threads' samples on `condvar_pc`.
        if dead.is_some() {
            s.order();
        }
        let numbers = match &dead {
            None => ledger::Numbers::Plain(&s),
            Some(dead) => ledger::Numbers::Logged(ledger::Ledger::new(&s, dead)),
        };
        let total = numbers.total();
        let bug = match &numbers {
            ledger::Numbers::Plain(_) => {
                let bug = (s.best.as_ref()).and_then(|(key, place)| numbers.number(key, *place));
                if s.stop_at_best {
                    if let (Some(n), Some(b)) = (bug, report.bugs.first_mut()) {
                        b.execution = n;
                    }
                } else if !s.failures.is_empty() {
                    report.bugs = s.numbered(&numbers, reports, cfg.bugs_kept());
                }
                bug
            }
            // Every bug is numbered, and those one run does not find
            // dropped; the least left is one run's first.
            ledger::Numbers::Logged(_) => {
                report.bugs = s.numbered(&numbers, reports, cfg.bugs_kept());
                report.bugs.first().map(|b| b.execution)
            }
        };
        let last = match bug {
            Some(n) if n <= max && s.stop_at_best => {
                report.executions = n;
                report.bugs.truncate(1);
                n
            }
            // A space of exactly `max` executions is exhausted, as in one
            // run (its strategy is done before the budget is checked).
            _ if total > max || (total == max && !report.exhausted) => {
                report.executions = max;
                report.bugs.retain(|b| b.execution <= max);
                report.exhausted = false;
                report.stopped_by = Some(BoundHit {
                    bound: "executions",
                    value: max,
                    knob: "--max-executions",
                });
                max
            }
            _ => {
                report.executions = total;
                total
            }
        };
        if let (Some(hit), None) = (&s.stopped_by, &report.stopped_by) {
            report.stopped_by = Some(hit.clone());
        }
        report.failing_executions = if s.stop_at_best {
            report.bugs.len() as u64
        } else {
            // Those one run counts: numbered, within the budget.
            (s.failures.iter())
                .filter(|(key, place)| numbers.number(key, **place).is_some_and(|n| n <= last))
                .count() as u64
        };
        if numbers.first_pruned().is_none_or(|p| p > last) {
            report.strategy_bound = None;
        }
        if let ledger::Numbers::Logged(ledger) = &numbers {
            // Workers that heard of a bug one thread never meets did not
            // call the space exhausted.
            let stopped_at_bug = s.stop_at_best && bug.is_some();
            let whole = s.done && !s.abandoned && !self.is_stopped();
            if report.stopped_by.is_none() {
                report.exhausted = whole && !stopped_at_bug;
            }
            let (states, hits) = ledger.tally(last);
            for stat in &mut report.strategy_stats {
                match stat.name {
                    STATES_EXPLORED => stat.value = states,
                    CACHE_HITS => stat.value = hits,
                    _ => {}
                }
            }
        }
        report
    }

    /// With a shared state cache, once every worker is idle: the work
    /// before the threshold is done, so its counts are final (later kills
    /// come from smaller keys). Computes the threshold again from them (the
    /// budget's cut, and the least bug one thread meets: a bug found below
    /// a killed expansion may depend on the path, the livelock of a cycle
    /// through a state above it, and have no twin at a smaller key), and
    /// moves the parked subtrees before it back to waiting. False when
    /// none is before it (the rest is dropped).
    fn unpark(&self, s: &mut State) -> bool {
        let Some(visits) = self.cached() else {
            return false;
        };
        if s.parked.is_empty() {
            return false;
        }
        let dead = visits.dead();
        s.order();
        let ledger = ledger::Ledger::new(s, &dead);
        let cut = s.cut.as_ref().and_then(|_| ledger.cut(s.budget));
        let best = (s.failures.iter())
            .find(|(_, place)| ledger.number(**place).is_some())
            .map(|(key, place)| (key.clone(), *place));
        drop(ledger);
        drop(dead);
        s.cut = cut;
        s.best = best;
        self.has_best
            .store(s.stop_at_best && s.best.is_some(), Ordering::Release);
        let threshold = s.threshold().cloned();
        self.threshold_moves.fetch_add(1, Ordering::Release);
        let parked = std::mem::take(&mut s.parked);
        for (key, t) in parked {
            if threshold.as_ref().is_some_and(|c| key > *c) {
                s.parked.insert(key, t);
            } else {
                s.waiting.insert(key, t);
            }
        }
        if s.waiting.is_empty() {
            s.parked.clear();
            s.abandoned = true;
            return false;
        }
        self.waiting.store(s.waiting.len(), Ordering::Relaxed);
        true
    }

    /// Records that a worker abandoned work after the least bug key.
    pub fn abandoned(&self) {
        self.lock().abandoned = true;
    }

    /// Ends the run for every worker because `hit` was reached (a full
    /// shared state cache); the settled report says so.
    pub fn stop_at(&self, hit: BoundHit) {
        self.lock().stopped_by.get_or_insert(hit);
        self.stop();
    }

    /// Ends the run for every worker (a bound was hit, or a worker failed).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _s = self.lock();
        self.wake.notify_all();
    }

    /// Whether the run was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

/// Stops the pool when a worker's run ends early (a bound, an error or a
/// panic), so that no other worker waits for its donations for ever.
pub(crate) struct StopOnDrop<'a> {
    pub(crate) pool: Option<&'a SubtreePool>,
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pool {
            p.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::visits::Visit;
    use crate::explorer::{Bug, Config};

    /// A run stopping at its first bug, with budget `max`.
    fn budget(max: u64) -> Config {
        Config {
            max_executions: max,
            ..Config::default()
        }
    }

    /// A run going on past its bugs, with budget `max`.
    fn going_on(max: u64) -> Config {
        Config {
            stop_on_first_bug: false,
            ..budget(max)
        }
    }

    fn subtree(key: &[u32]) -> Subtree {
        Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: key.to_vec(),
            exp: 0,
            then: Vec::new(),
            payload: None,
        }
    }

    #[test]
    fn subtrees_are_taken_in_search_order_and_dropped_after_a_bug() {
        let pool = SubtreePool::new(1);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0]));
        pool.give(vec![subtree(&[0, 3]), subtree(&[0, 2]), subtree(&[0, 5])]);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0, 2]));
        pool.found(vec![0, 4, 1, 0], (0, 1), true);
        pool.give(vec![subtree(&[0, 9])]);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0, 3]));
        assert!(matches!(pool.take(), Taken::Done { exhausted: false }));
    }

    #[test]
    fn the_last_idle_worker_ends_the_run_for_all() {
        let pool = SubtreePool::new(2);
        let t = match pool.take() {
            Taken::Subtree(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(t.key, [0]);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take());
            while !pool.hungry() {
                std::thread::yield_now();
            }
            pool.give(vec![subtree(&[0, 1])]);
            assert!(matches!(waiter.join().unwrap(), Taken::Subtree(_)));
        });
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take());
            assert!(matches!(pool.take(), Taken::Done { exhausted: true }));
            assert!(matches!(waiter.join().unwrap(), Taken::Done { .. }));
        });
        let stopped = SubtreePool::new(2);
        stopped.stop();
        assert!(matches!(stopped.take(), Taken::Stopped));
    }

    /// A one-worker pool sharing a state cache, its root taken, where
    /// expansion `a` (returned with another id, `b`) holds state `[7; 32]`
    /// at order key `key`.
    fn cached_pool(key: &[u32]) -> (Arc<SubtreePool>, ExpId, ExpId) {
        let pool = SubtreePool::new(1);
        assert!(pool.share_visits(SharedVisits::new(1)));
        let (a, b) = (SharedVisits::id(1, 0), SharedVisits::id(2, 0));
        let visits = pool.cached().unwrap();
        assert_eq!(visits.visit([7; 32], key, a), Visit::Expand(a));
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0]));
        (pool, a, b)
    }

    /// With a shared state cache, work after the budget's cut is parked,
    /// not dropped: a kill after the cut was computed can leave fewer of
    /// one run's executions before it, and the parked work is then
    /// explored after all.
    #[test]
    fn work_after_the_cut_is_parked_until_kills_have_settled_the_counts() {
        let (pool, a, b) = cached_pool(&[0, 1, 1]);
        let visits = pool.cached().unwrap();
        // Three executions below expansion `a`: the budget of 3 is spent.
        let stretch = pool.open_stretch(vec![0, 1, 1, 0]);
        for _ in 0..3 {
            stretch.count.fetch_add(1, Ordering::Relaxed);
            let below_a = Logged {
                leaf: a,
                ..Logged::new()
            };
            stretch.log.as_ref().unwrap().lock().unwrap().push(below_a);
            pool.counted(3);
        }
        assert_eq!(pool.threshold(), Some(vec![0, 1, 1, 0]));
        pool.give(vec![subtree(&[0, 2])]);
        // A smaller key reaches `a`'s state: none of the three counts.
        assert_eq!(visits.visit([7; 32], &[0, 0, 5], b), Visit::Expand(b));
        match pool.take() {
            Taken::Subtree(t) => assert_eq!(t.key, [0, 2], "unparked"),
            other => panic!("the parked subtree is needed: {other:?}"),
        }
        assert_eq!(pool.threshold(), None);
    }

    /// With a shared state cache, a bug found below an expansion killed
    /// later is not one thread's (and may have no twin: a livelock's cycle
    /// can pass above the killed expansion), so the work after it is
    /// parked, and explored once the bug turns out not to count.
    #[test]
    fn work_after_a_bug_one_thread_never_meets_is_explored_after_all() {
        let (pool, a, b) = cached_pool(&[0, 1]);
        let visits = pool.cached().unwrap();
        let stretch = pool.open_stretch(vec![0, 1, 1, 0]);
        stretch.count.fetch_add(1, Ordering::Relaxed);
        let below_a = Logged {
            leaf: a,
            ..Logged::new()
        };
        stretch.log.as_ref().unwrap().lock().unwrap().push(below_a);
        pool.found(vec![0, 1, 1, 0], (stretch.index, 1), true);
        assert!(pool.has_bug());
        pool.give(vec![subtree(&[0, 2])]);
        assert_eq!(visits.visit([7; 32], &[0, 0, 3], b), Visit::Expand(b));
        match pool.take() {
            Taken::Subtree(t) => assert_eq!(t.key, [0, 2], "unparked"),
            other => panic!("the bug does not count: {other:?}"),
        }
        assert!(!pool.has_bug());
        assert_eq!(pool.threshold(), None);
    }

    /// Stretches number executions as one run: the bug's number counts the
    /// stretches ordered before its own, whoever ran them and when; the
    /// budget's cut is the first key of the stretch holding its last
    /// execution, and settling keeps exactly the budget.
    #[test]
    fn stretches_number_the_bug_and_cut_the_budget_in_search_order() {
        let pool = SubtreePool::new(2);
        let late = pool.open_stretch(vec![0, 5]);
        let (late, late_count) = (late.index, late.count);
        let early_count = pool.open_stretch(vec![0, 2]).count;
        late_count.store(4, Ordering::Relaxed);
        early_count.store(3, Ordering::Relaxed);
        // The third execution of the later stretch failed: 3 + 3.
        pool.found(vec![0, 5, 9], (late, 3), true);
        let worker = Report {
            executions: 7,
            bugs: vec![],
            ..Report::default()
        };
        let report = pool.settle(std::slice::from_ref(&worker), &budget(100));
        assert_eq!(report.executions, 6);
        // With a budget of 5 the bug is past it: cut at the budget.
        let report = pool.settle(&[Report::default()], &budget(5));
        assert_eq!(report.executions, 5);
        assert_eq!(report.stopped_by.map(|b| b.knob), Some("--max-executions"));
        // Counting toward a budget of 5 cuts after the later stretch's
        // first key: the 5th execution is its second.
        let budget = SubtreePool::new(1);
        let a = budget.open_stretch(vec![0, 1]).count;
        let b = budget.open_stretch(vec![0, 3]).count;
        a.store(3, Ordering::Relaxed);
        b.store(2, Ordering::Relaxed);
        for _ in 0..4 {
            budget.counted(5);
        }
        assert_eq!(budget.threshold(), None);
        budget.counted(5);
        assert_eq!(budget.threshold(), Some(vec![0, 3]));
    }

    /// Stretches before the frontier fold into one count: the bugs they
    /// hold keep their numbers, the stretches after it are kept, a waiting
    /// subtree holds the frontier back, and nothing folds that would fold
    /// the budget's last execution.
    #[test]
    fn finished_stretches_fold_without_changing_a_number() {
        let pool = SubtreePool::new(1).folding_every(1);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0]));
        let a = pool.open_stretch(vec![0, 1]);
        a.count.store(3, Ordering::Relaxed);
        pool.found(vec![0, 1, 7], (a.index, 2), false);
        // The worker moved on past `[0, 2]`, which waits.
        pool.give(vec![subtree(&[0, 2])]);
        let b = pool.open_stretch(vec![0, 4]);
        b.count.store(2, Ordering::Relaxed);
        pool.found(vec![0, 4, 1], (b.index, 1), false);
        pool.counted(100);
        let held = |p: &SubtreePool| {
            let s = p.lock();
            (s.stretches.len(), s.folded)
        };
        assert_eq!(
            held(&pool),
            (1, 3),
            "`a` folded, `b` after the waiting subtree"
        );
        // Taken and explored: 4 executions before `b`'s.
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0, 2]));
        pool.open_stretch(vec![0, 2])
            .count
            .store(4, Ordering::Relaxed);
        pool.open_stretch(vec![0, 5])
            .count
            .store(1, Ordering::Relaxed);
        pool.counted(100);
        assert_eq!(held(&pool), (1, 9));
        let bug = |key: Vec<u32>| Bug {
            failure: wasmrace_trace::Failure::new(wasmrace_trace::FailureKind::Panic, None, "x"),
            found_by: "dfs".into(),
            schedule: vec![],
            execution: 0,
            order_key: Some(key),
        };
        let worker = Report {
            bugs: vec![bug(vec![0, 1, 7]), bug(vec![0, 4, 1])],
            ..Report::default()
        };
        let report = pool.settle(std::slice::from_ref(&worker), &going_on(100));
        let numbers: Vec<u64> = report.bugs.iter().map(|b| b.execution).collect();
        assert_eq!(numbers, [2, 3 + 4 + 1]);
        assert_eq!(report.executions, 10);
        // Folding the first two stretches would fold the budget's 5th
        // execution, whose stretch the cut names.
        let budget = SubtreePool::new(1).folding_every(1);
        assert!(matches!(budget.take(), Taken::Subtree(_)));
        for (key, count) in [(vec![0, 1], 3), (vec![0, 3], 2), (vec![0, 6], 0)] {
            budget
                .open_stretch(key)
                .count
                .store(count, Ordering::Relaxed);
        }
        for _ in 0..4 {
            budget.counted(5);
        }
        assert_eq!(held(&budget), (3, 0));
        budget.counted(5);
        assert_eq!(budget.threshold(), Some(vec![0, 3]));
    }

    /// A worker hears of each move of the threshold once, and without one
    /// nothing (it asks between any two executions); the budget's cut is
    /// lowered only when it is computed again, [`RECUT_EVERY`] executions
    /// later for a few stretches.
    #[test]
    fn each_move_of_the_threshold_is_news_once_and_the_cut_moves_now_and_then() {
        let pool = SubtreePool::new(1);
        let mut seen = 0;
        assert_eq!(pool.threshold_moved(&mut seen), None);
        pool.open_stretch(vec![0, 5])
            .count
            .store(5, Ordering::Relaxed);
        for _ in 0..5 {
            pool.counted(5);
        }
        assert_eq!(pool.threshold_moved(&mut seen), Some(Some(vec![0, 5])));
        assert_eq!(pool.threshold_moved(&mut seen), None);
        // An earlier stretch now holds the budget: the cut moves to it at
        // the next computation, not before.
        pool.open_stretch(vec![0, 2])
            .count
            .store(5, Ordering::Relaxed);
        for _ in 1..RECUT_EVERY {
            pool.counted(5);
        }
        assert_eq!(pool.threshold_moved(&mut seen), None);
        pool.counted(5);
        assert_eq!(pool.threshold_moved(&mut seen), Some(Some(vec![0, 2])));
        // A bug before the cut is a move too.
        pool.found(vec![0, 1, 0], (1, 1), true);
        assert_eq!(pool.threshold_moved(&mut seen), Some(Some(vec![0, 1, 0])));
        assert_eq!(pool.threshold_moved(&mut seen), None);
    }
}
