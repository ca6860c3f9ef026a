//! Readable interleavings: one `TraceEvent` per executed step, rendered as
//! numbered lines for reports and kept as JSON for `--json`.

use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One step of a readable interleaving, as reports print it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TraceEvent {
    /// 1-based step number in the execution.
    pub step: u32,
    /// Display form of the thread's path (`main.1`).
    pub thread: String,
    /// Operation name (`cell.set`).
    pub op: String,
    /// The object touched, e.g. `cell main#0`, `table main#1[7]`, `mailbox main.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Arguments and result, e.g. `42 -> 41`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Guest source location of the call, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// True when this step preempted a thread that could have continued.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preemption: bool,
    /// Messages the thread logged with `wasmrace::log` during this step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// The state, after this step, of the objects it touched (a cell's
    /// value, a mutex's holder, a mailbox's messages), each clipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<ObjectValue>,
    /// True on the first step whose object states were left out because
    /// the trace's budget for them (`--max-log-kib`) was spent: from here
    /// on, `state` is empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_cut: bool,
}

/// One object's state after a step, as traces show it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ObjectValue {
    /// The object's name, e.g. `cell main#0`, `mailbox main.1`.
    pub object: String,
    /// Its state in short, e.g. `value = 3`, `held by main.1`.
    pub value: String,
}

/// Renders an interleaving as numbered lines, one per step, with preemptions
/// marked and logs indented under the step that produced them.
pub fn render_trace(events: &[TraceEvent]) -> String {
    let width = events
        .iter()
        .map(|e| e.thread.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let num_width = events.len().to_string().len();
    let mut out = String::new();
    for e in events {
        let mark = if e.preemption { "*" } else { " " };
        let _ = write!(
            out,
            "{mark}{:>num_width$}  {:<width$}  {}",
            e.step, e.thread, e.op
        );
        if let Some(o) = &e.object {
            let _ = write!(out, " {o}");
        }
        if !e.detail.is_empty() {
            let _ = write!(out, " {}", e.detail);
        }
        if let Some(s) = &e.site {
            let _ = write!(out, "  ({s})");
        }
        out.push('\n');
        for l in &e.logs {
            let _ = writeln!(out, " {:>num_width$}  {:<width$}    log: {l}", "", "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(step: u32, thread: &str, op: &str, preemption: bool) -> TraceEvent {
        TraceEvent {
            step,
            thread: thread.into(),
            op: op.into(),
            object: Some("cell main#0".into()),
            detail: "-> 1".into(),
            site: Some("src/lib.rs:3:5".into()),
            preemption,
            logs: if step == 2 {
                vec!["hello".into()]
            } else {
                vec![]
            },
            state: vec![],
            state_cut: false,
        }
    }

    #[test]
    fn renders_numbered_steps_with_preemption_marks() {
        let s = render_trace(&[
            ev(1, "main", "cell.get", false),
            ev(2, "main.1", "cell.set", true),
        ]);
        // Steps right-aligned after the preemption mark, threads padded to
        // the widest name, logs indented under the operation column.
        let expected = concat!(
            " 1  main    cell.get cell main#0 -> 1  (src/lib.rs:3:5)\n",
            "*2  main.1  cell.set cell main#0 -> 1  (src/lib.rs:3:5)\n",
            "              log: hello\n",
        );
        assert_eq!(s, expected);
    }
}
