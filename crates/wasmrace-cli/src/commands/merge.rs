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
//!
//! The checks and the folding are `wasmrace_merge`'s (the fuzz harness
//! runs them on forged parts); this file reads the parts and prints.

use super::check::RacesArg;
use crate::files;
use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use wasmrace_host::bench::{self, BenchResults};
use wasmrace_merge::{Merged, Part};

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

impl MergeCommand {
    pub fn run(self) -> Result<Verdict> {
        let max_bytes = super::mib("--max-part-mb", self.max_part_mb)?;
        let docs = self
            .parts
            .iter()
            .map(|p| read_json(p, max_bytes))
            .collect::<Result<Vec<_>>>()?;
        if wasmrace_merge::is_bench(&docs[0]) {
            return self.run_bench(docs);
        }
        let parts = self
            .parts
            .iter()
            .zip(docs)
            .map(|(p, doc)| Part::new(&files::shown_path(p), doc))
            .collect::<Result<Vec<_>, _>>()?;
        let Merged {
            module,
            module_blake3,
            order,
            tests: mut merged,
        } = wasmrace_merge::merge(parts)?;
        for t in &mut merged {
            let covers = (t["exhausted"] == true).then(|| report::merged_covers(&t["settings"]));
            t["exhausted_covers"] = covers.into();
        }
        let raced = |t: &Value| t["races"].as_array().is_some_and(|r| !r.is_empty());
        let bug = merged
            .iter()
            .any(|t| !t["bug"].is_null() || (self.races == RacesArg::Fail && raced(t)));
        if self.json {
            let paths = order.iter().map(|&i| self.parts[i].display().to_string());
            let doc = json!({
                "module": module,
                "module_blake3": module_blake3,
                "parts": paths.collect::<Vec<_>>(),
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
    let bytes = files::read_part(path, max_bytes)?;
    Ok(wasmrace_merge::parse(&files::shown_path(path), &bytes)?)
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
            key: wasmrace_merge::race_key(r),
        })
        .collect()
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
            let covers = report::merged_covers(&t["settings"]);
            out.push_str(&format!("exhausted covers {covers}\n"));
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
