//! `wasmrace shrink`: rewrites a failing schedule into one with the same
//! failure and the fewest preemptions, then switches, then steps.

use super::replay::resolve_settings;
use super::HostArgs;
use crate::files;
use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use wasmrace_host::{same_failure, Guest, Schedule, ScheduleStats, ShrinkOptions, Shrunk};

const AFTER_HELP: &str = "\
The schedule must reproduce the failure it records (as `wasmrace replay`
says `reproduced`); it is replayed under the settings it records, like
replay. Candidates are schedules with one context switch removed (a thread's
run of steps moved next to its other runs, Jalbert & Sen's trace
simplification), each replayed to check that it fails the same way (same
kind, same source location); the result is 1-minimal: removing any one of
its preemptions loses the failure (checked, unless the budget ran out,
which the report says).

Exit status: 1 when a failing schedule was written (it replays with
`wasmrace replay`, exit 1), 2 when the input does not reproduce its failure
or on an error.

Examples:
  wasmrace shrink app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json
  wasmrace shrink app.wasm bug.json -o small.json --json";

/// Shrink a failing schedule to the fewest preemptions, switches and steps
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ShrinkCommand {
    /// The guest module (.wasm) the schedule was recorded on
    #[arg(value_name = "MODULE")]
    module: PathBuf,
    /// The failing schedule file
    #[arg(value_name = "SCHEDULE")]
    schedule: PathBuf,
    /// Where to write the shrunk schedule (default: the input's name with
    /// `.small` before `.json`)
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    output: Option<PathBuf>,
    /// Steps the candidate replays may run in all
    #[arg(long, value_name = "N", default_value_t = ShrinkOptions::default().budget_steps)]
    budget: u64,
    /// Fail an execution after N steps (default: the file's --max-steps)
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
    /// Print one JSON document on stdout instead of text
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    host: HostArgs,
}

impl ShrinkCommand {
    pub fn run(self) -> Result<Verdict> {
        let schedule = Schedule::read(&self.schedule)?;
        let out = self
            .output
            .clone()
            .unwrap_or_else(|| small_path(&self.schedule));
        let inputs = files::Inputs::of([self.module.as_path(), self.schedule.as_path()]);
        files::check_output(&out, "shrunk schedule", &inputs)?;
        let (config, max_steps, notes) =
            resolve_settings(&self.host, self.max_steps, &schedule, &self.schedule)?;
        let guest = Guest::load(&self.module, config)?;
        check_reproduces(&guest, &schedule, &self.schedule, max_steps)?;
        let opts = ShrinkOptions {
            budget_steps: self.budget,
            max_steps: Some(max_steps),
        };
        let shrunk = wasmrace_host::shrink(&guest, &schedule, &opts)?;
        // A write that fails does not cost the user the shrink: the report
        // says so and is printed, then the error (exit 2).
        let written = files::write(
            &out,
            shrunk.schedule.to_json().as_bytes(),
            "shrunk schedule",
            &inputs,
        );
        let failed = written.as_ref().err().map(|e| e.to_string());
        let text = if self.json {
            let mut t = serde_json::to_string_pretty(&serde_json::json!({
                "before": shrunk.before,
                "after": shrunk.after,
                "schedule": failed.is_none().then(|| out.display().to_string()),
                "schedule_error": failed,
                "one_minimal": shrunk.one_minimal,
                "candidates": shrunk.candidates,
                "failure": shrunk.schedule.failure,
            }))?;
            t.push('\n');
            t
        } else {
            self.text(&schedule, &shrunk, &out, &notes, &guest, failed.as_deref())
        };
        output::print(&text)?;
        written?;
        Ok(Verdict::Bug)
    }

    fn text(
        &self,
        schedule: &Schedule,
        shrunk: &Shrunk,
        out: &Path,
        notes: &[String],
        guest: &Guest,
        failed: Option<&str>,
    ) -> String {
        let mut t = format!(
            "shrinking {} on {}: test `{}`\n",
            files::shown_path(&self.schedule),
            files::shown_path(&self.module),
            report::shown(&schedule.test)
        );
        for n in notes {
            t.push_str(n);
            t.push('\n');
        }
        t.push('\n');
        if let Some(f) = &shrunk.schedule.failure {
            t.push_str(&report::failure_block(f));
        }
        t.push_str(&format!("before:   {}\n", stats_line(&shrunk.before)));
        t.push_str(&format!("after:    {}\n", stats_line(&shrunk.after)));
        t.push_str(&format!(
            "searched: {} candidate schedules; {}\n\n",
            shrunk.candidates,
            if shrunk.one_minimal {
                "1-minimal: removing any one preemption loses the failure"
            } else {
                "NOT known to be 1-minimal: the budget ran out (raise --budget)"
            }
        ));
        if let Ok(mut p) = guest.program(&schedule.test) {
            if let Ok((trace, _)) =
                wasmrace_host::trace_schedule(&mut p, &shrunk.schedule.decisions())
            {
                t.push_str(&report::trace_block(&trace, false));
                t.push('\n');
            }
        }
        if let Some(e) = failed {
            t.push_str(&format!("shrunk schedule not written: {e}\n"));
            return t;
        }
        t.push_str(&format!(
            "shrunk schedule written to {}\n",
            files::shown_path(out)
        ));
        let command = self.host.replay_command(&self.module, out);
        t.push_str(&format!("reproduce with: {}\n", report::shown(&command)));
        t
    }
}

/// `3 preemptions, 5 switches, 14 steps`.
fn stats_line(s: &ScheduleStats) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}, {}",
        plural(s.preemptions, "preemption"),
        plural(s.switches, "switch"),
        plural(s.steps, "step")
    )
    .replace("switchs", "switches")
}

/// `bug.schedule.json` -> `bug.schedule.small.json`.
fn small_path(p: &Path) -> PathBuf {
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, p.extension()) {
        (Some(s), Some(e)) => format!("{s}.small.{}", e.to_string_lossy()),
        (Some(s), None) => format!("{s}.small"),
        _ => "small.schedule.json".into(),
    };
    p.with_file_name(name)
}

/// Refuses (exit 2) a schedule that does not lead to the failure it
/// records, with replay's diagnostics: where it diverged or what it did.
pub(crate) fn check_reproduces(
    guest: &Guest,
    schedule: &Schedule,
    path: &Path,
    max_steps: u64,
) -> Result<()> {
    let Some(recorded) = &schedule.failure else {
        bail!(
            "schedule file `{}` records no failure to explain",
            files::shown_path(path)
        );
    };
    let outcome = wasmrace_host::replay(guest, schedule, max_steps)?;
    if outcome
        .failure
        .as_ref()
        .is_some_and(|f| same_failure(recorded, f))
    {
        return Ok(());
    }
    let mut why = match &outcome.divergence {
        Some(d) => format!("it diverged at step {}: {}", d.step, d.reason),
        None => String::new(),
    };
    if why.is_empty() {
        why = match &outcome.failure {
            Some(f) => format!("it led to {}", report::failure_line(f)),
            None => format!("it ran {} steps without a failure", outcome.steps),
        };
    }
    bail!(
        "schedule file `{}` does not reproduce {}: {why}",
        files::shown_path(path),
        report::failure_line(recorded)
    )
}
