//! `wasmrace check --strategy dpor`: what the text and `--json` reports say
//! of a partial-order-reduced search (executions, traces, sleep-set-blocked
//! executions, exhausted, the bound that stopped or pruned it).

use super::{expect, fixture, wasmrace, TempDir};

/// The test of `check --json`'s one test.
fn json_test(stdout: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    doc["tests"][0].clone()
}

#[test]
fn dpor_reports_traces_blocked_executions_and_bounds() {
    let dir = TempDir::new("cli-dpor");
    let m = fixture(&dir, "readers");
    // Exhausted: readers(3) has 8 traces, one execution each.
    let args = ["check", &m, "--test", "readers_3", "--strategy", "dpor"];
    let text = wasmrace(&dir, &args);
    expect(&text, 0);
    assert!(
        text.stdout.starts_with(
            "test `readers_3` (dpor, optimal, unbounded): no bug in 8 executions \
             (space exhausted: all 8 traces (partial orders) were explored)\n"
        ),
        "{}",
        text.stdout
    );
    assert!(text
        .stdout
        .contains("traces: 8, sleep-set-blocked executions: 0"));
    let json = wasmrace(&dir, &[&args[..], &["--json"]].concat());
    expect(&json, 0);
    let t = json_test(&json.stdout);
    assert_eq!(t["strategy"], "dpor");
    assert_eq!(t["options"]["dpor"], "optimal");
    assert_eq!(t["executions"], 8);
    assert_eq!(t["traces"], 8);
    assert_eq!(t["sleep_set_blocked"], 0);
    assert_eq!(t["exhausted"], true);
    assert!(t["stopped_by"].is_null());
    assert!(t["pruned_by"].is_null());
    // Stopped by the execution budget: the bound that stopped it is named.
    let json = wasmrace(
        &dir,
        &[&args[..], &["--max-executions", "5", "--json"]].concat(),
    );
    expect(&json, 0);
    let t = json_test(&json.stdout);
    assert_eq!(
        (t["executions"].as_u64(), t["traces"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(t["exhausted"], false);
    assert_eq!(t["stopped_by"]["flag"], "--max-executions");
    assert_eq!(t["stopped_by"]["value"], 5);
    // Source-DPOR counts its sleep-set-blocked executions apart from traces.
    let json = wasmrace(&dir, &[&args[..], &["--dpor", "source", "--json"]].concat());
    expect(&json, 0);
    let t = json_test(&json.stdout);
    assert_eq!(t["traces"], 8);
    let blocked = t["sleep_set_blocked"].as_u64().unwrap();
    assert_eq!(t["executions"].as_u64(), Some(8 + blocked));
    // Other strategies count no traces.
    let json = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "readers_3",
            "--strategy",
            "dfs",
            "--unbounded",
            "--json",
        ],
    );
    let t = json_test(&json.stdout);
    assert!(t["traces"].is_null() && t["sleep_set_blocked"].is_null());
}

/// Under fair scheduling DPOR may not reach every fair trace; a run that
/// dropped a reversal for it says so, in text and JSON, instead of
/// claiming a proof.
#[test]
fn dpor_under_fairness_says_what_it_dropped() {
    let dir = TempDir::new("cli-dpor-fair");
    let m = fixture(&dir, "spin_wait");
    let args = ["check", &m, "--test", "spin_lock", "--strategy", "dpor"];
    let text = wasmrace(&dir, &args);
    expect(&text, 0);
    assert!(
        text.stdout.contains(
            "(space exhausted within the reach of dpor under fair scheduling: 2 planned \
             reversals dropped because their thread was not enabled (fair scheduling hid it, \
             or it was blocked); `--strategy dfs --unbounded` reaches every fair trace)"
        ),
        "{}",
        text.stdout
    );
    let json = wasmrace(&dir, &[&args[..], &["--json"]].concat());
    let t = json_test(&json.stdout);
    assert_eq!(t["pruned_by"]["flag"], "--fairness-bound");
    assert_eq!(t["pruned_by"]["value"], 2);
}

/// `wasmrace bench` counts DPOR's distinct partial orders as it does every
/// strategy's, next to the published trace counts: equal, in as many
/// executions, on the DPOR benchmarks it exhausts.
#[test]
fn bench_reports_dpor_partial_orders_against_published_counts() {
    let dir = TempDir::new("cli-dpor-bench");
    let run = wasmrace(
        &dir,
        &[
            "bench",
            "--tests",
            "readers_3,writers_3,lastzero_3,optimal_dpor",
            "--strategies",
            "dpor",
            "--executions",
            "1000",
            "--seeds",
            "1",
            "--jobs",
            "1",
            "--format",
            "json",
        ],
    );
    expect(&run, 0);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        let traces = row["traces"].as_u64().expect("a published count");
        let dpor = &row["strategies"][0];
        assert_eq!(dpor["strategy"], "dpor");
        assert_eq!(dpor["exhausted"], true, "{row}");
        assert_eq!(
            dpor["distinct_orders"].as_f64(),
            Some(traces as f64),
            "{row}"
        );
        assert_eq!(dpor["executions"].as_u64(), Some(traces), "{row}");
    }
}
