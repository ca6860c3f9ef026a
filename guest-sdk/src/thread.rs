//! Threads scheduled by the wasmrace host (use these, not `std::thread`,
//! which `wasm32-unknown-unknown` does not have). All threads share the
//! module's linear memory; the host gives each its own stack and runs exactly
//! one at a time, switching only at scheduling points.

use crate::{sys, ThreadId};

/// Owned permission to join a spawned thread. Dropping it detaches the
/// thread, which keeps running.
#[derive(Debug)]
pub struct JoinHandle {
    id: ThreadId,
}

impl JoinHandle {
    /// The spawned thread's id.
    pub fn id(&self) -> ThreadId {
        self.id
    }

    /// Blocks until the thread has exited. A scheduling point.
    ///
    /// There is no result: a panic in any thread fails the whole execution,
    /// so a joined thread always finished normally.
    #[inline]
    #[track_caller]
    pub fn join(self) {
        // SAFETY: plain value hook.
        unsafe { sys::join(self.id.raw(), sys::site()) }
    }
}

/// Spawns a thread running `f`. A scheduling point: the new thread exists
/// once the spawn has been scheduled, and is first run whenever the host
/// decides. Its id is its spawn path, e.g. `main.2` for main's second child.
#[track_caller]
pub fn spawn<F: FnOnce() + Send + 'static>(f: F) -> JoinHandle {
    // One allocation holding a monomorphic entry and the closure, behind a
    // thin pointer that fits the ABI's `i32` argument;
    // `__wasmrace_thread_start` takes ownership back on the new thread.
    let boxed = Box::new(Start { run: run::<F>, f });
    let arg = sys::addr(Box::into_raw(boxed));
    // SAFETY: the host hands `arg` to `__wasmrace_thread_start` exactly once.
    let id = unsafe { sys::spawn(arg, sys::site()) };
    JoinHandle {
        id: ThreadId::from_raw(id),
    }
}

/// What `spawn` hands the new thread. `run` comes first (`repr(C)`), so
/// `__wasmrace_thread_start` can read it without knowing `F`.
///
/// Why not `Box<dyn FnOnce()>`: calling through it adds the box's
/// `call_once` and the vtable shim as two frames under the closure, and
/// every frame on a thread's stack is unwound and rewound by Asyncify at
/// each of its steps. `run::<F>` calls the closure directly, which usually
/// inlines it.
#[repr(C)]
pub(crate) struct Start<F> {
    run: unsafe fn(*mut u8),
    f: F,
}

/// Entry of a thread spawned with a closure of type `F`.
///
/// # Safety
/// `p` must come from `Box::into_raw` of a `Start<F>` and is consumed.
unsafe fn run<F: FnOnce() + Send + 'static>(p: *mut u8) {
    // SAFETY: per the contract, `p` owns a `Start<F>`.
    let start = unsafe { Box::from_raw(p as *mut Start<F>) };
    // Free the box before running the thread: nothing of it stays live on
    // the thread's stack.
    let Start { f, .. } = *start;
    f();
}

/// Starts the thread whose `Start` is at `p` (see `rt`).
///
/// # Safety
/// `p` must come from `spawn` and be started once.
#[inline(always)]
pub(crate) unsafe fn start(p: *mut u8) {
    // SAFETY: every `Start<F>` begins with its `run` (`repr(C)`).
    let run = unsafe { *(p as *const unsafe fn(*mut u8)) };
    // SAFETY: `run` is the `run::<F>` that matches the closure behind `p`.
    unsafe { run(p) }
}

/// The id of the calling thread. Not a scheduling point.
pub fn current() -> ThreadId {
    // SAFETY: plain value hook.
    ThreadId::from_raw(unsafe { sys::current() })
}

/// Lets the host switch to another thread. A scheduling point with no other
/// effect; a switch after it does not count as a preemption, so put one in
/// loops that wait for other threads.
#[inline]
#[track_caller]
pub fn yield_now() {
    // SAFETY: plain value hook.
    unsafe { sys::yield_now(sys::site()) }
}
