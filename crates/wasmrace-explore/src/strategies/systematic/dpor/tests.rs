//! DPOR against unbounded DFS on models: the same partial orders (the
//! `Metrics` canonical hash), each once in optimal mode.

use super::*;
use crate::explorer::{Config, Explorer, Report};
use crate::model::{reg, Model, ModelBuilder};
use crate::strategies::{Dfs, Metrics};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Explores `model` exhaustively with `strategy`, not stopping at bugs.
pub(crate) fn measure(model: Model, strategy: &mut dyn Strategy, budget: u64) -> (Metrics, Report) {
    let mut m = Metrics::new();
    let cfg = Config {
        max_executions: budget,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let r = Explorer::new(model, cfg)
        .run_observed(strategy, &mut m)
        .unwrap();
    (m, r)
}

/// The orders unbounded DFS covers on `model`: the reference an exact
/// reduction must match; `None` when DFS does not exhaust within `budget`.
pub(crate) fn dfs_reference(model: Model, budget: u64) -> Option<Metrics> {
    let (dfs, r) = measure(model, &mut Dfs::unbounded(), budget);
    r.exhausted.then_some(dfs)
}

/// Asserts that both DPOR modes cover exactly the orders unbounded DFS
/// covers, optimal mode each exactly once with no sleep-set-blocked run;
/// returns (orders, DFS executions), or `None` when DFS could not exhaust
/// the model within `budget`.
fn assert_exact(name: &str, model: impl Fn() -> Model, budget: u64) -> Option<(usize, u64)> {
    let dfs = dfs_reference(model(), budget)?;
    let mut opt = Dpor::optimal();
    let (m, r) = measure(model(), &mut opt, budget);
    assert!(r.exhausted, "{name}: optimal did not exhaust");
    assert_eq!(m.order_hashes(), dfs.order_hashes(), "{name}: optimal");
    assert_eq!(opt.sleep_blocked(), 0, "{name}: sleep-set-blocked");
    assert_eq!(
        m.executions(),
        m.distinct_orders() as u64,
        "{name}: repeats"
    );
    let mut src = Dpor::source();
    let (s, r) = measure(model(), &mut src, budget);
    assert!(r.exhausted, "{name}: source did not exhaust");
    assert_eq!(s.order_hashes(), dfs.order_hashes(), "{name}: source");
    assert_eq!(
        s.executions() - s.abandoned_executions(),
        s.distinct_orders() as u64,
        "{name}: source completed a trace twice"
    );
    Some((dfs.distinct_orders(), dfs.executions()))
}

/// Issue #12's example: thread i writes its own cell and reads its
/// neighbour's, three threads: 7 traces (8 orders of the three races but
/// the cyclic one).
pub(crate) fn ring() -> Model {
    let mut b = ModelBuilder::new();
    let cells: Vec<_> = (0..3).map(|i| b.var(&format!("x{i}"), 0)).collect();
    let defs: Vec<_> = (0..3)
        .map(|i| {
            let (own, next) = (cells[i], cells[(i + 1) % 3]);
            b.thread(&format!("t{i}"), |t| {
                t.write(own, 1).read(next, 0);
            })
        })
        .collect();
    b.main(|m| {
        m.spawn_each(&defs).join_each(defs.len());
    });
    b.build().unwrap()
}

#[test]
fn ring_of_three_has_seven_traces() {
    let mut opt = Dpor::optimal();
    let (m, r) = measure(ring(), &mut opt, 100_000);
    assert!(r.exhausted);
    assert_eq!((r.executions, m.distinct_orders()), (7, 7));
    assert_eq!(opt.traces(), 7);
    let (orders, dfs_runs) = assert_exact("ring", ring, 1_000_000).unwrap();
    assert_eq!(orders, 7);
    // The exact count docs/strategies.md quotes: `cargo test -p wasmrace-explore ring_of_three`.
    assert_eq!(dfs_runs, 25_424, "DFS runs interleavings: {dfs_runs}");
}

/// Two threads incrementing under a lock and one without: the lock
/// acquisitions race with each other, not with the releases.
#[test]
fn locks_and_lost_updates() {
    let model = || {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let y = b.var("y", 0);
        let l = b.mutex("l");
        let t = b.thread("t", |t| {
            t.lock(l).read(x, 0).write(x, reg(0) + 1).unlock(l);
            t.read(y, 0).write(y, reg(0) + 1);
        });
        b.main(|m| {
            m.spawn(t, 0).spawn(t, 1).join(reg(0)).join(reg(1));
            m.read(y, 2).assert(reg(2).equals(2), "lost update");
        });
        b.build().unwrap()
    };
    let (orders, _) = assert_exact("locks", model, 1_000_000).unwrap();
    assert!(orders > 2);
}

/// Messages, `choose` and a join: every branch, every receive order.
#[test]
fn messages_choices_and_joins() {
    let model = || {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let t = b.thread("t", |t| {
            t.choose(2, 1)
                .write(x, reg(1))
                .send(crate::model::parent_id(), reg(0));
        });
        b.main(|m| {
            m.spawn_with(t, 0, [1.into()]).spawn_with(t, 1, [2.into()]);
            m.recv(2).recv(3).read(x, 4).join(reg(0)).join(reg(1));
        });
        b.build().unwrap()
    };
    let (orders, _) = assert_exact("messages", model, 1_000_000).unwrap();
    assert!(orders >= 8, "{orders}");
}

/// A random program of the model language: two or three threads of reads,
/// writes, fetch-adds, critical sections, sends to `main`, `choose` and a
/// branch on a value read; `main` receives every message and joins all.
pub(crate) fn random_model(seed: u64) -> Model {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = ModelBuilder::new();
    let vars = [b.var("x", 0), b.var("y", 0)];
    let l = b.mutex("l");
    let threads = rng.random_range(2..=3);
    let mut sends = 0;
    let mut defs = Vec::new();
    for i in 0..threads {
        let ops = rng.random_range(1..=if threads == 3 { 2 } else { 3 });
        let mut plan: Vec<u32> = (0..ops).map(|_| rng.random_range(0..7)).collect();
        plan.iter_mut().for_each(|k| {
            if *k == 5 {
                sends += 1;
            }
        });
        let picks: Vec<usize> = (0..ops).map(|_| rng.random_range(0..2)).collect();
        defs.push(b.thread(&format!("t{i}"), |t| {
            for (k, v) in plan.iter().zip(&picks) {
                let v = vars[*v];
                match k {
                    0 => {
                        t.read(v, 0);
                    }
                    1 => {
                        t.write(v, 1);
                    }
                    2 => {
                        t.fetch_add(v, 1, 0);
                    }
                    3 => {
                        t.lock(l).read(v, 0).write(v, reg(0) + 1).unlock(l);
                    }
                    4 => {
                        t.choose(2, 1).write(v, reg(1));
                    }
                    5 => {
                        t.send(crate::model::parent_id(), 7);
                    }
                    _ => {
                        t.read(v, 2).when(reg(2).equals(1), |t| {
                            t.write(vars[0], 3);
                        });
                    }
                }
            }
        }));
    }
    b.main(|m| {
        m.spawn_each(&defs);
        for _ in 0..sends {
            m.recv(5);
        }
        m.join_each(defs.len());
    });
    b.build().unwrap()
}

/// The property test: on random programs, DPOR (both modes) covers exactly
/// the partial orders unbounded DFS covers, optimal mode each once.
#[test]
fn random_programs_cover_what_dfs_covers() {
    let mut checked = 0;
    for seed in 0..60 {
        if assert_exact(&format!("seed {seed}"), || random_model(seed), 30_000).is_some() {
            checked += 1;
        }
    }
    assert!(
        checked >= 40,
        "only {checked} programs small enough for DFS"
    );
}

/// The shape of `two_phase_commit`: a coordinator sends `prepare` to `n`
/// participants; each receives it, votes with `choose` (0 yes, 1 no) and,
/// when it voted yes, waits for the decision; the coordinator aborts on
/// the first no, commits after `n` yeses, and sends the decision to all.
pub(crate) fn two_phase(n: u8) -> Model {
    let mut b = ModelBuilder::new();
    let p = b.thread("participant", |t| {
        t.recv(0)
            .choose(2, 1)
            .send(crate::model::parent_id(), reg(1));
        t.when(reg(1).equals(0), |t| {
            t.recv(2);
        });
    });
    b.main(|m| {
        for i in 0..n {
            m.spawn(p, i);
        }
        for i in 0..n {
            m.send(reg(i), 0);
        }
        m.set(10, 0).label("loop").recv(11);
        m.jump_if(reg(11).equals(1), "abort");
        m.set(10, reg(10) + 1)
            .jump_if(reg(10).lt(i64::from(n)), "loop");
        for i in 0..n {
            m.send(reg(i), 2);
        }
        m.jump("end").label("abort");
        for i in 0..n {
            m.send(reg(i), 3);
        }
        m.label("end");
    });
    b.build().unwrap()
}

/// Regression: optimal DPOR ran a sleep-set-blocked execution on
/// `two_phase_commit` (a `choose` alternative explored at a node where a
/// sleeping thread commutes with it). Two participants against DFS; three
/// (DFS cannot exhaust them quickly) each trace once and none blocked.
#[test]
fn two_phase_commit_shape_runs_no_blocked_execution() {
    let (orders, _) = assert_exact("two_phase(2)", || two_phase(2), 1_000_000).unwrap();
    assert!(orders > 2, "{orders}");
    let mut opt = Dpor::optimal();
    let (m, r) = measure(two_phase(3), &mut opt, 1_000_000);
    assert!(r.exhausted);
    assert_eq!(opt.sleep_blocked(), 0);
    assert_eq!(m.executions(), m.distinct_orders() as u64);
    assert!(m.distinct_orders() > orders, "{}", m.distinct_orders());
}

/// A random program with waiting loops: like [`random_model`], and one
/// thread spins on `yield_now` until another has set a flag (the first
/// thread sets it after its operations), so fair scheduling (on by
/// default, bound 2) hides the spinner from the schedules it starves.
fn random_spin_model(seed: u64) -> Model {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = ModelBuilder::new();
    let vars = [b.var("x", 0), b.var("y", 0)];
    let flag = b.var("flag", 0);
    let threads = rng.random_range(2..=3);
    let mut defs = Vec::new();
    for i in 0..threads {
        let ops = rng.random_range(1..=2);
        let plan: Vec<(u32, usize)> = (0..ops)
            .map(|_| (rng.random_range(0..4), rng.random_range(0..2)))
            .collect();
        defs.push(b.thread(&format!("t{i}"), |t| {
            if i == 1 {
                t.label("wait").read(flag, 3);
                t.when(reg(3).equals(0), |t| {
                    t.yield_now().jump("wait");
                });
            }
            for &(k, v) in &plan {
                let v = vars[v];
                match k {
                    0 => {
                        t.read(v, 0);
                    }
                    1 => {
                        t.write(v, 1);
                    }
                    2 => {
                        t.fetch_add(v, 1, 0);
                    }
                    _ => {
                        t.choose(2, 1).write(v, reg(1));
                    }
                }
            }
            if i == 0 {
                t.write(flag, 1);
            }
        }));
    }
    b.main(|m| {
        m.spawn_each(&defs).join_each(defs.len());
    });
    b.build().unwrap()
}

/// Fairness × DPOR: on random programs with waiting loops, DPOR under
/// fair scheduling covers only partial orders fair DFS covers too, but not
/// all of them (fair schedules are not closed under reordering independent
/// steps); whenever it misses one it reports the dropped reversals as a
/// bound, never as a proof.
#[test]
fn dpor_under_fairness_reports_what_it_cannot_cover() {
    let (mut checked, mut short) = (0, 0);
    for seed in 0..40 {
        let (dfs, r) = measure(random_spin_model(seed), &mut Dfs::unbounded(), 30_000);
        if !r.exhausted {
            continue;
        }
        checked += 1;
        for mut dpor in [Dpor::optimal(), Dpor::source()] {
            let (m, r) = measure(random_spin_model(seed), &mut dpor, 30_000);
            assert!(r.exhausted, "seed {seed}");
            assert!(
                m.order_hashes().is_subset(dfs.order_hashes()),
                "seed {seed}"
            );
            if m.order_hashes() != dfs.order_hashes() {
                short += 1;
                let hit = dpor.bound_hit().expect("a short search reports a bound");
                assert_eq!(
                    (hit.knob, hit.value),
                    ("--fairness-bound", dpor.infeasible())
                );
                assert_eq!(r.strategy_bound, Some(hit), "seed {seed}");
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} programs small enough for DFS"
    );
    assert!(short > 0, "the programs exercise fairness");
}
