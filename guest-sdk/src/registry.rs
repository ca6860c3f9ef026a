//! A name → thread registry with Erlang's `register/2` semantics: a name
//! names one live thread, a thread has at most one name, and a thread's name
//! is removed when it exits. All three functions are scheduling points.

use crate::{sys, ThreadId};
use core::fmt;

/// Why [`register`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterError {
    /// Another thread is registered under the name.
    NameTaken,
    /// The thread has already exited (Erlang's `badarg` in the
    /// spawn-then-register race).
    NotAlive,
    /// The thread is already registered under another name.
    AlreadyRegistered,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegisterError::NameTaken => "the name is already registered",
            RegisterError::NotAlive => "the thread is not alive",
            RegisterError::AlreadyRegistered => "the thread already has a registered name",
        })
    }
}

impl std::error::Error for RegisterError {}

/// Registers `id` under `name`.
#[track_caller]
pub fn register(name: &str, id: ThreadId) -> Result<(), RegisterError> {
    // SAFETY: the host reads `name.len()` bytes at `name` during the call.
    let code = unsafe {
        sys::register(
            sys::addr(name.as_ptr()),
            name.len() as i32,
            id.raw(),
            sys::site(),
        )
    };
    match code {
        0 => Ok(()),
        1 => Err(RegisterError::NameTaken),
        2 => Err(RegisterError::NotAlive),
        3 => Err(RegisterError::AlreadyRegistered),
        other => panic!("wasmrace host returned unknown register result {other}"),
    }
}

/// The thread registered under `name`, if any.
#[track_caller]
pub fn whereis(name: &str) -> Option<ThreadId> {
    let mut out = 0u64;
    // SAFETY: the host reads `name` and writes at most a `u64` at `out`.
    let found = unsafe {
        sys::whereis(
            sys::addr(name.as_ptr()),
            name.len() as i32,
            sys::addr_mut(&mut out),
            sys::site(),
        )
    };
    (found != 0).then(|| ThreadId::from_raw(out as i64))
}

/// Removes `name`; `true` if it was registered.
#[track_caller]
pub fn unregister(name: &str) -> bool {
    // SAFETY: the host reads `name.len()` bytes at `name` during the call.
    unsafe { sys::unregister(sys::addr(name.as_ptr()), name.len() as i32, sys::site()) != 0 }
}
