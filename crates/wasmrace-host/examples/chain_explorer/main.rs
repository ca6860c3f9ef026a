//! A custom delaying explorer run through the host crate: the FSE'15
//! paper's chain-replication case study (§7) on the `chain_replication`
//! fixture. The guest announces the end of its initialization with
//! `wasmrace::phase("init-done")`; [`ChainExplorer`] (in `explorer.rs`)
//! reorders the threads at that moment and puts the fault injector first
//! whenever a server acknowledges an update. SES and SS run it exactly like
//! the built-in explorers, through `wasmrace_host::check_with_strategy`.
//!
//! The example measures what each explorer needs to reach the injected bug
//! (the head and its successor failing together after initialization) and
//! prints the comparison:
//! - SES: program states explored until the failing execution, executions,
//!   and the delay bound the bug needed;
//! - SS: executions until the first failing one (seed 0);
//!
//! then the custom explorer's failing interleaving, and its replay from the
//! schedule file.
//!
//! Run: `cargo run --release -p wasmrace-host --example chain_explorer`
//! (minutes: only the custom explorer finds the bug, the others use up
//! their budget; deterministic, so the numbers are the same on every
//! machine).

mod explorer;

use explorer::ChainExplorer;
use wasmrace_host::strategies::{
    BuiltinExplorer, DelayingExplorer, Ses, SesOptions, Ss, SsOptions,
};
use wasmrace_host::{check_with_strategy, CheckOptions, CheckOutcome, Config, Guest, HostConfig};
use wasmrace_host::{render_trace, Report, Strategy};

const PROGRAM: &str = "chain_replication";
const TEST: &str = "chain_replication_bug";
/// Executions per run at most.
const BUDGET: u64 = 50_000;
const SEED: u64 = 0;

fn check(guest: &Guest, strategy: &mut dyn Strategy) -> CheckOutcome {
    let opts = CheckOptions {
        seed: SEED,
        explore: Config {
            max_executions: BUDGET,
            ..Config::default()
        },
        ..CheckOptions::default()
    };
    let out =
        check_with_strategy(guest, TEST, &opts, strategy, &mut |_| {}).expect("exploration runs");
    if let Some(b) = &out.bug {
        assert!(
            b.failure.message.contains("acknowledged update 1 lost"),
            "an unexpected failure: {}",
            b.failure
        );
    }
    out
}

fn stat(r: &Report, name: &str) -> Option<u64> {
    r.strategy_stats
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value)
}

/// SES and SS over any explorer: an object-safe face of `DelayingExplorer
/// + Clone`, so that one loop can build both strategies for each.
trait Explorers {
    fn ses(&self) -> Box<dyn Strategy>;
    fn ss(&self) -> Box<dyn Strategy>;
}

impl<E: DelayingExplorer + Clone + 'static> Explorers for E {
    fn ses(&self) -> Box<dyn Strategy> {
        Box::new(Ses::new(self.clone(), SEED, SesOptions::default()))
    }
    fn ss(&self) -> Box<dyn Strategy> {
        Box::new(Ss::new(self.clone(), SEED, SsOptions::default()))
    }
}

fn main() {
    let config = HostConfig {
        cache_dir: Some(std::env::temp_dir().join("wasmrace-chain-explorer-cache")),
        ..HostConfig::default()
    };
    let guest = Guest::load(&wasmrace_fixtures::path(PROGRAM), config)
        .expect("load the chain_replication fixture");

    let mut explorers: Vec<(&str, Box<dyn Explorers>)> = BuiltinExplorer::NAMES
        .iter()
        .map(|&n| {
            let e: Box<dyn Explorers> = Box::new(BuiltinExplorer::from_name(n, SEED).unwrap());
            (n, e)
        })
        .collect();
    explorers.push((
        "chain, deaf to init-done",
        Box::new(ChainExplorer::ignoring_phase()),
    ));
    explorers.push(("chain", Box::new(ChainExplorer::new())));

    println!("{PROGRAM}/{TEST}: what each delaying explorer needs to find the bug");
    println!("(at most {BUDGET} executions per run, seed {SEED})\n");
    println!("| explorer | SES states | SES executions | SES delays | SS executions |");
    println!("|---|---:|---:|---:|---:|");
    for (name, e) in &explorers {
        let ses = check(&guest, &mut *e.ses());
        let ss = check(&guest, &mut *e.ss());
        let cell = |out: &CheckOutcome, v: Option<u64>| match &out.bug {
            Some(_) => v.map_or("-".into(), |v| v.to_string()),
            None => format!("none in {}", out.report.executions),
        };
        println!(
            "| {name} | {} | {} | {} | {} |",
            cell(&ses, stat(&ses.report, "states explored")),
            cell(&ses, Some(ses.report.executions)),
            cell(&ses, stat(&ses.report, "delay bound reached")),
            cell(&ss, Some(ss.report.executions)),
        );
    }

    // The custom explorer's bug, as `wasmrace check` would show it, and its
    // replay from the schedule file.
    let out = check(&guest, &mut *ChainExplorer::new().ses());
    let bug = out.bug.expect("the custom explorer finds the bug");
    println!("\n{}\n", bug.failure);
    print!("{}", render_trace(&bug.trace));
    let replayed = wasmrace_host::replay(&guest, &bug.schedule, Config::default().max_steps)
        .expect("the schedule replays");
    assert!(replayed.reproduces(&bug.schedule));
    println!("\nreplayed from its schedule file: the same failure");
}
