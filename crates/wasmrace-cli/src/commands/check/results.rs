//! What `wasmrace check` does with each test it explored: shrinks the
//! bug, writes its schedule, prints the test's report or keeps its JSON,
//! and closes the run with the JSON document or the summary line, and the
//! verdict.

use super::{CheckCommand, RacesArg, Settled};
use crate::files;
use crate::html;
use crate::output;
use crate::partition::{self, PartitionArg};
use crate::report;
use crate::verdict::Verdict;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use wasmrace_host::{CheckOptions, CheckOutcome, Guest, HostError, ShrinkOptions};

/// The tests' results as they come, in the module's order.
pub(super) struct Results<'a> {
    cmd: &'a CheckCommand,
    guest: &'a Guest,
    settled: &'a Settled,
    /// The module has several tests: schedule files name the test.
    several: bool,
    /// With `--json`, each test's entry.
    json: Vec<serde_json::Value>,
    /// The tests with a bug (or, with `--races fail`, a real race).
    failed: Vec<String>,
    /// A schedule that cannot be written does not cost the user the
    /// report: it is printed, and the error comes after it (exit 2).
    write_error: Option<String>,
    /// With `--html`, the outcomes to draw.
    explored: Vec<CheckOutcome>,
    /// Reports printed so far (a blank line goes between two).
    printed: usize,
}

impl<'a> Results<'a> {
    pub(super) fn new(
        cmd: &'a CheckCommand,
        guest: &'a Guest,
        settled: &'a Settled,
        several: bool,
    ) -> Self {
        Results {
            cmd,
            guest,
            settled,
            several,
            json: Vec::new(),
            failed: Vec::new(),
            write_error: None,
            explored: Vec::new(),
            printed: 0,
        }
    }

    /// Takes the next test's outcome: shrinks its bug, writes its schedule
    /// and prints its report (or keeps its JSON).
    pub(super) fn add(&mut self, mut outcome: CheckOutcome) -> Result<()> {
        let cmd = self.cmd;
        cmd.shrink(self.guest, &mut outcome)?;
        let test = &outcome.test;
        let schedule_path = match &outcome.bug {
            Some(bug) => {
                self.failed.push(test.clone());
                let written = cmd.write_schedule(test, self.several, &bug.schedule.to_json());
                if let Written::Failed(message) = &written {
                    self.write_error.get_or_insert_with(|| message.clone());
                }
                Some(written)
            }
            None => {
                let raced = !outcome.data_races.races.is_empty();
                if raced || (cmd.races == RacesArg::Fail && !outcome.races.is_empty()) {
                    self.failed.push(test.clone());
                }
                None
            }
        };
        if cmd.json {
            let covers = report::exhausted_covers(self.guest);
            let entry = cmd.json_result(&outcome, self.settled, schedule_path.as_ref(), covers);
            self.json.push(entry);
        } else {
            let gap = if self.printed > 0 { "\n" } else { "" };
            let covers = report::exhausted_covers(self.guest);
            let text =
                cmd.text_result(&outcome, &self.settled.opts, schedule_path.as_ref(), covers);
            output::print(&format!("{gap}{text}"))?;
            self.printed += 1;
        }
        if cmd.html.is_some() {
            self.explored.push(outcome);
        }
        Ok(())
    }

    /// Closes the run of `tests` (all of the module's, or `--test`): the
    /// HTML page, the JSON document or the summary line, and the verdict.
    pub(super) fn finish(mut self, tests: &[String]) -> Result<(Verdict, Vec<String>)> {
        let cmd = self.cmd;
        // A page that cannot be written does not cost the JSON document
        // or the summary: its error comes after them.
        let html = (cmd.html.as_ref())
            .map(|path| cmd.write_html(path, &self.explored, &self.settled.opts));
        if cmd.json {
            let entries = std::mem::take(&mut self.json);
            self.print_json(tests, entries)?;
        } else if self.printed > 1 || (self.several && self.settled.deal.is_some()) {
            output::print(&self.summary(tests.len()))?;
        }
        html.transpose()?;
        if let Some(message) = self.write_error {
            bail!("{message}");
        }
        let verdict = if self.failed.is_empty() {
            Verdict::NoBug
        } else {
            Verdict::Bug
        };
        Ok((verdict, self.failed))
    }

    /// The one JSON document, from the `entries` of the tests run (taken,
    /// not copied: a bug's trace can be large). Every partition's lists
    /// every test, so that `merge` can check that they belong together:
    /// the ones dealt elsewhere as such.
    fn print_json(&self, tests: &[String], entries: Vec<serde_json::Value>) -> Result<()> {
        let opts = &self.settled.opts;
        let mut ran = entries.into_iter();
        let results: Vec<serde_json::Value> = (tests.iter().enumerate())
            .map(|(i, test)| {
                let deal = self.settled.deal;
                match deal.zip(partition::elsewhere(deal, i)) {
                    Some((p, m)) => {
                        let mut entry = partition::not_run_json(p, test, m, opts);
                        entry["partition"]["settings"] = self.cmd.run_settings();
                        entry
                    }
                    None => ran.next().unwrap_or_default(),
                }
            })
            .collect();
        let doc = serde_json::json!({
            "module": self.cmd.module.display().to_string(),
            "module_blake3": self.guest.module_hash(),
            "tests": results,
        });
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        output::print(&text)
    }

    /// `N tests: B with a bug, P without (bugs in ...)`, or, for a
    /// partition that took whole tests, how many of the module's `of` it
    /// ran.
    fn summary(&self, of: usize) -> String {
        let (run, failed) = (self.printed, &self.failed);
        let counted = match self.settled.deal {
            Some(p) => format!("{run} of {of} tests run in partition {p}"),
            None => format!("{run} tests"),
        };
        let passed = run - failed.len();
        let mut text = format!("\n{counted}: {} with a bug, {passed} without", failed.len());
        if !failed.is_empty() {
            let names: Vec<String> = failed.iter().map(|t| report::shown(t)).collect();
            text.push_str(&format!(" (bugs in `{}`)", names.join("`, `")));
        }
        text.push('\n');
        text
    }
}

impl CheckCommand {
    /// Writes the schedule of a bug in `test`: to `--schedule-out`, or into
    /// `--schedule-dir`, created on demand, under a name from its contents
    /// ([`report::schedule_tag`]); by the rule of every output
    /// ([`files::write`]: never onto the module, never through a link).
    fn write_schedule(&self, test: &str, several: bool, json: &str) -> Written {
        let out = self.schedule_out.as_deref();
        let tag = report::schedule_tag(json);
        let mut path = report::schedule_path(&self.module, test, out, several, &tag);
        if out.is_none() {
            if let Err(e) = std::fs::create_dir_all(&self.schedule_dir) {
                return Written::Failed(format!(
                    "cannot create schedule folder `{}`: {e}",
                    files::shown_path(&self.schedule_dir)
                ));
            }
            path = self.schedule_dir.join(path);
        }
        let inputs = files::Inputs::of([self.module.as_path()]);
        match files::write(&path, json.as_bytes(), "schedule file", &inputs) {
            Ok(()) => Written::To(path),
            Err(e) => Written::Failed(e.to_string()),
        }
    }

    /// Every setting that can change an execution or the reported bug and
    /// is not among the strategy's `options`, as `merge` compares the
    /// parts by: the host's bounds (as a schedule file records them),
    /// fairness, and the shrinking of bugs (`null` with `--no-shrink`).
    pub(super) fn run_settings(&self) -> serde_json::Value {
        let host = self
            .host
            .config()
            .map(|c| c.schedule_settings(self.max_steps));
        let mut json = serde_json::to_value(host.ok()).unwrap_or_default();
        if let Some(j) = json.as_object_mut() {
            j.insert("fairness_bound".into(), self.fairness_bound.0.into());
            let shrink = (!self.no_shrink).then_some(self.shrink_budget);
            j.insert("shrink_budget".into(), shrink.into());
        }
        json
    }

    /// Refuses, before anything runs, an output the rule of every output
    /// forbids (`--schedule-out` or `--html` naming the module, a folder
    /// or a device), rather than after a long exploration.
    pub(super) fn check_outputs(&self) -> Result<()> {
        let inputs = files::Inputs::of([self.module.as_path()]);
        if let Some(out) = &self.schedule_out {
            files::check_output(out, "schedule file", &inputs)?;
        }
        if let Some(html) = &self.html {
            files::check_output(html, "html report", &inputs)?;
        }
        Ok(())
    }

    /// The command that replays a schedule: the module as the user named
    /// it (the schedule file holds the settings the bug was found under).
    fn reproduce_command(&self, schedule: &Path) -> String {
        self.host.replay_command(&self.module, schedule)
    }

    fn text_result(
        &self,
        outcome: &CheckOutcome,
        opts: &CheckOptions,
        schedule_path: Option<&Written>,
        covers: &str,
    ) -> String {
        let r = &outcome.report;
        let part = self
            .partition
            .map_or(String::new(), |p| format!(", partition {p}"));
        let head = format!(
            "test `{}` ({}{part})",
            report::shown(&outcome.test),
            report::strategy_description(&opts.strategy, opts.seed)
        );
        let mut out = String::new();
        match (&outcome.bug, schedule_path) {
            (Some(bug), Some(path)) => {
                out.push_str(&format!(
                    "{head}: BUG found in execution {}\n\n",
                    bug.execution
                ));
                out.push_str(&report::failure_block(&bug.failure));
                if bug.found_by != outcome.strategy {
                    out.push_str(&format!(
                        "found by: {} (member of the {})\n",
                        bug.found_by, outcome.strategy
                    ));
                }
                out.push_str(&report::shrunk_line(bug.shrunk_from.as_ref()));
                out.push('\n');
                out.push_str(&report::trace_block(&bug.trace, self.full_trace));
                out.push('\n');
                match path {
                    Written::To(path) => {
                        let shown = files::shown_path(path);
                        out.push_str(&format!("schedule written to {shown}\n"));
                        out.push_str(&format!(
                            "reproduce with: {}\n",
                            report::shown(&self.reproduce_command(path))
                        ));
                    }
                    Written::Failed(message) => {
                        out.push_str(&format!("schedule not written: {message}\n"));
                    }
                }
            }
            _ => {
                let summary = report::no_bug_summary(r);
                let summary = match outcome.data_races.races.len() {
                    0 => summary,
                    n => format!(
                        "{n} data race{}, {}",
                        if n == 1 { "" } else { "s" },
                        summary.replacen("no bug", "no other bug", 1)
                    ),
                };
                out.push_str(&format!("{head}: {summary}\n"));
                out.push_str(&report::pass_notes(
                    r,
                    outcome.nothing_to_interleave,
                    covers,
                ));
            }
        }
        out.push_str(&report::strategy_stats_block(r));
        out.push_str(&report::races_block(&outcome.races));
        out.push_str(&report::data_races_block(&outcome.data_races));
        out.push_str(&report::timing_line(
            r.executions,
            r.executions_run,
            r.elapsed,
        ));
        out
    }

    /// Writes the HTML report of every test explored to `path`.
    fn write_html(
        &self,
        path: &Path,
        outcomes: &[CheckOutcome],
        opts: &CheckOptions,
    ) -> Result<()> {
        let module = self.module.display().to_string();
        let sections = outcomes
            .iter()
            .map(|o| {
                let mut notes = vec![report::strategy_description(&opts.strategy, opts.seed)];
                match &o.bug {
                    Some(bug) => {
                        notes.push(format!(
                            "BUG found in execution {} by {}",
                            bug.execution, bug.found_by
                        ));
                        let shrunk = report::shrunk_line(bug.shrunk_from.as_ref());
                        if !shrunk.is_empty() {
                            notes.push(shrunk.trim_end().to_string());
                        }
                    }
                    None => notes.push(report::no_bug_summary(&o.report)),
                }
                html::Section {
                    test: &o.test,
                    notes,
                    failure: o.bug.as_ref().map(|b| &b.failure),
                    trace: o.bug.as_ref().map_or(&[], |b| &b.trace),
                    curve: None,
                }
            })
            .collect();
        let page = html::Page {
            command: "check",
            module: &module,
            sections,
        };
        let inputs = files::Inputs::of([self.module.as_path()]);
        html::write(path, &page, self.json, &inputs)
    }

    /// Shrinks the bug of `outcome`, if any, unless `--no-shrink`; a
    /// schedule that does not shrink (or, impossibly, does not replay)
    /// stays as found.
    fn shrink(&self, guest: &Guest, outcome: &mut CheckOutcome) -> Result<()> {
        let Some(bug) = outcome.bug.as_mut().filter(|_| !self.no_shrink) else {
            return Ok(());
        };
        let opts = ShrinkOptions {
            budget_steps: self.shrink_budget,
            max_steps: Some(self.max_steps),
        };
        match wasmrace_host::shrink_bug(guest, bug, &opts) {
            Ok(()) | Err(HostError::NotReproduced { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn json_result(
        &self,
        outcome: &CheckOutcome,
        settled: &Settled,
        schedule_path: Option<&Written>,
        covers: &str,
    ) -> serde_json::Value {
        let opts = &settled.opts;
        let r = &outcome.report;
        let bug = match (&outcome.bug, schedule_path) {
            (Some(bug), Some(written)) => {
                let mut json = serde_json::json!({
                    "execution": bug.execution,
                    "found_by": bug.found_by,
                    "failure": bug.failure,
                    "shrunk_from": bug.shrunk_from,
                    "trace": bug.trace,
                });
                let place = match written {
                    Written::To(path) => serde_json::json!({
                        "schedule_path": path.display().to_string(),
                        "reproduce": self.reproduce_command(path),
                    }),
                    Written::Failed(message) => serde_json::json!({
                        "schedule_path": null,
                        "schedule_error": message,
                    }),
                };
                if let (Some(j), serde_json::Value::Object(p)) = (json.as_object_mut(), place) {
                    j.extend(p);
                }
                json
            }
            _ => serde_json::Value::Null,
        };
        let mut json = serde_json::json!({
            "test": outcome.test,
            "strategy": outcome.strategy,
            "seed": outcome.seed,
            "options": opts.to_json(),
            "executions": r.executions,
            "exhausted": r.exhausted,
            "exhausted_covers": r.exhausted.then_some(covers),
            "nothing_to_interleave": outcome.nothing_to_interleave.map(|n| n.reason()),
            "bound_hits": report::bound_hits_json(r),
            "strategy_stats": report::strategy_stats_json(r),
            "elapsed_ms": report::elapsed_ms(r.elapsed),
            "bug": bug,
            "races": outcome.races.iter().map(|r| serde_json::json!({
                "sites": [r.sites.0, r.sites.1],
                "object": r.object,
                "count": r.count,
                "executions": r.executions,
                "first_execution": r.first_execution,
                // What `wasmrace merge` merges and sorts by, as one run.
                "key": [r.key.0, r.key.1, r.key.2],
            })).collect::<Vec<_>>(),
            "data_races": outcome.data_races.races.iter().map(|f| serde_json::json!({
                "location": f.location,
                "thread": f.thread,
                "message": f.message,
            })).collect::<Vec<_>>(),
            "data_races_cut_at": outcome.data_races.cut_at,
        });
        if let Some(j) = json.as_object_mut() {
            j.extend(report::search_json(r));
        }
        if let (Some(p), Some(j)) = (self.partition, json.as_object_mut()) {
            let dealt_to = settled.deal.map(|p| p.k);
            let mut part = partition::partition_json(p, settled.sharing, dealt_to, opts, Some(r));
            part["settings"] = self.run_settings();
            j.insert("partition".into(), part);
        }
        json
    }
}

/// The line a partition that takes whole tests prints first: which of the
/// module's tests it runs.
pub(super) fn dealt_line(p: PartitionArg, mine: &[String], of: usize) -> String {
    let names: Vec<String> = mine.iter().map(|t| report::shown(t)).collect();
    match names.len() {
        0 => {
            format!("partition {p} runs none of the module's {of} tests (they are dealt in turn)\n")
        }
        n => format!(
            "partition {p} runs {n} of the module's {of} tests (dealt in turn): `{}`\n\n",
            names.join("`, `")
        ),
    }
}

/// Where the schedule of a bug went.
enum Written {
    /// Written to this file.
    To(PathBuf),
    /// Not written: the error, in words.
    Failed(String),
}
