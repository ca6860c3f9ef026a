//! Adding up the shares of a partitioned bench run (`wasmrace bench
//! --partition K/N`, then `wasmrace merge`): after checking that the shares
//! belong to one run and cover it exactly once, their cells are pooled and
//! aggregated as one run's, so the merged results equal the whole run's
//! (timing aside).

use super::aggregate::aggregate;
use super::{BenchResults, CellResult};

/// Why the shares of a bench run cannot be merged. `part` is the share's
/// position in the list given to [`merge`], from 0.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BenchMergeError {
    /// Nothing to merge.
    #[error("no parts to merge")]
    Empty,
    /// A result without a partition (a whole run, not a share).
    #[error("is not a share of a bench run: it was not run with `--partition`")]
    NotAPart {
        /// Which part.
        part: usize,
    },
    /// A share of another run: other settings, tests, modules or N.
    #[error("belongs to another run than the first part: its {what} differ")]
    OtherRun {
        /// Which part.
        part: usize,
        /// What differs (`settings`, `tests or modules`, `partition count`).
        what: &'static str,
    },
    /// Two shares with the same `K`.
    #[error("is partition `{k}/{n}`, given twice")]
    Twice {
        /// Which part (the second of the two).
        part: usize,
        /// Its `K`.
        k: u32,
        /// Its `N`.
        n: u32,
    },
    /// Shares missing.
    #[error("partitions {missing} of `{n}` are missing")]
    Missing {
        /// The missing `K`s, in backticks.
        missing: String,
        /// `N`.
        n: u32,
    },
    /// A share holding a cell that is not its own, or too few cells.
    #[error("does not hold exactly the cells of partition `{k}/{n}`")]
    BadCells {
        /// Which part.
        part: usize,
        /// Its `K`.
        k: u32,
        /// Its `N`.
        n: u32,
    },
}

impl BenchMergeError {
    /// The part the error is about, if one.
    pub fn part(&self) -> Option<usize> {
        match self {
            BenchMergeError::NotAPart { part }
            | BenchMergeError::OtherRun { part, .. }
            | BenchMergeError::Twice { part, .. }
            | BenchMergeError::BadCells { part, .. } => Some(*part),
            BenchMergeError::Empty | BenchMergeError::Missing { .. } => None,
        }
    }
}

/// The whole run's results from the results of its `N` shares, in any
/// order: the cells pooled in plan order and aggregated as
/// [`bench`](super::bench) aggregates a whole run. Refused unless the
/// shares have the same settings, tests, modules and `N`, each `K` once,
/// and each share holds exactly its own cells.
pub fn merge(parts: Vec<BenchResults>) -> Result<BenchResults, BenchMergeError> {
    let first = parts.first().ok_or(BenchMergeError::Empty)?;
    let plan = first
        .partition
        .clone()
        .ok_or(BenchMergeError::NotAPart { part: 0 })?;
    let mut seen = vec![false; plan.n as usize];
    for (part, r) in parts.iter().enumerate() {
        let p = r
            .partition
            .as_ref()
            .ok_or(BenchMergeError::NotAPart { part })?;
        let other = |what| Err(BenchMergeError::OtherRun { part, what });
        if r.settings != first.settings {
            return other("settings");
        }
        if p.n != plan.n {
            return other("partition count");
        }
        if p.tests != plan.tests || p.cells_planned != plan.cells_planned {
            return other("tests or modules");
        }
        let (k, n) = (p.k, p.n);
        if k == 0 || k > n || !own_cells(&r.cells, k, n, plan.cells_planned) {
            return Err(BenchMergeError::BadCells { part, k, n });
        }
        if std::mem::replace(&mut seen[k as usize - 1], true) {
            return Err(BenchMergeError::Twice { part, k, n });
        }
    }
    let missing: Vec<String> = (1..=plan.n)
        .filter(|k| !seen[*k as usize - 1])
        .map(|k| format!("`{k}`"))
        .collect();
    if !missing.is_empty() {
        return Err(BenchMergeError::Missing {
            missing: missing.join(", "),
            n: plan.n,
        });
    }
    let settings = first.settings.clone();
    let mut cells: Vec<CellResult> = parts.into_iter().flat_map(|r| r.cells).collect();
    cells.sort_by_key(|c| c.index);
    let tests: Vec<_> = plan
        .tests
        .iter()
        .map(|t| (t.program.clone(), t.info.clone()))
        .collect();
    Ok(aggregate(settings, &tests, cells))
}

/// Whether `cells` are exactly share `k` of `n`'s cells of a plan of
/// `planned` cells: each index once, in the share, and none missing.
fn own_cells(cells: &[CellResult], k: u32, n: u32, planned: u64) -> bool {
    let (k, n) = (u64::from(k), u64::from(n));
    let expected = planned / n + u64::from(planned % n >= k);
    let mut indices: Vec<u64> = cells.iter().map(|c| c.index).collect();
    indices.sort_unstable();
    indices.dedup();
    indices.len() == cells.len()
        && indices.len() as u64 == expected
        && indices.iter().all(|i| *i < planned && i % n == k - 1)
}
