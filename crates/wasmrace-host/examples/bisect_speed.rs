//! Measures what snapshots save `wasmrace bisect`: the same bisection of a
//! schedule, each sample started by restoring a snapshot and by replaying
//! the prefix from the start; prints both wall times and checks that the
//! two give the same estimates.
//!
//! `cargo run --release -p wasmrace-host --example bisect_speed -- app.wasm bug.schedule.json`

use std::time::Instant;
use wasmrace_host::{bisect, BisectOptions, Guest, HostConfig, Schedule};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, module, schedule] = &args[..] else {
        return Err("usage: bisect_speed app.wasm bug.schedule.json".into());
    };
    let schedule = Schedule::read(schedule.as_ref())?;
    let guest = Guest::load(module.as_ref(), HostConfig::default())?;
    let mut times = Vec::new();
    let mut results = Vec::new();
    for from_snapshots in [true, false] {
        let opts = BisectOptions {
            from_snapshots,
            ..BisectOptions::default()
        };
        let t = Instant::now();
        let b = bisect(&guest, &schedule, &opts)?;
        times.push(t.elapsed().as_secs_f64());
        results.push(b.steps);
    }
    assert_eq!(results[0], results[1], "both ways estimate alike");
    let samples: u64 = results[0].iter().map(|s| s.samples).sum();
    println!(
        "{} steps, {} steps estimated, {samples} samples: snapshots {:.2} s, replaying prefixes {:.2} s ({:.1}x)",
        schedule.steps.len(),
        results[0].len(),
        times[0],
        times[1],
        times[1] / times[0]
    );
    Ok(())
}
