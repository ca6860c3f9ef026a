//! Hints on failures whose cause the host recognises: std's thread-less
//! primitives on wasm32-unknown-unknown. There std has no threads, so its
//! `Mutex`, `RwLock`, `Condvar` and `Once` are flags that panic (or abort)
//! where they would block, and `std::thread::spawn` returns an error.
//! Under wasmrace every guest thread shares that one wasm thread, so a std
//! lock held across a scheduling point fails in the next thread that takes
//! it: a newcomer's first test fails inside std. The hint names the SDK's
//! replacement. Recognised by std's own panic messages and source files
//! (`library/std/src/sys/sync/<kind>/no_threads.rs`), or for the aborts
//! that bypass the panic hook, by the trap's backtrace.

/// One std primitive: how its failures look and what to use instead.
struct Primitive {
    /// The directory of its thread-less implementation in std's sources
    /// (`sys/sync/<dir>/no_threads.rs`), also a part of its functions'
    /// names.
    dir: &'static str,
    /// Its panic and abort messages.
    messages: &'static [&'static str],
    hint: &'static str,
}

const PRIMITIVES: &[Primitive] = &[
    Primitive {
        dir: "mutex",
        messages: &["cannot recursively acquire mutex"],
        hint: "std's `Mutex` cannot block on wasm32-unknown-unknown (no threads): it panics when another wasmrace thread holds it; use `wasmrace::shared::Mutex`",
    },
    Primitive {
        dir: "rwlock",
        messages: &["rwlock locked for reading", "rwlock locked for writing"],
        hint: "std's `RwLock` cannot block on wasm32-unknown-unknown (no threads): it aborts when another wasmrace thread holds it; use `wasmrace::shared::RwLock`",
    },
    Primitive {
        dir: "condvar",
        messages: &["condvar wait not supported"],
        hint: "std's `Condvar` cannot wait on wasm32-unknown-unknown (no threads); use `wasmrace::shared::Condvar` with `wasmrace::shared::Mutex`",
    },
    Primitive {
        dir: "once",
        messages: &["one-time initialization may not be performed recursively"],
        hint: "std's `Once` (also inside `OnceLock` and `LazyLock`) cannot wait on wasm32-unknown-unknown (no threads): it panics when another wasmrace thread is running the initialization; initialize before spawning, or under a `wasmrace::shared::Mutex`",
    },
];

const SPAWN_MESSAGE: &str = "failed to spawn thread";
const SPAWN_HINT: &str = "`std::thread::spawn` is not supported on wasm32-unknown-unknown (no threads); use `wasmrace::thread::spawn`";

/// The hint for a guest panic with `message` at `location` (`file:line:col`).
pub(crate) fn panic_hint(message: &str, location: &str) -> Option<Box<str>> {
    if message.starts_with(SPAWN_MESSAGE) {
        return Some(SPAWN_HINT.into());
    }
    let file = location.replace('\\', "/");
    PRIMITIVES
        .iter()
        .find(|p| {
            p.messages.iter().any(|m| message.contains(m))
                || file.contains(&format!("/sys/sync/{}/no_threads.rs", p.dir))
        })
        .map(|p| p.hint.into())
}

const ABORT_HINT: &str = "the guest aborted without a panic; std does so on wasm32-unknown-unknown (no threads) when a `RwLock` is taken while another wasmrace thread holds it: use `wasmrace::shared::RwLock`";

/// The hint for a trap with no panic: std's thread-less primitives abort
/// (`rtabort!`, a bare `unreachable`) in places. When std's function was
/// not inlined, the trap's backtrace names it
/// (`std::sys::sync::rwlock::no_threads::...`, or its mangled form, where
/// `::` is a length prefix); else an `aborted` guest (an `unreachable`
/// trap where a panic would have been reported) gets the usual cause.
pub(crate) fn trap_hint(e: &wasmtime::Error, aborted: bool) -> Option<Box<str>> {
    let named = e.downcast_ref::<wasmtime::WasmBacktrace>().and_then(|bt| {
        bt.frames()
            .iter()
            .filter_map(|f| f.func_name())
            .find_map(|name| {
                if !(name.contains("no_threads") && name.contains("sync")) {
                    return None;
                }
                PRIMITIVES
                    .iter()
                    .find(|p| name.contains(p.dir))
                    .map(|p| p.hint.into())
            })
    });
    named.or_else(|| aborted.then(|| ABORT_HINT.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_panics_get_the_sdks_replacement() {
        let std_file = "/rustc/5980/library/std/src/sys/sync/mutex/no_threads.rs:19:9";
        let m = panic_hint(
            "assertion `left == right` failed: cannot recursively acquire mutex\n  left: true",
            std_file,
        )
        .unwrap();
        assert!(m.contains("`wasmrace::shared::Mutex`"), "{m}");
        // By file alone (a std whose message changed).
        assert!(panic_hint("something new", std_file)
            .unwrap()
            .contains("Mutex"));
        let c = panic_hint("condvar wait not supported", "x").unwrap();
        assert!(c.contains("`wasmrace::shared::Condvar`"), "{c}");
        // `Once`'s panic points at the caller (`#[track_caller]`).
        let o = panic_hint(
            "one-time initialization may not be performed recursively",
            "src/lib.rs:3:5",
        )
        .unwrap();
        assert!(o.contains("`Once`"), "{o}");
        let s = panic_hint(
            "failed to spawn thread: Error { kind: Unsupported, message: \"operation not supported on this platform\" }",
            "/rustc/5980/library/std/src/thread/functions.rs:131:29",
        )
        .unwrap();
        assert!(s.contains("`wasmrace::thread::spawn`"), "{s}");
        assert_eq!(panic_hint("boom", "src/lib.rs:1:1"), None::<Box<str>>);
        assert_eq!(panic_hint("mutex poisoned", "src/sync/mutex.rs:1:1"), None);
    }
}
