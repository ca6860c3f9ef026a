//! SES on several threads (`check --jobs N`): the workers run a round's
//! executions side by side, and the pool counts them in one thread's
//! order, so that the run explores, finds and reports exactly what one
//! thread does.
//!
//! **Why it can.** Within round `db` every frame has spent its `db` delays
//! (a frontier entry resumes with its last one, and new frames inherit
//! it), so an execution of the round resumes its entry with a delay and
//! then follows the explorer without delaying again: one path, decided by
//! the entry alone. The state cache only decides where that path *ends*:
//! at the first state already cached, by an earlier round, an earlier
//! execution of the round, or itself. So a worker can run execution `j`
//! before the ones before it are counted: it stops early only at a state
//! it finds cached already (by earlier executions only, since the pool
//! counts in order) or on its own path, and the pool, counting `j` after
//! every execution before it, cuts the path at the first state one thread
//! finds cached ([`SesRounds::count`]). What it ran past that point is
//! work one thread does not do, and a failure there is no bug of the run.
//!
//! **Eviction.** A cache at its cap drops a state to make room, so a state
//! a worker stopped at may be gone by the time the pool counts its
//! execution: one thread then goes on from it. The pool counts what the
//! path holds up to there and hands the execution out again, to be run
//! without stopping before that state (`redo`); nothing after it in the
//! order is counted meanwhile.
//!
//! **Order.** Executions are counted in the order one thread runs them:
//! round by round, each round's in the order of its frontier, which the
//! pool builds as one thread does, each counted execution pushing its
//! frames with choices left, deepest first. The budget, the first bug and
//! the delay bound end the run where they end one thread's. Workers take
//! runs of consecutive entries (neighbours in the frontier share most of
//! their prefix, which the explorer then replays once).

use super::{SesOptions, Tally};
use crate::explorer::rounds::RoundsPool;
use crate::explorer::visits::lock;
use crate::explorer::{Bug, Config, Report};
use crate::state_cache::StateCache;
use crate::strategy::{BoundHit, Stat};
use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use wasmrace_trace::{Decision, Failure};

/// Consecutive entries a worker takes at once, at most: they share most
/// of their prefixes, so one worker replays them with few steps.
const RUN_MAX: usize = 64;

/// A frame of a path as the pool keeps it: no explorer state, which a
/// worker rebuilds by replaying the path (`ses/worker.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mark {
    /// Decisions before its state.
    pub(super) depth: usize,
    /// Transitions taken from its state (the `i` of the paper).
    pub(super) took: u32,
    /// `|choices(s)|`.
    pub(super) choices: u32,
}

/// An execution's decisions, each with the transitions its frame had
/// taken with it (1 for the first; `k` after `k - 1` delays), and the
/// hash of the state each was taken at (`None` where the program gave
/// none): an execution from an entry knows the states before it, as one
/// thread's does from its saved state (`explorer/saved.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Path {
    pub(super) decisions: Vec<Decision>,
    pub(super) took: Vec<u32>,
    pub(super) states: Vec<Option<[u8; 32]>>,
}

/// Where an execution of a round starts.
#[derive(Clone, Debug)]
pub(super) enum Entry {
    /// At the initial state: round 0's one execution.
    Fresh,
    /// At the state after the first `at.depth` steps of `path`, resuming
    /// its frame `at` with one more delay.
    Resume { path: Arc<Path>, at: Mark },
}

/// An entry handed to a worker.
#[derive(Clone, Debug)]
pub(super) struct Handed {
    /// Its round (delay bound) and place in the round.
    pub(super) round: u32,
    pub(super) index: usize,
    pub(super) entry: Entry,
    /// Its first `trust` states are not to be stopped at, cached or not
    /// (an execution run again after an eviction).
    pub(super) trust: usize,
}

/// How a worker's execution went, for the pool to count.
#[derive(Debug)]
pub(super) struct Record {
    /// The frames it made, at new states, in order.
    pub(super) frames: Vec<Mark>,
    /// The entry's frame, after resuming it.
    pub(super) resumed: Option<Mark>,
    /// It stopped at a state it found cached, or on its own path.
    pub(super) cached: Option<[u8; 32]>,
    /// How it failed, if it did.
    pub(super) failure: Option<Failure>,
    /// Its path.
    pub(super) path: Arc<Path>,
}

impl Record {
    /// The hashes of the states at which it made its frames, in order
    /// (`None` where the program gave none): its path's, at their depths.
    fn states(&self) -> impl Iterator<Item = Option<[u8; 32]>> + '_ {
        self.frames.iter().map(|m| self.path.states[m.depth])
    }
}

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Nothing left (or left at the delay bound).
    Exhausted,
    /// `--max-executions` executions counted.
    Budget,
    /// The first bug, with `stop_on_first_bug`.
    FirstBug,
    /// A worker's run ended first (an error, a time budget, a cancel).
    Stopped,
}

/// The pool's state, under its lock.
#[derive(Debug)]
struct Rounds {
    /// This round's entries; `None` once handed out.
    entries: Vec<Option<Entry>>,
    /// Entries handed out.
    handed: usize,
    /// Executions ended and not counted yet, by index, with their entries.
    ended: BTreeMap<usize, (Entry, Record)>,
    /// The next execution to count.
    next: usize,
    /// States of `next` counted already (before a redo).
    partial: usize,
    /// `next`, to run again without stopping before its `partial` states.
    redo: Option<Entry>,
    /// The next round's entries, in one thread's order.
    frontier: Vec<Entry>,
    tally: Tally,
    executions: u64,
    failing: u64,
    bugs: Vec<Bug>,
    end: Option<End>,
}

/// The pool of a run of SES on several threads; see the module
/// documentation.
#[derive(Debug)]
pub(super) struct SesRounds {
    state: Mutex<Rounds>,
    /// Workers wait here for the next round, or the end.
    turn: Condvar,
    /// The states one thread has cached after the executions counted.
    cache: RwLock<StateCache>,
    delay_bound: Option<u32>,
    max_executions: u64,
    stop_on_first_bug: bool,
    bugs_kept: usize,
    /// Workers sharing the pool: a run handed out is at most a
    /// `1 / (2 * workers)` of what is left of the round.
    workers: usize,
}

impl SesRounds {
    /// The pool of a run with `opts` and `cfg` on `workers` threads, at
    /// round 0, with `cache` (empty; tests give a small one).
    pub(super) fn new(opts: SesOptions, cfg: &Config, workers: usize, cache: StateCache) -> Self {
        SesRounds {
            state: Mutex::new(Rounds {
                entries: vec![Some(Entry::Fresh)],
                handed: 0,
                ended: BTreeMap::new(),
                next: 0,
                partial: 0,
                redo: None,
                frontier: Vec::new(),
                tally: Tally::default(),
                executions: 0,
                failing: 0,
                bugs: Vec::new(),
                end: None,
            }),
            turn: Condvar::new(),
            cache: RwLock::new(cache),
            delay_bound: opts.delay_bound,
            max_executions: cfg.max_executions,
            stop_on_first_bug: cfg.stop_on_first_bug,
            bugs_kept: cfg.bugs_kept(),
            workers: workers.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rounds> {
        lock(&self.state)
    }

    fn read_cache(&self) -> std::sync::RwLockReadGuard<'_, StateCache> {
        self.cache.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether one thread has the state hashed to `h` cached already, by
    /// the executions counted so far.
    pub(super) fn cached(&self, h: &[u8; 32]) -> bool {
        self.read_cache().contains(h)
    }

    /// Fills `run` with the next entries to explore, in order: the
    /// execution to run again, or a run of this round's next entries.
    /// Waits while the round's last executions are being run; false when
    /// the run is over.
    pub(super) fn take(&self, run: &mut VecDeque<Handed>) -> bool {
        let mut s = self.lock();
        loop {
            if s.end.is_some() {
                return false;
            }
            let round = s.tally.db;
            if let Some(entry) = s.redo.take() {
                run.push_back(Handed {
                    round,
                    index: s.next,
                    entry,
                    trust: s.partial,
                });
                return true;
            }
            let left = s.entries.len() - s.handed;
            if left > 0 {
                let n = (left / (2 * self.workers)).clamp(1, RUN_MAX);
                for _ in 0..n {
                    let index = s.handed;
                    s.handed += 1;
                    let entry = s.entries[index].take().expect("handed once");
                    run.push_back(Handed {
                        round,
                        index,
                        entry,
                        trust: 0,
                    });
                }
                return true;
            }
            s = self.turn.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The execution of `handed` ended as `record` says: counts it, and the
    /// ended ones after it that waited for it.
    pub(super) fn ended(&self, handed: Handed, record: Record) {
        let mut s = self.lock();
        if s.end.is_some() || handed.round != s.tally.db {
            return;
        }
        s.ended.insert(handed.index, (handed.entry, record));
        let before = (s.tally.db, s.end);
        while s.end.is_none() && s.redo.is_none() {
            let next = s.next;
            let Some((entry, record)) = s.ended.remove(&next) else {
                break;
            };
            if !self.count(&mut s, &record) {
                s.redo = Some(entry);
            }
        }
        if s.redo.is_some() || (s.tally.db, s.end) != before {
            self.turn.notify_all();
        }
    }

    /// Counts execution `s.next` as one thread has it, and what one thread
    /// does before its next (`Ses::begin`'s work: the frontier, the next
    /// round, the budget). False when one thread goes on past where the
    /// worker stopped (see the module documentation): it must run again.
    fn count(&self, s: &mut Rounds, record: &Record) -> bool {
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        let made = record.frames.len();
        let mut kept = made;
        for (k, h) in record.states().enumerate().skip(s.partial) {
            if h.is_some_and(|h| !cache.insert(h)) {
                kept = k;
                break;
            }
            s.tally.states += 1;
        }
        // Cut before where the worker stopped: one thread abandons the
        // execution there, at a state an earlier execution reached and not
        // its own path (the worker would have stopped there): no lasso.
        let cut = kept < made;
        if let (false, Some(h)) = (cut, record.cached) {
            if cache.insert(h) {
                // Dropped since the worker saw it: one thread explores on.
                s.tally.states += 1;
                s.partial = made + 1;
                return false;
            }
        }
        drop(cache);
        s.partial = 0;
        s.tally.cache_hits += u64::from(cut || record.cached.is_some());
        s.executions += 1;
        // Where the worker stopped, its outcome is one thread's (a cycle
        // back to a state of its own path may be a livelock).
        if let Some(failure) = record.failure.clone().filter(|_| !cut) {
            s.failing += 1;
            if s.bugs.len() < self.bugs_kept {
                s.bugs.push(Bug {
                    failure,
                    found_by: "ses".to_string(),
                    schedule: record.path.decisions.clone(),
                    execution: s.executions,
                    order_key: None,
                });
            }
            if self.stop_on_first_bug {
                s.end = Some(End::FirstBug);
                return true;
            }
        }
        self.back_from(s, record, kept);
        s.next += 1;
        if s.next == s.entries.len() {
            self.next_round(s);
        }
        if s.end.is_none() && s.executions >= self.max_executions {
            s.end = Some(End::Budget);
        }
        true
    }

    /// The frames of a counted execution with choices left go to the
    /// frontier, deepest first, as one thread backtracks.
    fn back_from(&self, s: &mut Rounds, record: &Record, kept: usize) {
        let frames = record.frames[..kept].iter().rev();
        for at in frames.chain(&record.resumed) {
            if at.took < at.choices {
                s.frontier.push(Entry::Resume {
                    path: record.path.clone(),
                    at: *at,
                });
                s.tally.found(s.frontier.len());
            }
        }
    }

    /// The round is counted: the next one resumes the frontier, unless it
    /// is empty or the delay bound is reached.
    fn next_round(&self, s: &mut Rounds) {
        if s.frontier.is_empty() {
            s.end = Some(End::Exhausted);
        } else if self.delay_bound == Some(s.tally.db) {
            s.tally.cut_by_bound = s.frontier.len() as u64;
            s.frontier.clear();
            s.end = Some(End::Exhausted);
        } else {
            s.tally.db += 1;
            s.entries = std::mem::take(&mut s.frontier)
                .into_iter()
                .map(Some)
                .collect();
            (s.handed, s.next) = (0, 0);
        }
    }

    /// The counters so far, as one thread has them.
    pub(super) fn tally(&self) -> Tally {
        self.lock().tally.clone()
    }

    /// Whether the run explored its whole space (within the delay bound).
    pub(super) fn exhausted(&self) -> bool {
        self.lock().end == Some(End::Exhausted)
    }

    /// SES's counters as one thread has them.
    pub(super) fn stats(&self) -> Vec<Stat> {
        let evictions = self.read_cache().evictions();
        self.lock().tally.stats(evictions)
    }
}

impl RoundsPool for SesRounds {
    fn settle(&self, reports: &[Report], cfg: &Config) -> Report {
        let mut report = crate::explorer::partition::merge_reports(reports);
        report.executions_run = report.executions;
        report.strategy_stats = self.stats();
        let s = self.lock();
        report.executions = s.executions;
        report.failing_executions = s.failing;
        report.bugs = s.bugs.clone();
        report.bugs.truncate(cfg.bugs_kept());
        report.exhausted = s.end == Some(End::Exhausted);
        report.strategy_bound = s.tally.bound_hit();
        if s.end == Some(End::Budget) {
            report.stopped_by = Some(BoundHit {
                bound: "executions",
                value: self.max_executions,
                knob: "--max-executions",
            });
        } else if s.end != Some(End::Stopped) {
            // A worker's time budget fell after the run was over.
            report.stopped_by = None;
        }
        report
    }

    fn leave(&self) {
        let mut s = self.lock();
        if s.end.is_none() {
            s.end = Some(End::Stopped);
        }
        self.turn.notify_all();
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}
