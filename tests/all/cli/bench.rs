//! `wasmrace bench` end to end: the markdown and JSON outputs say the same
//! thing (parsed back), the output does not depend on `--jobs` (timing
//! aside), `--tests` picks a subset of the suite or of a module, the chart
//! is written, and bad input is one error line with exit 2. Budgets are
//! tiny: these check the plumbing, the host's unit tests the arithmetic.

use super::{expect, expect_error, fixture, wasmrace, TempDir};
use serde_json::Value;

/// A markdown section's table: the lines starting with `|` after the
/// `### <title>` heading, split into trimmed cells, the alignment row
/// dropped.
fn markdown_table(md: &str, title: &str) -> Vec<Vec<String>> {
    let heading = format!("### {title}");
    let mut lines = md.lines().skip_while(|l| *l != heading);
    assert!(lines.next().is_some(), "no `{heading}` in:\n{md}");
    lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// A printed hit ratio back as a number, and whether it was marked best.
fn parse_ratio(cell: &str) -> (f64, bool) {
    let best = cell.starts_with("**");
    let bare = cell.trim_matches('*');
    let value = if bare == "-" {
        0.0
    } else {
        bare.parse()
            .unwrap_or_else(|_| panic!("not a ratio: {cell}"))
    };
    (value, best)
}

/// Equal to three significant digits (what the tables print).
fn close(printed: f64, exact: f64) -> bool {
    (printed - exact).abs() <= exact.abs() * 5e-3 + 1e-12
}

/// Everything before the timing part, which is documented to vary.
fn before_timing(out: &str) -> &str {
    let at = out
        .find("\n### Timing")
        .or_else(|| out.find("\nTiming ("))
        .unwrap_or_else(|| panic!("no timing part in:\n{out}"));
    &out[..at]
}

/// Drops every `timing` field of the JSON document.
fn without_timing(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("timing");
            m.values_mut().for_each(without_timing);
        }
        Value::Array(a) => a.iter_mut().for_each(without_timing),
        _ => {}
    }
}

const SMALL: &[&str] = &[
    "bench",
    "--tests",
    "lost_update,mutex_counter,pos_example",
    "--strategies",
    "dfs,random,pos",
    "--executions",
    "40",
    "--seeds",
    "2",
];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = SMALL.to_vec();
    v.extend_from_slice(extra);
    v
}

#[test]
fn markdown_and_json_agree() {
    let dir = TempDir::new("bench-formats");
    let md = wasmrace(
        &dir,
        &with(&["--format", "markdown", "--chart", "hits.svg"]),
    );
    expect(&md, 0);
    assert_eq!(md.stderr, "", "no progress bar without a terminal");
    let json = wasmrace(&dir, &with(&["--format", "json"]));
    expect(&json, 0);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();

    // The suite's lost_update program has two tests; with mutex_counter
    // and pos_example, four rows.
    let rows = doc["rows"].as_array().unwrap();
    let tests: Vec<&str> = rows.iter().map(|r| r["test"].as_str().unwrap()).collect();
    assert_eq!(tests.len(), 4, "{tests:?}");
    for t in [
        "lost_update",
        "lost_update_3",
        "mutex_counter",
        "pos_example",
    ] {
        assert!(tests.contains(&t), "{t} not in {tests:?}");
    }
    assert_eq!(
        doc["settings"]["strategies"],
        serde_json::json!(["dfs", "random", "pos"])
    );
    // dfs runs once, random and pos once per seed.
    assert_eq!(doc["cells"].as_array().unwrap().len(), 4 * 5);
    assert_eq!(doc["tests_with_bug"], 3);

    let hit = markdown_table(&md.stdout, "Hit ratio");
    let header = &hit[0];
    assert_eq!(header[..3], ["test", "family", "bug"]);
    assert_eq!(header[3..], ["dfs", "random", "pos"]);
    assert_eq!(hit.len(), 1 + 4 + 2, "{hit:?}");
    for (row, line) in rows.iter().zip(&hit[1..5]) {
        assert_eq!(line[0], row["test"].as_str().unwrap());
        assert_eq!(line[1], row["family"].as_str().unwrap());
        let best: Vec<&str> = row["best"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_str().unwrap())
            .collect();
        for (i, cell) in row["strategies"].as_array().unwrap().iter().enumerate() {
            let (printed, marked) = parse_ratio(&line[3 + i]);
            let exact = cell["hit_ratio"].as_f64().unwrap();
            assert!(close(printed, exact), "{line:?} vs {exact}");
            assert_eq!(
                marked,
                best.contains(&cell["strategy"].as_str().unwrap()),
                "{line:?}"
            );
        }
    }
    // Hardest first: best hit ratios increase over the rows with a bug.
    let bests: Vec<f64> = rows
        .iter()
        .filter(|r| r["has_bug"] == true)
        .map(|r| r["best_hit_ratio"].as_f64().unwrap())
        .collect();
    assert!(bests.windows(2).all(|w| w[0] <= w[1]), "{bests:?}");
    assert_eq!(
        rows[3]["test"], "mutex_counter",
        "the bug-free test comes last"
    );

    let geo = &hit[5];
    assert!(geo[0].starts_with("geometric mean"), "{geo:?}");
    let found = &hit[6];
    assert_eq!(found[0], "bugs found (of 3)");
    for (i, t) in doc["totals"].as_array().unwrap().iter().enumerate() {
        let (g, _) = parse_ratio(&geo[3 + i]);
        assert!(
            close(g, t["geomean_hit_ratio"].as_f64().unwrap()),
            "{geo:?}"
        );
        assert_eq!(found[3 + i], t["bugs_found"].to_string());
    }

    // Executions to the first bug: `mean`, ` / median` where it differs,
    // ` (found/runs)` where some run missed.
    let first = markdown_table(&md.stdout, "Executions to the first bug");
    for (row, line) in rows.iter().zip(&first[1..]) {
        for (i, cell) in row["strategies"].as_array().unwrap().iter().enumerate() {
            let text = &line[3 + i];
            match cell["first_bug_mean"].as_f64() {
                None => assert_eq!(text, "-"),
                Some(mean) => {
                    let printed: f64 = text.split(' ').next().unwrap().parse().unwrap();
                    assert!((printed - mean).abs() <= 0.05, "{text} vs {mean}");
                    let partial = cell["found"] != cell["runs"];
                    assert_eq!(
                        text.ends_with(&format!("({}/{})", cell["found"], cell["runs"])),
                        partial,
                        "{text}"
                    );
                }
            }
        }
    }
    let orders = markdown_table(&md.stdout, "Partial orders");
    for (row, line) in rows.iter().zip(&orders[1..]) {
        let dfs = &row["strategies"][0];
        let printed: f64 = line[3].split(' ').next().unwrap().parse().unwrap();
        assert_eq!(printed, dfs["distinct_orders"].as_f64().unwrap());
        assert!(printed >= 1.0);
    }

    let svg = std::fs::read_to_string(dir.join("hits.svg")).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    for name in ["dfs", "random", "pos", "lost_update_3", "pos_example"] {
        assert!(svg.contains(name), "{name} not in the chart");
    }
    assert!(
        !svg.contains(">mutex_counter<"),
        "bug-free tests are left out"
    );
}

#[test]
fn jobs_do_not_change_the_output() {
    let dir = TempDir::new("bench-jobs");
    let one = wasmrace(&dir, &with(&["--jobs", "1"]));
    let two = wasmrace(&dir, &with(&["--jobs", "2"]));
    expect(&one, 0);
    expect(&two, 0);
    assert_eq!(before_timing(&one.stdout), before_timing(&two.stdout));
    assert!(one
        .stdout
        .starts_with("wasmrace bench: 4 tests (3 with a bug), 3 strategies"));

    let j1 = wasmrace(&dir, &with(&["--jobs", "1", "--format", "json"]));
    let j3 = wasmrace(&dir, &with(&["--jobs", "3", "--format", "json"]));
    let mut a: Value = serde_json::from_str(&j1.stdout).unwrap();
    let mut b: Value = serde_json::from_str(&j3.stdout).unwrap();
    without_timing(&mut a);
    without_timing(&mut b);
    assert_eq!(a, b);

    // Another base seed changes the sampling strategies' runs.
    let other = wasmrace(
        &dir,
        &with(&["--jobs", "2", "--seed", "9", "--format", "json"]),
    );
    let c: Value = serde_json::from_str(&other.stdout).unwrap();
    assert_ne!(a["cells"][1]["seed"], c["cells"][1]["seed"]);
}

#[test]
fn tests_pick_a_subset_of_a_module() {
    let dir = TempDir::new("bench-module");
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(
        &dir,
        &[
            "bench",
            &m,
            "--tests",
            "*_3",
            "--strategies",
            "random",
            "--executions",
            "30",
            "--seeds",
            "1",
            "--format",
            "json",
        ],
    );
    expect(&run, 0);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["program"], "lost_update");
    assert_eq!(rows[0]["test"], "lost_update_3");
    // A module's own tests carry no suite knowledge.
    assert!(rows[0].get("expected_bug").is_none());
    assert_eq!(rows[0]["strategies"][0]["executions"], 30);
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let dir = TempDir::new("bench-errors");
    let m = fixture(&dir, "lost_update");
    expect_error(
        &wasmrace(&dir, &["bench", &m, "--strategies", "dfs,quantum"]),
        "unknown strategy `quantum`; the strategies are: `portfolio`, `dfs`",
    );
    let bytes = std::fs::read(dir.join(&m)).unwrap();
    std::fs::write(dir.join("truncated.wasm"), &bytes[..100]).unwrap();
    expect_error(
        &wasmrace(&dir, &["bench", "truncated.wasm", "--executions", "5"]),
        "`truncated.wasm` is not valid wasm",
    );
    expect_error(
        &wasmrace(&dir, &["bench", &m, "--tests", "nope"]),
        "no test matches `nope`; the tests are: `lost_update/lost_update`",
    );
    expect_error(
        &wasmrace(&dir, &["bench", &m, "--executions", "0"]),
        "`--executions` must be at least 1",
    );
    expect_error(
        &wasmrace(&dir, &["bench", "missing.wasm"]),
        "cannot read `missing.wasm`",
    );
}

/// With no modules, the suite is read from `--suite-dir`, else
/// `$WASMRACE_SUITE_DIR`, else the fixtures' build output (the default the
/// other tests use); a directory without the guests is one line naming the
/// build command and both ways to point elsewhere, exit 2.
#[test]
fn the_suite_is_found_or_its_absence_explained() {
    let dir = TempDir::new("bench-suite-dir");
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "bench",
            "--tests",
            "lost_update_3",
            "--strategies",
            "random",
            "--executions",
            "5",
            "--seeds",
            "1",
            "--format",
            "json",
        ];
        v.extend_from_slice(extra);
        v
    };
    let rows = |run: &super::Run| {
        expect(run, 0);
        let doc: Value = serde_json::from_str(&run.stdout).unwrap();
        doc["rows"].as_array().unwrap().len()
    };
    let fixtures = wasmrace_fixtures::DIR;
    assert_eq!(rows(&wasmrace(&dir, &args(&["--suite-dir", fixtures]))), 1);
    let env = [("WASMRACE_SUITE_DIR", fixtures)];
    assert_eq!(rows(&super::wasmrace_env(&dir, &args(&[]), &env)), 1);

    let needle = "the bench suite's guests are not built (no `lost_update.wasm` in `empty`): \
                  build them with `cargo build -p wasmrace-fixtures` in the wasmrace \
                  repository, or give their directory with `--suite-dir` or \
                  `$WASMRACE_SUITE_DIR`";
    expect_error(&wasmrace(&dir, &args(&["--suite-dir", "empty"])), needle);
    let env = [("WASMRACE_SUITE_DIR", "empty")];
    expect_error(&super::wasmrace_env(&dir, &args(&[]), &env), needle);
    // An explicit directory wins over the variable.
    let run = super::wasmrace_env(&dir, &args(&["--suite-dir", fixtures]), &env);
    assert_eq!(rows(&run), 1);
    // The flag is for the suite only.
    let m = fixture(&dir, "lost_update");
    let run = wasmrace(&dir, &["bench", &m, "--suite-dir", fixtures]);
    expect(&run, 2);
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

/// `bench --partition K/N` as N processes, added up by `wasmrace merge`:
/// the merged comparison is the single run's (timing aside), in JSON and as
/// the table; a share prints that it is partial; parts that do not make one
/// run are one error line.
#[test]
fn partitions_merge_into_the_single_comparison() {
    let dir = TempDir::new("bench-partition");
    let single = wasmrace(&dir, &with(&["--format", "json"]));
    expect(&single, 0);
    let mut whole: Value = serde_json::from_str(&single.stdout).unwrap();
    without_timing(&mut whole);
    let table = wasmrace(&dir, &with(&[]));
    expect(&table, 0);
    for n in [1u32, 2, 3, 7] {
        let files: Vec<String> = (1..=n)
            .map(|k| {
                let part = format!("{k}/{n}");
                let share = wasmrace(&dir, &with(&["--format", "json", "--partition", &part]));
                expect(&share, 0);
                let file = format!("bench{k}of{n}.json");
                std::fs::write(dir.join(&file), &share.stdout).unwrap();
                file
            })
            .collect();
        let mut args = vec!["merge", "--json"];
        args.extend(files.iter().map(String::as_str));
        let merged = wasmrace(&dir, &args);
        expect(&merged, 0);
        let mut doc: Value = serde_json::from_str(&merged.stdout).unwrap();
        without_timing(&mut doc);
        assert_eq!(doc, whole, "{n} partitions");
        let text = wasmrace(
            &dir,
            &args[..1]
                .iter()
                .chain(&args[2..])
                .copied()
                .collect::<Vec<_>>(),
        );
        expect(&text, 0);
        assert_eq!(before_timing(&text.stdout), before_timing(&table.stdout));
        if n == 3 {
            let part = wasmrace(&dir, &with(&["--partition", "2/3"]));
            expect(&part, 0);
            assert!(
                part.stdout
                    .contains("Partition 2/3 of the run: 7 of its 20 cells"),
                "{}",
                part.stdout
            );
            expect_error(
                &wasmrace(&dir, &["merge", &files[0], &files[1]]),
                "partitions `3` of `3` are missing",
            );
            expect_error(
                &wasmrace(&dir, &["merge", &files[0], &files[1], &files[1]]),
                "is partition `2/3`, given twice",
            );
        }
    }
    let other = wasmrace(
        &dir,
        &with(&["--format", "json", "--partition", "2/2", "--seed", "9"]),
    );
    std::fs::write(dir.join("other.json"), &other.stdout).unwrap();
    expect_error(
        &wasmrace(&dir, &["merge", "bench1of2.json", "other.json"]),
        "`other.json` belongs to another run than the first part: its settings differ",
    );
    expect_error(
        &wasmrace(&dir, &with(&["--partition", "3/2"])),
        "`3/2` is not a partition",
    );
}
