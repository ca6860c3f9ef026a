//! An observer that records what a strategy does: every execution's
//! decisions, how it started, its preemptions and outcome, plus running
//! totals. Tests use the records to check strategies; the CLI can use the
//! totals as metrics. The explorer runs it beside any strategy
//! (`Explorer::run_observed`).

use crate::explorer::{ExploreError, Explorer, Report};
use crate::observer::Observer;
use crate::program::Program;
use crate::strategy::{Context, Outcome, Start, Strategy};
use std::collections::BTreeMap;
use wasmrace_trace::Decision;

/// One execution as the strategy ran it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Every decision of the execution, the resumed prefix included.
    pub decisions: Vec<Decision>,
    /// Where the strategy started it.
    pub start: Start,
    /// Preemptions in `decisions` (`Context::is_preemption` at each step).
    pub preemptions: u32,
    /// How it ended.
    pub outcome: Outcome,
}

/// Running totals over all executions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordStats {
    /// Executions that ended (the sum of the next three).
    pub executions: u64,
    /// Executions in which every thread exited.
    pub finished: u64,
    /// Executions that failed.
    pub failed: u64,
    /// Executions the strategy gave up on.
    pub abandoned: u64,
    /// Decisions the strategy took (not those replayed to resume).
    pub decisions: u64,
    /// Decisions of the longest execution, replayed prefix included.
    pub max_depth: usize,
    /// Preemptions of the execution with the most.
    pub max_preemptions: u32,
}

/// Records the executions of an exploration; see the module documentation.
#[derive(Debug)]
pub struct Recorder {
    keep: bool,
    /// Whether each decision of the current path was a preemption.
    preempted: Vec<bool>,
    start: Start,
    records: Vec<Recorded>,
    stats: RecordStats,
    /// The preemptions of the paths to the states the strategy saved, per
    /// id, to count them whole after a `Start::Saved`.
    saved: BTreeMap<u64, Vec<bool>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// Records every execution in full.
    pub fn new() -> Self {
        Recorder {
            keep: true,
            preempted: Vec::new(),
            start: Start::Fresh,
            records: Vec::new(),
            stats: RecordStats::default(),
            saved: BTreeMap::new(),
        }
    }

    /// Keeps only the totals, for long runs.
    pub fn totals_only() -> Self {
        Recorder {
            keep: false,
            ..Recorder::new()
        }
    }

    /// The executions recorded, in order (empty with `totals_only`).
    pub fn executions(&self) -> &[Recorded] {
        &self.records
    }

    /// The running totals.
    pub fn stats(&self) -> &RecordStats {
        &self.stats
    }
}

impl Observer for Recorder {
    fn begin(&mut self, start: Start, prefix: &[Decision]) {
        match start {
            Start::Saved { id } => self.preempted = self.saved.remove(&id).unwrap_or_default(),
            Start::Fresh | Start::Resume { .. } => {}
        }
        self.preempted.resize(prefix.len(), false);
        self.start = start;
    }

    fn decided(&mut self, ctx: &Context<'_>, d: Decision) {
        self.preempted.truncate(ctx.step);
        self.preempted.push(ctx.is_preemption(d.tid));
        self.stats.decisions += 1;
    }

    fn saved(&mut self, id: u64, depth: usize) {
        self.saved.insert(id, self.preempted[..depth].to_vec());
    }

    fn end(&mut self, outcome: &Outcome, path: &[Decision]) {
        let preemptions = self.preempted.iter().filter(|p| **p).count() as u32;
        let s = &mut self.stats;
        s.executions += 1;
        match outcome {
            Outcome::Finished => s.finished += 1,
            Outcome::Failed(_) => s.failed += 1,
            Outcome::Abandoned => s.abandoned += 1,
        }
        s.max_depth = s.max_depth.max(path.len());
        s.max_preemptions = s.max_preemptions.max(preemptions);
        if self.keep {
            self.records.push(Recorded {
                decisions: path.to_vec(),
                start: self.start,
                preemptions,
                outcome: outcome.clone(),
            });
        }
    }
}

/// A strategy with a [`Recorder`] beside it: for tests that run a strategy
/// and then look at both its state and its executions. Not a strategy: the
/// explorer runs the strategy and the recorder side by side
/// ([`run`](Self::run)).
#[derive(Debug)]
pub struct Recording<S> {
    strategy: S,
    recorder: Recorder,
}

impl<S: Strategy> Recording<S> {
    /// Records every execution of `strategy` in full.
    pub fn new(strategy: S) -> Self {
        Recording {
            strategy,
            recorder: Recorder::new(),
        }
    }

    /// Keeps only the totals.
    pub fn totals_only(strategy: S) -> Self {
        Recording {
            strategy,
            recorder: Recorder::totals_only(),
        }
    }

    /// Runs the strategy on `explorer`, recording its executions.
    pub fn run<P: Program>(
        &mut self,
        explorer: &mut Explorer<P>,
    ) -> Result<Report, ExploreError<P::Error>> {
        explorer.run_observed(&mut self.strategy, &mut self.recorder)
    }

    /// The executions recorded, in order (empty with `totals_only`).
    pub fn executions(&self) -> &[Recorded] {
        self.recorder.executions()
    }

    /// The running totals.
    pub fn stats(&self) -> &RecordStats {
        self.recorder.stats()
    }

    /// The recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The strategy, in the state the runs left it in.
    pub fn inner(&self) -> &S {
        &self.strategy
    }

    /// The strategy, mutably.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.strategy
    }

    /// Unwraps the strategy.
    pub fn into_inner(self) -> S {
        self.strategy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Pending, ThreadView};
    use crate::strategies::Dfs;
    use wasmrace_trace::{OpKind, Tid};

    fn view(tid: u64) -> ThreadView {
        ThreadView {
            tid: Tid(tid),
            pending: Pending {
                op: OpKind::CellSet,
                enabled: true,
                alts: 1,
                accesses: vec![],
                site: 0,
            },
        }
    }

    /// Drives a strategy by hand over two always-enabled threads, two steps,
    /// calling the observer as the explorer does.
    fn drive<S: Strategy>(s: &mut S, o: &mut Recorder) {
        let ts = [view(1), view(2)];
        let mut path: Vec<Decision> = Vec::new();
        let mut n = 0;
        while let Some(start) = s.begin(n) {
            n += 1;
            let from = match start {
                Start::Fresh => 0,
                Start::Resume { prefix_len } => prefix_len,
                Start::Saved { .. } => unreachable!("never saves"),
            };
            path.truncate(from);
            o.begin(start, &path);
            for step in from..2 {
                let last = path.last().map(|d| (d.tid, Some(OpKind::CellSet)));
                let c = Context {
                    step,
                    threads: &ts,
                    hidden: 0,
                    last,
                    prefix: &path,
                };
                let d = s.decide(&c).unwrap();
                o.decided(&c, d);
                path.push(d);
            }
            s.end(&Outcome::Finished);
            o.end(&Outcome::Finished, &path);
        }
    }

    #[test]
    fn records_whole_schedules_across_resumes() {
        let mut dfs = Dfs::unbounded();
        let mut r = Recorder::new();
        drive(&mut dfs, &mut r);
        let got: Vec<(Vec<u64>, u32)> = r
            .executions()
            .iter()
            .map(|e| (e.decisions.iter().map(|d| d.tid.0).collect(), e.preemptions))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![1, 1], 0),
                (vec![1, 2], 1),
                (vec![2, 2], 0),
                (vec![2, 1], 1)
            ]
        );
        assert_eq!(r.executions()[1].start, Start::Resume { prefix_len: 1 });
        let st = r.stats();
        assert_eq!(
            (
                st.executions,
                st.finished,
                st.decisions,
                st.max_depth,
                st.max_preemptions
            ),
            (4, 4, 6, 2, 1)
        );
        assert!(dfs.standing().exhausted);
        assert_eq!(dfs.name(), "dfs");
    }

    #[test]
    fn totals_only_keeps_no_schedules() {
        let mut r = Recorder::totals_only();
        drive(&mut Dfs::unbounded(), &mut r);
        assert!(r.executions().is_empty());
        assert_eq!(r.stats().executions, 4);
    }
}
