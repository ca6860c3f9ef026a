//! The SVG chart of `wasmrace bench --chart`: a grouped horizontal bar chart
//! of hit ratios, one group per test with a bug (hardest first, as in the
//! table), one bar per strategy, on a log scale; a miss is a cross at the
//! left edge, the best bar of a group is outlined. Hand-written SVG: it is a
//! few rectangles and labels, and a plotting dependency would outweigh it.

use std::fmt::Write;
use wasmrace_host::bench::{BenchResults, RowResult};

/// Distinguishable colours (Tableau 10, then near-black and light blue), by
/// strategy column.
const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#222222", "#a0cbe8",
];

const WIDTH: f64 = 980.0;
const LABEL_WIDTH: f64 = 250.0;
const RIGHT: f64 = 40.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Rough text width at `size` px in a sans-serif font, for layout.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

/// `1`, `0.1`, `0.01`, then `10⁻³`, ...
fn decade_label(exp: i32) -> String {
    match exp {
        0 => "1".into(),
        -1 => "0.1".into(),
        -2 => "0.01".into(),
        e => {
            let sup: String = e
                .to_string()
                .chars()
                .map(|c| match c {
                    '-' => '⁻',
                    d => ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹']
                        [d as usize - '0' as usize],
                })
                .collect();
            format!("10{sup}")
        }
    }
}

/// The chart of `r`'s tests with a bug, as an SVG document.
pub fn svg(r: &BenchResults) -> String {
    let rows: Vec<&RowResult> = r.rows.iter().filter(|row| row.has_bug).collect();
    let layout = Layout::new(r);
    let mut body = String::new();
    let y = header(&mut body, r, r.rows.len() - rows.len());
    let top = legend(&mut body, r, y);
    let plot = Plot {
        top,
        bottom: top + rows.len().max(1) as f64 * layout.group_h,
    };
    grid(&mut body, r, &layout, &plot, rows.len());
    for (gi, row) in rows.iter().enumerate() {
        group(
            &mut body,
            &layout,
            plot.top + gi as f64 * layout.group_h,
            row,
        );
    }
    if rows.is_empty() {
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" class="axis">no test with a bug</text>"#,
            (layout.x0 + layout.x1) / 2.0,
            plot.top + layout.group_h / 2.0
        );
    }
    let (x0, top, bottom) = (layout.x0, plot.top, plot.bottom);
    let _ = writeln!(
        body,
        r##"<line x1="{x0:.1}" y1="{top:.1}" x2="{x0:.1}" y2="{bottom:.1}" stroke="#333" stroke-width="1"/>"##
    );
    document(&body, plot.bottom + 70.0)
}

/// Sizes and the log scale, from the number of strategies and the
/// smallest ratio shown.
struct Layout {
    /// Strategies, at least 1: bars per group.
    n: usize,
    bar_h: f64,
    bar_step: f64,
    group_pad: f64,
    group_h: f64,
    /// The plot's left (hit ratio 1 / miss decade) and right (1) edges.
    x0: f64,
    x1: f64,
    /// The lowest decade on the axis (negative).
    lo: i32,
}

impl Layout {
    fn new(r: &BenchResults) -> Layout {
        let n = r.settings.strategies.len().max(1);
        let bar_h = match n {
            0..=4 => 10.0,
            5..=8 => 7.0,
            _ => 6.0,
        };
        let bar_step = bar_h + 1.5;
        let group_pad = 16.0;
        Layout {
            n,
            bar_h,
            bar_step,
            group_pad,
            group_h: n as f64 * bar_step + group_pad,
            x0: LABEL_WIDTH,
            x1: WIDTH - RIGHT,
            lo: r.miss_ratio.log10().floor().min(-1.0) as i32,
        }
    }

    /// The x coordinate of hit ratio `h`.
    fn x(&self, h: f64) -> f64 {
        let lo = f64::from(self.lo);
        self.x0 + (h.log10() - lo) / -lo * (self.x1 - self.x0)
    }
}

/// The vertical extent of the plot.
struct Plot {
    top: f64,
    bottom: f64,
}

/// Title, subtitle and how to read the chart; returns the y below them.
fn header(body: &mut String, r: &BenchResults, left_out: usize) -> f64 {
    let mut y = 30.0;
    let _ = writeln!(
        body,
        r#"<text x="20" y="{y}" class="title">Hit ratio per test and strategy</text>"#
    );
    y += 22.0;
    let s = &r.settings;
    let subtitle = format!(
        "failing executions / executions, {} executions x {} seed{} per test and strategy \
         (seeds pooled); log scale; hardest test first",
        s.executions,
        s.seeds,
        if s.seeds == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        body,
        r#"<text x="20" y="{y}" class="sub">{}</text>"#,
        esc(&subtitle)
    );
    y += 18.0;
    let mut how = "x at the left edge: bug not found; outlined bar: best of the test".to_string();
    if left_out > 0 {
        let _ = write!(
            how,
            "; {left_out} test{} without a bug left out",
            if left_out == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(
        body,
        r#"<text x="20" y="{y}" class="sub">{}</text>"#,
        esc(&how)
    );
    y + 24.0
}

/// The legend at `y`, in a grid of equal columns; each entry with the
/// strategy's geometric mean and bugs found, so the chart stands without
/// the table. Returns the top of the plot below it.
fn legend(body: &mut String, r: &BenchResults, mut y: f64) -> f64 {
    let labels: Vec<String> = r
        .settings
        .strategies
        .iter()
        .enumerate()
        .map(|(i, name)| match r.totals.get(i) {
            Some(t) => format!(
                "{name}: geo. mean {}, {} of {} bugs",
                crate::bench_report::ratio(t.geomean_hit_ratio),
                t.bugs_found,
                r.tests_with_bug
            ),
            None => name.clone(),
        })
        .collect();
    let col_w = labels
        .iter()
        .map(|l| 18.0 + text_width(l, 12.0) + 24.0)
        .fold(0.0, f64::max);
    let cols = (((WIDTH - 40.0) / col_w).floor() as usize).max(1);
    for (i, label) in labels.iter().enumerate() {
        let lx = 20.0 + (i % cols) as f64 * col_w;
        let ly = y + (i / cols) as f64 * 20.0;
        let _ = writeln!(
            body,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{ly:.1}" class="legend">{}</text>"#,
            ly - 10.0,
            PALETTE[i % PALETTE.len()],
            lx + 18.0,
            esc(label)
        );
    }
    y += labels.len().div_ceil(cols).saturating_sub(1) as f64 * 20.0;
    y + 34.0
}

/// The background of every other group, the decade grid lines with labels
/// above and below the plot, the miss ratio's line and the axis title.
fn grid(body: &mut String, r: &BenchResults, layout: &Layout, plot: &Plot, groups: usize) {
    let (top, bottom, group_h) = (plot.top, plot.bottom, layout.group_h);
    for i in (0..groups).step_by(2) {
        let _ = writeln!(
            body,
            r##"<rect x="8" y="{:.1}" width="{:.1}" height="{group_h:.1}" fill="#f4f5f7"/>"##,
            top + i as f64 * group_h,
            WIDTH - 16.0
        );
    }
    for e in layout.lo..=0 {
        let gx = layout.x(10f64.powi(e));
        let _ = writeln!(
            body,
            r##"<line x1="{gx:.1}" y1="{top:.1}" x2="{gx:.1}" y2="{bottom:.1}" stroke="#c8ccd2" stroke-width="1"/>"##
        );
        for ty in [top - 8.0, bottom + 18.0] {
            let _ = writeln!(
                body,
                r#"<text x="{gx:.1}" y="{ty:.1}" class="tick">{}</text>"#,
                decade_label(e)
            );
        }
    }
    // The miss ratio: one failing execution in a whole row cell's budget.
    let mx = layout.x(r.miss_ratio);
    let _ = writeln!(
        body,
        r##"<line x1="{mx:.1}" y1="{top:.1}" x2="{mx:.1}" y2="{bottom:.1}" stroke="#8a8f98" stroke-width="1" stroke-dasharray="3,3"/>"##
    );
    let _ = writeln!(
        body,
        r#"<text x="{mx:.1}" y="{:.1}" class="note">1 hit in {}</text>"#,
        bottom + 34.0,
        r.settings.executions * u64::from(r.settings.seeds)
    );
    let _ = writeln!(
        body,
        r#"<text x="{:.1}" y="{:.1}" class="axis">hit ratio (log scale)</text>"#,
        (layout.x0 + layout.x1) / 2.0,
        bottom + 52.0
    );
}

/// One test's group, whose band starts at `top`: its name, its best
/// strategies, and a bar (or a miss's cross) per strategy.
fn group(body: &mut String, layout: &Layout, top: f64, row: &RowResult) {
    let gy = top + layout.group_pad / 2.0;
    let mid = gy + layout.n as f64 * layout.bar_step / 2.0;
    let _ = writeln!(
        body,
        r#"<text x="{:.1}" y="{:.1}" class="label">{}</text>"#,
        layout.x0 - 10.0,
        mid - 1.0,
        esc(&row.info.test)
    );
    let best = if row.best.is_empty() {
        "no strategy found it".to_string()
    } else {
        format!(
            "best: {} ({})",
            row.best.join(", "),
            crate::bench_report::ratio(row.best_hit_ratio)
        )
    };
    let _ = writeln!(
        body,
        r#"<text x="{:.1}" y="{:.1}" class="small">{}</text>"#,
        layout.x0 - 10.0,
        mid + 11.0,
        esc(&best)
    );
    for (si, c) in row.strategies.iter().enumerate() {
        let by = gy + si as f64 * layout.bar_step;
        let color = PALETTE[si % PALETTE.len()];
        let tip = format!(
            "{} on {}: {} ({} of {} executions)",
            c.strategy,
            row.info.test,
            crate::bench_report::ratio(c.hit_ratio),
            c.failing_executions,
            c.executions
        );
        if c.hit_ratio > 0.0 {
            let best = row.best.contains(&c.strategy);
            bar(body, layout, by, c.hit_ratio, color, best, &tip);
        } else {
            cross(body, layout, by, color, &tip);
        }
    }
}

/// A strategy's bar at `by`, outlined when it is the best of its group.
fn bar(body: &mut String, layout: &Layout, by: f64, hit: f64, color: &str, best: bool, tip: &str) {
    let (x0, bar_h) = (layout.x0, layout.bar_h);
    let w = (layout.x(hit) - x0).max(1.5);
    let outline = if best {
        r##" stroke="#111" stroke-width="1.2""##
    } else {
        ""
    };
    let _ = writeln!(
        body,
        r#"<rect x="{x0:.1}" y="{by:.1}" width="{w:.1}" height="{bar_h:.1}" fill="{color}"{outline}><title>{}</title></rect>"#,
        esc(tip)
    );
}

/// A miss: a cross at the left edge, at `by`.
fn cross(body: &mut String, layout: &Layout, by: f64, color: &str, tip: &str) {
    let (cx, cy, d) = (layout.x0 + 5.0, by + layout.bar_h / 2.0, layout.bar_h / 2.0);
    let _ = writeln!(
        body,
        r#"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="{color}" stroke-width="1.6"><title>{}</title></path>"#,
        cx - d,
        cy - d,
        cx + d,
        cy + d,
        cx - d,
        cy + d,
        cx + d,
        cy - d,
        esc(tip)
    );
}

/// The SVG document around `body`, `height` tall, with the styles.
fn document(body: &str, height: f64) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="Helvetica, Arial, sans-serif">
<style>
.title {{ font-size: 20px; font-weight: bold; fill: #111; }}
.sub {{ font-size: 12px; fill: #555; }}
.legend {{ font-size: 12px; fill: #222; }}
.tick {{ font-size: 11px; fill: #444; text-anchor: middle; }}
.axis {{ font-size: 13px; fill: #222; text-anchor: middle; }}
.note {{ font-size: 10px; fill: #666; text-anchor: middle; }}
.label {{ font-size: 13px; fill: #111; text-anchor: end; }}
.small {{ font-size: 10px; fill: #666; text-anchor: end; }}
</style>
<rect width="100%" height="100%" fill="#fff"/>
{body}</svg>
"##
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_read_naturally() {
        assert_eq!(decade_label(0), "1");
        assert_eq!(decade_label(-2), "0.01");
        assert_eq!(decade_label(-3), "10⁻³");
        assert_eq!(decade_label(-12), "10⁻¹²");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
