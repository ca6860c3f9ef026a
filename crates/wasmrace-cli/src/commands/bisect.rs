//! `wasmrace bisect`: where along a failing schedule the failure became
//! likely, then certain, with the steps that decided it.

use super::replay::{read_schedule, resolve_settings};
use super::shrink::check_reproduces;
use super::HostArgs;
use crate::files;
use crate::html;
use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::Result;
use std::path::PathBuf;
use wasmrace_host::analysis::bisect::SAMPLING_STRATEGIES;
use wasmrace_host::{BisectOptions, Bisection, Decisive, Guest, Schedule, Sealing, StrategyChoice};

const AFTER_HELP: &str = "\
Replays the schedule once, snapshotting the state before every step, and
for each step k estimates P(k): the probability that a completion from the
state after k steps, drawn by --strategy, fails with the same failure (same
kind, same source location). Each sample restores a snapshot instead of
replaying the prefix. Sampling is adaptive (it stops after half the samples,
at least 30, when they all agree); where at most 64 completions are left, P is computed exactly.
The sealing point is the first step after which every completion fails:
with --exact it is proved by enumerating them all from the snapshot, else
it is estimated and said so. Decisive steps are where P jumps most, each
with P after the other decisions that were enabled there.

Exit status: 1 when the schedule reproduces its failure (the analysis is
printed), 2 when it does not (with why) or on an error.

Examples:
  wasmrace bisect app.wasm wasmrace-schedules/app.lost_update.<tag>.schedule.json
  wasmrace bisect app.wasm bug.json --exact --samples 500 --seed 7 --json";

/// Estimate, step by step, how likely a failing schedule's failure is
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct BisectCommand {
    /// The guest module (.wasm) the schedule was recorded on
    #[arg(value_name = "MODULE")]
    module: PathBuf,
    /// The failing schedule file
    #[arg(value_name = "SCHEDULE")]
    schedule: PathBuf,
    /// The test the schedule is for; refused if the file says otherwise
    #[arg(long, value_name = "NAME")]
    test: Option<String>,
    /// Samples per step, at most
    #[arg(long, value_name = "N", default_value_t = BisectOptions::default().samples)]
    samples: u32,
    /// The strategy completions are drawn by
    #[arg(long, value_name = "NAME", default_value = "random",
          value_parser = clap::builder::PossibleValuesParser::new(SAMPLING_STRATEGIES))]
    strategy: String,
    /// Seed of the samples
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Prove the sealing point by enumerating every completion
    #[arg(long)]
    exact: bool,
    /// Completions one proof may enumerate
    #[arg(long, value_name = "N", default_value_t = BisectOptions::default().exact_budget)]
    exact_budget: u64,
    /// Fail an execution after N steps (default: the file's --max-steps)
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
    /// Print one JSON document on stdout instead of text
    #[arg(long)]
    json: bool,
    /// Also write the analysis as one self-contained HTML page (a lane per
    /// thread, a row per step, the probability curve beside them)
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    #[command(flatten)]
    host: HostArgs,
}

impl BisectCommand {
    pub fn run(self) -> Result<Verdict> {
        if self.samples == 0 {
            anyhow::bail!("`--samples` must be at least 1");
        }
        let schedule = read_schedule(&self.schedule, self.test.as_deref())?;
        if let Some(html) = &self.html {
            files::check_output(html, "html report", &self.inputs())?;
        }
        let (config, max_steps, notes) =
            resolve_settings(&self.host, self.max_steps, &schedule, &self.schedule)?;
        let guest = Guest::load(&self.module, config)?;
        check_reproduces(&guest, &schedule, &self.schedule, max_steps)?;
        let opts = BisectOptions {
            strategy: StrategyChoice::named(&self.strategy),
            samples: self.samples,
            seed: self.seed,
            exact: self.exact,
            exact_budget: self.exact_budget,
            max_steps: Some(max_steps),
            from_snapshots: true,
        };
        let b = wasmrace_host::bisect(&guest, &schedule, &opts)?;
        let text = if self.json {
            let mut t = serde_json::to_string_pretty(&json(&b))?;
            t.push('\n');
            t
        } else {
            self.text(&schedule, &b, &notes)
        };
        output::print(&text)?;
        if let Some(path) = &self.html {
            self.write_html(path, &schedule, &b, &notes)?;
        }
        Ok(Verdict::Bug)
    }

    /// The files bisect reads, which it never writes onto.
    fn inputs(&self) -> files::Inputs {
        files::Inputs::of([self.module.as_path(), self.schedule.as_path()])
    }

    /// Writes the HTML report of the bisection to `path`: the steps with
    /// P after each, the curve, the sealing point and the decisive steps.
    fn write_html(
        &self,
        path: &std::path::Path,
        schedule: &Schedule,
        b: &Bisection,
        notes: &[String],
    ) -> Result<()> {
        let mut lines = vec![format!(
            "bisecting {}: completions drawn by {} (seed {})",
            files::shown_path(&self.schedule),
            self.strategy,
            self.seed
        )];
        lines.extend(notes.iter().cloned());
        lines.push(sealing_line(b.sealed).trim_end().to_string());
        let curve = html::Curve {
            points: b
                .steps
                .iter()
                .map(|s| (s.step, s.probability, s.exact))
                .collect(),
            sealed: Some(match b.sealed {
                Sealing::Proved { step, .. } => (step, true),
                Sealing::Estimated { step } => (step, false),
            }),
            decisive: b
                .decisive
                .iter()
                .map(|d| (d.step, decisive_line(b, d)))
                .collect(),
        };
        let module = self.module.display().to_string();
        let page = html::Page {
            command: "bisect",
            module: &module,
            sections: vec![html::Section {
                test: &schedule.test,
                notes: lines,
                failure: Some(&b.failure),
                trace: &b.trace,
                curve: Some(curve),
            }],
        };
        html::write(path, &page, self.json, &self.inputs())
    }

    fn text(&self, schedule: &Schedule, b: &Bisection, notes: &[String]) -> String {
        let mut t = format!(
            "bisecting {} on {}: test `{}`, completions drawn by {} (seed {}){}\n",
            files::shown_path(&self.schedule),
            files::shown_path(&self.module),
            report::shown(&schedule.test),
            self.strategy,
            self.seed,
            if self.exact {
                ", sealing proved by enumeration (--exact)"
            } else {
                ""
            }
        );
        for n in notes {
            t.push_str(n);
            t.push('\n');
        }
        t.push('\n');
        t.push_str(&report::failure_block(&b.failure));
        t.push('\n');
        let p0 = b.steps.first().map_or(0.0, |s| s.probability);
        t.push_str(&format!("at the start: P = {}\n", p(p0)));
        t.push_str(&sealing_line(b.sealed));
        if !b.decisive.is_empty() {
            t.push_str("\ndecisive steps:\n");
        }
        for d in &b.decisive {
            t.push_str(&format!("  {}\n", decisive_line(b, d)));
        }
        t.push_str(&format!(
            "\ninterleaving with P after each step (`=` exact, `~` sampled; {} steps):\n",
            b.trace.len()
        ));
        t.push_str(&probability_trace(b));
        t
    }
}

/// The sealing point, as a line.
fn sealing_line(sealed: Sealing) -> String {
    match sealed {
        Sealing::Proved { step, completions } => format!(
            "sealed at step {step} (proved: all {completions} completion{} from there fail)\n",
            if completions == 1 { "" } else { "s" }
        ),
        Sealing::Estimated { step } => format!(
            "sealed at step {step} (estimated: every sample failed from there on; --exact proves it)\n"
        ),
    }
}

/// A decisive step with its alternatives, on one line.
fn decisive_line(b: &Bisection, d: &Decisive) -> String {
    let what = b
        .trace
        .get(d.step - 1)
        .map(|e| format!("{} {}", e.op, e.object.as_deref().unwrap_or("")))
        .unwrap_or_default();
    let mut t = format!(
        "step {}: {} ran {} (P {} -> {})",
        d.step,
        d.thread,
        what.trim_end(),
        p(d.probability_before),
        p(d.probability_after)
    );
    for a in &d.alternatives {
        let alt = if a.alt > 0 {
            format!(" (alternative {})", a.alt)
        } else {
            String::new()
        };
        t.push_str(&format!(
            "; had {}{alt} run instead, P = {}",
            a.thread,
            p(a.probability)
        ));
    }
    t
}

/// P with two decimals.
fn p(x: f64) -> String {
    format!("{x:.2}")
}

/// The trace's lines, each prefixed with P after that step and a bar.
fn probability_trace(b: &Bisection) -> String {
    // Every step, unfolded: each line gets its own P.
    let lines = report::trace_block(&b.trace, true);
    let mut body = lines.lines().skip(1);
    let mut out = String::new();
    let at = |k: usize| b.steps.iter().find(|s| s.step == k);
    for k in 1..=b.trace.len() {
        let line = body.next().unwrap_or_default();
        let col = match at(k) {
            Some(s) => {
                let bar = "#".repeat((s.probability * 10.0).round() as usize);
                let mark = if s.exact { '=' } else { '~' };
                format!("{mark}{} {bar:<10}", p(s.probability))
            }
            None => " ".repeat(16),
        };
        out.push_str(&format!("{col} {line}\n"));
        // Log lines under a step belong to it.
        while let Some(l) = body.clone().next().filter(|l| !starts_step(l)) {
            out.push_str(&format!("{} {l}\n", " ".repeat(16)));
            body.next();
        }
    }
    out
}

/// Whether a trace line starts a step (`  12  main ...`, `* 5 ...`).
fn starts_step(line: &str) -> bool {
    line.get(..4).is_some_and(|h| {
        h.trim_start_matches(['*', ' '])
            .starts_with(|c: char| c.is_ascii_digit())
    })
}

fn json(b: &Bisection) -> serde_json::Value {
    let (sealed_at, proved) = match b.sealed {
        Sealing::Proved { step, .. } => (step, true),
        Sealing::Estimated { step } => (step, false),
    };
    serde_json::json!({
        "failure": b.failure,
        "steps": b.steps,
        "sealed_at": sealed_at,
        "sealed_proved": proved,
        "decisive": b.decisive,
    })
}
