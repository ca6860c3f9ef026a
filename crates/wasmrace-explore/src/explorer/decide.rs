//! How the explorer decides a step and takes one in: the one way, used by
//! the loop (`Run::decide`, `Run::step`), inside a hook call while the
//! program goes on in place (`between.rs`) and when the forced prefix is
//! shown rather than run (`forced.rs`).

use super::fairness::Fairness;
use super::path::PathSnapshots;
use super::Report;
use crate::observer::Observer;
use crate::program::{StepInfo, ThreadView};
use crate::strategy::{Context, Strategy};
use wasmrace_trace::{Decision, OpKind};

/// A decision and the strategy's save request with it.
pub(super) type Decided = (Decision, Option<u64>);

/// A decision taken while the program went on in place
/// ([`Program::step_on`](crate::Program::step_on)) and could not take it there, for the next `step`.
pub(super) enum Ahead {
    /// Checked and shown to the observer, with the strategy's save request.
    Decided { d: Decision, save: Option<u64> },
    /// Not one the program can take: the next `step` reports it.
    Invalid(Decision),
    /// The strategy abandoned the execution.
    Abandoned,
}

/// Asks `strategy` for the decision of step `step` among `views` (as
/// fairness narrows them), checks it and shows it to the observer, with the
/// strategy's save request: `None` when no thread is enabled. The one way
/// the explorer decides, in the loop (`Run::decide`) and inside a hook call
/// (`Between::offer`).
pub(super) fn decide<S, O: Observer + ?Sized>(
    strategy: &mut dyn Strategy,
    observer: &mut O,
    fair: &mut Fairness,
    path: &PathSnapshots<S>,
    views: &[ThreadView],
    step: usize,
) -> Option<Ahead> {
    let (threads, hidden) = fair.schedulable(views);
    let ctx = Context {
        step,
        threads,
        hidden,
        last: path.last(),
        prefix: path.decisions(),
    };
    ctx.enabled().next()?;
    let Some(d) = strategy.decide(&ctx) else {
        return Some(Ahead::Abandoned);
    };
    if !valid(&ctx, d) {
        return Some(Ahead::Invalid(d));
    }
    observer.decided(&ctx, d);
    let save = strategy.save_request();
    Some(Ahead::Decided { d, save })
}

/// Takes in a step the program took: counts it, and shows it to the
/// strategy and the observer.
pub(super) fn take_in<O: Observer + ?Sized>(
    strategy: &mut dyn Strategy,
    observer: &mut O,
    report: &mut Report,
    info: &StepInfo,
) {
    report.steps += 1;
    strategy.observe(info);
    observer.step(info);
}

/// Records a step taken in (`d`, its operation and cost) on the path and in
/// the fairness state (`views`: the threads after it). The caller takes a
/// snapshot after it if the policy asks.
pub(super) fn record<S>(
    path: &mut PathSnapshots<S>,
    fair: &mut Fairness,
    d: Decision,
    (op, cost): (Option<OpKind>, u64),
    views: &[ThreadView],
) {
    let step = path.len() as u64;
    path.record(d, op, cost);
    fair.record(d.tid, op, views, step);
}

/// Whether the program can take `d` in the state `ctx` shows.
fn valid(ctx: &Context<'_>, d: Decision) -> bool {
    ctx.thread(d.tid)
        .is_some_and(|t| t.pending.enabled && d.alt < t.pending.alts)
}
