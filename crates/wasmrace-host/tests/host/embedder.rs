//! An embedder's use of the library through `wasmrace_host` paths only (no
//! `wasmrace_explore` or `wasmrace_trace` in this file): drive an `Explorer`
//! over a `WasmProgram` with a strategy and an observer beside it, read the
//! bug, trace its schedule and replay it from a schedule file.

use super::config;
use wasmrace_host::strategies::Dfs;
use wasmrace_host::{
    render_trace, replay, trace_schedule, Config, Decision, Explorer, FailureKind, Guest, Metrics,
    Observer, Outcome, Program, Schedule, ScheduleStep, Start, Status, Strategy, TraceEvent,
};

/// Counts executions by how they ended: an embedder's own observer.
#[derive(Default)]
struct Outcomes {
    begun: u64,
    failed: u64,
}

impl Observer for Outcomes {
    fn begin(&mut self, _start: Start, _prefix: &[Decision]) {
        self.begun += 1;
    }
    fn end(&mut self, outcome: &Outcome, _path: &[Decision]) {
        self.failed += u64::from(matches!(outcome, Outcome::Failed(_)));
    }
}

#[test]
fn an_embedder_explores_traces_and_replays_through_the_host_alone() {
    let path = wasmrace_fixtures::path("lost_update");
    let guest = Guest::load(&path, config("embedder")).unwrap();
    let program = guest.program("lost_update").unwrap();
    let mut explorer = Explorer::new(
        program,
        Config {
            max_executions: 1_000,
            ..Config::default()
        },
    );
    let mut strategy: Box<dyn Strategy> = Box::new(Dfs::with_preemption_bound(2));
    let mut observers = (Metrics::new(), Outcomes::default());
    let report = explorer
        .run_observed(&mut *strategy, &mut observers)
        .unwrap();
    let (metrics, outcomes) = observers;

    let bug = report.first_bug().expect("dfs finds the lost update");
    assert_eq!(bug.failure.kind, FailureKind::Panic);
    assert_eq!(outcomes.begun, report.executions);
    assert_eq!(metrics.executions(), report.executions);
    assert_eq!(outcomes.failed, report.failing_executions);
    assert!(outcomes.failed >= 1);

    // Tracing the failing schedule again ends in the same failure.
    let (trace, status) = trace_schedule(&mut explorer.program, &bug.schedule).unwrap();
    assert_eq!(status, Status::Failed(bug.failure.clone()));
    let events: &[TraceEvent] = &trace;
    assert_eq!(events.len(), bug.schedule.len());
    let text = render_trace(events);
    assert!(text.contains("cell.set"), "{text}");

    // A schedule file written from it replays to the same failure.
    let steps = bug
        .schedule
        .iter()
        .map(|d| ScheduleStep {
            thread: explorer.program.thread_name(d.tid),
            alt: d.alt,
        })
        .collect();
    let schedule = Schedule::new(
        guest.module_hash().to_string(),
        "lost_update".into(),
        bug.found_by.clone(),
        0,
        serde_json::json!({}),
        Some(bug.failure.clone()),
        steps,
    );
    let schedule = Schedule::parse(&schedule.to_json(), "lost_update.schedule.json").unwrap();
    let replayed = replay(&guest, &schedule, Config::default().max_steps).unwrap();
    assert!(replayed.divergence.is_none(), "{:?}", replayed.divergence);
    assert_eq!(replayed.failure.as_ref(), Some(&bug.failure));
}
