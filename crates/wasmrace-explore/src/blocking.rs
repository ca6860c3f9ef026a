//! Blocking avoidance turned off, to measure what it saves (Concuerror,
//! ICST 2013, §VI-A and Fig. 8).
//!
//! Our programs report before each step whether a thread's operation can run,
//! and strategies only ever schedule enabled threads: that *is* blocking
//! avoidance, for free. [`WithoutBlockingAvoidance`] wraps a program to
//! behave like Concuerror without it: a thread whose pending operation is
//! disabled, and which has not been scheduled onto it since it became
//! disabled, is shown as *enabled* with `OpKind::Block`. Scheduling it runs a
//! `Block` step (the process runs, finds nothing to receive and blocks; the
//! inner program does not move, cost 0) and marks the thread blocked, i.e.
//! disabled, until its operation becomes enabled again.
//!
//! Consequences that mirror the naive Concuerror: switching away from a
//! thread that is about to block counts as a preemption (it looks enabled);
//! after its `Block` step, switching is free. A deadlock is declared only
//! once every live thread has blocked: until then the remaining `Block`
//! steps are explored like any other.
//!
//! (§VI-A's rule "if the last action of a replayed prefix is a process block,
//! abort the iteration" belongs to the optimized search, where blocks are not
//! in prefixes; here they are ordinary decisions and replay normally.)

use crate::program::{Pending, Program, Status, StepInfo, ThreadView};
use std::collections::BTreeSet;
use wasmrace_trace::{mix64, Access, Decision, FailureKind, OpKind, Tid};

/// A snapshot of the wrapped program and of which threads have blocked.
#[derive(Clone, Debug)]
pub struct BlockingSnapshot<S> {
    inner: S,
    blocked: BTreeSet<Tid>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct WithoutBlockingAvoidance<P: Program> {
    inner: P,
    /// Threads that ran their `Block` step and wait for their operation to
    /// become enabled.
    blocked: BTreeSet<Tid>,
    views: Vec<ThreadView>,
    status: Status,
    info: StepInfo,
}

impl<P: Program> WithoutBlockingAvoidance<P> {
    pub fn new(inner: P) -> Self {
        let mut w = WithoutBlockingAvoidance {
            inner,
            blocked: BTreeSet::new(),
            views: Vec::new(),
            status: Status::Running,
            info: StepInfo::default(),
        };
        w.refresh();
        w
    }

    pub fn inner(&self) -> &P {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    pub fn into_inner(self) -> P {
        self.inner
    }

    /// Whether `view`'s thread is shown as able to run its `Block` step.
    fn would_block(&self, view: &ThreadView) -> bool {
        !view.pending.enabled && !self.blocked.contains(&view.tid)
    }

    /// Recomputes blocked threads, views and status from the inner program.
    fn refresh(&mut self) {
        let inner = self.inner.threads();
        // A blocked thread stays blocked only while its operation is disabled.
        self.blocked
            .retain(|t| inner.iter().any(|v| v.tid == *t && !v.pending.enabled));
        self.views = inner
            .iter()
            .map(|v| {
                if v.pending.enabled || self.blocked.contains(&v.tid) {
                    return v.clone();
                }
                // Finding nothing to take inspects the objects, changes none.
                let accesses = v
                    .pending
                    .accesses
                    .iter()
                    .map(|a| Access::read(a.obj))
                    .collect();
                ThreadView {
                    tid: v.tid,
                    pending: Pending {
                        op: OpKind::Block,
                        enabled: true,
                        alts: 1,
                        accesses,
                        site: v.pending.site,
                    },
                }
            })
            .collect();
        let inner_status = self.inner.status();
        self.status = match inner_status {
            Status::Failed(f)
                if f.kind == FailureKind::Deadlock
                    && self.views.iter().any(|v| v.pending.enabled) =>
            {
                Status::Running
            }
            s => s.clone(),
        };
    }
}

impl<P: Program> Program for WithoutBlockingAvoidance<P> {
    type Snapshot = BlockingSnapshot<P::Snapshot>;
    type Error = P::Error;

    fn reset(&mut self) -> Result<(), P::Error> {
        self.inner.reset()?;
        self.blocked.clear();
        self.info = StepInfo::default();
        self.refresh();
        Ok(())
    }

    fn threads(&self) -> &[ThreadView] {
        &self.views
    }

    fn status(&self) -> &Status {
        &self.status
    }

    fn step(&mut self, d: Decision) -> Result<&StepInfo, P::Error> {
        let inner_view = self.inner.threads().iter().find(|v| v.tid == d.tid);
        match inner_view {
            Some(v) if d.alt == 0 && self.would_block(v) => {
                let accesses = v
                    .pending
                    .accesses
                    .iter()
                    .map(|a| Access::read(a.obj))
                    .collect();
                self.info = StepInfo {
                    tid: d.tid,
                    alt: 0,
                    op: Some(OpKind::Block),
                    accesses,
                    site: v.pending.site,
                    spawned: Vec::new(),
                    cost: 0,
                };
                self.blocked.insert(d.tid);
            }
            // Anything else is the inner program's to run or to refuse.
            _ => self.info = self.inner.step(d)?.clone(),
        }
        self.refresh();
        Ok(&self.info)
    }

    fn snapshot(&mut self) -> Result<Option<Self::Snapshot>, P::Error> {
        Ok(self.inner.snapshot()?.map(|inner| BlockingSnapshot {
            inner,
            blocked: self.blocked.clone(),
        }))
    }

    fn restore(&mut self, s: &Self::Snapshot) -> Result<(), P::Error> {
        self.inner.restore(&s.inner)?;
        self.blocked = s.blocked.clone();
        self.refresh();
        Ok(())
    }

    fn state_hash(&mut self) -> Option<[u8; 32]> {
        let mut h = self.inner.state_hash()?;
        // Fold the blocked set into each 64-bit lane of the inner hash.
        let mut acc = mix64(self.blocked.len() as u64);
        for t in &self.blocked {
            acc = mix64(acc ^ t.0);
        }
        for lane in h.chunks_mut(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(lane);
            acc = mix64(acc ^ u64::from_le_bytes(w));
            lane.copy_from_slice(&acc.to_le_bytes());
        }
        Some(h)
    }

    fn thread_name(&self, tid: Tid) -> String {
        self.inner.thread_name(tid)
    }
}
