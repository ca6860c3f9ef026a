//! What `wasmrace bench` reports: each cell, each test and strategy row,
//! each strategy's totals and the run's settings; serialized as `--format
//! json`.

use super::TestInfo;
use serde::{Deserialize, Serialize};

/// Where a run stands, for progress bars. Called from worker threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchProgress {
    /// Modules loaded (instrumented and compiled, or read from the cache).
    pub modules_loaded: usize,
    /// Modules to load.
    pub modules: usize,
    /// Cells (test × strategy × seed) finished.
    pub cells_done: usize,
    /// Cells to run.
    pub cells: usize,
    /// Executions run so far, and the most there will be.
    pub executions_done: u64,
    /// The most executions there will be (cells may stop early).
    pub executions_planned: u64,
}

/// Wall-clock measurements: the only part of the results that differs
/// between two runs with the same options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Executions run over time spent exploring.
    pub executions_per_second: f64,
    /// Mean and median time to the first bug, over the runs that found one.
    pub first_bug_ms_mean: Option<f64>,
    /// Median time to the first bug, in milliseconds.
    pub first_bug_ms_median: Option<f64>,
    /// Time spent exploring.
    pub elapsed_ms: f64,
}

/// One test × strategy × seed run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// The module's program name.
    pub program: String,
    /// The test.
    pub test: String,
    /// The strategy's name.
    pub strategy: String,
    /// The cell's position in the whole run's plan (tests in input order,
    /// then strategies, then seeds), whatever the partition.
    #[serde(default)]
    pub index: u64,
    /// Which of the cell's seeds, from 0.
    pub seed_index: u32,
    /// The seed the strategy ran with ([`cell_seed`](crate::bench::cell_seed): derived from the base
    /// seed, the program, the test, the strategy and the seed index).
    pub seed: u64,
    /// Executions run.
    pub executions: u64,
    /// Executions that failed.
    pub failing_executions: u64,
    /// 1-based index of the first failing execution.
    pub first_bug_execution: Option<u64>,
    /// What the first failure was (`panic`, `deadlock`, ...).
    pub first_bug_kind: Option<String>,
    /// The strategy that ran it (a portfolio names its member).
    pub first_bug_found_by: Option<String>,
    /// Distinct partial orders (Mazurkiewicz traces) among the executions.
    pub distinct_orders: u64,
    /// The strategy explored its whole space.
    pub exhausted: bool,
    /// The flag of a strategy bound that pruned the space
    /// (`--preemption-bound`), if one did.
    pub pruned_by: Option<String>,
    /// The flag of an explorer bound that ended the run, if one did.
    pub stopped_by: Option<String>,
    /// Wall-clock measurements.
    pub timing: Timing,
}

/// One strategy on one test, over its runs (seeds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowCell {
    /// The strategy's name.
    pub strategy: String,
    /// Runs aggregated: the number of seeds, or 1 for a strategy without one.
    pub runs: u32,
    /// Executions over all runs.
    pub executions: u64,
    /// Failing executions over all runs.
    pub failing_executions: u64,
    /// Failing executions over executions, all runs pooled.
    pub hit_ratio: f64,
    /// Runs that found a bug.
    pub found: u32,
    /// Mean and median index of the first failing execution, over the runs
    /// that found a bug.
    pub first_bug_mean: Option<f64>,
    /// Median index of the first failing execution (see `first_bug_mean`).
    pub first_bug_median: Option<f64>,
    /// Mean distinct partial orders per run.
    pub distinct_orders: f64,
    /// Every run explored the strategy's whole space...
    pub exhausted: bool,
    /// ...but a bound of the strategy pruned it (the flag raising it).
    pub pruned_by: Option<String>,
    /// Wall-clock measurements over all runs.
    pub timing: Timing,
}

/// One test: every strategy's aggregate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    /// The module's program name.
    pub program: String,
    /// The test and what is known about it.
    #[serde(flatten)]
    pub info: TestInfo,
    /// The highest hit ratio of the row.
    pub best_hit_ratio: f64,
    /// The strategies reaching it (none when no strategy found a bug).
    pub best: Vec<String>,
    /// Whether the row counts towards the geometric means: a bug is known
    /// to exist, or some strategy found one.
    pub has_bug: bool,
    /// In strategy order.
    pub strategies: Vec<RowCell>,
}

/// One strategy over the whole suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrategyTotal {
    /// The strategy's name.
    pub strategy: String,
    /// Geometric mean of the hit ratios over the rows with a bug, a miss
    /// counting as [`BenchResults::miss_ratio`].
    pub geomean_hit_ratio: f64,
    /// Rows with a bug where this strategy found it at least once.
    pub bugs_found: u32,
    /// Wall-clock measurements over the whole suite.
    pub timing: Timing,
}

/// The options that shaped the results (not `jobs`, which does not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// Executions per cell.
    pub executions: u64,
    /// Seeds per test and strategy.
    pub seeds: u32,
    /// The seed every cell seed is derived from.
    pub base_seed: u64,
    /// Steps per execution at most.
    pub max_steps: u64,
    /// The strategies' names, in column order.
    pub strategies: Vec<String>,
    /// Seconds; set only when a time budget made the run unreproducible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_time_budget_secs: Option<f64>,
}

/// What a benchmark run found: per cell, per test, per strategy; what
/// `wasmrace bench --format json` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// The options that shaped the results.
    pub settings: BenchSettings,
    /// The hit ratio a miss counts as: one over the executions of all seeds.
    pub miss_ratio: f64,
    /// Rows with a bug (the geometric means' population).
    pub tests_with_bug: u32,
    /// Hardest first: rows with a bug by increasing best hit ratio, then
    /// the rows without, in input order.
    pub rows: Vec<RowResult>,
    /// In strategy order.
    pub totals: Vec<StrategyTotal>,
    /// Every cell, in input order (test, strategy, seed index).
    pub cells: Vec<CellResult>,
    /// Set when this is one share of a run (`--partition K/N`): the rows
    /// and totals above cover only this share's cells, and [`merge`]
    /// (`wasmrace merge`) adds the shares up into the whole run's results.
    ///
    /// [`merge`]: super::merge
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<BenchPartition>,
}

/// Which share of a bench run a result is, and what the whole run was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchPartition {
    /// Which share, 1-based as on the command line.
    pub k: u32,
    /// How many shares.
    pub n: u32,
    /// The cells of the whole run.
    pub cells_planned: u64,
    /// The whole run's tests, in input order.
    pub tests: Vec<PlannedTest>,
}

/// A test of a bench run's plan, with the module it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTest {
    /// The module's program name.
    pub program: String,
    /// The blake3 hash of the module as built, hex: shares of runs on
    /// different builds are not merged.
    pub module_blake3: String,
    /// The test and what is known about it.
    #[serde(flatten)]
    pub info: TestInfo,
}
