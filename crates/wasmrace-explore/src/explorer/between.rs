//! The explorer's side of going on in place ([`Program::step_on`](crate::Program::step_on)): what
//! the loop does between two steps (take the step in, decide the next),
//! done while the program is inside a hook call and so without it; and the
//! decision it leaves for the loop when the program has to stop.

use super::decide::{decide, record, take_in, Ahead};
use super::fairness::Fairness;
use super::forced::ForcedPrefix;
use super::partition::Share;
use super::path::PathSnapshots;
use super::{Config, Report};
use crate::observer::Observer;
use crate::program::{Onward, StepInfo, ThreadView};
use crate::strategy::Strategy;
use wasmrace_trace::{Decision, Tid};

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
