//! `wasmrace bench`: compares strategies on a suite of tests (by default
//! the fixture suite, read from the fixtures' build output) and prints which strategy finds which bug, how
//! reliably and how fast, as a table, markdown or JSON, optionally with an
//! SVG chart.

use super::HostArgs;
use crate::output;
use crate::partition::{self, PartitionArg};
use crate::verdict::Verdict;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wasmrace_explore::Config;
use wasmrace_host::bench::suite::SuiteError;
use wasmrace_host::bench::{self, BenchModule, BenchOptions, BenchProgress};
use wasmrace_host::STRATEGY_NAMES;

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

The fixture suite (when no MODULE is given): the tests of wasmrace's fixture
programs listed in wasmrace_host::bench::suite, read as <program>.wasm from
--suite-dir, else $WASMRACE_SUITE_DIR, else the fixtures' build output of the
wasmrace checkout this binary was built from
(target/guests/wasm32-unknown-unknown/release). `cargo build -p
wasmrace-fixtures` in that checkout builds them.

Determinism: each run's seed is derived from --seed, the program, the test,
the strategy and the seed index, so the output is the same for any --jobs,
except the timing part (the `Timing` section last in the table and markdown;
the `timing` fields in JSON). --time-budget makes runs machine-dependent.

Partitions: --partition K/N runs every N-th cell (test x strategy x seed, in
the order above) starting with the K-th, so N machines run one comparison
between them; `wasmrace merge` adds their --format json outputs up into the
results one run gives (docs/scale-out.md).

Exit status: 0 when the comparison ran (finding bugs is its purpose, not a
failure), 2 on any error (bad module, unknown strategy or test, bad flags).

Examples:
  wasmrace bench
  wasmrace bench --tests 'world_hello_*' --strategies pos,random --seeds 10
  wasmrace bench --tests sctbench --format markdown --chart sctbench.svg
  wasmrace bench app.wasm --executions 5000 --jobs 1 --format json
  wasmrace bench --partition 2/4 --format json > part2.json";

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
    /// Guest modules (.wasm) whose tests to compare on (default: the fixture
    /// suite)
    #[arg(value_name = "MODULE")]
    modules: Vec<PathBuf>,
    /// Where the fixture suite's built guests (`<program>.wasm`) are
    /// [default: $WASMRACE_SUITE_DIR, else the fixtures' build output of the
    /// wasmrace checkout this binary was built from]
    #[arg(long, value_name = "DIR", conflicts_with = "modules")]
    suite_dir: Option<PathBuf>,
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
    /// Seeds per test and strategy, at most 10000 (`MAX_SEEDS`)
    #[arg(long, value_name = "K", default_value_t = BenchOptions::default().seeds)]
    seeds: u32,
    /// Base seed every run's seed is derived from
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Worker threads, at most 256 (`MAX_JOBS`) [default: the number of
    /// cores]
    #[arg(long, value_name = "J", value_parser = crate::files::parse_jobs)]
    jobs: Option<u32>,
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
    /// Run only partition K of N of the cells (1-based; also `count:K/N`):
    /// every N-th test x strategy x seed cell from the K-th. Write each with
    /// --format json and add them up with `wasmrace merge`
    #[arg(long, value_name = "K/N", value_parser = partition::parse_partition)]
    partition: Option<PartitionArg>,
    #[command(flatten)]
    host: HostArgs,
}

/// Most `--seeds`: the plan holds a cell per test, strategy and seed
/// before it runs, so 4294967295 seeds was 4 billion cells in memory;
/// 10000 seeds of one cell are already more samples than a comparison
/// needs.
const MAX_SEEDS: u32 = 10_000;

impl BenchCommand {
    pub fn run(self) -> Result<Verdict> {
        let jobs = match self.jobs {
            Some(j) => j as usize,
            None => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(crate::files::MAX_JOBS as usize),
        };
        let inputs = crate::files::Inputs::of(self.modules.iter().map(PathBuf::as_path));
        if let Some(path) = &self.chart {
            crate::files::check_output(path, "chart", &inputs)?;
        }
        if self.time_budget == Some(0) {
            anyhow::bail!("`--time-budget` must be at least 1 second");
        }
        if self.seeds > MAX_SEEDS {
            anyhow::bail!(
                "`--seeds {}` is over the maximum of {MAX_SEEDS} seeds per test and strategy (MAX_SEEDS)",
                self.seeds
            );
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
            host: self.host.config()?.with_slots_for(jobs as u32),
            partition: self.partition.map(PartitionArg::partition),
        };
        let modules = self.modules()?;
        let results = with_progress(|progress| bench::bench(&modules, &opts, progress))?;
        let text = match self.format {
            Format::Table => crate::bench_report::text(&results),
            Format::Markdown => crate::bench_report::markdown(&results),
            Format::Json => {
                let mut t = serde_json::to_string_pretty(&results)?;
                t.push('\n');
                t
            }
        };
        // The comparison first: a chart that cannot be written does not
        // cost it.
        output::print(&text)?;
        if let Some(path) = &self.chart {
            crate::files::write(
                path,
                crate::chart::svg(&results).as_bytes(),
                "chart",
                &inputs,
            )?;
        }
        Ok(Verdict::NoBug)
    }

    /// The modules named on the command line, or the fixture suite.
    fn modules(&self) -> Result<Vec<BenchModule>> {
        if self.modules.is_empty() {
            return suite(self.suite_dir.as_deref());
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
            let limit = wasmrace_host::HostConfig::default().max_module_bytes;
            let bytes = wasmrace_host::load::read_module(path, limit)?;
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

/// The environment variable naming the suite's directory when
/// `--suite-dir` does not.
const SUITE_DIR_ENV: &str = "WASMRACE_SUITE_DIR";

/// Where the fixtures of the checkout this binary was built from are built
/// (fixtures/build.rs builds them into the workspace's `target/guests`,
/// whatever the target dir of the outer build).
const BUILT_SUITE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/guests/wasm32-unknown-unknown/release"
);

/// The directory the fixture suite is read from: `--suite-dir`, else
/// `$WASMRACE_SUITE_DIR`, else the fixtures' build output of the checkout
/// this binary was built from. The first one given is used, present or
/// not: a directory named on purpose is never silently replaced.
fn suite_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(dir) = flag {
        return dir.to_path_buf();
    }
    match std::env::var_os(SUITE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => built_suite_dir(),
    }
}

/// [`BUILT_SUITE_DIR`] without its `..` components, for shorter messages.
fn built_suite_dir() -> PathBuf {
    let mut dir = PathBuf::new();
    for c in Path::new(BUILT_SUITE_DIR).components() {
        match c {
            Component::ParentDir => {
                dir.pop();
            }
            c => dir.push(c),
        }
    }
    dir
}

/// The fixture suite (`wasmrace_host::bench::suite::SUITE`), read from
/// [`suite_dir`]; when a guest is missing, one line saying how to build
/// them or where else to look.
fn suite(flag: Option<&Path>) -> Result<Vec<BenchModule>> {
    let dir = suite_dir(flag);
    bench::suite::modules(&dir).map_err(|e| match e {
        SuiteError::Missing { .. } => anyhow::anyhow!(
            "the bench suite's guests are not built ({e}): build them with \
             `cargo build -p wasmrace-fixtures` in the wasmrace repository, or give \
             their directory with `--suite-dir` or `${SUITE_DIR_ENV}`"
        ),
        e => e.into(),
    })
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
