//! The abstract event model: what kind of operation a thread performs, which
//! objects it touches and how, and the scheduler's decision that runs it.

use crate::ids::{Oid, Tid};
use serde::{Deserialize, Serialize};

/// How an operation touches an object. Two accesses to the same object are
/// dependent unless both are *shared* (a read or a shared sync); `Sync`
/// (lock acquire/release, condition variables, joins, barrier arrivals)
/// counts as a write for dependence but is reported apart so that race
/// detectors can build happens-before edges from it. `SharedSync` is a
/// synchronization that commutes with its own kind and with reads, e.g. a
/// read-mode lock acquisition: two readers taking one `RwLock` are
/// independent, a reader and a writer are not.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// Reads the object's value.
    Read,
    /// Changes the object's value.
    Write,
    /// An exclusive synchronization (see above).
    Sync,
    /// A synchronization that commutes with reads and its own kind.
    SharedSync,
}

impl AccessKind {
    /// Whether two accesses of shared kinds commute: reads and shared
    /// syncs. Everything else conflicts with every access to its object.
    pub fn is_shared(self) -> bool {
        matches!(self, AccessKind::Read | AccessKind::SharedSync)
    }
    /// Whether this is a synchronization (`Sync` or `SharedSync`) rather
    /// than a memory access (the `MEM` events of race detectors).
    pub fn is_sync(self) -> bool {
        matches!(self, AccessKind::Sync | AccessKind::SharedSync)
    }
}

/// One object an operation touches, and how. An operation's accesses
/// decide which other operations it is dependent on ([`Access::conflicts`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Access {
    /// The object touched.
    pub obj: Oid,
    /// How it is touched.
    pub kind: AccessKind,
}

impl Access {
    /// A read of `obj`.
    pub fn read(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Read,
        }
    }
    /// A write of `obj`.
    pub fn write(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Write,
        }
    }
    /// An exclusive synchronization on `obj`.
    pub fn sync(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::Sync,
        }
    }
    /// A synchronization that commutes with others of its kind (see
    /// [`AccessKind::SharedSync`]).
    pub fn shared_sync(obj: Oid) -> Self {
        Access {
            obj,
            kind: AccessKind::SharedSync,
        }
    }
    /// Same object and at least one of the two is not shared (a read or a
    /// shared sync).
    pub fn conflicts(&self, other: &Access) -> bool {
        self.obj == other.obj && !(self.kind.is_shared() && other.kind.is_shared())
    }
}

/// What an operation means to a race detector: which happens-before edges
/// it creates and how it changes the locks its thread holds. The objects
/// involved are the operation's sync accesses (`AccessKind::is_sync`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SyncRole {
    /// No synchronization (memory accesses, object creation, ...).
    None,
    /// Acquires the lock its sync access names; `shared`: in read mode (an
    /// `RwLock` read guard), else exclusively.
    Acquire {
        /// Taken in read mode, shared with other readers.
        shared: bool,
    },
    /// Releases the lock its sync access names, in whichever mode it is held.
    Release,
    /// A condition-variable wait: releases the mutex among its sync
    /// accesses that the thread holds and waits on the other (the condvar).
    WaitRelease,
    /// The end of a condition-variable wait: ordered after the notification
    /// that woke it, re-acquires the mutex the wait released.
    WaitReacquire,
    /// Wakes the `alt`-th waiter of its condvar.
    NotifyOne,
    /// Wakes every waiter of its condvar.
    NotifyAll,
    /// Sends the message `StepInfo::message` names.
    Send,
    /// Receives the message `StepInfo::message` names.
    Receive,
    /// Ordered after the exit of the thread whose liveness it syncs on.
    Join,
    /// Retires the thread: what joins of it are ordered after.
    Exit,
    /// Arrives at a barrier generation (its sync access): everything before
    /// any arrival of a generation happens before every departure from it.
    BarrierArrive,
    /// Leaves a barrier generation (its sync access) once it was released.
    BarrierDepart,
}

/// The one declaration of every kind of scheduling point: variant, the name
/// shown in traces and schedule files, and its synchronization role.
macro_rules! op_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $role:expr;)*) => {
        /// Every kind of scheduling point a thread can stop at. `Exit` is
        /// the step that retires a thread whose function has returned (it
        /// wakes joiners and drops its registered names, so it conflicts
        /// with `join` and `register`); `CondvarWake` is the second half of
        /// a condition-variable wait (re-acquire the mutex once notified);
        /// `Block` only exists when blocking avoidance is turned off and
        /// records a thread that was scheduled onto a blocking operation;
        /// `Phase` is the guest announcing that it reached a named phase
        /// (`wasmrace::phase("init-done")`): it touches nothing and exists
        /// so that explorers can change their priorities at that moment.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
        pub enum OpKind {
            $($(#[$doc])* $variant,)*
        }

        impl OpKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$variant,)*];

            /// The name shown in traces, e.g. `cell.get`.
            pub fn name(self) -> &'static str {
                match self {
                    $(OpKind::$variant => $name,)*
                }
            }

            /// What the operation means to a race detector.
            pub fn role(self) -> SyncRole {
                use SyncRole::*;
                match self {
                    $(OpKind::$variant => $role,)*
                }
            }
        }
    };
}

op_kinds! {
    /// Starts a new thread running a guest function.
    Spawn => "spawn", None;
    /// Waits for a thread to exit (blocks until it has).
    Join => "join", Join;
    /// A scheduling point that touches nothing (`wasmrace::yield_now`).
    Yield => "yield", None;
    /// Retires a thread whose function returned (see above).
    Exit => "exit", Exit;
    /// Puts a message in a thread's mailbox.
    Send => "send", Send;
    /// Takes the oldest message from the own mailbox; blocks while it is empty.
    Recv => "recv", Receive;
    /// Takes the oldest message from one sender; blocks while there is none.
    RecvFrom => "recv_from", Receive;
    /// Creates a shared cell.
    CellNew => "cell.new", None;
    /// Reads a shared cell (a read access).
    CellGet => "cell.get", None;
    /// Writes a shared cell (a write access).
    CellSet => "cell.set", None;
    /// Creates an atomic integer.
    AtomicNew => "atomic.new", None;
    /// Reads an atomic integer.
    AtomicLoad => "atomic.load", None;
    /// Writes an atomic integer.
    AtomicStore => "atomic.store", None;
    /// Replaces an atomic integer's value, returning the old one.
    AtomicSwap => "atomic.swap", None;
    /// Adds to an atomic integer (wrapping), returning the old value.
    AtomicFetchAdd => "atomic.fetch_add", None;
    /// Writes an atomic integer if it holds the expected value.
    AtomicCompareExchange => "atomic.compare_exchange", None;
    /// Creates a mutex.
    MutexNew => "mutex.new", None;
    /// Acquires a mutex; blocks while another thread holds it.
    MutexLock => "mutex.lock", Acquire { shared: false };
    /// Releases a mutex (its guard was dropped).
    MutexUnlock => "mutex.unlock", Release;
    /// Creates a condition variable.
    CondvarNew => "condvar.new", None;
    /// Releases the mutex and waits on the condvar (first half of a wait).
    CondvarWait => "condvar.wait", WaitRelease;
    /// Re-acquires the mutex once notified (second half of a wait).
    CondvarWake => "condvar.wake", WaitReacquire;
    /// Wakes one waiter of a condvar (`alt` picks which).
    CondvarNotifyOne => "condvar.notify_one", NotifyOne;
    /// Wakes every waiter of a condvar.
    CondvarNotifyAll => "condvar.notify_all", NotifyAll;
    /// Creates a shared key-value table.
    TableNew => "table.new", None;
    /// Inserts or replaces a table entry.
    TableInsert => "table.insert", None;
    /// Reads a table entry.
    TableGet => "table.get", None;
    /// Removes a table entry.
    TableRemove => "table.remove", None;
    /// Binds a name to a thread (Erlang-style registry).
    Register => "register", None;
    /// Looks a registered name up.
    Whereis => "whereis", None;
    /// Removes a registered name.
    Unregister => "unregister", None;
    /// A nondeterministic choice among `n` values; the decision's `alt` is the value.
    Choose => "choose", None;
    /// The guest announcing a named phase (see above).
    Phase => "phase", None;
    /// A thread scheduled onto a blocking operation (see above).
    Block => "block", None;
    /// Creates a reader-writer lock.
    RwLockNew => "rwlock.new", None;
    /// Acquires an `RwLock` in read mode; blocks while a writer holds it.
    RwLockRead => "rwlock.read", Acquire { shared: true };
    /// Acquires an `RwLock` exclusively; blocks while anyone holds it.
    RwLockWrite => "rwlock.write", Acquire { shared: false };
    /// Releases a read guard.
    RwLockReadUnlock => "rwlock.read_unlock", Release;
    /// Releases a write guard.
    RwLockWriteUnlock => "rwlock.write_unlock", Release;
    /// Creates a barrier for `n` threads.
    BarrierNew => "barrier.new", None;
    /// Arrives at a barrier (first half of a wait).
    BarrierWait => "barrier.wait", BarrierArrive;
    /// The second half of a barrier wait: leave once the generation was
    /// released.
    BarrierLeave => "barrier.leave", BarrierDepart;
    /// An atomic load from linear memory (a std guest's `*.atomic.load`).
    MemLoad => "mem.load", None;
    /// An atomic store to linear memory.
    MemStore => "mem.store", None;
    /// An atomic read-modify-write of linear memory (`add`, `sub`, `and`,
    /// `or`, `xor`, `xchg`), returning the old value.
    MemRmw => "mem.rmw", None;
    /// An atomic compare-exchange of linear memory, returning the old value.
    MemCmpxchg => "mem.cmpxchg", None;
    /// `memory.atomic.wait`: returns at once when the value differs, else
    /// waits for a notify on the address (first half of a wait).
    MemWait => "mem.wait", None;
    /// The end of a `memory.atomic.wait`: once notified, or timed out.
    MemWake => "mem.wake", None;
    /// `memory.atomic.notify`: wakes waiters on an address (`alt` picks
    /// which one, when one of several is woken).
    MemNotify => "mem.notify", None;
    /// The process ends (a std guest's `main` returned or it called
    /// `proc_exit`): every thread stops.
    ProcessExit => "process.exit", None;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_shared_accesses_commute() {
        let names: std::collections::BTreeSet<_> = OpKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), OpKind::ALL.len());
        let o = Oid(7);
        assert!(!Access::shared_sync(o).conflicts(&Access::shared_sync(o)));
        assert!(!Access::shared_sync(o).conflicts(&Access::read(o)));
        assert!(Access::shared_sync(o).conflicts(&Access::sync(o)));
        assert!(Access::shared_sync(o).conflicts(&Access::write(o)));
        assert!(!Access::shared_sync(o).conflicts(&Access::sync(Oid(8))));
    }
}

/// One scheduling decision: run thread `tid`; `alt` picks among the
/// alternatives of its pending operation (the value of `choose(n)`, or which
/// waiter `notify_one` wakes) and is 0 for operations without alternatives.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Decision {
    /// The thread to run.
    pub tid: Tid,
    /// Which alternative of its pending operation; 0 if it has none.
    pub alt: u32,
}

impl Decision {
    /// Runs `tid`, taking alternative `alt`.
    pub fn new(tid: Tid, alt: u32) -> Self {
        Decision { tid, alt }
    }
}
