//! Engine benchmarks (criterion): executions per second, per-step cost
//! (each step is a thread switch through Asyncify unwind/rewind), and
//! snapshot / restore / state-hash times, on the 2-thread × 10-step
//! `bench_two_by_ten` guest test. Targets are in ARCHITECTURE.md; the
//! numbers are measured here, never asserted in tests. The race detector
//! is off: these measure the engine; the detector's cost is
//! `scripts/race-overhead.sh`'s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use wasmrace_explore::{Program, Status};
use wasmrace_host::{Guest, HostConfig, WasmProgram};
use wasmrace_trace::Decision;

fn guest() -> Guest {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-cache");
    let config = HostConfig {
        cache_dir: Some(dir),
        data_races: wasmrace_trace::DataRaces::Off,
        ..HostConfig::default()
    };
    Guest::load(&wasmrace_fixtures::path("sdk_smoke"), config).expect("load sdk_smoke")
}

/// Runs one execution to the end, alternating threads round-robin so that
/// nearly every step switches thread. Returns the number of steps.
fn run_one(p: &mut WasmProgram) -> u64 {
    p.reset().unwrap();
    let mut steps = 0;
    let mut turn = 0usize;
    while matches!(p.status(), Status::Running) {
        let enabled: Vec<_> = p
            .threads()
            .iter()
            .filter(|t| t.pending.enabled)
            .map(|t| t.tid)
            .collect();
        let tid = enabled[turn % enabled.len()];
        turn += 1;
        p.step(Decision::new(tid, 0)).unwrap();
        steps += 1;
    }
    steps
}

fn bench(c: &mut Criterion) {
    let g = guest();
    let mut p = g.program("bench_two_by_ten").unwrap();
    let steps = run_one(&mut p);
    assert!(matches!(p.status(), Status::Finished));

    let mut group = c.benchmark_group("two_by_ten");
    group.throughput(Throughput::Elements(1));
    group.bench_function("execution", |b| b.iter(|| black_box(run_one(&mut p))));
    group.throughput(Throughput::Elements(steps));
    group.bench_function("execution_per_step", |b| {
        b.iter(|| black_box(run_one(&mut p)))
    });
    group.finish();

    // Reset alone: fresh instance + main's first segment.
    c.bench_function("reset", |b| b.iter(|| p.reset().unwrap()));

    // One step in the middle of an execution (a thread switch), measured by
    // restoring to the same point each time outside the timed part.
    p.reset().unwrap();
    for _ in 0..6 {
        let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
    }
    let mid = p.snapshot().unwrap().unwrap();
    c.bench_function("snapshot", |b| b.iter(|| black_box(p.snapshot().unwrap())));
    c.bench_function("restore", |b| {
        b.iter(|| p.restore(black_box(&mid)).unwrap())
    });
    // A restore after one step from `mid`, which wrote a few pages (the
    // thread's stack and Asyncify buffer, the host's output): the
    // dirty-page map lets the restore write only those. The step is not
    // timed.
    let step_from_mid = |p: &mut WasmProgram| {
        p.restore(&mid).unwrap();
        let t = p.threads().iter().rfind(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
    };
    step_from_mid(&mut p);
    p.restore(&mid).unwrap();
    eprintln!(
        "restore_few_pages: the restore wrote {:?} pages",
        p.restored_pages()
    );
    c.bench_function("restore_few_pages", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                step_from_mid(&mut p);
                let start = std::time::Instant::now();
                p.restore(black_box(&mid)).unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    // The state hash caches each page's digest: hashing an unchanged state
    // reads no page, and after a step only the pages the step wrote are
    // read again (`state_hash_after_step`, the step not timed).
    c.bench_function("state_hash", |b| b.iter(|| black_box(p.state_hash())));
    c.bench_function("state_hash_after_step", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                step_from_mid(&mut p);
                let start = std::time::Instant::now();
                black_box(p.state_hash());
                total += start.elapsed();
            }
            total
        })
    });
    // Steps in a running execution, every one a thread switch (round
    // robin): whole executions are timed without their reset, and the time
    // is divided by the steps. No clock read per step, so this is the cost
    // of a switch itself.
    c.bench_function("step", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            let mut done = 0;
            while done < iters {
                p.reset().unwrap();
                let mut turn = 0usize;
                let start = std::time::Instant::now();
                while done < iters && matches!(p.status(), Status::Running) {
                    let enabled = p.threads().iter().filter(|t| t.pending.enabled);
                    let n = enabled.clone().count();
                    let tid = enabled.clone().nth(turn % n).unwrap().tid;
                    turn += 1;
                    p.step(Decision::new(tid, 0)).unwrap();
                    done += 1;
                }
                total += start.elapsed();
            }
            total
        })
    });
    // One step right after a restore: the step a DFS backtrack makes first,
    // with the clock read around it (adds some tens of nanoseconds).
    c.bench_function("step_switch", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                p.restore(&mid).unwrap();
                let t = p.threads().iter().rfind(|t| t.pending.enabled).unwrap().tid;
                let start = std::time::Instant::now();
                p.step(Decision::new(t, 0)).unwrap();
                total += start.elapsed();
            }
            total
        })
    });
}

/// Per-step cost of each strategy on the same bug-free workload: whole
/// explorations of 200 executions, throughput in steps. Issue #3's target:
/// no strategy more than 20% per step over random walk.
fn strategies(c: &mut Criterion) {
    use wasmrace_explore::{Config, Explorer};
    use wasmrace_host::strategies::StrategyOptions;
    use wasmrace_host::StrategyChoice;
    let g = guest();
    let mut group = c.benchmark_group("strategy_per_step");
    let choices = [
        StrategyChoice::named("random"),
        StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(Some(2)),
            ..StrategyOptions::NONE
        }),
        StrategyChoice::named("pct").with(&StrategyOptions {
            depth: Some(3),
            ..StrategyOptions::NONE
        }),
        StrategyChoice::named("basic-pos"),
        StrategyChoice::named("pos"),
        StrategyChoice::named("pos-star"),
        StrategyChoice::named("racefuzzer"),
        StrategyChoice::named("procrastination"),
        StrategyChoice::default_portfolio(),
    ];
    for choice in choices {
        let run = || {
            let program = g.program("bench_two_by_ten").unwrap();
            let config = Config {
                max_executions: 200,
                ..Config::default()
            };
            let mut explorer = Explorer::new(program, config);
            let mut strategy = choice.build(1);
            explorer.run(&mut *strategy).unwrap()
        };
        let steps = run().steps;
        group.throughput(Throughput::Elements(steps));
        group.bench_function(choice.name(), |b| b.iter(|| black_box(run())));
    }
    group.finish();
}

criterion_group!(benches, bench, strategies);
criterion_main!(benches);
