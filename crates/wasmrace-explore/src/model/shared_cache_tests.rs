//! Work stealing with a shared state cache on models: N workers sharing
//! one DFS tree and one state cache report exactly what one thread with
//! its own cache reports (executions, verdict, every bug and its number,
//! the budget's cut, states explored, cache hits), however the threads
//! interleave, although they expand states out of order and kill those
//! expansions later (see `explorer/visits.rs`).

use super::steal_tests::three;
use super::{reg, Model, ModelBuilder, ThreadBuilder};
use crate::explorer::steal::SubtreePool;
use crate::explorer::visits::SharedVisits;
use crate::explorer::Report;
use crate::strategies::Dfs;
use crate::{Config, DfsOptions, Explorer};

use super::partition_tests::racy;

/// Three threads writing their own variables twice, one of them reading
/// another's in between: hundreds of interleavings, few states, and a
/// bug when the read falls between two writes.
pub(super) fn converging() -> Model {
    let mut b = ModelBuilder::new();
    let (x, y, w) = (b.var("x", 0), b.var("y", 0), b.var("w", 0));
    let a = b.thread("a", |t| {
        t.write(x, 1).write(x, 2);
    });
    let bt = b.thread("b", |t| {
        t.write(y, 1).write(y, 2).write(y, 3);
    });
    let c = b.thread("c", |t| {
        t.read(x, 0).write(w, reg(0));
    });
    b.main(|t| {
        t.spawn_each(&[a, bt, c])
            .join_each(3)
            .read(w, 3)
            .assert(reg(3).not_equals(1), "read x between its writes");
    });
    b.build().unwrap()
}

/// A thread spinning with `yield_now` on a flag two others set: cycles
/// in the state graph, cut at the repeated state; no bug.
pub(super) fn spinning() -> Model {
    let mut b = ModelBuilder::new();
    let (flag, z) = (b.var("flag", 0), b.var("z", 0));
    let spin = b.thread("spin", |t| {
        t.label("top")
            .read(flag, 0)
            .when(reg(0).lt(2), |t| {
                t.yield_now();
            })
            .jump_if(reg(0).lt(2), "top");
    });
    let set = b.thread("set", |t| {
        t.fetch_add(flag, 1, 0).fetch_add(z, 1, 1);
    });
    b.main(|t| {
        t.spawn_each(&[spin, set, set]).join_each(3);
    });
    b.build().unwrap()
}

/// A waiter yielding until three bumps of a flag, while two other threads
/// bump it between writes of their own: the waiter yields more often than
/// fairness lets pass for free, in many different states.
pub(super) fn waiting() -> Model {
    let mut b = ModelBuilder::new();
    let (flag, x) = (b.var("flag", 0), b.var("x", 0));
    let waiter = b.thread("waiter", |t| {
        t.label("top")
            .read(flag, 0)
            .when(reg(0).lt(3), |t| {
                t.yield_now();
            })
            .jump_if(reg(0).lt(3), "top")
            .read(x, 1)
            .assert(reg(1).lt(4), "x ran ahead");
    });
    let bump = b.thread("bump", |t| {
        t.fetch_add(flag, 1, 0)
            .fetch_add(x, 1, 1)
            .fetch_add(flag, 1, 2);
    });
    let other = b.thread("other", |t| {
        t.fetch_add(x, 1, 0)
            .fetch_add(flag, 1, 1)
            .fetch_add(x, 1, 2);
    });
    b.main(|t| {
        t.spawn_each(&[waiter, bump, other]).join_each(3);
    });
    b.build().unwrap()
}

/// Two threads each yielding until the other's flag is set, which neither
/// ever sets: a livelock the cache finds as a cycle on a path.
pub(super) fn livelocked() -> Model {
    let mut b = ModelBuilder::new();
    let (a, c, z) = (b.var("a", 0), b.var("c", 0), b.var("z", 0));
    // Yields until `wait_on` is set, then sets `set`.
    let waiter = |wait_on, set| {
        move |t: &mut ThreadBuilder| {
            t.fetch_add(z, 1, 1)
                .label("top")
                .read(wait_on, 0)
                .when(reg(0).equals(0), |t| {
                    t.yield_now();
                })
                .jump_if(reg(0).equals(0), "top")
                .write(set, 1);
        }
    };
    let left = b.thread("left", waiter(c, a));
    let right = b.thread("right", waiter(a, c));
    let busy = b.thread("busy", |t| {
        t.fetch_add(z, 1, 0).fetch_add(z, 1, 1).fetch_add(z, 1, 2);
    });
    b.main(|t| {
        t.spawn_each(&[left, right, busy]).join_each(3);
    });
    b.build().unwrap()
}

fn cached(bound: Option<u32>) -> Dfs {
    Dfs::new(DfsOptions {
        preemption_bound: bound,
    })
    .with_state_cache(64)
}

fn single(model: &Model, bound: Option<u32>, config: &Config) -> Report {
    let mut explorer = Explorer::new(model.clone(), config.clone());
    explorer.run(&mut cached(bound)).unwrap()
}

/// One run on `n` workers sharing a pool (eager or not) and its cache:
/// the settled report and the expansions killed.
fn shared(
    model: &Model,
    bound: Option<u32>,
    config: &Config,
    n: usize,
    eager: bool,
    visits: Option<SharedVisits>,
) -> (Report, u64) {
    let pool = match eager {
        false => SubtreePool::new(n),
        true => SubtreePool::eager(n),
    };
    if let Some(v) = visits {
        assert!(pool.share_visits(v));
    }
    let reports = on_workers(n, model, config, |explorer| {
        explorer
            .run_shared(&mut cached(bound), &mut (), &pool)
            .unwrap()
    });
    let kills = pool.cached().map_or(0, |v| v.kills());
    (pool.settle(&reports, config), kills)
}

/// `run` on `n` threads at once, each with an explorer of its own on
/// `model`: what each returned (its report, say), in no order.
pub(super) fn on_workers<T: Send>(
    n: usize,
    model: &Model,
    config: &Config,
    run: impl Fn(&mut Explorer<Model>) -> T + Sync,
) -> Vec<T> {
    let together = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut explorer = Explorer::new(model.clone(), config.clone());
                    together.wait();
                    run(&mut explorer)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Everything a report says that does not depend on timing.
pub(super) fn verdict(r: &Report) -> String {
    let bugs: Vec<_> = (r.bugs.iter())
        .map(|b| (b.schedule.clone(), b.execution, b.failure.message.clone()))
        .collect();
    let stats: Vec<_> = (r.strategy_stats.iter())
        .map(|s| (s.name, s.value))
        .collect();
    format!(
        "executions {}, failing {}, exhausted {}, stopped by {:?}, bound {:?}, stats {:?}, bugs {:?}",
        r.executions,
        r.failing_executions,
        r.exhausted,
        r.stopped_by,
        r.strategy_bound,
        stats,
        bugs
    )
}

const WORKERS: [usize; 4] = [1, 2, 3, 7];
const BOUNDS: [Option<u32>; 3] = [None, Some(0), Some(1)];

/// Runs every model, bound and worker count with `config`, both pools,
/// three times each, and compares with one thread; returns the kills
/// seen in all.
fn compare(config: &Config) -> u64 {
    let mut kills = 0;
    for model in [
        racy(),
        three(),
        converging(),
        spinning(),
        waiting(),
        livelocked(),
    ] {
        for bound in BOUNDS {
            let one = verdict(&single(&model, bound, config));
            for n in WORKERS {
                for round in 0..3 {
                    let (r, k) = shared(&model, bound, config, n, round % 2 == 1, None);
                    kills += k;
                    assert_eq!(
                        verdict(&r),
                        one,
                        "bound {bound:?}, {n} workers, budget {}",
                        config.max_executions
                    );
                }
            }
        }
    }
    kills
}

#[test]
fn workers_sharing_a_cache_report_the_single_run() {
    let every_bug = Config {
        stop_on_first_bug: false,
        ..Config::default()
    };
    // The runs killed expansions: the machinery was exercised.
    assert!(compare(&every_bug) > 0);
    compare(&Config::default());
}

#[test]
fn workers_sharing_a_cache_cut_the_budget_where_one_run_does() {
    for (max, stop) in [(5, false), (23, false), (60, true), (150, false)] {
        let config = Config {
            max_executions: max,
            stop_on_first_bug: stop,
            ..Config::default()
        };
        compare(&config);
    }
}

/// The single run of these models is what the tests compare with: it
/// prunes (a cache that never hits would prove nothing).
#[test]
fn the_models_hit_the_cache() {
    for model in [converging(), spinning(), three()] {
        let r = single(&model, None, &Config::default());
        let hits = r.strategy_stats.iter().find(|s| s.name == "cache hits");
        assert!(hits.is_some_and(|h| h.value > 10), "{}", verdict(&r));
    }
}

/// A shared cache cannot evict: a full one stops every worker, and the
/// report names `--cache-mb`.
#[test]
fn a_full_shared_cache_stops_the_run_naming_its_knob() {
    let small = SharedVisits::with_cap_bytes(1, 2_000);
    let (r, _) = shared(
        &converging(),
        None,
        &Config::default(),
        2,
        false,
        Some(small),
    );
    assert!(!r.exhausted);
    let hit = r.stopped_by.expect("stopped by the cache");
    assert_eq!(hit.knob, "--cache-mb");
    assert_eq!(hit.value, 1);
}
