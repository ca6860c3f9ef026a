//! `wasmrace merge`: adds up the `--json` reports of the N partitions of one
//! `wasmrace check --partition K/N` run into the verdict the whole run
//! gives, after checking that they belong together; the `--format json`
//! outputs of `wasmrace bench --partition K/N` into the whole comparison.
//!
//! The rule for bugs: with a strategy that splits by execution (random, the
//! pos family, pct, racefuzzer, ss, the portfolio), the bug of the lowest
//! global execution index, which is the
//! whole run's bug (its execution index too); with one that splits by
//! prefix (dfs), the bug with the smallest order key, the one a single run
//! reaches first; with whole tests dealt out, each test's own partition's.

use super::check::RacesArg;
use crate::files;
use crate::output;
use crate::partition;
use crate::report;
use crate::Verdict;
use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use wasmrace_explore::explorer::partition::{merge_race, BugRank};
use wasmrace_explore::RealRace;
use wasmrace_host::bench::{self, BenchResults};

const AFTER_HELP: &str = "\
The parts are the `--json` outputs of `wasmrace check --partition K/N` with
the same module, tests, strategy, options, seed, host settings (fuel,
memories, stack, Asyncify buffer, fairness, shrinking) and N, each K from 1
to N exactly once, each a regular file under --max-part-mb; anything else
is one error line (exit 2).

The merged verdict: executions added up; exhausted only if every partition
exhausted its share; the bounds that stopped any partition; RaceFuzzer's
real races by sites and object (counts added, the first execution the
earliest; with --races fail a real race counts as a bug, as in check); and
the bug one run would report: the lowest execution index (random, the pos
family, pct, racefuzzer, ss, the portfolio), or the first in depth-first
order (dfs). With whole tests dealt out (dpor, ses, procrastination, dfs
--state-cache), each test's result is the one of the partition that ran it.
Schedule paths are printed as each partition wrote them.

The parts may instead be the `--format json` outputs of `wasmrace bench
--partition K/N` with the same settings, tests, modules and N: the merged
comparison is the one a single `wasmrace bench` run gives (timing aside),
printed as its table, or as its JSON with --json.

Exit status: 0 no bug in any test (always, for a comparison), 1 a bug in at
least one test, 2 error.

Examples:
  wasmrace merge part1.json part2.json part3.json
  wasmrace merge parts/*.json --json > merged.json
  wasmrace merge bench-part*.json";

/// Add up the --json reports of the partitions of one `check --partition` run
/// (or `bench --partition` run)
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct MergeCommand {
    /// The `--json` output of each partition (`wasmrace check --partition
    /// K/N --json`)
    #[arg(value_name = "PART", required = true)]
    parts: Vec<PathBuf>,
    /// Print one JSON document on stdout instead of text
    #[arg(long)]
    json: bool,
    /// Print every step of a bug's interleaving
    #[arg(long)]
    full_trace: bool,
    /// What a real race (RaceFuzzer) found by any partition does to the exit
    /// code, as `check --races`
    #[arg(long, value_enum, default_value_t = RacesArg::Warn)]
    races: RacesArg,
    /// Largest part read, in MiB
    #[arg(long, value_name = "MB", default_value_t = files::DEFAULT_MAX_PART_MB)]
    max_part_mb: u64,
}

/// One part: its path, its document and its `K`.
struct Part {
    path: PathBuf,
    doc: Value,
    k: u64,
}

impl Part {
    fn name(&self) -> String {
        format!("`{}`", files::shown_path(&self.path))
    }

    fn tests(&self) -> &[Value] {
        self.doc["tests"].as_array().map_or(&[], Vec::as_slice)
    }
}

impl MergeCommand {
    pub fn run(self) -> Result<Verdict> {
        let max_bytes = super::mib("--max-part-mb", self.max_part_mb)?;
        let docs = self
            .parts
            .iter()
            .map(|p| read_json(p, max_bytes))
            .collect::<Result<Vec<_>>>()?;
        if docs[0].get("settings").is_some() && docs[0].get("cells").is_some() {
            return self.run_bench(docs);
        }
        let parts = self
            .parts
            .iter()
            .zip(docs)
            .map(|(p, doc)| read_part(p, doc))
            .collect::<Result<Vec<_>>>()?;
        let parts = check_together(parts)?;
        let merged: Vec<Value> = (0..parts[0].tests().len())
            .map(|i| merge_test(&runs_of(&parts, i)))
            .collect::<Result<_>>()?;
        let raced = |t: &Value| t["races"].as_array().is_some_and(|r| !r.is_empty());
        let bug = merged
            .iter()
            .any(|t| !t["bug"].is_null() || (self.races == RacesArg::Fail && raced(t)));
        if self.json {
            let doc = json!({
                "module": parts[0].doc["module"],
                "module_blake3": parts[0].doc["module_blake3"],
                "parts": parts.iter().map(|p| p.path.display().to_string()).collect::<Vec<_>>(),
                "tests": merged,
            });
            let mut text = serde_json::to_string_pretty(&doc)?;
            text.push('\n');
            output::print(&text)?;
        } else {
            let blocks: Vec<String> = merged
                .iter()
                .map(|t| text_result(t, self.full_trace))
                .collect::<Result<_>>()?;
            let mut text = blocks.join("\n");
            if merged.len() > 1 {
                text.push_str(&tests_summary(&merged));
            }
            output::print(&text)?;
        }
        Ok(if bug { Verdict::Bug } else { Verdict::NoBug })
    }
}

impl MergeCommand {
    /// Merges the shares of a `bench --partition` run and prints the
    /// comparison.
    fn run_bench(&self, docs: Vec<Value>) -> Result<Verdict> {
        let parts = self
            .parts
            .iter()
            .zip(docs)
            .map(|(path, doc)| {
                serde_json::from_value::<BenchResults>(doc).map_err(|_| {
                    anyhow::anyhow!(
                        "`{}` is not the --format json output of `wasmrace bench --partition`",
                        files::shown_path(path)
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let merged = bench::merge(parts).map_err(|e| match e.part() {
            Some(i) => anyhow::anyhow!("`{}` {e}", files::shown_path(&self.parts[i])),
            None => anyhow::anyhow!("{e}"),
        })?;
        let text = if self.json {
            let mut t = serde_json::to_string_pretty(&merged)?;
            t.push('\n');
            t
        } else {
            crate::bench_report::text(&merged)
        };
        output::print(&text)?;
        Ok(Verdict::NoBug)
    }
}

/// The partitions' `strategy_stats` as one run's: counters added up, the
/// ones listed in `peaks` (largest wakeup tree, delay bound) the largest
/// value of any partition, as `merge_reports` does with `Stat::combine`.
fn merge_stats(tests: &[&Value]) -> Value {
    let blocks: Vec<&Value> = tests.iter().map(|t| &t["strategy_stats"]).collect();
    let is_peak = |name: &str| {
        blocks
            .iter()
            .filter_map(|b| b["peaks"].as_array())
            .flatten()
            .any(|p| p == name)
    };
    let mut stats = Map::new();
    for (name, value) in blocks
        .iter()
        .filter_map(|b| b["stats"].as_object())
        .flatten()
    {
        let (old, new) = (
            stats.get(name).and_then(Value::as_u64),
            value.as_u64().unwrap_or(0),
        );
        let merged = match old {
            None => new,
            Some(old) if is_peak(name) => old.max(new),
            Some(old) => old.saturating_add(new),
        };
        stats.insert(name.clone(), json!(merged));
    }
    let mut saved = Map::new();
    for (name, value) in blocks
        .iter()
        .filter_map(|b| b["saved_states"].as_object())
        .flatten()
    {
        let total = saved.get(name).and_then(Value::as_u64).unwrap_or(0);
        saved.insert(
            name.clone(),
            json!(total.saturating_add(value.as_u64().unwrap_or(0))),
        );
    }
    let peaks = blocks.first().map_or(Value::Null, |b| b["peaks"].clone());
    json!({ "stats": stats, "peaks": peaks, "saved_states": saved })
}

/// The closing line of several tests, as `check` prints it.
fn tests_summary(merged: &[Value]) -> String {
    let failed: Vec<String> = merged
        .iter()
        .filter(|t| !t["bug"].is_null())
        .map(|t| report::shown(t["test"].as_str().unwrap_or_default()))
        .collect();
    let passed = merged.len() - failed.len();
    let mut text = format!(
        "\n{} tests: {} with a bug, {passed} without",
        merged.len(),
        failed.len()
    );
    if !failed.is_empty() {
        text.push_str(&format!(" (bugs in `{}`)", failed.join("`, `")));
    }
    text.push('\n');
    text
}

/// Reads one part's JSON document, by the rule of every input
/// ([`files::read_part`]: a regular file under `--max-part-mb`).
fn read_json(path: &Path, max_bytes: u64) -> Result<Value> {
    let text = files::read_part(path, max_bytes)?;
    serde_json::from_str(&text)
        .with_context(|| format!("`{}` is not valid JSON", files::shown_path(path)))
}

/// Checks one part's document and finds its `K`.
fn read_part(path: &Path, doc: Value) -> Result<Part> {
    let not_a_part = || {
        anyhow::anyhow!(
            "`{}` is not the --json output of `wasmrace check --partition`",
            files::shown_path(path)
        )
    };
    let tests = doc["tests"].as_array().ok_or_else(not_a_part)?;
    let k = tests.first().and_then(|t| t["partition"]["k"].as_u64());
    let k = k.ok_or_else(not_a_part)?;
    let well_formed = doc["module_blake3"].is_string()
        && tests.iter().all(|t| {
            t["test"].is_string()
                && t["partition"]["k"].as_u64() == Some(k)
                && t["partition"]["n"].is_u64()
                && t["executions"].is_u64()
        });
    if !well_formed {
        return Err(not_a_part());
    }
    // Races merge by their numeric key (`merge_races`); a part without it
    // (an older wasmrace's) would merge every race into one.
    let keyed = |r: &Value| {
        let key = r["key"].as_array();
        key.is_some_and(|k| k.len() == 3 && k.iter().all(Value::is_u64))
    };
    let mut races = tests
        .iter()
        .flat_map(|t| t["races"].as_array().into_iter().flatten());
    if !races.all(keyed) {
        bail!(
            "`{}` lists real races without their `key`: write it again with this wasmrace",
            files::shown_path(path)
        );
    }
    Ok(Part {
        path: path.to_path_buf(),
        doc,
        k,
    })
}

/// The fields of a test that must be equal in every part, and how errors
/// name them.
const SAME: [(&str, &[&str]); 6] = [
    ("strategy", &["strategy"]),
    ("seed", &["seed"]),
    ("options", &["options"]),
    ("partition count", &["partition", "n"]),
    ("split depth", &["partition", "split_depth"]),
    ("split", &["partition", "split"]),
];

/// Checks that two parts' entries of one test ran under the same settings
/// (`check`'s `run_settings`: the host's bounds, fairness, shrinking),
/// naming the first that differs; a part without them (an older
/// wasmrace's) cannot be checked, and is refused.
fn same_settings(first: &Part, p: &Part, a: &Value, b: &Value) -> Result<()> {
    let test = report::shown(a["test"].as_str().unwrap_or_default());
    let (x, y) = (&a["partition"]["settings"], &b["partition"]["settings"]);
    let (Some(xs), Some(ys)) = (x.as_object(), y.as_object()) else {
        bail!(
            "{} or {} does not record the settings test `{test}` ran under: write them again \
             with this wasmrace",
            first.name(),
            p.name()
        );
    };
    let keys = xs.keys().chain(ys.keys());
    if let Some(key) = keys.into_iter().find(|k| xs.get(*k) != ys.get(*k)) {
        let show = |v: Option<&Value>| plain(v.unwrap_or(&Value::Null));
        bail!(
            "{} and {} ran test `{test}` with a different `{}` (`{}` and `{}`): not partitions \
             of one run",
            first.name(),
            p.name(),
            report::shown(key),
            show(xs.get(key)),
            show(ys.get(key))
        );
    }
    Ok(())
}

/// Checks that the parts are the N partitions of one run (same module,
/// tests, strategy, options, seed and N; each K once) and returns them in
/// K order.
fn check_together(mut parts: Vec<Part>) -> Result<Vec<Part>> {
    let first = &parts[0];
    let names = |p: &Part| -> Vec<Value> { p.tests().iter().map(|t| t["test"].clone()).collect() };
    for p in &parts[1..] {
        if p.doc["module_blake3"] != first.doc["module_blake3"] {
            bail!(
                "{} and {} are reports of different modules (blake3 `{}` and `{}`): not partitions of one run",
                first.name(),
                p.name(),
                plain(&first.doc["module_blake3"]),
                plain(&p.doc["module_blake3"])
            );
        }
        if names(p) != names(first) {
            bail!(
                "{} and {} checked different tests (`{}` and `{}`): not partitions of one run",
                first.name(),
                p.name(),
                plain(&Value::from(names(first))),
                plain(&Value::from(names(p)))
            );
        }
        for (a, b) in first.tests().iter().zip(p.tests()) {
            for (what, keys) in SAME {
                let (x, y) = (at(a, keys), at(b, keys));
                if x != y {
                    let (x, y) = (plain(x), plain(y));
                    bail!(
                        "{} and {} differ in the {what} of test `{}` (`{x}` and `{y}`): not partitions of one run",
                        first.name(),
                        p.name(),
                        report::shown(a["test"].as_str().unwrap_or_default())
                    );
                }
            }
            same_settings(first, p, a, b)?;
        }
    }
    let n = first.tests()[0]["partition"]["n"].as_u64().unwrap_or(0);
    if let Some(p) = parts
        .iter()
        .find(|p| p.k == 0 || p.k > n || n > u64::from(u32::MAX))
    {
        bail!(
            "{} names partition `{}/{n}`, which is not a partition `K/N` (1 <= K <= N <= {})",
            p.name(),
            p.k,
            u32::MAX
        );
    }
    check_dealing(&parts, n)?;
    parts.sort_by_key(|p| p.k);
    for pair in parts.windows(2) {
        if pair[0].k == pair[1].k {
            bail!(
                "partition {}/{n} is given twice: {} and {}",
                pair[0].k,
                pair[0].name(),
                pair[1].name()
            );
        }
    }
    let given: Vec<u64> = parts.iter().map(|p| p.k).collect();
    if let Some(missing) = (1..=n).find(|k| !given.contains(k)) {
        bail!(
            "partition {missing}/{n} is missing: {} part{} given for {n} partitions",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" }
        );
    }
    Ok(parts)
}

/// A value as errors quote it: a string as itself, anything else as
/// compact JSON; escaped, and clipped to 80 characters (a part is any file,
/// and its values may be huge or hold terminal escapes).
fn plain(v: &Value) -> String {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    wasmrace_trace::text::clipped(&text, 80)
}

/// The value at a path of keys.
fn at<'a>(v: &'a Value, keys: &[&str]) -> &'a Value {
    keys.iter().fold(v, |v, k| &v[*k])
}

/// The parts' entries for test `i` that explored it: every part's, or,
/// when whole tests were dealt out, the one part's that ran it
/// (`check_dealing` made sure there is exactly one).
fn runs_of(parts: &[Part], i: usize) -> Vec<&Value> {
    (parts.iter().map(|p| &p.tests()[i]))
        .filter(|t| t["ran"] != false)
        .collect()
}

/// With whole tests dealt out (`split` is `test`), checks that each test
/// went where the rule deals it ([`partition::dealt_to`]) and that exactly
/// the part it went to ran it.
fn check_dealing(parts: &[Part], n: u64) -> Result<()> {
    for p in parts {
        for (i, t) in p.tests().iter().enumerate() {
            if t["partition"]["split"] != "test" {
                continue;
            }
            let due = u64::from(partition::dealt_to(i, n as u32));
            let ran = t["ran"] != false;
            if t["partition"]["dealt_to"].as_u64() != Some(due) || ran != (due == p.k) {
                bail!(
                    "{} does not deal test `{}` to partition {due}/{n} as `check --partition` \
                     does: not partitions of one run",
                    p.name(),
                    report::shown(t["test"].as_str().unwrap_or_default())
                );
            }
        }
    }
    Ok(())
}

/// The entries of one test that explored it, merged: counts added,
/// exhausted if every part exhausted its share, bounds of any part, and
/// the bug by the rule.
fn merge_test(tests: &[&Value]) -> Result<Value> {
    let executions = checked_sum(tests, &["executions"])?;
    let skipped = checked_sum(tests, &["partition", "skipped"])?;
    let mut bound_hits: Vec<Value> = Vec::new();
    for hit in tests
        .iter()
        .filter_map(|t| t["bound_hits"].as_array())
        .flatten()
    {
        if !bound_hits.contains(hit) {
            bound_hits.push(hit.clone());
        }
    }
    let stats = merge_stats(tests);
    let t0 = tests[0];
    let exhausted = tests.iter().all(|t| t["exhausted"] == true);
    // As `check --json` has them (`report::search_json`): counters from
    // the merged statistics, bounds from any part they stopped or pruned.
    let counter = |name: &str| stats["stats"].get(name).cloned().unwrap_or(Value::Null);
    let any = |key: &str| {
        (tests.iter().map(|t| &t[key]))
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null)
    };
    Ok(json!({
        "test": t0["test"],
        "strategy": t0["strategy"],
        "seed": t0["seed"],
        "options": t0["options"],
        "description": t0["partition"]["description"],
        "partitions": t0["partition"]["n"],
        "split": t0["partition"]["split"],
        "split_depth": t0["partition"]["split_depth"],
        "settings": t0["partition"]["settings"],
        "executions": executions,
        "partition_skipped": skipped,
        "exhausted": exhausted,
        "exhausted_covers": exhausted.then_some(report::EXHAUSTED_COVERS),
        "bound_hits": bound_hits,
        "strategy_stats": stats,
        "traces": counter("traces"),
        "sleep_set_blocked": counter("sleep-set-blocked executions"),
        "stopped_by": any("stopped_by"),
        "pruned_by": any("pruned_by"),
        "elapsed_ms": tests.iter().filter_map(|t| t["elapsed_ms"].as_u64()).fold(0u64, u64::saturating_add),
        "nothing_to_interleave": t0["nothing_to_interleave"],
        "bug": first_bug(tests),
        "races": merge_races(tests),
        "run_by": (t0["partition"]["split"] == "test").then(|| t0["partition"]["k"].clone()),
    }))
}

/// The sum over the parts of the count at `keys`, refused when it does
/// not fit: partitions of one run never count past `u64` together, so
/// such parts are forged or of different runs.
fn checked_sum(tests: &[&Value], keys: &[&str]) -> Result<u64> {
    let mut total = 0u64;
    for t in tests {
        let n = at(t, keys).as_u64().unwrap_or(0);
        total = total.checked_add(n).with_context(|| {
            format!(
                "the parts' `{}` of test `{}` add up past {}: not partitions of one run",
                keys.join("."),
                report::shown(t["test"].as_str().unwrap_or_default()),
                u64::MAX
            )
        })?;
    }
    Ok(total)
}

/// The parts' real races (RaceFuzzer) merged by the rule `--jobs` merges
/// them by ([`merge_race`]: one per sites and object, counts added, the
/// first execution the earliest, in one run's order), each with its part's
/// names for the sites and the object.
fn merge_races(tests: &[&Value]) -> Vec<Value> {
    let mut races: Vec<RealRace> = Vec::new();
    let mut entries: Vec<Value> = Vec::new();
    for r in tests
        .iter()
        .flat_map(|t| t["races"].as_array().into_iter().flatten())
    {
        let race = real_race(r);
        let before = races.len();
        let i = merge_race(&mut races, &race);
        if races.len() > before {
            entries.insert(i, r.clone());
        }
        let merged = &races[i];
        let e = &mut entries[i];
        e["count"] = merged.count.into();
        e["executions"] = merged.executions.into();
        e["first_execution"] = merged.first_execution.into();
    }
    entries
}

/// A race's `key` in a part's JSON: its sites and object as the strategy
/// numbers them.
fn race_key(r: &Value) -> (u64, u64, u64) {
    let key = |i: usize| r["key"][i].as_u64().unwrap_or(0);
    (key(0), key(1), key(2))
}

/// A race of a part's JSON as the strategy counted it.
fn real_race(r: &Value) -> RealRace {
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    let (a, b, obj) = race_key(r);
    RealRace {
        sites: (a, b),
        obj: wasmrace_explore::trace::Oid(obj),
        count: number(&r["count"]),
        executions: number(&r["executions"]),
        first_execution: r["first_execution"].as_u64().unwrap_or(u64::MAX),
    }
}

/// Merged races as the host reports them, for the text block `check`
/// prints.
fn race_reports(t: &Value) -> Vec<wasmrace_host::RaceReport> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    (t["races"].as_array().into_iter().flatten())
        .map(|r| wasmrace_host::RaceReport {
            sites: (text(&r["sites"][0]), text(&r["sites"][1])),
            object: text(&r["object"]),
            count: number(&r["count"]),
            executions: number(&r["executions"]),
            first_execution: number(&r["first_execution"]),
            key: race_key(r),
        })
        .collect()
}

/// The bug one run reports first, with the partition that found it, by
/// the rule `--jobs` uses too ([`BugRank`]).
fn first_bug(tests: &[&Value]) -> Value {
    let rank = |t: &Value| {
        let order = t["partition"]["bug_order_key"].as_array().map(|k| {
            k.iter()
                .filter_map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect()
        });
        let execution = t["bug"]["execution"].as_u64().unwrap_or(u64::MAX);
        BugRank::new(order, execution)
    };
    let Some(t) = tests
        .iter()
        .filter(|t| !t["bug"].is_null())
        .min_by_key(|t| rank(t))
    else {
        return Value::Null;
    };
    let mut bug = t["bug"].clone();
    if let Some(b) = bug.as_object_mut() {
        b.insert("partition".into(), t["partition"]["k"].clone());
        b.insert("order_key".into(), t["partition"]["bug_order_key"].clone());
    }
    bug
}

/// A merged test as `check` prints one.
fn text_result(t: &Value, full_trace: bool) -> Result<String> {
    let n = &t["partitions"];
    let shares = match &t["run_by"] {
        Value::Null => format!("{n} partitions"),
        k => format!("run by partition {k}/{n}"),
    };
    let head = format!(
        "test `{}` ({}, {shares})",
        report::shown(t["test"].as_str().unwrap_or_default()),
        report::shown(t["description"].as_str().unwrap_or_default()),
    );
    let mut out = String::new();
    let bug = &t["bug"];
    if bug.is_null() {
        out.push_str(&format!("{head}: {}\n", no_bug_summary(t)));
        if t["exhausted"] == true {
            out.push_str(&format!("exhausted covers {}\n", report::EXHAUSTED_COVERS));
        }
    } else {
        let k = &bug["partition"];
        let place = if t["split"] == "prefix" {
            format!("in execution {} of partition {k}/{n}", bug["execution"])
        } else {
            format!("in execution {} (partition {k}/{n})", bug["execution"])
        };
        out.push_str(&format!("{head}: BUG found {place}\n\n"));
        let failure = serde_json::from_value(bug["failure"].clone())
            .context("a part's bug has no valid `failure`")?;
        out.push_str(&report::failure_block(&failure));
        out.push('\n');
        let trace: Vec<wasmrace_trace::TraceEvent> =
            serde_json::from_value(bug["trace"].clone()).unwrap_or_default();
        out.push_str(&report::trace_block(&trace, full_trace));
        out.push('\n');
        if let Some(path) = bug["schedule_path"].as_str() {
            out.push_str(&format!(
                "schedule written to {} (by partition {k}/{n})\n",
                report::shown(path)
            ));
        }
        if let Some(cmd) = bug["reproduce"].as_str() {
            out.push_str(&format!("reproduce with: {}\n", report::shown(cmd)));
        }
    }
    out.push_str(&report::races_block(&race_reports(t)));
    let secs = t["elapsed_ms"].as_u64().unwrap_or(0) as f64 / 1000.0;
    let within = match &t["run_by"] {
        Value::Null => "in all partitions".to_string(),
        k => format!("in partition {k}/{n}"),
    };
    out.push_str(&format!("time: {secs:.2} s {within}\n"));
    Ok(out)
}

/// `no bug in N executions (...)`, from the merged counts and bounds.
fn no_bug_summary(t: &Value) -> String {
    let n = t["executions"].as_u64().unwrap_or(0);
    let mut out = format!("no bug in {n} execution{}", if n == 1 { "" } else { "s" });
    let hits = t["bound_hits"].as_array().map_or(&[][..], Vec::as_slice);
    let phrase = |effect: &str| {
        hits.iter()
            .find(|h| h["effect"] == effect)
            .map(|h| format!("{} {}", h["flag"].as_str().unwrap_or_default(), h["value"]))
    };
    if t["exhausted"] == true {
        out.push_str(match t["run_by"] {
            Value::Null => " (space exhausted in every partition",
            _ => " (space exhausted",
        });
        if let Some(p) = phrase("pruned the space") {
            out.push_str(&format!(" within {p}"));
        }
        out.push(')');
    } else {
        match phrase("stopped the run") {
            Some(p) => out.push_str(&format!(
                " (not exhausted: a partition was stopped by {p}; raise it to explore further)"
            )),
            None => out.push_str(" (not exhausted: the strategy ended its own plan)"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `merge_reports` merges `Stat`s: counts add up, the counters the
    /// parts list as peaks keep their largest value, saved states add up.
    #[test]
    fn strategy_stats_add_counts_and_keep_peaks() {
        let part = |count: u64, peak: u64, restored: u64| {
            json!({ "strategy_stats": {
                "stats": { "samples": count, "delay bound reached": peak },
                "peaks": ["delay bound reached"],
                "saved_states": { "restored": restored },
            }})
        };
        let (a, b) = (part(40, 3, 1), part(2, 2, 5));
        let merged = merge_stats(&[&a, &b]);
        assert_eq!(merged["stats"]["samples"], 42);
        assert_eq!(merged["stats"]["delay bound reached"], 3);
        assert_eq!(merged["saved_states"]["restored"], 6);
        assert_eq!(merged["peaks"], json!(["delay bound reached"]));
    }

    /// Regression: races merged in the parts' order came out as
    /// `r2, r1, r3` for parts listing `r1, r3` and `r2, r3`; one run lists
    /// them by sites and object.
    #[test]
    fn races_merge_in_one_runs_order() {
        let race = |a: u64, n: u64, first: u64| {
            json!({ "sites": [format!("s{a}"), "t"], "object": "cell", "count": n,
                    "executions": n, "first_execution": first, "key": [a, 9, 1] })
        };
        let a = json!({ "races": [race(1, 2, 5), race(3, 1, 7)] });
        let b = json!({ "races": [race(2, 1, 4), race(3, 4, 2)] });
        let merged = merge_races(&[&a, &b]);
        let sites: Vec<_> = merged.iter().map(|r| r["sites"][0].clone()).collect();
        assert_eq!(sites, [json!("s1"), json!("s2"), json!("s3")]);
        assert_eq!(merged[2]["count"], 5);
        assert_eq!(merged[2]["executions"], 5);
        assert_eq!(merged[2]["first_execution"], 2);
    }
}
