//! Fixed workloads for instruction-count profiling of the stepping engine
//! and the strategies on the `bench_two_by_ten` fixture (two threads × ten
//! steps, 27 steps per execution). Instruction counts are repeatable on a
//! loaded machine where timings are not. Build with `cargo build --release
//! -p wasmrace-host --example step_profile`, then:
//!
//! - `step_profile N` runs N round-robin executions on the engine alone
//!   (no explorer): `valgrind --tool=callgrind
//!   target/release/examples/step_profile 1200`, and `Program::step`'s
//!   inclusive cost over the printed steps is the cost of one step.
//! - `step_profile --strategy NAME [--seeds K] [--executions E]` explores
//!   with the registered strategy `NAME` as `wasmrace check --strategy NAME`
//!   runs it (its defaults), seeds `0..K` (default 5), `E` executions each
//!   (default 200), one program reused: `valgrind --tool=callgrind
//!   --toggle-collect='*step_profile::explore*'
//!   target/release/examples/step_profile --strategy pct` counts the
//!   exploration alone (loading excluded), explorer, strategy and engine
//!   together; divided by the printed steps, the cost per step.
//! - `step_profile --snapshot-size` prints the size of the snapshot the
//!   `snapshot` benchmark (`benches/engine.rs`) takes: the guest's memory
//!   and the bytes of non-zero pages stored.

use wasmrace_host::{
    Config, Decision, Explorer, Guest, HostConfig, Program, Status, StrategyChoice, WasmProgram,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::env::temp_dir().join("wasmrace-step-profile-cache");
    // The engine's own cost: the race detector's is race-overhead.sh's.
    let config = HostConfig {
        cache_dir: Some(dir),
        data_races: wasmrace_trace::DataRaces::Off,
        ..HostConfig::default()
    };
    let guest = Guest::load(&wasmrace_fixtures::path("sdk_smoke"), config).expect("load sdk_smoke");
    let p = guest.program("bench_two_by_ten").expect("bench_two_by_ten");
    match args.first().map(String::as_str) {
        Some("--strategy") => strategy(p, &args),
        Some("--snapshot-size") => snapshot_size(p),
        n => round_robin(p, n.and_then(|a| a.parse().ok()).unwrap_or(1000)),
    }
}

/// `n` round-robin executions on the engine alone.
fn round_robin(mut p: WasmProgram, n: u64) {
    let mut steps = 0u64;
    for _ in 0..n {
        p.reset().unwrap();
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
    }
    println!("{n} executions, {steps} steps");
}

/// The value after `flag` in `args`, parsed, or `default`.
fn flag(args: &[String], flag: &str, default: u64) -> u64 {
    match args.iter().position(|a| a == flag) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("`{flag}` takes a number")),
        None => default,
    }
}

/// The registered strategy named in `args`, over several seeds.
fn strategy(p: WasmProgram, args: &[String]) {
    let name = args.get(1).expect("`--strategy` takes a strategy name");
    let choice = StrategyChoice::from_name(name).unwrap_or_else(|| {
        panic!(
            "no strategy is called `{name}`; one of {:?}",
            wasmrace_host::STRATEGY_NAMES
        )
    });
    let seeds = flag(args, "--seeds", 5);
    let executions = flag(args, "--executions", 200);
    let (runs, steps, replayed) = explore(p, &choice, seeds, executions);
    println!(
        "{}: seeds 0..{seeds}, {runs} executions, {steps} steps ({replayed} of them replayed)",
        choice.name()
    );
}

/// The measured part (`--toggle-collect='*step_profile::explore*'`):
/// executions, steps and replayed steps over all seeds.
#[inline(never)]
fn explore(
    mut p: WasmProgram,
    choice: &StrategyChoice,
    seeds: u64,
    executions: u64,
) -> (u64, u64, u64) {
    let (mut runs, mut steps, mut replayed) = (0, 0, 0);
    for seed in 0..seeds {
        let config = Config {
            max_executions: executions,
            ..Config::default()
        };
        let mut explorer = Explorer::new(p, config);
        let mut s = choice.build(seed);
        let r = explorer.run(&mut *s).expect("exploration runs");
        assert!(r.bugs.is_empty(), "bench_two_by_ten has no bug");
        (runs, steps, replayed) = (
            runs + r.executions,
            steps + r.steps,
            replayed + r.replayed_steps,
        );
        p = explorer.program;
    }
    (runs, steps, replayed)
}

/// The snapshot the `snapshot` benchmark takes: after six steps.
fn snapshot_size(mut p: WasmProgram) {
    p.reset().unwrap();
    for _ in 0..6 {
        let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
    }
    let s = p.snapshot().unwrap().expect("wasm programs snapshot");
    println!(
        "snapshot after 6 steps: memory {} bytes ({:.1} MiB), non-zero pages stored {} bytes ({} KiB)",
        s.memory_bytes(),
        s.memory_bytes() as f64 / (1024.0 * 1024.0),
        s.stored_bytes(),
        s.stored_bytes() / 1024
    );
}
