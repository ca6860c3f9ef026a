//! The abstract program interface every strategy works on. The wasm host
//! implements it for guests; `model` implements it for small pure-Rust
//! programs used in unit tests. Strategies never see more than this.

use std::sync::Arc;
use wasmrace_trace::{Access, Decision, Failure, OpKind, Tid};

/// The operation a live thread will perform when it is next scheduled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// What the operation is.
    pub op: OpKind,
    /// Whether the operation can run now (a held lock, an empty mailbox or a
    /// join on a live thread make it disabled).
    pub enabled: bool,
    /// Number of alternatives (>= 1): `choose(n)` has `n`, `notify_one` with
    /// `k` waiters has `k`; everything else has 1.
    pub alts: u32,
    /// The objects the operation will touch if run now, and how. This is a
    /// prediction made before the step; `StepInfo::accesses` is what happened.
    pub accesses: Vec<Access>,
    /// Stable id of the call site in the guest (0 when unknown). Equal sites
    /// are the same program statement in every execution.
    pub site: u64,
}

/// A live (not yet exited) thread and its pending operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadView {
    /// The thread.
    pub tid: Tid,
    /// What it does when next scheduled.
    pub pending: Pending,
}

/// Where the current execution stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Some thread is enabled.
    Running,
    /// Every thread has exited.
    Finished,
    /// A failure ended the execution (panic, trap, deadlock, ...).
    Failed(Failure),
}

/// What one step did, as seen by strategies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepInfo {
    /// The thread that ran.
    pub tid: Tid,
    /// The alternative taken (see [`Decision::alt`]).
    pub alt: u32,
    /// The operation the thread ran: `Some` for every step a program
    /// reports, `None` only in `StepInfo::default()`.
    pub op: Option<OpKind>,
    /// Objects actually touched and how (a failed compare-exchange reads).
    pub accesses: Vec<Access>,
    /// Stable id of the call site in the guest (see [`Pending::site`]).
    pub site: u64,
    /// Threads this step created, in creation order.
    pub spawned: Vec<Tid>,
    /// For a send, the id of the message it sent; for a receive, the id of
    /// the message it took: (sender, index of the send among the sender's
    /// sends, from 0). Race detectors draw happens-before edges from a send
    /// to its receive with it; `None` for every other step.
    pub message: Option<(Tid, u32)>,
    /// Deterministic measure of the work the step did, what replaying it
    /// costs (for wasm, the guest's instructions plus the host's share of
    /// a step; operations for models); drives the snapshot policy.
    pub cost: u64,
    /// For a `Phase` step, the name the guest announced
    /// (`wasmrace::phase("init-done")`); `None` for every other step.
    /// Explorers react to it (reorder threads once initialization is done);
    /// shared, so cloning a step does not copy the name.
    pub phase: Option<Arc<str>>,
}

/// What the explorer answers when a program offers it the step just taken
/// without stopping ([`Program::step_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Onward {
    /// The explorer has not taken the step in: stop, and return it.
    Stop,
    /// The explorer has taken the step in, and the next decision is this
    /// one, for the thread offered: take it in place.
    Take(Decision),
    /// The explorer has taken the step in and will carry on with `step`
    /// (it decided another thread, or it needs the program stopped): stop,
    /// and return the step it took in.
    Pause,
}

/// The callback of [`Program::step_on`]: given the step just taken, the
/// threads after it (the status is [`Status::Running`]) and the thread that
/// took it, which could go on in place, the explorer's answer.
pub type OnwardFn<'a> = dyn FnMut(&StepInfo, &[ThreadView], Tid) -> Onward + 'a;

/// A concurrent program that can be run one scheduling decision at a time.
///
/// Contract:
/// - `reset` starts a new execution from the initial state; the same sequence
///   of decisions after `reset` always yields the same steps (determinism).
/// - `threads` lists live threads in creation order, blocked ones included.
/// - `step` runs one enabled decision; a decision naming a disabled or
///   unknown thread, or an `alt` out of range, is an error, not a failure.
/// - `snapshot`/`restore` are optional: a program that cannot snapshot
///   returns `Ok(None)`; after `restore(s)` the program behaves exactly as it
///   did when `s` was taken.
pub trait Program {
    /// A saved state of the program, restorable any number of times.
    type Snapshot;
    /// Why the program could not run (a host failure, never a guest bug:
    /// those are [`Status::Failed`]).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Starts a new execution from the initial state.
    fn reset(&mut self) -> Result<(), Self::Error>;
    /// Live threads in creation order, blocked ones included.
    fn threads(&self) -> &[ThreadView];
    /// Where the current execution stands.
    fn status(&self) -> &Status;
    /// Runs one enabled decision and says what the step did.
    fn step(&mut self, decision: Decision) -> Result<&StepInfo, Self::Error>;

    /// Runs `decision` as [`step`](Self::step) does, then, while the thread
    /// that ran is still running and the program could go on without
    /// stopping, offers the step just taken to `onward` and takes the
    /// decision it answers ([`Onward::Take`], always for the thread
    /// offered and enabled) in place. Returns the last step taken: one
    /// `onward` never saw or answered [`Onward::Stop`] for, or, after
    /// [`Onward::Pause`], the one it took in. The explorer ends up where
    /// the same decisions through `step` lead; the program saves the cost
    /// of stopping (a wasm thread continues inside its hook call instead
    /// of unwinding and being rewound). The default never offers.
    fn step_on(
        &mut self,
        decision: Decision,
        onward: &mut OnwardFn<'_>,
    ) -> Result<&StepInfo, Self::Error> {
        let _ = onward;
        self.step(decision)
    }

    /// A snapshot of the current state, or `None` if the program cannot
    /// take one (the default).
    fn snapshot(&mut self) -> Result<Option<Self::Snapshot>, Self::Error> {
        Ok(None)
    }
    /// Returns to the state `snapshot` was taken in.
    fn restore(&mut self, snapshot: &Self::Snapshot) -> Result<(), Self::Error>;
    /// Bytes a snapshot holds (an upper bound: pages it shares with other
    /// snapshots count in full), for memory budgets. 0 when unknown.
    fn snapshot_bytes(&self, _snapshot: &Self::Snapshot) -> usize {
        0
    }
    /// A hash of the whole program state, when the program can compute one.
    fn state_hash(&mut self) -> Option<[u8; 32]> {
        None
    }
    /// Display name of a thread (`main.1`).
    fn thread_name(&self, tid: Tid) -> String;
}

impl<P: Program + ?Sized> Program for &mut P {
    type Snapshot = P::Snapshot;
    type Error = P::Error;
    fn reset(&mut self) -> Result<(), Self::Error> {
        (**self).reset()
    }
    fn threads(&self) -> &[ThreadView] {
        (**self).threads()
    }
    fn status(&self) -> &Status {
        (**self).status()
    }
    fn step(&mut self, d: Decision) -> Result<&StepInfo, Self::Error> {
        (**self).step(d)
    }
    fn step_on(
        &mut self,
        d: Decision,
        onward: &mut OnwardFn<'_>,
    ) -> Result<&StepInfo, Self::Error> {
        (**self).step_on(d, onward)
    }
    fn snapshot(&mut self) -> Result<Option<Self::Snapshot>, Self::Error> {
        (**self).snapshot()
    }
    fn restore(&mut self, s: &Self::Snapshot) -> Result<(), Self::Error> {
        (**self).restore(s)
    }
    fn snapshot_bytes(&self, s: &Self::Snapshot) -> usize {
        (**self).snapshot_bytes(s)
    }
    fn state_hash(&mut self) -> Option<[u8; 32]> {
        (**self).state_hash()
    }
    fn thread_name(&self, tid: Tid) -> String {
        (**self).thread_name(tid)
    }
}

/// Whether switching from `last` to `next` preempts `last`: `last` could
/// have continued (it is live and enabled) and did not give up the processor
/// with `yield_now`. Switches forced by blocking or exiting are not
/// preemptions (Musuvathi & Qadeer's definition, as Concuerror uses it).
pub fn is_preemption(
    threads: &[ThreadView],
    last: Option<(Tid, Option<OpKind>)>,
    next: Tid,
) -> bool {
    match last {
        None => false,
        Some((t, op)) => {
            if t == next || op == Some(OpKind::Yield) {
                return false;
            }
            threads.iter().any(|v| v.tid == t && v.pending.enabled)
        }
    }
}
