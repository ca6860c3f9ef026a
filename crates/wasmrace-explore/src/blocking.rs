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
    /// `inner` with blocking avoidance turned off.
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

    /// The wrapped program.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped program, mutably (e.g. to turn its tracing on).
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    /// Unwraps the program.
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
                    message: None,
                    cost: 0,
                    phase: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{reg, ModelBuilder};
    use wasmrace_trace::ThreadPath;

    fn pending(p: &impl Program, t: Tid) -> Pending {
        p.threads()
            .iter()
            .find(|v| v.tid == t)
            .unwrap()
            .pending
            .clone()
    }

    #[test]
    fn a_blocking_thread_runs_a_block_step_then_waits() {
        let mut b = ModelBuilder::new();
        let rx = b.thread("rx", |t| {
            t.recv(0);
        });
        b.main(|t| {
            t.spawn(rx, 0).send(reg(0), 7);
        });
        let mut w = WithoutBlockingAvoidance::new(b.build().unwrap());
        let main = ThreadPath::main().tid();
        let c = ThreadPath::main().child(1).tid();
        w.step(Decision::new(main, 0)).unwrap();
        let p = pending(&w, c);
        assert_eq!((p.op, p.enabled), (OpKind::Block, true));
        assert_eq!(
            p.accesses,
            vec![Access::read(wasmrace_trace::Oid::mailbox(c))]
        );
        let snap = w.snapshot().unwrap().unwrap();
        let before = w.state_hash();
        let info = w.step(Decision::new(c, 0)).unwrap().clone();
        assert_eq!((info.op, info.cost), (Some(OpKind::Block), 0));
        let p = pending(&w, c);
        assert_eq!((p.op, p.enabled), (OpKind::Recv, false), "blocked now");
        // Same inner state, different blocked set: different hashes.
        assert_ne!(w.state_hash(), before);
        // The send enables the receive again.
        w.step(Decision::new(main, 0)).unwrap();
        assert_eq!(
            pending(&w, c),
            w.inner()
                .threads()
                .iter()
                .find(|v| v.tid == c)
                .unwrap()
                .pending
        );
        assert!(pending(&w, c).enabled);
        // Restoring the snapshot brings back the not-yet-blocked state.
        w.restore(&snap).unwrap();
        assert_eq!(pending(&w, c).op, OpKind::Block);
        assert_eq!(w.state_hash(), before);
    }

    #[test]
    fn deadlock_is_declared_once_every_thread_has_blocked() {
        let mut b = ModelBuilder::new();
        let rx = b.thread("rx", |t| {
            t.recv(0);
        });
        b.main(|t| {
            t.spawn(rx, 0).recv(1);
        });
        let mut w = WithoutBlockingAvoidance::new(b.build().unwrap());
        let main = ThreadPath::main().tid();
        let c = ThreadPath::main().child(1).tid();
        w.step(Decision::new(main, 0)).unwrap();
        assert!(
            matches!(w.inner_mut().status(), Status::Failed(f) if f.kind == FailureKind::Deadlock)
        );
        assert_eq!(*w.status(), Status::Running);
        w.step(Decision::new(c, 0)).unwrap();
        assert_eq!(*w.status(), Status::Running);
        w.step(Decision::new(main, 0)).unwrap();
        let Status::Failed(f) = w.status() else {
            panic!("{:?}", w.status())
        };
        assert_eq!(f.kind, FailureKind::Deadlock);
        assert_eq!(f.waiting.len(), 2);
        w.reset().unwrap();
        assert_eq!(*w.status(), Status::Running);
        assert_eq!(pending(&w, main).op, OpKind::Spawn);
    }
}
