//! The abstract event model: what kind of operation a thread performs, which
//! objects it touches and how, and the scheduler's decision that runs it.

use crate::ids::{Oid, Tid};
use serde::{Deserialize, Serialize};

/// How an operation touches an object. Two accesses to the same object are
/// dependent unless both are reads; `Sync` (lock acquire/release, condition
/// variables, joins) counts as a write for dependence but is reported apart so
/// that race detectors can build happens-before edges from it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Read,
    Write,
    Sync,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Access {
    pub obj: Oid,
    pub kind: AccessKind,
}

impl Access {
    pub fn read(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Read,
        }
    }
    pub fn write(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Write,
        }
    }
    pub fn sync(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Sync,
        }
    }
    /// Same object and at least one of the two is not a read.
    pub fn conflicts(&self, other: &Access) -> bool {
        self.obj == other.obj && !(self.kind == AccessKind::Read && other.kind == AccessKind::Read)
    }
}

/// Every kind of scheduling point a thread can stop at. `Exit` is the step
/// that retires a thread whose function has returned (it wakes joiners and
/// drops its registered names, so it conflicts with `join` and `register`);
/// `CondvarWake` is the second half of a condition-variable wait (re-acquire
/// the mutex once notified); `Block` only exists when blocking avoidance is
/// turned off and records a thread that was scheduled onto a blocking
/// operation; `Phase` is the guest announcing that it reached a named phase
/// (`wasmrace::phase("init-done")`): it touches nothing and exists so that
/// explorers can change their priorities at that moment.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum OpKind {
    Spawn,
    Join,
    Yield,
    Exit,
    Send,
    Recv,
    RecvFrom,
    CellNew,
    CellGet,
    CellSet,
    AtomicNew,
    AtomicLoad,
    AtomicStore,
    AtomicSwap,
    AtomicFetchAdd,
    AtomicCompareExchange,
    MutexNew,
    MutexLock,
    MutexUnlock,
    CondvarNew,
    CondvarWait,
    CondvarWake,
    CondvarNotifyOne,
    CondvarNotifyAll,
    TableNew,
    TableInsert,
    TableGet,
    TableRemove,
    Register,
    Whereis,
    Unregister,
    Choose,
    Phase,
    Block,
}

impl OpKind {
    /// The name shown in traces, e.g. `cell.get`.
    pub fn name(self) -> &'static str {
        use OpKind::*;
        match self {
            Spawn => "spawn",
            Join => "join",
            Yield => "yield",
            Exit => "exit",
            Send => "send",
            Recv => "recv",
            RecvFrom => "recv_from",
            CellNew => "cell.new",
            CellGet => "cell.get",
            CellSet => "cell.set",
            AtomicNew => "atomic.new",
            AtomicLoad => "atomic.load",
            AtomicStore => "atomic.store",
            AtomicSwap => "atomic.swap",
            AtomicFetchAdd => "atomic.fetch_add",
            AtomicCompareExchange => "atomic.compare_exchange",
            MutexNew => "mutex.new",
            MutexLock => "mutex.lock",
            MutexUnlock => "mutex.unlock",
            CondvarNew => "condvar.new",
            CondvarWait => "condvar.wait",
            CondvarWake => "condvar.wake",
            CondvarNotifyOne => "condvar.notify_one",
            CondvarNotifyAll => "condvar.notify_all",
            TableNew => "table.new",
            TableInsert => "table.insert",
            TableGet => "table.get",
            TableRemove => "table.remove",
            Register => "register",
            Whereis => "whereis",
            Unregister => "unregister",
            Choose => "choose",
            Phase => "phase",
            Block => "block",
        }
    }
}

/// One scheduling decision: run thread `tid`; `alt` picks among the
/// alternatives of its pending operation (the value of `choose(n)`, or which
/// waiter `notify_one` wakes) and is 0 for operations without alternatives.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Decision {
    pub tid: Tid,
    pub alt: u32,
}

impl Decision {
    pub fn new(tid: Tid, alt: u32) -> Self {
        Decision { tid, alt }
    }
}
