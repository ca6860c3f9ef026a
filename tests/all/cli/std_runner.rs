//! `wasmrace test` as cargo's runner and `wasmrace list` on std guests
//! (fixtures/std-guests): libtest's arguments keep their meaning, the
//! closing line is libtest's, and plain `cargo test --target
//! wasm32-wasip1-threads` on examples/std-counter finds its bug.

use super::{expect, expect_error, wasmrace, wasmrace_bin, wasmrace_env, TempDir};
use std::path::Path;

/// Copies std guest `name` into `dir` as `<name>.wasm`.
fn std_fixture(dir: &Path, name: &str) -> String {
    let file = format!("{name}.wasm");
    std::fs::copy(wasmrace_fixtures::std_path(name), dir.join(&file)).unwrap();
    file
}

#[test]
fn list_names_a_harness_tests_and_a_bin_main() {
    let dir = TempDir::new("std-list");
    let h = std_fixture(&dir, "std_harness");
    let run = wasmrace(&dir, &["list", &h]);
    expect(&run, 0);
    assert_eq!(
        run.stdout,
        "tests::fetch_add_is_atomic\ntests::ignored\ntests::lost_update\n"
    );
    let m = std_fixture(&dir, "std_mutex");
    let run = wasmrace(&dir, &["list", &m]);
    expect(&run, 0);
    assert_eq!(run.stdout, "main\n");
}

#[test]
fn test_takes_libtest_arguments_and_closes_with_libtest_line() {
    let dir = TempDir::new("std-test");
    let h = std_fixture(&dir, "std_harness");
    // Every test but the ignored one: one bug.
    let run = wasmrace(&dir, &["test", &h]);
    expect(&run, 1);
    assert!(
        run.stdout.contains("running 2 tests under wasmrace"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("an update was lost"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out;"
        ),
        "{}",
        run.stdout
    );
    // A filter, as libtest matches it.
    let run = wasmrace(&dir, &["test", &h, "fetch_add", "--nocapture"]);
    expect(&run, 0);
    assert!(
        run.stdout.contains(
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out;"
        ),
        "{}",
        run.stdout
    );
    let run = wasmrace(&dir, &["test", &h, "tests::lost", "--exact"]);
    expect(&run, 0);
    assert!(run
        .stdout
        .contains("0 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out"));
    // Only the ignored one, which runs (and panics).
    let run = wasmrace(&dir, &["test", &h, "--ignored"]);
    expect(&run, 1);
    assert!(run.stdout.contains("an ignored test ran"), "{}", run.stdout);
    // --list, as cargo test -- --list asks.
    let run = wasmrace(&dir, &["test", &h, "--list", "--format", "terse"]);
    expect(&run, 0);
    assert_eq!(
        run.stdout,
        "tests::fetch_add_is_atomic: test\ntests::ignored: test\ntests::lost_update: test\n"
    );
    // wasmrace's own options come from the environment.
    let env = [(
        "WASMRACE_CHECK_ARGS",
        "--strategy dfs --preemption-bound 1 --no-shrink",
    )];
    let run = wasmrace_env(&dir, &["test", &h, "lost_update"], &env);
    expect(&run, 1);
    assert!(
        run.stdout.contains("(dfs, preemption bound 1)"),
        "{}",
        run.stdout
    );
    let env = [("WASMRACE_CHECK_ARGS", "--strategy nope")];
    expect_error(
        &wasmrace_env(&dir, &["test", &h], &env),
        "WASMRACE_CHECK_ARGS",
    );
    expect_error(
        &wasmrace(&dir, &["test", &h, "--frobnicate"]),
        "--frobnicate",
    );
}

#[test]
fn cargo_test_with_wasmrace_as_runner_finds_the_std_counter_bug() {
    let dir = TempDir::new("std-cargo");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/std-counter");
    let runner = format!("{} test", wasmrace_bin().display());
    let out = std::process::Command::new(env!("CARGO"))
        .args(["test", "--release", "--target", "wasm32-wasip1-threads"])
        .arg("--manifest-path")
        .arg(example.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("std-counter"))
        .current_dir(&*dir)
        .env("CARGO_TARGET_WASM32_WASIP1_THREADS_RUNNER", runner)
        .env(
            "WASMRACE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasmrace-cache"),
        )
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "cargo test passed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("an increment was lost"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("test result: FAILED. 0 passed; 1 failed;"),
        "{stdout}"
    );
}

#[test]
fn a_test_binary_without_tests_passes_test_and_is_one_line_for_check() {
    // cargo runs every target's harness, a lib with no unit tests too:
    // libtest says `0 passed`, and so must the runner.
    let dir = TempDir::new("std-empty");
    std::fs::copy(wasmrace_fixtures::STD_EMPTY_HARNESS, dir.join("empty.wasm")).unwrap();
    let run = wasmrace(&dir, &["test", "empty.wasm"]);
    expect(&run, 0);
    assert!(
        run.stdout.contains(
            "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out;"
        ),
        "{}",
        run.stdout
    );
    expect_error(
        &wasmrace(&dir, &["check", "empty.wasm"]),
        "`empty.wasm` is a test harness with no test",
    );
}
