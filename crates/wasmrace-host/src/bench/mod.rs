//! Strategy comparison, the library behind `wasmrace bench`: runs every
//! test × strategy × seed *cell* for a fixed number of executions, measures
//! each (hit ratio, executions and time to the first bug, executions per
//! second, distinct partial orders, whether the space was exhausted) with the
//! [`Metrics`] observer, and aggregates them per test and strategy the way the
//! POS paper's Table 3 does (rows hardest first, the best cell of a row
//! marked, a geometric mean of hit ratios per strategy where a miss counts as
//! one over the budget).
//!
//! **Reproducible for any number of workers.** Each cell's seed is derived
//! from the base seed, the program, the test, the strategy and the seed
//! index, never from the order cells run in; workers take cells from a
//! shared queue and results are put back in cell order. Everything but the
//! [`Timing`] fields is a function of the modules and options.
//!
//! **Strategies without a seed** (their `Strategy::seed()` is 0 whatever
//! seed they are built with, e.g. DFS) give the same run for every seed, so
//! they run once per test and count as one run.

use crate::check::{StrategyChoice, STRATEGY_NAMES};
use crate::config::HostConfig;
use crate::error::HostError;
use crate::guest::Guest;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use wasmrace_explore::strategies::Metrics;
use wasmrace_explore::{Config, ExploreError, Explorer};

mod aggregate;
mod partition;
mod results;
pub mod suite;

use aggregate::{aggregate, ms};
pub use partition::{merge, BenchMergeError};
pub use results::{
    BenchPartition, BenchProgress, BenchResults, BenchSettings, CellResult, PlannedTest, RowCell,
    RowResult, StrategyTotal, Timing,
};
use wasmrace_explore::Partition;

/// A module to benchmark.
#[derive(Clone, Debug)]
pub struct BenchModule {
    /// The name rows show (`lost_update`); cell seeds are derived from it.
    pub program: String,
    /// The name used in error messages (a path, usually).
    pub source: String,
    /// The wasm module as built (not yet instrumented).
    pub bytes: std::sync::Arc<[u8]>,
    /// The tests to run, with what is known about them; `None` runs every
    /// test the module exports.
    pub tests: Option<Vec<TestInfo>>,
}

/// A test and what is known about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestInfo {
    /// The test's name, without the `wasmrace_test_` prefix.
    pub test: String,
    /// The suite family (`sctbench`, `dpor`, ...), for grouping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Whether some schedule fails, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_bug: Option<bool>,
    /// The published number of partial orders (Mazurkiewicz traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<u64>,
}

/// Every knob of a benchmark run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Executions per cell (`--executions`).
    pub executions: u64,
    /// Seeds per test and strategy (`--seeds`).
    pub seeds: u32,
    /// The seed every cell seed is derived from (`--seed`).
    pub base_seed: u64,
    /// Worker threads (`--jobs`); does not change the results.
    pub jobs: usize,
    /// The strategies, in column order; see [`parse_strategies`].
    pub strategies: Vec<StrategyChoice>,
    /// Test patterns (`--tests`): a test runs when one of them matches its
    /// name, its program, `program/test` or its family; `*` matches any
    /// run of characters, `?` one. Empty: every test.
    pub tests: Vec<String>,
    /// Steps per execution at most (`--max-steps`); a longer execution fails.
    pub max_steps: u64,
    /// Wall-clock budget per cell (`--time-budget`); a cell cut by it is not
    /// reproducible in length. Default: none.
    pub cell_time_budget: Option<Duration>,
    /// How modules are loaded (wasm-opt, cache, limits).
    pub host: HostConfig,
    /// Run only this share of the cells (`--partition K/N`): cell `i` of
    /// the whole run's plan (tests in input order, then strategies, then
    /// seeds) belongs to share `i % N`. [`merge`] adds the shares' results
    /// up into the whole run's. Default: none, every cell.
    pub partition: Option<Partition>,
}

impl Default for BenchOptions {
    /// 1,000 executions per cell, 3 seeds, base seed 0, one worker, every
    /// strategy, every test, the explorer's step bound, the default host.
    /// With these (and two workers) the bundled suite takes about 200 CPU
    /// seconds: minutes on two cores (docs/performance.md has a measurement).
    fn default() -> Self {
        BenchOptions {
            executions: 1000,
            seeds: 3,
            base_seed: 0,
            jobs: 1,
            strategies: STRATEGY_NAMES
                .iter()
                .filter_map(|n| StrategyChoice::from_name(n))
                .collect(),
            tests: Vec::new(),
            max_steps: Config::default().max_steps,
            cell_time_budget: None,
            host: HostConfig::default(),
            partition: None,
        }
    }
}

/// Why a benchmark run could not start or could not finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A module failed to load.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A strategy name no strategy has.
    #[error("unknown strategy `{name}`; the strategies are: {known}")]
    UnknownStrategy {
        /// The name given.
        name: String,
        /// The known names, in backticks, comma-separated.
        known: String,
    },
    /// A strategy listed twice (its columns would be the same).
    #[error("strategy `{name}` is listed twice")]
    DuplicateStrategy {
        /// The name given twice.
        name: String,
    },
    /// An empty strategy list.
    #[error("no strategies to compare; give at least one")]
    NoStrategies,
    /// A count that must be positive is 0.
    #[error("`{option}` must be at least 1")]
    Zero {
        /// The option's flag, e.g. `--seeds`.
        option: &'static str,
    },
    /// The test patterns match no test of any module.
    #[error("no test matches {patterns}; the tests are: {available}")]
    NoMatch {
        /// The patterns given.
        patterns: String,
        /// Every test of the modules.
        available: String,
    },
    /// No module was given.
    #[error("no modules to benchmark")]
    NoModules,
    /// Two modules have the same program name.
    #[error("program `{program}` is given twice")]
    DuplicateProgram {
        /// The name both have.
        program: String,
    },
    /// A cell's exploration failed (a host error, not a bug in the test).
    #[error("exploring test `{test}` of `{program}` with `{strategy}` failed: {message}")]
    Explore {
        /// The module's program name.
        program: String,
        /// The test explored.
        test: String,
        /// The strategy's name.
        strategy: String,
        /// The error, rendered.
        message: String,
    },
}

/// Parses a comma-separated list of strategy names (`dfs,pos,random`).
pub fn parse_strategies(list: &str) -> Result<Vec<StrategyChoice>, BenchError> {
    let mut out: Vec<StrategyChoice> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(choice) = StrategyChoice::from_name(name) else {
            return Err(BenchError::UnknownStrategy {
                name: name.into(),
                known: format!("`{}`", STRATEGY_NAMES.join("`, `")),
            });
        };
        if out.iter().any(|c| c.name() == choice.name()) {
            return Err(BenchError::DuplicateStrategy { name: name.into() });
        }
        out.push(choice);
    }
    if out.is_empty() {
        return Err(BenchError::NoStrategies);
    }
    Ok(out)
}

/// `*` and `?` glob match.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Classic greedy matcher with backtracking to the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

/// The seed of one cell: a hash of everything naming it, so that adding a
/// test, a strategy or a seed leaves the other cells' seeds alone.
pub fn cell_seed(base: u64, program: &str, test: &str, strategy: &str, index: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(b"wasmrace bench cell v1\0");
    h.update(&base.to_le_bytes());
    for s in [program, test, strategy] {
        h.update(&(s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    }
    h.update(&index.to_le_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(b)
}

/// Whether a strategy uses its seed: built with two different seeds, it
/// reports one of them.
fn is_seeded(choice: &StrategyChoice) -> bool {
    let seed = |s| choice.build(s).standing().seed;
    seed(0x5eed_0001) != 0 || seed(0x5eed_0002) != 0
}

/// How many programs of one guest may be alive at once: the engine pools 16
/// instances and a program holds up to two while it re-instantiates; half
/// of that leaves room. More workers get their own copies of the guest.
const WORKERS_PER_GUEST: usize = 4;

struct Cell {
    /// Position in the whole run's plan (whatever the partition).
    index: u64,
    module: usize,
    test: usize,
    strategy: usize,
    seed_index: u32,
}

/// Runs the benchmark; see the module documentation. `progress` is called
/// from the worker threads, after each module load, every few hundred
/// executions and after each cell.
pub fn bench(
    modules: &[BenchModule],
    opts: &BenchOptions,
    progress: &(dyn Fn(&BenchProgress) + Sync),
) -> Result<BenchResults, BenchError> {
    validate(modules, opts)?;
    // Pick the tests first: the audit validates a module and lists its
    // tests without instrumenting it, so modules with no test picked are
    // never instrumented or compiled.
    let tests = pick_tests(modules, opts)?;
    let seeded: Vec<bool> = opts.strategies.iter().map(is_seeded).collect();
    let plan = plan_cells(opts, &tests, &seeded);
    let planned = plan.len() as u64;
    let cells: Vec<Cell> = match opts.partition {
        Some(p) => plan.into_iter().filter(|c| p.owns_index(c.index)).collect(),
        None => plan,
    };
    let loaded = load_guests(modules, opts, &cells, progress)?;
    let results = run_cells(modules, opts, &tests, &loaded, &cells, progress)?;
    let named = |(mi, info): &(usize, TestInfo)| (modules[*mi].program.clone(), info.clone());
    let Some(p) = opts.partition else {
        let all: Vec<_> = tests.iter().map(named).collect();
        return Ok(aggregate(settings(opts), &all, results));
    };
    // A share's rows are the tests it ran cells of; the whole run's plan
    // goes along, for `merge`.
    let ran: Vec<_> = tests
        .iter()
        .enumerate()
        .filter(|(ti, _)| cells.iter().any(|c| c.test == *ti))
        .map(|(_, t)| named(t))
        .collect();
    let mut results = aggregate(settings(opts), &ran, results);
    results.partition = Some(BenchPartition {
        k: p.index + 1,
        n: p.count,
        cells_planned: planned,
        tests: tests
            .iter()
            .map(|(mi, info)| PlannedTest {
                program: modules[*mi].program.clone(),
                module_blake3: blake3::hash(&modules[*mi].bytes).to_hex().to_string(),
                info: info.clone(),
            })
            .collect(),
    });
    Ok(results)
}

/// The options that shape the results, as the results record them.
fn settings(opts: &BenchOptions) -> BenchSettings {
    BenchSettings {
        executions: opts.executions,
        seeds: opts.seeds,
        base_seed: opts.base_seed,
        max_steps: opts.max_steps,
        strategies: opts.strategies.iter().map(|s| s.name().into()).collect(),
        cell_time_budget_secs: opts.cell_time_budget.map(|d| d.as_secs_f64()),
    }
}

/// Refuses empty, duplicate and zero inputs.
fn validate(modules: &[BenchModule], opts: &BenchOptions) -> Result<(), BenchError> {
    if modules.is_empty() {
        return Err(BenchError::NoModules);
    }
    if opts.strategies.is_empty() {
        return Err(BenchError::NoStrategies);
    }
    for (i, s) in opts.strategies.iter().enumerate() {
        if opts.strategies[..i].iter().any(|o| o.name() == s.name()) {
            return Err(BenchError::DuplicateStrategy {
                name: s.name().into(),
            });
        }
    }
    for (i, m) in modules.iter().enumerate() {
        if modules[..i].iter().any(|o| o.program == m.program) {
            return Err(BenchError::DuplicateProgram {
                program: m.program.clone(),
            });
        }
    }
    for (option, v) in [
        ("--executions", opts.executions),
        ("--seeds", u64::from(opts.seeds)),
        ("--jobs", opts.jobs as u64),
        ("--max-steps", opts.max_steps),
    ] {
        if v == 0 {
            return Err(BenchError::Zero { option });
        }
    }
    Ok(())
}

/// The tests to run, with the index of their module: every test of each
/// module (or its listed ones) that matches a pattern of `opts.tests`.
fn pick_tests(
    modules: &[BenchModule],
    opts: &BenchOptions,
) -> Result<Vec<(usize, TestInfo)>, BenchError> {
    let mut tests: Vec<(usize, TestInfo)> = Vec::new();
    let mut available: Vec<String> = Vec::new();
    for (mi, m) in modules.iter().enumerate() {
        let exported = crate::load::analyze(&m.source, &m.bytes)?.tests;
        let infos: Vec<TestInfo> = match &m.tests {
            Some(list) => {
                for t in list {
                    if !exported.contains(&t.test) {
                        return Err(HostError::UnknownTest {
                            name: m.source.clone(),
                            test: t.test.clone(),
                            available: format!("`{}`", exported.join("`, `")),
                        }
                        .into());
                    }
                }
                list.clone()
            }
            None => exported
                .iter()
                .map(|t| TestInfo {
                    test: t.clone(),
                    ..TestInfo::default()
                })
                .collect(),
        };
        for info in infos {
            available.push(format!("{}/{}", m.program, info.test));
            let names = [
                info.test.clone(),
                m.program.clone(),
                format!("{}/{}", m.program, info.test),
                info.family.clone().unwrap_or_default(),
            ];
            let wanted = opts.tests.is_empty()
                || opts
                    .tests
                    .iter()
                    .any(|p| names.iter().any(|n| !n.is_empty() && glob_match(p, n)));
            if wanted {
                tests.push((mi, info));
            }
        }
    }
    if tests.is_empty() {
        return Err(BenchError::NoMatch {
            patterns: format!("`{}`", opts.tests.join("`, `")),
            available: format!("`{}`", available.join("`, `")),
        });
    }
    Ok(tests)
}

/// The guests of the modules that have tests to run (`guests[module]`, a
/// few copies each, empty for the others) and how many modules that is.
struct Loaded {
    guests: Vec<Vec<Guest>>,
    copies: usize,
    used: usize,
}

/// Loads the modules that have cells to run, in parallel: a module not in
/// the cache takes seconds to instrument.
fn load_guests(
    modules: &[BenchModule],
    opts: &BenchOptions,
    cells: &[Cell],
    progress: &(dyn Fn(&BenchProgress) + Sync),
) -> Result<Loaded, BenchError> {
    let used: Vec<usize> = (0..modules.len())
        .filter(|mi| cells.iter().any(|c| c.module == *mi))
        .collect();
    let copies = opts.jobs.div_ceil(WORKERS_PER_GUEST);
    let loaded = AtomicUsize::new(0);
    let loaded_guests: Vec<Vec<Guest>> = parallel(
        opts.jobs,
        used.len(),
        |i| -> Result<Vec<Guest>, BenchError> {
            let m = &modules[used[i]];
            let guests = (0..copies)
                .map(|_| Guest::from_bytes(&m.source, &m.bytes, opts.host.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let done = loaded.fetch_add(1, Ordering::Relaxed) + 1;
            progress(&BenchProgress {
                modules_loaded: done,
                modules: used.len(),
                cells_done: 0,
                cells: 0,
                executions_done: 0,
                executions_planned: 0,
            });
            Ok(guests)
        },
    )?;
    let mut guests: Vec<Vec<Guest>> = vec![Vec::new(); modules.len()];
    for (mi, g) in used.iter().zip(loaded_guests) {
        guests[*mi] = g;
    }
    Ok(Loaded {
        guests,
        copies,
        used: used.len(),
    })
}

/// Every test x strategy x seed cell; unseeded strategies run once.
fn plan_cells(opts: &BenchOptions, tests: &[(usize, TestInfo)], seeded: &[bool]) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    for (ti, (mi, _)) in tests.iter().enumerate() {
        for (si, _) in opts.strategies.iter().enumerate() {
            let runs = if seeded[si] { opts.seeds } else { 1 };
            for seed_index in 0..runs {
                cells.push(Cell {
                    index: cells.len() as u64,
                    module: *mi,
                    test: ti,
                    strategy: si,
                    seed_index,
                });
            }
        }
    }
    cells
}

/// Runs the cells on `opts.jobs` workers, reporting progress.
fn run_cells(
    modules: &[BenchModule],
    opts: &BenchOptions,
    tests: &[(usize, TestInfo)],
    loaded: &Loaded,
    cells: &[Cell],
    progress: &(dyn Fn(&BenchProgress) + Sync),
) -> Result<Vec<CellResult>, BenchError> {
    let (guests, copies, used) = (&loaded.guests, loaded.copies, loaded.used);
    let executions_done = AtomicU64::new(0);
    let cells_done = AtomicUsize::new(0);
    // Saturating: `--executions` may be any u64 when a time budget ends
    // the cells (a product past it panicked).
    let planned = (cells.len() as u64).saturating_mul(opts.executions);
    let report_progress = |executions: u64| {
        progress(&BenchProgress {
            modules_loaded: used,
            modules: used,
            cells_done: cells_done.load(Ordering::Relaxed),
            cells: cells.len(),
            executions_done: executions,
            executions_planned: planned,
        })
    };
    let results: Vec<CellResult> = parallel(opts.jobs, cells.len(), |ci| {
        let cell = &cells[ci];
        let worker = current_worker();
        let guest = &guests[cell.module][worker / WORKERS_PER_GUEST % copies];
        let program = &modules[cell.module].program;
        let info = &tests[cell.test].1;
        let choice = &opts.strategies[cell.strategy];
        let seed = cell_seed(
            opts.base_seed,
            program,
            &info.test,
            choice.name(),
            cell.seed_index,
        );
        let mut counted = 0u64;
        let result = run_cell(guest, program, &info.test, choice, seed, opts, &mut |n| {
            // Batch the shared counter: executions can take microseconds.
            if n - counted >= 256 {
                let delta = n - counted;
                counted = n;
                let before = executions_done.fetch_add(delta, Ordering::Relaxed);
                report_progress(before.saturating_add(delta));
            }
        });
        let result = result.map(|mut r| {
            r.seed_index = cell.seed_index;
            r.index = cell.index;
            r
        });
        // Count the rest of the cell's budget as done: a DFS that exhausted
        // early will not run it.
        let rest = opts.executions.saturating_sub(counted);
        // The progress count, for the bar only: it may wrap past u64 when
        // `--executions` is huge (a time budget ends the cells); the sum
        // shown saturates.
        let total = executions_done
            .fetch_add(rest, Ordering::Relaxed)
            .saturating_add(rest);
        cells_done.fetch_add(1, Ordering::Relaxed);
        report_progress(total);
        result
    })?;
    Ok(results)
}

thread_local! {
    static WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn current_worker() -> usize {
    WORKER.with(|w| w.get())
}

/// Runs `f(0..n)` on `jobs` scoped threads taking indices from a shared
/// counter, and returns the results in index order. After an error no new
/// index is started, and the error of the lowest failing index is returned,
/// so which error is reported does not depend on scheduling.
fn parallel<T: Send, E: Send>(
    jobs: usize,
    n: usize,
    f: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T, E>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for w in 0..jobs.min(n).max(1) {
            let (next, failed, slots, f) = (&next, &failed, &slots, &f);
            scope.spawn(move || {
                WORKER.with(|c| c.set(w));
                loop {
                    if failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = f(i);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(n);
    for slot in slots {
        match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            // Never started, because some index failed. Indices start in
            // order, so every index below a started one started too: the
            // lowest failing index always ran and is reached before this.
            None => continue,
        }
    }
    Ok(out)
}

fn run_cell(
    guest: &Guest,
    program_name: &str,
    test: &str,
    choice: &StrategyChoice,
    seed: u64,
    opts: &BenchOptions,
    on_execution: &mut dyn FnMut(u64),
) -> Result<CellResult, BenchError> {
    let program = guest.program(test)?;
    let config = Config {
        max_executions: opts.executions,
        max_steps: opts.max_steps,
        time_budget: opts.cell_time_budget,
        stop_on_first_bug: false,
        // A cell reports its first bug and counts the others.
        max_bugs_kept: 1,
        ..Config::default()
    };
    let mut explorer = Explorer::new(program, config);
    let mut strategy = choice.build(seed);
    let mut metrics = Metrics::new();
    let report = explorer
        .run_with(&mut *strategy, &mut metrics, &mut |r| {
            on_execution(r.executions)
        })
        .map_err(|e| match e {
            ExploreError::Program(h) => BenchError::Host(h),
            other => BenchError::Explore {
                program: program_name.into(),
                test: test.into(),
                strategy: choice.name().into(),
                message: other.to_string(),
            },
        })?;
    let first = report.first_bug();
    let secs = report.elapsed.as_secs_f64();
    let first_ms = metrics.first_failure_after().map(ms);
    Ok(CellResult {
        program: program_name.into(),
        test: test.into(),
        strategy: choice.name().into(),
        index: 0,
        seed_index: 0,
        seed,
        executions: report.executions,
        failing_executions: report.failing_executions,
        first_bug_execution: metrics.first_failure(),
        first_bug_kind: first.map(|b| b.failure.kind.name().to_string()),
        first_bug_found_by: first.map(|b| b.found_by.clone()),
        distinct_orders: metrics.distinct_orders() as u64,
        exhausted: report.exhausted,
        pruned_by: report.strategy_bound.map(|b| b.knob.to_string()),
        stopped_by: report
            .stopped_by
            .filter(|b| b.knob != "--max-executions")
            .map(|b| b.knob.to_string()),
        timing: Timing {
            executions_per_second: if secs > 0.0 {
                report.executions as f64 / secs
            } else {
                0.0
            },
            first_bug_ms_mean: first_ms,
            first_bug_ms_median: first_ms,
            elapsed_ms: ms(report.elapsed),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(program: &str) -> BenchModule {
        let bytes = std::fs::read(wasmrace_fixtures::path(program)).expect("a fixture program");
        BenchModule {
            program: program.into(),
            source: format!("{program}.wasm"),
            bytes: bytes.into(),
            tests: None,
        }
    }

    fn options(strategies: &str, executions: u64, seeds: u32, jobs: usize) -> BenchOptions {
        BenchOptions {
            executions,
            seeds,
            jobs,
            strategies: parse_strategies(strategies).unwrap(),
            ..BenchOptions::default()
        }
    }

    fn without_timing(mut r: BenchResults) -> BenchResults {
        for c in &mut r.cells {
            c.timing = Timing::default();
        }
        for row in &mut r.rows {
            for c in &mut row.strategies {
                c.timing = Timing::default();
            }
        }
        for t in &mut r.totals {
            t.timing = Timing::default();
        }
        r
    }

    #[test]
    fn every_strategy_name_builds_the_strategy_of_that_name() {
        for name in STRATEGY_NAMES {
            let choice = StrategyChoice::from_name(name).expect(name);
            assert_eq!(choice.name(), *name);
            assert_eq!(choice.build(1).name(), *name);
        }
        assert_eq!(StrategyChoice::from_name("dfs-ish"), None);
        assert_eq!(
            StrategyChoice::from_name("portfolio"),
            Some(StrategyChoice::default_portfolio())
        );
    }

    #[test]
    fn strategy_lists_are_checked() {
        let s = parse_strategies(" dfs, pos ,random").unwrap();
        let names: Vec<&str> = s.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["dfs", "pos", "random"]);
        let e = parse_strategies("dfs,bogus").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown strategy `bogus`; the strategies are: `portfolio`, `dfs`"),
            "{e}"
        );
        let e = parse_strategies("pos,pos").unwrap_err().to_string();
        assert_eq!(e, "strategy `pos` is listed twice");
        assert!(matches!(
            parse_strategies(" , "),
            Err(BenchError::NoStrategies)
        ));
    }

    #[test]
    fn only_seeded_strategies_run_once_per_seed() {
        let seeded: Vec<(&str, bool)> = STRATEGY_NAMES
            .iter()
            .map(|n| (*n, is_seeded(&StrategyChoice::from_name(n).unwrap())))
            .collect();
        assert!(seeded.contains(&("dfs", false)), "{seeded:?}");
        assert!(seeded.contains(&("random", true)));
        assert!(seeded.contains(&("pos", true)));
        assert!(seeded.contains(&("portfolio", true)));
    }

    #[test]
    fn globs() {
        assert!(glob_match("world_hello_*", "world_hello_10"));
        assert!(glob_match("*hello*", "world_hello_10"));
        assert!(glob_match("lost?update", "lost_update"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("lost_update", "lost_update_3"));
        assert!(!glob_match("a*b", "acb c"));
        assert!(!glob_match("?", ""));
    }

    #[test]
    fn cell_seeds_depend_on_every_part_of_the_cell() {
        let s = cell_seed(0, "p", "t", "pos", 0);
        assert_eq!(s, cell_seed(0, "p", "t", "pos", 0));
        for other in [
            cell_seed(1, "p", "t", "pos", 0),
            cell_seed(0, "q", "t", "pos", 0),
            cell_seed(0, "p", "u", "pos", 0),
            cell_seed(0, "p", "t", "pct", 0),
            cell_seed(0, "p", "t", "pos", 1),
            // The parts are delimited: moving a character across changes it.
            cell_seed(0, "pt", "", "pos", 0),
        ] {
            assert_ne!(s, other);
        }
    }

    /// The same cells whatever the number of workers, and the numbers make
    /// sense: DFS (one run) finds the lost update and exhausts the
    /// bug-free counter; sampling strategies run once per seed.
    #[test]
    fn results_do_not_depend_on_jobs() {
        let modules = [module("lost_update"), module("mutex_counter")];
        let one = bench(&modules, &options("dfs,random,pos", 60, 2, 1), &|_| {}).unwrap();
        let calls = AtomicUsize::new(0);
        let three = bench(&modules, &options("dfs,random,pos", 60, 2, 3), &|p| {
            assert!(p.executions_done <= p.executions_planned || p.cells == 0);
            assert_eq!(p.modules, 2);
            calls.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert!(calls.load(Ordering::Relaxed) > 0);
        assert_eq!(without_timing(one.clone()), without_timing(three));

        // 4 tests x (1 dfs run + 2 random + 2 pos).
        assert_eq!(one.cells.len(), 4 * 5);
        assert_eq!(one.rows.len(), 4);
        let row = |test: &str| one.rows.iter().find(|r| r.info.test == test).unwrap();
        let dfs = &row("lost_update").strategies[0];
        assert_eq!((dfs.strategy.as_str(), dfs.runs), ("dfs", 1));
        assert!(dfs.found == 1 && dfs.hit_ratio > 0.0, "{dfs:?}");
        assert!(dfs.distinct_orders >= 2.0, "{dfs:?}");
        let counter = row("mutex_counter");
        assert!(!counter.has_bug && counter.best.is_empty());
        assert!(
            counter.strategies[0].exhausted,
            "{:?}",
            counter.strategies[0]
        );
        assert_eq!(counter.strategies[1].runs, 2);
        assert_eq!(counter.strategies[1].executions, 120);
        // Bug-free rows come last; the geometric mean is over the others.
        let last: Vec<&str> = one.rows[2..].iter().map(|r| r.info.test.as_str()).collect();
        assert_eq!(last, ["mutex_counter", "mutex_counter_3"]);
        assert_eq!(one.tests_with_bug, 2);
        assert_eq!(one.totals.len(), 3);
        assert_eq!(one.totals[0].bugs_found, 2);
    }

    fn cell(
        test: &str,
        strategy: &str,
        executions: u64,
        failing: u64,
        first: Option<u64>,
    ) -> CellResult {
        CellResult {
            program: "p".into(),
            test: test.into(),
            strategy: strategy.into(),
            index: 0,
            seed_index: 0,
            seed: 0,
            executions,
            failing_executions: failing,
            first_bug_execution: first,
            first_bug_kind: first.map(|_| "panic".into()),
            first_bug_found_by: first.map(|_| strategy.into()),
            distinct_orders: 3,
            exhausted: false,
            pruned_by: None,
            stopped_by: None,
            timing: Timing::default(),
        }
    }

    /// Two strategies (one unseeded), two seeds, three tests: hit ratios
    /// pool the seeds, a miss counts as 1/(executions x seeds) in the
    /// geometric mean, rows go hardest first with the best marked.
    #[test]
    fn aggregates_like_the_pos_paper() {
        let opts = options("dfs,random", 100, 2, 1);
        let tests: Vec<(String, TestInfo)> = ["easy", "hard", "clean"]
            .iter()
            .map(|t| {
                (
                    "p".to_string(),
                    TestInfo {
                        test: t.to_string(),
                        expected_bug: Some(*t != "clean"),
                        ..TestInfo::default()
                    },
                )
            })
            .collect();
        let cells = vec![
            // easy: dfs 50/100 (first at 2); random 10/100 (first 5), 30/100 (first 1)
            cell("easy", "dfs", 100, 50, Some(2)),
            cell("easy", "random", 100, 10, Some(5)),
            cell("easy", "random", 100, 30, Some(1)),
            // hard: dfs misses; random 1/100 in one seed only (first 80)
            cell("hard", "dfs", 100, 0, None),
            cell("hard", "random", 100, 1, Some(80)),
            cell("hard", "random", 100, 0, None),
            // clean
            cell("clean", "dfs", 100, 0, None),
            cell("clean", "random", 100, 0, None),
            cell("clean", "random", 100, 0, None),
        ];
        let r = aggregate(settings(&opts), &tests, cells);
        let order: Vec<&str> = r.rows.iter().map(|r| r.info.test.as_str()).collect();
        assert_eq!(order, ["hard", "easy", "clean"]);
        let hard = &r.rows[0];
        assert_eq!(hard.best, ["random"]);
        assert_eq!(hard.strategies[1].hit_ratio, 1.0 / 200.0);
        assert_eq!(hard.strategies[1].found, 1);
        assert_eq!(hard.strategies[1].first_bug_mean, Some(80.0));
        let easy = &r.rows[1];
        assert_eq!(easy.best, ["dfs"]);
        assert_eq!(easy.strategies[0].hit_ratio, 0.5);
        assert_eq!(easy.strategies[1].hit_ratio, 0.2);
        assert_eq!(easy.strategies[1].first_bug_mean, Some(3.0));
        assert_eq!(easy.strategies[1].first_bug_median, Some(3.0));
        assert_eq!(r.miss_ratio, 1.0 / 200.0);
        assert_eq!(r.tests_with_bug, 2);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(
            r.totals[0].geomean_hit_ratio,
            (0.5f64 * (1.0 / 200.0)).sqrt()
        ));
        assert!(close(
            r.totals[1].geomean_hit_ratio,
            (0.2f64 * (1.0 / 200.0)).sqrt()
        ));
        assert_eq!((r.totals[0].bugs_found, r.totals[1].bugs_found), (1, 2));
        assert!(!r.rows[2].has_bug);
    }

    /// `N` shares of a run (`--partition K/N`), merged in any order, give
    /// the whole run's results; each share runs only its cells, and shares
    /// that do not make one run are refused.
    #[test]
    fn shares_of_a_run_merge_into_the_whole_run() {
        let modules = [module("lost_update"), module("mutex_counter")];
        let mut opts = options("dfs,random", 20, 2, 2);
        opts.tests = vec!["lost_update_3".into(), "mutex_counter/mutex_counter".into()];
        let whole = without_timing(bench(&modules, &opts, &|_| {}).unwrap());
        assert_eq!(whole.cells.len(), 6);
        for n in [1u32, 2, 4, 7] {
            let mut shares: Vec<BenchResults> = (0..n)
                .map(|k| {
                    opts.partition = Partition::new(k, n);
                    bench(&modules, &opts, &|_| {}).unwrap()
                })
                .collect();
            opts.partition = None;
            for (k, share) in shares.iter().enumerate() {
                let k = k as u64;
                assert!(share.cells.iter().all(|c| c.index % u64::from(n) == k));
                assert_eq!(share.partition.as_ref().unwrap().cells_planned, 6);
            }
            shares.reverse();
            let merged = without_timing(merge(shares.clone()).unwrap());
            assert_eq!(merged, whole, "{n} shares");
            if n > 1 {
                let mut twice = shares.clone();
                twice[0] = shares[1].clone();
                assert!(matches!(merge(twice), Err(BenchMergeError::Twice { .. })));
                let e = merge(shares[1..].to_vec()).unwrap_err().to_string();
                assert!(e.starts_with("partitions `"), "{e}");
                let mut other = shares.clone();
                other[1].settings.executions += 1;
                let e = merge(other).unwrap_err();
                assert_eq!(
                    e,
                    BenchMergeError::OtherRun {
                        part: 1,
                        what: "settings"
                    }
                );
                // The last part is share 1, which always has a cell.
                let mut lost = shares.clone();
                let last = lost.len() - 1;
                lost[last].cells.pop();
                let e = merge(lost).unwrap_err();
                assert_eq!(e.part(), Some(last), "{e}");
                assert!(matches!(e, BenchMergeError::BadCells { k: 1, .. }), "{e}");
            }
        }
        assert_eq!(
            merge(vec![whole]).unwrap_err(),
            BenchMergeError::NotAPart { part: 0 }
        );
    }

    /// A module none of whose tests is picked is never instrumented: with
    /// `--tests` naming one module's test, the progress counts one module.
    #[test]
    fn only_modules_with_picked_tests_are_loaded() {
        let mut opts = options("random", 5, 1, 2);
        opts.tests = vec!["lost_update_3".into()];
        let modules = [module("mutex_counter"), module("lost_update")];
        let seen = Mutex::new(Vec::new());
        let r = bench(&modules, &opts, &|p| seen.lock().unwrap().push(p.modules)).unwrap();
        assert_eq!(r.rows.len(), 1);
        assert!(seen.into_inner().unwrap().iter().all(|m| *m == 1));
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let modules = [module("lost_update")];
        let mut opts = options("random", 10, 1, 1);
        opts.tests = vec!["nothing_like_it*".into()];
        let e = bench(&modules, &opts, &|_| {}).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "no test matches `nothing_like_it*`; the tests are: `lost_update/lost_update`"
            ),
            "{e}"
        );
        opts.tests.clear();
        opts.executions = 0;
        let e = bench(&modules, &opts, &|_| {}).unwrap_err().to_string();
        assert_eq!(e, "`--executions` must be at least 1");
        let broken = BenchModule {
            program: "broken".into(),
            source: "broken.wasm".into(),
            bytes: b"\0asm\x01\0\0\0\x01".as_slice().into(),
            tests: None,
        };
        let e = bench(&[broken], &options("random", 10, 1, 1), &|_| {}).unwrap_err();
        assert!(
            matches!(e, BenchError::Host(HostError::Invalid { .. })),
            "{e}"
        );
        let mut named = module("lost_update");
        named.tests = Some(vec![TestInfo {
            test: "no_such_test".into(),
            ..TestInfo::default()
        }]);
        let e = bench(&[named], &options("random", 10, 1, 1), &|_| {}).unwrap_err();
        assert!(
            matches!(e, BenchError::Host(HostError::UnknownTest { .. })),
            "{e}"
        );
    }
}
