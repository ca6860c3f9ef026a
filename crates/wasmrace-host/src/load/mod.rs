//! Loading a guest, in the order a module goes through it: validation and
//! the import audit with test discovery (`audit`), the walrus passes before
//! Asyncify (`instrument`), Binaryen's Asyncify (`asyncify`), the walrus
//! passes after it (`trampolines`), and the on-disk cache of instrumented
//! and compiled modules (`cache`). This file holds the names the host and
//! the guest agree on (docs/ABI.md): the hook module, the hooks, and the
//! exports instrumentation adds.

mod asyncify;
mod audit;
mod cache;
mod instrument;
mod trampolines;

pub use asyncify::{asyncify, find_wasm_opt};
pub use audit::{analyze, Analysis};
pub(crate) use cache::compiled_module;
pub use cache::{cache_key, cache_write};
pub use instrument::export_globals;
pub use trampolines::export_asyncify_globals;

// The hook names and the record's size are the operation table's (`ops.rs`).
pub use crate::ops::{HOOK_MODULE, OP_ARGS, PLAIN_HOOKS, SUSPENDING_HOOKS};

pub const TEST_PREFIX: &str = "wasmrace_test_";
pub const THREAD_START: &str = "__wasmrace_thread_start";
pub const INIT: &str = "__wasmrace_init";
pub const STACK_POINTER_EXPORT: &str = "__wasmrace_stack_pointer";
pub const GLOBAL_EXPORT_PREFIX: &str = "__wasmrace_global_";
pub const ASYNCIFY_STATE_EXPORT: &str = "__wasmrace_asyncify_state";
pub const STACK_LOW_EXPORT: &str = "__wasmrace_stack_low";
pub const STACK_REGION_EXPORT: &str = "__wasmrace_stack_region";
pub const ASYNCIFY_DATA_EXPORT: &str = "__wasmrace_asyncify_data";
/// The guest's view of its memory size in wasm pages (`virtualize_memory_size`).
pub const MEMORY_PAGES_EXPORT: &str = "__wasmrace_memory_pages";
/// Prefix of the trampolines `add_trampolines` adds: `__wasmrace_enter_`
/// followed by the name of the entry export it calls.
pub const ENTER_PREFIX: &str = "__wasmrace_enter_";
