//! The cuts of a run split by execution: each worker keeps its reports
//! since the frontier, so that the run can be cut exactly where one
//! thread would have stopped (before the lowest bug, or at the budget).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmrace_explore::explorer::blocks::OpenSizes;
use wasmrace_explore::{LowestBug, Report};

/// One worker's reports as of its recent executions (a run split by
/// execution), so that the run can be cut at the lowest failing index
/// whichever worker finds it, and when: the counts are then exactly those
/// of the executions one thread runs before it stops at that bug.
pub(super) struct Cuts<'a> {
    worker: usize,
    /// Per worker, a global index (a position, for open blocks) at or below
    /// the next execution it counts: past its last one; `u64::MAX` once it
    /// stopped. No bug can be found below their minimum any more.
    frontier: &'a [AtomicU64],
    /// (global index, report after that execution), oldest first: only
    /// those a bug still to be found, or the budget's cut, could cut at.
    kept: VecDeque<(u64, Report)>,
    lowest: LowestBug,
    /// With open blocks, their sizes: the budget's cut is known only
    /// once the blocks below it ended.
    open: Option<OpenSizes>,
}

impl<'a> Cuts<'a> {
    pub(super) fn new(
        worker: usize,
        frontier: &'a [AtomicU64],
        lowest: &LowestBug,
        open: Option<OpenSizes>,
    ) -> Self {
        Cuts {
            worker,
            frontier,
            kept: VecDeque::new(),
            lowest: lowest.clone(),
            open,
        }
    }

    /// After each execution counted that did not end the run (the
    /// explorer's report, with the strategy's counters as of that
    /// execution and its index).
    pub(super) fn record(&mut self, report: &Report) {
        let Some(index) = report.last_index else {
            return;
        };
        self.frontier[self.worker].store(index + 1, Ordering::Release);
        self.kept.push_back((index, report.clone()));
        let low = self
            .frontier
            .iter()
            .map(|f| f.load(Ordering::Acquire))
            .min()
            .unwrap_or(u64::MAX);
        // Read after the frontier: a worker that stopped at its bug lowered
        // `lowest` before leaving the frontier.
        let low = low.min(self.lowest.get().unwrap_or(u64::MAX));
        let low = low.min(self.open.as_ref().map_or(u64::MAX, |o| o.settled() + 1));
        // A later bug (or the budget's cut) is at `low` or above: the newest
        // report before `low` is the oldest one it could need.
        while self.kept.len() > 1 && self.kept[1].0 < low {
            self.kept.pop_front();
        }
    }

    /// The worker ran its last execution.
    pub(super) fn finished(&self) {
        self.frontier[self.worker].store(u64::MAX, Ordering::Release);
    }

    /// This worker's report cut after the execution at `cut` (the
    /// budget's last, with open blocks: the worker may have run past it).
    pub(super) fn through(&self, cut: u64, last: &Report) -> Report {
        match last.last_index {
            Some(i) if i <= cut => last.clone(),
            _ => self.newest_below(cut + 1, last),
        }
    }

    /// This worker's report cut before execution `bug` (0-based global
    /// index), the lowest failing one: its final report if the bug is its
    /// own, else the report after its last execution below the bug.
    pub(super) fn before(&self, bug: u64, last: &Report) -> Report {
        if last.bugs.first().is_some_and(|b| b.execution == bug + 1) {
            return last.clone();
        }
        self.newest_below(bug, last)
    }

    /// The report after this worker's last execution below `index`.
    fn newest_below(&self, index: u64, last: &Report) -> Report {
        let mut report = self
            .kept
            .iter()
            .rev()
            .find(|(i, _)| *i < index)
            .map(|(_, r)| r.clone())
            .unwrap_or_default();
        // Set once the run ends; strategies that split by execution have
        // no bound of their own, and their counters are the kept report's.
        report.strategy_bound = last.strategy_bound.clone();
        report.elapsed = last.elapsed;
        report
    }
}
