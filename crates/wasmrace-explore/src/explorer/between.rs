//! The explorer's side of going on in place ([`Program::step_on`](crate::Program::step_on)): what
//! the loop does between two steps (take the step in, decide the next),
//! done while the program is inside a hook call and so without it; and the
//! decision it leaves for the loop when the program has to stop.

use super::fairness::Fairness;
use super::forced::ForcedPrefix;
use super::partition::Share;
use super::path::PathSnapshots;
use super::{Config, Report};
use crate::observer::Observer;
use crate::program::{Onward, StepInfo, ThreadView};
use crate::strategy::{Context, Strategy};
use wasmrace_trace::{Decision, OpKind, Tid};

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

/// The explorer's side of going on in place ([`Program::step_on`](crate::Program::step_on)): what
/// the loop does between two steps, done without the program.
pub(super) struct Between<'r, S, O: ?Sized> {
    pub(super) strategy: &'r mut dyn Strategy,
    pub(super) observer: &'r mut O,
    pub(super) report: &'r mut Report,
    pub(super) path: &'r mut PathSnapshots<S>,
    pub(super) fair: &'r mut Fairness,
    pub(super) forced: &'r mut ForcedPrefix,
    pub(super) ahead: &'r mut Option<Ahead>,
    pub(super) cfg: &'r Config,
    pub(super) share: &'r Share,
    pub(super) checked: bool,
    /// Whether the last step offered was taken in.
    pub(super) taken: bool,
}

impl<S, O: Observer + ?Sized> Between<'_, S, O> {
    /// Takes in the step `info` thread `tid` just took, and decides the
    /// next, unless the loop would stop the program before deciding.
    pub(super) fn offer(&mut self, info: &StepInfo, views: &[ThreadView], tid: Tid) -> Onward {
        let next = self.path.len() + 1;
        // A snapshot, the step bound or a partition's check (`execution`)
        // needs the program stopped. (A strategy that hashes states never
        // goes on in place: `Run::in_place`.)
        // So does the end of the forced prefix while it is learnt.
        if self.path.snapshot_due(info.cost)
            || next as u64 >= self.cfg.max_steps
            || (!self.checked && self.share.checks_at(next))
            || (self.forced.learning() && self.forced.ends_at(next, views))
        {
            self.taken = false;
            return Onward::Stop;
        }
        self.taken = true;
        let (strategy, observer) = (&mut *self.strategy, &mut *self.observer);
        take_in(strategy, observer, self.report, info);
        self.forced.took(info);
        let d = Decision::new(info.tid, info.alt);
        record(self.path, self.fair, d, (info.op, info.cost), views);
        self.forced.decides_on(views);
        match decide(strategy, observer, self.fair, self.path, views, next) {
            Some(Ahead::Decided { d, save: None }) if d.tid == tid => {
                self.taken = false;
                Onward::Take(d)
            }
            // Left for `Run::step`, which reports a missing enabled thread
            // (`None`) or an invalid decision, and makes a save.
            ahead => {
                *self.ahead = ahead;
                Onward::Pause
            }
        }
    }
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
    let save = strategy.capabilities_mut().and_then(|c| c.save_request());
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
