//! Object state in traces: a replayed fixture bug's trace carries, per
//! step, the state of the objects the step touched after it ran, within
//! the `--max-log-kib` budget, and says where that budget cut it.

use super::config;
use wasmrace_host::{check, replay, CheckOptions, Guest, HostConfig, TraceEvent};

/// The state a step recorded for `object`, if any.
fn state_of<'t>(e: &'t TraceEvent, object: &str) -> Option<&'t str> {
    e.state
        .iter()
        .find(|v| v.object == object)
        .map(|v| v.value.as_str())
}

fn lost_update(config: HostConfig) -> Guest {
    let path = wasmrace_fixtures::path("lost_update");
    Guest::load(&path, config).unwrap()
}

#[test]
fn a_replayed_lost_update_shows_the_cell_after_every_write() {
    let g = lost_update(config("trace-state"));
    let bug = check(&g, "lost_update", &CheckOptions::default())
        .unwrap()
        .bug
        .expect("lost_update has a bug");
    let r = replay(&g, &bug.schedule, 10_000).unwrap();
    assert!(r.reproduces(&bug.schedule));
    let mut writes = 0;
    for e in &r.trace {
        if e.op == "cell.set" {
            writes += 1;
            // The value written is the value the cell holds after the step.
            let after = state_of(e, "cell main#0").expect("a write records its cell");
            assert_eq!(after, format!("value = {}", e.detail), "{e:?}");
        }
        if e.op == "cell.get" {
            let read = e.detail.trim_start_matches("-> ");
            assert_eq!(
                state_of(e, "cell main#0"),
                Some(&*format!("value = {read}"))
            );
        }
        assert!(!e.state_cut);
    }
    assert_eq!(writes, 2, "both workers wrote");
    // The lost update: both wrote 1, so the cell ends at 1.
    let last_set = r.trace.iter().rev().find(|e| e.op == "cell.set").unwrap();
    assert_eq!(state_of(last_set, "cell main#0"), Some("value = 1"));
    // A join records the state of the thread it waited for.
    let join = r.trace.iter().find(|e| e.op == "join").expect("a join");
    assert!(
        join.state
            .iter()
            .any(|v| v.object.starts_with("thread main.") && v.value == "exited"),
        "{join:?}"
    );
}

#[test]
fn the_state_budget_cuts_the_trace_and_says_where() {
    let mut c = config("trace-state-cut");
    // Room for a few steps' states only.
    c.max_log_bytes = 300;
    let g = lost_update(c);
    let bug = check(&g, "lost_update", &CheckOptions::default())
        .unwrap()
        .bug
        .expect("lost_update has a bug");
    let r = replay(&g, &bug.schedule, 10_000).unwrap();
    let cut = r
        .trace
        .iter()
        .position(|e| e.state_cut)
        .expect("the budget was spent");
    assert!(cut > 0 && r.trace[..cut].iter().any(|e| !e.state.is_empty()));
    assert!(r.trace[cut..].iter().all(|e| e.state.is_empty()));
    assert_eq!(r.trace.iter().filter(|e| e.state_cut).count(), 1);
}
