//! Odd modules, written in the text format: each gets one readable line
//! naming its own problem (exit 2), or runs, and never wasmtime's
//! backtrace, a "translation error" about wasm the host generated, or the
//! instance pool's terms (issue #11, item 7).

use super::{expect, expect_error, wasmrace, Run, TempDir};

/// A module with what every guest has (an exported memory, a stack
/// pointer, a test), plus `fields`; `memory` replaces the default memory.
fn module(memory: Option<&str>, fields: &str) -> Vec<u8> {
    let memory = memory.unwrap_or(r#"(memory (export "memory") 2)"#);
    let text = format!(
        r#"(module
            {memory}
            (global $sp (mut i32) (i32.const 65536))
            (func (export "wasmrace_test_t"))
            {fields})"#
    );
    wat::parse_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// No internals in what the user reads.
fn assert_plain(run: &Run) {
    for text in [&run.stdout, &run.stderr] {
        for jargon in [
            "backtrace",
            "translation error",
            "pooling",
            "wasm trap: wasm trap",
            "wasm-validator",
            "wasm-opt",
        ] {
            assert!(!text.contains(jargon), "`{jargon}` in:\n{text}");
        }
    }
}

fn check(dir: &TempDir, file: &str, bytes: &[u8], flags: &[&str]) -> Run {
    std::fs::write(dir.join(file), bytes).unwrap();
    let mut args = vec!["check", file];
    args.extend_from_slice(flags);
    let run = wasmrace(dir, &args);
    assert_plain(&run);
    run
}

#[test]
fn every_odd_module_is_one_plain_line_and_exit_2() {
    let dir = TempDir::new("odd-modules");
    let hook = |import: &str, memory: &str, fields: &str| {
        let text = format!(
            r#"(module
                {import}
                {memory}
                (global $sp (mut i32) (i32.const 65536))
                (func (export "wasmrace_test_t"))
                {fields})"#
        );
        wat::parse_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    };
    let mem = r#"(memory (export "memory") 2)"#;
    let spawn = r#"(import "wasmrace" "spawn" (func (param i32 i32) (result i64)))"#;
    let many_tables = "(table 1 funcref)".repeat(17);
    let cases: Vec<(&str, Vec<u8>, &[&str], String)> = vec![
        (
            "start_trap.wasm",
            module(None, "(func $s unreachable) (start $s)"),
            &[],
            "`start_trap.wasm`: the module's start function trapped: wasm `unreachable` instruction executed".into(),
        ),
        (
            // The host indexed an empty thread table and panicked (found
            // by the module fuzzer, modules input 907 of seed 41).
            "start_hook.wasm",
            hook(
                r#"(import "wasmrace" "current" (func $current (result i64)))"#,
                mem,
                "(func $s (drop (call $current))) (start $s)",
            ),
            &[],
            "the module's start function failed: a wasmrace hook was called where no thread runs (from the module's start function)".into(),
        ),
        (
            "start_div.wasm",
            module(
                None,
                "(func $s (drop (i32.div_s (i32.const 1) (i32.const 0)))) (start $s)",
            ),
            &[],
            "the module's start function trapped: integer divide by zero".into(),
        ),
        (
            "start_loop.wasm",
            module(None, "(func $s (loop $l br $l)) (start $s)"),
            &["--fuel-per-step", "100000"],
            "the module's start function ran `100000` instructions without returning (an endless loop?); raise --fuel-per-step".into(),
        ),
        (
            "two_memories.wasm",
            module(None, "(memory 1)"),
            &[],
            "`two_memories.wasm` uses multiple memories, beyond the WebAssembly 2.0 that wasmrace instruments and runs; build without them (`-C target-feature=-multimemory`)".into(),
        ),
        (
            "memory64.wasm",
            module(Some(r#"(memory (export "memory") i64 2)"#), ""),
            &[],
            "uses 64-bit memory (memory64)".into(),
        ),
        (
            "shared.wasm",
            module(Some(r#"(memory (export "memory") 2 10 shared)"#), ""),
            &[],
            "uses threads (shared memory, atomics), beyond the WebAssembly 2.0 that wasmrace instruments and runs; build without them (`-C target-feature=-atomics`)".into(),
        ),
        (
            "atomics.wasm",
            module(
                Some(r#"(memory (export "memory") 2 10 shared)"#),
                r#"(func (export "wasmrace_test_a") (drop (i32.atomic.load (i32.const 0))))"#,
            ),
            &[],
            "uses threads (shared memory, atomics)".into(),
        ),
        (
            "exceptions.wasm",
            module(None, r#"(tag $e) (func (export "wasmrace_test_x") (throw $e))"#),
            &[],
            "uses exception handling".into(),
        ),
        (
            "tail_call.wasm",
            module(None, "(func $f return_call $f) (func (call $f))"),
            &[],
            "uses tail calls".into(),
        ),
        (
            "gc.wasm",
            module(
                None,
                "(type $s (struct (field i32))) (func (drop (struct.new $s (i32.const 1))))",
            ),
            &[],
            "uses garbage collection".into(),
        ),
        (
            "huge.wasm",
            module(Some(r#"(memory (export "memory") 60000)"#), ""),
            &[],
            "`huge.wasm` declares an initial memory of `60000` pages (`3750` MiB), more than the guest memory limit of `256` MiB; raise --max-memory-mb".into(),
        ),
        // Room for the module's data, none for the host's thread slot.
        (
            "tight.wasm",
            module(Some(r#"(memory (export "memory") 2 3)"#), ""),
            &["--max-memory-mb", "4000"],
            "`tight.wasm` declares a memory maximum of `3` pages (`192` KiB), but the host needs `2` pages above its initial `2`".into(),
        ),
        (
            "wrong_signature.wasm",
            hook(
                r#"(import "wasmrace" "yield_now" (func (param i32 i32)))"#,
                mem,
                // Called, or instrumentation drops the unused import.
                r#"(func (export "wasmrace_test_u") (call 0 (i32.const 0) (i32.const 0)))"#,
            ),
            &[],
            "imports hook `wasmrace::yield_now` with type `(func (param i32 i32))`, but this host's `yield_now` has type `(func (param i32))`".into(),
        ),
        (
            "no_thread_start.wasm",
            hook(spawn, mem, ""),
            &[],
            "`no_thread_start.wasm` imports the `spawn` hook but does not export `__wasmrace_thread_start`, where spawned threads start".into(),
        ),
        (
            "bad_thread_start.wasm",
            hook(
                spawn,
                mem,
                r#"(func (export "__wasmrace_thread_start") (param i64))"#,
            ),
            &[],
            "exports `__wasmrace_thread_start` with type `(func (param i64))`, but spawned threads start in a `(func (param i32))`".into(),
        ),
        (
            "reserved_sp.wasm",
            module(None, r#"(func (export "__wasmrace_stack_pointer"))"#),
            &[],
            "`reserved_sp.wasm` exports `__wasmrace_stack_pointer`, a name wasmrace's instrumentation adds".into(),
        ),
        (
            "reserved_enter.wasm",
            module(None, r#"(func (export "__wasmrace_enter_wasmrace_test_t"))"#),
            &[],
            "exports `__wasmrace_enter_wasmrace_test_t`, a name wasmrace's instrumentation adds".into(),
        ),
        (
            "reserved_asyncify.wasm",
            module(
                None,
                r#"(func (export "asyncify_get_state") (result i32) i32.const 0)"#,
            ),
            &[],
            "exports `asyncify_get_state`, a name wasmrace's instrumentation adds".into(),
        ),
        (
            "many_tables.wasm",
            module(None, &many_tables),
            &[],
            "`many_tables.wasm` defines `17` tables, more than the host's limit of `16`".into(),
        ),
        (
            "big_table.wasm",
            module(None, "(table 100000000 funcref)"),
            &[],
            "`big_table.wasm` declares a table of `100000000` elements, more than the host's limit of `1048576`".into(),
        ),
    ];
    for (file, bytes, flags, needle) in cases {
        let run = check(&dir, file, &bytes, flags);
        assert!(run.stderr.contains(file), "{file}: {}", run.stderr);
        expect_error(&run, &needle);
    }
}

/// A module whose reference values Asyncify (Binaryen) turns into typed
/// references, which need the GC proposal: refused in one line that says
/// so and how to build without them, not as a bug of wasmrace's (the
/// module fuzzer's modules input 80 of seed 44, kept as it was generated:
/// Binaryen does this to few modules, and a small one written by hand
/// did not show it).
#[test]
fn reference_values_asyncify_types_are_refused_in_words() {
    let dir = TempDir::new("odd-typed-refs");
    let bytes = include_bytes!("modules/typed_refs.wasm");
    let run = check(&dir, "typed_refs.wasm", bytes, &["--no-cache"]);
    expect_error(
        &run,
        "instrumenting `typed_refs.wasm` failed: Asyncify (Binaryen) types the module's reference values",
    );
    assert!(!run.stderr.contains("wasmrace bug"), "{}", run.stderr);
}

/// Odd but runnable: what wasmtime's default instance pool would refuse
/// runs, sized to the module.
#[test]
fn tables_the_pool_would_refuse_run() {
    let dir = TempDir::new("odd-tables");
    let two = module(
        None,
        r#"(table (export "t1") 10 funcref) (table (export "t2") 10 funcref)"#,
    );
    expect(&check(&dir, "two_tables.wasm", &two, &[]), 0);
    let big = module(None, r#"(table (export "t") 100000 funcref)"#);
    expect(&check(&dir, "big_table.wasm", &big, &[]), 0);
}

/// A module whose own memory maximum leaves room for the main thread's
/// slot but not a spawned thread's: a memory-limit failure naming the
/// module's maximum, not `--max-memory-mb` (which was blamed for it).
#[test]
fn a_modules_own_memory_maximum_is_named_as_such() {
    let dir = TempDir::new("odd-maximum");
    let bytes = wat::parse_str(
        r#"(module
            (import "wasmrace" "spawn" (func $spawn (param i32 i32) (result i64)))
            (memory (export "memory") 2 4)
            (global $sp (mut i32) (i32.const 65536))
            (func (export "__wasmrace_thread_start") (param i32))
            (func (export "wasmrace_test_t")
                (drop (call $spawn (i32.const 0) (i32.const 0)))))"#,
    )
    .unwrap();
    let run = check(
        &dir,
        "maximum.wasm",
        &bytes,
        &["--max-memory-mb", "4000", "--schedule-out", "bug.json"],
    );
    expect(&run, 1);
    assert!(
        run.stdout.contains("failure:  memory limit"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "message:  the module declares a memory maximum of `4` pages (`256` KiB), too small for another thread's `128` KiB slot"
        ),
        "{}",
        run.stdout
    );
    let failure: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("failure:"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(
        !failure.iter().any(|l| l.contains("--max-memory-mb")),
        "{failure:?}"
    );
}

/// std's thread-less `Mutex` fails inside std: the report says what to
/// use instead, on a line of its own under the failure.
#[test]
fn std_primitives_get_a_hint_line() {
    let dir = TempDir::new("std-hint");
    let m = super::fixture(&dir, "std_sync");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_across_threads",
            "--schedule-out",
            "bug.json",
        ],
    );
    expect(&run, 1);
    let hints: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("hint:"))
        .collect();
    assert_eq!(
        hints,
        ["hint:     std's `Mutex` cannot block on wasm32-unknown-unknown (no threads): it panics when another wasmrace thread holds it; use `wasmrace::shared::Mutex`"],
        "{}",
        run.stdout
    );
    let json = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "std_spawn",
            "--json",
            "--schedule-out",
            "spawn.json",
        ],
    );
    expect(&json, 1);
    assert!(
        json.stdout.contains("use `wasmrace::thread::spawn`"),
        "{}",
        json.stdout
    );
}
