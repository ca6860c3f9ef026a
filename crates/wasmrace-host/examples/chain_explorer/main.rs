//! A custom delaying explorer run through the host crate: the FSE'15
//! paper's chain-replication case study (§7) on the `chain_replication`
//! fixture. The guest announces the end of its initialization with
//! `wasmrace::phase("init-done")`; [`ChainExplorer`] (in `explorer.rs`)
//! reorders the threads at that moment and puts the fault injector first
//! whenever a server acknowledges an update. SES and SS run it exactly like
//! the built-in explorers; the example measures what each explorer needs to
//! reach the injected bug (the head and its successor failing together after
//! initialization) and prints the comparison:
//!
//! - SES: distinct program states explored before the failing execution,
//!   executions, and the delay bound the bug needed;
//! - SS: executions until the first failing one (seed 0).
//!
//! Run: `cargo run -p wasmrace-host --example chain_explorer` (about half a
//! minute; deterministic, so the numbers are the same on every machine).

mod explorer;

use explorer::ChainExplorer;
use wasmrace_explore::strategies::{
    BuiltinExplorer, DelayingExplorer, Ses, SesOptions, Ss, SsOptions,
};
use wasmrace_explore::{Config, Explorer, Report, Strategy};
use wasmrace_host::{Guest, HostConfig};

const PROGRAM: &str = "chain_replication";
const TEST: &str = "chain_replication_bug";
/// Executions per run at most.
const BUDGET: u64 = 50_000;
const SEED: u64 = 0;

/// What one run needed to find the bug.
struct Found {
    executions: u64,
    bug: bool,
    /// SES only: states explored and the delay bound it had reached.
    states: Option<u64>,
    delay_bound: Option<u64>,
}

fn stat(r: &Report, name: &str) -> Option<u64> {
    r.strategy_stats
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value)
}

fn run(guest: &Guest, strategy: &mut dyn Strategy) -> Found {
    let program = guest.program(TEST).expect("the fixture's buggy test");
    let config = Config {
        max_executions: BUDGET,
        ..Config::default()
    };
    let r = Explorer::new(program, config)
        .run(strategy)
        .expect("exploration runs");
    if let Some(b) = r.first_bug() {
        assert!(
            b.failure.message.contains("acknowledged update 1 lost"),
            "an unexpected failure: {}",
            b.failure
        );
    }
    Found {
        executions: r.executions,
        bug: r.first_bug().is_some(),
        states: stat(&r, "states explored"),
        delay_bound: stat(&r, "delay bound reached"),
    }
}

/// The explorers compared, by name.
fn explorers() -> Vec<(&'static str, Box<dyn Fn() -> Box<dyn DynExplorer>>)> {
    let mut v: Vec<(&'static str, Box<dyn Fn() -> Box<dyn DynExplorer>>)> = Vec::new();
    for name in BuiltinExplorer::NAMES {
        v.push((
            name,
            Box::new(move || Box::new(BuiltinExplorer::from_name(name, SEED).unwrap())),
        ));
    }
    v.push((
        "chain-no-phase",
        Box::new(|| Box::new(ChainExplorer::ignoring_phase())),
    ));
    v.push(("chain", Box::new(|| Box::new(ChainExplorer::new()))));
    v
}

/// SES and SS over any of the explorers above: a small object-safe face of
/// `DelayingExplorer + Clone` so that one loop can build both strategies.
trait DynExplorer {
    fn ses(&self) -> Box<dyn Strategy>;
    fn ss(&self) -> Box<dyn Strategy>;
}

impl<E: DelayingExplorer + Clone + 'static> DynExplorer for E {
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
    println!("{PROGRAM}/{TEST}: what each delaying explorer needs to find the bug");
    println!("(budget {BUDGET} executions per run, seed {SEED})\n");
    println!("| explorer | SES states | SES executions | SES delays | SS executions |");
    println!("|---|---:|---:|---:|---:|");
    for (name, make) in explorers() {
        let e = make();
        let ses = run(&guest, &mut *e.ses());
        let ss = run(&guest, &mut *e.ss());
        let or_none = |f: &Found, v: String| {
            if f.bug {
                v
            } else {
                format!("none in {}", f.executions)
            }
        };
        println!(
            "| {name} | {} | {} | {} | {} |",
            or_none(&ses, ses.states.unwrap_or(0).to_string()),
            or_none(&ses, ses.executions.to_string()),
            or_none(&ses, ses.delay_bound.unwrap_or(0).to_string()),
            or_none(&ss, ss.executions.to_string()),
        );
    }
}
