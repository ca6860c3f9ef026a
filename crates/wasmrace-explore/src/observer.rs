//! Observers: what the explorer runs beside a strategy to measure it
//! (metrics, partial orders, recordings), so that measuring never wraps a
//! strategy and never has to forward anything of it.
//!
//! The explorer calls an observer at the same points as the strategy, with
//! what the strategy cannot tell it: the path an execution starts with
//! (`begin`: a resumed prefix or a saved state's), the decisions with the
//! context they were taken in (`decided`, before the step runs), the steps
//! (`step`), the states the strategy saved (`saved`) and the whole path at
//! the end (`end`). Steps the explorer replays to get back to a start point
//! are not observed again (as for strategies): an observer that needs
//! per-step data of a prefix keeps it, cut to the prefix at `begin`, and per
//! saved state (`saved`) for a `Start::Saved`.

use crate::program::StepInfo;
use crate::strategy::{Context, Outcome, Start};
use wasmrace_trace::Decision;

/// Measures an exploration; every method defaults to doing nothing. See the
/// module documentation.
pub trait Observer {
    /// An execution starts at `start`, with `prefix` already taken (empty
    /// for `Start::Fresh`).
    fn begin(&mut self, _start: Start, _prefix: &[Decision]) {}

    /// The strategy took `decision` in `ctx` (step `ctx.step`); the step has
    /// not run yet.
    fn decided(&mut self, _ctx: &Context<'_>, _decision: Decision) {}

    /// The decided step ran.
    fn step(&mut self, _step: &StepInfo) {}

    /// The state after the first `depth` decisions of the current path (the
    /// one the last `decided` was about) was saved as `id`, for a later
    /// `Start::Saved { id }`.
    fn saved(&mut self, _id: u64, _depth: usize) {}

    /// The execution ended; `path` is all of its decisions, prefix included.
    fn end(&mut self, _outcome: &Outcome, _path: &[Decision]) {}
}

/// No observer.
impl Observer for () {}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn begin(&mut self, start: Start, prefix: &[Decision]) {
        (**self).begin(start, prefix)
    }
    fn decided(&mut self, ctx: &Context<'_>, decision: Decision) {
        (**self).decided(ctx, decision)
    }
    fn step(&mut self, step: &StepInfo) {
        (**self).step(step)
    }
    fn saved(&mut self, id: u64, depth: usize) {
        (**self).saved(id, depth)
    }
    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        (**self).end(outcome, path)
    }
}

/// Two observers, called in order.
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn begin(&mut self, start: Start, prefix: &[Decision]) {
        self.0.begin(start, prefix);
        self.1.begin(start, prefix);
    }
    fn decided(&mut self, ctx: &Context<'_>, decision: Decision) {
        self.0.decided(ctx, decision);
        self.1.decided(ctx, decision);
    }
    fn step(&mut self, step: &StepInfo) {
        self.0.step(step);
        self.1.step(step);
    }
    fn saved(&mut self, id: u64, depth: usize) {
        self.0.saved(id, depth);
        self.1.saved(id, depth);
    }
    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        self.0.end(outcome, path);
        self.1.end(outcome, path);
    }
}
