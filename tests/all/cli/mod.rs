//! End-to-end tests of the `wasmrace` binary on the fixture guests: exit
//! codes, report text (one snapshot), determinism, JSON, replay round trips
//! and one-line errors. Each test runs in its own directory with the fixture
//! copied in, so printed paths are short and machine-independent, and uses a
//! module cache under target/ rather than the user's ~/.cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod bench;
mod odd_modules;
mod std_runner;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A fresh, empty directory for one test, removed when the test passes and
/// kept for inspection when it fails.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("wasmrace-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Copies fixture `name` into `dir` as `<name>.wasm` and returns that file
/// name, relative to `dir`.
fn fixture(dir: &Path, name: &str) -> String {
    let file = format!("{name}.wasm");
    std::fs::copy(wasmrace_fixtures::path(name), dir.join(&file)).unwrap();
    file
}

/// The `wasmrace` binary, built once per test run.
///
/// Cargo hands a test the path of a binary (`CARGO_BIN_EXE_<name>`) only
/// for binaries of the test's own package, and a dependency on another
/// package's binary (an artifact dependency) is not stable; a
/// dev-dependency on `wasmrace-cli` would build its library, of which it
/// has none. So the first test that runs the binary builds it: `cargo build
/// -p wasmrace-cli --bin wasmrace` with the cargo that built these tests,
/// their profile and their target dir (nothing to do when it is fresh), and
/// takes it from that profile's directory, the one this test executable's
/// `deps/` is in. `$WASMRACE_BIN` names a binary to use instead, and skips
/// the build (a cross build, a binary under test from elsewhere).
fn wasmrace_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("WASMRACE_BIN") {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("the test executable's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test executable is in <target dir>/<profile>/deps");
        let target_dir = profile_dir.parent().expect("a target dir");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args([
                "build",
                "--quiet",
                "--package",
                "wasmrace-cli",
                "--bin",
                "wasmrace",
            ])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir);
        match profile_dir.file_name().and_then(|p| p.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cargo.arg("--release");
            }
            Some(profile) => {
                cargo.args(["--profile", profile]);
            }
            None => panic!("no profile directory in {}", exe.display()),
        }
        let status = cargo.status().expect("cannot run cargo");
        assert!(status.success(), "building the wasmrace binary failed");
        let bin = profile_dir.join(format!("wasmrace{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "no wasmrace binary at {}", bin.display());
        bin
    })
}

/// `PATH` with the binary's folder first, as after `cargo install`: the
/// printed commands then say `wasmrace` (see
/// `reproduce_with_runs_as_printed_when_wasmrace_is_not_on_path`).
fn path_with_wasmrace() -> std::ffi::OsString {
    let bin_dir = wasmrace_bin().parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&rest))).unwrap()
}

fn wasmrace_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = wasmrace_command(dir, args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code().expect("wasmrace was killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The `wasmrace` command every test runs: in `dir`, with the binary's
/// folder on `PATH` and the tests' module cache.
fn wasmrace_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(wasmrace_bin());
    cmd.env("PATH", path_with_wasmrace());
    cmd.args(args)
        .current_dir(dir)
        .env(
            "WASMRACE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasmrace-cache"),
        )
        .env_remove("WASMRACE_WASM_OPT")
        // The default suite directory is the fixtures' build output.
        .env_remove("WASMRACE_SUITE_DIR");
    cmd
}

fn wasmrace(dir: &Path, args: &[&str]) -> Run {
    wasmrace_env(dir, args, &[])
}

/// The one schedule file `check` wrote for `stem_test` (`<module
/// stem>.<test>`) in `folder` under `dir`, as `folder/<name>`: default
/// names carry 8 hex digits of their contents (`report::schedule_tag`), so
/// that runs sharing a folder never name each other's files.
fn schedule_in(dir: &Path, folder: &str, stem_test: &str) -> String {
    let names: Vec<String> = std::fs::read_dir(dir.join(folder))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| {
            let tag = n
                .strip_prefix(stem_test)
                .and_then(|r| r.strip_prefix('.'))
                .and_then(|r| r.strip_suffix(".schedule.json"));
            tag.is_some_and(|t| t.len() == 8 && t.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .collect();
    assert_eq!(names.len(), 1, "{stem_test} in {folder}: {names:?}");
    format!("{folder}/{}", names[0])
}

/// The schedule file a `check` report names (`schedule written to ...`).
fn schedule_written(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("schedule written to "))
        .unwrap_or_else(|| panic!("no schedule written in {stdout}"))
        .to_string()
}

fn expect(run: &Run, code: i32) {
    assert_eq!(
        run.code, code,
        "exit code\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout, run.stderr
    );
}

/// Stdout without the wall-clock lines, which are documented to be the only
/// ones that differ between identical runs.
fn without_timing(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| !l.starts_with("time:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The interleaving lines: everything after the `interleaving, ...` header
/// up to the next blank line.
fn trace_lines(stdout: &str) -> Vec<String> {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with("interleaving, "));
    assert!(lines.next().is_some(), "no interleaving in:\n{stdout}");
    lines
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Exit 2, nothing on stdout, and exactly one stderr line, `error: ...`.
fn expect_error(run: &Run, needle: &str) {
    expect(run, 2);
    assert_eq!(run.stdout, "", "stdout of a failed command");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr is not one line:\n{}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "`{needle}` not in: {}", lines[0]);
}

#[test]
fn lost_update_bug_is_written_and_replays_identically() {
    let dir = TempDir::new("roundtrip");
    let m = fixture(&dir, "lost_update");
    let check = wasmrace(&dir, &["check", &m, "--test", "lost_update"]);
    expect(&check, 1);
    assert!(check
        .stdout
        .starts_with("test `lost_update` (portfolio: dpor, then dfs with preemption bound 2, then pos, pct, random; seed 0): BUG found in execution "));
    // The portfolio's opening DPOR finds it; the report says which member.
    assert!(
        check
            .stdout
            .contains("found by: dpor (member of the portfolio)\n"),
        "{}",
        check.stdout
    );
    assert!(check.stdout.contains("failure:  panic in thread `main`\n"));
    assert!(check.stdout.contains("an increment was lost"));
    let schedule = schedule_in(&dir, "wasmrace-schedules", "lost_update.lost_update");
    let schedule = schedule.as_str();
    assert!(dir.join(schedule).is_file());
    assert!(check
        .stdout
        .contains(&format!("schedule written to {schedule}\n")));
    let command = format!("wasmrace replay {m} {schedule}");
    assert!(check
        .stdout
        .contains(&format!("reproduce with: {command}\n")));
    let trace = trace_lines(&check.stdout);
    assert!(
        trace.iter().any(|l| l.starts_with('*')),
        "no preemption: {trace:?}"
    );

    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let replay = wasmrace(&dir, &args);
    expect(&replay, 1);
    assert_eq!(trace_lines(&replay.stdout), trace);
    assert!(replay
        .stdout
        .contains("reproduced: panic in thread `main`: assertion `left == right` failed: an increment was lost"));

    // The same file, asked for as the wrong test, is refused.
    let wrong = wasmrace(&dir, &["replay", &m, schedule, "--test", "lost_update_3"]);
    expect_error(&wrong, "is for test `lost_update`, not `lost_update_3`");
}

#[test]
fn a_schedule_that_does_not_fail_says_not_reproduced() {
    let dir = TempDir::new("notrepro");
    let m = fixture(&dir, "lost_update");
    expect(&wasmrace(&dir, &["check", &m, "--test", "lost_update"]), 1);
    let schedule = schedule_in(&dir, "wasmrace-schedules", "lost_update.lost_update");
    let path = dir.join(&schedule);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // One thread at a time: no lost update. The recorded failure stays in
    // the file, so replay must notice it did not come back. The serial
    // order first stops one step short of main's exit (a divergence), then
    // runs to the end.
    let mut serial = vec![
        "main", "main", "main", "main.1", "main.1", "main.1", "main.2", "main.2", "main.2", "main",
        "main", "main",
    ];
    for expected in [
        "DIVERGED at step 13: the schedule ended but the execution is still running (enabled: main)",
        "NOT REPRODUCED: the schedule ran to completion without a failure",
    ] {
        doc["steps"] = serial
            .iter()
            .map(|t| serde_json::json!({ "thread": t }))
            .collect();
        std::fs::write(&path, doc.to_string()).unwrap();
        let replay = wasmrace(&dir, &["replay", &m, &schedule]);
        expect(&replay, 0);
        assert!(replay.stdout.contains(expected), "{}", replay.stdout);
        assert!(replay.stdout.contains("NOT REPRODUCED"), "{}", replay.stdout);
        assert!(!replay.stdout.contains("reproduced:"), "{}", replay.stdout);
        serial.push("main");
    }
}

#[test]
fn same_seed_and_options_print_the_same_report() {
    let dir = TempDir::new("determinism");
    let lost = fixture(&dir, "lost_update");
    let counter = fixture(&dir, "mutex_counter");
    let runs: [&[&str]; 3] = [
        &["check", &lost],
        &[
            "check",
            &lost,
            "--strategy",
            "random",
            "--seed",
            "7",
            "--max-executions",
            "300",
        ],
        &[
            "check",
            &counter,
            "--strategy",
            "random",
            "--seed",
            "3",
            "--max-executions",
            "200",
        ],
    ];
    for args in runs {
        let a = wasmrace(&dir, args);
        let b = wasmrace(&dir, args);
        assert!(a.code == 0 || a.code == 1, "{args:?}: {}", a.stderr);
        assert_eq!(a.code, b.code, "{args:?}");
        assert_eq!(
            without_timing(&a.stdout),
            without_timing(&b.stdout),
            "{args:?}"
        );
        assert_eq!(
            a.stdout.lines().filter(|l| l.starts_with("time:")).count(),
            a.stdout.lines().filter(|l| l.starts_with("test `")).count(),
            "one timing line per test: {}",
            a.stdout
        );
    }
    let random = wasmrace(
        &dir,
        &[
            "check",
            &counter,
            "--test",
            "mutex_counter",
            "--strategy",
            "random",
            "--max-executions",
            "50",
        ],
    );
    expect(&random, 0);
    assert!(
        random.stdout.starts_with(
            "test `mutex_counter` (random, seed 0): no bug in 50 executions \
         (not exhausted: stopped by --max-executions 50; raise it to explore further)\n"
        ),
        "{}",
        random.stdout
    );
}

/// Drops every `elapsed_ms`, the one field documented to vary.
fn without_elapsed(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove("elapsed_ms");
            m.values_mut().for_each(without_elapsed);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_elapsed),
        _ => {}
    }
}

#[test]
fn json_is_one_document_with_the_report_fields() {
    let dir = TempDir::new("json");
    let m = fixture(&dir, "lost_update");
    let args = [
        "check",
        &m,
        "--json",
        "--strategy",
        "random",
        "--seed",
        "1",
        "--max-executions",
        "500",
    ];
    let a = wasmrace(&dir, &args);
    expect(&a, 1);
    assert_eq!(a.stderr, "");
    let mut doc: serde_json::Value = serde_json::from_str(&a.stdout).unwrap();
    assert_eq!(doc["module"], m.as_str());
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2);
    let t = &tests[0];
    assert_eq!(t["test"], "lost_update");
    assert_eq!(t["strategy"], "random");
    assert_eq!(t["seed"], 1);
    assert!(t["executions"].as_u64().unwrap() >= 1);
    assert_eq!(t["exhausted"], false);
    assert!(t["bound_hits"].is_array());
    assert!(t["elapsed_ms"].is_u64());
    let bug = &t["bug"];
    assert_eq!(bug["failure"]["kind"], "panic");
    assert_eq!(bug["failure"]["thread"], "main");
    assert!(bug["trace"].as_array().unwrap().len() > 5);
    let schedule = bug["schedule_path"].as_str().unwrap();
    assert_eq!(
        schedule,
        schedule_in(&dir, "wasmrace-schedules", "lost_update.lost_update")
    );
    assert!(dir.join(schedule).is_file());
    assert_eq!(bug["reproduce"], format!("wasmrace replay {m} {schedule}"));

    let replay = wasmrace(&dir, &["replay", &m, schedule, "--json"]);
    expect(&replay, 1);
    let r: serde_json::Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!(r["reproduced"], true);
    assert_eq!(r["trace"], bug["trace"]);

    let mut b: serde_json::Value = serde_json::from_str(&wasmrace(&dir, &args).stdout).unwrap();
    without_elapsed(&mut doc);
    without_elapsed(&mut b);
    assert_eq!(doc, b);
}

#[test]
fn mutex_counter_has_no_bug_within_the_bound() {
    let dir = TempDir::new("nobug");
    let m = fixture(&dir, "mutex_counter");
    // DFS alone: the portfolio would go on sampling after the bounded DFS.
    let run = wasmrace(
        &dir,
        &["check", &m, "--test", "mutex_counter", "--strategy", "dfs"],
    );
    expect(&run, 0);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("test `mutex_counter` (dfs, preemption bound 2): no bug in "),
        "{first}"
    );
    assert!(first.contains("(space exhausted within preemption bound 2; raise it with --preemption-bound or use --unbounded)"), "{first}");
    assert!(
        run.stdout.lines().nth(1).unwrap().starts_with(
            "exhausted covers every interleaving of the SDK operations, \
             and data races on plain memory"
        ),
        "{}",
        run.stdout
    );
    // Without the detector, the proof says what it cannot see.
    let off = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_counter",
            "--strategy",
            "dfs",
            "--data-races",
            "off",
        ],
    );
    expect(&off, 0);
    assert!(
        off.stdout.lines().nth(1).unwrap().contains(
            "plain memory (statics, the heap, `Arc`, std's atomics) is not seen: --data-races off"
        ),
        "{}",
        off.stdout
    );
    assert!(run.stdout.lines().nth(2).unwrap().starts_with("time: "));
    assert_eq!(
        std::fs::read_dir(&*dir).unwrap().count(),
        1,
        "no schedule file is written"
    );
}

/// `--data-races report` goes on past races and lists each once: exit 1,
/// the head line counts them, the block and `--json` name both sites; one
/// test runs on one thread, so `--jobs 2` on one test and `--partition`
/// are refused.
#[test]
fn data_races_report_lists_every_race_and_exits_1() {
    let dir = TempDir::new("races-report");
    let m = fixture(&dir, "data_races");
    let args = [
        "check",
        &m,
        "--test",
        "loom_style",
        "--data-races",
        "report",
    ];
    let run = wasmrace(&dir, &args);
    expect(&run, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.contains("): 2 data races, no other bug in "),
        "{first}"
    );
    assert!(
        run.stdout
            .contains("\ndata races: 2 distinct (--data-races report: ")
            && run.stdout.contains("\n  1. at ")
            && run.stdout.contains("\n  2. at "),
        "{}",
        run.stdout
    );
    let json = wasmrace(&dir, &[&args[..], &["--json"]].concat());
    expect(&json, 1);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let races = doc["tests"][0]["data_races"].as_array().unwrap();
    assert_eq!(races.len(), 2, "{doc}");
    for r in races {
        assert!(r["location"].as_str().unwrap().contains(" and "), "{r}");
        assert!(
            r["message"].as_str().unwrap().contains("no happens-before"),
            "{r}"
        );
    }
    assert!(doc["tests"][0]["data_races_cut_at"].is_null());
    assert!(doc["tests"][0]["bug"].is_null());
    let jobs = wasmrace(&dir, &[&args[..], &["--jobs", "2"]].concat());
    expect_error(&jobs, "`--data-races report` runs each test on one thread");
    let part = wasmrace(&dir, &[&args[..], &["--partition", "1/2"]].concat());
    expect_error(&part, "drop --partition");
    // A correct test: exit 0 and no block.
    let clean = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "guarded_by_mutex",
            "--data-races",
            "report",
        ],
    );
    expect(&clean, 0);
    assert!(!clean.stdout.contains("data races:"), "{}", clean.stdout);
}

#[test]
fn philosophers_deadlock_lists_what_each_thread_waits_for() {
    let dir = TempDir::new("deadlock");
    let m = fixture(&dir, "philosophers");
    let run = wasmrace(&dir, &["check", &m]);
    expect(&run, 1);
    assert!(
        run.stdout.contains("failure:  deadlock\n"),
        "{}",
        run.stdout
    );
    let waiting: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| *l != "waiting:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    for p in ["main.1", "main.2", "main.3"] {
        let line = waiting
            .iter()
            .find(|l| l.trim_start().starts_with(&format!("{p} ")))
            .unwrap_or_else(|| panic!("{p} not in {waiting:?}"));
        assert!(line.contains("waits for `mutex main#"), "{line}");
        assert!(line.contains("held by `main."), "{line}");
    }
}

#[test]
fn bug_report_matches_the_snapshot() {
    let dir = TempDir::new("snapshot");
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(&dir, &["check", &m, "--test", "lost_update"]);
    expect(&run, 1);
    // The schedule's name holds a hash of its contents, which hold the
    // module's blake3: the snapshot does not depend on the toolchain's
    // exact bytes.
    let schedule = schedule_in(&dir, "wasmrace-schedules", "lost_update.lost_update");
    let tag = &schedule[schedule.len() - ".01234567.schedule.json".len()..][1..9];
    let actual = without_timing(&run.stdout).replace(tag, "TAG");
    let snapshot =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/cli/snapshots/check_lost_update.txt");
    if std::env::var_os("WASMRACE_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
        std::fs::write(&snapshot, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&snapshot).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with WASMRACE_BLESS=1 to create it",
            snapshot.display()
        )
    });
    assert!(
        actual == expected,
        "report differs from {} (WASMRACE_BLESS=1 rewrites it)\n--- expected\n{expected}\n--- actual\n{actual}",
        snapshot.display()
    );
}

#[test]
fn several_tests_with_schedule_out_get_one_file_each() {
    let dir = TempDir::new("several");
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(&dir, &["check", &m, "--schedule-out", "bug.json"]);
    expect(&run, 1);
    assert!(dir.join("bug.lost_update.json").is_file());
    assert!(dir.join("bug.lost_update_3.json").is_file());
    assert!(run.stdout.ends_with(
        "\n2 tests: 2 with a bug, 0 without (bugs in `lost_update`, `lost_update_3`)\n"
    ));
}

/// `racefuzzer` on a race-free test stops after its detection phase: it
/// once said only "not exhausted"; now the summary says the strategy ended
/// its own plan and its counters say why (no racing pair to direct).
#[test]
fn racefuzzer_says_why_it_stopped() {
    let dir = TempDir::new("racefuzzer-stop");
    let m = fixture(&dir, "mutex_counter");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_counter",
            "--strategy",
            "racefuzzer",
        ],
    );
    expect(&run, 0);
    assert!(
        run.stdout.contains(
            "no bug in 10 executions (not exhausted: the strategy ended its own plan)\n\
             detection executions: 10, racing pairs predicted: 0, directed executions: 0\n"
        ),
        "{}",
        run.stdout
    );
}

/// Module paths that name no wasm: a text file once got the validator's
/// `expected=[; 0x0, ...` message, a FIFO or `/dev/zero` never returned,
/// and a huge file was read whole. Each is now one line, exit 2.
#[test]
fn module_paths_that_are_not_wasm_files_are_one_error_line() {
    let dir = TempDir::new("not-wasm");
    std::fs::write(dir.join("notes.txt"), "hello, not wasm\n").unwrap();
    for cmd in ["check", "list"] {
        expect_error(
            &wasmrace(&dir, &[cmd, "notes.txt"]),
            "`notes.txt` is not a WebAssembly module: it does not start with wasm's magic number",
        );
    }
    std::fs::create_dir(dir.join("a-dir")).unwrap();
    expect_error(
        &wasmrace(&dir, &["check", "a-dir"]),
        "`a-dir` is not a regular file",
    );
    if Path::new("/dev/zero").exists() {
        expect_error(
            &wasmrace(&dir, &["check", "/dev/zero"]),
            "`/dev/zero` is not a regular file",
        );
    }
    // A FIFO with no writer: opening it would block forever.
    let fifo = dir.join("fifo.wasm");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        expect_error(
            &wasmrace(&dir, &["check", "fifo.wasm"]),
            "`fifo.wasm` is not a regular file",
        );
    }
    let big = std::fs::File::create(dir.join("big.wasm")).unwrap();
    big.set_len(2 << 20).unwrap();
    expect_error(
        &wasmrace(&dir, &["check", "big.wasm", "--max-module-mb", "1"]),
        "`big.wasm` is larger than the module size limit of `1` MiB; raise --max-module-mb",
    );
}

/// An unwritable `--schedule-out` once threw the whole bug report away
/// (exit 2, empty stdout); now the report is printed, then the error.
#[test]
fn an_unwritable_schedule_out_still_prints_the_report() {
    let dir = TempDir::new("unwritable");
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--schedule-out",
            "no/such/dir/bug.json",
        ],
    );
    expect(&run, 2);
    assert!(
        run.stdout.contains("BUG found in execution"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("an increment was lost"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("schedule not written: cannot write schedule file `no/such/dir/bug.json`"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("reproduce with"), "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: cannot write schedule file"),
        "{}",
        lines[0]
    );
}

/// A minimal module importing WASI's `fd_write`, with a memory and a test,
/// so that the import audit is the only thing wrong with it.
fn wasi_module() -> Vec<u8> {
    fn name(s: &str) -> Vec<u8> {
        let mut v = vec![s.len() as u8];
        v.extend_from_slice(s.as_bytes());
        v
    }
    fn section(id: u8, body: Vec<u8>) -> Vec<u8> {
        assert!(body.len() < 128, "one-byte LEB128 lengths only");
        let mut v = vec![id, body.len() as u8];
        v.extend(body);
        v
    }
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    // Types: (i32 i32 i32 i32) -> i32 for fd_write, () -> () for the test.
    m.extend(section(
        1,
        vec![2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0],
    ));
    let mut import = vec![1];
    import.extend(name("wasi_snapshot_preview1"));
    import.extend(name("fd_write"));
    import.extend([0x00, 0]);
    m.extend(section(2, import));
    m.extend(section(3, vec![1, 1]));
    m.extend(section(5, vec![1, 0x00, 1]));
    let mut export = vec![2];
    export.extend(name("memory"));
    export.extend([0x02, 0]);
    export.extend(name("wasmrace_test_t"));
    export.extend([0x00, 1]);
    m.extend(section(7, export));
    m.extend(section(10, vec![1, 2, 0, 0x0b]));
    m
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let dir = TempDir::new("errors");
    let lost = fixture(&dir, "lost_update");
    let counter = fixture(&dir, "mutex_counter");

    let bytes = std::fs::read(dir.join(&lost)).unwrap();
    std::fs::write(dir.join("truncated.wasm"), &bytes[..100]).unwrap();
    expect_error(
        &wasmrace(&dir, &["check", "truncated.wasm"]),
        "`truncated.wasm` is not valid wasm",
    );
    expect_error(
        &wasmrace(&dir, &["list", "truncated.wasm"]),
        "`truncated.wasm` is not valid wasm",
    );

    std::fs::write(dir.join("wasi.wasm"), wasi_module()).unwrap();
    expect_error(
        &wasmrace(&dir, &["check", "wasi.wasm"]),
        "`wasi.wasm` is a std guest (it imports WASI) that wasmrace cannot run: it exports no `_start`",
    );

    expect_error(
        &wasmrace(&dir, &["check", &lost, "--test", "nope"]),
        "no test `nope` in `lost_update.wasm`; its tests are: `lost_update`, `lost_update_3`",
    );
    expect_error(
        &wasmrace(&dir, &["check", "missing.wasm"]),
        "cannot read `missing.wasm`",
    );
    expect_error(
        &wasmrace(&dir, &["replay", &lost, "missing.json"]),
        "cannot read schedule file `missing.json`",
    );

    std::fs::write(
        dir.join("corrupt.json"),
        "{\"format\": \"wasmrace-schedule\", \"steps\": [",
    )
    .unwrap();
    expect_error(
        &wasmrace(&dir, &["replay", &lost, "corrupt.json"]),
        "schedule file `corrupt.json` is not valid JSON",
    );
    std::fs::write(dir.join("foreign.json"), "{\"name\": \"package\"}").unwrap();
    expect_error(
        &wasmrace(&dir, &["replay", &lost, "foreign.json"]),
        "`foreign.json` is not a wasmrace schedule file",
    );

    expect(
        &wasmrace(&dir, &["check", &lost, "--test", "lost_update"]),
        1,
    );
    expect_error(
        &wasmrace(
            &dir,
            &[
                "replay",
                &counter,
                &schedule_in(&dir, "wasmrace-schedules", "lost_update.lost_update"),
            ],
        ),
        "schedule was recorded on a module with blake3",
    );

    expect_error(
        &wasmrace_env(
            &dir,
            &["check", &lost, "--no-cache"],
            &[("WASMRACE_WASM_OPT", "/nonexistent/wasm-opt")],
        ),
        "`wasm-opt` (Binaryen) is needed",
    );
    expect_error(
        &wasmrace(
            &dir,
            &[
                "check",
                &lost,
                "--strategy",
                "random",
                "--preemption-bound",
                "3",
            ],
        ),
        "only apply to `--strategy dfs`",
    );
}

#[test]
fn list_prints_the_tests_one_per_line() {
    let dir = TempDir::new("list");
    let m = fixture(&dir, "sdk_smoke");
    let run = wasmrace(&dir, &["list", &m]);
    expect(&run, 0);
    let tests: Vec<&str> = run.stdout.lines().collect();
    for t in ["atomic", "cell", "panics", "yield_now"] {
        assert!(tests.contains(&t), "{t} not in {tests:?}");
    }
    let mut sorted = tests.clone();
    sorted.sort();
    assert_eq!(tests, sorted);
    assert!(tests.iter().all(|t| !t.is_empty() && !t.contains(' ')));
}

#[test]
fn version_and_help() {
    let dir = TempDir::new("version");
    let v = wasmrace(&dir, &["--version"]);
    expect(&v, 0);
    assert_eq!(
        v.stdout,
        format!("wasmrace {}\n", env!("CARGO_PKG_VERSION"))
    );
    let h = wasmrace(&dir, &["check", "--help"]);
    expect(&h, 0);
    for flag in [
        "--preemption-bound",
        "--max-executions",
        "--fuel-per-step",
        "--time-budget",
        "Examples:",
    ] {
        assert!(h.stdout.contains(flag), "{flag} not in check --help");
    }
}

/// `--strategy ses|ss` and `--state-cache` (FSE 2015 delaying explorers).
mod delaying;
/// `--strategy dpor`'s reports.
mod dpor;
mod explain;
/// The rule for every file read or written (docs/files.md), per command.
mod files;
/// `--html`, rendered in headless Chromium.
mod html;
/// `check --partition K/N` in separate processes, and `wasmrace merge`.
mod partition;

/// A bug found under `--fuel-per-step 1000000` once replayed under the
/// default fuel and was reported as a DIFFERENT FAILURE. The schedule file
/// now records the settings the bug was found under, replay uses them
/// unless a flag is given, and says so; a file without them (written before
/// they were recorded) still loads and replays with the defaults.
#[test]
fn replay_uses_the_settings_recorded_in_the_schedule() {
    let dir = TempDir::new("replay-settings");
    let m = fixture(&dir, "sdk_smoke");
    let check = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "runaway",
            "--fuel-per-step",
            "1000000",
        ],
    );
    expect(&check, 1);
    assert!(
        check.stdout.contains("one step ran `1000000` instructions"),
        "{}",
        check.stdout
    );
    let schedule = schedule_in(&dir, "wasmrace-schedules", "sdk_smoke.runaway");
    assert!(
        check
            .stdout
            .contains(&format!("reproduce with: wasmrace replay {m} {schedule}\n")),
        "the settings are in the file, not on the command line: {}",
        check.stdout
    );
    let replay = wasmrace(&dir, &["replay", &m, &schedule]);
    expect(&replay, 1);
    assert!(
        replay
            .stdout
            .contains("using the schedule's --fuel-per-step 1000000\n"),
        "{}",
        replay.stdout
    );
    assert!(
        replay.stdout.contains("reproduced: fuel exhausted"),
        "{}",
        replay.stdout
    );
    // A flag overrides the file, and replay says so.
    let over = wasmrace(
        &dir,
        &[
            "replay",
            &m,
            &schedule,
            "--fuel-per-step",
            "2000000",
            "--json",
        ],
    );
    expect(&over, 1);
    let doc: serde_json::Value = serde_json::from_str(&over.stdout).unwrap();
    assert_eq!(
        doc["settings"][0],
        "--fuel-per-step 2000000 given: it overrides the schedule's --fuel-per-step 1000000"
    );
    assert_eq!(doc["reproduced"], false);
    // An old file: no settings, the defaults, the failure of old.
    let path = dir.join(schedule);
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("settings");
    std::fs::write(dir.join("old.json"), old.to_string()).unwrap();
    let replay = wasmrace(&dir, &["replay", &m, "old.json"]);
    expect(&replay, 1);
    assert!(
        !replay.stdout.contains("using the schedule's"),
        "{}",
        replay.stdout
    );
    assert!(
        replay.stdout.contains("DIFFERENT FAILURE"),
        "{}",
        replay.stdout
    );
}

/// A bug found under `--max-host-memory-mb 1` was only reproducible when
/// the user copied the flag from the printed command: the host-memory and
/// log bounds are now recorded in the schedule file like the other bounds,
/// and replay uses them.
#[test]
fn replay_uses_the_recorded_host_memory_bound() {
    let dir = TempDir::new("replay-host-memory");
    let m = fixture(&dir, "hostile");
    let args = ["check", &m, "--test", "big_messages"];
    let check = wasmrace(&dir, &[&args[..], &["--max-host-memory-mb", "1"]].concat());
    expect(&check, 1);
    let schedule = schedule_in(&dir, "wasmrace-schedules", "hostile.big_messages");
    assert!(
        check
            .stdout
            .contains(&format!("reproduce with: wasmrace replay {m} {schedule}\n")),
        "the bound is in the file, not on the command line: {}",
        check.stdout
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&schedule)).unwrap()).unwrap();
    assert_eq!(doc["settings"]["max_host_bytes"], 1 << 20);
    assert_eq!(doc["settings"]["max_log_bytes"], 1 << 20);
    let replay = wasmrace(&dir, &["replay", &m, &schedule]);
    expect(&replay, 1);
    assert!(
        replay
            .stdout
            .contains("using the schedule's --max-host-memory-mb 1\n"),
        "{}",
        replay.stdout
    );
    assert!(replay.stdout.contains("reproduced: "), "{}", replay.stdout);
}

/// Corrupt and hostile schedule files: each is one error line, exit 2,
/// without reading more than the size limit.
#[test]
fn hostile_schedule_files_are_one_error_line() {
    let dir = TempDir::new("hostile-schedules");
    let m = fixture(&dir, "lost_update");
    expect(&wasmrace(&dir, &["check", &m, "--test", "lost_update"]), 1);
    let good = std::fs::read_to_string(dir.join(schedule_in(
        &dir,
        "wasmrace-schedules",
        "lost_update.lost_update",
    )))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&good).unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut d = doc.clone();
        d[key] = value;
        d.to_string()
    };
    let long = "main.".repeat(200_000);
    let cases: Vec<(String, &str)> = vec![
        (good[..good.len() / 2].to_string(), "is not valid JSON"),
        (
            good.replace("\"seed\": 0", "\"seed\": 1e999"),
            "is not valid JSON",
        ),
        (with("seed", serde_json::json!(-1)), "is not valid JSON"),
        (
            with("steps", serde_json::json!({"thread": "main"})),
            "is not valid JSON",
        ),
        (
            with(
                "steps",
                serde_json::json!([{"thread": "main", "alt": 1u64 << 33}]),
            ),
            "is not valid JSON",
        ),
        (
            with("steps", serde_json::json!([{"thread": long}])),
            "is not a thread name",
        ),
        (with("steps", serde_json::json!(long)), "is not valid JSON"),
        (
            with("settings", serde_json::json!({"fuel_per_step": 0})),
            "records --fuel-per-step 0, which is out of range",
        ),
        (
            with(
                "settings",
                serde_json::json!({"thread_stack_bytes": 1u64 << 40}),
            ),
            "is not valid JSON",
        ),
        (
            with("version", serde_json::json!(u64::MAX)),
            "has format version",
        ),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let name = format!("h{i}.json");
        std::fs::write(dir.join(&name), text).unwrap();
        let run = wasmrace(&dir, &["replay", &m, &name]);
        expect_error(&run, needle);
        assert!(run.stderr.len() < 500, "{i}: {}", run.stderr);
    }
    // An enormous file is refused by its size, before it is read.
    let huge = std::fs::File::create(dir.join("huge.json")).unwrap();
    huge.set_len(100 << 20).unwrap();
    expect_error(
        &wasmrace(&dir, &["replay", &m, "huge.json"]),
        "is 104857600 bytes, over the limit",
    );
}

/// "reproduce with: wasmrace replay ..." did not run when `wasmrace` was
/// not on `PATH`. Now the printed command names the running binary then,
/// quoted for the shell (here in a folder with a space), and runs as
/// printed; so do schedule folders with spaces.
#[cfg(unix)]
#[test]
fn reproduce_with_runs_as_printed_when_wasmrace_is_not_on_path() {
    let dir = TempDir::new("reproduce-path");
    let m = fixture(&dir, "lost_update");
    let bin_dir = dir.join("my tools");
    std::fs::create_dir(&bin_dir).unwrap();
    let bin = bin_dir.join("wasmrace");
    std::fs::copy(wasmrace_bin(), &bin).unwrap();
    let run = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .current_dir(&*dir)
            .env("PATH", "/usr/bin:/bin")
            .env(
                "WASMRACE_CACHE_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasmrace-cache"),
            )
            .output()
            .unwrap()
    };
    let out = run(&[
        "check",
        &m,
        "--test",
        "lost_update",
        "--schedule-dir",
        "bug reports",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let command = stdout
        .lines()
        .find_map(|l| l.strip_prefix("reproduce with: "))
        .unwrap_or_else(|| panic!("no command in {stdout}"));
    let canonical = bin.canonicalize().unwrap();
    let schedule = schedule_in(&dir, "bug reports", "lost_update.lost_update");
    assert_eq!(
        command,
        format!("'{}' replay {m} '{schedule}'", canonical.display())
    );
    let replay = Command::new("sh")
        .args(["-c", command])
        .current_dir(&*dir)
        .env("PATH", "/usr/bin:/bin")
        .env(
            "WASMRACE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasmrace-cache"),
        )
        .output()
        .unwrap();
    let replay_out = String::from_utf8(replay.stdout).unwrap();
    assert_eq!(replay.status.code(), Some(1), "{replay_out}");
    assert!(replay_out.contains("reproduced: panic"), "{replay_out}");
    // `shrink`'s line follows the same rule (it printed a bare `wasmrace`).
    let out = run(&["shrink", &m, &schedule, "-o", "bug reports/small.json"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let command = stdout
        .lines()
        .find_map(|l| l.strip_prefix("reproduce with: "))
        .unwrap_or_else(|| panic!("no command in {stdout}"));
    assert_eq!(
        command,
        format!(
            "'{}' replay {m} 'bug reports/small.json'",
            canonical.display()
        )
    );
}

/// The default schedule folder is created when a bug needs it; where it
/// cannot be, the whole report is printed, then the error (exit 2).
#[test]
fn schedules_go_to_one_folder_created_on_demand() {
    let dir = TempDir::new("schedule-dir");
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(&dir, &["check", &m]);
    expect(&run, 1);
    let mut files: Vec<String> = std::fs::read_dir(dir.join("wasmrace-schedules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    for test in ["lost_update", "lost_update_3"] {
        let name = schedule_in(&dir, "wasmrace-schedules", &format!("lost_update.{test}"));
        assert!(files.contains(&name["wasmrace-schedules/".len()..].to_string()));
    }
    std::fs::write(dir.join("a-file"), "").unwrap();
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--schedule-dir",
            "a-file/sub",
        ],
    );
    expect(&run, 2);
    assert!(
        run.stdout.contains("an increment was lost"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("schedule not written: cannot create schedule folder `a-file/sub`"),
        "{}",
        run.stdout
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: cannot create schedule folder `a-file/sub`"),
        "{}",
        lines[0]
    );
}

/// A test with nothing to interleave once passed like any other. Now its
/// report says so (text and JSON), and an exhausted space says what it
/// covers; a test with threads gets no such line.
#[test]
fn a_pass_with_nothing_to_interleave_says_so() {
    let dir = TempDir::new("nothing-to-interleave");
    let m = fixture(&dir, "sdk_smoke");
    let cases = [
        ("log", Some("the test ran no scheduling point")),
        ("cell", Some("the test spawned no thread")),
        ("choose_range", Some("the test spawned no thread")),
        ("mutex_condvar", None),
    ];
    for (test, nothing) in cases {
        let args = ["check", &m, "--test", test, "--strategy", "dfs"];
        let run = wasmrace(&dir, &args);
        expect(&run, 0);
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with("nothing to interleave: "));
        assert_eq!(
            line,
            nothing
                .map(|n| format!("nothing to interleave: {n}"))
                .as_deref(),
            "{test}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains(
                "exhausted covers every interleaving of the SDK operations, and data races \
                 on plain memory (docs/data-races.md, \"What a pass covers\")\n"
            ),
            "{test}: {}",
            run.stdout
        );
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let run = wasmrace(&dir, &json_args);
        expect(&run, 0);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let t = &doc["tests"][0];
        assert_eq!(
            t["nothing_to_interleave"],
            serde_json::json!(nothing),
            "{test}"
        );
        assert!(
            t["exhausted_covers"]
                .as_str()
                .is_some_and(|c| c.starts_with("every interleaving of the SDK operations")),
            "{test}: {t}"
        );
    }
    // Not exhausted: nothing claimed.
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_condvar",
            "--strategy",
            "random",
            "--max-executions",
            "5",
            "--json",
        ],
    );
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["tests"][0]["exhausted_covers"], serde_json::Value::Null);
    assert_eq!(
        doc["tests"][0]["nothing_to_interleave"],
        serde_json::Value::Null
    );
}

/// `--strategy dpor --preemption-bound 2`: bounded partial-order
/// reduction. Where the bound pruned a reversal the report says which
/// bound and claims no proof; where it pruned none, the run proves every
/// trace. `--dpor optimal` with a bound is refused in one line.
#[test]
fn bounded_dpor_says_which_bound_pruned_it() {
    let dir = TempDir::new("bpor");
    let m = fixture(&dir, "work_steal_queue");
    let args = |test| {
        vec![
            "check",
            &m,
            "--test",
            test,
            "--strategy",
            "dpor",
            "--preemption-bound",
            "2",
        ]
    };
    let pruned = wasmrace(&dir, &args("work_steal_queue_fixed"));
    expect(&pruned, 0);
    let first = pruned.stdout.lines().next().unwrap();
    assert!(
        first.starts_with(
            "test `work_steal_queue_fixed` (dpor, source (bounded), preemption bound 2): no bug in "
        ),
        "{first}"
    );
    assert!(first.ends_with("(space exhausted within preemption bound 2; raise it with --preemption-bound or use --unbounded)"), "{first}");
    assert!(!first.contains("every trace"), "{first}");
    assert!(pruned.stdout.contains("reversals pruned by the bound: "));
    let mut json = args("work_steal_queue_fixed");
    json.push("--json");
    let doc: serde_json::Value = serde_json::from_str(&wasmrace(&dir, &json).stdout).unwrap();
    let doc = &doc["tests"][0];
    assert_eq!(doc["exhausted"], true);
    assert_eq!(
        doc["bound_hits"],
        serde_json::json!([{
            "bound": "preemptions",
            "value": 2,
            "flag": "--preemption-bound",
            "effect": "pruned the space",
        }])
    );
    assert_eq!(doc["options"]["dpor"], "source");
    assert_eq!(doc["options"]["preemption_bound"], 2);

    let m = fixture(&dir, "mutex_counter");
    let proof = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "dpor",
            "--preemption-bound",
            "2",
        ],
    );
    expect(&proof, 0);
    let first = proof.stdout.lines().next().unwrap();
    assert!(
        first.ends_with("(space exhausted: every trace (partial order) was explored)"),
        "{first}"
    );

    let refused = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "dpor",
            "--dpor",
            "optimal",
            "--preemption-bound",
            "2",
        ],
    );
    expect_error(
        &refused,
        "`--dpor optimal` does not take `--preemption-bound`: bounded dpor runs source-DPOR",
    );
}
