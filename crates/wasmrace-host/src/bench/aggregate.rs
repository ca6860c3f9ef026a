//! Pools the cells of a bench run into rows per test and strategy and
//! totals per strategy (hit ratios, first bugs, partial orders, geometric
//! means).

use super::TestInfo;
use super::{BenchResults, BenchSettings, CellResult, RowCell, RowResult, StrategyTotal, Timing};
use std::collections::HashMap;
use std::time::Duration;

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Pools `cells` into one row per test of `tests` (program, test) and one
/// cell per strategy of `settings`, grouping cells by their names, so that
/// a share of a run and the whole run are aggregated alike.
pub(super) fn aggregate(
    settings: BenchSettings,
    tests: &[(String, TestInfo)],
    cells: Vec<CellResult>,
) -> BenchResults {
    let miss_ratio = 1.0 / (settings.executions as f64 * f64::from(settings.seeds));
    let mut groups: HashMap<(&str, &str, &str), Vec<&CellResult>> = HashMap::new();
    for c in &cells {
        let key = (c.program.as_str(), c.test.as_str(), c.strategy.as_str());
        groups.entry(key).or_default().push(c);
    }
    let mut rows: Vec<RowResult> = Vec::new();
    for (program, info) in tests {
        let mut row_cells = Vec::new();
        for strategy in &settings.strategies {
            let key = (program.as_str(), info.test.as_str(), strategy.as_str());
            let mine: &[&CellResult] = groups.get(&key).map_or(&[], Vec::as_slice);
            row_cells.push(row_cell(strategy, mine));
        }
        let best_hit_ratio = row_cells.iter().map(|c| c.hit_ratio).fold(0.0, f64::max);
        let best = if best_hit_ratio > 0.0 {
            row_cells
                .iter()
                .filter(|c| c.hit_ratio == best_hit_ratio)
                .map(|c| c.strategy.clone())
                .collect()
        } else {
            Vec::new()
        };
        let has_bug = info.expected_bug.unwrap_or(best_hit_ratio > 0.0);
        rows.push(RowResult {
            program: program.clone(),
            info: info.clone(),
            best_hit_ratio,
            best,
            has_bug,
            strategies: row_cells,
        });
    }
    // Hardest first; the sort is stable, so ties keep the input order.
    rows.sort_by(|a, b| {
        b.has_bug.cmp(&a.has_bug).then_with(|| match a.has_bug {
            true => a.best_hit_ratio.total_cmp(&b.best_hit_ratio),
            false => std::cmp::Ordering::Equal,
        })
    });
    let with_bug: Vec<&RowResult> = rows.iter().filter(|r| r.has_bug).collect();
    let totals = settings
        .strategies
        .iter()
        .enumerate()
        .map(|(si, name)| {
            let ratios: Vec<f64> = with_bug
                .iter()
                .map(|r| {
                    let h = r.strategies[si].hit_ratio;
                    if h > 0.0 {
                        h
                    } else {
                        miss_ratio
                    }
                })
                .collect();
            let geomean = if ratios.is_empty() {
                0.0
            } else {
                (ratios.iter().map(|h| h.ln()).sum::<f64>() / ratios.len() as f64).exp()
            };
            let all: Vec<&RowCell> = rows.iter().map(|r| &r.strategies[si]).collect();
            let executions: u64 = all.iter().map(|c| c.executions).sum();
            let elapsed: f64 = all.iter().map(|c| c.timing.elapsed_ms).sum();
            StrategyTotal {
                strategy: name.clone(),
                geomean_hit_ratio: geomean,
                bugs_found: with_bug
                    .iter()
                    .filter(|r| r.strategies[si].found > 0)
                    .count() as u32,
                timing: Timing {
                    executions_per_second: if elapsed > 0.0 {
                        executions as f64 / (elapsed / 1000.0)
                    } else {
                        0.0
                    },
                    first_bug_ms_mean: None,
                    first_bug_ms_median: None,
                    elapsed_ms: elapsed,
                },
            }
        })
        .collect();
    BenchResults {
        settings,
        miss_ratio,
        tests_with_bug: with_bug.len() as u32,
        rows,
        totals,
        cells,
        partition: None,
    }
}

/// One strategy's runs on one test, pooled.
fn row_cell(strategy: &str, mine: &[&CellResult]) -> RowCell {
    let executions: u64 = mine.iter().map(|c| c.executions).sum();
    let failing: u64 = mine.iter().map(|c| c.failing_executions).sum();
    let firsts: Vec<f64> = mine
        .iter()
        .filter_map(|c| c.first_bug_execution)
        .map(|e| e as f64)
        .collect();
    let first_ms: Vec<f64> = mine
        .iter()
        .filter_map(|c| c.timing.first_bug_ms_mean)
        .collect();
    let elapsed: f64 = mine.iter().map(|c| c.timing.elapsed_ms).sum();
    let orders: Vec<f64> = mine.iter().map(|c| c.distinct_orders as f64).collect();
    RowCell {
        strategy: strategy.into(),
        runs: mine.len() as u32,
        executions,
        failing_executions: failing,
        hit_ratio: if executions > 0 {
            failing as f64 / executions as f64
        } else {
            0.0
        },
        found: firsts.len() as u32,
        first_bug_mean: mean(&firsts),
        first_bug_median: median(&firsts),
        distinct_orders: mean(&orders).unwrap_or(0.0),
        exhausted: mine.iter().all(|c| c.exhausted),
        pruned_by: mine.iter().find_map(|c| c.pruned_by.clone()),
        timing: Timing {
            executions_per_second: if elapsed > 0.0 {
                executions as f64 / (elapsed / 1000.0)
            } else {
                0.0
            },
            first_bug_ms_mean: mean(&first_ms),
            first_bug_ms_median: median(&first_ms),
            elapsed_ms: elapsed,
        },
    }
}
