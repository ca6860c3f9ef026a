//! The thread views strategies see, kept up incrementally after each
//! step (only what the step's operation can change, as the operation table
//! declares) and checked against a full recomputation by `verify_views`.

use super::Progress;
use crate::ops::Effect;
use crate::world::World;
use wasmrace_explore::{Pending, Status, ThreadView};
use wasmrace_trace::{OpKind, Tid};

impl Progress {
    /// Brings the views up to date after a step of thread `i` that ran an
    /// operation with effect `effect` (declared in the operation table). Views are in thread order without the
    /// exited threads. Only `i`'s pending operation changed (a thread's next
    /// operation is set by the thread itself), except that a spawn adds the
    /// child, which ran to its first hook and whose view is new, and an
    /// exit removes `i`'s view. The others keep their operation, site and
    /// accesses; their enabledness and alternatives are recomputed only
    /// after an operation that can change them (a release, a send, a
    /// notify, a spawn or an exit: `Effect::Others`), and their accesses
    /// only after one that names others' objects (`Effect::OthersAccesses`:
    /// `Unregister` and `Exit` name registry entries). A failed step, and
    /// the end of the process (`Effect::All`), recompute everything.
    pub(super) fn refresh_after(&mut self, w: &World, i: usize, effect: Effect) {
        if matches!(self.status, Status::Failed(_)) || effect == Effect::All {
            return self.refresh(w);
        }
        if w.threads[i].exited {
            let tid = w.threads[i].tid;
            if let Some(at) = self.views.iter().position(|v| v.tid == tid) {
                self.views.remove(at);
            }
        }
        // A spawned thread is the last one in `threads`.
        let first_new = w.threads.len() - self.info.spawned.len();
        for t in &w.threads[first_new..] {
            self.views.push(blank_view(t.tid));
        }
        let others = effect != Effect::Own;
        let registry = effect == Effect::OthersAccesses;
        let mut n = 0;
        let mut any_enabled = false;
        for (k, t) in w.threads.iter().enumerate() {
            if t.exited {
                continue;
            }
            let v = &mut self.views[n];
            n += 1;
            if k == i || k >= first_new {
                v.pending.op = t.pending.kind();
                v.pending.site = u64::from(t.site);
                w.accesses(k, &mut v.pending.accesses);
            } else if !others {
                any_enabled |= v.pending.enabled;
                continue;
            } else if registry {
                // Others' accesses name what this step changed (the
                // registry: who holds a name): recompute all, such steps
                // are rare.
                w.accesses(k, &mut v.pending.accesses);
            }
            v.pending.enabled = w.enabled(k);
            v.pending.alts = w.alts(k);
            any_enabled |= v.pending.enabled;
        }
        debug_assert_eq!(n, self.views.len());
        if any_enabled {
            // Usually running already: no drop and rebuild of the status.
            if !matches!(self.status, Status::Running) {
                self.status = Status::Running;
            }
        } else if n == 0 {
            self.status = Status::Finished;
        } else {
            self.status = Status::Failed(w.deadlock());
        }
    }

    /// Checks the views and status against a full recomputation.
    pub(crate) fn verify(&mut self, w: &World) -> Result<(), String> {
        let (views, status) = (self.views.clone(), self.status.clone());
        if matches!(status, Status::Failed(_)) {
            return Ok(());
        }
        self.status = Status::Running;
        self.refresh(w);
        if self.views != views || self.status != status {
            let msg = format!(
                "incremental views {views:?} / {status:?} differ from recomputed {:?} / {:?}",
                self.views, self.status
            );
            (self.views, self.status) = (views, status);
            return Err(msg);
        }
        Ok(())
    }

    /// Recomputes the thread views and the status after a step.
    pub(crate) fn refresh(&mut self, w: &World) {
        let mut views = std::mem::take(&mut self.views);
        let mut n = 0;
        for (i, t) in w.threads.iter().enumerate() {
            if t.exited {
                continue;
            }
            if n == views.len() {
                views.push(blank_view(t.tid));
            }
            let v = &mut views[n];
            v.tid = t.tid;
            v.pending.op = t.pending.kind();
            v.pending.enabled = w.enabled(i);
            v.pending.alts = w.alts(i);
            v.pending.site = u64::from(t.site);
            w.accesses(i, &mut v.pending.accesses);
            n += 1;
        }
        views.truncate(n);
        if !matches!(self.status, Status::Failed(_)) {
            self.status = if views.is_empty() {
                Status::Finished
            } else if views.iter().any(|v| v.pending.enabled) {
                Status::Running
            } else {
                Status::Failed(w.deadlock())
            };
        }
        self.views = views;
    }
}

/// A view for a new thread, filled in by the caller.
fn blank_view(tid: Tid) -> ThreadView {
    ThreadView {
        tid,
        pending: Pending {
            op: OpKind::Yield,
            enabled: false,
            alts: 1,
            accesses: Vec::new(),
            site: 0,
        },
    }
}
