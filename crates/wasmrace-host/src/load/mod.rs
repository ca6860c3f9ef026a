//! Loading a guest, in the order a module goes through it: validation and
//! the import audit with test discovery (`audit`), the walrus passes before
//! Asyncify (`instrument`), Binaryen's Asyncify (`asyncify`), the walrus
//! passes after it (`trampolines`), the room a fresh instance gets beyond
//! the guest's memory (`headroom`), and the on-disk cache of instrumented
//! and compiled modules (`cache`). This file holds the names the host and
//! the guest agree on (docs/ABI.md): the hook module, the hooks, and the
//! exports instrumentation adds.

mod asyncify;
mod atomics;
mod audit;
mod cache;
mod dirty;
mod dwarf;
mod headroom;
mod instrument;
mod races;
mod support;
mod trampolines;
mod walk;
mod wasi;

pub use audit::{analyze, Analysis};
pub use races::{RaceSites, RACE_HOOKS};
pub use support::Declared;
pub(crate) use wasi::rewrite as rewrite_std;
pub use wasi::{is_std, StdInfo, MAIN_TEST, TLS_BASE_EXPORT, WASI_PLAIN};
// The passes and the cache are the host's own business: `Guest::load` runs
// them in order.
pub(crate) use asyncify::{asyncify, check_asyncified, find_wasm_opt};
pub(crate) use cache::{compile_error, compiled_module};
pub(crate) use dirty::track_dirty_pages;
pub(crate) use instrument::export_globals;
pub(crate) use races::instrument_sdk as instrument_races;
pub(crate) use support::{check_declared, check_generated, pool_message};
pub(crate) use trampolines::export_asyncify_globals;

// The hook names and the record's size are the operation table's (`ops.rs`).
pub use crate::ops::{HOOK_MODULE, ONWARD_HOOK, OP_ARGS, PLAIN_HOOKS, SUSPENDING_HOOKS};

/// Prefix of the exports that are tests: `wasmrace_test_lost_update` is
/// the test `lost_update`.
pub const TEST_PREFIX: &str = "wasmrace_test_";
/// The guest's entry point of spawned threads (the SDK exports it).
pub const THREAD_START: &str = "__wasmrace_thread_start";
/// Exports of the guest SDK (and of a std guest's rewrite, `load/wasi.rs`)
/// that share the `__wasmrace_` prefix of the names instrumentation adds: a
/// module may export these (and only these).
pub const SDK_EXPORT_PREFIXES: &[&str] = &[THREAD_START, INIT, "__wasmrace_site_", TLS_BASE_EXPORT];
/// The guest's optional initializer, run once per execution before the
/// test (the SDK's installs the panic hook).
pub const INIT: &str = "__wasmrace_init";
/// The shadow-stack pointer global, exported by instrumentation.
pub const STACK_POINTER_EXPORT: &str = "__wasmrace_stack_pointer";
/// Prefix of the guest's mutable globals, exported by instrumentation
/// (followed by a 0-based index) so that snapshots hold them.
pub const GLOBAL_EXPORT_PREFIX: &str = "__wasmrace_global_";
/// Asyncify's state global (normal, unwinding, rewinding), exported.
pub const ASYNCIFY_STATE_EXPORT: &str = "__wasmrace_asyncify_state";
/// The stack pointer's low-water mark, exported: stack pages below it
/// were never written, so snapshots skip them.
pub const STACK_LOW_EXPORT: &str = "__wasmrace_stack_low";
/// The bottom of the main stack's region, exported (0 when the stack lies
/// below every data segment, else the initial stack pointer: no region).
pub const STACK_REGION_EXPORT: &str = "__wasmrace_stack_region";
/// The global holding the address of the running thread's Asyncify
/// buffer, exported by instrumentation.
pub const ASYNCIFY_DATA_EXPORT: &str = "__wasmrace_asyncify_data";
/// The guest's view of its memory size in wasm pages (`virtualize_memory_size`).
pub const MEMORY_PAGES_EXPORT: &str = "__wasmrace_memory_pages";
/// Log2 of the bytes of memory a byte of the dirty-page map stands for
/// (1 KiB blocks, `snapshot::BLOCK`).
pub const DIRTY_SHIFT: u32 = 10;
/// The address of the dirty-page map (a byte per 1 KiB block of memory,
/// set by instrumented writes; `load::track_dirty_pages`), a global the
/// host sets once it has placed the map.
pub const DIRTY_BASE_EXPORT: &str = "__wasmrace_dirty_base";
/// The function marking the pages of a span `(from, len)` in the
/// dirty-page map; the trampolines call it for Asyncify's buffer.
pub const DIRTY_SPAN_EXPORT: &str = "__wasmrace_dirty_span";
/// Prefix of the trampolines `add_trampolines` adds: `__wasmrace_enter_`
/// followed by the name of the entry export it calls.
pub const ENTER_PREFIX: &str = "__wasmrace_enter_";

/// Reads a module file: a regular file of at most `max_bytes` bytes, by
/// the rule every input follows (`wasmrace_trace::files::read_capped`:
/// checked before opening, since opening a pipe with no writer would
/// block, and while reading, since the file may grow), so neither a FIFO
/// nor `/dev/zero` nor a huge file can hang or exhaust the host.
pub fn read_module(
    path: &std::path::Path,
    max_bytes: u64,
) -> Result<Vec<u8>, crate::error::HostError> {
    use crate::error::HostError;
    use wasmrace_trace::files::{read_capped, ReadError};
    read_capped(path, max_bytes).map_err(|e| match e {
        ReadError::Io(cause) => HostError::Io {
            path: path.to_path_buf(),
            cause,
        },
        ReadError::NotRegular { .. } => HostError::NotAFile {
            path: path.to_path_buf(),
        },
        ReadError::TooLarge { .. } => HostError::TooLarge {
            path: path.to_path_buf(),
            limit_mb: max_bytes >> 20,
        },
    })
}
