//! The fixed cost of one short exploration, split into creating the test's
//! program (instance, start, start snapshot) and exploring it: the part of
//! `benches/peers`' time to exhaust that does not depend on executions
//! (issue #12's `fetch_add_2`). Build with `cargo build --release -p
//! wasmrace-host --example startup_profile`, then
//! `target/release/examples/startup_profile WASM TEST [REPS]` prints the
//! median and the 10th/90th percentiles of each part over `REPS` runs
//! (default 300) with optimal DPOR, as `benches/peers` explores. For
//! instruction counts: `valgrind --tool=callgrind
//! --toggle-collect='*startup_profile::create*'
//! --toggle-collect='*startup_profile::explore*'
//! target/release/examples/startup_profile WASM TEST 20`.

use std::time::{Duration, Instant};
use wasmrace_host::strategies::systematic::dpor::Dpor;
use wasmrace_host::{Config, Explorer, Guest, HostConfig, WasmProgram};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(wasm), Some(test)) = (args.first(), args.get(1)) else {
        eprintln!("usage: startup_profile WASM TEST [REPS]");
        std::process::exit(2);
    };
    let reps: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(300);
    let guest = Guest::load(std::path::Path::new(wasm), HostConfig::default()).expect("load");
    let mut created = Vec::with_capacity(reps);
    let mut explored = Vec::with_capacity(reps);
    let mut executions = 0;
    for _ in 0..reps {
        let t0 = Instant::now();
        let program = create(&guest, test);
        let t1 = Instant::now();
        executions = explore(program);
        created.push(t1 - t0);
        explored.push(t1.elapsed());
    }
    println!("{test}: {executions} executions per exploration, {reps} explorations");
    report("create the program", &mut created);
    report("explore (dpor)", &mut explored);
}

/// The test's program: instance, start function, start snapshot.
#[inline(never)]
fn create(guest: &Guest, test: &str) -> WasmProgram {
    guest.program(test).expect("program")
}

/// Exhausts `program` with optimal DPOR; returns the executions.
#[inline(never)]
fn explore(program: WasmProgram) -> u64 {
    let config = Config {
        max_executions: u64::MAX,
        ..Config::default()
    };
    let mut explorer = Explorer::new(program, config);
    let report = explorer.run(&mut Dpor::optimal()).expect("explore");
    report.executions
}

/// Median and 10th/90th percentiles of `times`, in microseconds.
fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: usize| times[(times.len() - 1) * q / 100].as_secs_f64() * 1e6;
    println!(
        "{what}: median {:.1} µs (p10 {:.1}, p90 {:.1})",
        at(50),
        at(10),
        at(90)
    );
}
