//! A wrapper strategy that records what another strategy does (after
//! shuttle's metrics-as-wrapper schedulers): every execution's decisions, how
//! it started, its preemptions and outcome, plus running totals. Tests use
//! the records to check strategies; the CLI can use the totals as metrics.

use crate::program::StepInfo;
use crate::strategy::{BoundHit, Context, Outcome, Start, Stat, Strategy};
use std::collections::BTreeMap;
use wasmrace_trace::Decision;

/// One execution as the wrapped strategy ran it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Every decision of the execution, the resumed prefix included.
    pub decisions: Vec<Decision>,
    pub start: Start,
    /// Preemptions in `decisions` (`Context::is_preemption` at each step).
    pub preemptions: u32,
    pub outcome: Outcome,
}

/// Running totals over all executions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordStats {
    pub executions: u64,
    pub finished: u64,
    pub failed: u64,
    pub abandoned: u64,
    /// Decisions the wrapped strategy took (not those replayed to resume).
    pub decisions: u64,
    pub max_depth: usize,
    pub max_preemptions: u32,
}

/// Records the executions of `S`; see the module documentation.
#[derive(Debug)]
pub struct Recorder<S> {
    inner: S,
    keep: bool,
    decisions: Vec<Decision>,
    preempted: Vec<bool>,
    start: Start,
    records: Vec<Recorded>,
    stats: RecordStats,
    /// What the states the inner strategy saved were reached by, per id, to
    /// record whole schedules after a `Start::Saved`.
    saved: BTreeMap<u64, (Vec<Decision>, Vec<bool>)>,
}

impl<S: Strategy> Recorder<S> {
    /// Records every execution in full.
    pub fn new(inner: S) -> Self {
        Recorder {
            inner,
            keep: true,
            decisions: Vec::new(),
            preempted: Vec::new(),
            start: Start::Fresh,
            records: Vec::new(),
            stats: RecordStats::default(),
            saved: BTreeMap::new(),
        }
    }

    /// Keeps only the totals, for long runs.
    pub fn totals_only(inner: S) -> Self {
        Recorder {
            keep: false,
            ..Recorder::new(inner)
        }
    }

    pub fn executions(&self) -> &[Recorded] {
        &self.records
    }

    pub fn stats(&self) -> &RecordStats {
        &self.stats
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Strategy> Strategy for Recorder<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn seed(&self) -> u64 {
        self.inner.seed()
    }

    fn begin(&mut self, executions: u64) -> Option<Start> {
        let start = self.inner.begin(executions)?;
        match start {
            Start::Fresh => {
                self.decisions.clear();
                self.preempted.clear();
            }
            Start::Resume { prefix_len } => {
                self.decisions.truncate(prefix_len);
                self.preempted.truncate(prefix_len);
            }
            Start::Saved { id } => {
                let (decisions, preempted) = self.saved.remove(&id).unwrap_or_default();
                self.decisions = decisions;
                self.preempted = preempted;
            }
        }
        self.start = start;
        Some(start)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let d = self.inner.decide(ctx)?;
        // The explorer may have replayed a prefix we recorded; realign.
        self.decisions.truncate(ctx.step);
        self.preempted.truncate(ctx.step);
        self.decisions.push(d);
        self.preempted.push(ctx.is_preemption(d.tid));
        self.stats.decisions += 1;
        Some(d)
    }

    fn observe(&mut self, step: &StepInfo) {
        self.inner.observe(step)
    }

    fn end(&mut self, outcome: &Outcome) {
        self.inner.end(outcome);
        let preemptions = self.preempted.iter().filter(|p| **p).count() as u32;
        let s = &mut self.stats;
        s.executions += 1;
        match outcome {
            Outcome::Finished => s.finished += 1,
            Outcome::Failed(_) => s.failed += 1,
            Outcome::Abandoned => s.abandoned += 1,
        }
        s.max_depth = s.max_depth.max(self.decisions.len());
        s.max_preemptions = s.max_preemptions.max(preemptions);
        if self.keep {
            self.records.push(Recorded {
                decisions: self.decisions.clone(),
                start: self.start,
                preemptions,
                outcome: outcome.clone(),
            });
        }
    }

    fn exhausted(&self) -> bool {
        self.inner.exhausted()
    }

    fn bound_hit(&self) -> Option<BoundHit> {
        self.inner.bound_hit()
    }

    fn active(&self) -> &str {
        self.inner.active()
    }

    fn wants_state_hash(&self) -> bool {
        self.inner.wants_state_hash()
    }

    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        self.inner.observe_state(hash)
    }

    fn save_request(&mut self) -> Option<u64> {
        let id = self.inner.save_request()?;
        // `decide` already recorded the decision about to run; the saved
        // state is the one before it.
        let n = self.decisions.len().saturating_sub(1);
        self.saved.insert(
            id,
            (self.decisions[..n].to_vec(), self.preempted[..n].to_vec()),
        );
        Some(id)
    }

    fn stats(&self) -> Vec<Stat> {
        self.inner.stats()
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

    /// Drives a strategy by hand over two always-enabled threads, two steps.
    fn drive<S: Strategy>(s: &mut S) {
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
            for step in from..2 {
                let last = path.last().map(|d| (d.tid, Some(OpKind::CellSet)));
                let c = Context {
                    step,
                    threads: &ts,
                    last,
                    prefix: &path,
                };
                path.push(s.decide(&c).unwrap());
            }
            s.end(&Outcome::Finished);
        }
    }

    #[test]
    fn records_whole_schedules_across_resumes() {
        let mut r = Recorder::new(Dfs::unbounded());
        drive(&mut r);
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
        assert!(r.exhausted());
        assert_eq!(r.name(), "dfs");
    }

    #[test]
    fn totals_only_keeps_no_schedules() {
        let mut r = Recorder::totals_only(Dfs::unbounded());
        drive(&mut r);
        assert!(r.executions().is_empty());
        assert_eq!(r.stats().executions, 4);
    }
}
