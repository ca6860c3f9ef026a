//! Folding of long traces in the text report: a block of steps repeated
//! back to back (a waiting loop's `get`, `yield`) is shown once, followed by
//! one line saying which steps repeat it and how often; `--full-trace`
//! prints every step.

use wasmrace_trace::{render_trace, TraceEvent};

/// Blocks of up to this many steps are folded.
const MAX_PERIOD: usize = 8;
/// A block is folded when it repeats at least this many times in a row
/// (the first shown, the rest on one line).
const MIN_REPEATS: usize = 3;

/// Two steps the reader cannot tell apart but for their numbers.
fn same(a: &TraceEvent, b: &TraceEvent) -> bool {
    a.thread == b.thread
        && a.op == b.op
        && a.object == b.object
        && a.detail == b.detail
        && a.site == b.site
        && a.preemption == b.preemption
        && a.logs == b.logs
}

/// How many times the `period` steps at `i` repeat back to back from `i`.
fn repeats(events: &[TraceEvent], i: usize, period: usize) -> usize {
    let mut j = i + period;
    while j < events.len() && same(&events[j], &events[j - period]) {
        j += 1;
    }
    (j - i) / period
}

/// `render_trace`'s lines, with repeated blocks folded.
pub fn fold_trace(events: &[TraceEvent]) -> String {
    let rendered = render_trace(events);
    // One line per step plus one per log line it carries.
    let mut lines = rendered.lines();
    let per_event: Vec<Vec<&str>> = events
        .iter()
        .map(|e| lines.by_ref().take(1 + e.logs.len()).collect())
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < events.len() {
        let fold = (1..=MAX_PERIOD)
            .map(|p| (p, repeats(events, i, p)))
            .find(|&(_, r)| r >= MIN_REPEATS);
        let Some((period, r)) = fold else {
            push_lines(&mut out, &per_event[i]);
            i += 1;
            continue;
        };
        for e in &per_event[i..i + period] {
            push_lines(&mut out, e);
        }
        let (from, to) = (events[i + period].step, events[i + r * period - 1].step);
        let block = if period == 1 {
            "the step above".to_string()
        } else {
            format!("the {period} steps above")
        };
        out.push_str(&format!(
            "  ... steps {from}..={to}: {block}, {} more times (--full-trace shows every step)\n",
            r - 1
        ));
        i += r * period;
    }
    out
}

fn push_lines(out: &mut String, lines: &[&str]) {
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(step: u32, thread: &str, op: &str) -> TraceEvent {
        TraceEvent {
            step,
            thread: thread.into(),
            op: op.into(),
            object: Some("cell main#0".into()),
            detail: String::new(),
            site: None,
            preemption: false,
            logs: vec![],
            state: vec![],
            state_cut: false,
        }
    }

    #[test]
    fn a_spin_is_shown_once_with_its_count() {
        let mut events = vec![ev(1, "main", "cell.new")];
        for k in 0..100u32 {
            events.push(ev(2 + 2 * k, "main", "cell.get"));
            events.push(ev(3 + 2 * k, "main", "thread.yield"));
        }
        events.push(ev(202, "main", "thread.exit"));
        let folded = fold_trace(&events);
        assert_eq!(folded.lines().count(), 5, "{folded}");
        assert!(
            folded.contains("steps 4..=201: the 2 steps above, 99 more times (--full-trace"),
            "{folded}"
        );
        assert!(folded.lines().last().unwrap().contains("thread.exit"));
    }

    #[test]
    fn short_traces_are_unchanged() {
        let events = vec![
            ev(1, "main", "cell.get"),
            ev(2, "main", "cell.get"),
            ev(3, "main.1", "cell.set"),
        ];
        assert_eq!(fold_trace(&events), render_trace(&events));
    }
}
