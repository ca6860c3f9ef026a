//! RaceFuzzer: race-directed random testing (Koushik Sen, "Race Directed
//! Random Testing of Concurrent Programs", PLDI 2008).
//!
//! Phase 1 (§2.2): a few ordinary random executions ([`RandomWalk`] with
//! this strategy's seed) feed a [`HybridDetector`], which predicts racing
//! pairs of statements (sites).
//!
//! Phase 2 (§2.2, Algorithm 1): for each racing pair `RaceSet = {σ1, σ2}`,
//! executions follow a random schedule, except that a thread about to execute
//! a statement of the pair is *postponed* until another thread is about to
//! execute the other statement with a conflicting access to the same object
//! (Algorithm 2, `Racing`). Then the two accesses are temporally next to each
//! other: a *real race*, recorded in [`RaceFuzzer::real_races`], which is
//! resolved randomly — with probability 1/2 the arriving thread runs first,
//! otherwise the postponed ones do (Algorithm 1, lines 11–18). When every
//! enabled thread is postponed, a random one is released (lines 26–27).
//!
//! Every execution, of either phase, is an ordinary fresh execution, so the
//! explorer reports the bugs any of them hits; a real race alone is not a
//! failure. Phase-2 executions cycle through the pairs, `executions_per_pair`
//! each, for `rounds` rounds (or until the explorer's bounds stop it).
//!
//! Execution `i` draws from ChaCha8 stream `i` of the seed (as
//! [`RandomWalk`]), so the same seed and options give the same exploration
//! whatever ran before — the paper's replay-by-seed.
//!
//! **Splitting** (`check --jobs`, `--partition`). A directed execution
//! depends on its index, the seed and the pairs phase 1 predicted, and
//! phase 1's executions on their index alone: phase 1 is a prologue every
//! worker runs ([`Blocks::Prologue`]), counted by the one that owns each
//! index, and the directed executions are dealt out by index. Counters
//! that every worker's prologue repeats (detection executions, pairs
//! predicted) merge as peaks, the directed executions add up, and real
//! races merge by pair and object, so the report is one thread's.

use crate::explorer::blocks::Blocks;
use crate::explorer::partition::Split;
use crate::program::{StepInfo, ThreadView};
use crate::strategies::descriptor::{Descriptor, StrategyOptions};
use crate::strategies::race_detector::{HybridDetector, SitePair};
use crate::strategies::random::RandomWalk;
use crate::strategy::{Context, Outcome, Profile, Standing, Start, Stat, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use wasmrace_trace::{Decision, Oid, Tid};

/// `racefuzzer` in the [registry](crate::strategies::registry).
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "racefuzzer",
    about: "Race detection, then race-directed scheduling (PLDI 2008); reports real races even when nothing fails (see --races)",
    takes: &[],
    always: &[],
    defaults: StrategyOptions::NONE,
    refuses: &[],
    build: |_, seed| Box::new(RaceFuzzer::new(seed)),
    describe: |_, seed| format!("racefuzzer, seed {seed}"),
    options_json: |_| serde_json::Map::new(),
};

/// The knobs of [`RaceFuzzer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceFuzzerOptions {
    /// Random executions observed by the hybrid detector (phase 1).
    /// Default 10.
    pub phase1_executions: u64,
    /// Phase-2 executions per racing pair and round. Default 100, as the
    /// paper's experiments (§5.2).
    pub executions_per_pair: u64,
    /// Rounds over all pairs; `None` cycles until the explorer stops.
    /// Default `None`.
    pub rounds: Option<u64>,
    /// Steps a thread may stay postponed before it is released. The paper's
    /// implementation (§4) releases long-postponed threads with a monitor
    /// thread, lest a program whose other threads spin (assuming a fair
    /// scheduler) livelock; a step count keeps that deterministic. Default
    /// 5,000 (half the explorer's default step bound).
    pub max_postponed_steps: u64,
}

impl Default for RaceFuzzerOptions {
    fn default() -> Self {
        RaceFuzzerOptions {
            phase1_executions: 10,
            executions_per_pair: 100,
            rounds: None,
            max_postponed_steps: 5_000,
        }
    }
}

/// A real race: two threads were about to run the two statements of a
/// racing pair, on the same object, with at least one write.
pub use crate::strategy::RealRace;

/// What the current execution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Detect,
    Direct { pair: SitePair },
}

/// RaceFuzzer; see the module documentation.
#[derive(Clone, Debug)]
pub struct RaceFuzzer {
    seed: u64,
    options: RaceFuzzerOptions,
    detector: HybridDetector,
    walk: RandomWalk,
    /// The racing pairs phase 2 directs at, fixed when phase 1 ends.
    pairs: Option<Vec<SitePair>>,
    /// The current execution's global index.
    index: u64,
    /// Executions of each phase that ended (not abandoned).
    detected: u64,
    directed: u64,
    phase: Phase,
    rng: ChaCha8Rng,
    /// Postponed threads and the step at which each was postponed.
    postponed: BTreeMap<Tid, usize>,
    /// Threads to run next, in order, before any random choice: the
    /// postponed threads a race resolution lets go, or a released one.
    forced: VecDeque<Tid>,
    real: BTreeMap<(SitePair, Oid), RealRace>,
    /// Real races created in the current execution.
    this_execution: BTreeSet<(SitePair, Oid)>,
}

impl RaceFuzzer {
    /// RaceFuzzer with the default options.
    pub fn new(seed: u64) -> Self {
        Self::with_options(seed, RaceFuzzerOptions::default())
    }

    /// RaceFuzzer with `options`; `seed` seeds both phases' random choices.
    pub fn with_options(seed: u64, options: RaceFuzzerOptions) -> Self {
        RaceFuzzer {
            seed,
            options,
            detector: HybridDetector::new(),
            walk: RandomWalk::new(seed),
            pairs: None,
            index: 0,
            detected: 0,
            directed: 0,
            phase: Phase::Detect,
            rng: ChaCha8Rng::seed_from_u64(seed),
            postponed: BTreeMap::new(),
            forced: VecDeque::new(),
            real: BTreeMap::new(),
            this_execution: BTreeSet::new(),
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> &RaceFuzzerOptions {
        &self.options
    }

    /// The racing pairs predicted by phase 1 (so far, while it runs).
    pub fn potential_races(&self) -> &BTreeSet<SitePair> {
        self.detector.racing_pairs()
    }

    /// The real races created so far, ordered by sites then object.
    pub fn real_races(&self) -> Vec<RealRace> {
        self.real.values().cloned().collect()
    }

    /// The pair the current execution directs at (`None` in phase 1).
    pub fn current_pair(&self) -> Option<SitePair> {
        match self.phase {
            Phase::Detect => None,
            Phase::Direct { pair } => Some(pair),
        }
    }

    /// Picks `t` with a uniformly random alternative.
    fn run(&mut self, t: &ThreadView) -> Decision {
        let alt = if t.pending.alts > 1 {
            self.rng.random_range(0..t.pending.alts)
        } else {
            0
        };
        Decision::new(t.tid, alt)
    }

    fn record_race(&mut self, pair: SitePair, obj: Oid) {
        let execution = self.index + 1;
        let new_here = self.this_execution.insert((pair, obj));
        let r = self.real.entry((pair, obj)).or_insert(RealRace {
            sites: pair,
            obj,
            count: 0,
            executions: 0,
            first_execution: execution,
        });
        r.count += 1;
        if new_here {
            r.executions += 1;
        }
    }

    /// Algorithm 1's loop body, repeated until it executes a statement.
    fn direct(&mut self, ctx: &Context<'_>, pair: SitePair) -> Option<Decision> {
        let enabled: Vec<&ThreadView> = ctx.threads.iter().filter(|t| t.pending.enabled).collect();
        let find = |tid: Tid| enabled.iter().copied().find(|t| t.tid == tid);
        // Threads that are gone (exited, crashed) are no longer postponed.
        self.postponed
            .retain(|t, _| ctx.threads.iter().any(|v| v.tid == *t));
        loop {
            while let Some(t) = self.forced.pop_front() {
                if let Some(v) = find(t) {
                    return Some(self.run(v));
                }
            }
            // §4's monitor: release a thread postponed for too long.
            let limit = self.options.max_postponed_steps as usize;
            let overdue = self
                .postponed
                .iter()
                .find(|(t, &since)| ctx.step - since >= limit && find(**t).is_some())
                .map(|(t, _)| *t);
            if let Some(t) = overdue {
                self.postponed.remove(&t);
                return Some(self.run(find(t)?));
            }
            let free: Vec<&ThreadView> = enabled
                .iter()
                .copied()
                .filter(|t| !self.postponed.contains_key(&t.tid))
                .collect();
            if free.is_empty() {
                // Lines 26–27: every enabled thread is postponed; release a
                // random one. Released, it runs its statement (as §3.1,
                // Case 1 describes): examining it again would just postpone
                // it again.
                let stuck: Vec<Tid> = self
                    .postponed
                    .keys()
                    .copied()
                    .filter(|t| find(*t).is_some())
                    .collect();
                if stuck.is_empty() {
                    return None;
                }
                let r = stuck[self.rng.random_range(0..stuck.len())];
                self.postponed.remove(&r);
                return Some(self.run(find(r)?));
            }
            // Line 5: a random enabled, non-postponed thread.
            let t = free[self.rng.random_range(0..free.len())];
            let site = t.pending.site;
            if site != pair.0 && site != pair.1 {
                return Some(self.run(t)); // line 24
            }
            // Algorithm 2, Racing: postponed threads about to run the other
            // statement of the pair with a conflicting access. (Two threads
            // at the same statement race as the pair (σ, σ), which phase 1
            // reports, and is directed at, on its own.)
            let other = if site == pair.0 { pair.1 } else { pair.0 };
            let racing: Vec<(Tid, Oid)> = self
                .postponed
                .keys()
                .filter_map(|&p| {
                    let v = find(p)?;
                    if v.pending.site != other {
                        return None;
                    }
                    let obj = t.pending.accesses.iter().find_map(|a| {
                        v.pending
                            .accesses
                            .iter()
                            .find(|b| a.conflicts(b) && is_memory(a) && is_memory(b))
                            .map(|_| a.obj)
                    })?;
                    Some((p, obj))
                })
                .collect();
            if racing.is_empty() {
                // Line 21: wait for a race to happen.
                self.postponed.insert(t.tid, ctx.step);
                continue;
            }
            // Lines 9–18: a real race; resolve it randomly.
            for &(_, obj) in &racing {
                self.record_race(pair, obj);
            }
            if self.rng.random_bool(0.5) {
                return Some(self.run(t));
            }
            self.postponed.insert(t.tid, ctx.step);
            for &(p, _) in &racing {
                self.postponed.remove(&p);
                self.forced.push_back(p);
            }
        }
    }
}

/// A memory access (the paper's `MEM` events); synchronization is not.
fn is_memory(a: &wasmrace_trace::Access) -> bool {
    !a.kind.is_sync()
}

impl Strategy for RaceFuzzer {
    fn name(&self) -> &str {
        "racefuzzer"
    }

    fn begin(&mut self, index: u64) -> Option<Start> {
        // The explorer's index: under a split, this worker sees the
        // prologue (phase 1) whole, then its own directed executions.
        let i = index;
        self.index = i;
        self.postponed.clear();
        self.forced.clear();
        self.this_execution.clear();
        let p1 = self.options.phase1_executions;
        if i < p1 {
            self.phase = Phase::Detect;
            self.detector.begin_execution();
            self.walk.begin(i);
            return Some(Start::Fresh);
        }
        let detector = &self.detector;
        let pairs = self
            .pairs
            .get_or_insert_with(|| detector.racing_pairs().iter().copied().collect());
        let per_pair = self.options.executions_per_pair;
        if pairs.is_empty() || per_pair == 0 {
            return None; // nothing to direct at
        }
        let k = i - p1;
        let per_round = per_pair.saturating_mul(pairs.len() as u64);
        if self.options.rounds.is_some_and(|r| k / per_round >= r) {
            return None;
        }
        let pair = pairs[((k % per_round) / per_pair) as usize];
        self.phase = Phase::Direct { pair };
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(i);
        Some(Start::Fresh)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        match self.phase {
            Phase::Detect => self.walk.decide(ctx),
            Phase::Direct { pair } => self.direct(ctx, pair),
        }
    }

    fn observe(&mut self, step: &StepInfo) {
        if self.phase == Phase::Detect {
            self.detector.observe(step);
        }
    }

    fn end(&mut self, outcome: &Outcome) {
        match (outcome, self.phase) {
            (Outcome::Abandoned, _) => {}
            (_, Phase::Detect) => self.detected += 1,
            (_, Phase::Direct { .. }) => self.directed += 1,
        }
    }

    /// By execution, after the detection phase as a prologue (see the
    /// module documentation).
    fn profile(&self) -> Profile {
        Profile {
            split: Split::ByExecution,
            blocks: Blocks::Prologue(self.options.phase1_executions),
            ..Profile::default()
        }
    }

    /// The seed, the real races created so far, and how far the two phases
    /// went: a run that ends by itself (no racing pair predicted, so
    /// nothing to direct) says why through these counters. Every worker
    /// of a split run runs phase 1 whole: its counters merge as peaks, the
    /// directed executions add up.
    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: self.seed,
            stats: vec![
                Stat::peak("detection executions", self.detected),
                Stat::peak(
                    "racing pairs predicted",
                    self.potential_races().len() as u64,
                ),
                Stat::new("directed executions", self.directed),
            ],
            real_races: self.real_races(),
            ..Standing::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::{Config, Explorer, Report};
    use crate::model::{reg, Model, ModelBuilder};
    use crate::program::Program;
    use crate::strategies::{Recording, Replay};
    use crate::strategy::Outcome;
    use wasmrace_trace::{Decision, ThreadPath};

    /// Declared object `i` of a model (declaration order, as the host).
    fn object(i: u32) -> Oid {
        Oid::object(ThreadPath::main().tid(), i)
    }

    /// Fig. 1, "A program with a real race": `main` spawns thread1 and
    /// thread2 and joins them (as the wasm guest `racefuzzer_fig1`). Objects:
    /// x = 0, y = 1, z = 2, L = 3.
    fn fig1() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let y = b.var("y", 0);
        let z = b.var("z", 0);
        let l = b.mutex("L");
        let t1 = b.thread("thread1", |t| {
            t.write(x, 1) // 1
                .lock(l) // 2
                .write(y, 1) // 3
                .unlock(l) // 4
                .read(z, 0) // 5
                .when(reg(0).equals(1), |t| {
                    t.fail("ERROR1"); // 6
                });
        });
        let t2 = b.thread("thread2", |t| {
            t.write(z, 1) // 7
                .lock(l) // 8
                .read(y, 0) // 9
                .when(reg(0).equals(1), |t| {
                    t.read(x, 1) // 10
                        .when(reg(1).not_equals(1), |t| {
                            t.fail("ERROR2"); // 11
                        });
                })
                .unlock(l); // 14
        });
        b.main(|t| {
            t.spawn(t1, 0).spawn(t2, 1).join(reg(0)).join(reg(1));
        });
        b.build().unwrap()
    }

    /// Fig. 2, "A program with a hard to reproduce real race", with
    /// `fillers` statements standing for f1()..f5(): reads of a variable
    /// only thread1 touches (thread2's f6() reads its own), so they are real
    /// steps without conflicts (as the wasm guest `racefuzzer_fig2`).
    /// Objects: x = 0, L = 1.
    fn fig2(fillers: i64) -> Model {
        assert!(fillers >= 1);
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let l = b.mutex("L");
        let local1 = b.var("local1", 0);
        let local2 = b.var("local2", 0);
        let t1 = b.thread("thread1", |t| {
            t.lock(l) // 1
                .set(1, 0)
                .label("f")
                .read(local1, 2) // 2-6: f1() .. f5()
                .set(1, reg(1) + 1)
                .jump_if(reg(1).lt(fillers), "f")
                .unlock(l) // 7
                .read(x, 0) // 8
                .when(reg(0).equals(0), |t| {
                    t.fail("ERROR"); // 9
                });
        });
        let t2 = b.thread("thread2", |t| {
            t.write(x, 1) // 10
                .lock(l) // 11
                .read(local2, 0) // 12: f6()
                .unlock(l); // 13
        });
        b.main(|t| {
            t.spawn(t1, 0).spawn(t2, 1).join(reg(0)).join(reg(1));
        });
        b.build().unwrap()
    }

    fn explore<S: Strategy>(model: &Model, strategy: &mut S, max_executions: u64) -> Report {
        let config = Config {
            max_executions,
            stop_on_first_bug: false,
            ..Config::default()
        };
        Explorer::new(model.clone(), config).run(strategy).unwrap()
    }

    /// [`explore`] with the executions recorded.
    fn explore_rec(model: &Model, rec: &mut Recording<RaceFuzzer>, max_executions: u64) -> Report {
        let config = Config {
            max_executions,
            stop_on_first_bug: false,
            ..Config::default()
        };
        rec.run(&mut Explorer::new(model.clone(), config)).unwrap()
    }

    fn options(phase1: u64, per_pair: u64) -> RaceFuzzerOptions {
        RaceFuzzerOptions {
            phase1_executions: phase1,
            executions_per_pair: per_pair,
            rounds: Some(1),
            ..RaceFuzzerOptions::default()
        }
    }

    /// Failing executions among `records`, by panic message.
    fn failures(records: &[crate::strategies::Recorded]) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for r in records {
            if let Outcome::Failed(f) = &r.outcome {
                *out.entry(f.message.clone()).or_insert(0) += 1;
            }
        }
        out
    }

    /// `hits` of `n` trials is within 4 standard deviations of `n * p`.
    fn assert_binomial(hits: u64, n: u64, p: f64, what: &str) {
        let mean = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (hits as f64 - mean).abs() <= 4.0 * sd,
            "{what}: {hits} of {n}, expected {mean:.1} ± {:.1}",
            4.0 * sd
        );
    }

    #[test]
    fn model_messages_carry_sender_and_index() {
        let mut b = ModelBuilder::new();
        let child = b.thread("child", |t| {
            t.recv(0).recv(1);
        });
        b.main(|t| {
            t.spawn(child, 0).send(reg(0), 7).send(reg(0), 8);
        });
        let mut m = b.build().unwrap();
        let main = ThreadPath::main().tid();
        let c = ThreadPath::main().child(1).tid();
        let mut step = |t| m.step(Decision::new(t, 0)).unwrap().message;
        assert_eq!(step(main), None);
        assert_eq!(step(main), Some((main, 0)));
        assert_eq!(step(main), Some((main, 1)));
        assert_eq!(step(c), Some((main, 0)));
        assert_eq!(step(c), Some((main, 1)));
    }

    #[test]
    fn messages_order_accesses_in_phase_one() {
        // thread a writes x then messages b, which then writes x: ordered by
        // the message, no race. Thread c writes x unordered: races with both.
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let rb = b.thread("b", |t| {
            t.recv(0).write(x, 2);
        });
        let ra = b.thread("a", |t| {
            t.write(x, 1).send(reg(0), 0);
        });
        let rc = b.thread("c", |t| {
            t.write(x, 3);
        });
        b.main(|t| {
            t.spawn(rb, 0).spawn_with(ra, 1, [reg(0)]).spawn(rc, 2);
        });
        let model = b.build().unwrap();
        let mut rf = RaceFuzzer::with_options(3, options(30, 0));
        explore(&model, &mut rf, 1_000);
        // Sites: c's write races with a's and with b's; a/b never.
        let pairs = rf.potential_races().clone();
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        let shared: BTreeSet<u64> = pairs.iter().map(|p| p.0).collect::<BTreeSet<_>>();
        let other: BTreeSet<u64> = pairs.iter().map(|p| p.1).collect();
        assert!(
            shared.len() == 1 || other.len() == 1,
            "one site (c's write) is in both pairs: {pairs:?}"
        );
    }

    #[test]
    fn fig1_finds_the_real_race_on_z_and_never_error2() {
        let model = fig1();
        let per_pair = 200;
        let mut rf = Recording::new(RaceFuzzer::with_options(1, options(20, per_pair)));
        let report = explore_rec(&model, &mut rf, 100_000);
        let fuzzer = rf.inner();
        // Phase 1 predicts (5, 7) on z and the false race (1, 10) on x.
        assert_eq!(
            fuzzer.potential_races().len(),
            2,
            "{:?}",
            fuzzer.potential_races()
        );
        assert_eq!(report.executions, 20 + 2 * per_pair);
        // Phase 2 confirms only the race on z, in every execution directed
        // at it (whoever arrives first waits for the other).
        let real = fuzzer.real_races();
        assert_eq!(real.len(), 1, "{real:?}");
        assert_eq!(real[0].obj, object(2), "the race is on z");
        assert_eq!(real[0].executions, per_pair);
        assert!(fuzzer.potential_races().contains(&real[0].sites));
        let all = failures(rf.executions());
        assert!(!all.contains_key("ERROR2"), "{all:?}");
        // ERROR1 when statement 7 wins the race: half the time.
        let pairs: Vec<SitePair> = fuzzer.potential_races().iter().copied().collect();
        let z_index = pairs.iter().position(|p| *p == real[0].sites).unwrap();
        let start = 20 + z_index * per_pair as usize;
        let directed = failures(&rf.executions()[start..start + per_pair as usize]);
        let error1 = directed.get("ERROR1").copied().unwrap_or(0);
        assert_binomial(error1, per_pair, 0.5, "ERROR1 directed at (5, 7)");
        eprintln!("racefuzzer fig1: ERROR1 {error1}/{per_pair} directed at (5, 7)");
    }

    /// RaceFuzzer on Fig. 2: (race-creating executions, ERROR executions)
    /// among `n` phase-2 executions.
    fn fig2_racefuzzer(fillers: i64, n: u64, seed: u64) -> (u64, u64) {
        let model = fig2(fillers);
        let mut rf = Recording::new(RaceFuzzer::with_options(seed, options(5, n)));
        explore_rec(&model, &mut rf, 100_000);
        let fuzzer = rf.inner();
        assert_eq!(fuzzer.potential_races().len(), 1);
        let real = fuzzer.real_races();
        assert_eq!(real.len(), 1, "{real:?}");
        assert_eq!(real[0].obj, object(0), "the race is on x");
        assert_eq!(real[0].count, real[0].executions, "once per execution");
        let directed = failures(&rf.executions()[5..]);
        assert_eq!(rf.executions().len() as u64, 5 + n);
        (
            real[0].executions,
            directed.get("ERROR").copied().unwrap_or(0),
        )
    }

    #[test]
    fn fig2_racefuzzer_creates_the_race_always_and_errs_half_the_time() {
        for (fillers, n) in [(10, 1_000), (1_000, 300)] {
            let (races, errors) = fig2_racefuzzer(fillers, n, 11);
            assert_eq!(
                races, n,
                "race created with probability 1 ({fillers} fillers)"
            );
            assert_binomial(errors, n, 0.5, &format!("ERROR with {fillers} fillers"));
            eprintln!("racefuzzer fig2 fillers={fillers}: ERROR {errors}/{n}");
        }
    }

    #[test]
    fn fig2_random_walk_rarely_errs_and_more_rarely_with_more_fillers() {
        let rate = |fillers, n| {
            let mut rw = RandomWalk::new(5);
            let report = explore(&fig2(fillers), &mut rw, n);
            report.failing_executions
        };
        let (n2, n10, n1000) = (2_000, 20_000, 300);
        let (h2, h10, h1000) = (rate(2, n2), rate(10, n10), rate(1_000, n1000));
        eprintln!(
            "random walk fig2: ERROR {h2}/{n2} with 2 fillers, {h10}/{n10} with 10, \
             {h1000}/{n1000} with 1000"
        );
        // Thread1 reaches statement 8 at its s-th step (s = k + 3 for k
        // fillers) and must take it before thread2's first step. It gets a
        // head start of j steps with probability 2^-(j+1) (main picked
        // among {main, thread1} until main spawns thread2; all s steps with
        // probability 2^-s), then must win s - j coin flips:
        // P = 2^-s + s 2^-(s+1) = (k + 5) 2^-(k + 4): 7/64 with 2 fillers,
        // 15/16384 ≈ 0.0009 with 10, ≈ 2^-1000 with 1,000.
        assert_binomial(h2, n2, 7.0 / 64.0, "random walk, 2 fillers");
        assert_binomial(h10, n10, 15.0 / 16384.0, "random walk, 10 fillers");
        assert_eq!(h1000, 0);
        // The rate falls by two orders of magnitude from 2 to 10 fillers.
        assert!(h10 as f64 / (n10 as f64) < h2 as f64 / (n2 as f64) / 20.0);
    }

    #[test]
    fn a_bug_racefuzzer_finds_replays() {
        let model = fig2(1_000);
        let mut rf = RaceFuzzer::with_options(2, options(3, 50));
        let report = Explorer::new(model.clone(), Config::default())
            .run(&mut rf)
            .unwrap();
        let bug = report.first_bug().expect("ERROR found").clone();
        assert_eq!(bug.failure.message, "ERROR");
        assert!(bug.execution > 3, "found in phase 2");
        let mut replay = Replay::new(bug.schedule.clone());
        let again = Explorer::new(model, Config::default())
            .run(&mut replay)
            .unwrap();
        assert!(replay.reproduced());
        assert_eq!(again.first_bug().unwrap().failure, bug.failure);
    }

    #[test]
    fn same_seed_same_exploration() {
        let run = |seed| {
            let mut rf = Recording::new(RaceFuzzer::with_options(seed, options(10, 30)));
            explore_rec(&fig1(), &mut rf, 100_000);
            let decisions: Vec<Vec<Decision>> = rf
                .executions()
                .iter()
                .map(|r| r.decisions.clone())
                .collect();
            (decisions, rf.inner().real_races())
        };
        let a = run(4);
        assert!(a.0.len() == 40 || a.0.len() == 70, "{}", a.0.len());
        assert_eq!(a, run(4));
        assert_ne!(a.0, run(5).0);
    }

    #[test]
    fn postponement_deadlocks_are_broken_and_rounds_end() {
        // Fig. 1 directed at (1, 10): thread1 waits at statement 1 for a
        // statement 10 that never comes once thread1 is postponed before
        // y = 1; the release lets every execution finish.
        let model = fig1();
        let mut rf = Recording::new(RaceFuzzer::with_options(9, options(20, 40)));
        let report = explore_rec(&model, &mut rf, 100_000);
        assert_eq!(report.executions, 20 + 2 * 40);
        assert!(rf
            .executions()
            .iter()
            .all(|r| r.outcome != Outcome::Abandoned));
        let next = report.executions;
        assert!(rf.inner_mut().begin(next).is_none(), "one round, then done");
        // No racing pair: nothing to direct at after phase 1.
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        b.main(|t| {
            t.write(x, 1).read(x, 0);
        });
        let mut quiet = RaceFuzzer::new(1);
        let report = explore(&b.build().unwrap(), &mut quiet, 1_000);
        assert_eq!(report.executions, 10);
        assert!(quiet.potential_races().is_empty() && quiet.real_races().is_empty());
    }
}
