//! How an execution that never ends is reported: a livelock when every live
//! thread spins on `yield_now` or is blocked (at the step limit), or when a
//! state cache shows the execution going round a cycle every enabled thread
//! takes part in (a lasso); otherwise a step-limit failure, with a hint when
//! one thread repeated the same operation without ever yielding.

use super::fairness::FairState;
use crate::program::Program;
use wasmrace_trace::{Decision, Failure, FailureKind, OpKind, Tid};

/// At the step limit, the window is this fraction (1/4) of the steps: a
/// thread spins when it yielded within the window, and it is a livelock
/// when every enabled thread spins and every step of the window was taken
/// by a spinning thread.
const SPIN_WINDOW_DIVISOR: u64 = 4;

/// The failure of an execution cut at `max_steps`.
pub(crate) fn at_step_limit<P: Program + ?Sized>(
    program: &P,
    fair: &FairState,
    decisions: &[Decision],
    ops: &[Option<OpKind>],
    max_steps: u64,
) -> Failure {
    let len = decisions.len() as u64;
    let window = (max_steps / SPIN_WINDOW_DIVISOR).max(1);
    let enabled: Vec<Tid> = program
        .threads()
        .iter()
        .filter(|t| t.pending.enabled)
        .map(|t| t.tid)
        .collect();
    let spinning = |t: &Tid| {
        fair.last_yield(*t)
            .is_some_and(|(_, at)| at + window >= len)
    };
    // Progress within the window, by a thread that is not in a yield loop
    // (the awaited write), rules a livelock out.
    let recent = &decisions[decisions.len().saturating_sub(window as usize)..];
    let spun = recent.iter().all(|d| spinning(&d.tid));
    if spun && !enabled.is_empty() && enabled.iter().all(spinning) {
        let names: Vec<String> = enabled
            .iter()
            .map(|t| format!("`{}`", program.thread_name(*t)))
            .collect();
        let blocked = program.threads().len() - enabled.len();
        return Failure::new(
            FailureKind::Livelock,
            Some(program.thread_name(enabled[0])),
            format!(
                "every live thread spins or is blocked: {} yielded within the last `{window}` of \
                 `{max_steps}` steps without getting out of the loop, {blocked} blocked \
                 (raise --max-steps if the loop only needs longer)",
                names.join(", ")
            ),
        );
    }
    let who = decisions.last().map(|d| program.thread_name(d.tid));
    let mut message =
        format!("execution exceeded `{max_steps}` steps (possible livelock); raise --max-steps");
    if let Some(hint) = spin_hint(program, fair, decisions, ops, max_steps) {
        message.push_str("; ");
        message.push_str(&hint);
    }
    Failure::new(FailureKind::StepLimit, who, message)
}

/// "thread `main.1` repeated `cell.get` 9,990 times without `yield_now`"
/// when the thread that took the last step ran the same operation for at
/// least half the step limit and never yielded meanwhile.
fn spin_hint<P: Program + ?Sized>(
    program: &P,
    fair: &FairState,
    decisions: &[Decision],
    ops: &[Option<OpKind>],
    max_steps: u64,
) -> Option<String> {
    let tid = decisions.last()?.tid;
    let op = (*ops.last()?)?;
    let since = fair.last_yield(tid).map_or(0, |(_, at)| at as usize + 1);
    let repeated = decisions[since.min(decisions.len())..]
        .iter()
        .zip(&ops[since.min(ops.len())..])
        .filter(|(d, o)| d.tid == tid && **o == Some(op))
        .count() as u64;
    (repeated * 2 >= max_steps).then(|| {
        format!(
            "thread `{}` repeated `{}` {} times without `yield_now`: add `thread::yield_now()` \
             to waiting loops",
            program.thread_name(tid),
            op.name(),
            thousands(repeated)
        )
    })
}

/// The livelock of an execution a state cache cut at a state it visited
/// earlier on the same path (`hashes[i]`: the state after `i` steps, the
/// steps before a saved state it started from included), when every
/// thread enabled there took a step in the cycle; `None` for a cut
/// anywhere else (a state of another execution, or a cycle that leaves
/// some enabled thread out: a fair scheduler would not go round it for
/// ever).
pub(crate) fn lasso<P: Program + ?Sized>(
    program: &P,
    hashes: &[Option<[u8; 32]>],
    decisions: &[Decision],
) -> Option<Failure> {
    let (now, before) = hashes.split_last()?;
    let now = (*now)?;
    let start = before.iter().rposition(|h| *h == Some(now))?;
    let cycle = &decisions[start..];
    let enabled: Vec<Tid> = program
        .threads()
        .iter()
        .filter(|t| t.pending.enabled)
        .map(|t| t.tid)
        .collect();
    if enabled.is_empty() || !enabled.iter().all(|t| cycle.iter().any(|d| d.tid == *t)) {
        return None;
    }
    let names: Vec<String> = enabled
        .iter()
        .map(|t| format!("`{}`", program.thread_name(*t)))
        .collect();
    Some(Failure::new(
        FailureKind::Livelock,
        Some(program.thread_name(enabled[0])),
        format!(
            "steps {}..={} lead back to the state after step {}: {} can go round this cycle \
             for ever, and every other live thread is blocked",
            start + 1,
            decisions.len(),
            start,
            names.join(", ")
        ),
    ))
}

/// `9990` as `9,990`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(9990), "9,990");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
