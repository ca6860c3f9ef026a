//! The exports the host calls (docs/ABI.md, "Exports"): thread entry, the
//! per-instance initialiser that routes panics to the host, and the pure
//! accessors that turn a `site` back into file, line and column.
//!
//! `#[no_mangle]` items are exported from the user's cdylib even though this
//! module is private: they are part of the module's ABI, not of the Rust API.

use crate::sys;
use core::panic::Location;
use core::sync::atomic::{AtomicBool, Ordering};

/// Entry of every spawned thread. `arg` is the pointer `thread::spawn` leaked
/// with `Box::into_raw`; the host passes it back exactly once, on the thread's
/// own stack, and the thread exits when this returns.
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_thread_start(arg: i32) {
    // SAFETY: `arg` comes from `Box::into_raw` in `thread::spawn` and the host
    // starts each spawned thread once, so ownership is taken back once.
    unsafe { crate::thread::start(arg as usize as *mut u8) }
}

/// Called by the host once per execution before the test. Installs the panic
/// hook once per instance: the host may call this again on an instance whose
/// memory already has the hook (after a restore), and `set_hook` allocates.
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_init() {
    // Single-threaded wasm: the atomic is just a flag that lives in linear
    // memory, so it is saved and restored with the rest of the guest state.
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::Relaxed) {
        return;
    }
    std::panic::set_hook(Box::new(report_panic));
}

/// Hands the panic to the host before the runtime aborts (a trap), so the
/// host can report a panic with its message and location instead of a bare
/// `unreachable` trap.
fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    // `&str` and `String` payloads cover `panic!` with and without arguments,
    // `assert!` and `unwrap`; anything else is an opaque `panic_any` value.
    let payload = info.payload();
    let msg = match payload.downcast_ref::<&'static str>() {
        Some(s) => s,
        None => match payload.downcast_ref::<String>() {
            Some(s) => s.as_str(),
            None => "Box<dyn Any>",
        },
    };
    let (file, line, col) = match info.location() {
        Some(l) => (l.file(), l.line(), l.column()),
        None => ("", 0, 0),
    };
    // SAFETY: the host copies the two strings during the call.
    unsafe {
        sys::report_panic(
            sys::addr(msg.as_ptr()),
            msg.len() as i32,
            sys::addr(file.as_ptr()),
            file.len() as i32,
            line as i32,
            col as i32,
        )
    }
}

/// The `Location` behind a site, or `None` for the "unknown" site 0.
fn location(site: i32) -> Option<&'static Location<'static>> {
    if site == 0 {
        return None;
    }
    // SAFETY: non-zero sites are only ever produced by `sys::site`, as the
    // address of a `'static` `Location` of this module.
    Some(unsafe { &*(site as usize as *const Location<'static>) })
}

/// Address of the UTF-8 file name of `site` (0 for site 0).
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_site_file_ptr(site: i32) -> i32 {
    location(site).map_or(0, |l| sys::addr(l.file().as_ptr()))
}

/// Length in bytes of the file name of `site` (0 for site 0).
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_site_file_len(site: i32) -> i32 {
    location(site).map_or(0, |l| l.file().len() as i32)
}

/// Line of `site`, 1-based (0 for site 0).
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_site_line(site: i32) -> i32 {
    location(site).map_or(0, |l| l.line() as i32)
}

/// Column of `site`, 1-based (0 for site 0).
#[doc(hidden)]
#[unsafe(no_mangle)]
pub extern "C" fn __wasmrace_site_col(site: i32) -> i32 {
    location(site).map_or(0, |l| l.column() as i32)
}
