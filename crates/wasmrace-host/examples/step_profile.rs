//! A fixed workload for instruction-count profiling of the stepping engine:
//! `valgrind --tool=callgrind target/release/examples/step_profile N` runs N
//! round-robin executions of the `bench_two_by_ten` fixture. Instruction
//! counts are repeatable on a loaded machine where timings are not; the
//! difference between two values of N divided by the extra steps is the
//! cost of one step.

use wasmrace_host::{Decision, Guest, HostConfig, Program, Status};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join("wasmrace-step-profile-cache");
    let config = HostConfig {
        cache_dir: Some(dir),
        ..HostConfig::default()
    };
    let guest = Guest::load(&wasmrace_fixtures::path("sdk_smoke"), config).expect("load sdk_smoke");
    let mut p = guest.program("bench_two_by_ten").expect("bench_two_by_ten");
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
