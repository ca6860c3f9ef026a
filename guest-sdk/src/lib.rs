//! `wasmrace`, the guest SDK: write concurrent tests in Rust, compile them to
//! WebAssembly, and let the wasmrace host explore their interleavings.
//!
//! A test is a function marked `#[wasmrace::test]`. Build the crate as a
//! `cdylib` with plain `cargo build --target wasm32-unknown-unknown --release`
//! and hand the `.wasm` file to `wasmrace`. The host runs the test one
//! scheduling point at a time and systematically tries the orders in which the
//! threads' operations can happen, reporting panics, deadlocks and runaway
//! loops together with a schedule that replays them.
//!
//! ```rust,ignore
//! // Cargo.toml: [lib] crate-type = ["cdylib"], wasmrace = { path = ".." }
//! use wasmrace::shared::Cell;
//! use wasmrace::thread;
//!
//! /// Two threads increment a shared counter without a lock: on some
//! /// interleaving both read 0 and one increment is lost.
//! #[wasmrace::test]
//! fn lost_update() {
//!     let x = Cell::new(0);
//!     let workers: Vec<_> = (0..2)
//!         .map(|_| thread::spawn(move || x.set(x.get() + 1)))
//!         .collect();
//!     for w in workers {
//!         w.join();
//!     }
//!     let total = x.get();
//!     wasmrace::log(&format!("total = {total}"));
//!     assert_eq!(total, 2, "an increment was lost");
//! }
//! ```
//!
//! # What is a scheduling point
//!
//! Only operations of this crate are scheduling points: spawning and joining
//! ([`thread`]), sending and receiving messages ([`mailbox`]), every operation
//! on an object of [`shared`], the [`registry`], [`choose`] and [`phase`]. The host
//! interleaves threads at exactly these points and nowhere else.
//!
//! Consequently:
//!
//! - Threads are [`thread::spawn`]ed with this crate. `std::thread::spawn` is
//!   not available on `wasm32-unknown-unknown`.
//! - State shared between threads must live in [`shared`] objects ([`Cell`],
//!   [`Atomic`], [`Mutex`], [`RwLock`], [`Condvar`], [`Barrier`], [`Table`])
//!   or travel in messages.
//!   Plain memory shared through an `Arc`, a `static` or a raw pointer still
//!   works (all threads run in one linear memory), but accessing it is not a
//!   scheduling point, so races on it are never explored.
//! - A loop that waits for another thread must contain a scheduling point
//!   (for instance [`thread::yield_now`]), or the host stops it as runaway.
//!
//! Handles of shared objects are plain `Copy + Send + Sync` ids of objects
//! held by the host: copy them into closures freely. [`ThreadId`]s and handles
//! are stable across interleavings, so schedules and traces keep their meaning
//! from one execution to the next.
//!
//! Panics are reported to the host with their message and location (see
//! `__wasmrace_init`); the guest then traps, as `wasm32-unknown-unknown`
//! always aborts on panic.
//!
//! [`Cell`]: shared::Cell
//! [`Atomic`]: shared::Atomic
//! [`Mutex`]: shared::Mutex
//! [`RwLock`]: shared::RwLock
//! [`Barrier`]: shared::Barrier
//! [`Condvar`]: shared::Condvar
//! [`Table`]: shared::Table
#![deny(missing_docs)]

// The crate is nothing but calls into the wasmrace host, which only exists
// for wasm guests: say so instead of failing with unresolved imports at link
// time. `doc` stays allowed so the API can be documented from any host.
#[cfg(all(not(target_arch = "wasm32"), not(doc)))]
compile_error!(
    "the wasmrace guest SDK only builds for WebAssembly: \
     use `cargo build --target wasm32-unknown-unknown`"
);

pub mod mailbox;
pub mod registry;
mod rt;
pub mod shared;
mod sys;
pub mod thread;

/// Marks `fn name() { .. }` as a wasmrace test: exports it from the module
/// as `wasmrace_test_name`, which the host runs on the main thread.
pub use wasmrace_macros::test;

use core::fmt;

/// A thread's identity, stable across interleavings: the host derives it
/// from the thread's spawn path (`main`, `main.1`, `main.1.2`, spawn indices
/// counting from 1 per parent), so the same logical thread has the same id in
/// every execution of a test. It displays as that path.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadId(u64);

impl ThreadId {
    /// The id as the host knows it, e.g. to put it in a message.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The inverse of [`ThreadId::as_u64`]; `None` for 0, which the host
    /// never hands out. The id is not checked against live threads.
    pub const fn from_u64(raw: u64) -> Option<ThreadId> {
        if raw == 0 {
            None
        } else {
            Some(ThreadId(raw))
        }
    }

    /// Wraps an id returned by a hook (which are never 0).
    pub(crate) const fn from_raw(raw: i64) -> ThreadId {
        ThreadId(raw as u64)
    }

    pub(crate) const fn raw(self) -> i64 {
        self.0 as i64
    }

    /// The display name, e.g. `"main.1"`: the same string as `to_string()`.
    pub fn name(self) -> String {
        let mut buf = [0u8; NAME_BUF];
        match self.name_into(&mut buf) {
            Ok(name) => name.to_owned(),
            // Names are stable, so the second call fits.
            Err(len) => self.name_into(&mut vec![0u8; len]).unwrap_or("").to_owned(),
        }
    }

    /// Asks the host for the name into `buf`: the name if it fits, otherwise
    /// its full length so the caller can retry with a big enough buffer.
    fn name_into(self, buf: &mut [u8]) -> Result<&str, usize> {
        // SAFETY: the host writes at most `buf.len()` bytes at `buf`.
        let len = unsafe {
            sys::thread_name(
                self.raw(),
                sys::addr_mut(buf.as_mut_ptr()),
                buf.len() as i32,
            )
        };
        let len = usize::try_from(len).unwrap_or(0);
        if len > buf.len() {
            return Err(len);
        }
        // The host writes ASCII paths; a broken name shows as empty rather
        // than panicking inside a formatter.
        Ok(core::str::from_utf8(&buf[..len]).unwrap_or(""))
    }
}

/// Long enough for a spawn path 12 levels deep without touching the heap:
/// Display is used in panic messages, where allocating is best avoided.
const NAME_BUF: usize = 64;

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; NAME_BUF];
        match self.name_into(&mut buf) {
            Ok(name) => f.pad(name),
            Err(_) => f.pad(&self.name()),
        }
    }
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadId({self})")
    }
}

/// A nondeterministic value in `0..n`, explored like a scheduling decision:
/// the host tries every value (systematic strategies) or samples one. It is a
/// scheduling point. Panics if `n` is 0 or exceeds `i32::MAX`.
#[inline]
#[track_caller]
pub fn choose(n: u32) -> u32 {
    assert!(
        n >= 1 && n <= i32::MAX as u32,
        "wasmrace::choose({n}): n must be in 1..=i32::MAX"
    );
    // SAFETY: plain value hook.
    let v = unsafe { sys::choose(n as i32, sys::site()) };
    v as u32
}

/// Announces that the program reached the phase `name`, e.g.
/// `wasmrace::phase("init-done")` once a protocol's nodes have set up their
/// topology. It changes nothing in the program; it is a scheduling point
/// whose step carries the name, so that an explorer can change its
/// priorities at that moment (the FSE'15 delaying-explorer paper's custom
/// chain-replication explorer lets the fault injector and the master go
/// first only after initialization). Traces show it as `phase "init-done"`.
#[inline]
#[track_caller]
pub fn phase(name: &str) {
    // SAFETY: the host reads `name.len()` bytes at `name`.
    unsafe { sys::phase(sys::addr(name.as_ptr()), name.len() as i32, sys::site()) }
}

/// Appends a line to the trace of the current step. Not a scheduling point.
pub fn log(msg: &str) {
    // SAFETY: the host reads `msg.len()` bytes at `msg`.
    unsafe { sys::log(sys::addr(msg.as_ptr()), msg.len() as i32) }
}
