//! `shrink` and `bisect` on fixture bugs: the shrunk schedule replays to the
//! same failure, is 1-minimal (checked here by removing each of its
//! preemptions) and deterministic; bisection's probabilities end at 1,
//! start at the random walk's hit ratio, and its proved sealing point is
//! the one brute force finds.

use std::path::{Path, PathBuf};
use wasmrace_explore::Config;
use wasmrace_host::{
    replay, run_candidate, same_failure, shrink, CheckOptions, Decision, Guest, HostConfig,
    Schedule, ShrinkOptions, StrategyChoice,
};

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasmrace-cache")
}

fn guest(program: &str) -> Guest {
    let config = HostConfig {
        cache_dir: Some(cache_dir()),
        ..HostConfig::default()
    };
    Guest::load(&wasmrace_fixtures::path(program), config)
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// The schedule of the first bug `strategy` finds in `test`.
fn found_by(guest: &Guest, test: &str, strategy: &str, seed: u64) -> Schedule {
    let opts = CheckOptions {
        strategy: StrategyChoice::named(strategy),
        seed,
        explore: Config {
            max_executions: 10_000,
            ..Config::default()
        },
    };
    let out = wasmrace_host::check(guest, test, &opts).unwrap();
    out.bug
        .unwrap_or_else(|| panic!("{strategy} finds no bug in {test}"))
        .schedule
}

/// The decisions of `schedule` with the preemption at 0-based step `k`
/// removed: the preempted thread's next run of steps pulled forward to `k`.
fn without_preemption(ds: &[Decision], k: usize) -> Vec<Decision> {
    let t = ds[k - 1].tid;
    let Some(ns) = (k..ds.len()).find(|&j| ds[j].tid == t) else {
        return ds[..k].to_vec();
    };
    let ne = (ns..ds.len()).find(|&j| ds[j].tid != t).unwrap_or(ds.len());
    [&ds[..k], &ds[ns..ne], &ds[k..ns], &ds[ne..]].concat()
}

/// Shrinks `schedule` and checks everything the result promises.
fn assert_shrinks(guest: &Guest, schedule: &Schedule) -> wasmrace_host::Shrunk {
    let target = schedule.failure.clone().unwrap();
    let small = shrink(guest, schedule, &ShrinkOptions::default()).unwrap();
    assert!(small.one_minimal, "fixed point within the budget");
    assert!(
        small.after <= small.before,
        "{:?} > {:?}",
        small.after,
        small.before
    );
    // It replays exactly, to the same failure.
    let out = replay(guest, &small.schedule, 10_000).unwrap();
    assert!(out.divergence.is_none());
    assert!(out.reproduces(&small.schedule));
    assert!(same_failure(&target, out.failure.as_ref().unwrap()));
    // Its counts are the replay's.
    let preempted: Vec<usize> = out
        .trace
        .iter()
        .enumerate()
        .filter(|(_, e)| e.preemption)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(preempted.len(), small.after.preemptions);
    assert_eq!(out.trace.len(), small.after.steps);
    // 1-minimal: removing any one preemption loses the failure (or keeps
    // the preemptions, when the run that follows needs another).
    let ds = small.schedule.decisions();
    for &k in &preempted {
        let run = run_candidate(guest, &small.schedule, &without_preemption(&ds, k)).unwrap();
        let kept = run
            .failure
            .as_ref()
            .is_some_and(|f| same_failure(&target, f));
        assert!(
            !(kept && run.stats.preemptions < small.after.preemptions),
            "removing the preemption at step {} keeps the failure with {:?}",
            k + 1,
            run.stats
        );
    }
    // Deterministic.
    let again = shrink(guest, schedule, &ShrinkOptions::default()).unwrap();
    assert_eq!(again.schedule, small.schedule);
    assert_eq!(again.candidates, small.candidates);
    small
}

#[test]
fn shrink_lost_update_from_dfs_and_random() {
    let g = guest("lost_update");
    for test in ["lost_update", "lost_update_3"] {
        let dfs = found_by(&g, test, "dfs", 0);
        let small = assert_shrinks(&g, &dfs);
        assert_eq!(
            small.after.preemptions, 1,
            "{test}: a lost update needs one"
        );
        for seed in 0..4 {
            let random = found_by(&g, test, "random", seed);
            let small = assert_shrinks(&g, &random);
            assert_eq!(small.after.preemptions, 1, "{test}, seed {seed}");
        }
    }
}

/// A random walk's bug with 3 preemptions where DFS's has 1 comes down to 1.
#[test]
fn shrink_a_random_walks_three_preemptions() {
    let g = guest("lost_update");
    let (seed, schedule) = (0..200)
        .map(|seed| (seed, found_by(&g, "lost_update_3", "random", seed)))
        .find(|(_, s)| {
            let run = run_candidate(&g, s, &s.decisions()).unwrap();
            run.stats.preemptions >= 3
        })
        .expect("a random walk with 3 preemptions");
    let small = assert_shrinks(&g, &schedule);
    assert!(small.before.preemptions >= 3, "seed {seed}");
    assert_eq!(small.after.preemptions, 1, "seed {seed}");
    assert!(small.after.steps <= small.before.steps);
}

/// Deadlocks and other kinds shrink too: the philosophers' deadlock.
#[test]
fn shrink_keeps_a_deadlock_a_deadlock() {
    let g = guest("philosophers");
    let test = g.tests()[0].clone();
    let schedule = found_by(&g, &test, "random", 1);
    assert_shrinks(&g, &schedule);
}

#[test]
fn shrink_refuses_a_schedule_that_does_not_reproduce() {
    let g = guest("lost_update");
    let mut s = found_by(&g, "lost_update", "dfs", 0);
    s.steps.truncate(3);
    let err = shrink(&g, &s, &ShrinkOptions::default()).unwrap_err();
    assert!(
        matches!(err, wasmrace_host::HostError::NotReproduced { .. }),
        "{err}"
    );
}

// ------------------------------------------------------------------ bisect

use wasmrace_explore::{Explorer, Metrics, Program, Status};
use wasmrace_host::{bisect, BisectOptions, Failure, Sealing, WasmProgram};

/// Whether every completion of `prefix` fails like `target`, by brute
/// force: replay from the start for every path, no snapshots.
fn all_fail(p: &mut WasmProgram, prefix: &mut Vec<Decision>, target: &Failure) -> bool {
    p.reset().unwrap();
    for &d in prefix.iter() {
        p.step(d).unwrap();
    }
    match p.status().clone() {
        Status::Failed(f) => return same_failure(target, &f),
        Status::Finished => return false,
        Status::Running => {}
    }
    let enabled: Vec<Decision> = p
        .threads()
        .iter()
        .filter(|t| t.pending.enabled)
        .flat_map(|t| (0..t.pending.alts).map(move |a| Decision::new(t.tid, a)))
        .collect();
    enabled.into_iter().all(|d| {
        prefix.push(d);
        let all = all_fail(p, prefix, target);
        prefix.pop();
        all
    })
}

#[test]
fn bisect_lost_update_seals_where_brute_force_says() {
    let g = guest("lost_update");
    for test in ["lost_update", "lost_update_3"] {
        let schedule = found_by(&g, test, "random", 1);
        let target = schedule.failure.clone().unwrap();
        let opts = BisectOptions {
            exact: true,
            ..BisectOptions::default()
        };
        let b = bisect(&g, &schedule, &opts).unwrap();
        let n = schedule.steps.len();
        // P after the last step is 1, exactly.
        let last = b.steps.last().unwrap();
        assert_eq!((last.step, last.probability, last.exact), (n, 1.0, true));
        assert_eq!(b.trace.len(), n);
        // The proved sealing point is the first prefix all of whose
        // completions fail.
        let ds = schedule.decisions();
        let mut p = g.program(test).unwrap();
        let brute = (0..=n)
            .find(|&k| all_fail(&mut p, &mut ds[..k].to_vec(), &target))
            .unwrap();
        match b.sealed {
            Sealing::Proved { step, completions } => {
                assert_eq!(step, brute, "{test}");
                assert!(completions >= 1);
            }
            other => panic!("{test}: not proved: {other:?}"),
        }
        // The estimates agree: 1 from the sealing point on, below 1 before.
        for s in &b.steps {
            if s.step >= brute {
                assert_eq!(s.probability, 1.0, "{test}, step {}", s.step);
            } else if s.exact {
                assert!(s.probability < 1.0, "{test}, step {}", s.step);
            }
        }
        // The largest jump ends at 1 or on the way there, with the
        // alternatives estimated.
        let d = &b.decisive[0];
        assert!(d.probability_after > d.probability_before);
        assert!(!d.alternatives.is_empty());
        // Deterministic for a seed.
        let again = bisect(&g, &schedule, &opts).unwrap();
        assert_eq!(again.steps, b.steps);
        assert_eq!(again.decisive, b.decisive);
    }
}

/// P(0) is the random walk's hit ratio, within sampling error.
#[test]
fn bisect_starts_at_the_random_walks_hit_ratio() {
    let g = guest("lost_update");
    let schedule = found_by(&g, "lost_update", "random", 1);
    let opts = BisectOptions {
        samples: 1000,
        seed: 5,
        ..BisectOptions::default()
    };
    let b = bisect(&g, &schedule, &opts).unwrap();
    let p0 = &b.steps[0];
    assert_eq!(p0.step, 0);
    assert_eq!(p0.samples, 1000);
    let config = Config {
        max_executions: 4000,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let mut explorer = Explorer::new(g.program("lost_update").unwrap(), config);
    let mut metrics = Metrics::new();
    let mut walk = wasmrace_host::strategies::RandomWalk::new(11);
    explorer.run_observed(&mut walk, &mut metrics).unwrap();
    let ratio = metrics.failing_executions() as f64 / metrics.executions() as f64;
    // Standard errors 0.016 (1000 samples) and 0.008 (4000): 4 sigma.
    assert!(
        (p0.probability - ratio).abs() < 0.075,
        "P(0) = {}, random walk {ratio}",
        p0.probability
    );
    // A different seed draws other samples.
    let other = bisect(&g, &schedule, &BisectOptions { seed: 6, ..opts }).unwrap();
    assert_ne!(other.steps[0].probability, p0.probability);
}
