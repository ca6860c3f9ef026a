//! SES on several threads, on models: N workers running each round's
//! executions side by side report exactly what one thread reports
//! (executions, verdict, every bug and its number, the budget's cut, the
//! delay bound's, states explored, cache hits and evictions, frontier
//! counts), however the threads interleave: with the cache, with a cache
//! so small that states a worker stopped at are evicted before its
//! execution is counted (`ses/rounds.rs`: run again), and without one.

use super::lasso_tests::polite;
use super::partition_tests::racy;
use super::shared_cache_tests::{converging, livelocked, on_workers, spinning, verdict, waiting};
use super::steal_tests::three;
use super::Model;
use crate::explorer::Report;
use crate::state_cache::StateCache;
use crate::strategies::{BuiltinExplorer, ExplorerKind, Ses, SesOptions};
use crate::{Config, Explorer, Splitting};

/// A way to build the same SES for every worker.
#[derive(Clone, Copy, Debug)]
struct Setup {
    explorer: ExplorerKind,
    delay_bound: Option<u32>,
    /// The cache's cap in hashes; `None`: off.
    slots: Option<usize>,
}

impl Setup {
    fn ses(&self) -> Ses<BuiltinExplorer> {
        let opts = SesOptions {
            delay_bound: self.delay_bound,
            cache_mb: u64::from(self.slots.is_some()),
        };
        let ses = Ses::new(self.explorer.build(7), 7, opts);
        match self.slots {
            Some(n) => ses.with_cache(StateCache::with_slots(n)),
            None => ses,
        }
    }
}

fn single(model: &Model, setup: Setup, config: &Config) -> Report {
    Explorer::new(model.clone(), config.clone())
        .run(&mut setup.ses())
        .unwrap()
}

/// One run on `n` workers sharing the pool one of their strategies made.
fn rounds(model: &Model, setup: Setup, config: &Config, n: usize) -> Report {
    let pool = setup.ses().rounds(config, n).expect("ses runs in rounds");
    let reports = on_workers(n, model, config, |explorer| {
        explorer
            .run_rounds(&mut setup.ses(), &mut (), &mut |_| {}, &pool)
            .unwrap()
    });
    pool.settle(&reports, config)
}

fn models() -> Vec<(&'static str, Model)> {
    vec![
        ("three", three()),
        ("racy", racy()),
        ("converging", converging()),
        ("spinning", spinning()),
        ("waiting", waiting()),
        ("livelocked", livelocked()),
        ("polite", polite()),
    ]
}

/// Runs to their end or cut by a budget, stopping at the first bug or
/// going on (the bugs kept capped), with executions at most `max_steps`
/// long.
fn configs(max_steps: u64) -> Vec<Config> {
    [(true, 2_000), (false, 2_000), (true, 1), (false, 40)]
        .into_iter()
        .map(|(stop, max)| Config {
            stop_on_first_bug: stop,
            max_bugs_kept: 5,
            max_executions: max,
            max_steps,
            ..Config::default()
        })
        .collect()
}

fn assert_same_as_one_thread(setups: &[Setup], max_steps: u64) {
    let mut compared = 0;
    for (name, model) in models() {
        for setup in setups {
            for config in configs(max_steps) {
                let one = verdict(&single(&model, *setup, &config));
                for n in [1, 2, 7] {
                    let many = verdict(&rounds(&model, *setup, &config, n));
                    assert_eq!(
                        one, many,
                        "{name}, {setup:?}, {n} workers, budget {}, stop {}",
                        config.max_executions, config.stop_on_first_bug
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 0);
}

#[test]
fn workers_report_what_one_thread_reports() {
    let mut setups = Vec::new();
    for explorer in [
        ExplorerKind::RunToCompletion,
        ExplorerKind::RoundRobin,
        ExplorerKind::ProbabilisticRoundRobin,
    ] {
        for delay_bound in [None, Some(2)] {
            setups.push(Setup {
                explorer,
                delay_bound,
                slots: Some(1 << 12),
            });
        }
    }
    assert_same_as_one_thread(&setups, 10_000);
}

#[test]
fn evicted_states_are_explored_on_as_one_thread_does() {
    let setups: Vec<Setup> = [8, 16, 64]
        .into_iter()
        .map(|slots| Setup {
            explorer: ExplorerKind::RoundRobin,
            delay_bound: None,
            slots: Some(slots),
        })
        .collect();
    // The small caches do evict (else this tests nothing new).
    let one = single(&converging(), setups[0], &Config::default());
    let evictions = one
        .strategy_stats
        .iter()
        .find(|s| s.name == "cache evictions");
    assert!(
        evictions.is_some_and(|s| s.value > 0),
        "{:?}",
        one.strategy_stats
    );
    assert_same_as_one_thread(&setups, 10_000);
}

#[test]
fn without_a_cache_every_execution_runs_to_its_end() {
    assert_same_as_one_thread(
        &[Setup {
            explorer: ExplorerKind::RoundRobin,
            delay_bound: Some(3),
            slots: None,
        }],
        300,
    );
}

#[test]
fn a_worker_that_leaves_early_stops_the_run() {
    let setup = Setup {
        explorer: ExplorerKind::RoundRobin,
        delay_bound: None,
        slots: Some(1 << 12),
    };
    let config = Config::default();
    let pool = setup.ses().rounds(&config, 2).unwrap();
    // Another worker failed before running what it took: nobody waits.
    pool.leave();
    let report = Explorer::new(converging(), config.clone())
        .run_rounds(&mut setup.ses(), &mut (), &mut |_| {}, &pool)
        .unwrap();
    assert_eq!(report.executions, 0);
    let settled = pool.settle(&[report], &config);
    assert!(!settled.exhausted);
    assert_eq!(settled.executions, 0);
}

#[test]
fn a_workers_counters_are_the_runs() {
    let setup = Setup {
        explorer: ExplorerKind::RoundRobin,
        delay_bound: None,
        slots: Some(1 << 12),
    };
    let config = Config::default();
    let mut one = setup.ses();
    Explorer::new(converging(), config.clone())
        .run(&mut one)
        .unwrap();
    let pool = setup.ses().rounds(&config, 2).unwrap();
    let workers = on_workers(2, &converging(), &config, |explorer| {
        let mut ses = setup.ses();
        explorer
            .run_rounds(&mut ses, &mut (), &mut |_| {}, &pool)
            .unwrap();
        ses
    });
    assert!(one.states_explored() > 10);
    for w in &workers {
        let counters = |s: &Ses<BuiltinExplorer>| {
            (
                s.states_explored(),
                s.cache_hits(),
                s.delay_bound(),
                s.frontier_total(),
                s.frontier_peak(),
            )
        };
        assert_eq!(counters(w), counters(&one));
    }
}
