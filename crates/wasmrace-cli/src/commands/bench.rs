//! `wasmrace bench`: compares strategies on a suite of tests (by default
//! the bundled fixture suite) and prints which strategy finds which bug, how
//! reliably and how fast, as a table, markdown or JSON, optionally with an
//! SVG chart.

use super::HostArgs;
use crate::output;
use crate::Verdict;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wasmrace_explore::Config;
use wasmrace_host::bench::{self, BenchModule, BenchOptions, BenchProgress, TestInfo};
use wasmrace_host::{HostError, STRATEGY_NAMES};

const AFTER_HELP: &str = "\
For every test, strategy and seed, a run of --executions executions that does
not stop at bugs. Per test and strategy (seeds pooled): the hit ratio (failing
executions / executions), executions and time to the first bug (mean and
median over the seeds that found it), executions per second, distinct partial
orders covered (Mazurkiewicz traces, by a canonical hash of each execution's
happens-before relation) and whether the strategy exhausted its space. Rows
are sorted hardest first (lowest best hit ratio); the best cell of a row is
marked; the last rows give each strategy's geometric mean hit ratio over the
tests with a bug (a miss counts as 1/(executions x seeds), as in the POS
paper) and how many of those bugs it found at all.

Strategies run with `wasmrace check`'s defaults (dfs and portfolio with
preemption bound 2, pct with depth 3, ses and ss with the run-to-completion
explorer). A strategy without a seed (dfs, ses) runs once per test.

Determinism: each run's seed is derived from --seed, the program, the test,
the strategy and the seed index, so the output is the same for any --jobs,
except the timing part (the `Timing` section last in the table and markdown;
the `timing` fields in JSON). --time-budget makes runs machine-dependent.

Exit status: 0 when the comparison ran (finding bugs is its purpose, not a
failure), 2 on any error (bad module, unknown strategy or test, bad flags).

Examples:
  wasmrace bench
  wasmrace bench --tests 'world_hello_*' --strategies pos,random --seeds 10
  wasmrace bench --tests sctbench --format markdown --chart sctbench.svg
  wasmrace bench app.wasm --executions 5000 --jobs 1 --format json";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned text tables
    Table,
    /// One JSON document with every run and aggregate
    Json,
    /// Markdown tables, for READMEs and issues
    Markdown,
}

/// Compare strategies on a suite of tests
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct BenchCommand {
    /// Guest modules (.wasm) whose tests to compare on (default: the bundled
    /// fixture suite)
    #[arg(value_name = "MODULE")]
    modules: Vec<PathBuf>,
    /// Only tests matching one of these comma-separated patterns, matched
    /// against the test name, its program, `program/test` and its family
    /// (`*` any characters, `?` one)
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    tests: Vec<String>,
    /// Comma-separated strategies to compare, in column order
    #[arg(long, value_name = "LIST", default_value_t = STRATEGY_NAMES.join(","))]
    strategies: String,
    /// Executions per test, strategy and seed
    #[arg(long, value_name = "N", default_value_t = BenchOptions::default().executions)]
    executions: u64,
    /// Seeds per test and strategy
    #[arg(long, value_name = "K", default_value_t = BenchOptions::default().seeds)]
    seeds: u32,
    /// Base seed every run's seed is derived from
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Worker threads [default: the number of cores]
    #[arg(long, value_name = "J")]
    jobs: Option<usize>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also write a grouped bar chart of the hit ratios here (SVG)
    #[arg(long, value_name = "PATH")]
    chart: Option<PathBuf>,
    /// Fail an execution that takes more than N steps (possible livelock)
    #[arg(long, value_name = "N", default_value_t = Config::default().max_steps)]
    max_steps: u64,
    /// Stop each run after SECS seconds of wall-clock time (makes results
    /// depend on the machine)
    #[arg(long, value_name = "SECS")]
    time_budget: Option<u64>,
    #[command(flatten)]
    host: HostArgs,
}

impl BenchCommand {
    pub fn run(self) -> Result<Verdict> {
        let jobs = match self.jobs {
            Some(j) => j,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if self.time_budget == Some(0) {
            anyhow::bail!("`--time-budget` must be at least 1 second");
        }
        let opts = BenchOptions {
            executions: self.executions,
            seeds: self.seeds,
            base_seed: self.seed,
            jobs,
            strategies: bench::parse_strategies(&self.strategies)?,
            tests: self.tests.clone(),
            max_steps: self.max_steps,
            cell_time_budget: self.time_budget.map(Duration::from_secs),
            host: self.host.config()?,
        };
        let modules = self.modules()?;
        let results = with_progress(|progress| bench::bench(&modules, &opts, progress))?;
        if let Some(path) = &self.chart {
            std::fs::write(path, crate::chart::svg(&results))
                .with_context(|| format!("cannot write chart `{}`", path.display()))?;
        }
        let text = match self.format {
            Format::Table => crate::bench_report::text(&results),
            Format::Markdown => crate::bench_report::markdown(&results),
            Format::Json => {
                let mut t = serde_json::to_string_pretty(&results)?;
                t.push('\n');
                t
            }
        };
        output::print(&text)?;
        Ok(Verdict::NoBug)
    }

    /// The modules named on the command line, or the bundled suite.
    fn modules(&self) -> Result<Vec<BenchModule>> {
        if self.modules.is_empty() {
            return suite();
        }
        let stems: Vec<String> = self
            .modules
            .iter()
            .map(|p| {
                p.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.display().to_string())
            })
            .collect();
        let mut out = Vec::new();
        for (i, path) in self.modules.iter().enumerate() {
            let bytes = std::fs::read(path).map_err(|cause| HostError::Io {
                path: path.clone(),
                cause,
            })?;
            // Two modules with one file name are told apart by their paths.
            let program = if stems.iter().filter(|s| **s == stems[i]).count() > 1 {
                path.display().to_string()
            } else {
                stems[i].clone()
            };
            out.push(BenchModule {
                program,
                source: path.display().to_string(),
                bytes: bytes.into(),
                tests: None,
            });
        }
        Ok(out)
    }
}

/// The bundled suite (`wasmrace_fixtures::suite::SUITE`), one module per
/// program in the order the suite first names it.
fn suite() -> Result<Vec<BenchModule>> {
    let mut out: Vec<BenchModule> = Vec::new();
    for e in wasmrace_fixtures::suite::SUITE {
        let info = TestInfo {
            test: e.test.to_string(),
            family: Some(e.family.to_string()),
            expected_bug: Some(e.has_bug),
            traces: e.traces,
        };
        if let Some(m) = out.iter_mut().find(|m| m.program == e.program) {
            if let Some(tests) = m.tests.as_mut() {
                tests.push(info);
            }
            continue;
        }
        let Some(bytes) = wasmrace_fixtures::suite::bytes(e.program) else {
            // A build inconsistency, not user input.
            anyhow::bail!(
                "the bundled suite names program `{}`, which this build does not embed",
                e.program
            );
        };
        out.push(BenchModule {
            program: e.program.to_string(),
            source: format!("{} (bundled)", e.program),
            bytes: bytes.into(),
            tests: Some(vec![info]),
        });
    }
    Ok(out)
}

/// Runs `f` with a progress callback that draws a bar on stderr when a
/// person is watching (stderr is a terminal); otherwise draws nothing.
fn with_progress<T>(f: impl FnOnce(&(dyn Fn(&BenchProgress) + Sync)) -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f(&|_| {});
    }
    let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg} {wide_bar} {percent}% ({elapsed}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    // Workers report often; redraw at most every 100 ms.
    let last = Mutex::new(None::<Instant>);
    let result = f(&|p: &BenchProgress| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        let finished = p.cells > 0 && p.cells_done == p.cells;
        if !finished && last.is_some_and(|t| t.elapsed() < Duration::from_millis(100)) {
            return;
        }
        *last = Some(Instant::now());
        if p.cells == 0 {
            bar.set_length(p.modules as u64);
            bar.set_position(p.modules_loaded as u64);
            bar.set_message(format!(
                "loading modules {}/{}",
                p.modules_loaded, p.modules
            ));
        } else {
            bar.set_length(p.executions_planned);
            bar.set_position(p.executions_done);
            bar.set_message(format!("runs {}/{}", p.cells_done, p.cells));
        }
    });
    bar.finish_and_clear();
    result
}
