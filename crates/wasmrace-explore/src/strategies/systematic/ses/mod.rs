//! Stratified exhaustive search, SES (Desai, Qadeer & Seshia, "Systematic
//! Testing of Asynchronous Reactive Systems", FSE 2015, §3 and Fig. 5):
//! explores every execution a delaying explorer reaches with 0 delays, then
//! with 1, 2, ..., pruning with a cache of visited program states.
//!
//! **The algorithm, as in Fig. 5.** `delayBoundedDfs(s, d, i, n)` explores
//! from program state `s` with explorer state `d`, `i` transitions of `s`
//! already explored and `n` delays spent on the way: while `i < |choices(s)|`
//! it takes `next(d)` to a state `s'`; if `s'` is not cached it caches it and
//! recurses with `step(s, d)`, no transitions explored and the same `n`;
//! then, if `n = db` and choices remain, it puts `s ↦ (d, i)` in the
//! *frontier* and stops; otherwise it delays (`d := delay(d)`, `n := n + 1`).
//! `ses` runs `delayBoundedDfs(s0, d0, 0, 0)` with `db = 0`, then, while the
//! frontier is not empty, raises `db` by one and resumes every frontier entry
//! with `delayBoundedDfs(s, delay(d), i, db)`. Every execution with at most
//! `db` delays is explored before any with more, and (Theorem 1) with a sound
//! explorer every reachable state is visited.
//!
//! **On our interfaces.** A frame per state of the current path holds `(d,
//! i, n)`; an execution goes down by taking `next(d)` at each new state and
//! ends at a final state or at a cached one (the execution is abandoned
//! there: that is the recursion not being entered). Backtracking resumes the
//! previous execution at the deepest frame that delays (`Start::Resume`).
//! Frontier entries come from older executions, so they start from states
//! saved for them (`Start::Saved`): SES knows when it first reaches a state
//! whether the state will end up in the frontier (exactly when `i + (db - n)
//! < |choices(s)|` after taking a transition: the budget runs out before the
//! choices do) and asks the explorer to save it then. The explorer keeps a
//! snapshot of it, or only its prefix (to replay) once it holds
//! `Config::max_saved_snapshots` snapshots; `Report::saved_*` say which.
//!
//! **The cache** holds hashes of *program* states (`Program::state_hash`:
//! blake3 of memory, globals, host objects and thread states for wasm), not
//! explorer states, as the paper prescribes: a state reached again with a
//! different explorer state, or fewer delays, is not explored again. The
//! explorer folds the fairness state into the hash (`Fairness::key`): the
//! paper's programs have no fair scheduling, and under it the threads free
//! to run below a state depend on the path to it. It is
//! capped at `cache_mb` MiB ([`StateCache`]); at the cap a new state replaces
//! an old one, which may then be explored again. A program that cannot hash
//! runs SES without a cache, which the paper shows is still sound and
//! terminating (for terminating programs).
//!
//! **Where we differ.** The paper's frontier is a dictionary keyed by state;
//! ours is a list in the order entries were found. The keys can only collide
//! when a state is explored twice in one round, which a complete cache rules
//! out; after an eviction both entries are kept (redundant, not wrong).
//! Explorer states are cloned, never hashed.
//!
//! **Alternatives** (`choose`) are delays like thread switches: see
//! [`DelayCursor`].
//!
//! **On several threads** (`check --jobs`, [`Split::Rounds`]): within a
//! round every frame has spent the round's delays, so each frontier entry
//! is one execution along the explorer, and the threads run a round's
//! entries side by side while a pool counts them in this order, cutting
//! each where one thread's cache would: the run reports what one thread
//! reports (`ses/rounds.rs`).

mod rounds;
mod worker;

use crate::explorer::partition::Split;
use crate::explorer::rounds::RoundsPool;
use crate::explorer::Config;
use crate::program::StepInfo;
use crate::splitting::Splitting;
use crate::state_cache::StateCache;
use crate::strategies::delaying::explorer::{choices, DelayCursor, DelayingExplorer};
use crate::strategies::delaying::ExplorerKind;
use crate::strategies::descriptor::{Descriptor, Knob, StrategyOptions, Takes};
use crate::strategy::{BoundHit, Context, Outcome, Profile, Role, Standing, Start, Stat, Strategy};
use rounds::SesRounds;
use std::collections::VecDeque;
use std::sync::Arc;
use wasmrace_trace::Decision;
use worker::Worker;

/// Options of [`Ses`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SesOptions {
    /// Explore executions with at most this many delays (`--delay-bound`);
    /// `None` raises the bound until the frontier is empty. Default `None`.
    pub delay_bound: Option<u32>,
    /// The state cache's cap in MiB (`--cache-mb`); 0 turns it off.
    /// Default 256.
    pub cache_mb: u64,
}

impl SesOptions {
    /// No delay bound, a 256 MiB cache.
    pub const DEFAULT: SesOptions = SesOptions {
        delay_bound: None,
        cache_mb: 256,
    };
}

impl Default for SesOptions {
    fn default() -> Self {
        SesOptions::DEFAULT
    }
}

/// `ses` in the [registry](crate::strategies::registry): `--explorer`,
/// `--delay-bound`, `--cache-mb`; it always caches states.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "ses",
    about: "Stratified exhaustive search with a delaying explorer: all executions with 0 delays, \
            then 1, 2, ... (see --explorer, --delay-bound), pruned by a cache of visited states \
            (--cache-mb) (FSE 2015)",
    takes: &[
        Takes::always(Knob::Explorer),
        Takes::always(Knob::DelayBound),
        Takes::always(Knob::CacheMb),
    ],
    always: &[(Knob::StateCache, "always caches states")],
    defaults: StrategyOptions {
        explorer: Some(ExplorerKind::RunToCompletion),
        delay_bound: Some(SesOptions::DEFAULT.delay_bound),
        cache_mb: Some(SesOptions::DEFAULT.cache_mb),
        ..StrategyOptions::NONE
    },
    refuses: &[],
    build: |o, seed| {
        let (explorer, opts) = ses_options(o);
        Box::new(Ses::new(explorer.build(seed), seed, opts))
    },
    describe: |o, seed| {
        let (explorer, opts) = ses_options(o);
        let bound = match opts.delay_bound {
            Some(b) => format!("delay bound {b}"),
            None => "no delay bound".to_string(),
        };
        // Only PRR draws from the seed.
        let seed = match explorer {
            ExplorerKind::ProbabilisticRoundRobin => format!(", seed {seed}"),
            _ => String::new(),
        };
        format!(
            "ses, explorer {}, {bound}, state cache {} MiB{seed}",
            explorer.name(),
            opts.cache_mb
        )
    },
    options_json: |o| {
        let (explorer, opts) = ses_options(o);
        let mut json = serde_json::Map::new();
        json.insert("explorer".into(), explorer.name().into());
        json.insert("delay_bound".into(), opts.delay_bound.into());
        json.insert("cache_mb".into(), opts.cache_mb.into());
        json
    },
};

fn ses_options(o: &StrategyOptions) -> (ExplorerKind, SesOptions) {
    let d = SesOptions::DEFAULT;
    let explorer = o.explorer.unwrap_or(ExplorerKind::RunToCompletion);
    let opts = SesOptions {
        delay_bound: o.delay_bound.unwrap_or(d.delay_bound),
        cache_mb: o.cache_mb.unwrap_or(d.cache_mb),
    };
    (explorer, opts)
}

/// A state of the current path and what is left to explore from it: the
/// paper's `delayBoundedDfs(s, d, i, n)` activation.
#[derive(Clone, Debug)]
struct Frame<E> {
    cursor: DelayCursor<E>,
    /// Transitions taken from this state so far (`i`).
    i: usize,
    /// `|choices(s)|`.
    choices: usize,
    /// Delays spent to reach the next transition (`n`).
    n: u32,
    /// Delay before the next transition (set when backtracking here).
    delay_next: bool,
    /// The id this state was saved under, if it is bound for the frontier.
    saved: Option<u64>,
    /// Decisions before this state.
    depth: usize,
}

/// Delaying-explorer stratified exhaustive search; see the module
/// documentation.
#[derive(Clone, Debug)]
pub struct Ses<E> {
    initial: E,
    opts: SesOptions,
    seed: u64,
    cache: StateCache,
    frames: Vec<Frame<E>>,
    /// Entries found in this round, for the next one.
    frontier: Vec<Frame<E>>,
    /// This round's entries still to resume.
    pending: VecDeque<Frame<E>>,
    hash: Option<[u8; 32]>,
    last_event: Option<StepInfo>,
    /// The next `decide` continues the top frame.
    resuming: bool,
    /// A save the next `save_request` asks for.
    save: Option<u64>,
    next_id: u64,
    started: bool,
    exhausted: bool,
    tally: Tally,
    /// With other workers (`check --jobs`): the pool they share.
    worker: Option<Worker>,
}

/// What SES counts, and the delay bound it reached: kept by one thread's
/// search, or by the pool of a run on several ([`SesRounds`]), which
/// counts the executions as one thread does.
#[derive(Clone, Debug, Default)]
struct Tally {
    /// The current delay bound.
    db: u32,
    /// Frontier entries left unexplored at the delay bound.
    cut_by_bound: u64,
    states: u64,
    cache_hits: u64,
    frontier_peak: u64,
    frontier_total: u64,
}

impl Tally {
    /// A frontier entry was found; `held` are held now.
    fn found(&mut self, held: usize) {
        self.frontier_total += 1;
        self.frontier_peak = self.frontier_peak.max(held as u64);
    }

    fn bound_hit(&self) -> Option<BoundHit> {
        (self.cut_by_bound > 0).then(|| BoundHit {
            bound: "delays",
            value: u64::from(self.db),
            knob: "--delay-bound",
        })
    }

    fn stats(&self, evictions: u64) -> Vec<Stat> {
        vec![
            Stat::new(crate::state_cache::STATES_EXPLORED, self.states),
            Stat::new(crate::state_cache::CACHE_HITS, self.cache_hits),
            Stat::new(crate::state_cache::CACHE_EVICTIONS, evictions),
            Stat::peak("delay bound reached", u64::from(self.db)),
            Stat::new("frontier entries", self.frontier_total),
            Stat::peak("frontier peak", self.frontier_peak),
        ]
    }
}

impl<E: DelayingExplorer + Clone> Ses<E> {
    /// SES with `explorer`, whose random choices (PRR) are seeded with
    /// `seed`.
    pub fn new(mut explorer: E, seed: u64, opts: SesOptions) -> Self {
        explorer.reseed(seed);
        Ses {
            initial: explorer,
            opts,
            seed,
            cache: StateCache::new(opts.cache_mb),
            frames: Vec::new(),
            frontier: Vec::new(),
            pending: VecDeque::new(),
            hash: None,
            last_event: None,
            resuming: false,
            save: None,
            next_id: 0,
            started: false,
            exhausted: false,
            tally: Tally::default(),
            worker: None,
        }
    }

    /// With `cache` for its state cache (tests fill a small one); a pool
    /// it makes ([`Splitting::rounds`]) gets one with the same cap.
    #[cfg(test)]
    pub(crate) fn with_cache(mut self, cache: StateCache) -> Self {
        self.cache = cache;
        self
    }

    /// The options it runs with.
    pub fn options(&self) -> SesOptions {
        self.opts
    }

    /// The delaying explorer in its initial state (reseeded with the seed).
    pub fn explorer(&self) -> &E {
        &self.initial
    }

    /// The delay bound being explored (the last one, once done).
    pub fn delay_bound(&self) -> u32 {
        self.counted().db
    }

    /// States explored from: distinct states with the cache on (up to
    /// evictions), every visit without it.
    pub fn states_explored(&self) -> u64 {
        self.counted().states
    }

    /// Transitions that led to a cached state (each ends an execution).
    pub fn cache_hits(&self) -> u64 {
        self.counted().cache_hits
    }

    /// The cache of visited states (`SesOptions::cache_mb`); empty on a
    /// worker of a run on several threads, whose pool holds the run's.
    pub fn state_cache(&self) -> &StateCache {
        &self.cache
    }

    /// What the search counted so far: its own, or on a worker of a run on
    /// several threads the pool's, which is one thread's.
    fn counted(&self) -> Tally {
        match &self.worker {
            Some(w) => w.pool.tally(),
            None => self.tally.clone(),
        }
    }

    /// The largest frontier (entries held at once).
    pub fn frontier_peak(&self) -> u64 {
        self.counted().frontier_peak
    }

    /// Frontier entries found over the whole run.
    pub fn frontier_total(&self) -> u64 {
        self.counted().frontier_total
    }

    /// The frame of a new state, below the path's last: the parent's
    /// explorer after the step that led here, no transition taken yet.
    fn new_frame(&self, ctx: &Context<'_>) -> Frame<E> {
        let threads = ctx.threads;
        // A worker keeps every step's event (it resumes past some).
        let event = match &self.worker {
            Some(w) => w.last_event(),
            None => self.last_event.as_ref(),
        };
        let cursor = match (self.frames.last(), event) {
            (Some(parent), Some(event)) => {
                let mut c = parent.cursor.clone();
                c.after_step(event, threads);
                c
            }
            _ => DelayCursor::new(self.initial.clone(), threads),
        };
        Frame {
            cursor,
            i: 0,
            choices: choices(threads),
            n: self.frames.last().map_or(0, |p| p.n),
            delay_next: false,
            saved: None,
            depth: ctx.step,
        }
    }

    /// Whether the frame will go to the frontier: after its current
    /// transition, the delays left (`db - n`) run out before its choices.
    fn bound_for_frontier(&self, f: &Frame<E>) -> bool {
        f.i + ((self.tally.db - f.n) as usize) < f.choices
    }

    /// Asks for `f`'s state to be saved if the frontier will need it and a
    /// later round will resume it.
    fn maybe_save(&mut self, f: &mut Frame<E>) {
        let last_round = self.opts.delay_bound == Some(self.tally.db);
        if f.saved.is_none() && !last_round && self.bound_for_frontier(f) {
            let id = self.next_id;
            self.next_id += 1;
            f.saved = Some(id);
            self.save = Some(id);
        }
    }
}

impl<E: DelayingExplorer + Clone> Strategy for Ses<E> {
    fn name(&self) -> &str {
        "ses"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.exhausted {
            return None;
        }
        if self.worker.is_some() {
            return self.worker_begin();
        }
        self.resuming = false;
        self.save = None;
        if !self.started {
            self.started = true;
            return Some(Start::Fresh);
        }
        // Back from the transition the top frame took.
        while let Some(f) = self.frames.last_mut() {
            if f.i < f.choices {
                if f.n == self.tally.db {
                    // `frontier[s] := (d, i)`: more choices than delays.
                    let mut f = self.frames.pop()?;
                    f.delay_next = true;
                    self.frontier.push(f);
                    self.tally.found(self.frontier.len());
                    continue;
                }
                f.delay_next = true;
                self.resuming = true;
                return Some(Start::Resume {
                    prefix_len: f.depth,
                });
            }
            self.frames.pop();
        }
        // The subtree is done: resume the next frontier entry, or the next
        // round's first.
        loop {
            if let Some(f) = self.pending.pop_front() {
                let Some(id) = f.saved else {
                    continue;
                };
                self.frames.push(Frame { saved: None, ..f });
                self.resuming = true;
                return Some(Start::Saved { id });
            }
            if self.frontier.is_empty() {
                self.exhausted = true;
                return None;
            }
            if self.opts.delay_bound == Some(self.tally.db) {
                self.tally.cut_by_bound = self.frontier.len() as u64;
                self.frontier.clear();
                self.exhausted = true;
                return None;
            }
            self.tally.db += 1;
            self.pending = std::mem::take(&mut self.frontier).into();
        }
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        if self.worker.is_some() {
            return self.worker_decide(ctx);
        }
        let threads = ctx.threads;
        let hash = self.hash.take();
        let mut frame = if self.resuming {
            self.resuming = false;
            let mut f = self.frames.pop()?;
            if f.delay_next {
                f.delay_next = false;
                f.cursor.delay(threads);
                f.n += 1;
            }
            f
        } else {
            if let Some(h) = hash {
                if !self.cache.insert(h) {
                    self.tally.cache_hits += 1;
                    return None;
                }
            }
            self.tally.states += 1;
            self.new_frame(ctx)
        };
        let d = frame.cursor.next(threads);
        frame.i += 1;
        self.maybe_save(&mut frame);
        self.frames.push(frame);
        Some(d)
    }

    fn observe(&mut self, step: &StepInfo) {
        match &mut self.worker {
            Some(w) => w.observe(step),
            None => self.last_event = Some(step.clone()),
        }
    }

    fn end(&mut self, outcome: &Outcome) {
        self.worker_end(outcome);
    }

    /// In rounds: on several threads, the workers share a `SesRounds`
    /// pool (`ses/rounds.rs`). The state cache hashes states.
    fn profile(&self) -> Profile {
        Profile {
            split: Split::Rounds,
            hashes_states: self.cache.enabled(),
            ..Profile::default()
        }
    }

    /// The seed, when the explorer draws from it (PRR; 0 otherwise, since
    /// SES itself makes no random choice), exhaustion, and the delay bound
    /// and counters: with other workers, the pool's, the run's as one
    /// thread has them.
    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: if self.initial.is_random() {
                self.seed
            } else {
                0
            },
            exhausted: self.exhausted,
            bound_hit: self.counted().bound_hit(),
            stats: match &self.worker {
                Some(w) => w.pool.stats(),
                None => self.tally.stats(self.cache.evictions()),
            },
            ..Standing::default()
        }
    }

    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        self.hash = hash;
    }

    /// A worker replays its entry's prefix, where one thread starts from
    /// the saved state, which keeps these hashes with its prefix.
    fn known_hashes(&self) -> &[Option<[u8; 32]>] {
        self.worker.as_ref().map_or(&[], |w| w.entry_hashes())
    }

    /// The frontier's states, saved to be resumed in a later round.
    fn save_request(&mut self) -> Option<u64> {
        self.save.take()
    }

    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        Some(self)
    }
}

/// SES runs in rounds: on several threads, the workers share a
/// `SesRounds` pool (`ses/rounds.rs`).
impl<E: DelayingExplorer + Clone> Splitting for Ses<E> {
    fn take_role(&mut self, role: Role) -> bool {
        let Role::Rounds(pool) = role else {
            return false;
        };
        if self.started || self.worker.is_some() {
            return false;
        }
        let Ok(pool) = pool.into_any().downcast::<SesRounds>() else {
            return false;
        };
        self.worker = Some(Worker::new(pool));
        true
    }

    fn rounds(&self, cfg: &Config, workers: usize) -> Option<Arc<dyn RoundsPool>> {
        let cache = self.cache.emptied();
        Some(Arc::new(SesRounds::new(self.opts, cfg, workers, cache)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Model, ModelBuilder};
    use crate::strategies::{Recording, RoundRobin};
    use crate::{Config, Explorer};

    /// Main spawns two threads that each write twice.
    fn two_writers() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let w = b.thread("w", |t| {
            t.write(x, 1).write(x, 2);
        });
        b.main(|t| {
            t.spawn(w, 0).spawn(w, 1);
        });
        b.build().unwrap()
    }

    fn run(bound: Option<u32>) -> (crate::Report, Recording<Ses<RoundRobin>>) {
        let opts = SesOptions {
            delay_bound: bound,
            cache_mb: 1,
        };
        let mut rec = Recording::new(Ses::new(RoundRobin::new(), 0, opts));
        let cfg = Config {
            stop_on_first_bug: false,
            ..Config::default()
        };
        let report = rec.run(&mut Explorer::new(two_writers(), cfg)).unwrap();
        (report, rec)
    }

    #[test]
    fn bound_zero_is_the_explorers_own_execution() {
        let (report, rec) = run(Some(0));
        assert_eq!(report.executions, 1);
        assert!(report.exhausted);
        let hit = report.strategy_bound.unwrap();
        assert_eq!(
            (hit.bound, hit.value, hit.knob),
            ("delays", 0, "--delay-bound")
        );
        // Nothing is saved for a round that will never run.
        assert_eq!(report.saved_with_snapshot + report.saved_as_prefix, 0);
        assert_eq!(rec.executions()[0].decisions.len(), 9);
        assert_eq!(rec.inner().states_explored(), 9);
    }

    #[test]
    fn rounds_resume_the_frontier_from_saved_states_in_order() {
        let (report, rec) = run(None);
        assert!(report.exhausted && report.strategy_bound.is_none());
        let ses = rec.inner();
        // Round 0 is one execution; every later round starts each frontier
        // entry from its saved state.
        let starts: Vec<Start> = rec.executions().iter().map(|r| r.start).collect();
        assert_eq!(starts[0], Start::Fresh);
        let saved = starts
            .iter()
            .filter(|s| matches!(s, Start::Saved { .. }))
            .count() as u64;
        assert_eq!(saved, report.saved_restored);
        assert_eq!(saved, ses.frontier_total());
        assert!(ses.delay_bound() >= 2);
        // An execution ends at a final state or at a cached one, which is
        // abandoned there.
        let st = rec.stats();
        assert_eq!(st.abandoned, ses.cache_hits());
        assert!(st.abandoned > 0);
        assert_eq!(st.finished + st.abandoned, report.executions);
        assert_eq!(
            report.saved_with_snapshot, saved,
            "all frontier states were used"
        );
    }
}
