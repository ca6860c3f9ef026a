//! Stratified sampling, SS (Desai, Qadeer & Seshia, "Systematic Testing of
//! Asynchronous Reactive Systems", FSE 2015, §4 and Fig. 7): near-uniform
//! random sampling of the executions a delaying explorer reaches with a
//! given number of delays.
//!
//! **The algorithm, as in Fig. 7.** A sample with delay bound `db` is built
//! by `delayBoundedSample`: run the program following the explorer with no
//! delay (`executePath` with an empty `path`); it returns `l`, the number of
//! steps after the last delay; pick a position uniformly in `0..l`, append
//! it to `path` and run again, now delaying once at that position; repeat
//! until `path` holds `db` positions. `path[i]` counts the steps between
//! delay `i - 1` (or the start) and delay `i`, so several delays may fall on
//! one state. `ss` loops forever: `numsamples(db) = c1 · c2^db` samples
//! with bound `db`, then `db + 1`; the explorer's execution and time budgets
//! (`--max-executions`, `--time-budget`) end it. A sample costs `db + 1`
//! executions, every one a real execution of the program (a bug in any of
//! them is reported).
//!
//! **The guarantee** (Theorem 2): for a sound explorer, any execution with
//! `db` delays is sampled with probability at least `1 / L^db`, where `L`
//! bounds the length of executions: each of the `db` positions is drawn
//! uniformly from at most `L`. Unlike a random walk, long executions are no
//! less likely than short ones. Tested on a model whose bug needs exactly
//! two delays.
//!
//! **Our execution of it.** Execution `i + 1` of a sample repeats execution
//! `i` up to the new delay position, so it *resumes* there
//! (`Start::Resume`) instead of starting afresh, with the explorer state it
//! had at that step (kept for every step after the last delay). The
//! executions are the same as the paper's; only the repeated prefix is
//! restored or replayed by the explorer instead of being decided again.
//!
//! **Randomness.** Sample `k` of a run draws its positions from ChaCha8
//! stream `k` of the seed, and reseeds the explorer (PRR's insertions) with
//! a seed derived from `(seed, k)`: a sample depends only on the seed and its
//! index.
//!
//! **Splitting** (`check --jobs`, `--partition`). A sample with bound `db`
//! is always `db + 1` executions: where the paper's `l` is 0 (possible only
//! if the program is not deterministic, since a delay is placed on a
//! decision that then still runs), the sample's remaining executions rerun
//! the delays placed so far rather than end it early. So the samples are
//! blocks of known sizes ([`Blocks::Rounds`]) and every execution's global
//! index is known before anything runs: the run splits by execution, whole
//! samples to a worker, and reports exactly what one thread reports. The
//! counters count an execution when it ends (a sample when its last
//! execution does), so a report cut at any execution is that of the
//! executions up to it. The paper leaves `c1` and `c2` as knobs found by trial and error;
//! our defaults are `c1 = 10`, `c2 = 3` (like the paper's iterative random
//! baseline, which samples `3^i` executions in round `i`).

use crate::explorer::blocks::{Blocks, Place};
use crate::explorer::partition::Split;
use crate::program::StepInfo;
use crate::strategies::delaying::explorer::{DelayCursor, DelayingExplorer};
use crate::strategies::delaying::ExplorerKind;
use crate::strategies::descriptor::{Descriptor, Knob, StrategyOptions, Takes};
use crate::strategy::{Context, Outcome, Profile, Standing, Start, Stat, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use wasmrace_trace::{mix64, Decision};

/// Options of [`Ss`]: the shape of `numsamples(db) = c1 · c2^db`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsOptions {
    /// Samples with no delay (`--c1`); at least 1.
    pub c1: u64,
    /// Growth of the number of samples per extra delay (`--c2`); at least 1.
    pub c2: u64,
}

impl Default for SsOptions {
    fn default() -> Self {
        SsOptions::DEFAULT
    }
}

/// `ss` in the [registry](crate::strategies::registry): `--explorer`,
/// `--c1`, `--c2`.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "ss",
    about: "Stratified sampling with a delaying explorer: c1 * c2^d executions with d delays at \
            random places, d = 0, 1, ... (see --explorer, --c1, --c2) (FSE 2015)",
    takes: &[Takes::always(Knob::Explorer), Takes::always(Knob::Samples)],
    always: &[],
    defaults: StrategyOptions {
        explorer: Some(ExplorerKind::RunToCompletion),
        c1: Some(SsOptions::DEFAULT.c1),
        c2: Some(SsOptions::DEFAULT.c2),
        ..StrategyOptions::NONE
    },
    refuses: &[],
    build: |o, seed| {
        let (explorer, opts) = ss_options(o);
        Box::new(Ss::new(explorer.build(seed), seed, opts))
    },
    describe: |o, seed| {
        let (explorer, opts) = ss_options(o);
        format!(
            "ss, explorer {}, {} x {}^delays samples per delay bound, seed {seed}",
            explorer.name(),
            opts.c1,
            opts.c2
        )
    },
    options_json: |o| {
        let (explorer, opts) = ss_options(o);
        let mut json = serde_json::Map::new();
        json.insert("explorer".into(), explorer.name().into());
        json.insert("c1".into(), opts.c1.into());
        json.insert("c2".into(), opts.c2.into());
        json
    },
};

fn ss_options(o: &StrategyOptions) -> (ExplorerKind, SsOptions) {
    let d = SsOptions::DEFAULT;
    let explorer = o.explorer.unwrap_or(ExplorerKind::RunToCompletion);
    let opts = SsOptions {
        c1: o.c1.unwrap_or(d.c1),
        c2: o.c2.unwrap_or(d.c2),
    };
    (explorer, opts)
}

impl SsOptions {
    /// `c1 = 10`, `c2 = 3`.
    pub const DEFAULT: SsOptions = SsOptions { c1: 10, c2: 3 };

    /// `numsamples(db) = c1 · c2^db`, saturating.
    pub fn num_samples(&self, db: u32) -> u64 {
        self.c1
            .max(1)
            .saturating_mul(self.c2.max(1).saturating_pow(db))
    }
}

/// Samples and failing samples for one delay bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleCount {
    /// Samples completed with this bound.
    pub samples: u64,
    /// Those whose final execution (the one with all its delays) failed.
    pub failing: u64,
}

/// Stratified sampling with the delaying explorer `E`; see the module
/// documentation.
#[derive(Clone, Debug)]
pub struct Ss<E> {
    initial: E,
    opts: SsOptions,
    seed: u64,
    rng: ChaCha8Rng,
    /// The current delay bound.
    db: u32,
    /// The current execution's global index and place (its sample, the
    /// sample's first index and its length).
    index: u64,
    place: Place,
    /// The delay bound of the last execution that ended.
    reached: u32,
    /// The explorer as this sample starts it (reseeded `initial`).
    sample_explorer: E,
    /// Delay positions of the current execution (Fig. 7's `path`).
    path: Vec<usize>,
    cursor: Option<DelayCursor<E>>,
    /// Delays applied so far in this execution.
    applied: usize,
    /// Steps since the last delay (or the start).
    in_segment: usize,
    /// Step index where the final segment (after all delays) began.
    segment_start: usize,
    /// The cursor before each decision of the final segment, so the next
    /// execution of the sample can resume at any of them.
    segment_cursors: Vec<DelayCursor<E>>,
    /// The next `decide` continues at a new delay position with the cursor
    /// already set.
    resumed: bool,
    last_event: Option<StepInfo>,
    /// Steps of the first execution of the run (0: the initial state has no
    /// choices, and there is nothing to sample).
    first_len: Option<usize>,
    started: bool,
    exhausted: bool,
    counts: BTreeMap<u32, SampleCount>,
    nondeterministic: u64,
}

impl<E: DelayingExplorer + Clone> Ss<E> {
    /// SS with `explorer` and `opts`; `seed` seeds the sampled delays and
    /// the explorer's random choices.
    pub fn new(explorer: E, seed: u64, opts: SsOptions) -> Self {
        Ss {
            sample_explorer: explorer.clone(),
            initial: explorer,
            opts,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            db: 0,
            index: 0,
            place: Blocks::Single.locate(0),
            reached: 0,
            path: Vec::new(),
            cursor: None,
            applied: 0,
            in_segment: 0,
            segment_start: 0,
            segment_cursors: Vec::new(),
            resumed: false,
            last_event: None,
            first_len: None,
            started: false,
            exhausted: false,
            counts: BTreeMap::new(),
            nondeterministic: 0,
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> SsOptions {
        self.opts
    }

    /// The explorer as the run started it.
    pub fn explorer(&self) -> &E {
        &self.initial
    }

    /// The delay bound of the samples being taken now.
    pub fn delay_bound(&self) -> u32 {
        self.db
    }

    /// Completed samples and failing ones, per delay bound.
    pub fn counts(&self) -> &BTreeMap<u32, SampleCount> {
        &self.counts
    }

    /// Samples completed with delay bound `db`.
    pub fn count(&self, db: u32) -> SampleCount {
        self.counts.get(&db).copied().unwrap_or_default()
    }

    /// Executions abandoned because the explorer named a decision that was
    /// not enabled where an earlier execution had reached the same point:
    /// the program is not deterministic.
    pub fn nondeterministic(&self) -> u64 {
        self.nondeterministic
    }

    /// How the samples group the executions: `c1 · c2^db` samples of
    /// `db + 1` executions for `db = 0, 1, ...`.
    fn layout(&self) -> Blocks {
        Blocks::Rounds {
            c1: self.opts.c1,
            c2: self.opts.c2,
        }
    }

    /// Starts sample `k` (of the run, all bounds counted): an empty path, a
    /// freshly seeded explorer and position stream.
    fn new_sample(&mut self, k: u64) {
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(k);
        self.sample_explorer = self.initial.clone();
        self.sample_explorer
            .reseed(mix64(self.seed ^ mix64(k.wrapping_add(1))));
        self.path.clear();
    }
}

impl<E: DelayingExplorer + Clone> Strategy for Ss<E> {
    fn name(&self) -> &str {
        "ss"
    }

    fn begin(&mut self, index: u64) -> Option<Start> {
        if self.exhausted {
            return None;
        }
        if self.first_len == Some(0) {
            // Fig. 7: `if |choices(s0)| = 0 return`.
            self.exhausted = true;
            return None;
        }
        self.resumed = false;
        let place = self.layout().locate(index);
        let goes_on = self.started && index == self.index + 1 && place.offset(index) > 0;
        (self.started, self.index, self.place) = (true, index, place);
        if !goes_on {
            self.db = place.round;
            self.new_sample(place.block);
            return Some(Start::Fresh);
        }
        // `l`: steps after the last delay, if the execution got past them
        // all (it does, unless the program is not deterministic).
        let l = if self.applied == self.path.len() {
            self.in_segment.min(self.segment_cursors.len())
        } else {
            0
        };
        if l == 0 {
            // No place for another delay: the sample keeps its size (see
            // the module documentation) by rerunning the delays it has.
            return Some(Start::Fresh);
        }
        let p = self.rng.random_range(0..l);
        self.path.push(p);
        self.cursor = Some(self.segment_cursors[p].clone());
        self.applied = self.path.len() - 1;
        self.in_segment = p;
        self.resumed = true;
        Some(Start::Resume {
            prefix_len: self.segment_start + p,
        })
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let threads = ctx.threads;
        if self.resumed {
            self.resumed = false;
        } else if ctx.step == 0 || self.cursor.is_none() {
            self.cursor = Some(DelayCursor::new(self.sample_explorer.clone(), threads));
            self.applied = 0;
            self.in_segment = 0;
            self.segment_start = 0;
            self.segment_cursors.clear();
        } else if let (Some(c), Some(e)) = (self.cursor.as_mut(), self.last_event.as_ref()) {
            c.after_step(e, threads);
        }
        let cursor = self.cursor.as_mut()?;
        // The delays due at this step (several when positions are 0).
        while self.applied < self.path.len() && self.in_segment == self.path[self.applied] {
            cursor.delay(threads);
            self.applied += 1;
            self.in_segment = 0;
            self.segment_start = ctx.step;
            self.segment_cursors.clear();
        }
        if self.applied == self.path.len() {
            self.segment_cursors.truncate(self.in_segment);
            self.segment_cursors.push(cursor.clone());
        }
        let d = cursor.next(threads);
        let valid = ctx
            .thread(d.tid)
            .is_some_and(|t| t.pending.enabled && d.alt < t.pending.alts);
        if !valid {
            self.nondeterministic += 1;
            return None;
        }
        self.in_segment += 1;
        Some(d)
    }

    fn observe(&mut self, step: &StepInfo) {
        self.last_event = Some(step.clone());
    }

    fn end(&mut self, outcome: &Outcome) {
        if self.first_len.is_none() {
            self.first_len = Some(self.in_segment);
        }
        if matches!(outcome, Outcome::Abandoned) {
            return;
        }
        self.reached = self.db;
        if self.place.is_last(self.index) {
            let c = self.counts.entry(self.db).or_default();
            c.samples += 1;
            c.failing += u64::from(matches!(outcome, Outcome::Failed(_)));
        }
    }

    /// By execution, whole samples to a share (see the module
    /// documentation).
    fn profile(&self) -> Profile {
        Profile {
            split: Split::ByExecution,
            blocks: self.layout(),
            ..Profile::default()
        }
    }

    /// The seed, exhaustion (past the last delay bound) and the counters.
    fn standing(&self) -> Standing<'_> {
        let samples: u64 = self.counts.values().map(|c| c.samples).sum();
        Standing {
            seed: self.seed,
            exhausted: self.exhausted,
            stats: vec![
                Stat::new("samples", samples),
                Stat::peak("delay bound reached", u64::from(self.reached)),
            ],
            ..Standing::default()
        }
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

    fn cfg(n: u64) -> Config {
        Config {
            max_executions: n,
            stop_on_first_bug: false,
            snapshot_every_cost: Some(0),
            ..Config::default()
        }
    }

    #[test]
    fn numsamples_is_c1_times_c2_to_the_bound() {
        let o = SsOptions { c1: 5, c2: 3 };
        assert_eq!(
            (0..4).map(|d| o.num_samples(d)).collect::<Vec<_>>(),
            vec![5, 15, 45, 135]
        );
        assert_eq!(
            SsOptions {
                c1: 2,
                c2: u64::MAX
            }
            .num_samples(9),
            u64::MAX
        );
    }

    #[test]
    fn samples_take_bound_plus_one_executions_and_resume_at_the_delay() {
        let opts = SsOptions { c1: 2, c2: 2 };
        // Bound 0: 2 samples of 1 execution; bound 1: 4 samples of 2.
        let mut rec = Recording::new(Ss::new(RoundRobin::new(), 1, opts));
        let report = rec.run(&mut Explorer::new(two_writers(), cfg(10))).unwrap();
        assert_eq!(report.executions, 10);
        let starts: Vec<Start> = rec.executions().iter().map(|r| r.start).collect();
        assert_eq!(&starts[..3], &[Start::Fresh, Start::Fresh, Start::Fresh]);
        for pair in starts[2..].chunks(2) {
            assert_eq!(pair[0], Start::Fresh);
            assert!(matches!(pair[1], Start::Resume { .. }), "{starts:?}");
        }
        let ss = rec.inner();
        assert_eq!(
            ss.count(0),
            SampleCount {
                samples: 2,
                failing: 0
            }
        );
        // The explorer asks for an 11th execution before it notices the
        // budget is spent, which completes the fourth sample.
        assert_eq!(ss.count(1).samples, 4);
        assert_eq!(ss.delay_bound(), 2);
        // With no delay, RR runs main, then each writer to completion.
        let first = &rec.executions()[0].decisions;
        let seq: Vec<u64> = first.iter().map(|d| d.tid.0).collect();
        let main = seq[0];
        assert!(seq[..3].iter().all(|t| *t == main), "{seq:?}");
        assert_eq!(
            seq.len(),
            3 + 3 + 3,
            "2 spawns and exit, 2 writes and exit twice"
        );
        // A sample's second execution repeats the first up to the delay,
        // then differs.
        let recs = rec.executions();
        let (a, b) = (&recs[2].decisions, &recs[3].decisions);
        let Start::Resume { prefix_len } = recs[3].start else {
            unreachable!()
        };
        assert_eq!(a[..prefix_len], b[..prefix_len]);
        assert_ne!(a, b);
    }

    #[test]
    fn the_same_seed_samples_the_same_executions() {
        let run = |seed| {
            let mut rec = Recording::new(Ss::new(RoundRobin::new(), seed, SsOptions::default()));
            rec.run(&mut Explorer::new(two_writers(), cfg(200)))
                .unwrap();
            rec.executions()
                .iter()
                .map(|r| r.decisions.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }

    #[test]
    fn a_program_without_choices_is_one_execution() {
        // Main fails before its first operation: the initial state is final.
        let mut b = ModelBuilder::new();
        b.main(|t| {
            t.fail("at once");
        });
        let mut ss = Ss::new(RoundRobin::new(), 0, SsOptions::default());
        let report = Explorer::new(b.build().unwrap(), cfg(100))
            .run(&mut ss)
            .unwrap();
        assert_eq!(report.executions, 1);
        assert!(report.exhausted);
        assert_eq!(report.bugs.len(), 1);
    }
}
