//! `wasmrace-fuzz`: runs fuzz campaigns against the host and prints what
//! happened, per kind: inputs, outcomes, defects, peak resident set. Exits
//! 1 when an input broke a property (a hang aborts the process, naming the
//! input).

use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use wasmrace_fuzz::{Campaign, Kind, Limits};

/// Fuzz the wasmrace host in-process: generated modules, mutated guests,
/// schedule files, cache entries and `merge` parts.
#[derive(Parser)]
#[command(name = "wasmrace-fuzz")]
struct Args {
    /// What to feed the host: modules, guests, schedules, cache, parts, or all.
    #[arg(long, default_value = "all")]
    kind: String,
    /// Inputs per kind.
    #[arg(long, default_value_t = 100)]
    inputs: u64,
    /// Derives every input (with its index).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Index of the first input (rerun one input with `--start I --inputs 1`).
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Seconds an input may run before it counts as a hang.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// Resident set, in MiB, the process may have after any input.
    #[arg(long, default_value_t = 2048)]
    max_rss_mb: u64,
    /// Scratch directory for module caches and schedule files (emptied).
    #[arg(long, default_value = "target/fuzz-scratch")]
    scratch: PathBuf,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let kinds: Vec<Kind> = match args.kind.as_str() {
        "all" => Kind::ALL.to_vec(),
        k => match Kind::from_name(k) {
            Some(k) => vec![k],
            None => {
                eprintln!("error: unknown kind `{k}`; expected modules, guests, schedules, cache, parts or all");
                return std::process::ExitCode::from(2);
            }
        },
    };
    let limits = Limits {
        input_timeout: Duration::from_secs(args.timeout_secs),
        max_rss_bytes: args.max_rss_mb << 20,
        ..Limits::default()
    };
    let mut defects = 0;
    for kind in kinds {
        let campaign = Campaign {
            kind,
            seed: args.seed,
            start: args.start,
            inputs: args.inputs,
            limits: limits.clone(),
            scratch: args.scratch.join(kind.name()),
        };
        let tally = match wasmrace_fuzz::run(&campaign) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        println!(
            "{}: {} inputs in {:.1} s, {} defects, peak resident set {} MiB",
            kind.name(),
            tally.inputs,
            tally.elapsed.as_secs_f64(),
            tally.defects.len(),
            tally.peak_rss_bytes >> 20
        );
        for (outcome, n) in &tally.outcomes {
            println!("  {n:>7}  {outcome}");
        }
        for d in &tally.defects {
            println!("  defect: {d}");
        }
        defects += tally.defects.len();
    }
    if defects > 0 {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
