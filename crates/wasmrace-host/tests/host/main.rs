//! Integration tests of the host library: bad input gets typed one-line
//! errors, the module cache works, and a guest written by hand in WAT (no
//! Rust SDK) runs against the documented ABI.

use std::path::PathBuf;
use wasmrace_explore::{Program, Status};
use wasmrace_host::strategies::StrategyOptions;
use wasmrace_host::{
    check, CheckOptions, Guest, HostConfig, HostError, StrategyChoice, WasmProgram,
};
use wasmrace_trace::{Decision, FailureKind};

fn cache_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("host-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn config(name: &str) -> HostConfig {
    HostConfig {
        cache_dir: Some(cache_dir(name)),
        ..HostConfig::default()
    }
}

fn load_wat(name: &str, wat: &str) -> Result<Guest, HostError> {
    let bytes = wat::parse_str(wat).expect("test module parses");
    Guest::from_bytes(name, &bytes, config(name))
}

fn assert_one_line(e: &HostError) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "error is not one line: {s}");
    s
}

#[test]
fn truncated_wasm_is_invalid_with_an_offset() {
    let bytes = std::fs::read(wasmrace_fixtures::path("lost_update")).unwrap();
    let e = Guest::from_bytes("cut.wasm", &bytes[..100], config("truncated")).unwrap_err();
    assert!(matches!(e, HostError::Invalid { .. }), "{e:?}");
    let s = assert_one_line(&e);
    assert!(
        s.contains("`cut.wasm` is not valid wasm") && s.contains("byte offset"),
        "{s}"
    );
    // Not wasm at all: said in words, not as the validator's byte dump.
    let e = Guest::from_bytes("junk.wasm", b"hello world", config("junk")).unwrap_err();
    assert!(matches!(e, HostError::NotWasm { .. }), "{e:?}");
    assert!(
        assert_one_line(&e).contains("is not a WebAssembly module"),
        "{e}"
    );
}

#[test]
fn env_imports_are_refused_by_name() {
    let e = load_wat(
        "env",
        r#"(module
            (import "env" "now" (func (result i64)))
            (memory (export "memory") 1)
            (func (export "wasmrace_test_t")))"#,
    )
    .unwrap_err();
    let s = assert_one_line(&e);
    assert!(s.contains("`env::now`"), "{s}");
    assert!(s.contains("wasm32-unknown-unknown"), "says what to do: {s}");
}

/// A std guest (it imports WASI) written by hand: `_start` with `body`,
/// and `more` module fields.
fn std_wat(more: &str, body: &str) -> String {
    format!(
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
            {more}
            (memory (export "memory") 1)
            (global $__stack_pointer (mut i32) (i32.const 32768))
            (func (export "_start") (global.set $__stack_pointer (global.get $__stack_pointer)) {body}))"#
    )
}

#[test]
fn std_guests_the_host_cannot_run_are_one_line_each() {
    let refused = |name: &str, wat: &str, needle: &str| {
        let e = load_wat(name, wat).unwrap_err();
        let s = assert_one_line(&e);
        assert!(s.contains(needle), "{name}: `{needle}` not in: {s}");
    };
    refused(
        "no-start",
        r#"(module
            (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
            (memory (export "memory") 1)
            (func (export "wasmrace_test_t")))"#,
        "is a std guest (it imports WASI) that wasmrace cannot run: it exports no `_start`",
    );
    refused(
        "wasi-other",
        &std_wat(r#"(import "wasi" "thread-kill" (func (param i32)))"#, ""),
        "imports `wasi::thread-kill`",
    );
    refused(
        "memory64",
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
            (memory (export "memory") i64 1)
            (func (export "_start")))"#,
        "memory64",
    );
    refused(
        "thread-start-type",
        &std_wat(
            r#"(import "wasi" "thread-spawn" (func (param i32) (result i32)))
               (func (export "wasi_thread_start") (param i32) (result i32) (i32.const 0))"#,
            "",
        ),
        "`wasi_thread_start` is not `(func (param i32 i32))`",
    );
    refused(
        "bad-wasi-signature",
        &std_wat(
            r#"(import "wasi_snapshot_preview1" "path_open" (func (param i32)))"#,
            "",
        ),
        "`wasi_snapshot_preview1::path_open` with a signature WASI does not have",
    );
    refused(
        "known-call-wrong-type",
        &std_wat(
            r#"(import "wasi_snapshot_preview1" "fd_write" (func $w (param i32) (result i32)))"#,
            "(drop (call $w (i32.const 0)))",
        ),
        "wasi_fd_write",
    );
    refused(
        "env-import",
        &std_wat(
            r#"(import "env" "now" (func $now (result i64)))"#,
            "(drop (call $now))",
        ),
        "`env::now`",
    );
}

#[test]
fn a_hand_written_std_guest_runs_its_atomics_and_exits_with_its_code() {
    // Two atomic adds, a file call the host answers ENOSYS (52), stored,
    // then `proc_exit(2)`: a failure of kind exit, after three steps.
    let g = load_wat(
        "std-exit",
        &std_wat(
            r#"(import "wasi_snapshot_preview1" "path_open"
                 (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))"#,
            r#"(drop (i32.atomic.rmw.add (i32.const 64) (i32.const 5)))
               (drop (i32.atomic.rmw.add offset=8 (i32.const 56) (i32.const 5)))
               (i32.store (i32.const 128)
                 (call $open (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)
                             (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 0)))
               (if (i32.ne (i32.atomic.load (i32.const 64)) (i32.const 10)) (then unreachable))
               (if (i32.ne (i32.load (i32.const 128)) (i32.const 52)) (then unreachable))
               (call $exit (i32.const 2))"#,
        ),
    )
    .unwrap();
    assert_eq!(g.tests(), ["main"]);
    let out = check(&g, "main", &CheckOptions::default()).unwrap();
    let bug = out.bug.expect("the exit code");
    assert_eq!(bug.failure.kind, FailureKind::Exit, "{}", bug.failure);
    assert!(bug.failure.message.contains("code 2"), "{}", bug.failure);
    let ops: Vec<&str> = bug.trace.iter().map(|e| e.op.as_str()).collect();
    assert_eq!(ops, ["mem.rmw", "mem.rmw", "mem.load", "process.exit"]);
}

#[test]
fn a_random_get_past_memory_is_a_fault_not_a_host_allocation() {
    // 2 GiB asked of random_get in a 64 KiB memory: api misuse, at once.
    let g = load_wat(
        "std-random",
        &std_wat(
            r#"(import "wasi_snapshot_preview1" "random_get" (func $rnd (param i32 i32) (result i32)))"#,
            "(drop (call $rnd (i32.const 0) (i32.const 0x7fffffff)))",
        ),
    )
    .unwrap();
    let out = check(&g, "main", &CheckOptions::default()).unwrap();
    let bug = out.bug.expect("the bad length");
    assert_eq!(bug.failure.kind, FailureKind::Misuse, "{}", bug.failure);
}

#[test]
fn a_std_guest_spinning_on_plain_memory_runs_out_of_fuel() {
    let g = load_wat(
        "std-spin",
        &std_wat(
            "",
            r#"(loop $l (br_if $l (i32.eqz (i32.load (i32.const 64)))))"#,
        ),
    )
    .unwrap();
    let out = check(&g, "main", &CheckOptions::default()).unwrap();
    let bug = out.bug.expect("the runaway loop");
    assert_eq!(
        bug.failure.kind,
        FailureKind::FuelExhausted,
        "{}",
        bug.failure
    );
}

#[test]
fn unknown_hooks_missing_memory_and_no_tests_are_refused() {
    // `__onward`, the host's offer to go on in place, is the
    // instrumentation's import, never a guest's (it would call it outside
    // any step).
    for (name, import) in [
        ("teleport", "(func)"),
        (
            "__onward",
            "(func (param i32 i32 i64 i64 i64 i64 i32) (result i32 i64))",
        ),
    ] {
        let wat = format!(
            r#"(module (import "wasmrace" "{name}" {import}) (memory (export "memory") 1) (func (export "wasmrace_test_t")))"#
        );
        let e = load_wat(&format!("unknown-hook-{name}"), &wat).unwrap_err();
        assert!(
            matches!(e, HostError::UnknownHook { .. })
                && e.to_string().contains(&format!("`wasmrace::{name}`")),
            "{e}"
        );
    }
    let e = load_wat("no-memory", r#"(module (func (export "wasmrace_test_t")))"#).unwrap_err();
    assert!(matches!(e, HostError::NoMemory { .. }), "{e}");
    let e = load_wat(
        "no-tests",
        r#"(module (memory (export "memory") 1) (func (export "wasmrace_test_t") (param i32)))"#,
    )
    .unwrap_err();
    assert!(
        matches!(e, HostError::NoTests { .. }),
        "a test takes no parameters: {e}"
    );
}

#[test]
fn unknown_test_lists_the_available_ones() {
    let g = Guest::load(
        &wasmrace_fixtures::path("lost_update"),
        config("unknown-test"),
    )
    .unwrap();
    let e = g.program("lost_updat").unwrap_err();
    let s = assert_one_line(&e);
    assert!(
        s.contains("no test `lost_updat`") && s.contains("`lost_update`, `lost_update_3`"),
        "{s}"
    );
}

#[test]
fn missing_wasm_opt_says_how_to_install_it() {
    let bytes = std::fs::read(wasmrace_fixtures::path("lost_update")).unwrap();
    let cfg = HostConfig {
        cache_dir: None,
        wasm_opt: Some("/nonexistent/wasm-opt".into()),
        ..HostConfig::default()
    };
    let e = Guest::from_bytes("lost_update.wasm", &bytes, cfg).unwrap_err();
    let s = assert_one_line(&e);
    assert!(
        matches!(e, HostError::WasmOptMissing { .. }) && s.contains("apt-get install binaryen"),
        "{s}"
    );
}

#[test]
fn second_load_comes_from_the_cache_and_behaves_the_same() {
    let dir = cache_dir("cache-hit");
    let cfg = HostConfig {
        cache_dir: Some(dir.clone()),
        ..HostConfig::default()
    };
    let path = wasmrace_fixtures::path("lost_update");
    let a = Guest::load(&path, cfg.clone()).unwrap();
    assert!(!a.from_cache());
    let b = Guest::load(&path, cfg).unwrap();
    assert!(b.from_cache(), "compiled module is reused");
    assert_eq!(a.module_hash(), b.module_hash());
    let opts = CheckOptions {
        strategy: StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(Some(1)),
            ..StrategyOptions::NONE
        }),
        ..CheckOptions::default()
    };
    let ra = check(&a, "lost_update", &opts).unwrap();
    let rb = check(&b, "lost_update", &opts).unwrap();
    assert_eq!(ra.report.executions, rb.report.executions);
    assert_eq!(ra.bug.unwrap().trace, rb.bug.unwrap().trace);
    // A corrupt cache entry is not trusted: it is recompiled.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::write(&p, b"garbage").unwrap();
    }
    let c = Guest::load(
        &path,
        HostConfig {
            cache_dir: Some(dir),
            ..HostConfig::default()
        },
    );
    assert!(c.is_ok(), "{:?}", c.err().map(|e| e.to_string()));
}

/// `check_jobs_with_progress` reports the executions of all threads
/// together, every 100 of them, rising, never past the run's count, for a
/// run split by execution (random) and one sharing its tree (dfs); the
/// report is the one of `check_jobs`.
#[test]
fn jobs_progress_counts_every_thread() {
    let guest = Guest::load(
        &wasmrace_fixtures::path("mutex_counter"),
        HostConfig {
            cache_dir: Some(cache_dir("jobs-progress")),
            ..HostConfig::default()
        },
    )
    .unwrap();
    let runs = [
        (StrategyChoice::named("random"), 1000),
        (
            StrategyChoice::named("dfs").with(&StrategyOptions {
                preemption_bound: Some(None),
                ..StrategyOptions::NONE
            }),
            u64::MAX,
        ),
    ];
    for (strategy, max) in runs {
        let mut opts = CheckOptions {
            strategy,
            ..CheckOptions::default()
        };
        opts.explore.max_executions = max;
        let seen = std::sync::Mutex::new(Vec::new());
        let out =
            wasmrace_host::check_jobs_with_progress(&guest, "mutex_counter", &opts, 2, &|n| {
                seen.lock().unwrap().push(n)
            })
            .unwrap();
        let plain = wasmrace_host::check_jobs(&guest, "mutex_counter", &opts, 2).unwrap();
        assert_eq!(out.report.executions, plain.report.executions);
        let mut seen = seen.into_inner().unwrap();
        let total = out.report.executions;
        assert!(total >= 100, "a run long enough to report: {total}");
        // Threads may call in either order; the values are every 100th.
        seen.sort_unstable();
        let expected: Vec<u64> = (1..=total / 100).map(|k| k * 100).collect();
        assert_eq!(seen, expected, "{total} executions");
    }
}

/// `check_jobs` refuses more threads than the module's instance slots hold
/// (each program may hold two instances), in one line naming the field,
/// instead of wasmtime's pool failing midway; `with_slots_for` makes room.
#[test]
fn jobs_beyond_the_instance_slots_are_refused_by_name() {
    let config = HostConfig {
        cache_dir: Some(cache_dir("jobs-slots")),
        instance_slots: 5,
        ..HostConfig::default()
    };
    let path = wasmrace_fixtures::path("lost_update");
    let guest = Guest::load(&path, config.clone()).unwrap();
    let opts = CheckOptions::default();
    let err = wasmrace_host::check_jobs(&guest, "lost_update", &opts, 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`--jobs 2` needs `6` instance slots of the module, but it was loaded with `5` \
         (`HostConfig::instance_slots`)"
    );
    let roomy = Guest::load(&path, config.with_slots_for(12)).unwrap();
    let one = wasmrace_host::check_jobs(&roomy, "lost_update", &opts, 1).unwrap();
    let twelve = wasmrace_host::check_jobs(&roomy, "lost_update", &opts, 12).unwrap();
    assert_eq!(one.report.executions, twelve.report.executions);
    assert_eq!(
        one.report.first_bug().map(|b| &b.schedule),
        twelve.report.first_bug().map(|b| &b.schedule)
    );
}

/// A strategy whose blocks' sizes are learnt as they run (procrastination)
/// splits between the threads of one process only: `check_jobs` given a
/// partition of the run refuses it in one line instead of numbering the
/// partition's executions by sizes it never learns.
#[test]
fn jobs_refuse_a_partition_of_open_blocks() {
    let config = HostConfig {
        cache_dir: Some(cache_dir("jobs-open")),
        ..HostConfig::default()
    };
    let guest = Guest::load(&wasmrace_fixtures::path("lost_update"), config).unwrap();
    let mut opts = CheckOptions {
        strategy: StrategyChoice::named("procrastination"),
        ..CheckOptions::default()
    };
    opts.explore.partition = wasmrace_explore::Partition::new(0, 2);
    let err = wasmrace_host::check_jobs(&guest, "lost_update", &opts, 2).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("strategy `procrastination` cannot split its work into partitions"),
        "{err}"
    );
    opts.explore.partition = None;
    let two = wasmrace_host::check_jobs(&guest, "lost_update", &opts, 2).unwrap();
    assert_eq!(two.report.first_bug().map(|b| b.execution), Some(1));
}

/// A guest written directly against docs/ABI.md, as a C or hand-written
/// guest would be: two threads each add 1 to a shared cell with a get and a
/// set, and the test fails when the total is not 2 (a lost update). The
/// stack pointer is global 0, as LLVM lays it out.
const HAND_WRITTEN: &str = r#"
(module
  (import "wasmrace" "spawn" (func $spawn (param i32 i32) (result i64)))
  (import "wasmrace" "join" (func $join (param i64 i32)))
  (import "wasmrace" "cell_new" (func $cell_new (param i64 i32) (result i64)))
  (import "wasmrace" "cell_get" (func $cell_get (param i64 i32) (result i64)))
  (import "wasmrace" "cell_set" (func $cell_set (param i64 i64 i32)))
  (global $sp (mut i32) (i32.const 65536))
  (global $cell (mut i64) (i64.const 0))
  (memory (export "memory") 2)
  (func (export "__wasmrace_thread_start") (param $arg i32)
    (call $cell_set (global.get $cell)
      (i64.add (call $cell_get (global.get $cell) (i32.const 0)) (i64.const 1))
      (i32.const 0)))
  (func (export "wasmrace_test_lost_update")
    (local $a i64) (local $b i64)
    (global.set $cell (call $cell_new (i64.const 0) (i32.const 0)))
    (local.set $a (call $spawn (i32.const 1) (i32.const 0)))
    (local.set $b (call $spawn (i32.const 2) (i32.const 0)))
    (call $join (local.get $a) (i32.const 0))
    (call $join (local.get $b) (i32.const 0))
    (if (i64.ne (call $cell_get (global.get $cell) (i32.const 0)) (i64.const 2))
      (then unreachable))))
"#;

#[test]
fn hand_written_guest_runs_against_the_abi() {
    let g = load_wat("hand", HAND_WRITTEN).unwrap();
    assert_eq!(g.tests(), ["lost_update"]);
    let opts = CheckOptions {
        strategy: StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(None),
            ..StrategyOptions::NONE
        }),
        ..CheckOptions::default()
    };
    let out = check(&g, "lost_update", &opts).unwrap();
    let bug = out.bug.expect("the lost update is found");
    assert_eq!(bug.failure.kind, FailureKind::Trap);
    assert_eq!(bug.failure.thread.as_deref(), Some("main"));
    // Said once: wasmtime's own text already starts with it.
    assert_eq!(
        bug.failure.message, "wasm trap: wasm `unreachable` instruction executed",
        "{:?}",
        bug.failure
    );
    // The interleaving shows both reads before both writes.
    let ops: Vec<(String, String)> = bug
        .trace
        .iter()
        .map(|e| (e.thread.clone(), e.op.clone()))
        .collect();
    let first_set = ops.iter().position(|(_, o)| o == "cell.set").unwrap();
    let gets_before = ops[..first_set]
        .iter()
        .filter(|(_, o)| o == "cell.get")
        .count();
    assert_eq!(gets_before, 2, "{ops:?}");
    // Replaying the schedule reproduces it.
    let r = wasmrace_host::replay(&g, &bug.schedule, 10_000).unwrap();
    assert!(r.reproduces(&bug.schedule), "{r:?}");
    assert_eq!(r.trace, bug.trace);
}

/// A hook that is also in a table could be called around its wasm wrapper,
/// so such a module gets no trampolines and the host does Asyncify's
/// bookkeeping itself. Both ways must explore the same: same executions,
/// same failing ones, same interleavings, states restored exactly.
#[test]
fn host_side_bookkeeping_explores_like_the_trampolines() {
    let tabled = HAND_WRITTEN.replace(
        "(memory (export \"memory\") 2)",
        "(memory (export \"memory\") 2) (table (export \"hooks\") 1 funcref) (elem (i32.const 0) $cell_get)",
    );
    assert_ne!(tabled, HAND_WRITTEN);
    let mut reports = Vec::new();
    for (name, wat) in [("fast", HAND_WRITTEN), ("tabled", tabled.as_str())] {
        let g = load_wat(name, wat).unwrap();
        let p = g.program("lost_update").unwrap();
        assert_eq!(p.uses_trampolines(), name == "fast");
        let config = wasmrace_explore::Config {
            stop_on_first_bug: false,
            ..wasmrace_explore::Config::default()
        };
        let mut explorer = wasmrace_explore::Explorer::new(p, config);
        let mut dfs = StrategyChoice::named("dfs")
            .with(&StrategyOptions {
                preemption_bound: Some(None),
                ..StrategyOptions::NONE
            })
            .build(0);
        let r = explorer.run(&mut *dfs).unwrap();
        assert!(r.exhausted);
        reports.push((r.executions, r.failing_executions, r.steps));
    }
    assert_eq!(reports[0], reports[1]);
    assert!(reports[0].1 > 0, "{reports:?}");
}

#[test]
fn hand_written_guest_snapshot_restore_is_exact() {
    let g = load_wat("hand-snap", HAND_WRITTEN).unwrap();
    let mut p = g.program("lost_update").unwrap();
    // Run round-robin, remembering the decisions and hashes.
    let mut decisions = Vec::new();
    let mut hashes = Vec::new();
    let mut turn = 0;
    while matches!(p.status(), Status::Running) {
        let en: Vec<_> = p
            .threads()
            .iter()
            .filter(|t| t.pending.enabled)
            .map(|t| t.tid)
            .collect();
        let d = Decision::new(en[turn % en.len()], 0);
        turn += 1;
        p.step(d).unwrap();
        decisions.push(d);
        hashes.push(p.state_hash().unwrap());
    }
    let final_status = p.status().clone();
    for cut in 0..decisions.len() {
        p.reset().unwrap();
        for &d in &decisions[..cut] {
            p.step(d).unwrap();
        }
        let snap = p.snapshot().unwrap().unwrap();
        // Wander off along the first enabled thread, then come back.
        for _ in 0..3 {
            if !matches!(p.status(), Status::Running) {
                break;
            }
            if let Some(t) = p.threads().iter().find(|t| t.pending.enabled) {
                let t = t.tid;
                p.step(Decision::new(t, 0)).unwrap();
            }
        }
        p.restore(&snap).unwrap();
        for (i, &d) in decisions[cut..].iter().enumerate() {
            p.step(d).unwrap();
            assert_eq!(
                p.state_hash().unwrap(),
                hashes[cut + i],
                "cut {cut}, step {}",
                cut + i
            );
        }
        assert_eq!(p.status(), &final_status);
    }
}

/// Snapshots, restores and hashes skip stack pages below each stack's
/// low-water mark without reading them. Check the reasoning directly: after
/// every step of random executions of several fixtures, every skipped page
/// really is zero, and the skipping is not vacuous.
#[test]
fn pages_below_stack_low_water_marks_are_zero() {
    use rand::{Rng, SeedableRng};
    let cases = [
        ("lost_update", "lost_update_3"),
        ("condvar_pc", "condvar_pc"),
        ("mailbox_server", "mailbox_server"),
        ("world_hello", "world_hello_10"),
        ("sdk_smoke", "mailbox_selective"),
    ];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    for (program, test) in cases {
        let g = Guest::load(
            &wasmrace_fixtures::path(program),
            config(&format!("lowwater-{program}")),
        )
        .unwrap();
        let mut p = g.program(test).unwrap();
        for _ in 0..6 {
            p.reset().unwrap();
            let skipped = p.verify_known_zero().unwrap();
            assert!(
                skipped > 100,
                "{test}: only {skipped} pages skipped at the start"
            );
            while matches!(p.status(), Status::Running) {
                let en: Vec<_> = p
                    .threads()
                    .iter()
                    .filter(|t| t.pending.enabled)
                    .map(|t| t.tid)
                    .collect();
                let t = en[rng.random_range(0..en.len())];
                p.step(Decision::new(t, 0)).unwrap();
                p.verify_known_zero()
                    .unwrap_or_else(|e| panic!("{test}: {e}"));
            }
        }
    }
}

/// Pages taken for zero without being read (stack below a low-water mark)
/// really are zero, for modules no compiler would emit: a stack pointer
/// that starts past the memory the module declares (the module fuzzer's
/// modules input 2443 of seed 41: every page the host places there, the
/// dirty-page map and the thread slots with their Asyncify buffers, was
/// taken for unwritten stack, restores left them as they were, and a guest
/// reading them trapped in one execution and not in its replay), and a
/// write below the stack pointer, which the dirty-page map shows.
#[test]
fn stack_pages_taken_for_zero_are_zero_in_odd_modules() {
    let wat = |pages: u32, sp: u32| {
        format!(
            r#"(module
            (import "wasi_snapshot_preview1" "sched_yield" (func $yield (result i32)))
            (memory (export "memory") {pages})
            (global $__stack_pointer (mut i32) (i32.const {sp}))
            (func (export "wasi_thread_start") (param i32 i32))
            (func (export "_start")
              (global.set $__stack_pointer (global.get $__stack_pointer))
              (drop (call $yield))
              (i32.store (i32.const 64) (i32.const 7))
              (drop (i32.atomic.rmw.add (i32.const 128) (i32.const 1)))
              (drop (call $yield))))"#
        )
    };
    for (name, pages, sp) in [("sp-past-memory", 1, 0x10_0000), ("below-sp", 2, 0x1_0000)] {
        let g = load_wat(name, &wat(pages, sp)).unwrap();
        let mut p = g.program("main").unwrap();
        for _ in 0..3 {
            p.reset().unwrap();
            p.verify_known_zero().unwrap();
            while matches!(p.status(), Status::Running) {
                let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
                p.step(Decision::new(t, 0)).unwrap();
                p.verify_known_zero()
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            assert_eq!(p.status(), &Status::Finished, "{name}");
        }
    }
}

/// Snapshots hold memory, globals and host objects, not wasm tables: a
/// guest whose code changes a table gets no snapshots (the explorer replays
/// prefixes instead), and exploration gives the same results.
#[test]
fn guests_that_change_tables_are_explored_without_snapshots() {
    let with_table = HAND_WRITTEN.replacen(
        "(memory (export \"memory\") 2)",
        "(memory (export \"memory\") 2)
  (table $t 1 funcref)
  (func $poke (table.set $t (i32.const 0) (ref.null func)))",
        1,
    );
    let plain = load_wat("tables-plain", HAND_WRITTEN).unwrap();
    let changing = load_wat("tables-changing", &with_table).unwrap();
    let mut p = changing.program("lost_update").unwrap();
    assert!(
        p.snapshot().unwrap().is_none(),
        "no snapshot of a table-changing guest"
    );
    assert!(plain
        .program("lost_update")
        .unwrap()
        .snapshot()
        .unwrap()
        .is_some());
    let opts = CheckOptions {
        strategy: StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(None),
            ..StrategyOptions::NONE
        }),
        explore: wasmrace_explore::Config {
            snapshot_every_cost: Some(0),
            stop_on_first_bug: false,
            ..Default::default()
        },
        ..CheckOptions::default()
    };
    let a = check(&plain, "lost_update", &opts).unwrap();
    let b = check(&changing, "lost_update", &opts).unwrap();
    assert_eq!(a.report.executions, b.report.executions);
    assert_eq!(a.report.failing_executions, b.report.failing_executions);
    assert!(
        a.report.restores > 0,
        "the plain guest resumes from snapshots"
    );
    assert_eq!(b.report.restores, 0, "the table-changing one replays");
}

/// A guest announcing a phase (`wasmrace::phase`): main spawns a worker,
/// announces `init-done`, then fails unless the worker's cell write came
/// first. `phase` is a scheduling point of its own that touches nothing:
/// the thread pends on it, its step carries the name in `StepInfo::phase`
/// (and no other step does), and traces show it with the name.
const PHASED: &str = r#"
(module
  (import "wasmrace" "spawn" (func $spawn (param i32 i32) (result i64)))
  (import "wasmrace" "cell_new" (func $cell_new (param i64 i32) (result i64)))
  (import "wasmrace" "cell_get" (func $cell_get (param i64 i32) (result i64)))
  (import "wasmrace" "cell_set" (func $cell_set (param i64 i64 i32)))
  (import "wasmrace" "phase" (func $phase (param i32 i32 i32)))
  (global $sp (mut i32) (i32.const 65536))
  (global $cell (mut i64) (i64.const 0))
  (memory (export "memory") 2)
  (data (i32.const 16) "init-done")
  (func (export "__wasmrace_thread_start") (param $arg i32)
    (call $cell_set (global.get $cell) (i64.const 1) (i32.const 0)))
  (func (export "wasmrace_test_phased")
    (global.set $cell (call $cell_new (i64.const 0) (i32.const 0)))
    (drop (call $spawn (i32.const 1) (i32.const 0)))
    (call $phase (i32.const 16) (i32.const 9) (i32.const 0))
    (if (i64.ne (call $cell_get (global.get $cell) (i32.const 0)) (i64.const 1))
      (then unreachable)))
  (func (export "wasmrace_test_bad_phase")
    (call $phase (i32.const 0x7fff0000) (i32.const 9) (i32.const 0))))
"#;

#[test]
fn phase_is_a_scheduling_point_that_names_its_step() {
    use wasmrace_trace::OpKind;
    let g = load_wat("phased", PHASED).unwrap();
    let mut p = g.program("phased").unwrap();
    p.set_tracing(true);
    let main = p.threads()[0].tid;
    // cell.new, spawn: then main pends on the phase, which touches nothing.
    p.step(Decision::new(main, 0)).unwrap();
    assert_eq!(p.step(Decision::new(main, 0)).unwrap().phase, None);
    let pending = &p.threads()[0].pending;
    assert_eq!(pending.op, OpKind::Phase);
    assert!(pending.enabled && pending.alts == 1 && pending.accesses.is_empty());
    let info = p.step(Decision::new(main, 0)).unwrap().clone();
    assert_eq!(info.op, Some(OpKind::Phase));
    assert_eq!(info.phase.as_deref(), Some("init-done"));
    assert!(info.accesses.is_empty());
    // The next step is an ordinary one again.
    let info = p.step(Decision::new(main, 0)).unwrap();
    assert_eq!(info.op, Some(OpKind::CellGet));
    assert_eq!(info.phase, None);
    let shown: Vec<(&str, &str)> = p
        .trace()
        .iter()
        .map(|e| (e.op.as_str(), e.detail.as_str()))
        .collect();
    assert_eq!(shown[2], ("phase", "\"init-done\""), "{shown:?}");

    // The bug (main reads before the worker writes) is found and replayed
    // through the phase step.
    let opts = CheckOptions {
        strategy: StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(None),
            ..StrategyOptions::NONE
        }),
        ..CheckOptions::default()
    };
    let bug = check(&g, "phased", &opts).unwrap().bug.expect("found");
    assert!(bug.trace.iter().any(|e| e.op == "phase"));
    let r = wasmrace_host::replay(&g, &bug.schedule, 10_000).unwrap();
    assert!(r.reproduces(&bug.schedule), "{r:?}");

    // A name outside memory fails the execution as misuse, not the host.
    let p = g.program("bad_phase").unwrap();
    assert!(
        matches!(p.status(), Status::Failed(f) if f.kind == FailureKind::Misuse),
        "{:?}",
        p.status()
    );
}

/// The module cache refuses damaged and misplaced entries.
mod cache;

/// Traces carry the state of the objects each step touched.
mod trace_state;

/// Delaying explorers (SES, SS, custom explorers) through the host API.
mod delaying;
/// An embedder's exploration through `wasmrace_host` paths only.
mod embedder;

/// A hand-written guest with a cell (`cell_new`, `cell_get`), a stack
/// pointer and two pages of memory, around the functions given.
macro_rules! cell_module {
    ($funcs:literal) => {
        concat!(
            r#"(module
  (import "wasmrace" "cell_new" (func $cell_new (param i64 i32) (result i64)))
  (import "wasmrace" "cell_get" (func $cell_get (param i64 i32) (result i64)))
  (global $sp (mut i32) (i32.const 65536))
  (memory (export "memory") 2)"#,
            $funcs,
            ")"
        )
    };
}

/// A guest that grows its memory after the start state (as a Rust guest's
/// allocator does at its first allocation). `reset` rewinds the size the
/// guest sees instead of making a fresh instance: every execution sees the
/// same size, finds the grown page zero, and ends in the same state.
const GROWER: &str = cell_module!(
    r#"
  (func (export "wasmrace_test_grow")
    (local $c i64) (local $old i32) (local $at i32)
    (local.set $c (call $cell_new (i64.const 0) (i32.const 0)))
    (local.set $old (memory.grow (i32.const 1)))
    (if (i32.eq (local.get $old) (i32.const -1)) (then unreachable))
    (if (i32.ne (memory.size) (i32.add (local.get $old) (i32.const 1)))
      (then unreachable))
    (local.set $at (i32.mul (local.get $old) (i32.const 65536)))
    (if (i64.ne (i64.load (local.get $at)) (i64.const 0)) (then unreachable))
    (i64.store (local.get $at) (i64.const 42))
    (drop (call $cell_get (local.get $c) (i32.const 0)))
    (if (i32.ne (memory.size) (i32.add (local.get $old) (i32.const 1)))
      (then unreachable)))
"#
);

#[test]
fn memory_grown_during_an_execution_is_rewound_by_reset() {
    // With a declared maximum the module has no dirty-page map, so every
    // restore scans memory: it must still zero what an execution wrote
    // above the guest's size, or the next growth would find it there.
    for (name, wat) in [
        ("grower", GROWER.to_string()),
        (
            "grower-max",
            GROWER.replace(
                "(memory (export \"memory\") 2)",
                "(memory (export \"memory\") 2 100)",
            ),
        ),
    ] {
        rewound_by_reset(name, &wat);
    }
}

fn rewound_by_reset(name: &str, wat: &str) {
    let g = load_wat(name, wat).unwrap();
    let mut p = g.program("grow").unwrap();
    let mut finals = Vec::new();
    let mut instances = Vec::new();
    for _ in 0..5 {
        p.reset().unwrap();
        while matches!(p.status(), Status::Running) {
            let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
            p.step(Decision::new(t, 0)).unwrap();
        }
        assert!(matches!(p.status(), Status::Finished), "{:?}", p.status());
        finals.push(p.state_hash().unwrap());
        instances.push(p.instances());
    }
    assert!(
        finals.windows(2).all(|w| w[0] == w[1]),
        "final states differ"
    );
    assert!(
        instances.windows(2).all(|w| w[0] == w[1]),
        "resets made fresh instances: {instances:?}"
    );
}

/// A fresh instance starts with room beyond the guest's memory
/// (`load::headroom`): the dirty-page map, the first thread slots and the
/// guest's first heap growth fit in it, so creating a program and running
/// executions grows no real memory (each growth is an `mprotect`), while
/// the guest sees the size it declared (the grower's checks of
/// `memory.size` and of zeroed new memory hold in every execution).
#[test]
fn a_program_starts_with_room_for_the_hosts_and_the_guests_growth() {
    let run = |p: &mut WasmProgram| {
        p.reset().unwrap();
        while matches!(p.status(), Status::Running) {
            let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
            p.step(Decision::new(t, 0)).unwrap();
        }
        assert!(matches!(p.status(), Status::Finished), "{:?}", p.status());
    };
    let smoke = Guest::load(&wasmrace_fixtures::path("sdk_smoke"), config("room")).unwrap();
    let grower = load_wat("grower-room", GROWER).unwrap();
    for mut p in [
        smoke.program("bench_two_by_ten").unwrap(),
        grower.program("grow").unwrap(),
    ] {
        let real = p.real_memory_bytes();
        let (visible, _) = p.memory_image();
        assert!(visible.len() < real, "no room: {} of {real}", visible.len());
        for _ in 0..3 {
            run(&mut p);
        }
        assert_eq!(p.real_memory_bytes(), real, "{}: memory grew", p.test());
    }
    // The room never takes the instance past `max_memory_bytes`: with
    // 2 MiB, it stops there, and the program still runs.
    let tight = HostConfig {
        max_memory_bytes: 2 << 20,
        ..config("room-tight")
    };
    let smoke = Guest::load(&wasmrace_fixtures::path("sdk_smoke"), tight).unwrap();
    let mut p = smoke.program("bench_two_by_ten").unwrap();
    assert_eq!(p.real_memory_bytes(), 2 << 20);
    run(&mut p);
}

/// A guest that reads and writes just past its memory: within the room a
/// tracked module starts with, the access does not trap (as after any
/// growth the host rewound), and the write is marked and zeroed by the
/// next reset, so every execution reads zero there. A module without a
/// dirty-page map (a declared maximum) gets no room: the access traps, as
/// on a fresh wasm instance.
const STRAY: &str = cell_module!(
    r#"
  (func (export "wasmrace_test_stray")
    (local $c i64) (local $end i32)
    (local.set $c (call $cell_new (i64.const 0) (i32.const 0)))
    (local.set $end (i32.add (i32.mul (memory.size) (i32.const 65536)) (i32.const 8)))
    (if (i64.ne (i64.load (local.get $end)) (i64.const 0)) (then unreachable))
    (i64.store (local.get $end) (i64.const 7))
    (drop (call $cell_get (local.get $c) (i32.const 0))))
"#
);

#[test]
fn a_stray_write_past_the_guests_memory_never_outlives_its_execution() {
    let tracked = load_wat("stray", STRAY).unwrap();
    let mut p = tracked.program("stray").unwrap();
    for execution in 0..4 {
        p.reset().unwrap();
        while matches!(p.status(), Status::Running) {
            let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
            p.step(Decision::new(t, 0)).unwrap();
        }
        assert!(
            matches!(p.status(), Status::Finished),
            "execution {execution}: {:?}",
            p.status()
        );
    }
    let max = STRAY.replace(
        "(memory (export \"memory\") 2)",
        "(memory (export \"memory\") 2 100)",
    );
    let untracked = load_wat("stray-max", &max).unwrap();
    let mut p = untracked.program("stray").unwrap();
    while matches!(p.status(), Status::Running) {
        let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
    }
    let Status::Failed(f) = p.status() else {
        panic!("the access past memory did not trap: {:?}", p.status());
    };
    assert_eq!(f.kind, FailureKind::Trap, "{f:?}");
}

#[test]
fn a_stack_too_deep_for_the_asyncify_buffer_names_the_flag() {
    // No room at all: the first unwind (which the wasm hook wrapper starts,
    // unseen by the host) writes past the buffer's end, into the stack
    // pages of the thread's slot, which the host otherwise takes for zero.
    let config = HostConfig {
        asyncify_buffer_bytes: 0,
        ..config("tiny-asyncify")
    };
    let guest = Guest::load(&wasmrace_fixtures::path("sdk_smoke"), config).unwrap();
    let mut p = guest.program("bench_two_by_ten").unwrap();
    for _ in 0..100 {
        if !matches!(p.status(), Status::Running) {
            break;
        }
        let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
    }
    let Status::Failed(f) = p.status() else {
        panic!("expected a failure, got {:?}", p.status());
    };
    assert_eq!(f.kind, FailureKind::Trap, "{f:?}");
    assert!(
        f.message.contains("Asyncify buffer") && f.message.contains("--asyncify-buffer-kib"),
        "{}",
        f.message
    );
    // A reset must still bring back the start state exactly: no page it
    // takes for zero holds what the overflow wrote.
    p.reset().unwrap();
    p.verify_known_zero().unwrap();
}

/// A saved snapshot's size, which the explorer charges against
/// `--saved-snapshots-mb`, counts what it holds besides page data: a page
/// table entry per 4 KiB of memory, and the `World` clone, which grows with
/// the threads.
#[test]
fn snapshot_size_counts_more_than_pages() {
    let guest = Guest::load(
        &wasmrace_fixtures::path("world_hello"),
        config("snap-bytes"),
    )
    .unwrap();
    let mut p = guest.program("world_hello_100").unwrap();
    let mut extra = Vec::new();
    for step in 1..=90 {
        let t = p.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
        p.step(Decision::new(t, 0)).unwrap();
        if step % 30 == 0 {
            let s = p.snapshot().unwrap().unwrap();
            let beyond_pages = p.snapshot_bytes(&s) - s.stored_bytes();
            assert!(
                beyond_pages >= s.memory_bytes() / 4096 * 8,
                "{beyond_pages}"
            );
            extra.push((p.threads().len(), beyond_pages));
        }
    }
    let ((t0, e0), (t1, e1)) = (extra[0], extra[2]);
    assert!(t1 >= t0 + 50, "{extra:?}");
    // At least 100 bytes per thread more (a thread's record alone is more).
    assert!(e1 - e0 >= (t1 - t0) * 100, "{extra:?}");
}

/// `choose(-1)` straight through the hook (the SDK's `choose` refuses it,
/// a hand-written guest need not): once an abort of the host (DFS
/// allocated 34 GB for 2^32 - 1 alternatives), now an api-misuse failure
/// of the execution, under the default portfolio and unbounded DFS alike.
#[test]
fn choose_of_minus_one_is_misuse_not_a_host_abort() {
    let g = load_wat(
        "choose-minus-one",
        r#"
(module
  (import "wasmrace" "choose" (func $choose (param i32 i32) (result i32)))
  (global $sp (mut i32) (i32.const 65536))
  (memory (export "memory") 2)
  (func (export "wasmrace_test_t")
    (drop (call $choose (i32.const -1) (i32.const 0)))))
"#,
    )
    .unwrap();
    for opts in [
        CheckOptions::default(),
        CheckOptions {
            strategy: StrategyChoice::named("dfs").with(&StrategyOptions {
                preemption_bound: Some(None),
                ..StrategyOptions::NONE
            }),
            ..CheckOptions::default()
        },
    ] {
        let out = check(&g, "t", &opts).unwrap();
        let bug = out.bug.expect("choose(-1) fails the execution");
        assert_eq!(bug.failure.kind, FailureKind::Misuse);
        assert!(
            bug.failure.message.contains("`65536`"),
            "{}",
            bug.failure.message
        );
    }
}

/// `log` through a pointer outside memory was ignored while exploring but
/// api misuse while tracing: exploring went on to another failure, whose
/// schedule then neither traced nor replayed as found. Now it is misuse in
/// every mode: the failure explored is the one traced and replayed.
#[test]
fn a_bad_log_pointer_is_misuse_while_exploring_tracing_and_replaying() {
    let g = load_wat(
        "bad-log-pointer",
        r#"
(module
  (import "wasmrace" "log" (func $log (param i32 i32)))
  (import "wasmrace" "choose" (func $choose (param i32 i32) (result i32)))
  (global $sp (mut i32) (i32.const 65536))
  (memory (export "memory") 2)
  (func (export "wasmrace_test_t")
    (if (call $choose (i32.const 2) (i32.const 0))
      (then
        (call $log (i32.const -16) (i32.const 64))
        (drop (call $choose (i32.const 2) (i32.const 0)))
        (unreachable)))))
"#,
    )
    .unwrap();
    let out = check(&g, "t", &CheckOptions::default()).unwrap();
    let bug = out.bug.expect("the bad pointer fails the execution");
    assert_eq!(bug.failure.kind, FailureKind::Misuse, "{:?}", bug.failure);
    assert!(
        bug.failure.message.contains("outside guest memory"),
        "{}",
        bug.failure.message
    );
    // Exploring stopped where tracing does: one decision, the `choose`.
    assert_eq!(bug.schedule.steps.len(), 1, "{:?}", bug.schedule.steps);
    assert_eq!(bug.schedule.failure.as_ref(), Some(&bug.failure));
    let replayed = wasmrace_host::replay(&g, &bug.schedule, 100).unwrap();
    assert!(
        replayed.reproduces(&bug.schedule),
        "{:?} vs {:?}",
        replayed.failure,
        bug.failure
    );
}

/// Two threads writing a heap of their own through plain stores (one
/// unaligned across a page boundary), `memory.fill` and `memory.copy`,
/// with scheduling points between, and main writing a page it grew: every
/// way a guest writes memory without a hook, for the dirty-page map.
const HEAP_WRITER: &str = r#"
(module
  (import "wasmrace" "spawn" (func $spawn (param i32 i32) (result i64)))
  (import "wasmrace" "join" (func $join (param i64 i32)))
  (import "wasmrace" "cell_new" (func $cell_new (param i64 i32) (result i64)))
  (import "wasmrace" "cell_get" (func $cell_get (param i64 i32) (result i64)))
  (import "wasmrace" "cell_set" (func $cell_set (param i64 i64 i32)))
  (global $sp (mut i32) (i32.const 65536))
  (global $cell (mut i64) (i64.const 0))
  (memory (export "memory") 2)
  (func (export "__wasmrace_thread_start") (param $arg i32)
    (local $base i32) (local $v i64)
    (local.set $base (i32.add (i32.const 0x10000) (i32.mul (local.get $arg) (i32.const 0x4000))))
    (local.set $v (call $cell_get (global.get $cell) (i32.const 0)))
    (i64.store offset=8 (local.get $base) (i64.add (local.get $v) (i64.const 1)))
    (i64.store offset=0xffc (local.get $base) (i64.const -1))
    (drop (call $cell_get (global.get $cell) (i32.const 0)))
    (memory.fill (i32.add (local.get $base) (i32.const 0x1800))
      (i32.wrap_i64 (i64.add (local.get $v) (i64.const 7))) (i32.const 0x1900))
    (call $cell_set (global.get $cell) (i64.add (local.get $v) (i64.const 1)) (i32.const 0))
    (memory.copy (i32.add (local.get $base) (i32.const 0x3000)) (local.get $base) (i32.const 0x1000))
    (i32.store8 offset=0x2fff (local.get $base) (i32.wrap_i64 (local.get $v)))
    (drop (call $cell_get (global.get $cell) (i32.const 0))))
  (func (export "wasmrace_test_heap")
    (local $a i64) (local $b i64) (local $old i32)
    (global.set $cell (call $cell_new (i64.const 0) (i32.const 0)))
    (local.set $a (call $spawn (i32.const 1) (i32.const 0)))
    (local.set $b (call $spawn (i32.const 2) (i32.const 0)))
    (i32.store (i32.const 0x10010) (i32.const 5))
    (local.set $old (memory.grow (i32.const 1)))
    (if (i32.eq (local.get $old) (i32.const -1)) (then unreachable))
    (drop (call $cell_get (global.get $cell) (i32.const 0)))
    (i64.store (i32.mul (local.get $old) (i32.const 65536))
      (call $cell_get (global.get $cell) (i32.const 0)))
    (call $join (local.get $a) (i32.const 0))
    (call $join (local.get $b) (i32.const 0))))
"#;

/// Random executions of `p` that save states (snapshot and memory image)
/// at random steps and restore them, in random order, from wherever the
/// walk went: every restore and every reset must give back the saved (or
/// the start) memory and globals byte for byte, and the state hash, cached
/// page by page, must equal one computed from scratch after most steps and
/// the saved state's after every restore. Returns the most pages a
/// reset wrote through the dirty-page map, and whether every reset after
/// an execution that did not fail went through it.
fn restores_are_byte_exact(p: &mut wasmrace_host::WasmProgram, seed: u64) -> (usize, bool) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let start = p.memory_image();
    let start_hash = p.state_hash_uncached();
    let (mut most, mut tracked) = (0, true);
    let walk = |p: &mut wasmrace_host::WasmProgram, rng: &mut rand::rngs::SmallRng, n: usize| {
        for _ in 0..n {
            let en: Vec<_> = p
                .threads()
                .iter()
                .filter(|t| t.pending.enabled)
                .map(|t| t.tid)
                .collect();
            if !matches!(p.status(), Status::Running) || en.is_empty() {
                return;
            }
            let t = en[rng.random_range(0..en.len())];
            p.step(Decision::new(t, 0)).unwrap();
            // Not after every step: marks then accumulate between hashes.
            if !p.steps().is_multiple_of(3) {
                assert_eq!(
                    p.state_hash(),
                    Some(p.state_hash_uncached()),
                    "{}: the cached state hash differs after step {}",
                    p.test(),
                    p.steps()
                );
            }
        }
    };
    for execution in 0..8 {
        // A failed execution may have stopped a write's marking half-way:
        // the reset after it scans every page.
        let failed = matches!(p.status(), Status::Failed(_));
        p.reset().unwrap();
        if execution > 0 {
            match p.restored_pages() {
                Some(n) => most = most.max(n),
                None => tracked &= failed,
            }
        }
        assert!(
            p.memory_image() == start,
            "{}: reset {execution} is not the start state",
            p.test()
        );
        assert_eq!(
            p.state_hash(),
            Some(start_hash),
            "{}: reset {execution} hashes other than the start state",
            p.test()
        );
        let mut saved = Vec::new();
        while matches!(p.status(), Status::Running)
            && !p.threads().iter().all(|t| !t.pending.enabled)
        {
            if rng.random_range(0..3) == 0 {
                let hash = p.state_hash_uncached();
                saved.push((
                    p.snapshot().unwrap().unwrap(),
                    p.memory_image(),
                    p.steps(),
                    hash,
                ));
            }
            walk(p, &mut rng, 1);
        }
        while !saved.is_empty() {
            let (snap, image, step, hash) = saved.swap_remove(rng.random_range(0..saved.len()));
            p.restore(&snap).unwrap();
            assert!(
                p.memory_image() == image,
                "{}: execution {execution}, restore to step {step} is not exact",
                p.test()
            );
            assert_eq!(
                p.state_hash_uncached(),
                hash,
                "{}: execution {execution}, the restore to step {step} hashes otherwise",
                p.test()
            );
            assert_eq!(
                p.state_hash(),
                Some(hash),
                "{}: execution {execution}, the state hash after the restore to step {step}",
                p.test()
            );
            let n = rng.random_range(0..4);
            walk(p, &mut rng, n);
        }
    }
    (most, tracked)
}

/// The dirty-page map (instrumented stores, bulk writes, Asyncify's buffer,
/// the host's writes) makes restores write only what changed: checked
/// byte for byte against the saved states on a hand-written guest whose
/// threads write memory only through plain stores and bulk operations.
#[test]
fn restores_through_the_dirty_page_map_are_byte_exact_for_plain_heap_writes() {
    let g = load_wat("heap-writer", HEAP_WRITER).unwrap();
    let mut p = g.program("heap").unwrap();
    let (most, tracked) = restores_are_byte_exact(&mut p, 11);
    assert!(
        tracked,
        "a reset scanned every page instead of using the map"
    );
    assert!(
        most > 0,
        "no reset wrote a page: the heap writes were not seen"
    );
}

/// The same on fixtures written with the SDK (heap allocations, messages,
/// strings), and a reset after an execution that writes few pages writes
/// few pages, not the memory.
#[test]
fn restores_of_fixtures_are_byte_exact_and_write_only_changed_pages() {
    let cases = [
        ("sdk_smoke", "bench_two_by_ten", 16),
        ("lost_update", "lost_update_3", 24),
        ("mailbox_server", "mailbox_server", 64),
        ("world_hello", "world_hello_10", 64),
        ("sdk_smoke", "mailbox_selective", 64),
    ];
    for (seed, (program, test, bound)) in cases.into_iter().enumerate() {
        let g = Guest::load(
            &wasmrace_fixtures::path(program),
            config(&format!("dirty-{program}")),
        )
        .unwrap();
        let mut p = g.program(test).unwrap();
        let (most, tracked) = restores_are_byte_exact(&mut p, seed as u64);
        assert!(tracked, "{test}: a reset scanned every page");
        assert!(
            (1..=bound).contains(&most),
            "{test}: a reset wrote {most} pages, expected 1 to {bound}"
        );
    }
}
