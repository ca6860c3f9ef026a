//! Embedding the host: load a guest, explore one test with a strategy of
//! your choice through an `Explorer`, and print the bug's interleaving.
//! Everything comes from `wasmrace_host`, the only dependency an embedder
//! needs. Run with
//! `cargo run -p wasmrace-host --example embed -- app.wasm TEST`.

use wasmrace_host::strategies::{Dfs, RandomWalk};
use wasmrace_host::{render_trace, trace_schedule, Config, Explorer, Guest, HostConfig, Strategy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(test)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: embed APP.wasm TEST [random]");
        std::process::exit(2);
    };
    let guest = Guest::load(path.as_ref(), HostConfig::default())?;
    let program = guest.program(test)?;

    // Any `Strategy` works here, including one of your own.
    let mut strategy: Box<dyn Strategy> = match args.get(3).map(String::as_str) {
        Some("random") => Box::new(RandomWalk::new(42)),
        _ => Box::new(Dfs::with_preemption_bound(2)),
    };
    let config = Config {
        max_executions: 10_000,
        ..Config::default()
    };
    let mut explorer = Explorer::new(program, config);
    let report = explorer.run(&mut *strategy)?;
    println!(
        "{} executions, exhausted: {}",
        report.executions, report.exhausted
    );

    if let Some(bug) = report.first_bug() {
        println!("bug: {}", bug.failure);
        // Replay the failing schedule with tracing on for a readable trace.
        let (trace, _) = trace_schedule(&mut explorer.program, &bug.schedule)?;
        print!("{}", render_trace(&trace));
    }
    Ok(())
}
