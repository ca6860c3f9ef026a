//! PCT, probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi &
//! Nagarakatte, "A randomized scheduler with probabilistic guarantees of
//! finding bugs", ASPLOS 2010, Algorithm 1).
//!
//! Every thread gets a distinct initial priority `>= d` when it is created,
//! uniformly at random (a new thread is inserted at a uniformly random rank
//! among the threads seen so far, which makes the final order a uniform
//! permutation whatever the number of threads). The scheduler always runs the
//! enabled thread with the highest priority. Before the run, `d - 1` *change
//! points* `k_1, ..., k_{d-1}` are drawn independently and uniformly among
//! the first `k` steps; when step `k_i` is about to be taken, the thread that
//! would run gets priority `i`, lower than every initial priority, and the
//! highest-priority enabled thread is picked again. As in the paper the
//! labels are independent of the time order: the lowered threads can end up
//! in any relative order.
//!
//! **Guarantee.** For a program with at most `n` threads and at most `k`
//! steps, a bug of depth `d` (it shows whenever `d` particular ordering
//! constraints hold) is found by one execution with probability at least
//! `1 / (n * k^(d-1))` (the paper's Theorem 1): the right thread must get the
//! highest initial priority (`1/n`) and each change point must land on its
//! step (`1/k` each). The `pct_meets_its_bound_on_a_depth_two_bug` test
//! checks this empirically.
//!
//! **Run length.** The paper needs `k`, the length of an execution, up
//! front. We estimate it: the first execution uses
//! [`Pct::INITIAL_LENGTH_GUESS`] (or the value given to
//! [`Pct::with_length_estimate`]); during the first
//! [`Pct::CALIBRATION`] executions, once an execution has ended, `k` is the
//! longest execution seen so far, so change points fall inside real runs;
//! from then on `k` stays the longest of those executions. The bound holds
//! for executions whose `k` is at least the real length: an execution
//! longer than every calibration run gets no change point past step `k`.
//!
//! **Why the estimate stops adapting.** Then execution `i` past the
//! calibration depends on the seed, `i` and the calibration runs alone, not
//! on the executions just before it, and a calibration execution on its
//! index alone, so the run splits by execution with the calibration as a
//! prologue ([`Blocks::Prologue`]): every thread (`check --jobs`) or
//! partition (`--partition`) runs the calibration itself, each of its
//! executions counted by the one that owns its index, and the rest is dealt
//! out by index; the report is what one run reports. An estimate that kept
//! adapting tied every execution to all the ones before it.
//!
//! **Seeding.** Execution `i` draws from ChaCha8 stream `i` of the seed (as
//! [`RandomWalk`](crate::strategies::RandomWalk) does), so it depends only on the seed,
//! `i` and the length estimate `k` it started with; with a fixed estimate
//! (`with_length_estimate(k, false)`, or past the calibration) only on
//! `(seed, i)` and `k`. Values of
//! `choose` (threads with several alternatives) are drawn uniformly from the
//! same stream: PCT orders threads, it says nothing about data choices.

use crate::explorer::{Blocks, Split};
use crate::strategies::descriptor::{Descriptor, Knob, StrategyOptions, Takes};
use crate::strategy::{Context, Outcome, Profile, Standing, Start, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use wasmrace_trace::{Decision, Tid};

/// `pct` in the [registry](crate::strategies::registry): `--depth`.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "pct",
    about: "Probabilistic concurrency testing with --depth change points (ASPLOS 2010)",
    takes: &[Takes::always(Knob::Depth)],
    always: &[],
    defaults: StrategyOptions {
        depth: Some(Pct::DEFAULT_DEPTH),
        ..StrategyOptions::NONE
    },
    refuses: &[],
    build: |o, seed| Box::new(Pct::new(seed, depth(o))),
    describe: |o, seed| format!("pct, depth {}, seed {seed}", depth(o)),
    // The depth is not recorded in schedule files (it never was).
    options_json: |_| serde_json::Map::new(),
};

fn depth(o: &StrategyOptions) -> u32 {
    o.depth.unwrap_or(Pct::DEFAULT_DEPTH)
}

/// PCT with bug depth `d`; see the module documentation.
#[derive(Clone, Debug)]
pub struct Pct {
    seed: u64,
    depth: u32,
    rng: ChaCha8Rng,
    /// Length estimate used until an execution has ended.
    initial_length: usize,
    /// Learn the estimate from the first [`Pct::CALIBRATION`] executions
    /// (the default).
    adaptive: bool,
    /// Executions the adaptive estimate learns from ([`Pct::CALIBRATION`]).
    calibration: u64,
    /// Longest execution seen so far, once one has ended.
    longest: Option<usize>,
    /// Steps taken in the current execution.
    steps: usize,
    /// Threads seen this execution, highest initial priority first.
    ranks: Vec<Tid>,
    /// Threads lowered at a change point, with their new priority `i`.
    lowered: BTreeMap<Tid, u32>,
    /// `change_points[i - 1]` is the step index `k_i`.
    change_points: Vec<usize>,
}

impl Pct {
    /// Default bug depth (`d = 3`, two change points), the paper's usual
    /// choice for its benchmarks.
    pub const DEFAULT_DEPTH: u32 = 3;
    /// Run length `k` assumed before any execution has ended.
    pub const INITIAL_LENGTH_GUESS: usize = 100;
    /// Executions over which an adaptive estimate learns `k`; after them
    /// it stays the longest of them.
    pub const CALIBRATION: u64 = 100;

    /// PCT for bugs of depth `depth` (`d >= 1`; `d = 1` never changes
    /// priorities), with an adaptive run-length estimate.
    pub fn new(seed: u64, depth: u32) -> Self {
        Pct {
            seed,
            depth: depth.max(1),
            rng: ChaCha8Rng::seed_from_u64(seed),
            initial_length: Self::INITIAL_LENGTH_GUESS,
            adaptive: true,
            calibration: Self::CALIBRATION,
            longest: None,
            steps: 0,
            ranks: Vec::new(),
            lowered: BTreeMap::new(),
            change_points: Vec::new(),
        }
    }

    /// Starts from run length `k` instead of the default guess; with
    /// `adaptive == false`, keeps `k` for every execution.
    pub fn with_length_estimate(mut self, k: usize, adaptive: bool) -> Self {
        self.initial_length = k.max(1);
        self.adaptive = adaptive;
        self
    }

    /// Learns the estimate from the first `executions` executions instead
    /// of [`Pct::CALIBRATION`] (at least 1).
    pub fn with_calibration(mut self, executions: u64) -> Self {
        self.calibration = executions.max(1);
        self
    }

    /// The bug depth `d` it targets (`d - 1` change points per execution).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The run length `k` the next execution will draw change points from.
    pub fn length_estimate(&self) -> usize {
        match self.longest {
            Some(k) if self.adaptive => k.max(1),
            _ => self.initial_length,
        }
    }

    /// The longest execution seen so far, in steps (0 before any ended).
    pub fn longest_run(&self) -> usize {
        self.longest.unwrap_or(0)
    }

    /// The change points `k_1..k_{d-1}` of the current execution.
    pub fn change_points(&self) -> &[usize] {
        &self.change_points
    }

    /// Ends the calibration: `k` stays `longest` (at least 1) from now on.
    fn calibrated(&mut self, longest: usize) {
        self.initial_length = longest.max(1);
        self.adaptive = false;
    }

    /// Priority order key: lowered threads (priority `i < d`) below every
    /// other, and among the others the rank drawn at creation.
    fn priority(&self, tid: Tid) -> u64 {
        if let Some(&i) = self.lowered.get(&tid) {
            return u64::from(i);
        }
        let pos = self.ranks.iter().position(|&t| t == tid).unwrap_or(0);
        u64::from(self.depth) + (self.ranks.len() - 1 - pos) as u64
    }

    fn highest_enabled(&self, ctx: &Context<'_>) -> Option<Tid> {
        ctx.threads
            .iter()
            .filter(|t| t.pending.enabled)
            .map(|t| t.tid)
            .max_by_key(|&t| self.priority(t))
    }
}

impl Default for Pct {
    fn default() -> Self {
        Pct::new(0, Self::DEFAULT_DEPTH)
    }
}

impl Strategy for Pct {
    fn name(&self) -> &str {
        "pct"
    }

    fn begin(&mut self, executions: u64) -> Option<Start> {
        if self.adaptive && executions >= self.calibration {
            self.calibrated(self.longest.unwrap_or(self.initial_length));
        }
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(executions);
        self.steps = 0;
        self.ranks.clear();
        self.lowered.clear();
        let k = self.length_estimate();
        self.change_points = (1..self.depth)
            .map(|_| self.rng.random_range(0..k))
            .collect();
        Some(Start::Fresh)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        // New threads get a uniformly random rank among those seen so far:
        // inserting each at a uniform position builds a uniform permutation.
        for t in ctx.threads {
            if !self.ranks.contains(&t.tid) {
                let at = self.rng.random_range(0..=self.ranks.len());
                self.ranks.insert(at, t.tid);
            }
        }
        // Change points due now lower the thread that would run, in label
        // order; two points on the same step lower two threads.
        for i in 1..self.depth {
            if self.change_points[i as usize - 1] == ctx.step {
                if let Some(t) = self.highest_enabled(ctx) {
                    self.lowered.insert(t, i);
                }
            }
        }
        let tid = self.highest_enabled(ctx)?;
        let alts = ctx.thread(tid)?.pending.alts;
        let alt = if alts > 1 {
            self.rng.random_range(0..alts)
        } else {
            0
        };
        self.steps = ctx.step + 1;
        Some(Decision::new(tid, alt))
    }

    fn end(&mut self, _outcome: &Outcome) {
        self.longest = Some(self.longest.unwrap_or(0).max(self.steps));
    }

    /// By execution, after the calibration as a prologue when the estimate
    /// adapts.
    fn profile(&self) -> Profile {
        Profile {
            split: Split::ByExecution,
            blocks: match self.adaptive {
                true => Blocks::Prologue(self.calibration),
                false => Blocks::Single,
            },
            ..Profile::default()
        }
    }

    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: self.seed,
            ..Standing::default()
        }
    }

    /// The fixed length a portfolio sets.
    fn set_length_estimate(&mut self, steps: usize) {
        self.calibrated(steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::{Config, Explorer};
    use crate::model::{reg, Model, ModelBuilder};
    use crate::strategies::{Recording, Replay};
    use wasmrace_trace::FailureKind;

    /// The classic depth-2 ordering bug: main writes `x = 1` then `x = 0`;
    /// a worker fails if it reads `x` in between. PCT must give main the
    /// higher initial priority (1/2) and put its one change point on the
    /// step of `x = 0` (1/k), so it finds the bug with probability exactly
    /// `1 / (2k)`, the bound `1/(n k^(d-1))` with `n = 2`, `d = 2`.
    fn window_bug() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let w = b.thread("worker", |t| {
            t.read(x, 0).when(reg(0).equals(1), |t| {
                t.fail("read x in the window");
            });
        });
        b.main(|t| {
            t.spawn(w, 0).write(x, 1).write(x, 0);
        });
        b.build().unwrap()
    }

    fn sample(model: Model, strategy: &mut dyn Strategy, n: u64) -> crate::Report {
        let cfg = Config {
            max_executions: n,
            stop_on_first_bug: false,
            ..Config::default()
        };
        Explorer::new(model, cfg).run(strategy).unwrap()
    }

    #[test]
    fn pct_meets_its_bound_on_a_depth_two_bug() {
        // Every bug-free run takes 6 steps (spawn, two writes, two exits,
        // one read), so after the first execution k = 6: bound 1/12.
        let n = 6000;
        let mut pct = Pct::new(7, 2);
        let report = sample(window_bug(), &mut pct, n);
        assert_eq!(pct.length_estimate(), 6);
        let p = 1.0 / (2.0 * 6.0);
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        let hits = report.failing_executions as f64;
        eprintln!(
            "pct d=2 window bug: {hits}/{n} = {:.4} (bound {p:.4})",
            hits / n as f64
        );
        // The bound is exact here, so the rate is also not far above it.
        assert!(
            (hits - n as f64 * p).abs() <= 4.0 * sigma,
            "hits {hits}, expected {} +- {}",
            n as f64 * p,
            4.0 * sigma
        );
    }

    #[test]
    fn depth_one_never_preempts_and_depth_three_reaches_deeper() {
        // d = 1: no change points, so the higher-ranked thread runs to its
        // end: main first (bug needs a preemption) never fails.
        let mut pct = Pct::new(1, 1);
        let r = sample(window_bug(), &mut pct, 300);
        assert_eq!(r.failing_executions, 0);
        assert!(pct.change_points().is_empty());
        // d = 3 still finds it (either change point may do).
        let mut pct = Pct::new(1, 3);
        let r = sample(window_bug(), &mut pct, 300);
        assert!(r.failing_executions > 0);
        assert_eq!(pct.change_points().len(), 2);
    }

    #[test]
    fn the_estimate_starts_from_the_guess_and_then_follows_the_runs() {
        let mut pct = Pct::new(3, 2);
        assert_eq!(pct.length_estimate(), Pct::INITIAL_LENGTH_GUESS);
        pct.begin(0);
        assert!(pct.change_points()[0] < Pct::INITIAL_LENGTH_GUESS);
        sample(window_bug(), &mut pct, 1);
        assert!(pct.length_estimate() <= 6);
        let mut fixed = Pct::new(3, 2).with_length_estimate(40, false);
        sample(window_bug(), &mut fixed, 20);
        assert_eq!(fixed.length_estimate(), 40);
        // A fixed estimate has no calibration to share: plain indices.
        assert_eq!(fixed.profile().split, Split::ByExecution);
        assert_eq!(fixed.profile().blocks, Blocks::Single);
    }

    /// A window bug whose executions vary in length: the worker polls a
    /// flag main raises last, and each poll that finds it down is a step
    /// more. Depth 2 with three workers makes the bug rare enough to lie
    /// past a short calibration.
    fn uneven_window_bug() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let done = b.var("done", 0);
        let w = b.thread("worker", |t| {
            t.read(done, 1).when(reg(1).equals(0), |t| {
                t.read(done, 1).read(done, 1);
            });
            t.read(x, 0).when(reg(0).equals(1), |t| {
                t.fail("read x in the window");
            });
        });
        b.main(|t| {
            t.spawn(w, 0)
                .spawn(w, 0)
                .write(x, 1)
                .write(x, 0)
                .write(done, 1);
        });
        b.build().unwrap()
    }

    /// Split into 1, 2, 3 or 7 partitions, each running the calibration
    /// as a prologue (counted once) and its share of the rest, the run
    /// adds up to the whole run: the same bug, at the same execution, with
    /// the same schedule, the calibration counted once; and the whole
    /// run's estimate stops following the runs after the calibration.
    #[test]
    fn the_calibration_is_a_prologue_every_partition_runs() {
        let calibration = 2;
        let build = |seed| Pct::new(seed, 2).with_calibration(calibration);
        let run = |p: &mut Pct, config: Config| {
            Explorer::new(uneven_window_bug(), config).run(p).unwrap()
        };
        // The longest of a run's first `executions` executions.
        let longest_of = |seed, executions| {
            let mut p = build(seed);
            let config = Config {
                max_executions: executions,
                ..Config::default()
            };
            run(&mut p, config);
            p.longest_run()
        };
        // A seed whose first bug comes after the calibration and after an
        // execution longer than the calibration's: an estimate that kept
        // adapting would draw that bug's change points from a larger `k`.
        let (seed, whole) = (0..500)
            .map(|seed| (seed, run(&mut build(seed), Config::default())))
            .find(|(seed, r)| {
                r.first_bug().is_some_and(|b| {
                    b.execution > calibration
                        && longest_of(*seed, b.execution - 1) > longest_of(*seed, calibration)
                })
            })
            .expect("a seed finds the bug after a run longer than the calibration's");
        let bug = whole.first_bug().unwrap();
        assert_eq!(build(seed).profile().blocks, Blocks::Prologue(calibration));
        for n in [1, 2, 3, 7] {
            let parts: Vec<crate::Report> = (0..n)
                .map(|k| {
                    let config = Config {
                        partition: crate::Partition::new(k, n),
                        ..Config::default()
                    };
                    run(&mut build(seed), config)
                })
                .collect();
            let skipped: u64 = parts.iter().map(|r| r.partition_skipped).sum();
            assert_eq!(skipped, calibration * u64::from(n - 1), "{n} partitions");
            let lowest =
                crate::explorer::partition::first_of(parts.iter().filter_map(|r| r.first_bug()))
                    .expect("a partition finds the bug");
            assert_eq!(lowest.execution, bug.execution, "{n} partitions");
            assert_eq!(lowest.schedule, bug.schedule);
        }
        // The whole run kept the calibration's longest, not the longer
        // runs seen after it.
        let longest = longest_of(seed, calibration);
        let mut pct = build(seed);
        sample(uneven_window_bug(), &mut pct, 300);
        assert!(pct.longest_run() > longest);
        assert_eq!(pct.length_estimate(), longest);
    }

    #[test]
    fn a_found_bug_replays() {
        let mut pct = Pct::new(11, 2);
        let cfg = Config {
            max_executions: 2000,
            ..Config::default()
        };
        let report = Explorer::new(window_bug(), cfg.clone())
            .run(&mut pct)
            .unwrap();
        let bug = report.first_bug().expect("PCT finds the window bug");
        assert_eq!(bug.failure.kind, FailureKind::Panic);
        let mut replay = Replay::new(bug.schedule.clone());
        let again = Explorer::new(window_bug(), cfg).run(&mut replay).unwrap();
        assert!(replay.reproduced());
        assert_eq!(again.first_bug().unwrap().failure, bug.failure);
    }

    #[test]
    fn the_same_seed_gives_the_same_schedules() {
        let run = |seed| {
            let mut rec = Recording::new(Pct::new(seed, 3));
            crate::strategies::pos::testing::sample_rec(window_bug(), &mut rec, 200);
            rec.executions()
                .iter()
                .map(|e| e.decisions.clone())
                .collect::<Vec<_>>()
        };
        let a = run(5);
        assert_eq!(a, run(5));
        assert_ne!(a, run(6));
        // Not every execution is the same schedule.
        assert!(a.iter().any(|s| *s != a[0]));
    }

    #[test]
    fn choose_values_are_drawn_uniformly() {
        let mut b = ModelBuilder::new();
        b.main(|t| {
            t.choose(4, 0).when(reg(0).equals(3), |t| {
                t.fail("three");
            });
        });
        let mut pct = Pct::new(2, 3);
        let r = sample(b.build().unwrap(), &mut pct, 4000);
        // p = 1/4: mean 1000, sigma ~27.
        assert!((890..1110).contains(&r.failing_executions), "{r:?}");
    }
}
