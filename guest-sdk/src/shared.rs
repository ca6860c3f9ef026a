//! Objects held by the host and shared between threads. Every operation on
//! them, creation included, is a scheduling point, and the host knows which
//! object each one touches and whether it reads or writes, which is how it
//! finds the races worth exploring.
//!
//! Handles are plain ids (`Copy + Send + Sync`): copy them into closures.
//! Objects live until the end of the execution.

use crate::sys;
use core::marker::PhantomData;

/// A shared `u64` variable: the model of an ordinary, unsynchronised shared
/// variable. `get` is a read, `set` a write; `x.set(x.get() + 1)` is two
/// steps, so increments can be lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cell(u64);

impl Cell {
    /// A new cell holding `init`.
    #[inline]
    #[track_caller]
    pub fn new(init: u64) -> Cell {
        // SAFETY: plain value hook.
        Cell(unsafe { sys::cell_new(init as i64, sys::site()) } as u64)
    }

    /// Reads the value.
    #[inline]
    #[track_caller]
    pub fn get(&self) -> u64 {
        // SAFETY: plain value hook.
        unsafe { sys::cell_get(self.0 as i64, sys::site()) as u64 }
    }

    /// Writes the value.
    #[inline]
    #[track_caller]
    pub fn set(&self, v: u64) {
        // SAFETY: plain value hook.
        unsafe { sys::cell_set(self.0 as i64, v as i64, sys::site()) }
    }
}

/// A shared `u64` with atomic read-modify-write operations (sequentially
/// consistent: the host runs one operation at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Atomic(u64);

impl Atomic {
    /// A new atomic holding `init`.
    #[inline]
    #[track_caller]
    pub fn new(init: u64) -> Atomic {
        // SAFETY: plain value hook.
        Atomic(unsafe { sys::atomic_new(init as i64, sys::site()) } as u64)
    }

    /// Reads the value.
    #[inline]
    #[track_caller]
    pub fn load(&self) -> u64 {
        // SAFETY: plain value hook.
        unsafe { sys::atomic_load(self.0 as i64, sys::site()) as u64 }
    }

    /// Writes the value.
    #[inline]
    #[track_caller]
    pub fn store(&self, v: u64) {
        // SAFETY: plain value hook.
        unsafe { sys::atomic_store(self.0 as i64, v as i64, sys::site()) }
    }

    /// Writes `v` and returns the previous value.
    #[inline]
    #[track_caller]
    pub fn swap(&self, v: u64) -> u64 {
        // SAFETY: plain value hook.
        unsafe { sys::atomic_swap(self.0 as i64, v as i64, sys::site()) as u64 }
    }

    /// Adds `v` (wrapping) and returns the previous value.
    #[inline]
    #[track_caller]
    pub fn fetch_add(&self, v: u64) -> u64 {
        // SAFETY: plain value hook.
        unsafe { sys::atomic_fetch_add(self.0 as i64, v as i64, sys::site()) as u64 }
    }

    /// Stores `new` if the value is `current`. Returns `Ok(previous)` on
    /// success and `Err(actual)` otherwise, like `std`'s `compare_exchange`.
    #[inline]
    #[track_caller]
    pub fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        // SAFETY: plain value hook.
        let prev = unsafe {
            sys::atomic_compare_exchange(self.0 as i64, current as i64, new as i64, sys::site())
        } as u64;
        if prev == current {
            Ok(prev)
        } else {
            Err(prev)
        }
    }
}

/// A lock held by the host. It guards no data of its own: it orders the
/// operations on other shared objects made while it is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mutex(u64);

// No `Default`: creating an object is a scheduling point with a call site,
// which an implicit `default()` would hide.
#[allow(clippy::new_without_default)]
impl Mutex {
    /// A new, unlocked mutex.
    #[inline]
    #[track_caller]
    pub fn new() -> Mutex {
        // SAFETY: plain value hook.
        Mutex(unsafe { sys::mutex_new(sys::site()) } as u64)
    }

    /// Acquires the lock, blocking while anyone (the caller included: it is
    /// not reentrant, so relocking deadlocks) holds it. Unlocks when the guard
    /// is dropped.
    #[inline]
    #[track_caller]
    pub fn lock(&self) -> MutexGuard {
        let site = sys::site();
        // SAFETY: plain value hook.
        unsafe { sys::mutex_lock(self.0 as i64, site) };
        MutexGuard::new(*self, site)
    }
}

/// Proof that the current thread holds a [`Mutex`]; unlocks on drop. Not
/// `Send`: unlocking from another thread is a misuse the host reports.
#[derive(Debug)]
#[must_use = "the mutex is unlocked as soon as the guard is dropped"]
pub struct MutexGuard {
    mutex: Mutex,
    /// Where the lock was taken: `Drop` cannot be `#[track_caller]`, so the
    /// unlock is attributed to the lock's site (use `unlock` for a precise
    /// one).
    site: i32,
    _not_send: PhantomData<*const ()>,
}

impl MutexGuard {
    fn new(mutex: Mutex, site: i32) -> MutexGuard {
        MutexGuard {
            mutex,
            site,
            _not_send: PhantomData,
        }
    }

    /// The mutex this guard holds.
    pub fn mutex(&self) -> Mutex {
        self.mutex
    }

    /// Unlocks now, recording the caller's line as the unlock site (dropping
    /// the guard records the lock's).
    #[inline]
    #[track_caller]
    pub fn unlock(self) {
        let mutex = self.mutex;
        core::mem::forget(self);
        // SAFETY: plain value hook.
        unsafe { sys::mutex_unlock(mutex.0 as i64, sys::site()) }
    }
}

impl Drop for MutexGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: plain value hook.
        unsafe { sys::mutex_unlock(self.mutex.0 as i64, self.site) }
    }
}

/// A read-write lock held by the host: any number of readers or one
/// writer. Like [`Mutex`] it guards no data of its own; it orders the
/// operations on other shared objects made while it is held. A thread is
/// never scheduled onto an acquisition that would block, and two read
/// acquisitions are independent (exploring one order of them is enough).
///
/// ```no_run
/// use wasmrace::shared::{Cell, RwLock};
/// let lock = RwLock::new();
/// let value = Cell::new(0);
/// {
///     let _w = lock.write();
///     value.set(value.get() + 1);
/// }
/// let _r = lock.read();
/// assert_eq!(value.get(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RwLock(u64);

// No `Default`: creating an object is a scheduling point with a call site,
// which an implicit `default()` would hide.
#[allow(clippy::new_without_default)]
impl RwLock {
    /// A new, unlocked read-write lock.
    #[inline]
    #[track_caller]
    pub fn new() -> RwLock {
        // SAFETY: plain value hook.
        RwLock(unsafe { sys::rwlock_new(sys::site()) } as u64)
    }

    /// Acquires the lock for reading, blocking while a writer holds it.
    /// Releases when the guard is dropped.
    #[inline]
    #[track_caller]
    pub fn read(&self) -> RwLockReadGuard {
        let site = sys::site();
        // SAFETY: plain value hook.
        unsafe { sys::rwlock_read(self.0 as i64, site) };
        RwLockReadGuard {
            lock: *self,
            site,
            _not_send: PhantomData,
        }
    }

    /// Acquires the lock for writing, blocking while anyone (the caller
    /// included) holds it in either mode. Releases when the guard is
    /// dropped.
    #[inline]
    #[track_caller]
    pub fn write(&self) -> RwLockWriteGuard {
        let site = sys::site();
        // SAFETY: plain value hook.
        unsafe { sys::rwlock_write(self.0 as i64, site) };
        RwLockWriteGuard {
            lock: *self,
            site,
            _not_send: PhantomData,
        }
    }
}

/// Proof that the current thread holds an [`RwLock`] for reading; releases
/// on drop (attributed to the acquisition's site).
#[derive(Debug)]
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockReadGuard {
    lock: RwLock,
    site: i32,
    _not_send: PhantomData<*const ()>,
}

impl RwLockReadGuard {
    /// The lock this guard holds.
    pub fn lock(&self) -> RwLock {
        self.lock
    }
}

impl Drop for RwLockReadGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: plain value hook.
        unsafe { sys::rwlock_read_unlock(self.lock.0 as i64, self.site) }
    }
}

/// Proof that the current thread holds an [`RwLock`] for writing; releases
/// on drop (attributed to the acquisition's site).
#[derive(Debug)]
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockWriteGuard {
    lock: RwLock,
    site: i32,
    _not_send: PhantomData<*const ()>,
}

impl RwLockWriteGuard {
    /// The lock this guard holds.
    pub fn lock(&self) -> RwLock {
        self.lock
    }
}

impl Drop for RwLockWriteGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: plain value hook.
        unsafe { sys::rwlock_write_unlock(self.lock.0 as i64, self.site) }
    }
}

/// A barrier held by the host: [`wait`](Barrier::wait) blocks until `n`
/// threads wait, then releases them all; reusable for later rounds. Like
/// `std::sync::Barrier`, exactly one thread per round is the leader, and
/// `new(0)` and `new(1)` never block.
///
/// ```no_run
/// use wasmrace::shared::{Barrier, Cell};
/// use wasmrace::thread;
/// let barrier = Barrier::new(2);
/// let x = Cell::new(0);
/// let t = thread::spawn(move || {
///     x.set(1);
///     barrier.wait();
/// });
/// barrier.wait();
/// assert_eq!(x.get(), 1); // written before the other thread arrived
/// t.join();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barrier(u64);

impl Barrier {
    /// A barrier for `n` threads.
    #[inline]
    #[track_caller]
    pub fn new(n: u32) -> Barrier {
        // SAFETY: plain value hook.
        Barrier(unsafe { sys::barrier_new(n as i32, sys::site()) } as u64)
    }

    /// Waits until `n` threads (this one included) wait on this barrier in
    /// the current round. Returns `true` in exactly one thread per round,
    /// the last to arrive (std's `is_leader`). A scheduling point; the
    /// arrival and the departure are separate steps.
    #[inline]
    #[track_caller]
    pub fn wait(&self) -> bool {
        // SAFETY: plain value hook.
        unsafe { sys::barrier_wait(self.0 as i64, sys::site()) != 0 }
    }
}

/// A condition variable held by the host. No spurious wakeups, but still wait
/// in a `while` loop: another thread may change the condition between the
/// notification and the re-acquisition of the mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Condvar(u64);

// No `Default`: creating an object is a scheduling point with a call site,
// which an implicit `default()` would hide.
#[allow(clippy::new_without_default)]
impl Condvar {
    /// A new condition variable with no waiters.
    #[inline]
    #[track_caller]
    pub fn new() -> Condvar {
        // SAFETY: plain value hook.
        Condvar(unsafe { sys::condvar_new(sys::site()) } as u64)
    }

    /// Releases the guard's mutex, waits for a notification, re-acquires the
    /// mutex and returns a guard for it. A scheduling point.
    #[inline]
    #[track_caller]
    pub fn wait(&self, guard: MutexGuard) -> MutexGuard {
        let site = sys::site();
        let mutex = guard.mutex;
        // The host releases and re-acquires the mutex itself: the old guard
        // must not unlock it, and the returned one owns the re-acquired lock.
        core::mem::forget(guard);
        // SAFETY: plain value hook.
        unsafe { sys::condvar_wait(self.0 as i64, mutex.0 as i64, site) };
        MutexGuard::new(mutex, site)
    }

    /// Wakes one waiter, if any. Which one is a choice the host explores.
    #[inline]
    #[track_caller]
    pub fn notify_one(&self) {
        // SAFETY: plain value hook.
        unsafe { sys::condvar_notify_one(self.0 as i64, sys::site()) }
    }

    /// Wakes every waiter.
    #[inline]
    #[track_caller]
    pub fn notify_all(&self) {
        // SAFETY: plain value hook.
        unsafe { sys::condvar_notify_all(self.0 as i64, sys::site()) }
    }
}

/// A shared map `u64 -> u64`. Operations on different keys do not conflict,
/// so the host does not bother reordering them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Table(u64);

// No `Default`: creating an object is a scheduling point with a call site,
// which an implicit `default()` would hide.
#[allow(clippy::new_without_default)]
impl Table {
    /// A new, empty table.
    #[inline]
    #[track_caller]
    pub fn new() -> Table {
        // SAFETY: plain value hook.
        Table(unsafe { sys::table_new(sys::site()) } as u64)
    }

    /// Sets `k` to `v`, returning the previous value if there was one.
    #[inline]
    #[track_caller]
    pub fn insert(&self, k: u64, v: u64) -> Option<u64> {
        let mut out = 0u64;
        // SAFETY: the host writes at most a `u64` at `out`.
        let present = unsafe {
            sys::table_insert(
                self.0 as i64,
                k as i64,
                v as i64,
                sys::addr_mut(&mut out),
                sys::site(),
            )
        };
        (present != 0).then_some(out)
    }

    /// The value of `k`, if present.
    #[inline]
    #[track_caller]
    pub fn get(&self, k: u64) -> Option<u64> {
        let mut out = 0u64;
        // SAFETY: the host writes at most a `u64` at `out`.
        let present = unsafe {
            sys::table_get(
                self.0 as i64,
                k as i64,
                sys::addr_mut(&mut out),
                sys::site(),
            )
        };
        (present != 0).then_some(out)
    }

    /// Removes `k`, returning its value if it was present.
    #[inline]
    #[track_caller]
    pub fn remove(&self, k: u64) -> Option<u64> {
        let mut out = 0u64;
        // SAFETY: the host writes at most a `u64` at `out`.
        let present = unsafe {
            sys::table_remove(
                self.0 as i64,
                k as i64,
                sys::addr_mut(&mut out),
                sys::site(),
            )
        };
        (present != 0).then_some(out)
    }
}
