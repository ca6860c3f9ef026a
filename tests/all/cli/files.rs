//! The rule for every file wasmrace reads or writes (docs/files.md), per
//! command, each case a regression of issue 42: inputs are regular files
//! under a cap (one error line, at once); outputs never replace an input,
//! never go through a link, and never cost the report; one schedule per
//! report, also when runs share a folder; a merge is one run (settings
//! compared, counts checked); `--jobs` is bounded; everything shown is
//! escaped.

use super::{
    expect, expect_error, fixture, schedule_written, wasmrace, wasmrace_command, Run, TempDir,
};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `wasmrace` and fails the test, instead of hanging it, when the
/// command has not ended after 60 s (a FIFO opened for reading blocks
/// forever).
fn within_a_minute(dir: &Path, args: &[&str]) -> Run {
    let mut child = wasmrace_command(dir, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("`wasmrace {}` still runs after 60 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("wasmrace was killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// `lost_update.wasm` in `dir` and the schedule of its bug, as `check`
/// wrote it (unshrunk: a few steps more, so a truncation still parses).
fn module_and_schedule(dir: &Path) -> (String, String) {
    let m = fixture(dir, "lost_update");
    let check = wasmrace(dir, &["check", &m, "--test", "lost_update", "--no-shrink"]);
    expect(&check, 1);
    let schedule = schedule_written(&check.stdout);
    (m, schedule)
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stderr))
}

/// Item 1: `merge /dev/zero` grew to 24 GB; a 100 MB part was read whole.
#[test]
fn merge_reads_parts_under_a_cap_and_refuses_devices() {
    let dir = TempDir::new("files-part-cap");
    let huge = std::fs::File::create(dir.join("huge.json")).unwrap();
    huge.set_len(100 << 20).unwrap();
    expect_error(
        &within_a_minute(&dir, &["merge", "huge.json", "huge.json"]),
        "`huge.json` is 104857600 bytes, over the limit of 64 MiB for a part; raise --max-part-mb",
    );
    std::fs::write(dir.join("small.json"), " ".repeat(2 << 20)).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", "small.json", "--max-part-mb", "1"]),
        "over the limit of 1 MiB for a part; raise --max-part-mb",
    );
    if Path::new("/dev/zero").exists() {
        expect_error(
            &within_a_minute(&dir, &["merge", "/dev/zero", "small.json"]),
            "cannot read `/dev/zero`: it is a device, not a regular file",
        );
    }
}

/// Item 2: `--jobs 100000` aborted on sigaltstack, `--jobs 4294967295` on
/// a 34 GB allocation, `bench --jobs 100000` took 54 s and 4.7 GB.
#[test]
fn jobs_are_capped_with_one_line_naming_the_flag() {
    let dir = TempDir::new("files-jobs");
    let m = fixture(&dir, "lost_update");
    for jobs in ["257", "30000", "100000", "10000000", "4294967295"] {
        for strategy in ["random", "dfs"] {
            expect_error(
                &wasmrace(&dir, &["check", &m, "--strategy", strategy, "--jobs", jobs]),
                &format!("`--jobs {jobs}` is over the maximum of 256 threads (MAX_JOBS)"),
            );
        }
        expect_error(
            &within_a_minute(&dir, &["bench", &m, "--jobs", jobs]),
            &format!("`--jobs {jobs}` is over the maximum of 256 threads"),
        );
    }
    expect_error(
        &wasmrace(&dir, &["check", &m, "--jobs", "99999999999999999999"]),
        "invalid value '99999999999999999999' for '--jobs <N>'",
    );
    // The maximum itself runs.
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--strategy",
            "random",
            "--jobs",
            "256",
            "--max-executions",
            "300",
        ],
    );
    expect(&run, 1);
}

/// Item 3: a FIFO as the schedule or a part hung forever.
#[cfg(unix)]
#[test]
fn a_fifo_as_any_input_is_one_error_line_at_once() {
    let dir = TempDir::new("files-fifo");
    let (m, _) = module_and_schedule(&dir);
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("fifo"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    for cmd in ["replay", "shrink", "bisect"] {
        expect_error(
            &within_a_minute(&dir, &[cmd, &m, "fifo"]),
            "schedule file `fifo` is a FIFO, not a regular file",
        );
    }
    expect_error(
        &within_a_minute(&dir, &["merge", "fifo", "fifo"]),
        "cannot read `fifo`: it is a FIFO, not a regular file",
    );
    expect_error(
        &within_a_minute(&dir, &["replay", &m, "."]),
        "schedule file `.` is a directory, not a regular file",
    );
}

/// Item 4: outputs replaced the module or the schedule they were made from.
#[test]
fn outputs_never_overwrite_an_input() {
    let dir = TempDir::new("files-inputs");
    let (m, s) = module_and_schedule(&dir);
    let module = std::fs::read(dir.join(&m)).unwrap();
    let schedule = std::fs::read(dir.join(&s)).unwrap();
    std::fs::hard_link(dir.join(&m), dir.join("same.wasm")).unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["check", &m, "--test", "lost_update", "--schedule-out", &m],
            "schedule file",
        ),
        (
            &["check", &m, "--test", "lost_update", "--html", &m],
            "html report",
        ),
        (
            &["check", &m, "--test", "lost_update", "--html", "same.wasm"],
            "html report",
        ),
        (&["shrink", &m, &s, "-o", &m], "shrunk schedule"),
        (&["shrink", &m, &s, "-o", &s], "shrunk schedule"),
        (&["bisect", &m, &s, "--html", &s], "html report"),
        (&["replay", &m, &s, "--html", "./same.wasm"], "html report"),
    ];
    for (args, what) in cases {
        let run = wasmrace(&dir, args);
        expect_error(&run, &format!("cannot write {what} `"));
        expect_error(&run, "it is a file this command reads");
    }
    assert_eq!(std::fs::read(dir.join(&m)).unwrap(), module);
    assert_eq!(std::fs::read(dir.join(&s)).unwrap(), schedule);
}

/// Item 5: partitions sharing one `--schedule-dir` all wrote one name, and
/// the merged report named a file holding another partition's bug; so did
/// concurrent checks. Each report's file now replays its own bug.
#[test]
fn runs_sharing_a_schedule_folder_each_name_their_own_bug() {
    let dir = TempDir::new("files-one-schedule");
    let m = fixture(&dir, "pos_example");
    let base = [
        "--strategy",
        "random",
        "--max-executions",
        "2000",
        "--no-shrink",
    ];
    let replays_its_bug = |bug: &Value| {
        let path = bug["schedule_path"].as_str().unwrap();
        let replay = wasmrace(&dir, &["replay", &m, path, "--json"]);
        expect(&replay, 1);
        assert_eq!(json(&replay)["trace"], bug["trace"], "{path}");
    };
    // Runs with other seeds into one folder, one after the other.
    let bugs: Vec<Value> = ["1", "2", "3"]
        .iter()
        .map(|seed| {
            let args = [&["check", m.as_str(), "--json", "--seed", seed][..], &base].concat();
            let run = wasmrace(&dir, &args);
            expect(&run, 1);
            json(&run)["tests"][0]["bug"].clone()
        })
        .collect();
    assert_ne!(
        bugs[0]["trace"], bugs[1]["trace"],
        "seeds that find other bugs"
    );
    bugs.iter().for_each(replays_its_bug);
    // The partitions of one run into one folder, the merged bug's first.
    let single = wasmrace(
        &dir,
        &[&["check", m.as_str(), "--json"][..], &base].concat(),
    );
    let execution = json(&single)["tests"][0]["bug"]["execution"]
        .as_u64()
        .unwrap();
    let n = 3;
    let first = (execution - 1) % n + 1;
    let order = std::iter::once(first).chain((1..=n).filter(|k| *k != first));
    let mut files = Vec::new();
    for k in order {
        let part = format!("{k}/{n}");
        let args = [
            &["check", m.as_str(), "--json", "--partition", &part][..],
            &base,
        ]
        .concat();
        let run = wasmrace(&dir, &args);
        let file = format!("part{k}.json");
        std::fs::write(dir.join(&file), &run.stdout).unwrap();
        files.push(file);
    }
    let merge = wasmrace(
        &dir,
        &[
            &["merge", "--json"][..],
            &files.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    expect(&merge, 1);
    let bug = &json(&merge)["tests"][0]["bug"];
    assert_eq!(bug["partition"], first);
    replays_its_bug(bug);
}

/// Two partitions of one `check` run with these extra flags, as parts.
fn two_parts(dir: &Path, m: &str, first: &[&str], second: &[&str]) -> [String; 2] {
    let base = [
        "check",
        m,
        "--test",
        "lost_update",
        "--strategy",
        "random",
        "--json",
    ];
    let mut out = [String::new(), String::new()];
    for (i, extra) in [first, second].iter().enumerate() {
        let part = format!("{}/2", i + 1);
        let args = [&base[..], &["--partition", &part], extra].concat();
        let run = wasmrace(dir, &args);
        assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
        out[i] = format!("p{}.json", i + 1);
        std::fs::write(dir.join(&out[i]), &run.stdout).unwrap();
    }
    out
}

/// Item 6: a part run with `--fuel-per-step 300` merged with one at the
/// default; neither the host's bounds nor `--no-shrink` were recorded.
#[test]
fn merge_refuses_parts_run_under_different_settings() {
    let dir = TempDir::new("files-settings");
    let m = fixture(&dir, "lost_update");
    let cases: [(&[&str], &str); 5] = [
        (&["--fuel-per-step", "300"], "fuel_per_step"),
        (&["--max-memory-mb", "64"], "max_memory_bytes"),
        (&["--thread-stack-kib", "32"], "thread_stack_bytes"),
        (&["--asyncify-buffer-kib", "8"], "asyncify_buffer_bytes"),
        (&["--no-shrink"], "shrink_budget"),
    ];
    for (flags, name) in cases {
        let [a, b] = two_parts(&dir, &m, &[], flags);
        expect_error(
            &wasmrace(&dir, &["merge", &a, &b]),
            &format!("ran test `lost_update` with a different `{name}`"),
        );
    }
    let [a, b] = two_parts(
        &dir,
        &m,
        &["--max-host-memory-mb", "8"],
        &["--max-host-memory-mb", "8"],
    );
    let merged = wasmrace(&dir, &["merge", "--json", &a, &b]);
    assert_eq!(
        json(&merged)["tests"][0]["settings"]["max_host_bytes"],
        8 << 20
    );
    // A part that does not record them cannot be checked.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&b)).unwrap()).unwrap();
    doc["tests"][0]["partition"]
        .as_object_mut()
        .unwrap()
        .remove("settings");
    std::fs::write(dir.join(&b), doc.to_string()).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", &a, &b]),
        "does not record the settings test `lost_update` ran under",
    );
}

/// Minor: forged counts of `u64::MAX` twice merged to "no bug in
/// 18446744073709551614 executions".
#[test]
fn merge_refuses_counts_that_overflow() {
    let dir = TempDir::new("files-overflow");
    let m = fixture(&dir, "lost_update");
    let parts = two_parts(
        &dir,
        &m,
        &["--max-executions", "5"],
        &["--max-executions", "5"],
    );
    for p in &parts {
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(p)).unwrap()).unwrap();
        doc["tests"][0]["executions"] = u64::MAX.into();
        std::fs::write(dir.join(p), doc.to_string()).unwrap();
    }
    expect_error(
        &wasmrace(&dir, &["merge", &parts[0], &parts[1]]),
        "the parts' `executions` of test `lost_update` add up past 18446744073709551615",
    );
}

/// Minor: `merge --json` lacked fields `check --json` has.
#[test]
fn merge_json_has_every_field_of_check_json() {
    let dir = TempDir::new("files-merge-fields");
    let m = fixture(&dir, "lost_update");
    let parts = two_parts(&dir, &m, &[], &[]);
    let part: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&parts[0])).unwrap()).unwrap();
    let merged = json(&wasmrace(&dir, &["merge", "--json", &parts[0], &parts[1]]));
    let merged = merged["tests"][0].as_object().unwrap();
    for key in part["tests"][0].as_object().unwrap().keys() {
        if key != "partition" {
            assert!(merged.contains_key(key), "merge --json lacks `{key}`");
        }
    }
    for key in [
        "traces",
        "stopped_by",
        "exhausted_covers",
        "sleep_set_blocked",
    ] {
        assert!(merged.contains_key(key), "{key}");
    }
}

/// Item 7: a schedule's failure, a forged `module_blake3` and output names
/// holding terminal escapes reached the terminal raw.
#[test]
fn terminal_escapes_from_files_and_names_are_shown_escaped() {
    let dir = TempDir::new("files-escapes");
    let (m, s) = module_and_schedule(&dir);
    let raw = |run: &Run| {
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
        assert!(all.contains("\\u{1b}"), "escaped, not dropped: {all:?}");
    };
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&s)).unwrap()).unwrap();
    doc["failure"]["location"] = "\u{1b}]0;owned\u{7}x.rs:1:1\u{1b}[2J".into();
    doc["failure"]["message"] = "\u{1b}[2J wiped".into();
    std::fs::write(dir.join("odd.json"), doc.to_string()).unwrap();
    let replay = wasmrace(&dir, &["replay", &m, "odd.json"]);
    expect(&replay, 1);
    assert!(
        replay.stdout.contains("DIFFERENT FAILURE"),
        "{}",
        replay.stdout
    );
    raw(&replay);
    for cmd in ["shrink", "bisect"] {
        let run = wasmrace(&dir, &[cmd, &m, "odd.json"]);
        expect_error(&run, "does not reproduce");
        raw(&run);
    }
    // Names with escapes and line breaks, as outputs.
    let odd_out = "a\u{1b}[2Jb\nc.json";
    let shrink = wasmrace(&dir, &["shrink", &m, &s, "-o", odd_out]);
    expect(&shrink, 1);
    raw(&shrink);
    assert!(shrink
        .stdout
        .contains("shrunk schedule written to a\\u{1b}[2Jb\\nc.json\n"));
    let odd_dir = "sd\u{1b}]0;t\u{7}";
    let check = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--schedule-dir",
            odd_dir,
        ],
    );
    expect(&check, 1);
    raw(&check);
    // A forged module hash in a part.
    let parts = two_parts(&dir, &m, &[], &[]);
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&parts[1])).unwrap()).unwrap();
    doc["module_blake3"] = format!("\u{1b}]0;owned\u{7}{}", "f".repeat(100_000)).into();
    std::fs::write(dir.join(&parts[1]), doc.to_string()).unwrap();
    let merge = wasmrace(&dir, &["merge", &parts[0], &parts[1]]);
    expect_error(&merge, "are reports of different modules");
    raw(&merge);
    assert!(
        merge.stderr.len() < 1000,
        "one short line: {}",
        merge.stderr.len()
    );
}

/// Item 8: a link planted at a schedule's name made `check` write through
/// it, outside the schedule folder. It is now refused in the report (the
/// report printed, exit 2) and left as it is, its target untouched; so
/// are links named as other outputs (`/dev/stdout` among them).
#[cfg(unix)]
#[test]
fn a_link_at_an_outputs_name_is_refused_not_followed() {
    let dir = TempDir::new("files-symlink");
    let m = fixture(&dir, "lost_update");
    let args = ["check", &m, "--test", "lost_update", "--schedule-dir", "sd"];
    let first = wasmrace(&dir, &args);
    expect(&first, 1);
    let name = schedule_written(&first.stdout);
    std::fs::write(dir.join("victim"), "keep me").unwrap();
    std::fs::remove_file(dir.join(&name)).unwrap();
    std::os::unix::fs::symlink(dir.join("victim"), dir.join(&name)).unwrap();
    let again = wasmrace(&dir, &args);
    expect(&again, 2);
    assert!(
        again.stdout.contains("BUG found"),
        "the report: {}",
        again.stdout
    );
    assert!(
        again
            .stdout
            .contains("schedule not written: cannot write schedule file")
            && again.stderr.contains("it is a symbolic link"),
        "{}{}",
        again.stdout,
        again.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("victim")).unwrap(),
        "keep me"
    );
    assert!(std::fs::symlink_metadata(dir.join(&name))
        .unwrap()
        .is_symlink());
    let left: Vec<_> = std::fs::read_dir(dir.join("sd")).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
    // Named outputs: refused before the run.
    std::os::unix::fs::symlink(dir.join("victim"), dir.join("page.html")).unwrap();
    for out in [
        &["--html", "page.html"][..],
        &["--schedule-out", "page.html"],
    ] {
        let run = wasmrace(
            &dir,
            &[&["check", &m, "--test", "lost_update"][..], out].concat(),
        );
        expect_error(&run, "`page.html`: it is a symbolic link");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("victim")).unwrap(),
        "keep me"
    );
}

/// Minor: `shrink -o /dev/full` lost the shrink result. A device is now
/// refused before the shrink runs, and a write that fails after it
/// prints the report first (exit 2).
#[test]
fn a_shrink_that_cannot_be_written_keeps_its_report() {
    let dir = TempDir::new("files-shrink-write");
    let (m, s) = module_and_schedule(&dir);
    if Path::new("/dev/full").exists() {
        expect_error(
            &wasmrace(&dir, &["shrink", &m, &s, "-o", "/dev/full"]),
            "cannot write shrunk schedule `/dev/full`: it is a device",
        );
    }
    let run = wasmrace(&dir, &["shrink", &m, &s, "-o", "no-such-dir/small.json"]);
    expect(&run, 2);
    assert!(run.stdout.contains("\nafter:    "), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("shrunk schedule not written: cannot write shrunk schedule"),
        "{}",
        run.stdout
    );
    assert!(run
        .stderr
        .starts_with("error: cannot write shrunk schedule `no-such-dir/small.json`"));
    // check --json with an --html page that cannot be written: the JSON
    // document is printed, then the error.
    let check = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--json",
            "--html",
            "no-such-dir/r.html",
        ],
    );
    expect(&check, 2);
    assert_eq!(json(&check)["tests"][0]["test"], "lost_update");
    assert!(
        check.stderr.starts_with("error: cannot write html report"),
        "{}",
        check.stderr
    );
}

/// Minors: flag values that were accepted, or refused in wrong words.
#[test]
fn flag_values_are_refused_in_their_own_words() {
    let dir = TempDir::new("files-flags");
    let (m, s) = module_and_schedule(&dir);
    expect_error(
        &wasmrace(&dir, &["bisect", &m, &s, "--samples", "0"]),
        "`--samples` must be at least 1",
    );
    expect_error(
        &wasmrace(&dir, &["check", &m, "--partition", "1/99999999999"]),
        "(1 <= K <= N <= 4294967295",
    );
    // 4 billion cells planned in memory; an overflow panic.
    expect_error(
        &within_a_minute(&dir, &["bench", &m, "--seeds", "4294967295"]),
        "`--seeds 4294967295` is over the maximum of 10000",
    );
    let run = within_a_minute(
        &dir,
        &[
            "bench",
            &m,
            "--executions",
            "18446744073709551615",
            "--time-budget",
            "1",
            "--seeds",
            "1",
            "--strategies",
            "random",
        ],
    );
    expect(&run, 0);
    // A 34 GB allocation and an abort (exit 134).
    expect_error(
        &wasmrace(
            &dir,
            &["check", &m, "--strategy", "pct", "--depth", "4294967295"],
        ),
        "`--depth` is at most 10000",
    );
}
