//! `wasmrace replay`: runs one schedule file exactly and says, loudly when
//! it did not, whether the recorded failure came back.

use super::HostArgs;
use crate::files;
use crate::html;
use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use wasmrace_explore::Config;
use wasmrace_host::{Guest, HostConfig, ReplayOutcome};
use wasmrace_trace::Schedule;

const AFTER_HELP: &str = "\
The module must be the exact one the schedule was recorded on (its blake3 is
in the file). The settings the bug was found under (--fuel-per-step,
--max-steps, --max-memory-mb, --thread-stack-kib, --asyncify-buffer-kib) are
recorded in the file and used unless given here; replay says which it took
from the file. Files written before they were recorded replay with the
defaults.

Exit status: 1 when the schedule leads to a failure (normally the recorded
one: `reproduced: ...`), 0 when it runs to completion without one
(`NOT REPRODUCED`), 2 on an error (unreadable or foreign schedule file, a
schedule recorded on another module).

Examples:
  wasmrace replay app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json
  wasmrace replay app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json --json";

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
    /// Also write the report as one self-contained HTML page (a lane per
    /// thread, a row per step; nothing fetched)
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    #[command(flatten)]
    host: HostArgs,
}

impl ReplayCommand {
    pub fn run(self) -> Result<Verdict> {
        // The schedule first: it is cheap to read, and a wrong file is the
        // likelier mistake than a wrong module.
        let schedule = read_schedule(&self.schedule, self.test.as_deref())?;
        if let Some(html) = &self.html {
            files::check_output(html, "html report", &self.inputs())?;
        }
        let (config, max_steps, notes) = self.settings(&schedule)?;
        let guest = Guest::load(&self.module, config)?;
        let outcome = wasmrace_host::replay(&guest, &schedule, max_steps)?;
        let text = if self.json {
            let json = self.json_result(&schedule, &outcome, &notes);
            let mut t = serde_json::to_string_pretty(&json)?;
            t.push('\n');
            t
        } else {
            self.text_result(&schedule, &outcome, &notes)
        };
        output::print(&text)?;
        if let Some(path) = &self.html {
            self.write_html(path, &schedule, &outcome, &notes)?;
        }
        Ok(if outcome.failure.is_some() {
            Verdict::Bug
        } else {
            Verdict::NoBug
        })
    }

    /// The files replay reads, which it never writes onto.
    fn inputs(&self) -> files::Inputs {
        files::Inputs::of([self.module.as_path(), self.schedule.as_path()])
    }

    fn settings(&self, schedule: &Schedule) -> Result<(HostConfig, u64, Vec<String>)> {
        resolve_settings(&self.host, self.max_steps, schedule, &self.schedule)
    }

    fn text_result(
        &self,
        schedule: &Schedule,
        outcome: &ReplayOutcome,
        notes: &[String],
    ) -> String {
        let n = schedule.steps.len();
        let mut out = format!(
            "replaying {} on {}: test `{}`, {n} step{}\n",
            files::shown_path(&self.schedule),
            files::shown_path(&self.module),
            report::shown(&schedule.test),
            if n == 1 { "" } else { "s" },
        );
        for note in notes {
            out.push_str(note);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&report::trace_block(&outcome.trace, self.full_trace));
        out.push('\n');
        if let Some(d) = &outcome.divergence {
            out.push_str(&format!(
                "DIVERGED at step {}: {}; the schedule does not fit this execution of the module\n",
                d.step,
                report::shown(&d.reason.to_string())
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

    /// Writes the HTML report of the replay to `path`.
    fn write_html(
        &self,
        path: &std::path::Path,
        schedule: &Schedule,
        outcome: &ReplayOutcome,
        notes: &[String],
    ) -> Result<()> {
        let mut lines = vec![format!("replaying {}", files::shown_path(&self.schedule))];
        lines.extend(notes.iter().cloned());
        if let Some(d) = &outcome.divergence {
            lines.push(format!("DIVERGED at step {}: {}", d.step, d.reason));
        }
        lines.push(match &outcome.failure {
            Some(_) if outcome.reproduces(schedule) => "reproduced".to_string(),
            Some(_) => "DIFFERENT FAILURE than the file recorded".to_string(),
            None => "NOT REPRODUCED".to_string(),
        });
        let module = self.module.display().to_string();
        let page = html::Page {
            command: "replay",
            module: &module,
            sections: vec![html::Section {
                test: &schedule.test,
                notes: lines,
                failure: outcome.failure.as_ref(),
                trace: &outcome.trace,
                curve: None,
            }],
        };
        html::write(path, &page, self.json, &self.inputs())
    }

    fn json_result(
        &self,
        schedule: &Schedule,
        outcome: &ReplayOutcome,
        notes: &[String],
    ) -> serde_json::Value {
        serde_json::json!({
            "settings": notes,
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

/// The schedule file at `path`, refused when `--test` names another test
/// than the one it was recorded for (names from the file escaped).
pub(crate) fn read_schedule(path: &Path, test: Option<&str>) -> Result<Schedule> {
    let schedule = Schedule::read(path)?;
    if let Some(t) = test {
        if t != schedule.test {
            bail!(
                "schedule file `{}` is for test `{}`, not `{}`",
                files::shown_path(path),
                report::shown(&schedule.test),
                report::shown(t)
            );
        }
    }
    Ok(schedule)
}

/// The host configuration and step bound to replay `schedule` with: each setting
/// from its flag when given, else from the schedule file, else the
/// default; and a line for each that differs from the default because
/// of the file, or from the file because of a flag.
pub(crate) fn resolve_settings(
    host: &HostArgs,
    max_steps_flag: Option<u64>,
    schedule: &Schedule,
    path: &std::path::Path,
) -> Result<(HostConfig, u64, Vec<String>)> {
    let mut config = host.config()?;
    let d = HostConfig::default();
    let s = &schedule.settings;
    let file = files::shown_path(path);
    let mut notes = Vec::new();
    // Older files kept the step bound only among the options.
    let recorded_steps = s
        .max_steps
        .or_else(|| schedule.options.get("max_steps").and_then(|v| v.as_u64()));
    let mut max_steps = Config::default().max_steps;
    let settings: [(Setting, bool, Option<u64>, u64); 7] = [
        (
            Setting::Fuel,
            host.fuel_per_step.is_some(),
            s.fuel_per_step,
            d.fuel_per_step,
        ),
        (
            Setting::Steps,
            max_steps_flag.is_some(),
            recorded_steps,
            max_steps,
        ),
        (
            Setting::Memory,
            host.max_memory_mb.is_some(),
            s.max_memory_bytes,
            d.max_memory_bytes,
        ),
        (
            Setting::Stack,
            host.thread_stack_kib.is_some(),
            s.thread_stack_bytes.map(u64::from),
            d.thread_stack_bytes.into(),
        ),
        (
            Setting::Asyncify,
            host.asyncify_buffer_kib.is_some(),
            s.asyncify_buffer_bytes.map(u64::from),
            d.asyncify_buffer_bytes.into(),
        ),
        (
            Setting::HostMemory,
            host.max_host_memory_mb.is_some(),
            s.max_host_bytes,
            d.max_host_bytes,
        ),
        (
            Setting::Log,
            host.max_log_kib.is_some(),
            s.max_log_bytes,
            d.max_log_bytes,
        ),
    ];
    for (setting, given, recorded, default) in settings {
        let current = match setting {
            Setting::Steps => max_steps_flag.unwrap_or(default),
            _ => setting.get(&config),
        };
        let value = match (given, recorded) {
            (true, Some(r)) if r != current => {
                notes.push(format!(
                    "{} given: it overrides the schedule's {}",
                    setting.flag(current),
                    setting.flag(r)
                ));
                current
            }
            (false, Some(r)) => {
                if (r == 0 && !matches!(setting, Setting::Log))
                    || (setting.is_u32() && r > u64::from(u32::MAX))
                {
                    bail!(
                        "schedule file `{file}` records {}, which is out of range",
                        setting.flag(r)
                    );
                }
                if r != default {
                    notes.push(format!("using the schedule's {}", setting.flag(r)));
                }
                r
            }
            _ => current,
        };
        match setting {
            Setting::Steps => max_steps = value,
            _ => setting.set(&mut config, value),
        }
    }
    if max_steps == 0 {
        bail!("`--max-steps` must be at least 1");
    }
    match (host.data_races, s.data_races) {
        (Some(given), Some(r)) if given.setting() != r => notes.push(format!(
            "--data-races {} given: it overrides the schedule's --data-races {}",
            given.setting().name(),
            r.name()
        )),
        (None, Some(r)) => {
            if r != config.data_races {
                notes.push(format!("using the schedule's --data-races {}", r.name()));
            }
            config.data_races = r;
        }
        _ => {}
    }
    // A command line given replaces the schedule's whole.
    if host.args.is_empty() && !s.args.is_empty() {
        notes.push(format!(
            "using the schedule's arguments: {}",
            report::shown(&s.args.join(" "))
        ));
        config.args = s.args.clone();
    }
    if host.env.is_empty() && !s.env.is_empty() {
        notes.push(format!(
            "using the schedule's environment: {}",
            report::shown(&s.env.join(" "))
        ));
        config.env = s.env.clone();
    }
    Ok((config, max_steps, notes))
}

/// A setting a schedule file records, as replay resolves it.
#[derive(Clone, Copy)]
enum Setting {
    Fuel,
    Steps,
    Memory,
    Stack,
    Asyncify,
    HostMemory,
    Log,
}

impl Setting {
    /// The flag that sets `value` (bytes in the file, MiB or KiB on the
    /// command line), or the value in bytes when no flag can.
    fn flag(self, value: u64) -> String {
        let (flag, unit) = match self {
            Setting::Fuel => return format!("--fuel-per-step {value}"),
            Setting::Steps => return format!("--max-steps {value}"),
            Setting::Memory => ("--max-memory-mb", 1 << 20),
            Setting::Stack => ("--thread-stack-kib", 1 << 10),
            Setting::Asyncify => ("--asyncify-buffer-kib", 1 << 10),
            Setting::HostMemory => ("--max-host-memory-mb", 1 << 20),
            Setting::Log => ("--max-log-kib", 1 << 10),
        };
        if value.is_multiple_of(unit) {
            format!("{flag} {}", value / unit)
        } else {
            format!("{flag} of {value} bytes")
        }
    }

    fn is_u32(self) -> bool {
        matches!(self, Setting::Stack | Setting::Asyncify)
    }

    fn get(self, c: &HostConfig) -> u64 {
        match self {
            Setting::Fuel => c.fuel_per_step,
            Setting::Memory => c.max_memory_bytes,
            Setting::Stack => c.thread_stack_bytes.into(),
            Setting::Asyncify => c.asyncify_buffer_bytes.into(),
            Setting::HostMemory => c.max_host_bytes,
            Setting::Log => c.max_log_bytes,
            Setting::Steps => unreachable!("the step bound is the explorer's"),
        }
    }

    /// Sets a value already checked to fit.
    fn set(self, c: &mut HostConfig, v: u64) {
        let small = || u32::try_from(v).unwrap_or(u32::MAX);
        match self {
            Setting::Fuel => c.fuel_per_step = v,
            Setting::Memory => c.max_memory_bytes = v,
            Setting::Stack => c.thread_stack_bytes = small(),
            Setting::Asyncify => c.asyncify_buffer_bytes = small(),
            Setting::HostMemory => c.max_host_bytes = v,
            Setting::Log => c.max_log_bytes = v,
            Setting::Steps => unreachable!("the step bound is the explorer's"),
        }
    }
}
