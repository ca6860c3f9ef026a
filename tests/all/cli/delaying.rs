//! `wasmrace check --strategy ses|ss` and `--state-cache`: the delaying
//! explorers' strategies from the command line, their report lines (states
//! explored, cache hits, where saved states were kept), replay of what they
//! find, and the flags' one-line errors.

use super::{expect, expect_error, fixture, wasmrace, without_timing, TempDir};

/// The value after `name: ` on the report's stats line.
fn stat(stdout: &str, name: &str) -> u64 {
    let needle = format!("{name}: ");
    let line = stdout
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no `{name}` in:\n{stdout}"));
    let rest = &line[line.find(&needle).unwrap() + needle.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `N` of `no bug in N executions`.
fn executions(stdout: &str) -> u64 {
    let rest = &stdout[stdout.find("no bug in ").expect(stdout) + 10..];
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn ses_exhausts_mutex_counter_with_the_states_dfs_with_a_state_cache_explores() {
    let dir = TempDir::new("ses-exhaust");
    let m = fixture(&dir, "mutex_counter");
    let test = ["check", &m, "--test", "mutex_counter_3"];
    // One thread saves the frontier's states (threads replay them).
    let ses = wasmrace(
        &dir,
        &[&test[..], &["--strategy", "ses", "--jobs", "1"]].concat(),
    );
    expect(&ses, 0);
    let first = ses.stdout.lines().next().unwrap();
    assert!(
        first.starts_with(
            "test `mutex_counter_3` (ses, explorer rtc, no delay bound, state cache 256 MiB): no bug in "
        ),
        "{first}"
    );
    assert!(
        first.ends_with("(space exhausted: every reachable state was explored)"),
        "{first}"
    );
    assert!(ses.stdout.contains("saved states: "), "{}", ses.stdout);
    let cached = wasmrace(
        &dir,
        &[
            &test[..],
            &["--strategy", "dfs", "--unbounded", "--state-cache"],
        ]
        .concat(),
    );
    expect(&cached, 0);
    assert!(cached
        .stdout
        .starts_with("test `mutex_counter_3` (dfs, unbounded, state cache 256 MiB): no bug in "));
    // Both visit every reachable state once.
    assert_eq!(
        stat(&ses.stdout, "states explored"),
        stat(&cached.stdout, "states explored")
    );
    // Without the cache, DFS runs every interleaving: many more.
    let plain = wasmrace(
        &dir,
        &[
            &test[..],
            &[
                "--strategy",
                "dfs",
                "--unbounded",
                "--max-executions",
                "5000",
            ],
        ]
        .concat(),
    );
    expect(&plain, 0);
    assert!(executions(&plain.stdout) > 4 * executions(&cached.stdout));
    assert!(!plain.stdout.contains("states explored"));
}

#[test]
fn ses_bug_replays_and_frontier_storage_does_not_change_the_run() {
    let dir = TempDir::new("ses-bug");
    let m = fixture(&dir, "mailbox_server");
    // One thread saves the frontier's states (threads replay them).
    let args = [
        "check",
        &m,
        "--strategy",
        "ses",
        "--explorer",
        "rr",
        "--jobs",
        "1",
    ];
    let run = wasmrace(&dir, &args);
    expect(&run, 1);
    assert!(run.stdout.contains(
        "(ses, explorer rr, no delay bound, state cache 256 MiB): BUG found in execution "
    ));
    assert!(run.stdout.contains("delay bound reached: "));
    let schedule = super::schedule_written(&run.stdout);
    let replay = wasmrace(&dir, &["replay", &m, &schedule]);
    expect(&replay, 1);
    // Saved states replayed from their prefixes instead of restored: the
    // same exploration, the same report, apart from where they were kept.
    let prefixes = wasmrace(&dir, &[&args[..], &["--max-saved-snapshots", "0"]].concat());
    expect(&prefixes, 1);
    let strip = |s: &str| -> String {
        without_timing(s)
            .lines()
            .filter(|l| !l.starts_with("saved states:"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_eq!(strip(&run.stdout), strip(&prefixes.stdout));
    assert!(
        prefixes.stdout.contains("(0 as snapshots, ")
            && prefixes.stdout.contains(
                "raise --max-saved-snapshots or --saved-snapshots-mb to keep more snapshots"
            ),
        "{}",
        prefixes.stdout
    );
    // The memory budget for saved snapshots is a knob of its own.
    let no_memory = wasmrace(&dir, &[&args[..], &["--saved-snapshots-mb", "0"]].concat());
    expect(&no_memory, 1);
    assert_eq!(strip(&no_memory.stdout), strip(&prefixes.stdout));
    assert!(
        no_memory.stdout.contains("(0 as snapshots, "),
        "{}",
        no_memory.stdout
    );
    assert!(
        run.stdout.contains("saved states: ") && !run.stdout.contains("(0 as snapshots, "),
        "the default budgets keep snapshots: {}",
        run.stdout
    );
}

#[test]
fn a_delay_bound_that_cuts_the_space_says_which_flag_raises_it() {
    let dir = TempDir::new("ses-bound");
    let m = fixture(&dir, "mutex_counter");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "ses",
            "--delay-bound",
            "1",
        ],
    );
    expect(&run, 0);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.contains("(ses, explorer rtc, delay bound 1, "),
        "{first}"
    );
    assert!(first.contains("--delay-bound"), "{first}");
    assert_eq!(stat(&run.stdout, "delay bound reached"), 1);
}

#[test]
fn ss_samples_until_the_budget_and_reports_its_samples() {
    let dir = TempDir::new("ss");
    let m = fixture(&dir, "mutex_counter");
    let args = [
        "check",
        &m,
        "--test",
        "mutex_counter",
        "--strategy",
        "ss",
        "--explorer",
        "prr",
        "--seed",
        "4",
        "--c1",
        "5",
        "--c2",
        "2",
        "--max-executions",
        "200",
    ];
    let run = wasmrace(&dir, &args);
    expect(&run, 0);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("test `mutex_counter` (ss, explorer prr, 5 x 2^delays samples per delay bound, seed 4): no bug in 200 executions (not exhausted: stopped by --max-executions 200"),
        "{first}"
    );
    // 5 samples of 1 execution, 10 of 2, 20 of 3, 40 of 4: bound 3 at 200.
    assert_eq!(stat(&run.stdout, "delay bound reached"), 3);
    let again = wasmrace(&dir, &args);
    assert_eq!(without_timing(&run.stdout), without_timing(&again.stdout));
    // JSON carries the counters.
    let json = wasmrace(&dir, &[&args[..], &["--json"]].concat());
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let t = &doc["tests"][0];
    assert_eq!(t["strategy_stats"]["stats"]["delay bound reached"], 3);
    assert!(t["strategy_stats"]["stats"]["samples"].as_u64().unwrap() >= 40);
    assert_eq!(t["options"]["explorer"], "prr");
    assert_eq!(t["options"]["c1"], 5);
}

#[test]
fn delaying_flags_outside_their_strategies_are_one_line_errors() {
    let dir = TempDir::new("ses-errors");
    let m = fixture(&dir, "mutex_counter");
    let run = |extra: &[&str]| wasmrace(&dir, &[&["check", &m][..], extra].concat());
    expect_error(
        &run(&["--strategy", "dfs", "--delay-bound", "2"]),
        "`--delay-bound` only applies to `--strategy ses`",
    );
    expect_error(
        &run(&["--strategy", "ses", "--state-cache"]),
        "`--state-cache` only applies to `--strategy dfs`",
    );
    expect_error(
        &run(&["--strategy", "random", "--explorer", "rr"]),
        "`--explorer` only applies to `--strategy ses` and `ss`",
    );
    expect_error(
        &run(&["--strategy", "dfs", "--cache-mb", "8"]),
        "`--cache-mb` only applies to `--strategy ses` and to `--state-cache`",
    );
    expect_error(
        &run(&["--strategy", "ses", "--c1", "3"]),
        "`--c1` and `--c2` only apply to `--strategy ss`",
    );
    expect_error(
        &run(&["--strategy", "ss", "--c2", "0"]),
        "`--c1` and `--c2` must be at least 1",
    );
    // Given at its default value, an option the strategy ignores is still
    // a mistake worth saying.
    expect_error(
        &run(&["--strategy", "random", "--explorer", "rtc"]),
        "`--explorer` only applies to `--strategy ses` and `ss`",
    );
    expect_error(
        &run(&["--strategy", "dfs", "--cache-mb", "256"]),
        "`--cache-mb` only applies to `--strategy ses` and to `--state-cache`",
    );
    expect_error(
        &run(&["--strategy", "ses", "--c1", "10"]),
        "`--c1` and `--c2` only apply to `--strategy ss`",
    );
    expect_error(
        &run(&["--strategy", "random", "--depth", "3"]),
        "`--depth` only applies to `--strategy pct`",
    );
}
