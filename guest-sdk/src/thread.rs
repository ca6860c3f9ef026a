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
    // Boxed twice so that a thin pointer fits the ABI's `i32` argument;
    // `__wasmrace_thread_start` takes ownership back on the new thread.
    let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(f));
    let arg = sys::addr(Box::into_raw(boxed));
    // SAFETY: the host hands `arg` to `__wasmrace_thread_start` exactly once.
    let id = unsafe { sys::spawn(arg, sys::site()) };
    JoinHandle {
        id: ThreadId::from_raw(id),
    }
}

/// The id of the calling thread. Not a scheduling point.
pub fn current() -> ThreadId {
    // SAFETY: plain value hook.
    ThreadId::from_raw(unsafe { sys::current() })
}

/// Lets the host switch to another thread. A scheduling point with no other
/// effect; a switch after it does not count as a preemption, so put one in
/// loops that wait for other threads.
#[track_caller]
pub fn yield_now() {
    // SAFETY: plain value hook.
    unsafe { sys::yield_now(sys::site()) }
}
