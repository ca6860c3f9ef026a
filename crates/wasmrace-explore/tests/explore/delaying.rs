//! Delaying explorers through the real `Explorer` (Desai, Qadeer & Seshia,
//! FSE 2015): SES visits exactly the reachable states (the same set as
//! unbounded DFS with a state cache, and as a brute-force search), the
//! cache prunes executions and keeps the bugs, SES and SS find a bug that
//! needs exactly two delays where they should, SS's `1 / L^d` guarantee as a
//! seeded statistical test, frontier snapshots versus replayed prefixes,
//! DFS's cache under a preemption bound, and replay of what they find.

use super::{
    all_config, explore, independent, independent_with_choice, lock_inversion, locked_update,
    lost_update, server,
};
use std::collections::{BTreeMap, BTreeSet};
use wasmrace_explore::model::{reg, Model, ModelBuilder};
use wasmrace_explore::strategies::{
    BuiltinExplorer, RoundRobin, RunToCompletion, Ses, SesOptions, Ss, SsOptions,
};
use wasmrace_explore::trace::{Decision, FailureKind, ThreadPath, Tid};
use wasmrace_explore::{
    Config, Dfs, Explorer, Program, Replay, Report, Start, Status, StepInfo, Strategy, ThreadView,
};

// ---------------------------------------------------------------- tools

/// A program wrapper that records the hash of every state the program is
/// in: after a reset, a step or a restore. The oracle of "visited states",
/// independent of what the strategies count.
struct Visited<P> {
    inner: P,
    seen: BTreeSet<[u8; 32]>,
    info: StepInfo,
}

impl<P: Program> Visited<P> {
    fn new(inner: P) -> Self {
        Visited {
            inner,
            seen: BTreeSet::new(),
            info: StepInfo::default(),
        }
    }
    fn note(&mut self) {
        let h = self.inner.state_hash().expect("models hash");
        self.seen.insert(h);
    }
}

impl<P: Program> Program for Visited<P> {
    type Snapshot = P::Snapshot;
    type Error = P::Error;
    fn reset(&mut self) -> Result<(), P::Error> {
        self.inner.reset()?;
        self.note();
        Ok(())
    }
    fn threads(&self) -> &[ThreadView] {
        self.inner.threads()
    }
    fn status(&self) -> &Status {
        self.inner.status()
    }
    fn step(&mut self, d: Decision) -> Result<&StepInfo, P::Error> {
        self.info = self.inner.step(d)?.clone();
        self.note();
        Ok(&self.info)
    }
    fn snapshot(&mut self) -> Result<Option<P::Snapshot>, P::Error> {
        self.inner.snapshot()
    }
    fn restore(&mut self, s: &P::Snapshot) -> Result<(), P::Error> {
        self.inner.restore(s)?;
        self.note();
        Ok(())
    }
    fn state_hash(&mut self) -> Option<[u8; 32]> {
        self.inner.state_hash()
    }
    fn thread_name(&self, tid: wasmrace_explore::trace::Tid) -> String {
        self.inner.thread_name(tid)
    }
}

/// The states reachable from the initial state, by a search over clones
/// of the model that shares nothing with the strategies.
fn reachable(m: &Model) -> BTreeSet<[u8; 32]> {
    let mut start = m.clone();
    start.reset().unwrap();
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(mut s) = stack.pop() {
        if !seen.insert(s.state_hash().unwrap()) || *s.status() != Status::Running {
            continue;
        }
        for t in s.threads().iter().filter(|t| t.pending.enabled) {
            for alt in 0..t.pending.alts {
                let mut c = s.clone();
                c.step(Decision::new(t.tid, alt)).unwrap();
                stack.push(c);
            }
        }
    }
    seen
}

/// The states `strategy` visits on `m`, and the report.
fn visit<S: Strategy>(m: &Model, strategy: S, cfg: Config) -> (BTreeSet<[u8; 32]>, Report, S) {
    let mut s = strategy;
    let mut ex = Explorer::new(Visited::new(m.clone()), cfg);
    let report = ex.run(&mut s).expect("exploration runs");
    (ex.program.seen, report, s)
}

fn ses(explorer: &str, delay_bound: Option<u32>) -> Ses<BuiltinExplorer> {
    Ses::new(
        BuiltinExplorer::from_name(explorer, 7).unwrap(),
        7,
        SesOptions {
            delay_bound,
            cache_mb: 16,
        },
    )
}

fn stat(r: &Report, name: &str) -> u64 {
    r.strategy_stats
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no stat `{name}` in {:?}", r.strategy_stats))
        .value
}

/// A client-server exchange: each of two clients sends a request and waits
/// for the reply; the server answers two requests, in arrival order.
fn ping_pong() -> Model {
    let mut b = ModelBuilder::new();
    let srv = b.thread("server", |t| {
        // Requests carry the client's id; reply with it.
        t.recv(0).send(reg(0), reg(0)).recv(1).send(reg(1), reg(1));
    });
    let cl = b.thread("client", |t| {
        t.send(reg(0), wasmrace_explore::model::self_id())
            .recv(1)
            .assert(
                reg(1).equals(wasmrace_explore::model::self_id()),
                "wrong reply",
            );
    });
    b.main(|t| {
        t.spawn(srv, 0)
            .spawn_with(cl, 1, [reg(0)])
            .spawn_with(cl, 2, [reg(0)]);
    });
    b.build().unwrap()
}

fn models() -> Vec<(&'static str, Model)> {
    vec![
        ("independent(2)", independent(2)),
        ("choice(2, 3)", independent_with_choice(2, 3)),
        ("lost_update", lost_update()),
        ("locked_update", locked_update()),
        ("lock_inversion", lock_inversion()),
        ("server(3)", server(3, true)),
        ("ping_pong", ping_pong()),
    ]
}

// ---------------------------------------------------------------- SES soundness

#[test]
fn unbounded_ses_visits_exactly_the_states_unbounded_dfs_with_a_state_cache_visits() {
    for (name, m) in models() {
        let all = reachable(&m);
        let (dfs_seen, dfs_report, _) =
            visit(&m, Dfs::unbounded().with_state_cache(16), all_config());
        assert_eq!(
            dfs_seen, all,
            "{name}: DFS with a cache reaches every state"
        );
        assert!(dfs_report.exhausted, "{name}");
        for explorer in BuiltinExplorer::NAMES {
            let (seen, report, s) = visit(&m, ses(explorer, None), all_config());
            assert_eq!(seen, dfs_seen, "{name} with {explorer}");
            assert!(
                report.exhausted && report.strategy_bound.is_none(),
                "{name}"
            );
            // Every non-final state is explored from exactly once.
            let running = reachable_running(&m);
            assert_eq!(s.states_explored(), running, "{name} with {explorer}");
            assert_eq!(stat(&report, "states explored"), running);
            assert_eq!(stat(&dfs_report, "states explored"), running);
        }
    }
}

/// Reachable states where some thread can still move.
fn reachable_running(m: &Model) -> u64 {
    let mut start = m.clone();
    start.reset().unwrap();
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    let mut running = 0;
    while let Some(mut s) = stack.pop() {
        if !seen.insert(s.state_hash().unwrap()) || *s.status() != Status::Running {
            continue;
        }
        running += 1;
        for t in s.threads().iter().filter(|t| t.pending.enabled) {
            for alt in 0..t.pending.alts {
                let mut c = s.clone();
                c.step(Decision::new(t.tid, alt)).unwrap();
                stack.push(c);
            }
        }
    }
    running
}

#[test]
fn each_delay_bound_visits_more_and_the_bound_says_which_knob_raises_it() {
    let m = server(3, false);
    let all = reachable(&m);
    let mut previous = BTreeSet::new();
    let mut bound = 0;
    loop {
        let (seen, report, s) = visit(&m, ses("rr", Some(bound)), all_config());
        assert!(seen.is_superset(&previous), "bound {bound}");
        assert!(seen.is_subset(&all));
        assert!(report.exhausted);
        if seen == all {
            // The last bound left nothing in the frontier... or only states
            // already covered, which SES cannot know without exploring.
            break;
        }
        let hit = report
            .strategy_bound
            .expect("a bound that cut states says so");
        assert_eq!(
            (hit.bound, hit.value, hit.knob),
            ("delays", u64::from(bound), "--delay-bound")
        );
        assert_eq!(s.delay_bound(), bound);
        previous = seen;
        bound += 1;
        assert!(bound < 20, "SES must reach every state with few delays");
    }
    assert!(bound >= 2, "server(3) needs delays to reach every state");
}

// ---------------------------------------------------------------- the cache

fn failures(r: &Report) -> BTreeSet<(String, String)> {
    r.bugs
        .iter()
        .map(|b| (b.failure.kind.name().to_string(), b.failure.message.clone()))
        .collect()
}

#[test]
fn the_cache_prunes_executions_and_keeps_every_bug() {
    let mut table = Vec::new();
    for (name, m) in models() {
        let (_, plain, _) = visit(&m, Dfs::unbounded(), all_config());
        let (_, cached, dfs) = visit(&m, Dfs::unbounded().with_state_cache(16), all_config());
        assert_eq!(failures(&plain), failures(&cached), "{name}: same bugs");
        assert!(cached.executions <= plain.executions, "{name}");
        assert_eq!(dfs.cache_hits(), stat(&cached, "cache hits"));
        // SES without its cache is still sound, and explores more.
        let (_, ses_cached, _) = visit(&m, ses("rtc", None), all_config());
        let uncached = Ses::new(
            RunToCompletion::new(),
            0,
            SesOptions {
                delay_bound: None,
                cache_mb: 0,
            },
        );
        let (seen_uncached, ses_plain, _) = visit(&m, uncached, all_config());
        assert_eq!(seen_uncached, reachable(&m), "{name}");
        assert_eq!(failures(&ses_plain), failures(&ses_cached), "{name}");
        assert!(ses_cached.executions <= ses_plain.executions, "{name}");
        assert_eq!(ses_plain.state_hashes, 0, "no cache, no hashing");
        table.push((
            name,
            plain.executions,
            cached.executions,
            ses_plain.executions,
            ses_cached.executions,
        ));
    }
    // On models with independent threads the cache cuts most executions.
    let (_, plain, cached, ses_plain, ses_cached) = table[0];
    assert!(cached * 3 < plain, "{table:?}");
    assert!(ses_cached * 3 < ses_plain, "{table:?}");
    eprintln!("model: dfs / dfs+cache / ses(rtc) / ses(rtc)+cache executions");
    for row in &table {
        eprintln!("{row:?}");
    }
}

#[test]
fn dfs_state_cache_under_a_preemption_bound_finds_the_same_bugs() {
    for bound in 0..=2 {
        for (name, m) in models() {
            let (_, plain, _) = visit(&m, Dfs::with_preemption_bound(bound), all_config());
            let (_, cached, _) = visit(
                &m,
                Dfs::with_preemption_bound(bound).with_state_cache(16),
                all_config(),
            );
            assert_eq!(failures(&plain), failures(&cached), "{name}, bound {bound}");
            assert!(
                cached.executions <= plain.executions,
                "{name}, bound {bound}"
            );
        }
    }
    // The lost update needs one preemption, with or without the cache.
    let (_, r0, _) = visit(
        &lost_update(),
        Dfs::with_preemption_bound(0).with_state_cache(16),
        all_config(),
    );
    assert!(r0.bugs.is_empty());
    let (_, r1, _) = visit(
        &lost_update(),
        Dfs::with_preemption_bound(1).with_state_cache(16),
        all_config(),
    );
    assert_eq!(r1.bugs[0].failure.message, "lost update");
}

/// A thread alone in a `yield_now` loop goes back to a state of its own
/// path: with a state cache that lasso is a livelock, found long before the
/// step limit (issue #11: it used to be cut silently, and the run ended
/// "no bug").
#[test]
fn with_a_state_cache_a_yield_loop_is_a_livelock_before_the_step_limit() {
    let mut b = ModelBuilder::new();
    b.main(|t| {
        t.label("spin").yield_now().jump("spin");
    });
    let m = b.build().unwrap();
    let cfg = Config {
        max_steps: 50,
        ..Config::default()
    };
    let (report, _) = explore(m.clone(), Dfs::unbounded().with_state_cache(1), cfg.clone());
    let bug = report.first_bug().expect("a livelock");
    assert_eq!(bug.failure.kind, FailureKind::Livelock, "{}", bug.failure);
    assert!(bug.schedule.len() < 50);
    let (report, _) = explore(m, ses("rr", None), cfg);
    let bug = report.first_bug().expect("a livelock");
    assert_eq!(bug.failure.kind, FailureKind::Livelock, "{}", bug.failure);
    assert!(bug.schedule.len() < 50);
}

// ---------------------------------------------------------------- frontier storage

#[test]
fn frontier_snapshots_and_replayed_prefixes_give_the_same_exploration() {
    for (name, m) in models() {
        let snapshots = Config {
            max_saved_snapshots: 1 << 20,
            ..all_config()
        };
        let prefixes = Config {
            max_saved_snapshots: 0,
            ..all_config()
        };
        let replay_only = Config {
            max_saved_snapshots: 0,
            ..all_config().without_snapshots()
        };
        let (ra, a) = explore(m.clone(), ses("prr", None), snapshots);
        let (rb, b) = explore(m.clone(), ses("prr", None), prefixes);
        let (rc, c) = explore(m.clone(), ses("prr", None), replay_only);
        assert_eq!(a.executions(), b.executions(), "{name}");
        assert_eq!(a.executions(), c.executions(), "{name}");
        assert_eq!(ra.bugs, rb.bugs);
        assert_eq!(ra.bugs, rc.bugs);
        let saved = ra.saved_with_snapshot;
        assert_eq!(ra.saved_as_prefix, 0);
        assert_eq!(
            (rb.saved_with_snapshot, rb.saved_as_prefix),
            (0, saved),
            "{name}"
        );
        assert_eq!(ra.saved_restored, rb.saved_replayed, "{name}");
        assert!(rc.replayed_steps >= rb.replayed_steps);
        let starts = a
            .executions()
            .iter()
            .filter(|r| matches!(r.start, Start::Saved { .. }))
            .count() as u64;
        assert_eq!(starts, ra.saved_restored, "{name}");
    }
    // Some model must have needed the frontier at all.
    let (r, _) = explore(server(3, false), ses("rr", None), all_config());
    assert!(r.saved_restored > 0, "{r:?}");
}

// ---------------------------------------------------------------- a bug that needs exactly two delays

/// Main spawns a writer and a reader and exits. The writer writes
/// `1, 2, ..., m` to `x`; the reader reads `x` twice and fails if it saw
/// `1` and then `m`. Round robin runs the writer to completion first, so the
/// reader must run right after the first write (one delay: the writer is
/// moved behind the reader) and the writer must finish before the second
/// read (a second delay: the reader is moved behind the writer). Every
/// execution takes `m + 7` steps.
fn needs_two_delays(m: i64) -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let writer = b.thread("writer", |t| {
        for v in 1..=m {
            t.write(x, v);
        }
    });
    let reader = b.thread("reader", |t| {
        t.read(x, 0).read(x, 1).assert(
            !(reg(0).equals(1).and(reg(1).equals(m))),
            "saw 1 then the last write",
        );
    });
    b.main(|t| {
        t.spawn(writer, 0).spawn(reader, 1);
    });
    b.build().unwrap()
}

#[test]
fn ses_finds_the_two_delay_bug_with_two_delays_and_not_one() {
    let m = needs_two_delays(3);
    let cfg = Config::default;
    let (one, _) = explore(m.clone(), ses("rr", Some(1)), cfg());
    assert!(one.bugs.is_empty());
    assert_eq!(one.strategy_bound.unwrap().knob, "--delay-bound");
    let (two, _) = explore(m.clone(), ses("rr", Some(2)), cfg());
    let bug = two.first_bug().expect("found with two delays");
    assert_eq!(bug.failure.message, "saw 1 then the last write");
    assert_eq!(stat(&two, "delay bound reached"), 2);
    // Unbounded SES finds it in the same round.
    let (any, _) = explore(m, ses("rr", None), cfg());
    assert_eq!(any.first_bug().unwrap().failure, bug.failure);
    assert_eq!(stat(&any, "delay bound reached"), 2);
}

/// FSE 2015 Theorem 2: with a sound explorer, SS samples any execution with
/// `d` delays with probability at least `1 / L^d`. The two-delay bug above is
/// one execution of the round-robin explorer with exactly two delays (at
/// step 4, before the writer's second write, and then right before the
/// reader's second read), all executions are `L = m + 7` steps long, and
/// the first delay leaves `m + 3` steps: SS hits it with probability
/// exactly `1 / ((m + 7)(m + 3))`, at least `1 / L^2`.
#[test]
fn ss_samples_a_two_delay_bug_at_least_one_in_l_squared() {
    let m = 3;
    let model = needs_two_delays(m);
    let l = (m + 7) as f64;
    let n: u64 = 3000;
    let cfg = Config {
        max_executions: 6 * n,
        stop_on_first_bug: false,
        ..Config::default()
    };
    let ss = Ss::new(RoundRobin::new(), 11, SsOptions { c1: n, c2: 1 });
    let (report, rec) = explore(model, ss, cfg);
    let ss = rec.inner();
    for db in 0..2 {
        let c = ss.count(db);
        assert_eq!((c.samples, c.failing), (n, 0), "no bug with {db} delays");
    }
    let two = ss.count(2);
    assert_eq!(two.samples, n);
    let rate = two.failing as f64 / n as f64;
    let bound = 1.0 / (l * l);
    let exact = 1.0 / ((m + 7) * (m + 3)) as f64;
    let sigma = (exact * (1.0 - exact) / n as f64).sqrt();
    eprintln!("SS two-delay bug: rate {rate:.4} over {n} samples, bound 1/L^2 = {bound:.4}, exact {exact:.4}");
    assert!(rate >= bound, "rate {rate} below 1/L^2 = {bound}");
    assert!(
        (rate - exact).abs() <= 4.0 * sigma,
        "rate {rate}, exact {exact}"
    );
    // Every failing sample is the same execution.
    let failing: BTreeSet<Vec<Decision>> = report.bugs.iter().map(|b| b.schedule.clone()).collect();
    assert_eq!(failing.len(), 1);
}

// ---------------------------------------------------------------- replay, determinism

fn replays(m: Model, report: &Report) {
    let bug = report.first_bug().expect("bug found").clone();
    let mut r = Replay::new(bug.schedule.clone());
    let again = Explorer::new(m, Config::default()).run(&mut r).unwrap();
    assert!(r.reproduced(), "{:?}", r.divergence());
    assert_eq!(again.first_bug().unwrap().failure, bug.failure);
}

#[test]
fn ses_and_ss_schedules_replay_to_the_same_failure() {
    for explorer in BuiltinExplorer::NAMES {
        for m in [lost_update(), lock_inversion(), needs_two_delays(3)] {
            let (r, _) = explore(m.clone(), ses(explorer, None), Config::default());
            replays(m.clone(), &r);
            // Also when the frontier is replayed rather than restored.
            let (r, _) = explore(
                m.clone(),
                ses(explorer, None),
                Config {
                    max_saved_snapshots: 0,
                    ..Config::default()
                },
            );
            replays(m.clone(), &r);
            let ss = Ss::new(
                BuiltinExplorer::from_name(explorer, 3).unwrap(),
                3,
                SsOptions::default(),
            );
            let (r, _) = explore(m.clone(), ss, Config::default());
            replays(m, &r);
        }
    }
}

#[test]
fn ses_is_deterministic_and_prr_depends_on_the_seed() {
    let m = server(3, false);
    let run = |explorer: &str, seed| {
        let s = Ses::new(
            BuiltinExplorer::from_name(explorer, seed).unwrap(),
            seed,
            SesOptions::default(),
        );
        let (_, rec) = explore(m.clone(), s, all_config());
        rec.executions()
            .iter()
            .map(|r| r.decisions.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(run("rtc", 1), run("rtc", 1));
    // Only PRR draws from the seed, so only it reports one.
    assert_eq!(ses("rr", None).standing().seed, 0);
    assert_eq!(ses("prr", None).standing().seed, 7);
    assert_eq!(run("rr", 1), run("rr", 2), "RR ignores the seed");
    assert_eq!(run("prr", 5), run("prr", 5));
    let orders: BTreeSet<_> = (0..6).map(|s| run("prr", s)).collect();
    assert!(orders.len() > 1, "PRR's order depends on its seed");
}

/// The explorers stratify differently: their delay-free executions of the
/// ping-pong exchange differ. RR runs main until it exits; RTC hands each
/// request to the server and each reply to its client at once.
#[test]
fn explorers_give_different_first_executions() {
    let m = ping_pong();
    let main = ThreadPath::main();
    let (server, c1, c2) = (
        main.child(1).tid(),
        main.child(2).tid(),
        main.child(3).tid(),
    );
    let mut firsts = BTreeMap::new();
    for explorer in BuiltinExplorer::NAMES {
        let (_, rec) = explore(
            m.clone(),
            ses(explorer, Some(0)),
            Config {
                max_executions: 1,
                ..all_config()
            },
        );
        let tids: Vec<Tid> = rec.executions()[0]
            .decisions
            .iter()
            .map(|d| d.tid)
            .collect();
        firsts.insert(*explorer, tids);
    }
    let (rr, rtc) = (&firsts["rr"], &firsts["rtc"]);
    assert!(rr[..4].iter().all(|t| *t == main.tid()), "{rr:?}");
    // RR: client 1 sends and blocks (to the tail), the server takes the
    // request, answers and blocks, client 2 sends, client 1 takes its reply.
    assert_eq!(&rr[4..9], &[c1, server, server, c2, c1]);
    // RTC: client 1's request goes straight to the server, whose reply goes
    // straight back.
    assert_eq!(&rtc[4..9], &[c1, server, server, c1, c1]);
}
