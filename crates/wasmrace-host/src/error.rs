//! Typed errors of the host library. Every message is one line, lowercase,
//! with values in backticks, and says what to do where there is something to
//! do.

use std::path::PathBuf;

/// Why the host could not load, instrument or run a guest, or replay a
/// schedule. Never a bug in the guest: those are `Failure`s. `name` is the
/// module's name as given to [`Guest::load`](crate::Guest::load) (its path,
/// usually).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file could not be read or written.
    #[error("cannot read `{path}`: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        // Not named `source`: the cause is already in the message, and a
        // `source` would make error chains print it twice.
        cause: std::io::Error,
    },
    /// The module is not valid wasm.
    #[error("`{name}` is not valid wasm: {message} (at byte offset {offset})")]
    Invalid {
        /// The module's name.
        name: String,
        /// The validator's message.
        message: String,
        /// Byte offset of the problem in the module.
        offset: usize,
    },
    /// The module imports from outside the `wasmrace` hook module.
    #[error("`{name}` imports {imports} from outside the `wasmrace` hook namespace; hooks are a guest's only door to the outside world: build for `wasm32-unknown-unknown` (not WASI), use the wasmrace guest SDK instead of I/O, and drop bindings such as wasm-bindgen")]
    ForbiddenImports {
        /// The module's name.
        name: String,
        /// The offending imports (module and name), comma-separated.
        imports: String,
    },
    /// The module imports hooks this host does not provide.
    #[error("`{name}` imports unknown hook(s) {hooks}; this host provides {provided} (is the guest SDK newer than this wasmrace?)")]
    UnknownHook {
        /// The module's name.
        name: String,
        /// The unknown hooks, comma-separated.
        hooks: String,
        /// Every hook this host provides.
        provided: String,
    },
    /// The file does not start with wasm's magic number.
    #[error("`{name}` is not a WebAssembly module: it does not start with wasm's magic number `\\0asm` (build the test crate with `--target wasm32-unknown-unknown` and give the `.wasm` file)")]
    NotWasm {
        /// The module's name.
        name: String,
    },
    /// The module's path names a directory, a device or a pipe.
    #[error("`{path}` is not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The module file is larger than `--max-module-mb`.
    #[error(
        "`{path}` is larger than the module size limit of `{limit_mb}` MiB; raise --max-module-mb"
    )]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The limit, in MiB.
        limit_mb: u64,
    },
    /// The module does not export its memory.
    #[error("`{name}` does not export its memory as `memory`")]
    NoMemory {
        /// The module's name.
        name: String,
    },
    /// The module exports no test.
    #[error("`{name}` has no tests: export functions `wasmrace_test_<name>` with no parameters and no results (the SDK's `#[wasmrace::test]` does this)")]
    NoTests {
        /// The module's name.
        name: String,
    },
    /// The module imports the `spawn` hook but has no thread entry point.
    #[error("`{name}` imports the `spawn` hook but does not export `__wasmrace_thread_start`, where spawned threads start; build it with the wasmrace guest SDK")]
    NoThreadStart {
        /// The module's name.
        name: String,
    },
    /// The module's thread entry point has the wrong type.
    #[error("`{name}` exports `__wasmrace_thread_start` with type `{found}`, but spawned threads start in a `(func (param i32))`; build it with the wasmrace guest SDK")]
    ThreadStartType {
        /// The module's name.
        name: String,
        /// The export's type, in the text format.
        found: String,
    },
    /// The module imports a hook with another signature than the host's.
    #[error("`{name}` imports hook `wasmrace::{hook}` with type `{found}`, but this host's `{hook}` has type `{expected}` (is the guest SDK from another wasmrace version?)")]
    HookSignature {
        /// The module's name.
        name: String,
        /// The hook.
        hook: String,
        /// The import's type, in the text format.
        found: String,
        /// The host's type of the hook.
        expected: String,
    },
    /// The module exports a name instrumentation adds.
    #[error("`{name}` exports `{export}`, a name wasmrace's instrumentation adds (`__wasmrace_*` other than the guest SDK's, and `asyncify_*`); rename the export")]
    ReservedExport {
        /// The module's name.
        name: String,
        /// The export.
        export: String,
    },
    /// The module uses WebAssembly proposals the host cannot instrument or
    /// run.
    #[error("`{name}` uses {proposals}, beyond the WebAssembly 2.0 that wasmrace instruments and runs; {advice}")]
    Unsupported {
        /// The module's name.
        name: String,
        /// The proposals it needs, in words.
        proposals: String,
        /// How to build without them.
        advice: String,
    },
    /// The module's declared memory does not fit the host's bounds.
    #[error("`{name}` {message}")]
    ModuleMemory {
        /// The module's name.
        name: String,
        /// What it declares and the flag or link option to change.
        message: String,
    },
    /// The module's tables do not fit the host's bounds.
    #[error("`{name}` {message}")]
    ModuleTables {
        /// The module's name.
        name: String,
        /// What it declares and what the host holds.
        message: String,
    },
    /// The module's start function failed, before any test could run.
    #[error("`{name}`: the module's start function {what}")]
    StartFunction {
        /// The module's name.
        name: String,
        /// What happened (`trapped: ...`, `ran out of fuel ...`).
        what: String,
    },
    /// No test of that name.
    // The test name comes from a schedule file or the command line:
    // escaped, so that it cannot break the line or drive the terminal.
    #[error("no test `{}` in `{name}`; its tests are: {available}", wasmrace_trace::text::shown(.test))]
    UnknownTest {
        /// The module's name.
        name: String,
        /// The test asked for.
        test: String,
        /// The module's tests, comma-separated.
        available: String,
    },
    /// No `wasm-opt` binary was found.
    #[error("`wasm-opt` (Binaryen) is needed to instrument guests and was not found (looked for `{tried}`); install it with `apt-get install binaryen` or `brew install binaryen`, or point `WASMRACE_WASM_OPT` at it")]
    WasmOptMissing {
        /// The binary looked for.
        tried: String,
    },
    /// `wasm-opt` failed.
    #[error("`wasm-opt` failed to instrument `{name}` with Asyncify: {message}")]
    WasmOpt {
        /// The module's name.
        name: String,
        /// What `wasm-opt` said.
        message: String,
    },
    /// A std test harness whose `--list` lists no test (a library with no
    /// unit tests).
    #[error("`{name}` is a test harness with no test (`--list` lists none)")]
    NoHarnessTests {
        /// The module's name.
        name: String,
    },
    /// A std guest (it imports WASI) that wasmrace cannot run as it is.
    #[error("`{name}` is a std guest (it imports WASI) that wasmrace cannot run: {message}")]
    StdGuest {
        /// The module's name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// Arguments or an environment given to a guest that has no use for
    /// them (`HostConfig::args`, `HostConfig::env`).
    #[error("`{name}` {message}")]
    Arguments {
        /// The module's name.
        name: String,
        /// What was given and why it does not apply.
        message: String,
    },
    /// A walrus pass failed.
    #[error("instrumenting `{name}` failed: {message}")]
    Instrument {
        /// The module's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// wasmtime could not compile the instrumented module.
    #[error("compiling `{name}` failed: {message}")]
    Compile {
        /// The module's name.
        name: String,
        /// wasmtime's message.
        message: String,
    },
    /// More threads than the module's instance slots hold.
    #[error("`--jobs {jobs}` needs `{needed}` instance slots of the module, but it was loaded with `{slots}` (`HostConfig::instance_slots`)")]
    TooManyJobs {
        /// The threads asked for.
        jobs: u32,
        /// The slots they need.
        needed: u32,
        /// The slots the module was loaded with.
        slots: u32,
    },
    /// wasmtime failed at run time, or the explorer reported an error.
    #[error("the runtime failed: {message}")]
    Runtime {
        /// What went wrong.
        message: String,
    },
    /// A schedule file recorded on another module.
    #[error("schedule was recorded on a module with blake3 `{}`, but `{name}` has blake3 `{found}`; rebuild the schedule with `wasmrace check` on this module", wasmrace_trace::text::shown(.expected))]
    ScheduleModule {
        /// The module's name.
        name: String,
        /// The blake3 hash the schedule recorded.
        expected: String,
        /// The blake3 hash of the module given.
        found: String,
    },
    /// A schedule file could not be read.
    #[error(transparent)]
    Schedule(#[from] wasmrace_trace::ScheduleError),
    /// A schedule given to `shrink` or `bisect` does not lead to the
    /// failure it records.
    #[error("the schedule does not reproduce its failure, {failure}: {why}; `wasmrace replay` shows where it goes")]
    NotReproduced {
        /// The failure the schedule records.
        failure: String,
        /// What the schedule did instead.
        why: String,
    },
    /// A decision names a thread or alternative that is not enabled.
    #[error("decision for thread `{thread}` (alternative {alt}) at step {step} is not enabled")]
    InvalidDecision {
        /// The thread's name.
        thread: String,
        /// The alternative asked for.
        alt: u32,
        /// 0-based index of the step in the execution.
        step: u64,
    },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz harness (`wasmrace-fuzz --kind schedules`): a
    /// schedule file's test name or module hash with a newline or an ANSI
    /// escape broke the one-line message and reached the terminal raw.
    #[test]
    fn values_from_schedule_files_are_escaped() {
        let odd = "\u{1b}[31m/../x\n".to_string();
        let errors = [
            HostError::UnknownTest {
                name: "m.wasm".into(),
                test: odd.clone(),
                available: "`a`".into(),
            },
            HostError::ScheduleModule {
                name: "m.wasm".into(),
                expected: odd,
                found: "ab".into(),
            },
        ];
        for e in errors {
            let s = e.to_string();
            assert!(!s.contains('\n') && !s.contains('\u{1b}'), "{s:?}");
            assert!(s.contains("\\u{1b}[31m/../x\\n"), "{s:?}");
        }
    }
}
