//! End-to-end tests of the strategies on models through the real `Explorer`:
//! exact interleaving counts, preemption bounding, blocking avoidance,
//! snapshot/replay equivalence, schedule replay and random walks.

use std::collections::BTreeSet;
use wasmrace_explore::model::{lit, reg, Model, ModelBuilder};
use wasmrace_explore::trace::{Decision, FailureKind, OpKind, Tid};
use wasmrace_explore::{
    is_preemption, Config, Dfs, DivergenceReason, Explorer, Outcome, Program, RandomWalk, Recorded,
    Recording, Replay, Report, Status, Strategy, WithoutBlockingAvoidance,
};

// ---------------------------------------------------------------- models

/// Main spawns two threads (and does nothing else); each writes its own
/// variable `k` times.
fn independent(k: usize) -> Model {
    let mut b = ModelBuilder::new();
    let x1 = b.var("x1", 0);
    let x2 = b.var("x2", 0);
    let t1 = b.thread("t1", |t| {
        for i in 0..k {
            t.write(x1, i as i64);
        }
    });
    let t2 = b.thread("t2", |t| {
        for i in 0..k {
            t.write(x2, i as i64);
        }
    });
    b.main(|t| {
        t.spawn(t1, 0).spawn(t2, 1);
    });
    b.build().unwrap()
}

/// Like `independent`, but the first operation of `t1` is a `choose(n)`.
fn independent_with_choice(k: usize, n: u32) -> Model {
    let mut b = ModelBuilder::new();
    let x1 = b.var("x1", 0);
    let x2 = b.var("x2", 0);
    let t1 = b.thread("t1", |t| {
        t.choose(n, 0);
        for i in 1..k {
            t.write(x1, i as i64);
        }
    });
    let t2 = b.thread("t2", |t| {
        for i in 0..k {
            t.write(x2, i as i64);
        }
    });
    b.main(|t| {
        t.spawn(t1, 0).spawn(t2, 1);
    });
    b.build().unwrap()
}

/// Main spawns one thread doing `k` writes, then does `m` writes itself.
fn parent_and_child(m: usize, k: usize) -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let y = b.var("y", 0);
    let c = b.thread("child", |t| {
        for i in 0..k {
            t.write(y, i as i64);
        }
    });
    b.main(|t| {
        t.spawn(c, 0);
        for i in 0..m {
            t.write(x, i as i64);
        }
    });
    b.build().unwrap()
}

/// Two workers increment `x` with a read then a write; main joins them and
/// asserts `x == 2`. Needs one preemption to fail.
fn lost_update() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let w = b.thread("worker", |t| {
        t.read(x, 0).write(x, reg(0) + 1);
    });
    b.main(|t| {
        t.spawn(w, 0)
            .spawn(w, 1)
            .join(reg(0))
            .join(reg(1))
            .read(x, 2)
            .assert(reg(2).equals(2), "lost update");
    });
    b.build().unwrap()
}

/// The same, with the increment under a mutex: no bug.
fn locked_update() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let m = b.mutex("m");
    let w = b.thread("worker", |t| {
        t.lock(m).read(x, 0).write(x, reg(0) + 1).unlock(m);
    });
    b.main(|t| {
        t.spawn(w, 0)
            .spawn(w, 1)
            .join(reg(0))
            .join(reg(1))
            .read(x, 2)
            .assert(reg(2).equals(2), "lost update");
    });
    b.build().unwrap()
}

/// Two threads take two mutexes in opposite orders.
fn lock_inversion() -> Model {
    let mut b = ModelBuilder::new();
    let a = b.mutex("a");
    let bm = b.mutex("b");
    let t1 = b.thread("ab", |t| {
        t.lock(a).lock(bm).unlock(bm).unlock(a);
    });
    let t2 = b.thread("ba", |t| {
        t.lock(bm).lock(a).unlock(a).unlock(bm);
    });
    b.main(|t| {
        t.spawn(t1, 0).spawn(t2, 1);
    });
    b.build().unwrap()
}

/// A server receives one message from each of `clients` clients (each sends
/// its number); with `check`, it asserts the first message came from client 1.
fn server(clients: i64, check: bool) -> Model {
    let mut b = ModelBuilder::new();
    let srv = b.thread("server", |t| {
        for r in 0..clients {
            t.recv(r as u8);
        }
        if check {
            t.assert(reg(0).equals(1), "client 1 was not served first");
        }
    });
    let cl = b.thread("client", |t| {
        t.send(reg(0), reg(1));
    });
    b.main(|t| {
        t.spawn(srv, 0);
        for i in 1..=clients {
            t.spawn_with(cl, i as u8, [reg(0), lit(i)]);
        }
        t.join(reg(0));
    });
    b.build().unwrap()
}

// ---------------------------------------------------------------- helpers

fn all_config() -> Config {
    Config {
        stop_on_first_bug: false,
        max_executions: 1_000_000,
        snapshot_every_cost: Some(0),
        ..Config::default()
    }
}

fn explore<P: Program, S: Strategy>(
    program: P,
    strategy: S,
    cfg: Config,
) -> (Report, Recording<S>) {
    let mut rec = Recording::new(strategy);
    let mut ex = Explorer::new(program, cfg);
    let report = rec.run(&mut ex).expect("exploration runs");
    (report, rec)
}

fn schedules(rec: &[Recorded]) -> Vec<Vec<Decision>> {
    rec.iter().map(|r| r.decisions.clone()).collect()
}

fn distinct(rec: &[Recorded]) -> BTreeSet<Vec<Decision>> {
    rec.iter().map(|r| r.decisions.clone()).collect()
}

/// Counts maximal schedules by brute force over clones of the model: an
/// oracle that shares nothing with the strategies or the explorer.
fn brute_force_count(m: &Model) -> u64 {
    if *m.status() != Status::Running {
        return 1;
    }
    let mut n = 0;
    for t in m.threads().iter().filter(|t| t.pending.enabled) {
        for alt in 0..t.pending.alts {
            let mut c = m.clone();
            c.step(Decision::new(t.tid, alt)).unwrap();
            n += brute_force_count(&c);
        }
    }
    n
}

/// Preemptions of a schedule, recomputed by running it on a fresh program.
fn preemptions<P: Program>(p: &mut P, schedule: &[Decision]) -> u32 {
    p.reset().unwrap();
    let mut last: Option<(Tid, Option<OpKind>)> = None;
    let mut n = 0;
    for &d in schedule {
        if is_preemption(p.threads(), last, d.tid) {
            n += 1;
        }
        let op = p.step(d).unwrap().op;
        last = Some((d.tid, op));
    }
    n
}

/// The final state (and status) a schedule leads to.
fn final_state<P: Program>(p: &mut P, schedule: &[Decision]) -> [u8; 32] {
    p.reset().unwrap();
    for &d in schedule {
        p.step(d).unwrap();
    }
    assert_ne!(*p.status(), Status::Running, "schedule is not maximal");
    p.state_hash().unwrap()
}

fn factorial(n: u64) -> u64 {
    (1..=n).product()
}

/// Interleavings of `independent(k)`: main runs spawn1, spawn2, exit; each
/// child runs `k` writes and its exit after its spawn. With `i` of t1's
/// `a = k+1` steps before spawn2, the rest (main's exit, t1's `a-i`, t2's
/// `b = k+1`) interleave freely.
fn independent_count(k: u64) -> u64 {
    let (a, b) = (k + 1, k + 1);
    (0..=a)
        .map(|i| factorial(1 + a - i + b) / (factorial(a - i) * factorial(b)))
        .sum()
}

// ---------------------------------------------------------------- counts

#[test]
fn unbounded_dfs_explores_exactly_all_interleavings_of_independent_threads() {
    assert_eq!(independent_count(2), 140 + 60 + 20 + 4);
    for k in 0..=3usize {
        let m = independent(k);
        let expected = independent_count(k as u64);
        assert_eq!(brute_force_count(&m), expected, "oracle, k={k}");
        let (report, rec) = explore(m, Dfs::unbounded(), all_config());
        assert_eq!(report.executions, expected, "k={k}");
        assert_eq!(distinct(rec.executions()).len() as u64, expected);
        assert!(rec
            .executions()
            .iter()
            .all(|r| r.outcome == Outcome::Finished));
        assert!(report.exhausted && report.bugs.is_empty() && report.strategy_bound.is_none());
        // Every schedule has every step: 3 for main, k+1 per child.
        assert!(rec
            .executions()
            .iter()
            .all(|r| r.decisions.len() == 3 + 2 * (k + 1)));
    }
}

#[test]
fn a_bound_reached_as_the_space_runs_out_is_not_reported() {
    let n = independent_count(1);
    let (report, _) = explore(
        independent(1),
        Dfs::unbounded(),
        Config {
            max_executions: n,
            ..all_config()
        },
    );
    assert!(report.exhausted && report.stopped_by.is_none());
    assert_eq!(report.executions, n);
    let (report, _) = explore(
        independent(1),
        Dfs::unbounded(),
        Config {
            max_executions: n - 1,
            ..all_config()
        },
    );
    assert!(!report.exhausted);
    assert_eq!(report.stopped_by.unwrap().knob, "--max-executions");
    assert_eq!(report.executions, n - 1);
}

#[test]
fn parent_and_child_counts_are_binomial() {
    // After the spawn, main's m writes + exit and the child's k writes + exit
    // interleave freely: (a+b)!/(a!b!) with a = m+1, b = k+1.
    for (m, k) in [(0, 0), (1, 2), (3, 2), (4, 4)] {
        let (a, b) = (m as u64 + 1, k as u64 + 1);
        let expected = factorial(a + b) / (factorial(a) * factorial(b));
        let (report, rec) = explore(parent_and_child(m, k), Dfs::unbounded(), all_config());
        assert_eq!(report.executions, expected, "m={m} k={k}");
        assert_eq!(distinct(rec.executions()).len() as u64, expected);
        assert!(report.exhausted);
    }
}

#[test]
fn choose_multiplies_the_count_by_its_alternatives() {
    for n in [1, 2, 3] {
        let (report, rec) = explore(
            independent_with_choice(2, n),
            Dfs::unbounded(),
            all_config(),
        );
        assert_eq!(report.executions, 224 * u64::from(n), "n={n}");
        assert_eq!(distinct(rec.executions()).len() as u64, 224 * u64::from(n));
        // Each alternative of the choice appears in as many schedules.
        let alts: Vec<usize> = (0..n)
            .map(|a| {
                rec.executions()
                    .iter()
                    .filter(|r| r.decisions.iter().any(|d| d.alt == a))
                    .count()
            })
            .collect();
        if n > 1 {
            assert!(alts[1..].iter().all(|&c| c == 224), "{alts:?}");
        }
        assert!(report.exhausted);
    }
}

#[test]
fn dfs_counts_match_brute_force_on_synchronising_models() {
    for m in [
        lost_update(),
        locked_update(),
        lock_inversion(),
        server(2, false),
    ] {
        let expected = brute_force_count(&m);
        let (report, rec) = explore(m, Dfs::unbounded(), all_config());
        assert_eq!(report.executions, expected);
        assert_eq!(distinct(rec.executions()).len() as u64, expected);
        assert!(report.exhausted);
    }
}

// ---------------------------------------------------------------- preemption bounding

#[test]
fn bound_zero_explores_only_non_preemptive_schedules() {
    for mut m in [independent(2), lost_update(), server(3, false)] {
        let (report, rec) = explore(m.clone(), Dfs::with_preemption_bound(0), all_config());
        assert!(report.exhausted);
        assert!(!rec.executions().is_empty());
        for r in rec.executions() {
            assert_eq!(preemptions(&mut m, &r.decisions), 0, "{:?}", r.decisions);
            assert_eq!(r.preemptions, 0);
        }
        // The very first schedule of a bounded or unbounded search is the
        // same non-preemptive one.
        let (_, unb) = explore(
            m.clone(),
            Dfs::unbounded(),
            Config {
                max_executions: 1,
                ..all_config()
            },
        );
        assert_eq!(unb.executions()[0].decisions, rec.executions()[0].decisions);
    }
}

#[test]
fn bound_c_explores_exactly_the_schedules_with_at_most_c_preemptions() {
    for mut m in [
        independent(2),
        lost_update(),
        locked_update(),
        server(2, false),
        lock_inversion(),
    ] {
        let (_, all) = explore(m.clone(), Dfs::unbounded(), all_config());
        let counted: Vec<(Vec<Decision>, u32)> = all
            .executions()
            .iter()
            .map(|r| (r.decisions.clone(), preemptions(&mut m, &r.decisions)))
            .collect();
        let max = counted.iter().map(|c| c.1).max().unwrap();
        for c in 0..=max + 1 {
            let (report, rec) = explore(m.clone(), Dfs::with_preemption_bound(c), all_config());
            let expected: BTreeSet<Vec<Decision>> = counted
                .iter()
                .filter(|(_, p)| *p <= c)
                .map(|(s, _)| s.clone())
                .collect();
            let got = schedules(rec.executions());
            assert_eq!(
                got.len(),
                expected.len(),
                "bound {c}: each schedule exactly once"
            );
            assert_eq!(
                got.iter().cloned().collect::<BTreeSet<_>>(),
                expected,
                "bound {c}"
            );
            assert!(report.exhausted);
            // Iterative bounding: fewest preemptions first.
            let ps: Vec<u32> = rec.executions().iter().map(|r| r.preemptions).collect();
            assert!(ps.windows(2).all(|w| w[0] <= w[1]), "bound {c}: {ps:?}");
            assert!(ps.iter().all(|&p| p <= c));
            // The bound is reported exactly when it cut something off.
            let cut = expected.len() < counted.len();
            assert_eq!(report.strategy_bound.is_some(), cut, "bound {c}");
            assert_eq!(rec.inner().pruned() > 0, cut);
            if let Some(hit) = &report.strategy_bound {
                assert_eq!(
                    (hit.bound, hit.value, hit.knob),
                    ("preemptions", u64::from(c), "--preemption-bound")
                );
            }
            // Every deferred prefix was explored and freed.
            assert_eq!(rec.inner().stored_prefix_nodes(), 0);
        }
    }
}

#[test]
fn lost_update_needs_one_preemption() {
    let cfg = Config {
        snapshot_every_cost: Some(0),
        ..Config::default()
    };
    let (r0, _) = explore(lost_update(), Dfs::with_preemption_bound(0), cfg.clone());
    assert!(r0.bugs.is_empty(), "{:?}", r0.bugs);
    assert!(r0.exhausted);
    let hit = r0
        .strategy_bound
        .expect("bound 0 pruned schedules and says so");
    assert_eq!(hit.knob, "--preemption-bound");

    let (r1, rec) = explore(lost_update(), Dfs::with_preemption_bound(1), cfg);
    let bug = r1.first_bug().expect("bound 1 finds the lost update");
    assert_eq!(bug.failure.kind, FailureKind::Panic);
    assert_eq!(bug.failure.message, "lost update");
    assert_eq!(bug.failure.thread.as_deref(), Some("main"));
    assert_eq!(preemptions(&mut lost_update(), &bug.schedule), 1);
    assert_eq!(rec.executions().last().unwrap().preemptions, 1);

    // The mutex fixes it, whatever the bound.
    let (r, _) = explore(locked_update(), Dfs::unbounded(), all_config());
    assert!(r.bugs.is_empty() && r.exhausted);
}

// ---------------------------------------------------------------- blocking avoidance

#[test]
fn blocking_avoidance_explores_fewer_interleavings_with_the_same_results() {
    for check in [false, true] {
        let m = server(2, check);
        let (with, rw) = explore(m.clone(), Dfs::unbounded(), all_config());
        let (without, rn) = explore(
            WithoutBlockingAvoidance::new(m.clone()),
            Dfs::unbounded(),
            all_config(),
        );
        assert!(with.exhausted && without.exhausted);
        assert!(
            without.executions > with.executions,
            "without avoidance {} vs with {}",
            without.executions,
            with.executions
        );
        assert!(rn
            .executions()
            .iter()
            .any(|r| r.decisions.len() > rw.executions()[0].decisions.len()));
        // Same final states...
        let mut plain = m.clone();
        let states_with: BTreeSet<[u8; 32]> = rw
            .executions()
            .iter()
            .map(|r| final_state(&mut plain, &r.decisions))
            .collect();
        let mut wrapped = WithoutBlockingAvoidance::new(m.clone());
        let states_without: BTreeSet<[u8; 32]> = rn
            .executions()
            .iter()
            .map(|r| {
                final_state(&mut wrapped, &r.decisions);
                wrapped.inner_mut().state_hash().unwrap()
            })
            .collect();
        assert_eq!(states_with, states_without);
        assert!(
            states_with.len() >= 2,
            "2 clients reach the server in any order"
        );
        // ...and the same bugs.
        let bugs = |r: &Report| {
            r.bugs
                .iter()
                .map(|b| b.failure.clone().to_string())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(bugs(&with), bugs(&without));
        assert_eq!(bugs(&with).is_empty(), !check);
    }
}

#[test]
fn blocking_avoidance_saves_more_as_the_preemption_bound_grows() {
    // The shape of the paper's Fig. 8.
    let m = server(2, false);
    let mut savings = Vec::new();
    for c in 0..=3 {
        let (with, _) = explore(m.clone(), Dfs::with_preemption_bound(c), all_config());
        let (without, _) = explore(
            WithoutBlockingAvoidance::new(m.clone()),
            Dfs::with_preemption_bound(c),
            all_config(),
        );
        assert!(
            without.executions > with.executions,
            "bound {c}: {} vs {}",
            without.executions,
            with.executions
        );
        savings.push(without.executions - with.executions);
    }
    assert!(savings.windows(2).all(|w| w[0] <= w[1]), "{savings:?}");
}

#[test]
fn naive_search_also_reports_deadlocks() {
    for c in [None, Some(2)] {
        let dfs = || match c {
            None => Dfs::unbounded(),
            Some(c) => Dfs::with_preemption_bound(c),
        };
        let (with, _) = explore(lock_inversion(), dfs(), Config::default());
        let (without, _) = explore(
            WithoutBlockingAvoidance::new(lock_inversion()),
            dfs(),
            Config::default(),
        );
        for r in [&with, &without] {
            let f = &r.first_bug().expect("deadlock found").failure;
            assert_eq!(f.kind, FailureKind::Deadlock);
            assert_eq!(f.waiting.len(), 2, "{f:?}");
        }
    }
}

// ---------------------------------------------------------------- snapshots vs replay

#[test]
fn snapshots_and_replay_give_identical_explorations() {
    let strategies: Vec<fn() -> Dfs> =
        vec![Dfs::unbounded, || Dfs::with_preemption_bound(0), || {
            Dfs::with_preemption_bound(2)
        }];
    // Restores from, and replayed steps saved by, the snapshots taken
    // where the search kept coming back.
    let mut returns_snapshots = (0, 0);
    for m in [independent(2), lost_update(), server(2, true)] {
        for make in &strategies {
            let snap_cfg = Config {
                snapshot_every_cost: Some(0),
                ..all_config()
            };
            let replay_cfg = all_config().without_snapshots();
            let few_snaps = Config {
                snapshot_every_cost: Some(3),
                max_snapshots: 2,
                ..all_config()
            };
            // Snapshots only where the search keeps coming back.
            let at_returns = Config {
                snapshot_resume_returns: Some(2),
                ..all_config().without_snapshots()
            };
            let (rs, a) = explore(m.clone(), make(), snap_cfg);
            let (rr, b) = explore(m.clone(), make(), replay_cfg);
            let (rf, c) = explore(m.clone(), make(), few_snaps);
            let (rt, d) = explore(m.clone(), make(), at_returns);
            assert_eq!(a.executions(), b.executions());
            assert_eq!(a.executions(), c.executions());
            assert_eq!(a.executions(), d.executions());
            assert!(a.executions().len() > 1);
            assert!(rs.restores > 0 && rr.restores == 0);
            assert!(rr.replayed_steps > rs.replayed_steps);
            assert_eq!(rs.bugs, rr.bugs);
            assert_eq!(rs.bugs, rt.bugs);
            assert_eq!(rs.executions, rf.executions);
            assert_eq!(rs.executions, rt.executions);
            assert!(rt.replayed_steps <= rr.replayed_steps);
            returns_snapshots.0 += rt.restores;
            returns_snapshots.1 += rr.replayed_steps - rt.replayed_steps;
        }
        let (_, a) = explore(
            WithoutBlockingAvoidance::new(m.clone()),
            Dfs::unbounded(),
            all_config(),
        );
        let (_, b) = explore(
            WithoutBlockingAvoidance::new(m.clone()),
            Dfs::unbounded(),
            Config {
                snapshot_every_cost: None,
                ..all_config()
            },
        );
        assert_eq!(a.executions(), b.executions());
    }
    assert!(
        returns_snapshots.0 > 0 && returns_snapshots.1 > 0,
        "{returns_snapshots:?}"
    );
}

// ---------------------------------------------------------------- replay

/// Replays `schedule` on `program` and returns the report and the replay.
fn replay<P: Program>(program: P, schedule: Vec<Decision>) -> (Report, Replay) {
    let mut r = Replay::new(schedule);
    let report = Explorer::new(program, Config::default())
        .run(&mut r)
        .unwrap();
    (report, r)
}

#[test]
fn every_strategy_reports_schedules_that_replay_to_the_same_failure() {
    let cfg = Config::default;
    let found = [
        explore(lost_update(), Dfs::unbounded(), cfg()).0,
        explore(lost_update(), Dfs::with_preemption_bound(1), cfg()).0,
        explore(lost_update(), RandomWalk::new(7), cfg()).0,
        explore(lock_inversion(), Dfs::unbounded(), cfg()).0,
    ];
    for report in found {
        let bug = report.first_bug().expect("bug found").clone();
        let (again, r) = replay(
            lost_update_or_inversion(&bug.failure.kind),
            bug.schedule.clone(),
        );
        assert!(r.reproduced(), "{:?}", r.divergence());
        assert_eq!(again.executions, 1);
        assert_eq!(again.first_bug().unwrap().failure, bug.failure);
        assert_eq!(again.first_bug().unwrap().schedule, bug.schedule);
        // A replay's schedule replays too.
        let (third, r3) = replay(
            lost_update_or_inversion(&bug.failure.kind),
            again.bugs[0].schedule.clone(),
        );
        assert!(r3.reproduced());
        assert_eq!(third.bugs[0].failure, bug.failure);
    }
    // With blocking avoidance off, `Block` steps are part of the schedule.
    let (report, _) = explore(
        WithoutBlockingAvoidance::new(lock_inversion()),
        Dfs::unbounded(),
        cfg(),
    );
    let bug = report.first_bug().unwrap().clone();
    let (again, r) = replay(
        WithoutBlockingAvoidance::new(lock_inversion()),
        bug.schedule.clone(),
    );
    assert!(r.reproduced());
    assert_eq!(again.bugs[0].failure, bug.failure);
}

fn lost_update_or_inversion(kind: &FailureKind) -> Model {
    match kind {
        FailureKind::Deadlock => lock_inversion(),
        _ => lost_update(),
    }
}

#[test]
fn tampered_schedules_diverge_with_a_clear_reason() {
    let (report, _) = explore(
        lost_update(),
        Dfs::with_preemption_bound(1),
        Config::default(),
    );
    let schedule = report.first_bug().unwrap().schedule.clone();
    let main = wasmrace_explore::trace::ThreadPath::main();

    // A step given to a thread that is blocked at that point: after the two
    // spawns, main's join waits for main.1.
    let mut m = lost_update();
    m.reset().unwrap();
    let mut at = None;
    for (i, &d) in schedule.iter().enumerate() {
        if let Some(t) = m.threads().iter().find(|t| !t.pending.enabled) {
            at = Some((i, t.tid));
            break;
        }
        m.step(d).unwrap();
    }
    let (i, blocked) = at.expect("some thread blocks on the way");
    let mut bad = schedule.clone();
    bad[i] = Decision::new(blocked, 0);
    let (rep, r) = replay(lost_update(), bad);
    assert!(rep.bugs.is_empty());
    let d = r.divergence().expect("diverges");
    assert_eq!(d.step, i + 1);
    assert!(
        matches!(
            d.reason,
            DivergenceReason::Disabled {
                op: OpKind::Join,
                ..
            }
        ),
        "{d:?}"
    );
    assert_eq!(
        d.to_string(),
        format!("schedule diverged at step {}: thread `main` is not enabled (its next operation `join` is blocked)", i + 1)
    );

    // A thread that does not exist yet is named from its id.
    let mut bad = schedule.clone();
    bad[0] = Decision::new(main.child(2).tid(), 0);
    let (_, r) = replay(lost_update(), bad);
    let d = r.divergence().unwrap();
    assert_eq!(d.step, 1);
    assert!(
        d.to_string()
            .contains("step 1: thread `main.2` is not enabled"),
        "{d}"
    );

    // An alternative the operation does not have.
    let mut bad = schedule.clone();
    bad[0].alt = 3;
    let (_, r) = replay(lost_update(), bad);
    assert!(matches!(
        r.divergence().unwrap().reason,
        DivergenceReason::NoSuchAlternative {
            alt: 3,
            alts: 1,
            ..
        }
    ));

    // Too short: the schedule runs out while the execution goes on.
    let (rep, r) = replay(lost_update(), schedule[..schedule.len() - 2].to_vec());
    assert!(rep.bugs.is_empty());
    let d = r.divergence().unwrap();
    assert_eq!(d.step, schedule.len() - 1);
    assert!(
        matches!(&d.reason, DivergenceReason::ScheduleEnded { enabled } if !enabled.is_empty()),
        "{d}"
    );

    // Too long: the execution ends with decisions left over (the failure
    // itself is still reported).
    let mut long = schedule.clone();
    long.push(Decision::new(main.tid(), 0));
    let (rep, r) = replay(lost_update(), long);
    assert_eq!(rep.bugs.len(), 1);
    assert!(!r.reproduced());
    assert_eq!(
        r.divergence().unwrap().reason,
        DivergenceReason::ExecutionEnded {
            ran: schedule.len(),
            len: schedule.len() + 1
        }
    );
}

// ---------------------------------------------------------------- random walk

#[test]
fn random_walk_is_reproducible_from_its_seed() {
    let cfg = Config {
        max_executions: 40,
        ..all_config()
    };
    let run = |seed| explore(server(3, true), RandomWalk::new(seed), cfg.clone()).1;
    let a = run(1);
    let b = run(1);
    let c = run(2);
    assert_eq!(a.executions(), b.executions());
    assert_ne!(schedules(a.executions()), schedules(c.executions()));
    assert_eq!(a.inner().standing().seed, 1);
    assert!(a
        .executions()
        .iter()
        .all(|r| r.start == wasmrace_explore::Start::Fresh));
    // Random walks never claim to have covered everything.
    let (report, _) = explore(
        independent(0),
        RandomWalk::new(3),
        Config {
            max_executions: 30,
            ..all_config()
        },
    );
    assert!(!report.exhausted);
    assert_eq!(report.executions, 30);
    assert_eq!(report.stopped_by.unwrap().knob, "--max-executions");
}

#[test]
fn random_walk_finds_the_lost_update_within_200_executions() {
    for seed in 0..20 {
        let cfg = Config {
            max_executions: 200,
            ..Config::default()
        };
        let (report, _) = explore(lost_update(), RandomWalk::new(seed), cfg);
        let bug = report
            .first_bug()
            .unwrap_or_else(|| panic!("seed {seed} missed the bug"));
        assert_eq!(bug.failure.message, "lost update");
    }
}

// ---------------------------------------------------------------- limits

/// A thread alone in a `yield_now` loop spins for ever: at the step limit
/// it is a livelock (issue #11; before, a bare step-limit failure), still
/// naming the flag that raises the limit.
#[test]
fn a_yield_loop_hits_the_step_limit() {
    let mut b = ModelBuilder::new();
    b.main(|t| {
        t.label("spin").yield_now().jump("spin");
    });
    let m = b.build().unwrap();
    let cfg = Config {
        max_steps: 50,
        ..Config::default()
    };
    let (report, rec) = explore(m, Dfs::unbounded(), cfg);
    let bug = report.first_bug().expect("step limit is a failure");
    assert_eq!(bug.failure.kind, FailureKind::Livelock);
    assert!(
        bug.failure.message.contains("--max-steps"),
        "{}",
        bug.failure.message
    );
    assert_eq!(bug.schedule.len(), 50);
    assert!(matches!(rec.executions()[0].outcome, Outcome::Failed(_)));
}

/// PULSE procrastination on the world-hello model (one test binary per
/// crate: the file lives beside this one).
mod procrastination;

/// Delaying explorers, SES, SS and state caching (FSE 2015).
mod delaying;

/// Fair scheduling and livelocks (PLDI 2008).
mod fairness;
