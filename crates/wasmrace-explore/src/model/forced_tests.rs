//! Starting fresh executions after the forced prefix
//! (`Config::snapshot_forced_prefix`, `explorer/forced.rs`) changes nothing
//! a strategy or an observer sees: every registered strategy, and one that
//! abandons, saves and starts from saved states inside the prefix,
//! explores the same executions, shows its observer the same events and
//! reports the same numbers (those of snapshots and replays aside) as
//! when every execution runs from the start.

use super::onward_tests::Seen;
use super::partition_tests::racy;
use super::{reg, Model, ModelBuilder};
use crate::explorer::Report;
use crate::strategies::systematic::dpor::tests::random_model;
use crate::strategies::{Descriptor, REGISTRY};
use crate::strategy::{Context, Start, Strategy};
use crate::{Config, Explorer};
use wasmrace_trace::Decision;

/// Five forced steps (two writes, a lock and its unlock, the first spawn)
/// before `main` and `a` race on `x`; `b` chooses among three values.
fn long_prologue() -> Model {
    let mut b = ModelBuilder::new();
    let (x, y) = (b.var("x", 0), b.var("y", 0));
    let l = b.mutex("l");
    let a = b.thread("a", |t| {
        t.read(x, 0).write(x, reg(0) + 1);
    });
    let chooser = b.thread("b", |t| {
        t.choose(3, 0).write(y, reg(0));
    });
    b.main(|t| {
        t.write(x, 1)
            .write(y, 2)
            .lock(l)
            .unlock(l)
            .spawn(a, 0)
            .spawn(chooser, 1)
            .read(x, 2)
            .write(x, reg(2) + 1)
            .join(reg(0))
            .join(reg(1))
            .read(x, 3)
            .assert(reg(3).equals(3), "lost update");
    });
    b.build().unwrap()
}

/// The report without what depends on how executions start (snapshots,
/// restores, replays; `steps` counts replayed steps too) and on the clock.
fn comparable(report: Report) -> String {
    let report = Report {
        elapsed: Default::default(),
        steps: report.steps - report.replayed_steps,
        snapshots_taken: 0,
        restores: 0,
        replayed_steps: 0,
        saved_restored: 0,
        saved_replayed: 0,
        ..report
    };
    format!("{report:?}")
}

fn run(model: Model, config: &Config, s: &mut dyn Strategy) -> (Report, Vec<String>) {
    let mut seen = Seen::default();
    let mut explorer = Explorer::new(model, config.clone());
    let report = explorer.run_observed(s, &mut seen).unwrap();
    (report, seen.0)
}

fn models() -> Vec<fn() -> Model> {
    vec![long_prologue, racy, || random_model(3), || random_model(11)]
}

fn configs() -> [Config; 2] {
    [
        Config {
            max_executions: 300,
            ..Config::default()
        },
        // Past bugs, with a step bound the prologue reaches.
        Config {
            max_executions: 200,
            stop_on_first_bug: false,
            max_steps: 4,
            ..Config::default()
        },
    ]
}

#[test]
fn every_strategy_sees_the_forced_prefix_as_if_it_ran() {
    let mut skipped = 0;
    for (c, config) in configs().iter().enumerate() {
        let off = Config {
            snapshot_forced_prefix: false,
            ..config.clone()
        };
        for model in models() {
            for &d in REGISTRY {
                let build = |d: &Descriptor| (d.build)(&d.defaults, 7);
                let (on, seen_on) = run(model(), config, &mut *build(d));
                let (plain, seen_off) = run(model(), &off, &mut *build(d));
                let name = d.name;
                assert_eq!(
                    comparable(on.clone()),
                    comparable(plain.clone()),
                    "config {c}, {name}"
                );
                assert!(
                    seen_on == seen_off,
                    "config {c}, {name}: observed events differ"
                );
                // Fewer steps run than taken in: the prefix was shown, not run.
                skipped += on.restores.saturating_sub(plain.restores);
            }
        }
    }
    assert!(skipped > 1000, "{skipped}");
}

/// Random decisions from the execution index, except that execution `i`
/// abandons at step 2 when `i % 4 == 1`, asks to save the state at step 1
/// when `i % 4 == 2`, and starts from that saved state when `i % 4 == 3`.
struct Wobbly {
    index: u64,
    save: Option<u64>,
    saved: Option<u64>,
}

impl Strategy for Wobbly {
    fn name(&self) -> &str {
        "wobbly"
    }

    fn begin(&mut self, executions: u64) -> Option<Start> {
        self.index = executions;
        if executions == 40 {
            return None;
        }
        match (executions % 4, self.saved.take()) {
            (3, Some(id)) => Some(Start::Saved { id }),
            _ => Some(Start::Fresh),
        }
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let i = self.index;
        match (i % 4, ctx.step) {
            (1, 2) => return None,
            (2, 1) => self.save = Some(i),
            _ => {}
        }
        let enabled: Vec<Decision> = ctx.enabled().collect();
        Some(enabled[(i as usize * 7 + ctx.step * 3) % enabled.len()])
    }

    fn save_request(&mut self) -> Option<u64> {
        let id = self.save.take();
        self.saved = id.or(self.saved);
        id
    }
}

#[test]
fn a_strategy_leaving_the_forced_prefix_early_gets_the_program_there() {
    let wobbly = || Wobbly {
        index: 0,
        save: None,
        saved: None,
    };
    // Saved states held as snapshots, and kept as prefixes to replay.
    let kept = configs().into_iter().chain([Config {
        max_saved_snapshots: 0,
        ..Config::default()
    }]);
    for (c, config) in kept.enumerate() {
        let config = &Config {
            stop_on_first_bug: false,
            ..config
        };
        let off = Config {
            snapshot_forced_prefix: false,
            ..config.clone()
        };
        let (on, seen_on) = run(long_prologue(), config, &mut wobbly());
        let (plain, seen_off) = run(long_prologue(), &off, &mut wobbly());
        assert_eq!(comparable(on.clone()), comparable(plain), "config {c}");
        assert!(seen_on == seen_off, "config {c}: observed events differ");
        let (executions, with_snapshot, as_prefix) =
            (on.executions, on.saved_with_snapshot, on.saved_as_prefix);
        assert!(
            executions > 30 && with_snapshot + as_prefix > 0,
            "config {c}"
        );
        // Abandoned in the prefix: rewound to step 2 (replayed from the
        // start, the base lying past it); and the base restored. (The
        // step bound of config 1 cuts the prefix: nothing is learnt.)
        if c != 1 {
            let (replayed, restores) = (on.replayed_steps, on.restores);
            assert!(
                replayed >= 2 && restores > 5,
                "config {c}: {replayed} {restores}"
            );
        }
    }
}
