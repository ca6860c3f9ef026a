//! Work stealing on models: N workers sharing one DFS tree through a
//! `SubtreePool` explore exactly the executions of the single run, each
//! once, with the same verdict, and report the single run's first bug,
//! however the threads happen to interleave.

use super::{reg, Model, ModelBuilder};
use crate::explorer::steal::SubtreePool;
use crate::explorer::{Partition, Report};
use crate::observer::Observer;
use crate::strategies::Dfs;
use crate::strategy::{Outcome, Strategy};
use crate::{Config, DfsOptions, Explorer};
use wasmrace_trace::Decision;

use super::partition_tests::racy;

/// A thread adds to `y` under a lock, another increments it without one
/// and reads it once more: hundreds of schedules, those that split the
/// read and its write by the addition losing an update.
pub(crate) fn three() -> Model {
    let mut b = ModelBuilder::new();
    let y = b.var("y", 0);
    let l = b.mutex("l");
    let locked = b.thread("locked", |t| {
        t.lock(l).fetch_add(y, 1, 0).unlock(l).lock(l).unlock(l);
    });
    let plain = b.thread("plain", |t| {
        t.read(y, 1).write(y, reg(1) + 1).fetch_add(y, 0, 2);
    });
    b.main(|t| {
        t.spawn(locked, 0)
            .spawn(plain, 1)
            .join(reg(0))
            .join(reg(1))
            .read(y, 3)
            .assert(reg(3).ge(2), "lost update of y");
    });
    b.build().unwrap()
}

/// The executions an observer saw end, abandoned ones left out.
#[derive(Default)]
pub(crate) struct Paths(pub(crate) Vec<Vec<Decision>>);

impl Observer for Paths {
    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        if *outcome != Outcome::Abandoned {
            self.0.push(path.to_vec());
        }
    }
}

fn dfs(bound: Option<u32>) -> Dfs {
    Dfs::new(DfsOptions {
        preemption_bound: bound,
    })
}

/// One run on one thread, with its executions.
fn single(model: &Model, bound: Option<u32>, config: &Config) -> (Report, Vec<Vec<Decision>>) {
    single_with(model, config, &mut dfs(bound))
}

/// One run of `strategy` on one thread, with its executions.
pub(crate) fn single_with(
    model: &Model,
    config: &Config,
    strategy: &mut dyn Strategy,
) -> (Report, Vec<Vec<Decision>>) {
    let mut explorer = Explorer::new(model.clone(), config.clone());
    let mut paths = Paths::default();
    let report = explorer.run_observed(strategy, &mut paths).unwrap();
    (report, paths.0)
}

/// One run on `n` workers sharing a pool: the merged report and every
/// worker's executions. Calls take turns with a plain pool, an eager one
/// (subtrees change hands between any two executions), an eager one that
/// folds finished stretches after every execution, and ones eager at
/// every third and seventh chance (longer stretches, with hand-overs
/// within them: a worker explores several subtrees it deferred in a row).
fn shared(
    model: &Model,
    bound: Option<u32>,
    config: &Config,
    n: usize,
) -> (Report, Vec<Vec<Decision>>) {
    shared_with(model, config, n, &|| Box::new(dfs(bound)))
}

/// Like [`shared`], for the strategy `make` builds (one per worker).
pub(crate) fn shared_with(
    model: &Model,
    config: &Config,
    n: usize,
    make: &(dyn Fn() -> Box<dyn Strategy> + Sync),
) -> (Report, Vec<Vec<Decision>>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let pool = match CALLS.fetch_add(1, Ordering::Relaxed) % 5 {
        0 => SubtreePool::new(n),
        1 => SubtreePool::eager(n),
        2 => SubtreePool::eager(n).folding_every(1),
        3 => SubtreePool::eager_every(n, 3),
        _ => SubtreePool::eager_every(n, 7),
    };
    // Workers start together, or the first may be done before the others.
    let together = std::sync::Barrier::new(n);
    let parts: Vec<(Report, Vec<Vec<Decision>>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut explorer = Explorer::new(model.clone(), config.clone());
                    let mut paths = Paths::default();
                    together.wait();
                    let report = explorer
                        .run_shared(&mut *make(), &mut paths, &pool)
                        .unwrap();
                    (report, paths.0)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let reports: Vec<Report> = parts.iter().map(|(r, _)| r.clone()).collect();
    let paths = parts.into_iter().flat_map(|(_, p)| p).collect();
    (pool.settle(&reports, config), paths)
}

const WORKERS: [usize; 4] = [1, 2, 3, 7];
const BOUNDS: [Option<u32>; 4] = [None, Some(0), Some(1), Some(2)];

#[test]
fn workers_explore_the_single_run_each_execution_once() {
    let config = Config {
        stop_on_first_bug: false,
        ..Config::default()
    };
    // Keeping only the first two bugs: the workers keep the two one
    // thread keeps, numbered as it numbers them.
    let capped = Config {
        max_bugs_kept: 2,
        ..config.clone()
    };
    let mut bit = false;
    for model in [racy(), three()] {
        for bound in BOUNDS {
            let (one, mut all) = single(&model, bound, &config);
            let (one_capped, _) = single(&model, bound, &capped);
            assert!(
                one.exhausted,
                "{bound:?} {} {:?}",
                one.executions, one.stopped_by
            );
            assert_eq!(one_capped.bugs[..], one.bugs[..one.bugs.len().min(2)]);
            bit |= one.bugs.len() > 2;
            all.sort();
            for n in WORKERS {
                // Thread timing differs from run to run; results must not.
                for rep in 0..3 {
                    let (config, one) = match rep {
                        1 => (&capped, &one_capped),
                        _ => (&config, &one),
                    };
                    let (r, mut paths) = shared(&model, bound, config, n);
                    let what = format!("bound {bound:?}, {n} workers");
                    assert_eq!(r.executions, paths.len() as u64, "{what}");
                    paths.sort();
                    assert_eq!(paths, all, "{what}: the same executions, none twice");
                    assert_eq!(r.executions, one.executions, "{what}");
                    assert_eq!(r.failing_executions, one.failing_executions, "{what}");
                    assert!(r.exhausted, "{what}");
                    assert_eq!(r.strategy_bound, one.strategy_bound, "{what}");
                    let first = |r: &Report| r.first_bug().map(|b| b.schedule.clone());
                    assert_eq!(
                        first(&r),
                        first(one),
                        "{what}: the first bug in search order"
                    );
                    let bugs = |r: &Report| {
                        (r.bugs.iter())
                            .map(|b| (b.schedule.clone(), b.execution))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bugs(&r), bugs(one), "{what}: every bug, numbered");
                }
            }
        }
    }
    assert!(bit, "some run finds more bugs than the capped runs keep");
    let (big, _) = single(&three(), None, &config);
    assert!(big.executions > 500, "{}", big.executions);
}

#[test]
fn workers_stopping_at_a_bug_report_the_single_runs_first_bug() {
    for model in [racy(), three()] {
        for bound in BOUNDS {
            let (one, _) = single(&model, bound, &Config::default());
            let Some(expected) = one.first_bug() else {
                // A bound of 0 keeps `three`'s lost update out of reach.
                assert_eq!(bound, Some(0));
                continue;
            };
            for n in WORKERS {
                for _ in 0..3 {
                    let (r, _) = shared(&model, bound, &Config::default(), n);
                    let what = format!("bound {bound:?}, {n} workers");
                    let bug = r.first_bug().expect(&what);
                    assert_eq!(bug.schedule, expected.schedule, "{what}");
                    assert_eq!(bug.failure, expected.failure, "{what}");
                    assert_eq!(bug.order_key, expected.order_key, "{what}");
                    assert_eq!(r.bugs.len(), 1, "{what}");
                    assert!(!r.exhausted, "{what}: stopped at the bug, as one run");
                    // Numbered as one run numbers it, whoever ran what.
                    assert_eq!(bug.execution, expected.execution, "{what}");
                    assert_eq!(r.executions, one.executions, "{what}");
                    assert_eq!(r.strategy_bound, one.strategy_bound, "{what}");
                }
            }
        }
    }
}

/// `--max-executions` cuts the shared search where one run stops: the
/// workers run (at least) the single run's first executions, report
/// exactly the budget, and the single run's bugs, failing executions and
/// bound within it.
#[test]
fn workers_cut_the_budget_where_one_run_does_and_share_a_partition() {
    // The last keeps only 3 of the bugs, and counts them all.
    let mut bit = false;
    for (max, stop, keep) in [
        (100, false, 1000),
        (7, true, 1000),
        (40, true, 1000),
        (300, true, 1000),
        (100, false, 3),
    ] {
        let config = Config {
            max_executions: max,
            stop_on_first_bug: stop,
            max_bugs_kept: keep,
            ..Config::default()
        };
        for bound in BOUNDS {
            let (one, first) = single(&three(), bound, &config);
            assert!(one.bugs.len() <= keep);
            bit |= one.failing_executions > keep as u64;
            for n in WORKERS {
                let what = format!("budget {max}, bound {bound:?}, {n} workers");
                let (r, mut paths) = shared(&three(), bound, &config, n);
                assert_eq!(r.executions, one.executions, "{what}");
                assert_eq!(r.stopped_by, one.stopped_by, "{what}");
                assert_eq!(r.exhausted, one.exhausted, "{what}");
                assert_eq!(r.strategy_bound, one.strategy_bound, "{what}");
                let bugs = |r: &Report| {
                    (r.bugs.iter())
                        .map(|b| (b.schedule.clone(), b.execution))
                        .collect::<Vec<_>>()
                };
                assert_eq!(bugs(&r), bugs(&one), "{what}");
                assert_eq!(r.failing_executions, one.failing_executions, "{what}");
                paths.sort();
                for p in &first {
                    assert!(paths.binary_search(p).is_ok(), "{what}: {p:?} not run");
                }
            }
        }
    }
    assert!(bit, "some run fails more often than it keeps bugs");
    // Workers within each of the partitions of `--partition K/N`.
    let whole = Config {
        stop_on_first_bug: false,
        split_depth: 5,
        ..Config::default()
    };
    let (one, mut all) = single(&three(), Some(1), &whole);
    all.sort();
    for parts in [2, 3] {
        let mut union = Vec::new();
        let mut executions = 0;
        for k in 0..parts {
            let config = Config {
                partition: Partition::new(k, parts),
                ..whole.clone()
            };
            let (r, paths) = shared(&three(), Some(1), &config, 2);
            assert!(r.exhausted);
            executions += r.executions;
            union.extend(paths);
        }
        union.sort();
        assert_eq!(union, all, "{parts} partitions of 2 workers");
        assert_eq!(executions, one.executions);
    }
}
