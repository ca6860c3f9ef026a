//! PULSE procrastination through the real `Explorer`: the paper's
//! world-hello example (Fig. 1) with a chain of 100 proxies, which random
//! scheduling never breaks and first-order procrastination breaks on its
//! first procrastinated schedule; replay of what it finds; determinism; and
//! the Level/Limit knobs.

use std::time::Instant;
use wasmrace_explore::model::{parent_id, reg, self_id, Model, ModelBuilder};
use wasmrace_explore::strategies::{Procrastination, ProcrastinationOptions, RunKind};
use wasmrace_explore::trace::{Access, Decision, FailureKind, Oid, OpKind, ThreadPath};
use wasmrace_explore::{
    Config, Context, Explorer, Outcome, RandomWalk, Recording, Replay, Start, StepInfo, Strategy,
};

const HELLO: i64 = 1;
const WORLD: i64 = 2;

/// Fig. 1 "World-Hello with Proxy", as the guest in
/// fixtures/guests/world_hello ports it: main (the receiver C) spawns a
/// chain of `n` proxies from the tail (proxy `k` forwards one message to
/// proxy `k - 1`, proxy 1 to C), then the client A, which sends `world` to
/// the head of the chain and then `hello` straight to C. C asserts that
/// `hello` arrives first. Sends deliver at once (as on the host), so the bug
/// needs `world` to get through all `n` proxies before A's second send.
fn world_hello(n: usize) -> Model {
    let mut b = ModelBuilder::new();
    // r0 = the thread to forward to; r1 = the message.
    let proxy = b.thread("proxy", |t| {
        t.recv(1).send(reg(0), reg(1));
    });
    // r0 = head of the chain, r1 = C.
    let client = b.thread("client", |t| {
        t.send(reg(0), WORLD).send(reg(1), HELLO);
    });
    b.main(|t| {
        // r1 = the head of the chain built so far, C itself at first.
        t.set(1, self_id());
        for _ in 0..n {
            t.spawn_with(proxy, 1, [reg(1)]);
        }
        t.spawn_with(client, 2, [reg(1), self_id()])
            .recv(3)
            .recv(4)
            .assert(
                reg(3).equals(HELLO).and(reg(4).equals(WORLD)),
                "world overtook hello",
            );
    });
    b.build().unwrap()
}

fn config(max_executions: u64) -> Config {
    Config {
        max_executions,
        ..Config::default()
    }
}

/// Random executions of the 100-proxy chain the never-finds test runs. The
/// paper's 10,000 took 53 s here (4,070,000 model steps; each step of this
/// 100-thread model recomputes every live thread's pending operation) and
/// 500 took 5.3 s on the shared 2-core machine, so the test runs the largest
/// round count that stays under ~3 s there and leaves the odds to
/// `random_walk_odds_fall_fourfold_with_each_proxy`.
const RANDOM_EXECUTIONS: u64 = 250;

#[test]
fn random_walk_never_sees_world_overtake_hello_through_100_proxies() {
    let started = Instant::now();
    let mut e = Explorer::new(world_hello(100), config(RANDOM_EXECUTIONS));
    let r = e.run(&mut RandomWalk::new(1)).unwrap();
    eprintln!(
        "random walk, 100 proxies: {} executions, {} steps in {:?}",
        r.executions,
        r.steps,
        started.elapsed()
    );
    assert_eq!(r.executions, RANDOM_EXECUTIONS);
    assert!(r.bugs.is_empty(), "{:?}", r.first_bug());
}

#[test]
fn random_walk_odds_fall_fourfold_with_each_proxy() {
    // The statistical side of the paper's "1 out of 2^100". Here each proxy
    // is two steps (its receive and its send), and A's pending send of
    // `hello` competes with each of them, so every proxy costs the random
    // walk about two coin flips: hits fall about fourfold per proxy
    // (measured 5043, 1244, 319, 66 of 20,000 for 1..=4 proxies, seed 7).
    // Extrapolated, 100 proxies fail about once in 4^100 = 2^200 runs.
    let hits: Vec<u64> = (1..=4)
        .map(|n| {
            let mut e = Explorer::new(
                world_hello(n),
                Config {
                    stop_on_first_bug: false,
                    ..config(20_000)
                },
            );
            e.run(&mut RandomWalk::new(7)).unwrap().failing_executions
        })
        .collect();
    eprintln!("random walk hits per 20,000 executions, 1..=4 proxies: {hits:?}");
    assert!(hits[0] > 4000, "{hits:?}");
    for w in hits.windows(2) {
        // At least threefold, with slack for sampling noise.
        assert!(w[1] * 3 <= w[0] + 30, "{hits:?}");
    }
}

#[test]
fn first_order_procrastination_finds_it_on_the_first_procrastinated_schedule() {
    let main = ThreadPath::main();
    let c = main.tid();
    let client = main.child(101).tid();
    let last_proxy = main.child(1).tid(); // spawned first: the tail
    for seed in 0..20 {
        let mut s = Procrastination::new(seed);
        let mut e = Explorer::new(world_hello(100), config(1000));
        let r = e.run(&mut s).unwrap();
        let bug = r.first_bug().expect("found");
        // Execution 1 is the random base; execution 2 the first
        // procrastinated schedule, as in §3.1.
        assert_eq!(bug.execution, 2, "seed {seed}");
        assert_eq!(bug.failure.kind, FailureKind::Panic);
        assert_eq!(bug.failure.message, "world overtook hello");
        // It is the paper's one conflict: A's delivery to C postponed past
        // the last proxy's delivery to C.
        let RunKind::Procrastinated {
            level: 1,
            probe: true,
            moved,
            past,
            ..
        } = s.run_kind()
        else {
            panic!("seed {seed}: {:?}", s.run_kind())
        };
        let to_c = vec![Access::write(Oid::mailbox(c))];
        assert_eq!(
            (moved.tid, moved.op, &moved.accesses),
            (client, OpKind::Send, &to_c)
        );
        assert_eq!(
            (past.tid, past.op, &past.accesses),
            (last_proxy, OpKind::Send, &to_c)
        );
        assert_eq!(s.stats().bases, 1);
        assert_eq!(s.stats().probes, 1);
    }
}

#[test]
fn a_bug_it_finds_replays_to_the_same_failure() {
    let mut e = Explorer::new(world_hello(100), config(1000));
    let bug = e
        .run(&mut Procrastination::new(3))
        .unwrap()
        .first_bug()
        .unwrap()
        .clone();
    let mut replay = Replay::new(bug.schedule.clone());
    let mut e = Explorer::new(world_hello(100), config(10));
    let r = e.run(&mut replay).unwrap();
    assert!(replay.reproduced(), "{:?}", replay.divergence());
    assert_eq!(
        replay.outcome(),
        Some(&Outcome::Failed(bug.failure.clone()))
    );
    assert_eq!(r.first_bug().unwrap().schedule, bug.schedule);
}

/// A model without bugs but with many conflicts: three threads that each
/// write and read one variable and then send to main.
fn busy() -> Model {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let w = b.thread("w", |t| {
        t.write(x, 1).read(x, 0).send(parent_id(), 1);
    });
    b.main(|t| {
        t.spawn(w, 0)
            .spawn(w, 1)
            .spawn(w, 2)
            .recv(3)
            .recv(3)
            .recv(3);
    });
    b.build().unwrap()
}

/// Records what kind of run each execution was.
struct Kinds(Procrastination, Vec<RunKind>);

impl Strategy for Kinds {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn begin(&mut self, n: u64) -> Option<Start> {
        self.0.begin(n)
    }
    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        self.0.decide(ctx)
    }
    fn observe(&mut self, step: &StepInfo) {
        self.0.observe(step)
    }
    fn end(&mut self, outcome: &Outcome) {
        self.0.end(outcome);
        self.1.push(self.0.run_kind());
    }
}

/// Runs `n` executions of `busy` and returns the recorded schedules and
/// the kind of each run.
fn record(seed: u64, options: ProcrastinationOptions, n: u64) -> (Recording<Kinds>, Vec<RunKind>) {
    let mut rec = Recording::new(Kinds(
        Procrastination::with_options(seed, options),
        Vec::new(),
    ));
    let r = rec.run(&mut Explorer::new(busy(), config(n))).unwrap();
    assert!(r.bugs.is_empty());
    let kinds = rec.inner().1.clone();
    (rec, kinds)
}

/// Per round (a base and what follows it): (level-1 runs, level-2 runs),
/// checking that level-2 runs come after every level-1 run of the round.
fn rounds(kinds: &[RunKind]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for k in kinds {
        match k {
            RunKind::Base => out.push((0, 0)),
            RunKind::Procrastinated { level: 1, .. } => {
                let r = out.last_mut().unwrap();
                assert_eq!(r.1, 0, "breadth-first: {kinds:?}");
                r.0 += 1;
            }
            RunKind::Procrastinated { level: 2, .. } => out.last_mut().unwrap().1 += 1,
            k => panic!("{k:?}"),
        }
    }
    out
}

#[test]
fn the_same_seed_gives_the_same_schedules() {
    let o = ProcrastinationOptions {
        level: 2,
        limit: vec![None, Some(5)],
    };
    let (a, ka) = record(11, o.clone(), 120);
    let (b, kb) = record(11, o.clone(), 120);
    assert_eq!(a.executions(), b.executions());
    assert_eq!(ka, kb);
    assert_eq!(a.inner().0.stats(), b.inner().0.stats());
    let (c, _) = record(12, o, 120);
    assert_ne!(a.executions(), c.executions());
    // Steps 3 and 4 both ran, and the second level started.
    let st = a.inner().0.stats();
    assert!(st.probes > 0 && st.procrastinated > 0, "{st:?}");
    assert!(ka
        .iter()
        .any(|k| matches!(k, RunKind::Procrastinated { level: 2, .. })));
}

#[test]
fn level_and_limit_bound_the_executions_per_schedule() {
    // Level 1, Limit <3>: a base and at most 3 procrastinations.
    let one = ProcrastinationOptions {
        level: 1,
        limit: vec![Some(3)],
    };
    let (_, kinds) = record(1, one, 200);
    let rs = rounds(&kinds);
    eprintln!("level 1 <3>: {rs:?}");
    assert!(rs.iter().all(|&(l1, l2)| l1 <= 3 && l2 == 0), "{rs:?}");
    assert!(
        rs.iter().filter(|r| r.0 == 3).count() * 2 > rs.len(),
        "{rs:?}"
    );
    // Level 2, Limit <3, 2>: a base, at most 3 first-order runs and 2
    // second-order runs for each of them.
    let two = ProcrastinationOptions {
        level: 2,
        limit: vec![Some(3), Some(2)],
    };
    let (_, kinds) = record(1, two, 300);
    let rs = rounds(&kinds);
    eprintln!("level 2 <3, 2>: {rs:?}");
    assert!(rs.iter().all(|&(l1, l2)| l1 <= 3 && l2 <= 2 * l1), "{rs:?}");
    assert!(rs.contains(&(3, 6)), "{rs:?}");
    // Level 0 is plain PULSE.
    let zero = ProcrastinationOptions {
        level: 0,
        limit: vec![],
    };
    let (rec, kinds) = record(1, zero, 20);
    assert!(kinds.iter().all(|k| *k == RunKind::Base));
    assert_eq!(rec.inner().0.stats().bases, 20);
}
