//! The TruSt-style search against unbounded DFS on models: the same
//! partial orders, each once (wasted, infeasible and repeated runs aside).

use super::*;
use crate::strategies::systematic::dpor::tests::{
    dfs_reference, measure, random_model, ring, two_phase,
};
use crate::strategies::Dfs;
use crate::strategies::Dpor;

/// Asserts that the search covers exactly the orders unbounded DFS
/// covers, each once; `None` when DFS does not exhaust within `budget`.
fn assert_exact(
    name: &str,
    model: impl Fn() -> crate::model::Model,
    budget: u64,
) -> Option<(usize, u64)> {
    let dfs = dfs_reference(model(), budget)?;
    let mut t = Trust::new();
    let (m, r) = measure(model(), &mut t, budget);
    assert!(r.exhausted, "{name}: did not exhaust");
    let missing: Vec<_> = dfs.order_hashes().difference(m.order_hashes()).collect();
    let extra: Vec<_> = m.order_hashes().difference(dfs.order_hashes()).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{name}: {} missing, {} extra",
        missing.len(),
        extra.len()
    );
    let counted = m.executions() - m.abandoned_executions() - t.repeated();
    assert_eq!(
        counted,
        m.distinct_orders() as u64,
        "{name}: repeats ({} wasted, {} infeasible)",
        t.wasted(),
        t.infeasible()
    );
    Some((dfs.distinct_orders(), m.executions()))
}

#[test]
fn ring_of_three_has_seven_traces() {
    let (orders, runs) = assert_exact("ring", ring, 1_000_000).unwrap();
    assert_eq!((orders, runs), (7, 7));
}

#[test]
fn random_programs_cover_what_dfs_covers() {
    let mut checked = 0;
    for seed in 0..60 {
        if assert_exact(&format!("seed {seed}"), || random_model(seed), 30_000).is_some() {
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

/// The wider check, by hand (`cargo test -p wasmrace-explore trust::tests::survey
/// -- --ignored --nocapture`): 200 random programs, printing any that
/// differ from DFS.
#[test]
#[ignore]
fn survey() {
    let (mut checked, mut orders, mut runs, mut wasted) = (0, 0, 0, 0);
    for seed in 0..200 {
        let (dfs, r) = measure(random_model(seed), &mut Dfs::unbounded(), 30_000);
        if !r.exhausted {
            continue;
        }
        checked += 1;
        let mut t = Trust::new();
        let (m, _) = measure(random_model(seed), &mut t, 100_000);
        let missing = dfs.order_hashes().difference(m.order_hashes()).count();
        let extra = m.order_hashes().difference(dfs.order_hashes()).count();
        let counted = m.executions() - m.abandoned_executions() - t.repeated();
        let dups = counted - m.distinct_orders() as u64;
        orders += m.distinct_orders() as u64;
        runs += m.executions();
        wasted += t.wasted();
        if missing + extra > 0 || dups > 0 {
            println!("seed {seed}: orders {} missing {missing} extra {extra} dups {dups} wasted {} infeasible {}", dfs.distinct_orders(), t.wasted(), t.infeasible());
        }
    }
    println!("{checked} programs: {orders} orders in {runs} runs, {wasted} wasted");
}

/// Messages, `choose` and waiting receives: two participants against DFS,
/// three against optimal DPOR (the same orders).
#[test]
fn two_phase_commit_shape() {
    let (orders, runs) = assert_exact("two_phase(2)", || two_phase(2), 1_000_000).unwrap();
    println!("two_phase(2): {orders} orders in {runs} runs");
    let (opt, _) = measure(two_phase(3), &mut Dpor::optimal(), 1_000_000);
    let mut t = Trust::new();
    let (m, r) = measure(two_phase(3), &mut t, 1_000_000);
    assert!(r.exhausted);
    assert_eq!(m.order_hashes(), opt.order_hashes());
    println!(
        "two_phase(3): {} orders in {} runs ({} wasted, {} infeasible, {} repeated)",
        m.distinct_orders(),
        m.executions(),
        t.wasted(),
        t.infeasible(),
        t.repeated()
    );
}

/// Nothing flows between jobs: taken in any order, they run the same
/// executions (the same orders, as many runs, as many wasted).
#[test]
fn jobs_taken_in_any_order_run_the_same_executions() {
    for seed in 0..30 {
        let mut lifo = Trust::new();
        let (a, _) = measure(random_model(seed), &mut lifo, 100_000);
        for shuffle in [1, 7] {
            let mut any = Trust::shuffled(shuffle);
            let (b, r) = measure(random_model(seed), &mut any, 100_000);
            assert!(r.exhausted, "seed {seed}");
            assert_eq!(a.order_hashes(), b.order_hashes(), "seed {seed}");
            assert_eq!(
                (a.executions(), lifo.wasted(), lifo.infeasible()),
                (b.executions(), any.wasted(), any.infeasible()),
                "seed {seed}"
            );
        }
    }
}

/// The models the runs split between threads and partitions explore: a
/// race with a `choose`, three threads, messages with waiting receives,
/// and two random programs.
fn split_models() -> [crate::model::Model; 5] {
    use crate::model::partition_tests::racy;
    use crate::model::steal_tests::three;
    [
        racy(),
        three(),
        two_phase(2),
        random_model(3),
        random_model(11),
    ]
}

/// Workers sharing a pool (`check --jobs`) run the one-thread run's
/// executions between them, each once, and report what it reports: the
/// same count, verdict and bugs numbered as it numbers them, when the run
/// goes on past its bugs, stops at its first, or is cut by the budget;
/// whatever the timing (pools of every eagerness, 1 to 7 workers).
#[test]
fn workers_sharing_a_pool_report_the_one_thread_run() {
    use crate::model::steal_tests::{shared_with, single_with};
    use crate::Config;
    let models = split_models();
    let bugs = |r: &crate::explorer::Report| {
        (r.bugs.iter())
            .map(|b| (b.schedule.clone(), b.execution, b.order_key.clone()))
            .collect::<Vec<_>>()
    };
    let mut cut = 0;
    for (m, model) in models.iter().enumerate() {
        for (max, stop) in [(100_000, false), (100_000, true), (7, false), (40, true)] {
            let config = Config {
                max_executions: max,
                stop_on_first_bug: stop,
                ..Config::default()
            };
            let (one, mut all) = single_with(model, &config, &mut Trust::new());
            all.sort();
            cut += u32::from(one.stopped_by.is_some());
            for n in [1, 2, 3, 7] {
                let what = format!("model {m}, budget {max}, stop {stop}, {n} workers");
                let (r, mut paths) = shared_with(model, &config, n, &|| Box::new(Trust::new()));
                assert_eq!(r.executions, one.executions, "{what}");
                assert_eq!(r.exhausted, one.exhausted, "{what}");
                assert_eq!(r.stopped_by, one.stopped_by, "{what}");
                assert_eq!(bugs(&r), bugs(&one), "{what}");
                assert_eq!(r.failing_executions, one.failing_executions, "{what}");
                paths.sort();
                if one.exhausted {
                    assert_eq!(paths, all, "{what}: the same executions, none twice");
                } else {
                    // Workers may run past a bug or the budget; they run
                    // at least what one thread runs.
                    for p in &all {
                        assert!(paths.binary_search(p).is_ok(), "{what}: {p:?} not run");
                    }
                }
            }
        }
    }
    assert!(cut > 0, "some run is cut by its budget");
}

/// `Trust::default()` is `Trust::new()`: it explores the whole space,
/// rather than stopping at its first job with a frontier of 0 bytes; and
/// a frontier too small for the first children stops, not exhausted.
#[test]
fn default_is_new_and_a_full_frontier_stops() {
    let (m, r) = measure(ring(), &mut Trust::default(), 1000);
    assert!(r.exhausted);
    assert_eq!(m.executions(), 7);
    let mut tiny = Trust::with_frontier_mb(0);
    let (m, r) = measure(ring(), &mut tiny, 1000);
    assert!(!r.exhausted);
    assert_eq!(m.executions(), 1);
    assert_eq!(r.strategy_bound.map(|b| b.knob), Some("--frontier-mb"));
}

/// Partitions (`--partition K/N`) run the one-thread run's executions
/// between them, each in exactly one, whatever the split depth: each
/// exhausts its share, the counts (executions, failing ones, wasted runs)
/// add up to the single run's, and the bug with the smallest order key
/// (the merge's rule) is the one the single run stops at. Also with the
/// threads of each partition sharing a pool.
#[test]
fn partitions_split_the_one_thread_run() {
    use crate::explorer::partition::first_of;
    use crate::model::steal_tests::{shared_with, single_with};
    use crate::{Config, Partition};
    let models = split_models();
    let mut split = 0;
    for (m, model) in models.iter().enumerate() {
        for depth in [0, 1, 2, 3, 40] {
            let config = Config {
                stop_on_first_bug: false,
                split_depth: depth,
                ..Config::default()
            };
            let mut t = Trust::new();
            let (one, mut all) = single_with(model, &config, &mut t);
            assert!(one.exhausted, "model {m}");
            all.sort();
            for n in [1, 2, 3, 7] {
                let what = format!("model {m}, depth {depth}, {n} partitions");
                let (mut union, mut executions, mut failing, mut wasted) = (Vec::new(), 0, 0, 0);
                let mut sizes = Vec::new();
                for k in 0..n {
                    let config = Config {
                        partition: Partition::new(k, n),
                        ..config.clone()
                    };
                    let mut part = Trust::new();
                    let (r, paths) = if k % 2 == 0 {
                        single_with(model, &config, &mut part)
                    } else {
                        shared_with(model, &config, 2, &|| Box::new(Trust::new()))
                    };
                    assert!(r.exhausted, "{what}: partition {k} exhausts its share");
                    executions += r.executions;
                    failing += r.failing_executions;
                    if k % 2 == 0 {
                        wasted += part.wasted();
                    }
                    sizes.push(r.executions);
                    union.extend(paths);
                }
                union.sort();
                // Wasted runs are abandoned, so not among the paths: the
                // counts below say they add up too.
                assert_eq!(union, all, "{what}: the same executions, each once");
                assert_eq!(executions, one.executions, "{what}");
                assert_eq!(failing, one.failing_executions, "{what}");
                if n == 1 {
                    assert_eq!(wasted, t.wasted(), "{what}");
                }
                split += u32::from(sizes.iter().filter(|&&s| s > 0).count() > 1);
            }
        }
        // Stopping at the first bug: the merge's bug is the single run's.
        let config = Config {
            split_depth: 2,
            ..Config::default()
        };
        let (one, _) = single_with(model, &config, &mut Trust::new());
        for n in [2, 3, 7] {
            let bugs: Vec<_> = (0..n)
                .flat_map(|k| {
                    let config = Config {
                        partition: Partition::new(k, n),
                        ..config.clone()
                    };
                    single_with(model, &config, &mut Trust::new()).0.bugs
                })
                .collect();
            let first = first_of(&bugs).map(|b| (b.schedule.clone(), b.order_key.clone()));
            let want = one
                .bugs
                .first()
                .map(|b| (b.schedule.clone(), b.order_key.clone()));
            assert_eq!(first, want, "model {m}, {n} partitions: the first bug");
        }
    }
    assert!(split > 20, "partitions share the work ({split} splits)");
}

/// A revisit with more optional events than are enumerated is left out,
/// counted and said: the run is not exhausted (past 16 it was an
/// assertion, which a guest with many writers of one object could reach
/// to crash the host). With the cap at 0, the random programs that have
/// optional events stop short; the others are still exact.
#[test]
fn a_revisit_left_out_is_counted_and_not_exhausted() {
    let mut left_out = 0;
    for seed in 0..60 {
        let mut capped = Trust {
            max_optional: 0,
            ..Trust::new()
        };
        let (_, r) = measure(random_model(seed), &mut capped, 100_000);
        if capped.counts.unplaced > 0 {
            left_out += 1;
            assert!(!r.exhausted, "seed {seed}");
            let stat = capped
                .stats()
                .into_iter()
                .find(|s| s.name.starts_with("revisits left out"));
            assert_eq!(
                stat.map(|s| s.value),
                Some(capped.counts.unplaced),
                "seed {seed}"
            );
        } else if let Some(dfs) = dfs_reference(random_model(seed), 30_000) {
            assert!(r.exhausted, "seed {seed}");
            let (m, _) = measure(random_model(seed), &mut Trust::new(), 100_000);
            assert_eq!(m.order_hashes(), dfs.order_hashes(), "seed {seed}");
        }
    }
    assert!(left_out > 0, "some program has optional events");
}
