//! Livelocks a state cache closes: an execution cut at a state of its own
//! path, round a cycle every enabled thread takes part in, livelocks, and
//! its path includes the steps before the saved state SES started it from
//! (`explorer/saved.rs` keeps their hashes with the prefix). Without them
//! SES went round the cycle of a polite-backoff livelock only from saved
//! states below its start, found the start cached each time, and reported
//! the space exhausted with no bug. On random looping programs SES finds
//! the livelocks cached DFS finds (which closes every cycle it reaches on
//! some path: a back edge of its search); those programs did not show the
//! gap above, the polite model does.

use super::{reg, Model, ModelBuilder, ThreadBuilder};
use crate::state_cache::StateCache;
use crate::strategies::{BuiltinExplorer, ExplorerKind, Ses, SesOptions};
use crate::{Config, Dfs, DfsOptions, Explorer, Report, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wasmrace_trace::FailureKind;

const EXPLORERS: [ExplorerKind; 3] = [
    ExplorerKind::RunToCompletion,
    ExplorerKind::RoundRobin,
    ExplorerKind::ProbabilisticRoundRobin,
];

/// SES under `explorer` with a cache that does not evict here.
fn ses(explorer: ExplorerKind) -> Ses<BuiltinExplorer> {
    let options = SesOptions {
        delay_bound: None,
        cache_mb: 1,
    };
    Ses::new(explorer.build(7), 7, options).with_cache(StateCache::with_slots(1 << 16))
}

/// Unbounded DFS with a cache that does not evict here: every cycle it
/// can reach closes on some path (a back edge of the search).
fn cached_dfs() -> Dfs {
    Dfs::new(DfsOptions {
        preemption_bound: None,
    })
    .with_state_cache(256)
}

/// Two threads that each raise their own flag, back off (lower it and
/// yield) while the other's is raised, and pass once it is not: in
/// lockstep they back off for ever, a livelock every fair scheduler can
/// keep up; any other schedule lets one through.
pub(super) fn polite() -> Model {
    let mut b = ModelBuilder::new();
    let (a, c, z) = (b.var("a", 0), b.var("c", 0), b.var("z", 0));
    let backoff = |mine, theirs| {
        move |t: &mut ThreadBuilder| {
            t.label("top")
                .write(mine, 1)
                .read(theirs, 0)
                .when(reg(0).equals(1), |t| {
                    t.write(mine, 0).yield_now();
                })
                .jump_if(reg(0).equals(1), "top")
                .fetch_add(z, 1, 1)
                .write(mine, 0);
        }
    };
    let left = b.thread("left", backoff(a, c));
    let right = b.thread("right", backoff(c, a));
    b.main(|t| {
        t.spawn_each(&[left, right]).join_each(2);
    });
    b.build().unwrap()
}

fn run(strategy: &mut dyn Strategy) -> Report {
    let config = Config {
        max_executions: 200_000,
        max_steps: 2_000,
        ..Config::default()
    };
    Explorer::new(polite(), config).run(strategy).unwrap()
}

fn assert_livelock(name: &str, r: &Report) {
    let bug = r.bugs.first();
    assert!(
        bug.is_some_and(|b| b.failure.kind == FailureKind::Livelock),
        "{name}: {} executions, exhausted {}, bugs {:?}",
        r.executions,
        r.exhausted,
        r.bugs
            .iter()
            .map(|b| &b.failure.message)
            .collect::<Vec<_>>()
    );
    let message = &bug.unwrap().failure.message;
    assert!(
        message.contains("lead back to the state after step"),
        "{name}: {message}"
    );
}

#[test]
fn ses_sees_a_cycle_back_above_the_saved_state_it_started_from() {
    assert_livelock("dfs", &run(&mut cached_dfs()));
    for explorer in EXPLORERS {
        let r = run(&mut ses(explorer));
        assert_livelock(&format!("ses, {explorer:?}"), &r);
        // Past round 0 every execution starts from a saved state.
        assert!(
            r.saved_with_snapshot + r.saved_as_prefix > 0,
            "{explorer:?}"
        );
    }
}

/// A random program of 2 or 3 threads, each looping: a few reads,
/// writes and increments of three variables, then a read of one of them,
/// and while it holds a given value, maybe the first write undone, a
/// yield and round again. Some schedules (or all) keep some thread
/// looping for ever.
fn random_loops(seed: u64) -> Model {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = ModelBuilder::new();
    let vars = [b.var("x", 0), b.var("y", 0), b.var("z", 0)];
    let threads = rng.random_range(2..=3);
    let mut defs = Vec::new();
    for i in 0..threads {
        let plan: Vec<(u32, usize, i64)> = (0..rng.random_range(1..=3))
            .map(|_| {
                let kind = rng.random_range(0..3);
                (kind, rng.random_range(0..3), rng.random_range(0..2))
            })
            .collect();
        let (wait_on, wait_for) = (vars[rng.random_range(0..3)], rng.random_range(0..2));
        let undo = rng.random_bool(0.5);
        defs.push(b.thread(&format!("t{i}"), |t| {
            t.label("top");
            for &(kind, v, value) in &plan {
                match kind {
                    0 => t.read(vars[v], 0),
                    1 => t.write(vars[v], value),
                    _ => t.fetch_add(vars[v], 1, 0),
                };
            }
            t.read(wait_on, 3).when(reg(3).equals(wait_for), |t| {
                if let (true, (1, v, value)) = (undo, plan[0]) {
                    t.write(vars[v], 1 - value);
                }
                t.yield_now().jump("top");
            });
        }));
    }
    b.main(|m| {
        m.spawn_each(&defs).join_each(defs.len());
    });
    b.build().unwrap()
}

fn livelocks(r: &Report) -> bool {
    r.bugs
        .iter()
        .any(|b| b.failure.kind == FailureKind::Livelock)
}

#[test]
fn ses_finds_the_livelocks_cached_dfs_finds_on_random_loops() {
    let config = Config {
        max_executions: 100_000,
        max_steps: 500,
        ..Config::default()
    };
    let (mut agreed, mut livelocked) = (0, 0);
    for seed in 0..60 {
        let model = random_loops(seed);
        let explore =
            |s: &mut dyn Strategy| Explorer::new(model.clone(), config.clone()).run(s).unwrap();
        let dfs = explore(&mut cached_dfs());
        if !(dfs.exhausted || livelocks(&dfs)) {
            continue;
        }
        for explorer in EXPLORERS {
            let r = explore(&mut ses(explorer));
            assert_eq!(
                livelocks(&r),
                livelocks(&dfs),
                "seed {seed}, {explorer:?}: ses exhausted {}, bugs {:?}",
                r.exhausted,
                r.bugs
                    .iter()
                    .map(|b| &b.failure.message)
                    .collect::<Vec<_>>()
            );
            agreed += 1;
            livelocked += usize::from(livelocks(&r));
        }
    }
    // Both verdicts occur.
    assert!(
        livelocked > 0 && livelocked < agreed,
        "{livelocked} of {agreed}"
    );
}
