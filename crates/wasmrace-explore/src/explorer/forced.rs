//! The forced prefix (`Config::snapshot_forced_prefix`): the steps every
//! execution of a program starts with, before the first state where more
//! than one thread is enabled or a thread has alternatives (a test's
//! `main` creating its objects and spawning its first thread). No
//! strategy can decide them otherwise, and the program is deterministic,
//! so they and the states between them are the same in every execution.
//!
//! **Learnt once.** The first execution started afresh records, step by
//! step, the thread views the strategy decided on and the steps it took
//! in, and the explorer snapshots the state after the last forced step
//! (the path's *base*, `path.rs`).
//!
//! **Shown, not run.** Every later fresh start shows the strategy and the
//! observer those same views and steps, through the same functions as a
//! real step (`decide::decide`, `take_in`, `record`), so that what they
//! see, and the randomness a sampling strategy draws, do not change; then
//! it restores the base instead of running the steps. A strategy that
//! does not take the forced decision there (it abandons the execution,
//! asks to save the state, or decides an invalid step) gets the program
//! rewound to that step and its answer handled by the loop, as if the
//! steps before had run.
//!
//! Strategies that hash states (the state caches) never use it: their
//! hashes are of states reached step by step (`Run::in_place`), and a
//! partition's ownership check at the split depth needs the path there.

use super::decide::{decide, record, take_in, Ahead};
use super::{ExploreError, Run};
use crate::observer::Observer;
use crate::program::{Program, Status, StepInfo, ThreadView};
use wasmrace_trace::Decision;

/// Forced steps learnt at most: a longer forced prefix is cut there, and
/// the steps after the cut run as usual. Bounds the memory the views take;
/// the prefix only saves time, it never changes what is explored.
const MAX_FORCED_STEPS: usize = 4096;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct ForcedPrefix {
    state: Learnt,
    /// `views[s]`: the threads the strategy decided step `s` on; one more
    /// than the steps (the threads after the last forced step).
    views: Vec<Vec<ThreadView>>,
    /// `steps[s]`: step `s` as the program reported it.
    steps: Vec<StepInfo>,
}

/// How far the prefix is learnt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Learnt {
    /// Not yet: the next fresh execution learns it.
    #[default]
    Unknown,
    /// The current execution, started afresh, is recording it.
    Learning,
    /// Known, with the base snapshot after it.
    Known,
    /// Not used: off, empty, or the program cannot snapshot there.
    Off,
}

/// Whether `views` leave the strategy no choice: one enabled thread, one
/// alternative.
fn forced(views: &[ThreadView]) -> bool {
    let mut enabled = views.iter().filter(|v| v.pending.enabled);
    matches!((enabled.next(), enabled.next()), (Some(v), None) if v.pending.alts == 1)
}

impl ForcedPrefix {
    /// Unused (`Config::snapshot_forced_prefix` off, a strategy that hashes
    /// states, a run split by prefix) unless `on`.
    pub(super) fn new(on: bool) -> Self {
        ForcedPrefix {
            state: if on { Learnt::Unknown } else { Learnt::Off },
            ..ForcedPrefix::default()
        }
    }

    /// An execution starts (`fresh`: afresh): true when it can start after
    /// the forced prefix (`Run::fast_forward`); otherwise a fresh one
    /// learns the prefix if nothing did yet.
    pub(super) fn starts(&mut self, fresh: bool) -> bool {
        match (self.state, fresh) {
            (Learnt::Known, true) => return true,
            (Learnt::Unknown, true) => self.state = Learnt::Learning,
            // The execution learning it ended, or stopped, inside it.
            (Learnt::Learning, _) => *self = ForcedPrefix::new(false),
            _ => {}
        }
        false
    }

    /// Whether the current execution is recording the prefix.
    pub(super) fn learning(&self) -> bool {
        self.state == Learnt::Learning
    }

    /// While learning: whether the `step`-th step, about to be decided on
    /// `views`, lies past the prefix (the program must stop there to be
    /// snapshotted).
    pub(super) fn ends_at(&self, step: usize, views: &[ThreadView]) -> bool {
        debug_assert!(self.learning() && step == self.views.len());
        !forced(views) || step >= MAX_FORCED_STEPS
    }

    /// While learning: records the views a forced step is decided on.
    pub(super) fn decides_on(&mut self, views: &[ThreadView]) {
        if self.learning() {
            self.views.push(views.to_vec());
        }
    }

    /// While learning: records a step taken in.
    pub(super) fn took(&mut self, info: &StepInfo) {
        if self.learning() {
            self.steps.push(info.clone());
        }
    }

    /// Ends the learning at the state the views `views` show, snapshotted
    /// as `snap` (`None`: the program could not).
    pub(super) fn learnt<S>(&mut self, views: &[ThreadView], snap: Option<S>) -> Option<S> {
        let useful = !self.steps.is_empty() && self.steps.len() == self.views.len();
        match snap.filter(|_| useful) {
            Some(snap) => {
                self.views.push(views.to_vec());
                self.state = Learnt::Known;
                Some(snap)
            }
            None => {
                *self = ForcedPrefix::new(false);
                None
            }
        }
    }
}

impl<P: Program, O: Observer + ?Sized> Run<'_, P, O> {
    /// While learning the forced prefix, before deciding the step `step`:
    /// records the views, or, where the prefix ends, snapshots the program
    /// as the base of every path.
    pub(super) fn learn_forced(&mut self, step: usize) -> Result<(), ExploreError<P::Error>> {
        if !self.forced.learning() {
            return Ok(());
        }
        if !self.forced.ends_at(step, self.program.threads()) {
            self.forced.decides_on(self.program.threads());
            return Ok(());
        }
        let running = matches!(self.program.status(), Status::Running);
        let snap = match running {
            true => self.program.snapshot().map_err(ExploreError::Program)?,
            false => None,
        };
        if let Some(snap) = self.forced.learnt(self.program.threads(), snap) {
            self.report.snapshots_taken += 1;
            self.path.set_base(snap);
        }
        Ok(())
    }

    /// A fresh execution after the forced prefix is learnt: shows the
    /// strategy and the observer its steps, then restores the base; or,
    /// where the strategy does not take the forced step, rewinds the
    /// program to it and leaves its answer to the loop (`self.ahead`).
    pub(super) fn fast_forward(&mut self) -> Result<(), ExploreError<P::Error>> {
        let in_place = self.in_place();
        let f = self.forced.steps.len();
        for s in 0..f {
            let (views, info) = (&self.forced.views[s], &self.forced.steps[s]);
            let d = Decision::new(info.tid, info.alt);
            let (strategy, observer) = (&mut *self.strategy, &mut *self.observer);
            let decided = decide(strategy, observer, &mut self.fair, &self.path, views, s);
            if !matches!(decided, Some(Ahead::Decided { d: taken, save: None }) if taken == d) {
                return self.stop_forward(s, decided, in_place);
            }
            take_in(strategy, observer, &mut self.report, info);
            let after = &self.forced.views[s + 1];
            record(
                &mut self.path,
                &mut self.fair,
                d,
                (info.op, info.cost),
                after,
            );
        }
        self.path
            .rewind(self.program, f, &[], in_place, &mut self.report)
            .map_err(ExploreError::Program)
    }

    /// Ends a fast-forward at step `s`, where the strategy answered
    /// `decided` instead of the forced step: the program is brought there
    /// and the answer handed to the loop.
    fn stop_forward(
        &mut self,
        s: usize,
        decided: Option<Ahead>,
        in_place: bool,
    ) -> Result<(), ExploreError<P::Error>> {
        self.path
            .rewind(self.program, s, &[], in_place, &mut self.report)
            .map_err(ExploreError::Program)?;
        match decided {
            Some(ahead) => self.ahead = Some(ahead),
            None => return Err(ExploreError::NoEnabledThread { step: s }),
        }
        Ok(())
    }
}
