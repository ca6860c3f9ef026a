//! Typed errors of the host library. Every message is one line, lowercase,
//! with values in backticks, and says what to do where there is something to
//! do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read `{path}`: {cause}")]
    Io {
        path: PathBuf,
        // Not named `source`: the cause is already in the message, and a
        // `source` would make error chains print it twice.
        cause: std::io::Error,
    },
    #[error("`{name}` is not valid wasm: {message} (at byte offset {offset})")]
    Invalid {
        name: String,
        message: String,
        offset: usize,
    },
    #[error("`{name}` imports {imports} from outside the `wasmrace` hook namespace; hooks are a guest's only door to the outside world: build for `wasm32-unknown-unknown` (not WASI), use the wasmrace guest SDK instead of I/O, and drop bindings such as wasm-bindgen")]
    ForbiddenImports { name: String, imports: String },
    #[error("`{name}` imports unknown hook(s) {hooks}; this host provides {provided} (is the guest SDK newer than this wasmrace?)")]
    UnknownHook {
        name: String,
        hooks: String,
        provided: String,
    },
    #[error("`{name}` does not export its memory as `memory`")]
    NoMemory { name: String },
    #[error("`{name}` has no tests: export functions `wasmrace_test_<name>` with no parameters and no results (the SDK's `#[wasmrace::test]` does this)")]
    NoTests { name: String },
    #[error("`{name}` spawns threads but does not export `__wasmrace_thread_start`; build it with the wasmrace guest SDK")]
    NoThreadStart { name: String },
    #[error("no test `{test}` in `{name}`; its tests are: {available}")]
    UnknownTest {
        name: String,
        test: String,
        available: String,
    },
    #[error("`wasm-opt` (Binaryen) is needed to instrument guests and was not found (looked for `{tried}`); install it with `apt-get install binaryen` or `brew install binaryen`, or point `WASMRACE_WASM_OPT` at it")]
    WasmOptMissing { tried: String },
    #[error("`wasm-opt` failed to instrument `{name}` with Asyncify: {message}")]
    WasmOpt { name: String, message: String },
    #[error("instrumenting `{name}` failed: {message}")]
    Instrument { name: String, message: String },
    #[error("compiling `{name}` failed: {message}")]
    Compile { name: String, message: String },
    #[error("the runtime failed: {message}")]
    Runtime { message: String },
    #[error("schedule was recorded on a module with blake3 `{expected}`, but `{name}` has blake3 `{found}`; rebuild the schedule with `wasmrace check` on this module")]
    ScheduleModule {
        name: String,
        expected: String,
        found: String,
    },
    #[error(transparent)]
    Schedule(#[from] wasmrace_trace::ScheduleError),
    #[error("decision for thread `{thread}` (alternative {alt}) at step {step} is not enabled")]
    InvalidDecision { thread: String, alt: u32, step: u64 },
}

/// Folds a multi-line message (a tool's stderr, an error chain) onto one line.
pub(crate) fn one_line(s: &str) -> String {
    let parts: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut out = parts.join("; ");
    if out.len() > 600 {
        let mut cut = 600;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str(" ...");
    }
    out
}

pub(crate) fn runtime(e: impl std::fmt::Display) -> HostError {
    HostError::Runtime {
        message: one_line(&format!("{e:#}")),
    }
}
