//! Going on in place (`Program::step_on`) changes nothing the explorer
//! does: every registered strategy, on models with and without bugs and
//! under everything that stops the program between steps (snapshots, the
//! step bound, a partition's check, a saved state, a state hash), explores
//! the same executions, shows its observer the same events and reports the
//! same numbers as when the model is stepped one decision at a time.

use super::partition_tests::racy;
use super::Model;
use crate::explorer::Report;
use crate::observer::Observer;
use crate::program::StepInfo;
use crate::strategies::systematic::dpor::tests::random_model;
use crate::strategies::{Descriptor, REGISTRY};
use crate::strategy::{Context, Outcome, Start};
use crate::{Config, Explorer, Partition};
use wasmrace_trace::Decision;

/// Everything an observer is shown, in order (also `forced_tests.rs`).
#[derive(Default)]
pub(super) struct Seen(pub(super) Vec<String>);

impl Observer for Seen {
    fn begin(&mut self, start: Start, prefix: &[Decision]) {
        self.0.push(format!("begin {start:?} {prefix:?}"));
    }
    fn decided(&mut self, ctx: &Context<'_>, d: Decision) {
        let (step, last, prefix) = (ctx.step, ctx.last, ctx.prefix);
        let threads = ctx.threads;
        self.0.push(format!(
            "decided {step} {last:?} {prefix:?} {threads:?} {d:?}"
        ));
    }
    fn step(&mut self, step: &StepInfo) {
        self.0.push(format!("step {step:?}"));
    }
    fn saved(&mut self, id: u64, depth: usize) {
        self.0.push(format!("saved {id} {depth}"));
    }
    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        self.0.push(format!("end {outcome:?} {path:?}"));
    }
}

/// A run's report and observed events, without the wall-clock time.
fn run(model: Model, config: &Config, d: &Descriptor, seed: u64) -> (String, Vec<String>) {
    let mut s = (d.build)(&d.defaults, seed);
    let mut seen = Seen::default();
    let mut explorer = Explorer::new(model, config.clone());
    let report = match explorer.run_observed(&mut *s, &mut seen) {
        Ok(r) => r,
        // Strategies that cannot split, under a partition.
        Err(e) => return (e.to_string(), seen.0),
    };
    let report = Report {
        elapsed: Default::default(),
        ..report
    };
    (format!("{report:?}"), seen.0)
}

#[test]
fn going_on_in_place_explores_and_reports_as_stepping_does() {
    let configs = [
        Config {
            max_executions: 300,
            ..Config::default()
        },
        // Past bugs, snapshotting often.
        Config {
            max_executions: 200,
            stop_on_first_bug: false,
            snapshot_every_cost: Some(3),
            ..Config::default()
        },
        // Past bugs, with a step bound some executions hit.
        Config {
            max_executions: 200,
            stop_on_first_bug: false,
            max_steps: 9,
            ..Config::default().without_snapshots()
        },
        // A partition checks ownership at its split depth.
        Config {
            max_executions: 200,
            stop_on_first_bug: false,
            partition: Partition::new(1, 3),
            split_depth: 4,
            ..Config::default()
        },
    ];
    let models: Vec<fn() -> Model> = vec![racy, || random_model(3), || random_model(11)];
    for (c, config) in configs.iter().enumerate() {
        for model in &models {
            for &strategy in REGISTRY {
                let name = strategy.name;
                let on = run(model(), config, strategy, 7);
                let stepped = run(model().stepping_only(), config, strategy, 7);
                assert_eq!(on.0, stepped.0, "config {c}, {name}: report");
                assert!(
                    on.1 == stepped.1,
                    "config {c}, {name}: observed events differ"
                );
            }
        }
    }
}
