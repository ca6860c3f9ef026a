//! Bisection of a failing schedule: for each step `k`, the probability
//! P(k) that a completion from the state after `k` steps, drawn by a
//! sampling strategy, fails with the same failure (kind and location);
//! the sealing point, the first step after which every completion fails
//! (proved by enumerating every completion from the snapshot, or
//! estimated); and the decisive steps, where P jumps most, with what the
//! other enabled decisions there would have given.
//!
//! The schedule is replayed once, snapshotting the state before each step;
//! every sample restores a snapshot instead of replaying the prefix (the
//! `bisect_speed` example measures the difference: docs/performance.md).
//! Sampling is adaptive: a step stops after half its samples (at least 30)
//! when they all agree (P clearly 0 or 1). Where the space
//! left is small (at most [`AUTO_EXACT`] completions) P is computed
//! exactly instead: for the random walk, the exact probability that a
//! uniform walk fails (each thread, then each alternative, equally likely);
//! for other strategies only P = 0 and P = 1 are exact. Long schedules are
//! estimated on a grid of [`GRID`] steps, refined by bisection where P
//! jumps.
//!
//! Sealing is monotone along the schedule (the completions after step
//! `k + 1` are some of those after step `k`), so `exact` finds the first
//! sealed step by binary search, each probe an enumeration within
//! [`BisectOptions::exact_budget`] completions.

use super::{ended_in, program_for, recorded_failure, running, same_failure};
use crate::check::{trace_schedule, StrategyChoice};
use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use crate::snapshot::Snapshot;
use wasmrace_explore::{Config, Context, Outcome, Program, Strategy};
use wasmrace_trace::{Decision, Failure, Schedule, TraceEvent};

/// Completions enumerated, at most, to compute a step's P exactly without
/// being asked to.
pub const AUTO_EXACT: u64 = 64;
/// Steps estimated at most before refinement, on long schedules.
pub const GRID: usize = 256;
/// Samples after which a step stops when they all agree, at least (half
/// the samples asked for, so that a P of 0.97 rarely passes for 1).
const AGREE: u32 = 30;
/// Decisive steps reported.
const DECISIVE: usize = 3;
/// Alternatives estimated per decisive step.
const ALTERNATIVES: usize = 8;
/// The strategies a completion can be drawn by: those that sample.
pub const SAMPLING_STRATEGIES: &[&str] = &["random", "pct", "basic-pos", "pos", "pos-star"];

/// How [`bisect`] estimates.
#[derive(Clone, Debug)]
pub struct BisectOptions {
    /// The strategy completions are drawn by (one of
    /// [`SAMPLING_STRATEGIES`]). Default: the random walk.
    pub strategy: StrategyChoice,
    /// Samples per step at most. Default 200.
    pub samples: u32,
    /// Seeds the samples; each step's depend on the seed and the step only.
    pub seed: u64,
    /// Prove the sealing point by enumerating every completion.
    pub exact: bool,
    /// Completions one proof may enumerate. Default 100,000.
    pub exact_budget: u64,
    /// Steps an execution may take; `None`: the schedule's.
    pub max_steps: Option<u64>,
    /// Start each sample by restoring a snapshot (the default); `false`
    /// replays the prefix from the start instead, which exists to measure
    /// what snapshots save (the `bisect_speed` example).
    pub from_snapshots: bool,
}

impl Default for BisectOptions {
    fn default() -> Self {
        BisectOptions {
            strategy: StrategyChoice::named("random"),
            samples: 200,
            seed: 0,
            exact: false,
            exact_budget: 100_000,
            max_steps: None,
            from_snapshots: true,
        }
    }
}

/// P after one step of the schedule.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepEstimate {
    /// Steps of the schedule taken (0: the start).
    pub step: usize,
    /// The thread that ran step `step` (`None` for the start).
    pub thread: Option<String>,
    /// P(step): completions that fail the same way, over all.
    pub probability: f64,
    /// Samples drawn (completions enumerated when exact).
    pub samples: u64,
    /// P is exact, not sampled.
    pub exact: bool,
    /// Completions that failed otherwise (another kind or place).
    pub other_failures: u64,
}

/// What another decision at a decisive step would have given.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Alternative {
    /// The thread that would have run.
    pub thread: String,
    /// Its alternative (a `choose` value, a waiter to notify).
    pub alt: u32,
    /// P after that decision instead.
    pub probability: f64,
    /// Whether that P is exact.
    pub exact: bool,
}

/// A step where P jumps.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Decisive {
    /// The step (1-based, as in traces).
    pub step: usize,
    /// The thread that ran it.
    pub thread: String,
    /// P before it.
    pub probability_before: f64,
    /// P after it.
    pub probability_after: f64,
    /// The other enabled decisions there.
    pub alternatives: Vec<Alternative>,
}

/// Where the failure became certain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sealing {
    /// Proved: every one of `completions` completions after `step` fails.
    Proved {
        /// The first sealed step.
        step: usize,
        /// Completions enumerated there.
        completions: u64,
    },
    /// Every sample failed from `step` on; not proved.
    Estimated {
        /// The first step from which every estimate is 1.
        step: usize,
    },
}

impl Sealing {
    /// The sealing step.
    pub fn step(self) -> usize {
        match self {
            Sealing::Proved { step, .. } | Sealing::Estimated { step } => step,
        }
    }
}

/// What [`bisect`] found.
#[derive(Clone, Debug)]
pub struct Bisection {
    /// The failure explained.
    pub failure: Failure,
    /// P at the steps estimated, in order (every step of a schedule up to
    /// [`GRID`] steps).
    pub steps: Vec<StepEstimate>,
    /// The sealing point.
    pub sealed: Sealing,
    /// The steps where P jumps most, largest first.
    pub decisive: Vec<Decisive>,
    /// The schedule's interleaving.
    pub trace: Vec<TraceEvent>,
}

/// Bisects `schedule`, which must reproduce the failure it records.
///
/// ```no_run
/// use wasmrace_host::{bisect, BisectOptions, Guest, HostConfig, Schedule};
/// let schedule = Schedule::read("bug.schedule.json".as_ref())?;
/// let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
/// let b = bisect(&guest, &schedule, &BisectOptions::default())?;
/// for s in &b.steps {
///     println!("after step {}: P = {:.2}", s.step, s.probability);
/// }
/// println!("sealed at step {}", b.sealed.step());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`HostError::NotReproduced`] when the schedule does not lead to its
/// failure; [`HostError::Runtime`] for a strategy that does not sample.
pub fn bisect(
    guest: &Guest,
    schedule: &Schedule,
    opts: &BisectOptions,
) -> Result<Bisection, HostError> {
    if !SAMPLING_STRATEGIES.contains(&opts.strategy.name()) {
        return Err(HostError::Runtime {
            message: format!(
                "bisect draws completions by a sampling strategy (`{}`), not `{}`",
                SAMPLING_STRATEGIES.join("`, `"),
                opts.strategy.name()
            ),
        });
    }
    let target = recorded_failure(schedule)?;
    let max_steps = opts
        .max_steps
        .or(schedule.settings.max_steps)
        .unwrap_or(Config::default().max_steps);
    let decisions = schedule.decisions();
    let mut b = Bisector {
        program: program_for(guest, schedule)?,
        target,
        max_steps,
        opts: opts.clone(),
        snaps: Vec::new(),
        decisions,
        forced: Vec::new(),
    };
    b.walk()?;
    let trace = trace_schedule(&mut guest.program(&schedule.test)?, &b.decisions)?.0;
    let steps = b.estimates(&trace)?;
    let sealed = b.sealing(&steps)?;
    let decisive = b.decisive(&steps)?;
    Ok(Bisection {
        failure: b.target,
        steps,
        sealed,
        decisive,
        trace,
    })
}

/// What enumerating every completion from a state found.
#[derive(Clone, Copy, Debug, Default)]
struct Enumeration {
    completions: u64,
    failing: u64,
    other: u64,
    /// The probability a uniform random walk fails the same way.
    walk: f64,
}

struct Bisector {
    program: WasmProgram,
    target: Failure,
    max_steps: u64,
    opts: BisectOptions,
    /// The state before step `k`, at every `k` from 0 to the end, taken
    /// every `stride` steps on long schedules.
    snaps: Vec<(usize, Snapshot)>,
    decisions: Vec<Decision>,
    /// `[k]`: whether the state after `k` steps offers one decision only
    /// (one enabled thread with one alternative), so that step `k + 1`
    /// could not have gone otherwise.
    forced: Vec<bool>,
}

impl Bisector {
    /// Replays the schedule once, snapshotting along it; refuses one that
    /// does not lead to the failure.
    fn walk(&mut self) -> Result<(), HostError> {
        self.program.reset()?;
        let stride = self.decisions.len().div_ceil(4 * GRID).max(1);
        for k in 0..=self.decisions.len() {
            if k % stride == 0 || k == self.decisions.len() {
                let Some(s) = self.program.snapshot()? else {
                    return Err(HostError::Runtime {
                        message: "bisect needs snapshots, and this guest changes its wasm tables or keeps references in mutable globals, which snapshots do not hold".into(),
                    });
                };
                self.snaps.push((k, s));
            }
            if k == self.decisions.len() || !running(&self.program, self.max_steps) {
                break;
            }
            let d = self.decisions[k];
            let threads = self.program.threads();
            let ok = threads
                .iter()
                .any(|t| t.tid == d.tid && t.pending.enabled && d.alt < t.pending.alts);
            let options: u32 = threads
                .iter()
                .filter(|t| t.pending.enabled)
                .map(|t| t.pending.alts)
                .sum();
            self.forced.push(options == 1);
            if !ok {
                return Err(self.not_reproduced(format!("step {} is not enabled", k + 1)));
            }
            self.program.step(d)?;
        }
        match ended_in(&self.program, self.max_steps) {
            Some(f) if same_failure(&self.target, &f) => {
                self.decisions.truncate(self.program.steps() as usize);
                Ok(())
            }
            Some(f) => Err(self.not_reproduced(format!("it fails with {f}"))),
            None => Err(self.not_reproduced("it leads to no failure".into())),
        }
    }

    fn not_reproduced(&self, why: String) -> HostError {
        HostError::NotReproduced {
            failure: self.target.to_string(),
            why,
        }
    }

    /// Puts the program in the state after `k` steps of the schedule.
    fn goto(&mut self, k: usize) -> Result<(), HostError> {
        let i = self.snaps.partition_point(|(j, _)| *j <= k);
        let from = match i.checked_sub(1) {
            Some(i) => {
                self.program.restore(&self.snaps[i].1)?;
                self.snaps[i].0
            }
            None => {
                self.program.reset()?;
                0
            }
        };
        for j in from..k {
            self.program.step(self.decisions[j])?;
        }
        Ok(())
    }

    /// P at every step, or on a grid refined where it jumps.
    fn estimates(&mut self, trace: &[TraceEvent]) -> Result<Vec<StepEstimate>, HostError> {
        let n = self.decisions.len();
        let mut points: Vec<usize> = if n < GRID {
            (0..=n).collect()
        } else {
            (0..GRID).map(|i| i * n / GRID).chain([n]).collect()
        };
        points.dedup();
        let mut out: Vec<StepEstimate> = Vec::new();
        for &k in &points {
            let e = match out.last() {
                Some(prev) if self.same_as_before(prev, k) => StepEstimate {
                    step: k,
                    thread: trace.get(k - 1).map(|e| e.thread.clone()),
                    ..prev.clone()
                },
                _ => self.estimate_at(k, trace)?,
            };
            out.push(e);
        }
        // Refine: bisect each gap where P moves by more than a quarter.
        let mut i = 0;
        while i + 1 < out.len() {
            let (a, b) = (&out[i], &out[i + 1]);
            if b.step - a.step > 1 && (b.probability - a.probability).abs() > 0.25 {
                let mid = (a.step + b.step) / 2;
                let e = self.estimate_at(mid, trace)?;
                out.insert(i + 1, e);
            } else {
                i += 1;
            }
        }
        Ok(out)
    }

    /// Whether P after step `k` is `prev`'s without sampling again: `prev`
    /// is the state right before a step that could not have gone
    /// otherwise, which leaves the completions as they were. Their failing
    /// share is then unchanged (for a random walk, their probability too),
    /// and a fresh sample would only show noise (P = 0.36, then ~0.39 and
    /// ~0.34 on steps where nothing could differ).
    fn same_as_before(&self, prev: &StepEstimate, k: usize) -> bool {
        let forced = prev.step + 1 == k && self.forced.get(prev.step) == Some(&true);
        let unchanged = self.opts.strategy.name() == "random"
            || (prev.exact && (prev.probability == 0.0 || prev.probability == 1.0));
        forced && unchanged
    }

    fn estimate_at(&mut self, k: usize, trace: &[TraceEvent]) -> Result<StepEstimate, HostError> {
        self.goto(k)?;
        let prefix = self.decisions[..k].to_vec();
        let (probability, samples, exact, other_failures) = self.estimate(k as u64, prefix)?;
        Ok(StepEstimate {
            step: k,
            thread: k
                .checked_sub(1)
                .and_then(|i| trace.get(i))
                .map(|e| e.thread.clone()),
            probability,
            samples,
            exact,
            other_failures,
        })
    }

    /// P from the program's current state: exact when the space left is
    /// small, else sampled; `(P, samples, exact, other failures)`.
    /// `prefix` leads to the current state from the start.
    fn estimate(
        &mut self,
        stream: u64,
        prefix: Vec<Decision>,
    ) -> Result<(f64, u64, bool, u64), HostError> {
        let start = self.program.snapshot()?;
        if let Some(e) = self.enumerate(AUTO_EXACT, start.as_ref())? {
            let exact = if e.failing == e.completions {
                Some(1.0)
            } else if e.failing == 0 {
                Some(0.0)
            } else if self.opts.strategy.name() == "random" {
                Some(e.walk)
            } else {
                None
            };
            if let Some(p) = exact {
                return Ok((p, e.completions, true, e.other));
            }
        }
        let mut strategy = self.opts.strategy.build(mix(self.opts.seed, stream));
        let (mut hits, mut other, mut n) = (0u64, 0u64, 0u32);
        while n < self.opts.samples {
            match &start {
                Some(s) if self.opts.from_snapshots => self.program.restore(s)?,
                _ => {
                    self.program.reset()?;
                    for &d in &prefix {
                        self.program.step(d)?;
                    }
                }
            }
            match self.sample(&mut *strategy, u64::from(n))? {
                Some(f) if same_failure(&self.target, &f) => hits += 1,
                Some(_) => other += 1,
                None => {}
            }
            n += 1;
            let agree = hits == u64::from(n) || hits == 0;
            if n >= AGREE.max(self.opts.samples / 2).min(self.opts.samples) && agree {
                break;
            }
        }
        if let Some(s) = &start {
            self.program.restore(s)?;
        }
        Ok((
            hits as f64 / f64::from(n.max(1)),
            u64::from(n),
            false,
            other,
        ))
    }

    /// One completion drawn by `strategy` from the current state.
    fn sample(
        &mut self,
        strategy: &mut dyn Strategy,
        i: u64,
    ) -> Result<Option<Failure>, HostError> {
        strategy.begin(i);
        let mut prefix: Vec<Decision> = Vec::new();
        let mut last = None;
        while running(&self.program, self.max_steps) {
            let ctx = Context {
                step: self.program.steps() as usize,
                threads: self.program.threads(),
                hidden: 0,
                last,
                prefix: &prefix,
            };
            let Some(d) = strategy.decide(&ctx) else {
                break;
            };
            let info = self.program.step(d)?;
            last = Some((d.tid, info.op));
            strategy.observe(info);
            prefix.push(d);
        }
        let failure = ended_in(&self.program, self.max_steps);
        strategy.end(&match &failure {
            Some(f) => Outcome::Failed(f.clone()),
            None => Outcome::Finished,
        });
        Ok(failure)
    }

    /// Every completion from the current state, depth first, restoring a
    /// snapshot at each branch; `None` past `budget` completions. Leaves
    /// the program in `start` when given.
    fn enumerate(
        &mut self,
        budget: u64,
        start: Option<&Snapshot>,
    ) -> Result<Option<Enumeration>, HostError> {
        struct Frame {
            snap: Option<Snapshot>,
            choices: Vec<(Decision, f64)>,
            next: usize,
            weight: f64,
        }
        let mut e = Enumeration::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut weight = 1.0;
        let ok = 'outer: loop {
            // Here the program is at a node not yet expanded, reached with
            // probability `weight` by a uniform walk.
            if self.leaf(weight, &mut e) {
                if e.completions > budget {
                    break false;
                }
            } else {
                let choices = choices(&self.program);
                let snap = match choices.len() {
                    0 | 1 => None,
                    _ => match self.program.snapshot()? {
                        Some(s) => Some(s),
                        None => break false,
                    },
                };
                stack.push(Frame {
                    snap,
                    choices,
                    next: 0,
                    weight,
                });
            }
            loop {
                let Some(f) = stack.last_mut() else {
                    break 'outer true;
                };
                if f.next == f.choices.len() {
                    stack.pop();
                    continue;
                }
                if f.next > 0 {
                    let s = f.snap.as_ref().expect("a branch keeps its snapshot");
                    self.program.restore(s)?;
                }
                let (d, w) = f.choices[f.next];
                f.next += 1;
                weight = f.weight * w;
                self.program.step(d)?;
                break;
            }
        };
        if let Some(s) = start {
            self.program.restore(s)?;
        }
        Ok(ok.then_some(e))
    }

    /// Counts the current state as a completion if its execution ended.
    fn leaf(&mut self, weight: f64, e: &mut Enumeration) -> bool {
        if running(&self.program, self.max_steps) {
            return false;
        }
        e.completions += 1;
        match ended_in(&self.program, self.max_steps) {
            Some(f) if same_failure(&self.target, &f) => {
                e.failing += 1;
                e.walk += weight;
            }
            Some(_) => e.other += 1,
            None => {}
        }
        true
    }

    /// The first sealed step: proved by binary search with `exact`, else
    /// the first step from which every estimate is 1 (proved when that
    /// estimate was exact).
    fn sealing(&mut self, steps: &[StepEstimate]) -> Result<Sealing, HostError> {
        let n = self.decisions.len();
        if self.opts.exact {
            let (mut lo, mut hi, mut completions) = (0, n, 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                self.goto(mid)?;
                match self.enumerate(self.opts.exact_budget, None)? {
                    Some(e) if e.failing == e.completions => {
                        hi = mid;
                        completions = e.completions;
                    }
                    _ => lo = mid + 1,
                }
            }
            return Ok(Sealing::Proved {
                step: hi,
                completions,
            });
        }
        let mut first = steps.last().expect("the end is estimated");
        for s in steps.iter().rev() {
            if s.probability < 1.0 {
                break;
            }
            first = s;
        }
        Ok(if first.exact {
            Sealing::Proved {
                step: first.step,
                completions: first.samples,
            }
        } else {
            Sealing::Estimated { step: first.step }
        })
    }

    /// The steps where P jumps most (between adjacent estimates), each with
    /// P after the other enabled decisions there.
    fn decisive(&mut self, steps: &[StepEstimate]) -> Result<Vec<Decisive>, HostError> {
        let mut jumps: Vec<(f64, usize, usize)> = steps
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[1].step == w[0].step + 1)
            .map(|(i, w)| (w[1].probability - w[0].probability, w[1].step, i))
            .filter(|(j, _, _)| *j > 0.05)
            .collect();
        jumps.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        jumps.truncate(DECISIVE);
        let mut out = Vec::new();
        for (_, k, i) in jumps {
            self.goto(k - 1)?;
            let taken = self.decisions[k - 1];
            let thread = self.program.thread_name(taken.tid);
            let others: Vec<Decision> = choices(&self.program)
                .into_iter()
                .map(|(d, _)| d)
                .filter(|d| *d != taken)
                .take(ALTERNATIVES)
                .collect();
            let here = self.program.snapshot()?;
            let mut alternatives = Vec::new();
            for (j, d) in others.into_iter().enumerate() {
                match &here {
                    Some(s) => self.program.restore(s)?,
                    None => self.goto(k - 1)?,
                }
                let name = self.program.thread_name(d.tid);
                self.program.step(d)?;
                let stream = (1 << 40) + (k as u64) * 64 + j as u64;
                let prefix = [&self.decisions[..k - 1], &[d]].concat();
                let (probability, _, exact, _) = self.estimate(stream, prefix)?;
                alternatives.push(Alternative {
                    thread: name,
                    alt: d.alt,
                    probability,
                    exact,
                });
            }
            out.push(Decisive {
                step: k,
                thread,
                probability_before: steps[i].probability,
                probability_after: steps[i + 1].probability,
                alternatives,
            });
        }
        Ok(out)
    }
}

/// The enabled decisions with the probability a uniform walk takes each.
fn choices(program: &WasmProgram) -> Vec<(Decision, f64)> {
    let enabled: Vec<_> = program
        .threads()
        .iter()
        .filter(|t| t.pending.enabled)
        .collect();
    let per_thread = 1.0 / enabled.len().max(1) as f64;
    enabled
        .iter()
        .flat_map(|t| {
            let alts = t.pending.alts;
            (0..alts).map(move |a| (Decision::new(t.tid, a), per_thread / f64::from(alts)))
        })
        .collect()
}

/// A seed for stream `k` of `seed` (splitmix64), so that the samples of
/// each step depend on the seed and the step alone.
fn mix(seed: u64, k: u64) -> u64 {
    let mut z = seed
        .wrapping_add(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(k.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
