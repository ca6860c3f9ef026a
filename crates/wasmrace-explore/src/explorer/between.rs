//! The explorer's side of going on in place ([`Program::step_on`](crate::Program::step_on)): what
//! the loop does between two steps (take the step in, decide the next),
//! done while the program is inside a hook call and so without it; and the
//! decision it leaves for the loop when the program has to stop.

use super::fairness::Fairness;
use super::partition::Share;
use super::path::PathSnapshots;
use super::{Config, Report};
use crate::observer::Observer;
use crate::program::{Onward, StepInfo, ThreadView};
use crate::strategy::{Context, Strategy};
use wasmrace_trace::{Decision, Tid};

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
        if self.path.snapshot_due(info.cost)
            || next as u64 >= self.cfg.max_steps
            || (!self.checked && self.share.checks_at(next))
        {
            self.taken = false;
            return Onward::Stop;
        }
        self.taken = true;
        take_in(self.strategy, self.observer, self.report, info);
        let d = Decision::new(info.tid, info.alt);
        self.path.record(d, info.op, info.cost);
        self.fair
            .record(info.tid, info.op, views, (next - 1) as u64);
        match self.decide(views, next) {
            Some(d) if d.tid == tid => {
                self.taken = false;
                Onward::Take(d)
            }
            Some(d) => {
                *self.ahead = Some(Ahead::Decided { d, save: None });
                Onward::Pause
            }
            None => Onward::Pause,
        }
    }

    /// `Run::decide` without the program: the decision of step `step`,
    /// or `None` with what stands for it (an abandon, an invalid decision,
    /// one with a save request) left in `ahead`.
    fn decide(&mut self, views: &[ThreadView], step: usize) -> Option<Decision> {
        let ctx = Context {
            step,
            threads: self.fair.schedulable(views),
            last: self.path.last(),
            prefix: self.path.decisions(),
        };
        // None enabled: `Run::decide` reports it.
        ctx.enabled().next()?;
        let Some(d) = self.strategy.decide(&ctx) else {
            *self.ahead = Some(Ahead::Abandoned);
            return None;
        };
        if !valid(&ctx, d) {
            *self.ahead = Some(Ahead::Invalid(d));
            return None;
        }
        self.observer.decided(&ctx, d);
        let save = (self.strategy.capabilities_mut()).and_then(|c| c.save_request());
        if save.is_some() {
            *self.ahead = Some(Ahead::Decided { d, save });
            return None;
        }
        Some(d)
    }
}

/// Whether the program can take `d` in the state `ctx` shows.
pub(super) fn valid(ctx: &Context<'_>, d: Decision) -> bool {
    ctx.thread(d.tid)
        .is_some_and(|t| t.pending.enabled && d.alt < t.pending.alts)
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
