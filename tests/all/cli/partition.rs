//! `check --partition K/N` run as N separate processes and added up by
//! `wasmrace merge`: for N = 1, 2, 3 and 7, the merged verdict is the single
//! run's (a random run's bug and its execution index; a dfs run's bug; a
//! bug-free exhaustive dfs run's execution count, exhausted). Bad
//! partitions and parts that do not belong together are one error line,
//! exit 2.

use super::{expect, expect_error, fixture, wasmrace, TempDir};
use serde_json::Value;
use std::path::Path;

const COUNTS: [u32; 4] = [1, 2, 3, 7];

/// Runs `wasmrace` with `args` and returns its exit code and JSON output.
fn json_of(dir: &Path, args: &[&str]) -> (i32, Value) {
    let run = wasmrace(dir, args);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

/// Runs the N partitions of `check <args>` (each with its own schedule
/// folder), writing `part<K>of<N>.json`; returns the files.
fn partitions(dir: &Path, args: &[&str], n: u32) -> Vec<String> {
    (1..=n)
        .map(|k| {
            let (part, file, schedules) = (
                format!("{k}/{n}"),
                format!("part{k}of{n}.json"),
                format!("schedules-{k}of{n}"),
            );
            let mut full = vec!["check", "--json", "--partition", &part];
            full.extend(["--schedule-dir", &schedules]);
            full.extend(args);
            let run = wasmrace(dir, &full);
            assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
            std::fs::write(dir.join(&file), &run.stdout).unwrap();
            file
        })
        .collect()
}

/// `wasmrace merge --json` of `files`: its exit code and its one test.
fn merged(dir: &Path, files: &[String]) -> (i32, Value) {
    let mut args = vec!["merge", "--json"];
    args.extend(files.iter().map(String::as_str));
    let (code, doc) = json_of(dir, &args);
    (code, doc["tests"][0].clone())
}

#[test]
fn random_partitions_merge_to_the_single_runs_bug_and_index() {
    let dir = TempDir::new("partition-random");
    let m = fixture(&dir, "pos_example");
    let args = [
        m.as_str(),
        "--strategy",
        "random",
        "--seed",
        "1",
        "--max-executions",
        "2000",
    ];
    let mut single_args = vec!["check", "--json"];
    single_args.extend(args);
    let (code, single) = json_of(&dir, &single_args);
    assert_eq!(code, 1);
    let single = &single["tests"][0];
    let execution = single["bug"]["execution"].as_u64().unwrap();
    assert!(execution > 7, "a bug late enough for every N to matter");
    for n in COUNTS {
        let files = partitions(&dir, &args, n);
        let (code, t) = merged(&dir, &files);
        assert_eq!(code, 1, "{n} partitions");
        assert_eq!(t["bug"]["execution"], execution, "{n} partitions");
        assert_eq!(t["bug"]["failure"], single["bug"]["failure"]);
        assert_eq!(t["bug"]["trace"], single["bug"]["trace"]);
        assert_eq!(t["bug"]["partition"], (execution - 1) % u64::from(n) + 1);
        let path = t["bug"]["schedule_path"].as_str().unwrap();
        assert!(dir.join(path).is_file(), "{path}");
        assert_eq!(t["partitions"], n);
    }
    // The text verdict says the same, and exits 1 like check.
    let files = partitions(&dir, &args, 3);
    let mut merge = vec!["merge"];
    merge.extend(files.iter().map(String::as_str));
    let text = wasmrace(&dir, &merge);
    expect(&text, 1);
    assert!(
        text.stdout.starts_with(&format!(
            "test `pos_example` (random, seed 1, 3 partitions): BUG found in execution {execution} (partition {}/3)",
            (execution - 1) % 3 + 1
        )),
        "{}",
        text.stdout
    );
}

/// The other sampling strategies that split into partitions merge to the
/// single run's bug and execution number too: PCT and RaceFuzzer, whose
/// calibration or detection executions every partition runs (counted
/// once), and SS, whose samples are dealt out whole; and N partitions of
/// a budget run the budget between them.
#[test]
fn pct_ss_and_racefuzzer_partitions_merge_to_the_single_run() {
    let dir = TempDir::new("partition-sampling");
    let chain = fixture(&dir, "chain_replication");
    let pos = fixture(&dir, "pos_example");
    let counter = fixture(&dir, "mutex_counter");
    let runs = [
        (
            &chain,
            "--test chain_replication_bug --strategy pct --seed 1",
            Some(595),
        ),
        (&pos, "--strategy ss --explorer prr --seed 4", Some(3910)),
        (&pos, "--strategy racefuzzer", Some(289)),
        (
            &counter,
            "--test mutex_counter_3 --strategy pct --max-executions 700",
            None,
        ),
    ];
    for (module, tail, bug) in runs {
        let mut args = vec![module.as_str()];
        args.extend(tail.split(' '));
        for n in [2, 3] {
            let files = partitions(&dir, &args, n);
            let (code, t) = merged(&dir, &files);
            match bug {
                Some(execution) => {
                    assert_eq!(code, 1, "{args:?} {n}");
                    assert_eq!(t["bug"]["execution"], execution, "{args:?} {n}");
                }
                None => {
                    assert_eq!(code, 0, "{args:?} {n}");
                    assert_eq!(t["executions"], 700, "{args:?} {n}");
                }
            }
        }
    }
}

/// RaceFuzzer's real races merge as one run lists them (in its order, by
/// sites and object; counts added, the first execution the earliest), and `merge
/// --races fail` fails on them as `check --races fail` does.
#[test]
fn racefuzzer_partitions_merge_their_real_races() {
    let dir = TempDir::new("partition-races");
    let lastzero = fixture(&dir, "lastzero");
    let args = [
        lastzero.as_str(),
        "--test",
        "lastzero_4",
        "--strategy",
        "racefuzzer",
        "--max-executions",
        "200",
    ];
    let (code, single) = json_of(&dir, &[&["check", "--json"][..], &args].concat());
    assert_eq!(code, 0, "races alone are warnings");
    let races = single["tests"][0]["races"].as_array().unwrap().clone();
    assert!(races.len() > 1, "{races:?}");
    for n in [2, 3] {
        let files = partitions(&dir, &args, n);
        let (code, t) = merged(&dir, &files);
        assert_eq!(code, 0);
        // In one run's order too (it used to follow the parts' order).
        assert_eq!(t["races"].as_array().unwrap(), &races, "{n} partitions");
        let mut merge = vec!["merge", "--races", "fail"];
        merge.extend(files.iter().map(String::as_str));
        let text = wasmrace(&dir, &merge);
        expect(&text, 1);
        assert!(
            text.stdout
                .contains(&format!("real races ({}):", races.len())),
            "{}",
            text.stdout
        );
    }
    // A part whose races lack their key (an older wasmrace's) is refused
    // rather than merged into one race.
    let files = partitions(&dir, &args, 2);
    let read = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
    };
    let raced = |f: &&String| !read(f)["tests"][0]["races"].as_array().unwrap().is_empty();
    let (with, other) = match files.iter().find(raced) {
        Some(f) if *f == files[0] => (&files[0], &files[1]),
        _ => (&files[1], &files[0]),
    };
    let mut doc = read(with);
    for r in doc["tests"][0]["races"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("key");
    }
    std::fs::write(dir.join("old.json"), doc.to_string()).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", other, "old.json"]),
        "`old.json` lists real races without their `key`: write it again with this wasmrace",
    );
}

/// The portfolio (the default strategy) partitions with its openings as
/// a prologue every partition runs: the merged verdict is the single
/// run's, for a bug of its DPOR opening, a bug only its POS member finds,
/// a proof, and a budget-bound run.
#[test]
fn portfolio_partitions_merge_to_the_single_run() {
    let dir = TempDir::new("partition-portfolio");
    let lost = fixture(&dir, "lost_update");
    let chain = fixture(&dir, "chain_replication");
    let counter = fixture(&dir, "mutex_counter");
    let runs = [
        (&lost, "--test lost_update_3"),
        (&chain, "--test chain_replication_bug --preemption-bound 0"),
        (&counter, "--test mutex_counter"),
        (
            &counter,
            "--test mutex_counter_3 --preemption-bound 0 --max-executions 2600",
        ),
    ];
    for (module, tail) in runs {
        let mut args = vec![module.as_str()];
        args.extend(tail.split(' '));
        let (code, single) = json_of(&dir, &[&["check", "--json"][..], &args].concat());
        let single = &single["tests"][0];
        for n in [2, 3] {
            let files = partitions(&dir, &args, n);
            let (merged_code, t) = merged(&dir, &files);
            assert_eq!(merged_code, code, "{tail} {n}");
            assert_eq!(
                t["bug"]["execution"], single["bug"]["execution"],
                "{tail} {n}"
            );
            assert_eq!(
                t["bug"]["found_by"], single["bug"]["found_by"],
                "{tail} {n}"
            );
            assert_eq!(t["exhausted"], single["exhausted"], "{tail} {n}");
            assert_eq!(
                t["strategy_stats"]["stats"],
                single["strategy_stats"]["stats"]
            );
            if single["bug"].is_null() {
                assert_eq!(t["executions"], single["executions"], "{tail} {n}");
            }
        }
    }
}

#[test]
fn dfs_partitions_merge_to_the_single_run() {
    let dir = TempDir::new("partition-dfs");
    let counter = fixture(&dir, "mutex_counter");
    let lost = fixture(&dir, "lost_update");
    for depth in ["6", "2"] {
        let args = [
            counter.as_str(),
            "--test",
            "mutex_counter_3",
            "--strategy",
            "dfs",
            "--split-depth",
            depth,
        ];
        let (code, single) = json_of(
            &dir,
            &[
                "check",
                "--json",
                &counter,
                "--test",
                "mutex_counter_3",
                "--strategy",
                "dfs",
            ],
        );
        assert_eq!(code, 0);
        let single = &single["tests"][0];
        assert_eq!(single["exhausted"], true);
        for n in COUNTS {
            let files = partitions(&dir, &args, n);
            let (code, t) = merged(&dir, &files);
            assert_eq!(code, 0, "{n} partitions");
            assert_eq!(t["executions"], single["executions"], "depth {depth}, {n}");
            assert_eq!(t["exhausted"], true);
            assert!(t["bug"].is_null());
            if n > 1 {
                assert!(t["partition_skipped"].as_u64().unwrap() > 0);
            }
        }
    }
    let args = [lost.as_str(), "--test", "lost_update", "--strategy", "dfs"];
    let (code, single) = json_of(
        &dir,
        &[
            "check",
            "--json",
            &lost,
            "--test",
            "lost_update",
            "--strategy",
            "dfs",
        ],
    );
    assert_eq!(code, 1);
    let single = &single["tests"][0];
    for n in COUNTS {
        let (code, t) = merged(&dir, &partitions(&dir, &args, n));
        assert_eq!(code, 1, "{n} partitions");
        assert_eq!(t["bug"]["failure"], single["bug"]["failure"]);
        assert_eq!(t["bug"]["trace"], single["bug"]["trace"], "{n} partitions");
        assert!(t["bug"]["order_key"].is_array());
    }
}

/// `dpor --dpor trust` splits one test between partitions: every
/// partition runs the jobs above the split depth (counting its own) and
/// its share of the subtrees below, so the merge is the single run:
/// executions, the strategy's counters (wasted runs included: a partition
/// forgets what it counts of another's job), exhausted, and the bug the
/// single run stops at. Also with the partitions' own threads (`--jobs 2`).
#[test]
fn dpor_trust_partitions_merge_to_the_single_run() {
    let dir = TempDir::new("partition-trust");
    let twopc = fixture(&dir, "two_phase_commit");
    let trust = ["--strategy", "dpor", "--dpor", "trust", "--no-shrink"];
    let single = |test: &str| {
        let args = [&["check", "--json", &twopc, "--test", test][..], &trust].concat();
        json_of(&dir, &args).1["tests"][0].clone()
    };
    let one = single("two_phase_commit_2");
    assert_eq!(one["exhausted"], true);
    let wasted = |t: &Value| t["strategy_stats"]["stats"]["wasted executions"].clone();
    for (depth, jobs) in [("3", "1"), ("1", "2"), ("2", "1")] {
        for n in COUNTS {
            let args = [
                &[twopc.as_str(), "--test", "two_phase_commit_2"][..],
                &trust,
                &["--split-depth", depth, "--jobs", jobs],
            ]
            .concat();
            let (code, t) = merged(&dir, &partitions(&dir, &args, n));
            let what = format!("depth {depth}, --jobs {jobs}, {n} partitions");
            assert_eq!(code, 0, "{what}");
            assert_eq!(t["split"], "jobs", "{what}");
            assert_eq!(t["executions"], one["executions"], "{what}");
            assert_eq!(wasted(&t), wasted(&one), "{what}");
            assert_eq!(t["exhausted"], true, "{what}");
            if n > 1 {
                assert!(t["partition_skipped"].as_u64().unwrap() > 0, "{what}");
            }
        }
    }
    let one = single("two_phase_commit_bug");
    assert!(!one["bug"].is_null());
    for n in COUNTS {
        let args = [
            &[twopc.as_str(), "--test", "two_phase_commit_bug"][..],
            &trust,
        ]
        .concat();
        let (code, t) = merged(&dir, &partitions(&dir, &args, n));
        assert_eq!(code, 1, "{n} partitions");
        assert_eq!(t["bug"]["failure"], one["bug"]["failure"], "{n} partitions");
        assert_eq!(t["bug"]["trace"], one["bug"]["trace"], "{n} partitions");
    }
}

/// A strategy that cannot split one test's exploration (dpor, ses) deals
/// a module's tests out whole, test `i` to partition `i mod N + 1`: each
/// partition runs and prints its share, lists the others in its JSON as
/// dealt elsewhere, and the merged verdict is the single run's, test by
/// test (N = 7 leaves partitions with no test).
#[test]
fn partitions_of_a_strategy_that_cannot_split_take_whole_tests() {
    let dir = TempDir::new("partition-dealt");
    let twopc = fixture(&dir, "two_phase_commit");
    let lost = fixture(&dir, "lost_update");
    for args in [
        [twopc.as_str(), "--strategy", "dpor"],
        [lost.as_str(), "--strategy", "ses"],
    ] {
        let (code, single) = json_of(&dir, &[&["check", "--json"][..], &args].concat());
        assert_eq!(code, 1, "{args:?}");
        let tests = single["tests"].as_array().unwrap();
        for n in COUNTS {
            let files = partitions(&dir, &args, n);
            let mut merge = vec!["merge", "--json"];
            merge.extend(files.iter().map(String::as_str));
            let (code, doc) = json_of(&dir, &merge);
            assert_eq!(code, 1, "{args:?}, {n} partitions");
            let merged = doc["tests"].as_array().unwrap();
            assert_eq!(merged.len(), tests.len());
            for (i, (t, one)) in merged.iter().zip(tests).enumerate() {
                let what = format!("{args:?}, {n} partitions, test {}", one["test"]);
                assert_eq!(t["test"], one["test"], "{what}");
                assert_eq!(t["run_by"], i as u64 % u64::from(n) + 1, "{what}");
                for key in ["executions", "exhausted"] {
                    assert_eq!(t[key], one[key], "{what}: {key}");
                }
                for key in ["failure", "trace", "execution"] {
                    assert_eq!(t["bug"][key], one["bug"][key], "{what}: {key}");
                }
            }
            // Each part lists every test, run or not.
            let part: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(&files[0])).unwrap())
                    .unwrap();
            let ran: Vec<bool> = (part["tests"].as_array().unwrap().iter())
                .map(|t| t["ran"] != false)
                .collect();
            let dealt: Vec<bool> = (0..tests.len())
                .map(|i| (i as u32).is_multiple_of(n))
                .collect();
            assert_eq!(ran, dealt, "{args:?}, partition 1/{n}");
        }
    }
    // The text of a partition names its share; one with none runs nothing.
    let run = wasmrace(
        &dir,
        &["check", &twopc, "--strategy", "dpor", "--partition", "2/2"],
    );
    expect(&run, 0);
    for line in [
        "partition 2/2 runs 1 of the module's 3 tests (dealt in turn): `two_phase_commit_2`",
        "test `two_phase_commit_2` (dpor, optimal, unbounded, partition 2/2): no bug in 80 \
         executions",
        "1 of 3 tests run in partition 2/2: 0 with a bug, 1 without",
    ] {
        assert!(run.stdout.contains(line), "{line}\n{}", run.stdout);
    }
    // Its share runs side by side under `--jobs` as one thread runs it.
    let share = |jobs: &str| {
        let args = ["check", &twopc, "--strategy", "dpor", "--partition", "1/2"];
        let (_, mut doc) = json_of(&dir, &[&args[..], &["--json", "--jobs", jobs]].concat());
        super::without_elapsed(&mut doc);
        doc
    };
    assert_eq!(share("2"), share("1"));
    let run = wasmrace(
        &dir,
        &["check", &twopc, "--strategy", "dpor", "--partition", "5/7"],
    );
    expect(&run, 0);
    assert!(run
        .stdout
        .starts_with("partition 5/7 runs none of the module's 3 tests"));
    assert!(!run.stdout.contains("test `"), "{}", run.stdout);
    // A part whose tests were not dealt by the rule is refused.
    let files = partitions(&dir, &[twopc.as_str(), "--strategy", "dpor"], 2);
    let path = dir.join(&files[1]);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["tests"][0]["ran"] = Value::Bool(true);
    std::fs::write(&path, doc.to_string()).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", &files[0], &files[1]]),
        "does not deal test `two_phase_commit` to partition 1/2 as `check --partition` does",
    );
}

#[test]
fn bad_partitions_and_parts_that_do_not_belong_together_are_one_error_line() {
    let dir = TempDir::new("partition-errors");
    let m = fixture(&dir, "lost_update");
    for bad in ["0/3", "4/3", "x/y", "3/0"] {
        expect_error(
            &wasmrace(
                &dir,
                &["check", &m, "--strategy", "random", "--partition", bad],
            ),
            &format!("`{bad}` is not a partition `K/N`"),
        );
    }
    // One test cannot be dealt out (a module of several can: below).
    expect_error(
        &wasmrace(
            &dir,
            &[
                "check",
                &m,
                "--test",
                "lost_update",
                "--strategy",
                "ses",
                "--partition",
                "1/2",
            ],
        ),
        "`--partition 1/2` does not apply to `--strategy ses` with one test: only `basic-pos`, \
         `dfs` (without `--state-cache`)",
    );
    for args in [
        &["--split-depth", "3"][..],
        &["--strategy", "dfs", "--jobs", "1", "--split-depth", "3"],
        // Threads share the tree: the depth would be ignored.
        &["--strategy", "dfs", "--jobs", "2", "--split-depth", "3"],
        &["--strategy", "dfs", "--split-depth", "3"],
        &[
            "--strategy",
            "random",
            "--partition",
            "1/2",
            "--split-depth",
            "3",
        ],
    ] {
        expect_error(
            &wasmrace(&dir, &[&["check", m.as_str()][..], args].concat()),
            "`--split-depth` only applies to a strategy that splits by prefix (`dfs`, \
             `dpor --dpor trust`), with `--partition`",
        );
    }
    // Partition `k/n` of a random run (or of `strategy`, when the extra
    // arguments start with one) of 50 executions, written to `name`.
    let part = |name: &str, k: u32, n: u32, extra: &[&str]| {
        let partition = format!("{k}/{n}");
        let (strategy, extra) = match extra {
            ["pos", rest @ ..] => ("pos", rest),
            _ => ("random", extra),
        };
        let mut args = vec![
            "check",
            m.as_str(),
            "--json",
            "--strategy",
            strategy,
            "--max-executions",
            "50",
            "--partition",
            &partition,
        ];
        args.extend(extra);
        let run = wasmrace(&dir, &args);
        std::fs::write(dir.join(name), &run.stdout).unwrap();
        name.to_string()
    };
    let (a, b, c) = (
        part("a.json", 1, 3, &[]),
        part("b.json", 2, 3, &[]),
        part("c.json", 3, 3, &[]),
    );
    expect(&wasmrace(&dir, &["merge", &a, &b, &c]), 1);
    let cases = [
        (
            part("test.json", 3, 3, &["--test", "lost_update"]),
            "checked different tests",
        ),
        (
            part("seed.json", 3, 3, &["--seed", "9"]),
            "differ in the seed of test `lost_update` (`0` and `9`)",
        ),
        (
            part("n.json", 3, 4, &[]),
            "differ in the partition count of test `lost_update` (`3` and `4`)",
        ),
        (
            part("opts.json", 3, 3, &["--max-steps", "99"]),
            "differ in the options of test `lost_update`",
        ),
        (
            part("pos.json", 3, 3, &["pos"]),
            "differ in the strategy of test `lost_update`",
        ),
    ];
    for (file, needle) in &cases {
        expect_error(&wasmrace(&dir, &["merge", &a, &b, file]), needle);
    }
    expect_error(
        &wasmrace(&dir, &["merge", &a, &b]),
        "partition 3/3 is missing: 2 parts given for 3 partitions",
    );
    expect_error(
        &wasmrace(&dir, &["merge", &a, &b, &b, &c]),
        "partition 2/3 is given twice: `b.json` and `b.json`",
    );
    // Regression: a fourth part of 3 passed (no K missing, none twice).
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&c)).unwrap()).unwrap();
    for t in doc["tests"].as_array_mut().unwrap() {
        t["partition"]["k"] = 4.into();
    }
    std::fs::write(dir.join("k4.json"), doc.to_string()).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", &a, &b, &c, "k4.json"]),
        "`k4.json` names partition `4/3`, which is not a partition `K/N` (1 <= K <= N <= 4294967295)",
    );
    let counter = fixture(&dir, "mutex_counter");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &counter,
            "--json",
            "--strategy",
            "random",
            "--max-executions",
            "50",
            "--partition",
            "3/3",
        ],
    );
    std::fs::write(dir.join("other.json"), &run.stdout).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", &a, &b, "other.json"]),
        "are reports of different modules",
    );
    let plain = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--json",
            "--strategy",
            "random",
            "--max-executions",
            "5",
        ],
    );
    std::fs::write(dir.join("plain.json"), &plain.stdout).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", &a, "plain.json"]),
        "`plain.json` is not the --json output of `wasmrace check --partition`",
    );
    expect_error(
        &wasmrace(&dir, &["merge", "missing.json"]),
        "cannot read `missing.json`",
    );
}

/// `check --jobs N` runs N partitions on N threads and merges them: the
/// report is the one-thread report, timing aside (a random run's bug and
/// its execution number; an exhaustive dfs run's count).
#[test]
fn jobs_print_the_one_thread_report() {
    let dir = TempDir::new("partition-jobs");
    let pos = fixture(&dir, "pos_example");
    let counter = fixture(&dir, "mutex_counter");
    let runs: [&[&str]; 2] = [
        &[
            &pos,
            "--strategy",
            "random",
            "--seed",
            "1",
            "--max-executions",
            "2000",
        ],
        &[&counter, "--test", "mutex_counter_3", "--strategy", "dfs"],
    ];
    for (args, code) in runs.into_iter().zip([1, 0]) {
        let text = |jobs: &str| {
            let mut full = vec!["check", "--jobs", jobs];
            full.extend(args);
            let run = wasmrace(&dir, &full);
            expect(&run, code);
            super::without_timing(&run.stdout)
        };
        let one = text("1");
        assert!(
            one.contains(if code == 1 {
                "BUG found in execution 144"
            } else {
                "no bug in 573 executions"
            }),
            "{one}"
        );
        for jobs in ["2", "3"] {
            assert_eq!(text(jobs), one, "--jobs {jobs}");
        }
    }
    // `pos_example` has one test: nothing to run side by side either.
    for args in [&[][..], &["--test", "pos_example"]] {
        let full = [&["check", &pos, "--strategy", "dpor", "--jobs", "2"], args].concat();
        expect_error(
            &wasmrace(&dir, &full),
            "`--jobs 2` does not apply to `--strategy dpor` with one test: only `basic-pos`",
        );
    }
    expect_error(
        &wasmrace(&dir, &["check", &pos, "--jobs", "0"]),
        "`--jobs` must be at least 1",
    );
}

/// `check --jobs N` with a strategy that cannot split its work (`dpor`)
/// explores up to N of the module's tests side by side, one thread each,
/// and prints exactly the one-thread report (timing aside), in text and in
/// `--json`, bugs, schedules and all; every core by default.
#[test]
fn jobs_run_the_tests_of_a_strategy_that_cannot_split_side_by_side() {
    let dir = TempDir::new("partition-jobs-lanes");
    let readers = fixture(&dir, "readers");
    let twopc = fixture(&dir, "two_phase_commit");
    for (module, code) in [(&readers, 0), (&twopc, 1)] {
        let args = [module.as_str(), "--strategy", "dpor"];
        let (json_code, one) = jobs_doc(&dir, &args, "1");
        assert_eq!(json_code, code);
        assert!(one["tests"].as_array().unwrap().len() > 2, "{one}");
        let text = |jobs: Option<&str>| {
            let mut full = vec!["check"];
            full.extend(jobs.map(|j| ["--jobs", j]).into_iter().flatten());
            full.extend(args);
            let run = wasmrace(&dir, &full);
            expect(&run, code);
            super::without_timing(&run.stdout)
        };
        let one_text = text(Some("1"));
        for jobs in ["2", "3"] {
            assert_eq!(
                jobs_doc(&dir, &args, jobs),
                (code, one.clone()),
                "--jobs {jobs}"
            );
            assert_eq!(text(Some(jobs)), one_text, "--jobs {jobs}");
        }
        assert_eq!(text(None), one_text, "the default");
    }
}

/// `check --jobs N` on a strategy that splits by execution, and on the
/// phased ones, the portfolio and PCT (openings side by side, then the
/// sampling indices dealt out),
/// prints, in text and in `--json`, exactly the one-thread report (timing
/// aside), bug or no bug: the lowest failing execution, counted with
/// exactly the executions below it, whichever thread finds it first. The
/// default (`--jobs` not given: every core for these strategies) prints
/// the same too.
#[test]
fn jobs_print_the_one_thread_json() {
    let dir = TempDir::new("partition-jobs-json");
    let pos = fixture(&dir, "pos_example");
    let lost = fixture(&dir, "lost_update");
    let counter = fixture(&dir, "mutex_counter");
    let chain = fixture(&dir, "chain_replication");
    let fuzzed = fixture(&dir, "racefuzzer");
    let races = fixture(&dir, "data_races");
    let procrastinated = [
        "--test",
        "chain_replication_bug",
        "--strategy",
        "procrastination",
    ];
    let procrastinated = [&[chain.as_str()][..], &procrastinated, &["--seed", "4"]].concat();
    let runs: [&[&str]; 20] = [
        &[&pos, "--strategy", "random", "--seed", "1"],
        // Data races: the detector's state is each worker's own, so the
        // race and its numbering are the one thread's; and a race-free
        // test's counts.
        &[&races, "--test", "racy_buffer", "--strategy", "random"],
        &[
            &races,
            "--test",
            "published_by_atomic",
            "--strategy",
            "random",
            "--max-executions",
            "300",
        ],
        // PCT: its calibration (the first 100 executions) runs alone, the
        // rest is dealt out; this bug is execution 595, a budget-bound run.
        &[
            &chain,
            "--test",
            "chain_replication_bug",
            "--strategy",
            "pct",
            "--seed",
            "1",
        ],
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "pct",
            "--max-executions",
            "700",
        ],
        &[&pos, "--strategy", "pos", "--seed", "3"],
        &[&lost, "--strategy", "pos"],
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "random",
            "--max-executions",
            "300",
        ],
        &[&lost, "--test", "lost_update_3"],
        &[
            &counter,
            "--test",
            "mutex_counter",
            "--max-executions",
            "1500",
        ],
        // The portfolio: a budget the openings could spend alone runs on
        // one thread; past them, the samplers share the indices.
        &[
            &counter,
            "--test",
            "mutex_counter",
            "--preemption-bound",
            "0",
            "--max-executions",
            "2600",
        ],
        // A bug no opening finds: POS's, numbered after the openings'.
        &[
            &chain,
            "--test",
            "chain_replication_bug",
            "--preemption-bound",
            "0",
        ],
        &[&chain, "--test", "chain_replication_bug", "--seed", "5"],
        // SS: whole samples (blocks of `delays + 1` executions) dealt out;
        // a bug in a sample with four delays, and a budget that ends
        // midway through a sample.
        &[&pos, "--strategy", "ss", "--explorer", "prr", "--seed", "4"],
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "ss",
            "--max-executions",
            "700",
        ],
        // RaceFuzzer: every thread runs the detection phase, one counts
        // each of its executions; the directed ones are dealt out. A bug
        // after three pairs' real races, and one in the detection phase.
        &[&pos, "--strategy", "racefuzzer"],
        &[
            &fuzzed,
            "--test",
            "racefuzzer_fig1",
            "--strategy",
            "racefuzzer",
        ],
        // Procrastination: whole families (a random execution and its
        // procrastinated versions, sizes learnt as they end) dealt out,
        // numbered from their sizes. A bug in the 66th execution, a budget
        // that ends before it, and a budget-bound run with no bug.
        &procrastinated,
        &[&procrastinated[..], &["--max-executions", "60"]].concat(),
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "procrastination",
            "--max-executions",
            "700",
        ],
    ];
    for args in runs {
        let out = |jobs: Option<&str>, json: bool| {
            let mut full = vec!["check"];
            if let Some(jobs) = jobs {
                full.extend(["--jobs", jobs]);
            }
            if json {
                full.push("--json");
            }
            full.extend(args);
            let run = wasmrace(&dir, &full);
            assert!(matches!(run.code, 0 | 1), "{args:?}: {}", run.stderr);
            if !json {
                return super::without_timing(&run.stdout);
            }
            let mut doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            super::without_elapsed(&mut doc);
            doc.to_string()
        };
        for json in [false, true] {
            let one = out(Some("1"), json);
            for jobs in [Some("2"), Some("3"), None] {
                assert_eq!(out(jobs, json), one, "{args:?} --jobs {jobs:?} json {json}");
            }
            if args == [pos.as_str(), "--strategy", "racefuzzer"] && json {
                let doc: serde_json::Value = serde_json::from_str(&one).unwrap();
                let races = doc["tests"][0]["races"].as_array().unwrap();
                assert_eq!(races.len(), 3, "{one}");
                assert_eq!(doc["tests"][0]["bug"]["execution"], 289, "{one}");
            }
            if args.contains(&"procrastination") && args.contains(&"4") && !json {
                let expected = if args.contains(&"60") {
                    "no bug in 60 executions"
                } else {
                    "BUG found in execution 66"
                };
                assert!(one.contains(expected), "{one}");
            }
            if args.contains(&"ss") && args.contains(&"4") && !json {
                assert!(one.contains("BUG found in execution 3910"), "{one}");
            }
            let portfolio_or_pct = !args.contains(&"procrastination");
            if args.contains(&"chain_replication_bug") && portfolio_or_pct && !json {
                let pct = args.contains(&"pct");
                let expected = if pct {
                    "BUG found in execution 595"
                } else {
                    "found by: pos"
                };
                assert!(one.contains(expected), "{one}");
            }
        }
    }
    // Seven and twenty threads: more than the openings, than the cores,
    // and (twenty, two instances each) than the 16 instance slots a
    // module used to get whatever `--jobs` asked for.
    let args = ["check", &chain, "--test", "chain_replication_bug", "--json"];
    let doc = |jobs: &str| {
        let run = wasmrace(&dir, &[&args[..], &["--jobs", jobs]].concat());
        assert_eq!(run.code, 1, "--jobs {jobs}: {}", run.stderr);
        let mut doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        super::without_elapsed(&mut doc);
        doc
    };
    let one = doc("1");
    for jobs in ["7", "20"] {
        assert_eq!(doc(jobs), one, "--jobs {jobs}");
    }
    // Procrastination shares threads, not machines: `--partition` cannot
    // split one test (its families' sizes are learnt in memory the
    // threads share), only deal out whole ones.
    let procrastination = ["check", &lost, "--strategy", "procrastination"];
    expect_error(
        &wasmrace(
            &dir,
            &[
                &procrastination[..],
                &["--test", "lost_update", "--partition", "1/2"],
            ]
            .concat(),
        ),
        "`--partition 1/2` does not apply to `--strategy procrastination` with one test",
    );
}

/// `--time-budget` covers the portfolio's phases together under `--jobs`:
/// the sampling phase gets what the openings left, and the report names
/// the budget the user gave.
#[test]
fn jobs_share_the_portfolios_time_budget() {
    let dir = TempDir::new("partition-jobs-time");
    let chain = fixture(&dir, "chain_replication");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &chain,
            "--test",
            "chain_replication",
            "--json",
            "--jobs",
            "2",
            "--time-budget",
            "1",
            "--max-executions",
            "100000000",
        ],
    );
    expect(&run, 0);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let stopped = &doc["tests"][0]["stopped_by"];
    assert_eq!(stopped["flag"], "--time-budget", "{doc}");
    assert_eq!(stopped["value"], 1, "{doc}");
}

/// `check --jobs N` on an exhaustive dfs run shares the search tree between
/// N threads (work stealing): the same executions count, exhausted, for any
/// N, with and without a preemption bound and within a `--partition`; a
/// buggy run reports the one-thread run's bug (the first in dfs order),
/// also when it lies deep in the search order, numbered as one thread
/// numbers it; a run cut by `--max-executions` reports what one thread
/// does, on the default number of threads (every core) too.
#[test]
fn jobs_share_an_exhaustive_dfs_tree() {
    let dir = TempDir::new("partition-jobs-dfs");
    let counter = fixture(&dir, "mutex_counter");
    let lost = fixture(&dir, "lost_update");
    let test = |args: &[&str], jobs: &str| {
        let mut full = vec!["check", "--json", "--jobs", jobs];
        full.extend(args);
        let (code, doc) = json_of(&dir, &full);
        (code, doc["tests"][0].clone())
    };
    let runs: [&[&str]; 3] = [
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "dfs",
            "--unbounded",
        ],
        &[&counter, "--test", "mutex_counter_3", "--strategy", "dfs"],
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--strategy",
            "dfs",
            "--unbounded",
            "--partition",
            "2/3",
        ],
    ];
    for args in runs {
        let (code, one) = test(args, "1");
        assert_eq!(code, 0);
        assert!(one["executions"].as_u64().unwrap() > 500, "{one}");
        assert_eq!(one["exhausted"], true);
        for jobs in ["2", "3"] {
            let (code, t) = test(args, jobs);
            assert_eq!(code, 0, "{args:?} --jobs {jobs}");
            assert_eq!(t["executions"], one["executions"], "{args:?} --jobs {jobs}");
            assert_eq!(t["exhausted"], true, "{args:?} --jobs {jobs}");
            assert!(t["bug"].is_null());
        }
    }
    // The philosophers' deadlock is dfs's 18,267th execution: the threads
    // must finish every subtree ordered before it.
    let philosophers = fixture(&dir, "philosophers");
    let buggy = [
        [lost.as_str(), "--test", "lost_update", "--unbounded"],
        [
            lost.as_str(),
            "--test",
            "lost_update",
            "--preemption-bound=2",
        ],
        [
            philosophers.as_str(),
            "--test",
            "philosophers",
            "--unbounded",
        ],
    ];
    for run in buggy {
        let mut args = vec!["--strategy", "dfs"];
        args.extend(run);
        let (code, one) = test(&args, "1");
        assert_eq!(code, 1);
        for jobs in ["2", "3"] {
            let (code, t) = test(&args, jobs);
            assert_eq!(code, 1, "{args:?} --jobs {jobs}");
            assert_eq!(t["bug"]["failure"], one["bug"]["failure"]);
            assert_eq!(
                t["bug"]["trace"], one["bug"]["trace"],
                "{args:?} --jobs {jobs}"
            );
            assert_eq!(t["bug"]["order_key"], one["bug"]["order_key"]);
            assert_eq!(t["bug"]["execution"], one["bug"]["execution"]);
            assert_eq!(t["executions"], one["executions"]);
        }
    }
    // Whole documents, timing aside: a deep bug, and budgets that cut a
    // bounded and an unbounded search.
    let condvar = fixture(&dir, "condvar_pc");
    let whole: [&[&str]; 3] = [
        &[&philosophers, "--unbounded"],
        &[&condvar, "--max-executions", "5000"],
        &[
            &counter,
            "--test",
            "mutex_counter_3",
            "--unbounded",
            "--max-executions",
            "9000",
        ],
    ];
    for args in whole {
        let doc = |jobs: Option<&str>| {
            let mut full = vec!["check", "--json", "--strategy", "dfs"];
            full.extend(jobs.map(|j| ["--jobs", j]).into_iter().flatten());
            full.extend(args);
            let run = wasmrace(&dir, &full);
            let mut doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            super::without_elapsed(&mut doc);
            doc
        };
        let one = doc(Some("1"));
        assert!(
            one["tests"][0]["bug"]["execution"] == 18_267
                || one["tests"][0]["stopped_by"]["bound"] == "executions",
            "{one}"
        );
        // `None`: the default, every core.
        for jobs in [None, Some("2"), Some("3")] {
            assert_eq!(doc(jobs), one, "{args:?} --jobs {jobs:?}");
        }
    }
}

/// `check --json --jobs <jobs>` with `args`: the exit code and the
/// document, its timing aside.
fn jobs_doc(dir: &Path, args: &[&str], jobs: &str) -> (i32, Value) {
    let full = [&["check", "--json", "--jobs", jobs], args].concat();
    let run = wasmrace(dir, &full);
    let mut doc: Value = serde_json::from_str(&run.stdout).unwrap();
    super::without_elapsed(&mut doc);
    (run.code, doc)
}

/// `doc` (exit code and document of a run on the given `--jobs`) on 2
/// and 3 threads is the one-thread run's, which ran more than `min`
/// executions in its first test and reports the strategy's counter `stat`.
fn same_on_threads(doc: impl Fn(&str) -> (i32, Value), min: u64, stat: &str, args: &[&str]) {
    let (code, one) = doc("1");
    let first = &one["tests"][0];
    assert!(first["executions"].as_u64().unwrap() > min, "{one}");
    let stats = first["strategy_stats"].to_string();
    assert!(stats.contains(stat), "{stats}");
    for jobs in ["2", "3"] {
        assert_eq!(doc(jobs), (code, one.clone()), "{args:?} --jobs {jobs}");
    }
}

/// `check --jobs N` with `ses` runs each round's executions side by side
/// and prints, in `--json`, the one-thread document but for the saved
/// states (the threads replay their entries' prefixes where one thread
/// restores snapshots) and timing: exhaustive runs with their states,
/// cache hits and frontier, bugs with their execution numbers, runs cut by
/// `--max-executions` and by `--delay-bound`, a cache small enough to
/// evict. Partitions, which cannot share the cache, are refused.
#[test]
fn jobs_run_ses_rounds_side_by_side() {
    let dir = TempDir::new("partition-jobs-ses");
    let twopc = fixture(&dir, "two_phase_commit");
    let philosophers = fixture(&dir, "philosophers");
    let condvar = fixture(&dir, "condvar_pc");
    let runs: [&[&str]; 5] = [
        &[&twopc, "--test", "two_phase_commit_2"],
        &[&philosophers],
        &[&condvar, "--max-executions", "3000"],
        &[&condvar, "--explorer", "rr", "--delay-bound", "2"],
        &[&twopc, "--test", "two_phase_commit_2", "--cache-mb", "1"],
    ];
    for args in runs {
        let doc = |jobs: &str| {
            let mut doc = jobs_doc(&dir, &[&["--strategy", "ses"], args].concat(), jobs);
            // Threads replay their entries' prefixes where one thread
            // restores saved states.
            for test in doc.1["tests"].as_array_mut().unwrap() {
                test["strategy_stats"]
                    .as_object_mut()
                    .unwrap()
                    .remove("saved_states");
            }
            doc
        };
        same_on_threads(doc, 50, "frontier entries", args);
    }
    expect_error(
        &wasmrace(
            &dir,
            &["check", &condvar, "--strategy", "ses", "--partition", "1/2"],
        ),
        "`--partition 1/2` does not apply to `--strategy ses`",
    );
}

/// `check --jobs N` with `dfs --state-cache` shares the search tree and
/// the state cache between the threads and prints, in `--json`, exactly the
/// one-thread document (timing aside): exhaustive runs with their states
/// and cache hits, bugs with their execution numbers, a run cut by
/// `--max-executions`. Partitions cannot share the cache and are refused;
/// a shared cache that fills up stops the run, naming `--cache-mb`.
#[test]
fn jobs_share_a_dfs_state_cache() {
    let dir = TempDir::new("partition-jobs-state-cache");
    let condvar = fixture(&dir, "condvar_pc");
    let philosophers = fixture(&dir, "philosophers");
    let queue = fixture(&dir, "work_steal_queue");
    let counter = fixture(&dir, "mutex_counter");
    let runs: [&[&str]; 5] = [
        &[&condvar, "--unbounded"],
        &[&condvar, "--unbounded", "--max-executions", "3000"],
        &[&philosophers, "--unbounded"],
        &[&queue, "--unbounded"],
        &[&counter, "--test", "mutex_counter_3"],
    ];
    for args in runs {
        let doc = |jobs: &str| {
            let strategy = ["--strategy", "dfs", "--state-cache"];
            jobs_doc(&dir, &[&strategy[..], args].concat(), jobs)
        };
        same_on_threads(doc, 400, "states explored", args);
    }
    expect_error(
        &wasmrace(
            &dir,
            &[
                "check",
                &condvar,
                "--strategy",
                "dfs",
                "--state-cache",
                "--partition",
                "1/2",
            ],
        ),
        "`--partition 1/2` does not apply to `--strategy dfs` with `--state-cache`",
    );
    let twopc = fixture(&dir, "two_phase_commit");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &twopc,
            "--test",
            "two_phase_commit_2",
            "--strategy",
            "dfs",
            "--unbounded",
            "--state-cache",
            "--cache-mb",
            "1",
            "--jobs",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("not exhausted: stopped by --cache-mb 1"),
        "{}",
        run.stdout
    );
}

/// `check --jobs N` with `dpor --dpor trust` splits one test's jobs
/// between the threads (they depend on nothing but themselves) and prints
/// the one-thread document (timing aside): an exhaustive run whole, its
/// counters included; a bug, numbered as one thread numbers it, and a run
/// cut by `--max-executions` (their counters aside: the threads run past
/// the bug or the budget), the frontier's peak aside (a thread's). What it cannot prove it says on any number of
/// threads: a step over several objects (`condvar_pc`) leaves the run not
/// exhausted, and fair scheduling's dropped jobs (`flag_wait`) prune it.
/// Partitions split each test of a module, not deal them out.
#[test]
fn jobs_split_one_dpor_trust_test() {
    let dir = TempDir::new("partition-jobs-trust");
    let twopc = fixture(&dir, "two_phase_commit");
    let condvar = fixture(&dir, "condvar_pc");
    let spin = fixture(&dir, "spin_wait");
    let trust = ["--strategy", "dpor", "--dpor", "trust"];
    let doc = |args: &[&str], jobs: Option<&str>, stats: bool| {
        let mut full = vec!["check", "--json"];
        full.extend(jobs.map(|j| ["--jobs", j]).into_iter().flatten());
        full.extend(trust);
        full.extend(args);
        let (code, mut doc) = json_of(&dir, &full);
        super::without_elapsed(&mut doc);
        for test in doc["tests"].as_array_mut().unwrap() {
            let test = test.as_object_mut().unwrap();
            if !stats {
                test.remove("strategy_stats");
            } else if let Some(s) = test["strategy_stats"]["stats"].as_object_mut() {
                // A peak of each thread's memory, which timing shapes.
                s.remove("largest frontier (KiB)");
            }
        }
        (code, doc)
    };
    let runs: [(&[&str], i32, bool); 4] = [
        (&[&twopc, "--test", "two_phase_commit_2"], 0, true),
        (&[&twopc, "--test", "two_phase_commit_bug"], 1, false),
        (
            &[
                &twopc,
                "--test",
                "two_phase_commit",
                "--max-executions",
                "1500",
            ],
            0,
            false,
        ),
        // Fair scheduling drops jobs: the bound it reports is the same on
        // any number of threads.
        (
            &[&spin, "--test", "polite_backoff", "--max-executions", "300"],
            0,
            false,
        ),
    ];
    for (args, code, stats) in runs {
        let one = doc(args, Some("1"), stats);
        assert_eq!(one.0, code, "{args:?}: {}", one.1);
        let first = &one.1["tests"][0];
        assert!(first["executions"].as_u64().unwrap() > 15, "{first}");
        for jobs in [None, Some("2"), Some("3")] {
            assert_eq!(doc(args, jobs, stats), one, "{args:?} --jobs {jobs:?}");
        }
    }
    let first = |args: &[&str]| doc(args, Some("2"), true).1["tests"][0].clone();
    let exhaustive = first(&[&twopc, "--test", "two_phase_commit_2"]);
    assert_eq!(exhaustive["exhausted"], true, "{exhaustive}");
    assert_eq!(exhaustive["executions"], 241, "{exhaustive}");
    // Named as the command line names it: `dpor`, in its `trust` mode.
    assert_eq!(exhaustive["strategy"], "dpor", "{exhaustive}");
    assert_eq!(exhaustive["options"]["dpor"], "trust", "{exhaustive}");
    let bug = first(&[&twopc, "--test", "two_phase_commit_bug"]);
    assert_eq!(bug["bug"]["execution"], 20, "{bug}");
    let condvar_doc = doc(&[&condvar], Some("1"), true);
    assert_eq!(doc(&[&condvar], Some("2"), true), condvar_doc);
    for test in condvar_doc.1["tests"].as_array().unwrap() {
        assert_eq!(test["exhausted"], false, "{test}");
        let stats = &test["strategy_stats"]["stats"];
        let several = &stats["steps over several objects (not explored past)"];
        assert!(several.as_u64().unwrap() > 0, "{test}");
    }
    // Fair scheduling hides a spinning thread; jobs whose order needs it
    // then are dropped, and the run says so.
    for jobs in ["1", "2"] {
        let run = wasmrace(
            &dir,
            &[
                &["check", &spin, "--test", "flag_wait", "--jobs", jobs],
                &trust[..],
            ]
            .concat(),
        );
        expect(&run, 0);
        assert!(
            run.stdout
                .contains("within the reach of dpor under fair scheduling")
                && run
                    .stdout
                    .contains("dropped because fairness hid their thread"),
            "{}",
            run.stdout
        );
    }
    // A frontier that outgrows `--frontier-mb` stops the run, naming it.
    let run = wasmrace(
        &dir,
        &[
            &["check", &spin, "--test", "polite_backoff", "--jobs", "1"],
            &trust[..],
            &["--frontier-mb", "1"],
        ]
        .concat(),
    );
    expect(&run, 0);
    assert!(
        run.stdout.contains("not exhausted") && run.stdout.contains("--frontier-mb"),
        "{}",
        run.stdout
    );
    expect_error(
        &wasmrace(
            &dir,
            &["check", &spin, "--strategy", "dpor", "--frontier-mb", "8"],
        ),
        "`--frontier-mb` only applies to `--dpor trust` (unbounded)",
    );
    // Partitions split each test of the module (not deal them out).
    let part = doc(&[&twopc, "--partition", "2/3"], Some("2"), false).1;
    let ran: Vec<bool> = (part["tests"].as_array().unwrap().iter())
        .map(|t| t["ran"] != false)
        .collect();
    assert_eq!(ran, [true, true, true], "{part}");
    for t in part["tests"].as_array().unwrap() {
        assert_eq!(t["partition"]["split"], "jobs", "{part}");
    }
}
