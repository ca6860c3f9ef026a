//! Fair scheduling through the real `Explorer` (Musuvathi & Qadeer, "Fair
//! stateless model checking", PLDI 2008): the paper's example of a thread
//! spinning on another's flag has finitely many fair executions, which
//! every strategy keeps to; a bug behind the wait is found as itself; a
//! spin nobody ends is a livelock, at the step limit and, with a state
//! cache, as a lasso; resuming from snapshots or by replay explores alike.

use super::{explore, schedules};
use wasmrace_explore::model::{lit, reg, Model, ModelBuilder};
use wasmrace_explore::strategies::REGISTRY;
use wasmrace_explore::trace::FailureKind;
use wasmrace_explore::{Config, Dfs, Explorer, Outcome, Recording, Report, Strategy};

/// The paper's example: `main` spawns a thread that sets `flag` and then
/// waits for it, `while flag == 0 { yield }`; then, when `bug`, fails.
fn spin_on_flag(setter: bool, bug: bool) -> Model {
    let mut b = ModelBuilder::new();
    let flag = b.var("flag", 0);
    let set = b.thread("set", move |t| {
        if setter {
            t.write(flag, 1);
        }
    });
    b.main(move |t| {
        t.spawn(set, 1);
        t.label("spin").read(flag, 0).when(reg(0).equals(0), |t| {
            t.yield_now().jump("spin");
        });
        if bug {
            t.fail("after the wait");
        }
    });
    b.build().unwrap()
}

fn cfg(fairness_bound: Option<u32>) -> Config {
    Config {
        max_steps: 200,
        stop_on_first_bug: false,
        fairness_bound,
        ..Config::default()
    }
}

fn run_registered(name: &str, m: Model, config: Config) -> Report {
    let d = REGISTRY.iter().find(|d| d.name == name).unwrap();
    let mut s: Box<dyn Strategy> = (d.build)(&d.defaults, 7);
    Explorer::new(m, config).run(&mut *s).unwrap()
}

#[test]
fn without_fairness_dfs_finds_the_unfair_spin() {
    let (r, _) = explore(spin_on_flag(true, false), Dfs::unbounded(), cfg(None));
    assert!(r.failing_executions > 0, "{r:?}");
    // Including the schedules where the setter runs just before the limit:
    // it made progress, so they are no livelock.
    for b in &r.bugs {
        assert_eq!(b.failure.kind, FailureKind::StepLimit, "{}", b.failure);
    }
}

/// Under fairness the waiting loop ends on every schedule, and DFS without
/// a preemption bound exhausts the space: `main` polls at most `bound + 1`
/// times (its first `bound` yields are free, the next gives way to the
/// setter) before the setter must run.
#[test]
fn fair_dfs_exhausts_the_papers_example() {
    let mut counts = Vec::new();
    for bound in [0, 1, 2, 3] {
        let (r, rec) = explore(
            spin_on_flag(true, false),
            Dfs::unbounded(),
            cfg(Some(bound)),
        );
        assert!(r.exhausted && r.bugs.is_empty(), "bound {bound}: {r:?}");
        let longest = rec.executions().iter().map(|e| e.decisions.len()).max();
        // spawn, then (read, yield) per poll, the read that sees 1 and the
        // exit; the setter's write and exit.
        let polls = bound as usize + 1;
        assert_eq!(longest, Some(1 + 2 * polls + 2 + 2), "bound {bound}");
        counts.push(r.executions);
    }
    // A larger bound lets `main` poll more: strictly more schedules.
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
}

#[test]
fn every_registered_strategy_keeps_to_fair_schedules() {
    for d in REGISTRY {
        let config = Config {
            max_executions: 300,
            ..cfg(Some(2))
        };
        let r = run_registered(d.name, spin_on_flag(true, false), config);
        assert!(r.bugs.is_empty(), "{}: {:?}", d.name, r.bugs);
        assert!(r.executions > 0, "{}", d.name);
    }
}

#[test]
fn a_bug_behind_the_wait_is_reported_as_itself() {
    for d in REGISTRY {
        let r = run_registered(d.name, spin_on_flag(true, true), Config::default());
        let bug = r
            .first_bug()
            .unwrap_or_else(|| panic!("{} missed it", d.name));
        assert_eq!(bug.failure.kind, FailureKind::Panic, "{}", d.name);
        assert_eq!(bug.failure.message, "after the wait", "{}", d.name);
    }
}

/// Nobody sets the flag: every fair schedule spins for ever. At the step
/// limit, every live thread spins: a livelock, for every strategy.
#[test]
fn a_spin_nobody_ends_is_a_livelock() {
    for d in REGISTRY {
        let config = Config {
            max_steps: 60,
            ..Config::default()
        };
        let r = run_registered(d.name, spin_on_flag(false, false), config);
        let bug = r
            .first_bug()
            .unwrap_or_else(|| panic!("{} missed it", d.name));
        if d.name == "ses" {
            // SES caches states: the cycle closes long before the limit.
            assert!(bug.schedule.len() < 60, "{}", bug.failure);
        } else {
            assert_eq!(bug.schedule.len(), 60, "{}", d.name);
            assert!(
                bug.failure.message.contains("--max-steps"),
                "{}",
                bug.failure
            );
        }
        assert_eq!(
            bug.failure.kind,
            FailureKind::Livelock,
            "{}: {}",
            d.name,
            bug.failure
        );
        assert_eq!(bug.failure.thread.as_deref(), Some("main"));
    }
}

/// With a state cache the spin returns to a state of its own path: a
/// lasso, reported as a livelock once round the cycle, never cut silently.
#[test]
fn with_a_state_cache_a_lasso_is_a_livelock() {
    for fairness in [None, Some(2)] {
        let (r, _) = explore(
            spin_on_flag(false, false),
            Dfs::unbounded().with_state_cache(1),
            cfg(fairness),
        );
        let bug = r.first_bug().expect("a livelock");
        assert_eq!(bug.failure.kind, FailureKind::Livelock, "{}", bug.failure);
        assert!(
            bug.failure.message.contains("lead back to the state"),
            "{}",
            bug.failure
        );
        assert!(bug.schedule.len() < 20, "{}", bug.schedule.len());
    }
    // With the setter, the cycles a cache cuts leave the setter out: no
    // livelock, and the space is exhausted.
    let (r, _) = explore(
        spin_on_flag(true, false),
        Dfs::unbounded().with_state_cache(1),
        cfg(Some(2)),
    );
    assert!(r.bugs.is_empty() && r.exhausted, "{r:?}");
}

/// The fairness state is restored exactly when resuming: snapshots after
/// every step and none at all give the same exploration.
#[test]
fn fair_exploration_does_not_depend_on_snapshots() {
    for bound in [0, 2] {
        let run = |every| {
            let config = Config {
                snapshot_every_cost: every,
                snapshot_resume_returns: every.and(Some(1)),
                snapshot_forced_prefix: every.is_some(),
                ..cfg(Some(bound))
            };
            let mut rec = Recording::new(Dfs::unbounded());
            let report = rec
                .run(&mut Explorer::new(spin_on_flag(true, false), config))
                .unwrap();
            assert!(report.exhausted);
            schedules(rec.executions())
        };
        assert_eq!(run(Some(0)), run(None), "bound {bound}");
    }
    let (_, rec) = explore(spin_on_flag(true, false), Dfs::unbounded(), cfg(Some(2)));
    assert!(rec
        .executions()
        .iter()
        .all(|e| e.outcome == Outcome::Finished));
    let _ = lit(0);
}
