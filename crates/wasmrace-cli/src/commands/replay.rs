//! `wasmrace replay`: runs one schedule file exactly and says, loudly when
//! it did not, whether the recorded failure came back.

use super::HostArgs;
use crate::output;
use crate::report;
use crate::Verdict;
use anyhow::{bail, Result};
use std::path::PathBuf;
use wasmrace_explore::Config;
use wasmrace_host::{Guest, ReplayOutcome};
use wasmrace_trace::Schedule;

const AFTER_HELP: &str = "\
The module must be the exact one the schedule was recorded on (its blake3 is
in the file), and the host flags (--fuel-per-step, ...) the ones the bug was
found under; `wasmrace check` prints the full command.

Exit status: 1 when the schedule leads to a failure (normally the recorded
one: `reproduced: ...`), 0 when it runs to completion without one
(`NOT REPRODUCED`), 2 on an error (unreadable or foreign schedule file, a
schedule recorded on another module).

Examples:
  wasmrace replay app.wasm app.lost_update.schedule.json
  wasmrace replay app.wasm app.lost_update.schedule.json --json";

/// Replay a schedule file written by `wasmrace check`
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ReplayCommand {
    /// The guest module (.wasm) the schedule was recorded on
    #[arg(value_name = "MODULE")]
    module: PathBuf,
    /// The schedule file
    #[arg(value_name = "SCHEDULE")]
    schedule: PathBuf,
    /// The test the schedule is for; refused if the file says otherwise
    /// (default: the file's test)
    #[arg(long, value_name = "NAME")]
    test: Option<String>,
    /// Fail the execution after N steps (default: the --max-steps recorded
    /// in the file, else 10000)
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
    /// Print one JSON document on stdout instead of text
    #[arg(long)]
    json: bool,
    /// Print every step of a bug's interleaving (by default, steps repeated
    /// back to back, a waiting loop's, are shown once with a count)
    #[arg(long)]
    full_trace: bool,
    #[command(flatten)]
    host: HostArgs,
}

impl ReplayCommand {
    pub fn run(self) -> Result<Verdict> {
        // The schedule first: it is cheap to read, and a wrong file is the
        // likelier mistake than a wrong module.
        let schedule = Schedule::read(&self.schedule)?;
        if let Some(t) = &self.test {
            if *t != schedule.test {
                bail!(
                    "schedule file `{}` is for test `{}`, not `{t}`",
                    self.schedule.display(),
                    schedule.test
                );
            }
        }
        let max_steps = self
            .max_steps
            .or_else(|| schedule.options.get("max_steps").and_then(|v| v.as_u64()))
            .unwrap_or(Config::default().max_steps);
        if max_steps == 0 {
            bail!("`--max-steps` must be at least 1");
        }
        let guest = Guest::load(&self.module, self.host.config()?)?;
        let outcome = wasmrace_host::replay(&guest, &schedule, max_steps)?;
        let text = if self.json {
            let mut t = serde_json::to_string_pretty(&self.json_result(&schedule, &outcome))?;
            t.push('\n');
            t
        } else {
            self.text_result(&schedule, &outcome)
        };
        output::print(&text)?;
        Ok(if outcome.failure.is_some() {
            Verdict::Bug
        } else {
            Verdict::NoBug
        })
    }

    fn text_result(&self, schedule: &Schedule, outcome: &ReplayOutcome) -> String {
        let n = schedule.steps.len();
        let mut out = format!(
            "replaying {} on {}: test `{}`, {n} step{}\n\n",
            self.schedule.display(),
            self.module.display(),
            report::shown(&schedule.test),
            if n == 1 { "" } else { "s" },
        );
        out.push_str(&report::trace_block(&outcome.trace, self.full_trace));
        out.push('\n');
        if let Some(d) = &outcome.divergence {
            out.push_str(&format!(
                "DIVERGED at step {}: {}; the schedule does not fit this execution of the module\n",
                d.step, d.reason
            ));
        }
        match (&outcome.failure, &schedule.failure) {
            (Some(f), recorded) => {
                out.push_str(&report::failure_block(f));
                out.push('\n');
                let line = report::failure_line(f);
                if outcome.reproduces(schedule) {
                    out.push_str(&format!("reproduced: {line}\n"));
                } else if let Some(r) = recorded {
                    out.push_str(&format!(
                        "DIFFERENT FAILURE: the schedule led to {line}, but the file recorded {}\n",
                        report::failure_line(r)
                    ));
                } else {
                    out.push_str(&format!("failed (the file recorded no failure): {line}\n"));
                }
            }
            (None, _) if outcome.divergence.is_some() => out.push_str(
                "NOT REPRODUCED: the schedule diverged from the program before any failure\n",
            ),
            (None, _) => {
                out.push_str("NOT REPRODUCED: the schedule ran to completion without a failure\n")
            }
        }
        out
    }

    fn json_result(&self, schedule: &Schedule, outcome: &ReplayOutcome) -> serde_json::Value {
        serde_json::json!({
            "module": self.module.display().to_string(),
            "schedule_path": self.schedule.display().to_string(),
            "test": schedule.test,
            "steps": schedule.steps.len(),
            "steps_replayed": outcome.steps,
            "reproduced": outcome.reproduces(schedule),
            "failure": outcome.failure,
            "recorded_failure": schedule.failure,
            "divergence": outcome.divergence.as_ref().map(|d| serde_json::json!({
                "step": d.step,
                "reason": d.reason.to_string(),
            })),
            "trace": outcome.trace,
        })
    }
}
