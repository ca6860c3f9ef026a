//! The tables `wasmrace bench` prints, as aligned text or as markdown: hit
//! ratios (the comparison itself), executions to the first bug, distinct
//! partial orders, and last, under its own heading, wall-clock timing — the
//! one part that differs between two runs with the same options, so that
//! comparisons can cut the output there.

use std::fmt::Write;
use wasmrace_host::bench::{BenchResults, RowCell, RowResult};

/// The heading the timing part starts with, in both formats.
pub const TIMING_HEADING: &str = "Timing";

/// A table: a header, rows, and separator lines before some rows.
struct Table {
    header: Vec<String>,
    /// Leading columns of text (test, family, ...), aligned left; the
    /// numbers after them align right.
    left: usize,
    rows: Vec<Vec<String>>,
    /// Row indices a separator line goes before (text only; markdown tables
    /// have no separators, and the rows read the same without).
    breaks: Vec<usize>,
}

impl Table {
    fn text(&self) -> String {
        let cols = self.header.len();
        let width = |c: usize| {
            std::iter::once(&self.header)
                .chain(&self.rows)
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..cols).map(width).collect();
        let line = |r: &[String]| {
            let mut out = String::new();
            for (c, w) in widths.iter().enumerate() {
                let cell = r.get(c).map(String::as_str).unwrap_or("");
                let sep = if c == 0 { "" } else { "  " };
                if c < self.left {
                    let _ = write!(out, "{sep}{cell:<w$}");
                } else {
                    let _ = write!(out, "{sep}{cell:>w$}");
                }
            }
            format!("{}\n", out.trim_end())
        };
        let rule = format!(
            "{}\n",
            "-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1))
        );
        let mut out = line(&self.header);
        out.push_str(&rule);
        for (i, r) in self.rows.iter().enumerate() {
            if self.breaks.contains(&i) {
                out.push_str(&rule);
            }
            out.push_str(&line(r));
        }
        out
    }

    fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| {} |",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let align: Vec<&str> = (0..self.header.len())
            .map(|c| if c < self.left { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                r.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | ")
            );
        }
        out
    }
}

/// A hit ratio: `-` for none, three significant digits, scientific below
/// 0.001 (`1.23e-4`).
pub fn ratio(h: f64) -> String {
    if h <= 0.0 {
        "-".into()
    } else if h >= 0.001 {
        let digits = (2 - h.log10().floor() as i32).max(0) as usize;
        format!("{h:.digits$}")
    } else {
        format!("{h:.2e}")
    }
}

/// A count that may be a mean: no decimals when whole.
fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn rate(per_sec: f64) -> String {
    if per_sec >= 10_000.0 {
        format!("{:.0}k", per_sec / 1000.0)
    } else {
        format!("{per_sec:.0}")
    }
}

/// Row labels: the test name, or `program/test` where two programs share
/// a test name.
fn labels(r: &BenchResults) -> Vec<String> {
    r.rows
        .iter()
        .map(|row| {
            let shared = r
                .rows
                .iter()
                .filter(|o| o.info.test == row.info.test)
                .count()
                > 1;
            if shared {
                format!("{}/{}", row.program, row.info.test)
            } else {
                row.info.test.clone()
            }
        })
        .collect()
}

/// `yes`/`no` when the suite says whether the test has a bug, else `found`
/// or `?`.
fn bug_column(row: &RowResult) -> &'static str {
    match row.info.expected_bug {
        Some(true) => "yes",
        Some(false) => "no",
        None if row.has_bug => "found",
        None => "?",
    }
}

/// `mean`, or `mean / median` when they differ, then `(k/K)` when only
/// k of the K runs found the bug; `-` when none did.
fn mean_median(
    mean: Option<f64>,
    median: Option<f64>,
    c: &RowCell,
    fmt: fn(f64) -> String,
) -> String {
    let Some(mean) = mean else {
        return "-".into();
    };
    let mut out = fmt(mean);
    if let Some(median) = median.filter(|m| fmt(*m) != out) {
        let _ = write!(out, " / {}", fmt(median));
    }
    if c.found < c.runs {
        let _ = write!(out, " ({}/{})", c.found, c.runs);
    }
    out
}

fn first_bug(c: &RowCell) -> String {
    mean_median(c.first_bug_mean, c.first_bug_median, c, number)
}

fn orders(c: &RowCell) -> String {
    let n = number(c.distinct_orders);
    match (c.exhausted, &c.pruned_by) {
        (true, None) => format!("{n} all"),
        (true, Some(_)) => format!("{n} bound"),
        (false, _) => n,
    }
}

struct Sections {
    intro: String,
    hit: (String, Table),
    first: (String, Table),
    orders: (String, Table),
    speed: (String, Table),
    first_ms: (String, Table),
}

fn sections(r: &BenchResults, best_mark: &dyn Fn(&str) -> String, best_note: &str) -> Sections {
    let cols = Columns::new(r);
    Sections {
        intro: intro(r),
        hit: hit_section(r, &cols, best_mark, best_note),
        first: first_section(r, &cols),
        orders: orders_section(r, &cols),
        speed: speed_section(r, &cols),
        first_ms: first_ms_section(r, &cols),
    }
}

/// The sentence before the tables: what was run, with which budget.
fn intro(r: &BenchResults) -> String {
    let s = &r.settings;
    let strategies = &s.strategies;
    let mut intro = format!(
        "wasmrace bench: {} test{} ({} with a bug), {} strateg{}, {} executions per run, \
         {} seed{} (base seed {}), at most {} steps per execution",
        r.rows.len(),
        if r.rows.len() == 1 { "" } else { "s" },
        r.tests_with_bug,
        strategies.len(),
        if strategies.len() == 1 { "y" } else { "ies" },
        s.executions,
        s.seeds,
        if s.seeds == 1 { "" } else { "s" },
        s.base_seed,
        s.max_steps
    );
    if let Some(t) = s.cell_time_budget_secs {
        let _ = write!(
            intro,
            ", time budget {t} s per run (results depend on the machine)"
        );
    }
    intro.push('.');
    if let Some(p) = &r.partition {
        let _ = write!(
            intro,
            "\nPartition {}/{} of the run: {} of its {} cells, so rows and totals are partial; \
             add the partitions' --format json up with `wasmrace merge`.",
            p.k,
            p.n,
            r.cells.len(),
            p.cells_planned
        );
    }
    intro
}

/// The leading columns every table shares (test, family when the suite
/// has them, bug), then one column per strategy.
struct Columns<'a> {
    labels: Vec<String>,
    families: bool,
    strategies: &'a [String],
    /// The leading columns' headings.
    head: Vec<String>,
    /// A separator before the first test without a bug, if any.
    breaks: Vec<usize>,
}

impl<'a> Columns<'a> {
    fn new(r: &'a BenchResults) -> Columns<'a> {
        let families = r.rows.iter().any(|row| row.info.family.is_some());
        let mut head = vec!["test".to_string()];
        if families {
            head.push("family".into());
        }
        head.push("bug".into());
        Columns {
            labels: labels(r),
            families,
            strategies: &r.settings.strategies,
            head,
            breaks: r
                .rows
                .iter()
                .position(|row| !row.has_bug)
                .into_iter()
                .collect(),
        }
    }

    /// The leading cells of row `i`.
    fn lead(&self, i: usize, row: &RowResult) -> Vec<String> {
        let mut v = vec![self.labels[i].clone()];
        if self.families {
            v.push(row.info.family.clone().unwrap_or_default());
        }
        v.push(bug_column(row).into());
        v
    }

    /// A summary row: `label` under the leading columns, then `values`.
    fn summary(&self, label: String, values: impl Iterator<Item = String>) -> Vec<String> {
        let mut v = vec![label];
        v.extend(std::iter::repeat_n(String::new(), self.head.len() - 1));
        v.extend(values);
        v
    }

    /// A table of `rows` whose header has `extra` columns between the
    /// leading ones and the strategies, with a separator before
    /// `summary_at` when given.
    fn table(&self, extra: &[String], rows: Vec<Vec<String>>, summary_at: Option<usize>) -> Table {
        let mut header = self.head.clone();
        header.extend(extra.iter().cloned());
        header.extend(self.strategies.iter().cloned());
        let mut breaks = self.breaks.clone();
        breaks.extend(summary_at);
        Table {
            header,
            left: self.head.len(),
            rows,
            breaks,
        }
    }
}

/// Hit ratios, the best of each row marked, then the per-strategy summary
/// rows (geometric mean, bugs found).
fn hit_section(
    r: &BenchResults,
    cols: &Columns,
    best_mark: &dyn Fn(&str) -> String,
    best_note: &str,
) -> (String, Table) {
    let mut rows = Vec::new();
    for (i, row) in r.rows.iter().enumerate() {
        let mut v = cols.lead(i, row);
        for c in &row.strategies {
            let text = ratio(c.hit_ratio);
            v.push(if row.best.contains(&c.strategy) {
                best_mark(&text)
            } else {
                text
            });
        }
        rows.push(v);
    }
    let summary_at = rows.len();
    rows.push(cols.summary(
        format!("geometric mean (miss = {})", ratio(r.miss_ratio)),
        r.totals.iter().map(|t| ratio(t.geomean_hit_ratio)),
    ));
    rows.push(cols.summary(
        format!("bugs found (of {})", r.tests_with_bug),
        r.totals.iter().map(|t| t.bugs_found.to_string()),
    ));
    (
        format!(
            "Hit ratio: failing executions / executions, seeds pooled; hardest test first; \
             {best_note}; - no bug found. The geometric mean is over the tests with a bug, \
             a miss counting as 1/(executions x seeds)."
        ),
        cols.table(&[], rows, Some(summary_at)),
    )
}

/// Executions to the first bug.
fn first_section(r: &BenchResults, cols: &Columns) -> (String, Table) {
    let rows = r
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut v = cols.lead(i, row);
            v.extend(row.strategies.iter().map(first_bug));
            v
        })
        .collect();
    (
        "Executions to the first bug: the mean over the runs that found it, then the \
         median where it differs, then (k/K) where only k of the K runs found it; a \
         strategy without a seed runs once."
            .to_string(),
        cols.table(&[], rows, None),
    )
}

/// Distinct partial orders, with the published trace counts when the suite
/// has them.
fn orders_section(r: &BenchResults, cols: &Columns) -> (String, Table) {
    let traces = r.rows.iter().any(|row| row.info.traces.is_some());
    let extra: Vec<String> = if traces {
        vec!["traces".into()]
    } else {
        vec![]
    };
    let rows = r
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut v = cols.lead(i, row);
            if traces {
                v.push(row.info.traces.map(|t| t.to_string()).unwrap_or_default());
            }
            v.extend(row.strategies.iter().map(orders));
            v
        })
        .collect();
    (
        format!(
            "Distinct partial orders (Mazurkiewicz traces) per run, mean over the runs; \
             `all`: the strategy exhausted its space, `bound`: exhausted within its bound{}.",
            if traces {
                "; traces: the published count for the whole program"
            } else {
                ""
            }
        ),
        cols.table(&extra, rows, None),
    )
}

/// Executions per second, then over all tests.
fn speed_section(r: &BenchResults, cols: &Columns) -> (String, Table) {
    let mut rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut v = cols.lead(i, row);
            v.extend(
                row.strategies
                    .iter()
                    .map(|c| rate(c.timing.executions_per_second)),
            );
            v
        })
        .collect();
    let summary_at = rows.len();
    rows.push(
        cols.summary(
            "all tests".to_string(),
            r.totals
                .iter()
                .map(|t| rate(t.timing.executions_per_second)),
        ),
    );
    (
        "Executions per second (one worker's view: each run's executions over its \
         own wall-clock time)."
            .to_string(),
        cols.table(&[], rows, Some(summary_at)),
    )
}

/// Milliseconds to the first bug, for the tests with a bug.
fn first_ms_section(r: &BenchResults, cols: &Columns) -> (String, Table) {
    let rows = r
        .rows
        .iter()
        .enumerate()
        .filter(|(_, row)| row.has_bug)
        .map(|(i, row)| {
            let mut v = cols.lead(i, row);
            v.extend(row.strategies.iter().map(|c| {
                mean_median(
                    c.timing.first_bug_ms_mean,
                    c.timing.first_bug_ms_median,
                    c,
                    |ms| format!("{ms:.1}"),
                )
            }));
            v
        })
        .collect();
    let mut table = cols.table(&[], rows, None);
    // The tests without a bug are left out, and the separator before them
    // with them.
    table.breaks = Vec::new();
    (
        "Milliseconds to the first bug: as for executions, mean, then median where it \
         differs."
            .to_string(),
        table,
    )
}

/// Aligned text for a terminal.
pub fn text(r: &BenchResults) -> String {
    let s = sections(r, &|t| format!("{t}*"), "* marks the best of the row");
    let mut out = format!("{}\n", s.intro);
    for (note, table) in [&s.hit, &s.first, &s.orders] {
        let _ = write!(out, "\n{note}\n\n{}", table.text());
    }
    let _ = write!(
        out,
        "\n{TIMING_HEADING} (wall clock: differs between runs)\n\n{}\n\n{}\n{}\n\n{}",
        s.speed.0,
        s.speed.1.text(),
        s.first_ms.0,
        s.first_ms.1.text()
    );
    out
}

/// Markdown: a paragraph and a table per section, `###` headings.
pub fn markdown(r: &BenchResults) -> String {
    let s = sections(r, &|t| format!("**{t}**"), "bold marks the best of the row");
    let mut out = format!("{}\n", s.intro);
    for (title, (note, table)) in [
        ("Hit ratio", &s.hit),
        ("Executions to the first bug", &s.first),
        ("Partial orders", &s.orders),
    ] {
        let _ = write!(out, "\n### {title}\n\n{note}\n\n{}", table.markdown());
    }
    let _ = write!(
        out,
        "\n### {TIMING_HEADING}\n\nWall clock: differs between runs. {}\n\n{}\n{}\n\n{}",
        s.speed.0,
        s.speed.1.markdown(),
        s.first_ms.0,
        s.first_ms.1.markdown()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(ratio(0.0), "-");
        assert_eq!(ratio(1.0), "1.00");
        assert_eq!(ratio(0.5), "0.500");
        assert_eq!(ratio(1.0 / 48.0), "0.0208");
        assert_eq!(ratio(0.00123), "0.00123");
        assert_eq!(ratio(0.000123), "1.23e-4");
        assert_eq!(number(2.0), "2");
        assert_eq!(number(7.0 / 3.0), "2.3");
    }

    #[test]
    fn text_tables_align_and_markdown_escapes() {
        let t = Table {
            header: vec!["test".into(), "dfs".into()],
            left: 1,
            rows: vec![
                vec!["a".into(), "0.5".into()],
                vec!["long name".into(), "1".into()],
            ],
            breaks: vec![1],
        };
        assert_eq!(
            t.text(),
            "test       dfs\n--------------\na          0.5\n--------------\nlong name    1\n"
        );
        let t = Table {
            header: vec!["a|b".into()],
            left: 1,
            rows: vec![],
            breaks: vec![],
        };
        assert_eq!(t.markdown(), "| a\\|b |\n|---|\n");
    }
}
