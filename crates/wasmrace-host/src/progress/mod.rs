//! Where the current execution stands, as strategies see it (the thread
//! views and the status), and the step under way: how a step begins (the
//! decided operation runs in the `World`) and how it ends (the views kept
//! up), written once for the two places a step ends: in the host after its
//! thread unwound, or inside its thread's next hook call (`onward`).

mod views;

use crate::ops::{Effect, Op};
use crate::world::{Executed, GuestMem, World};
use wasmrace_explore::{Status, StepInfo, ThreadView};
use wasmrace_trace::{Decision, OpKind, Tid};

/// What a step costs besides the fuel its thread burns (`run_segment`,
/// `onward`): the host's own work for it, about 1,000 to 2,000
/// instructions (callgrind on `benches/peers`). A step's cost drives the
/// explorer's snapshot policy (`Config::snapshot_every_cost`: a snapshot
/// once replaying the steps since the last would cost that much); without
/// this, steps taken in place, where no Asyncify rewind and unwind burn
/// fuel, looked almost free to replay, and long executions were never
/// snapshotted (`filesystem_18` under DFS replayed 14 times the steps, in
/// 5 times the time).
const STEP_COST: u64 = 1_000;

/// See the module documentation. Kept apart from the store, so that a hook
/// call can reach it beside the store's data.
#[derive(Debug)]
pub(crate) struct Progress {
    pub(crate) views: Vec<ThreadView>,
    pub(crate) status: Status,
    pub(crate) info: StepInfo,
    pub(crate) steps: u64,
    pub(crate) last: Option<(Tid, Option<OpKind>)>,
    /// The effect of the step under way's operation (the operation table's).
    effect: Effect,
    /// The step under way ended inside its thread's next hook call: the
    /// host, once the thread unwound, has nothing left to do for it.
    pub(crate) ended: bool,
    /// A decision the explorer took inside a hook call that could not be
    /// taken there (a spawn, which starts other threads): taken next.
    pub(crate) deferred: Option<Decision>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            views: Vec::new(),
            status: Status::Running,
            info: StepInfo::default(),
            steps: 0,
            last: None,
            effect: Effect::Own,
            ended: false,
            deferred: None,
        }
    }
}

impl Progress {
    /// Begins the step `d` of thread `i` (at index `i` in `w`): the step's
    /// record starts afresh with its operation. Returns the operation's
    /// kind, its call site and, for a spawn, the argument of the thread to
    /// start.
    pub(crate) fn begin(&mut self, w: &World, i: usize, d: Decision) -> (OpKind, u32, Option<u32>) {
        let info = &mut self.info;
        info.tid = d.tid;
        info.alt = d.alt;
        info.spawned.clear();
        info.message = None;
        info.cost = STEP_COST;
        info.phase = None;
        self.ended = false;
        let t = &w.threads[i];
        let arg = match &t.pending {
            Op::Spawn { arg } => Some(*arg),
            Op::Phase { name } => {
                // Rare (a few per execution): one small allocation.
                info.phase = Some(String::from_utf8_lossy(name).into());
                None
            }
            _ => None,
        };
        let kind = t.pending.kind();
        info.op = Some(kind);
        info.site = u64::from(t.site);
        self.effect = t.pending.effect();
        (kind, t.site, arg)
    }

    /// Runs the begun step's operation in `w` (`spawned`: the thread a
    /// spawn made), recording what it touched and the message it moved.
    pub(crate) fn execute(
        &mut self,
        w: &mut World,
        i: usize,
        d: Decision,
        spawned: Option<Tid>,
        tracing: bool,
        mem: GuestMem<'_>,
    ) -> Executed {
        // The view of `i` holds its pending accesses; it is at index `i`
        // unless an earlier thread exited. The view's list is rebuilt
        // after the step anyway, so take it rather than recompute it.
        let accesses = &mut self.info.accesses;
        let ex = match self.views.get_mut(i).filter(|v| v.tid == d.tid) {
            Some(v) => {
                std::mem::swap(accesses, &mut v.pending.accesses);
                w.execute_with(i, d.alt, spawned, tracing, accesses, Some(mem))
            }
            None => w.execute_mem(i, d.alt, spawned, tracing, accesses, Some(mem)),
        };
        self.info.message = ex.message;
        // Fair scheduling treats a spin as the yield it is (a waiting
        // loop on an atomic, which a std guest has no `yield_now` in).
        if ex.spun {
            self.info.op = Some(OpKind::Yield);
        }
        ex
    }

    /// Ends the step of thread `i`: counted, and the views and status
    /// brought up to date with `w`.
    pub(crate) fn end(&mut self, w: &World, i: usize) {
        self.steps += 1;
        self.last = Some((self.info.tid, self.info.op));
        self.refresh_after(w, i, self.effect);
    }
}
