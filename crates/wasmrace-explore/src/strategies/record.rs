//! A wrapper strategy that records what another strategy does (after
//! shuttle's metrics-as-wrapper schedulers): every execution's decisions, how
//! it started, its preemptions and outcome, plus running totals. Tests use
//! the records to check strategies; the CLI can use the totals as metrics.

use crate::program::StepInfo;
use crate::strategy::{BoundHit, Context, Outcome, Start, Strategy};
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
        let keep = match start {
            Start::Fresh => 0,
            Start::Resume { prefix_len } => prefix_len,
        };
        self.decisions.truncate(keep);
        self.preempted.truncate(keep);
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
}
