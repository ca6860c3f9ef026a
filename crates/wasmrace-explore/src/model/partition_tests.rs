//! Partitioned runs on models: for N partitions, the union of what they
//! explore is exactly what one run explores, each execution in exactly one
//! partition, and the bug merged by the rule (lowest global index for a
//! split by execution, smallest order key for a split by prefix) is the one
//! the single run reports.

use super::{reg, Model, ModelBuilder};
use crate::explorer::{Bug, Partition, Report};
use crate::observer::Observer;
use crate::strategies::{Dfs, RandomWalk};
use crate::strategy::{Context, Outcome, Profile, Splitting, Standing, Start, Strategy};
use crate::{Config, ExploreError, Explorer};
use wasmrace_trace::Decision;

/// Two threads increment `x` without a lock, the second after choosing
/// how much to add; main joins them and asserts no update was lost (also
/// the work-stealing tests' model).
pub(crate) fn racy() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let inc = b.thread("inc", |t| {
        t.read(x, 0).set(0, reg(0) + 1).write(x, reg(0));
    });
    let pick = b.thread("pick", |t| {
        t.choose(2, 1).read(x, 0).write(x, reg(0) + reg(1) + 1);
    });
    b.main(|t| {
        t.spawn(inc, 0)
            .spawn(pick, 1)
            .join(reg(0))
            .join(reg(1))
            .read(x, 3)
            .assert(reg(3).ge(2), "lost update");
    });
    b.build().unwrap()
}

/// An increment under a lock beside a `choose` and a fetch-add: no bug.
fn locked() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let l = b.mutex("l");
    let inc = b.thread("inc", |t| {
        t.lock(l)
            .read(x, 0)
            .set(0, reg(0) + 1)
            .write(x, reg(0))
            .unlock(l);
    });
    let pick = b.thread("pick", |t| {
        t.choose(2, 1).fetch_add(x, reg(1), 2);
    });
    b.main(|t| {
        t.spawn(inc, 0).spawn(pick, 1).join(reg(0)).join(reg(1));
    });
    b.build().unwrap()
}

/// The executions an observer saw end, abandoned ones left out.
#[derive(Default)]
struct Paths(Vec<Vec<Decision>>);

impl Observer for Paths {
    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        if *outcome != Outcome::Abandoned {
            self.0.push(path.to_vec());
        }
    }
}

fn run(
    model: &Model,
    strategy: &mut dyn Strategy,
    config: &Config,
) -> (Report, Vec<Vec<Decision>>) {
    let mut explorer = Explorer::new(model.clone(), config.clone());
    let mut paths = Paths::default();
    let report = explorer.run_observed(strategy, &mut paths).unwrap();
    (report, paths.0)
}

fn partitioned(config: &Config, k: u32, n: u32) -> Config {
    Config {
        partition: Partition::new(k, n),
        ..config.clone()
    }
}

/// The merge rule: the lowest order key, else the lowest execution index.
fn first(bugs: impl IntoIterator<Item = Bug>) -> Option<Bug> {
    let bugs: Vec<Bug> = bugs.into_iter().collect();
    crate::explorer::partition::first_of(&bugs).cloned()
}

const COUNTS: [u32; 4] = [1, 2, 3, 7];

#[test]
fn dfs_partitions_explore_the_single_run_disjointly() {
    for model in [racy(), locked()] {
        for bound in [None, Some(0), Some(1), Some(2)] {
            for depth in [0, 1, 3, 6, 40] {
                let config = Config {
                    stop_on_first_bug: false,
                    split_depth: depth,
                    ..Config::default()
                };
                let dfs = || {
                    Dfs::new(crate::DfsOptions {
                        preemption_bound: bound,
                    })
                };
                let (single, mut all) = run(&model, &mut dfs(), &config);
                assert!(single.exhausted, "{} {bound:?}", single.executions);
                all.sort();
                for n in COUNTS {
                    let mut union = Vec::new();
                    let (mut executions, mut failing) = (0, 0);
                    for k in 0..n {
                        let (r, paths) = run(&model, &mut dfs(), &partitioned(&config, k, n));
                        assert!(r.exhausted, "each partition exhausts its share");
                        assert_eq!(r.executions, paths.len() as u64);
                        executions += r.executions;
                        failing += r.failing_executions;
                        union.extend(paths);
                    }
                    union.sort();
                    let what = format!("bound {bound:?}, depth {depth}, {n} partitions");
                    assert_eq!(union, all, "{what}");
                    assert_eq!(executions, single.executions, "{what}");
                    assert_eq!(failing, single.failing_executions, "{what}");
                }
            }
        }
    }
}

#[test]
fn dfs_partition_bugs_merge_to_the_single_runs_first_bug() {
    for bound in [None, Some(1), Some(2)] {
        for depth in [2, 4, 6] {
            let config = Config {
                split_depth: depth,
                ..Config::default()
            };
            let dfs = || {
                Dfs::new(crate::DfsOptions {
                    preemption_bound: bound,
                })
            };
            let (single, _) = run(&racy(), &mut dfs(), &config);
            let expected = single.first_bug().expect("the lost update").clone();
            for n in COUNTS {
                let bugs = (0..n).filter_map(|k| {
                    let (r, _) = run(&racy(), &mut dfs(), &partitioned(&config, k, n));
                    r.bugs.into_iter().next()
                });
                let merged = first(bugs).unwrap();
                assert_eq!(merged.schedule, expected.schedule, "{bound:?} {depth} {n}");
                assert_eq!(merged.failure, expected.failure);
                assert_eq!(merged.order_key, expected.order_key);
            }
        }
    }
}

/// DFS wrapped to record the order key of every execution it ends.
struct Keyed(Dfs, Vec<Vec<u32>>);

impl Strategy for Keyed {
    fn name(&self) -> &str {
        "keyed"
    }
    fn begin(&mut self, executions: u64) -> Option<Start> {
        self.0.begin(executions)
    }
    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        self.0.decide(ctx)
    }
    fn end(&mut self, outcome: &Outcome) {
        if *outcome != Outcome::Abandoned {
            self.1.push(self.0.standing().order_key.unwrap());
        }
    }
}

#[test]
fn dfs_order_keys_increase_in_search_order() {
    for model in [racy(), locked()] {
        for bound in [None, Some(0), Some(1), Some(2), Some(3)] {
            let mut keyed = Keyed(
                Dfs::new(crate::DfsOptions {
                    preemption_bound: bound,
                }),
                vec![],
            );
            let config = Config {
                stop_on_first_bug: false,
                ..Config::default()
            };
            run(&model, &mut keyed, &config);
            assert!(keyed.1.len() > 5, "{}", keyed.1.len());
            for w in keyed.1.windows(2) {
                assert!(w[0] < w[1], "bound {bound:?}: {:?} then {:?}", w[0], w[1]);
            }
        }
    }
}

#[test]
fn random_partitions_deal_the_indices_of_the_whole_budget() {
    let config = Config {
        max_executions: 300,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let (single, all) = run(&racy(), &mut RandomWalk::new(5), &config);
    let indices = |r: &Report| r.bugs.iter().map(|b| b.execution).collect::<Vec<_>>();
    assert!(single.failing_executions > 0);
    for n in COUNTS {
        let mut union = Vec::new();
        let mut bug_indices = Vec::new();
        let mut executions = 0;
        for k in 0..n {
            let (r, paths) = run(
                &racy(),
                &mut RandomWalk::new(5),
                &partitioned(&config, k, n),
            );
            assert_eq!(
                r.stopped_by.as_ref().map(|b| b.knob),
                Some("--max-executions")
            );
            executions += r.executions;
            // Execution `i` of the whole run is the partition's `i / n`-th.
            for (j, p) in paths.into_iter().enumerate() {
                union.push((j as u64 * u64::from(n) + u64::from(k), p));
            }
            bug_indices.extend(indices(&r));
        }
        union.sort();
        bug_indices.sort_unstable();
        assert_eq!(executions, 300, "{n} partitions share the budget");
        let single_union: Vec<_> = (0u64..).zip(all.iter().cloned()).collect();
        assert_eq!(union, single_union, "{n}");
        assert_eq!(bug_indices, indices(&single), "{n}");
    }
}

/// For seeds 0 to 4, the first bugs of the N partitions of a run of
/// `build(seed)` merge (by the rule) to the single run's first bug.
fn assert_bugs_merge<S: Strategy>(build: impl Fn(u64) -> S) {
    for seed in 0..5 {
        let config = Config {
            max_executions: 1000,
            ..Config::default()
        };
        let (single, _) = run(&racy(), &mut build(seed), &config);
        let expected = single.first_bug().unwrap().clone();
        for n in COUNTS {
            let bugs = (0..n).filter_map(|k| {
                let config = partitioned(&config, k, n);
                run(&racy(), &mut build(seed), &config)
                    .0
                    .bugs
                    .into_iter()
                    .next()
            });
            assert_eq!(first(bugs), Some(expected.clone()), "seed {seed}, {n}");
        }
    }
}

/// The executions the `n` partitions of a run of `build()` count, each
/// with its global index (walked as the explorer walks its share's
/// indices: executions of a prologue another partition owns are run, not
/// counted), sorted; and each partition's report.
fn counted_by_index<S: Strategy>(
    build: impl Fn() -> S,
    config: &Config,
    n: u32,
) -> (Vec<(u64, Vec<Decision>)>, Vec<Report>) {
    let mut union = Vec::new();
    let mut reports = Vec::new();
    for k in 0..n {
        let mut s = build();
        let (r, paths) = run(&racy(), &mut s, &partitioned(config, k, n));
        let (p, blocks) = (Partition::new(k, n).unwrap(), s.profile().blocks);
        let mut index = None;
        for path in paths {
            let i = p.next_owned(blocks, index, false);
            if p.owns(blocks, i) {
                union.push((i, path));
            }
            index = Some(i);
        }
        reports.push(r);
    }
    union.sort();
    (union, reports)
}

#[test]
fn random_partition_bugs_merge_to_the_single_runs_first_bug() {
    assert_bugs_merge(RandomWalk::new);
}

#[test]
fn merged_reports_add_up_to_the_single_run() {
    let config = Config {
        split_depth: 3,
        ..Config::default()
    };
    let dfs = || Dfs::with_preemption_bound(2);
    let (single, _) = run(&locked(), &mut dfs(), &config);
    let reports: Vec<Report> = (0..3)
        .map(|k| run(&locked(), &mut dfs(), &partitioned(&config, k, 3)).0)
        .collect();
    let merged = crate::explorer::partition::merge_reports(&reports);
    assert_eq!(merged.executions, single.executions);
    assert!(merged.exhausted && merged.bugs.is_empty());
    assert!(merged.partition_skipped > 0);
    assert_eq!(merged.strategy_bound, single.strategy_bound);
    let (single, _) = run(&racy(), &mut dfs(), &config);
    let reports: Vec<Report> = (0..3)
        .map(|k| run(&racy(), &mut dfs(), &partitioned(&config, k, 3)).0)
        .collect();
    let merged = crate::explorer::partition::merge_reports(&reports);
    assert_eq!(merged.bugs.len(), 1);
    assert_eq!(merged.bugs[0].schedule, single.bugs[0].schedule);
    assert!(!merged.exhausted);
}

#[test]
fn a_strategy_that_cannot_split_is_refused() {
    let config = partitioned(&Config::default(), 0, 2);
    let mut explorer = Explorer::new(racy(), config.clone());
    let mut dpor = crate::strategies::Dpor::new(crate::strategies::DporMode::Optimal);
    let err = explorer.run(&mut dpor).unwrap_err();
    assert!(matches!(err, ExploreError::CannotSplit { .. }), "{err}");
    let mut explorer = Explorer::new(racy(), config);
    let err = explorer
        .run(&mut Dfs::unbounded().with_state_cache(1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "strategy `dfs` cannot split its work into partitions"
    );
}

/// SS's samples are blocks of `db + 1` executions: the partitions deal out
/// whole samples, and between them run exactly the single run's
/// executions under the same global indices, with its counters and its
/// first bug.
#[test]
fn ss_partitions_deal_whole_samples_of_the_whole_budget() {
    use crate::strategies::{RoundRobin, Ss, SsOptions};
    let ss = |seed| Ss::new(RoundRobin::new(), seed, SsOptions { c1: 2, c2: 3 });
    let config = Config {
        // Cuts the third round's samples (of three executions) midway.
        max_executions: 200,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let (single, all) = run(&racy(), &mut ss(5), &config);
    assert!(single.failing_executions > 0);
    for n in COUNTS {
        let (union, reports) = counted_by_index(|| ss(5), &config, n);
        let single_union: Vec<_> = (0u64..).zip(all.iter().cloned()).collect();
        assert_eq!(union, single_union, "{n}");
        let merged = crate::explorer::partition::merge_reports(&reports);
        assert_eq!(merged.executions, 200, "{n}");
        assert_eq!(merged.strategy_stats, single.strategy_stats, "{n}");
    }
    assert_bugs_merge(ss);
}

/// RaceFuzzer's detection phase is a prologue every partition runs and one
/// counts; its directed executions are dealt out by index: between them
/// the partitions count exactly the single run's executions, with its
/// counters, its real races and its first bug.
#[test]
fn racefuzzer_partitions_share_the_detection_and_deal_the_directed_executions() {
    use crate::strategies::RaceFuzzer;
    let config = Config {
        max_executions: 300,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let (single, all) = run(&racy(), &mut RaceFuzzer::new(2), &config);
    assert!(single.failing_executions > 0 && !single.real_races.is_empty());
    for n in COUNTS {
        let (union, reports) = counted_by_index(|| RaceFuzzer::new(2), &config, n);
        let single_union: Vec<_> = (0u64..).zip(all.iter().cloned()).collect();
        assert_eq!(union, single_union, "{n}");
        // Each ran the ten detection executions, and counted its own.
        let skipped: u64 = reports.iter().map(|r| r.partition_skipped).sum();
        assert_eq!(skipped, 10 * u64::from(n - 1), "{n}");
        let merged = crate::explorer::partition::merge_reports(&reports);
        assert_eq!(merged.executions, 300, "{n}");
        assert_eq!(merged.strategy_stats, single.strategy_stats, "{n}");
        assert_eq!(merged.real_races, single.real_races, "{n}");
    }
    assert_bugs_merge(RaceFuzzer::new);
}

/// A strategy wrapped to record the index `begin` is given for each
/// execution (a position, for open blocks).
struct Indexed<S>(S, Vec<u64>);

impl<S: Strategy> Strategy for Indexed<S> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn begin(&mut self, index: u64) -> Option<Start> {
        self.1.push(index);
        self.0.begin(index)
    }
    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        self.0.decide(ctx)
    }
    fn observe(&mut self, step: &crate::StepInfo) {
        self.0.observe(step)
    }
    fn end(&mut self, outcome: &Outcome) {
        self.0.end(outcome)
    }
    fn profile(&self) -> Profile {
        self.0.profile()
    }
    fn standing(&self) -> Standing<'_> {
        self.0.standing()
    }
    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        self.0.observe_state(hash)
    }
    fn known_hashes(&self) -> &[Option<[u8; 32]>] {
        self.0.known_hashes()
    }
    fn save_request(&mut self) -> Option<u64> {
        self.0.save_request()
    }
    fn set_length_estimate(&mut self, steps: usize) {
        self.0.set_length_estimate(steps)
    }
    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        self.0.splitting()
    }
}

/// Procrastination's families (a random execution and its procrastinated
/// versions) are open blocks: workers sharing the sizes deal out whole
/// families, and numbered by the sizes their executions are exactly the
/// single run's, under the same global indices, whatever ran where.
#[test]
fn procrastination_families_are_dealt_whole_and_numbered_by_their_sizes() {
    use crate::explorer::blocks::OpenSizes;
    use crate::strategies::Procrastination;
    let config = Config {
        max_executions: 300,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let mut one = Indexed(Procrastination::new(3), Vec::new());
    let (single, all) = run(&racy(), &mut one, &config);
    assert!(single.failing_executions > 0);
    assert_eq!(single.executions, 300);
    // Families of several executions: positions are not plain indices.
    assert!(one.1.iter().any(|&p| p & 0xff_ffff > 0));
    for n in COUNTS {
        let sizes = OpenSizes::new(300);
        let mut ran = Vec::new();
        for k in 0..n {
            let config = Config {
                open_sizes: Some(sizes.clone()),
                ..partitioned(&config, k, n)
            };
            let mut s = Indexed(Procrastination::new(3), Vec::new());
            let (_, paths) = run(&racy(), &mut s, &config);
            ran.extend(s.1.into_iter().zip(paths));
        }
        // Number the positions as the sizes do: a family's executions come
        // after all those of the families below it (every family below the
        // budget's end ran whole, in some partition).
        let mut size = std::collections::BTreeMap::new();
        for (p, _) in &ran {
            *size.entry(p >> 24).or_insert(0u64) += 1;
        }
        let mut start = std::collections::BTreeMap::new();
        let mut next = 0;
        for (family, n) in size {
            start.insert(family, next);
            next += n;
        }
        let mut union: Vec<_> = ran
            .into_iter()
            .map(|(p, path)| (start[&(p >> 24)] + (p & 0xff_ffff), path))
            .filter(|(i, _)| *i < 300)
            .collect();
        union.sort();
        let single_union: Vec<_> = (0u64..).zip(all.iter().cloned()).collect();
        assert_eq!(union, single_union, "{n}");
    }
    // Stopping at the first bug: the lowest failing position is numbered
    // from the sizes as the single run numbers its bug, also when the
    // failing execution ends its family (a failing random execution is not
    // procrastinated), so that its family ends before the bug is known.
    for seed in 0..5 {
        let config = Config {
            max_executions: 1000,
            ..Config::default()
        };
        let (single, _) = run(&racy(), &mut Procrastination::new(seed), &config);
        let expected = single.first_bug().unwrap();
        for n in COUNTS {
            let sizes = OpenSizes::new(1000);
            let lowest = (0..n)
                .filter_map(|k| {
                    let config = Config {
                        open_sizes: Some(sizes.clone()),
                        ..partitioned(&config, k, n)
                    };
                    let (r, _) = run(&racy(), &mut Procrastination::new(seed), &config);
                    r.bugs.into_iter().next()
                })
                .min_by_key(|b| b.execution)
                .unwrap();
            let numbered = sizes.index(lowest.execution - 1).map(|i| i + 1);
            assert_eq!(numbered, Some(expected.execution), "seed {seed}, {n}");
            assert_eq!(lowest.schedule, expected.schedule, "seed {seed}, {n}");
        }
    }
}
