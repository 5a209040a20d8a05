//! The sweep's plots, as SVG (plotters, no font library: SVG text is laid out by the viewer):
//! MemDays and Q against TTL for each policy, the paper's Figure 12 (a) unconditional and
//! (b) conditional as normalised curves with their crossing (the optimum TTL, the same rule as
//! `summary.md`), and MemDays against Q for every policy and TTL with the Pareto front marked.
//!
//! The data preparation (curves, normalisation, the front) is pure and tested; drawing is the
//! thin edge.

use crate::adaptive::{AdaptiveRow, PAPER_TTL};
use crate::sweep::{optimum_of, Row, SeriesInfo, Source, POLICIES};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use tmproxy_core::policy::PolicyKind;

/// One policy's curve: (x, MemDays, Q) for TTL 0..D-1 at x = TTL, then ∞ at x = D.
pub fn curve(rows: &[Row], kind: PolicyKind, days: u32) -> Vec<(u32, u64, u64)> {
    let mut out: Vec<(u32, u64, u64)> = rows
        .iter()
        .filter(|r| r.kind == kind)
        .map(|r| {
            let x = r.ttl.map_or(days, |t| t.clamp(0, i64::from(days)) as u32);
            (x, r.measures.memdays, r.measures.q)
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

/// Each value divided by the curve's maximum (0 when all are 0).
pub fn normalised(values: &[u64]) -> Vec<f64> {
    let max = values.iter().copied().max().unwrap_or(0);
    values
        .iter()
        .map(|&v| if max == 0 { 0.0 } else { v as f64 / max as f64 })
        .collect()
}

/// The Pareto front of (Q, MemDays) points, both to be minimised: the indices of the points no
/// other point dominates (≤ in both, < in one). Duplicates of a front point are all on it.
pub fn pareto_front(points: &[(u64, u64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (q, m) = points[i];
            !points
                .iter()
                .any(|&(q2, m2)| q2 <= q && m2 <= m && (q2 < q || m2 < m))
        })
        .collect()
}

fn title_suffix(info: &SeriesInfo) -> String {
    match &info.source {
        Source::Preset { name, seed } => format!(" — SYNTHETIC preset {name}, seed {seed}"),
        Source::File(f) => format!(" — {f}"),
    }
}

fn policy_color(kind: PolicyKind) -> RGBColor {
    match kind {
        PolicyKind::None => RGBColor(120, 120, 120),
        PolicyKind::Forever => RGBColor(140, 86, 75),
        PolicyKind::Unconditional => RGBColor(214, 39, 40),
        PolicyKind::Conditional => RGBColor(31, 119, 180),
        PolicyKind::Merge => RGBColor(44, 160, 44),
    }
}

type PlotResult<T> = Result<T, String>;

fn err<E: std::fmt::Display>(what: &Path) -> impl Fn(E) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

/// Writes every plot into `dir`; returns the files written.
pub fn write_plots(dir: &Path, info: &SeriesInfo, rows: &[Row]) -> PlotResult<Vec<PathBuf>> {
    let mut files = Vec::new();
    for kind in POLICIES {
        let path = dir.join(format!("ttl_{kind}.svg"));
        ttl_plot(&path, info, rows, kind)?;
        files.push(path);
    }
    for (name, kind, label) in [
        ("fig12a.svg", PolicyKind::Unconditional, "(a)"),
        ("fig12b.svg", PolicyKind::Conditional, "(b)"),
    ] {
        let path = dir.join(name);
        fig12(&path, info, rows, kind, label)?;
        files.push(path);
    }
    let path = dir.join("pareto.svg");
    pareto_plot(&path, info, rows)?;
    files.push(path);
    Ok(files)
}

/// TTL `days` is the infinite one; the axis runs a step past it, where no point stands, so that
/// step has no label (two "inf" ticks read as two points).
fn x_label(days: u32) -> impl Fn(&u32) -> String {
    move |x| match x.cmp(&days) {
        std::cmp::Ordering::Less => x.to_string(),
        std::cmp::Ordering::Equal => "inf".to_string(),
        std::cmp::Ordering::Greater => String::new(),
    }
}

/// MemDays (left axis) and Q (right axis) against TTL for one policy.
fn ttl_plot(path: &Path, info: &SeriesInfo, rows: &[Row], kind: PolicyKind) -> PlotResult<()> {
    let days = info.days;
    let c = curve(rows, kind, days);
    let max_m = c.iter().map(|p| p.1).max().unwrap_or(0).max(1);
    let max_q = c.iter().map(|p| p.2).max().unwrap_or(0).max(1);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{kind}: MemDays and Q against TTL{}", title_suffix(info)),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .right_y_label_area_size(80)
        .build_cartesian_2d(0u32..days + 1, 0u64..max_m + max_m / 20)
        .map_err(err(path))?
        .set_secondary_coord(0u32..days + 1, 0u64..max_q + max_q / 20);
    chart
        .configure_mesh()
        .x_desc("TTL (days; the last point is inf)")
        .y_desc("MemDays")
        .x_label_formatter(&x_label(days))
        .draw()
        .map_err(err(path))?;
    chart
        .configure_secondary_axes()
        .y_desc("Q (fetches)")
        .draw()
        .map_err(err(path))?;
    let blue = policy_color(PolicyKind::Conditional);
    let red = policy_color(PolicyKind::Unconditional);
    chart
        .draw_series(LineSeries::new(
            c.iter().map(|p| (p.0, p.1)),
            blue.stroke_width(2),
        ))
        .map_err(err(path))?
        .label("MemDays")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
    chart
        .draw_secondary_series(LineSeries::new(
            c.iter().map(|p| (p.0, p.2)),
            red.stroke_width(2),
        ))
        .map_err(err(path))?
        .label("Q")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err(path))?;
    root.present().map_err(err(path))
}

/// The paper's Figure 12: normalised MemDays and Q against TTL, the crossing marked.
fn fig12(
    path: &Path,
    info: &SeriesInfo,
    rows: &[Row],
    kind: PolicyKind,
    label: &str,
) -> PlotResult<()> {
    let days = info.days;
    let c = curve(rows, kind, days);
    let m = normalised(&c.iter().map(|p| p.1).collect::<Vec<_>>());
    let q = normalised(&c.iter().map(|p| p.2).collect::<Vec<_>>());
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Figure 12 {label}: {kind}, normalised{}",
                title_suffix(info)
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..days + 1, 0f64..1.05)
        .map_err(err(path))?;
    chart
        .configure_mesh()
        .x_desc("TTL (days; the last point is inf)")
        .y_desc("value / max")
        .x_label_formatter(&x_label(days))
        .draw()
        .map_err(err(path))?;
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(
            c.iter().zip(&m).map(|(p, v)| (p.0, *v)),
            blue.stroke_width(2),
        ))
        .map_err(err(path))?
        .label("MemDays (normalised)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
    chart
        .draw_series(LineSeries::new(
            c.iter().zip(&q).map(|(p, v)| (p.0, *v)),
            red.stroke_width(2),
        ))
        .map_err(err(path))?
        .label("Q (normalised)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red));
    if let Some(opt) = optimum_of(rows, kind) {
        let x = opt.clamp(0, i64::from(days)) as u32;
        let y = c
            .iter()
            .position(|p| p.0 == x)
            .map_or(0.0, |i| m[i].max(q[i]));
        chart
            .draw_series(std::iter::once(Circle::new((x, y), 6, BLACK.filled())))
            .map_err(err(path))?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("optimum TTL {opt}"),
                (x, (y + 0.08).min(1.0)),
                ("sans-serif", 16),
            )))
            .map_err(err(path))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err(path))?;
    root.present().map_err(err(path))
}

/// MemDays against Q for every policy and TTL; the Pareto front ringed and joined.
fn pareto_plot(path: &Path, info: &SeriesInfo, rows: &[Row]) -> PlotResult<()> {
    let points: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r.measures.q, r.measures.memdays))
        .collect();
    let front = pareto_front(&points);
    let max_q = points.iter().map(|p| p.0).max().unwrap_or(0).max(1);
    let max_m = points.iter().map(|p| p.1).max().unwrap_or(0).max(1);
    let root = SVGBackend::new(path, (900, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "MemDays against Q, every policy and TTL{}",
                title_suffix(info)
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0u64..max_q + max_q / 20, 0u64..max_m + max_m / 20)
        .map_err(err(path))?;
    chart
        .configure_mesh()
        .x_desc("Q (fetches)")
        .y_desc("MemDays")
        .draw()
        .map_err(err(path))?;
    for kind in POLICIES {
        let color = policy_color(kind);
        let pts: Vec<(u64, u64)> = rows
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| (r.measures.q, r.measures.memdays))
            .collect();
        // Conditional and merge nearly coincide: conditional is drawn hollow and larger, so
        // both stay visible.
        let hollow = kind == PolicyKind::Conditional;
        let style = move || {
            if hollow {
                ShapeStyle::from(color).stroke_width(1)
            } else {
                color.filled()
            }
        };
        let size = if hollow { 5 } else { 3 };
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, size, style())))
            .map_err(err(path))?
            .label(kind.as_str())
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, style()));
    }
    let mut on_front: Vec<(u64, u64)> = front.iter().map(|&i| points[i]).collect();
    on_front.sort_unstable();
    chart
        .draw_series(LineSeries::new(
            on_front.iter().copied(),
            BLACK.stroke_width(1),
        ))
        .map_err(err(path))?
        .label("Pareto front")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    chart
        .draw_series(
            on_front
                .iter()
                .map(|&p| Circle::new(p, 6, BLACK.stroke_width(2))),
        )
        .map_err(err(path))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err(path))?;
    root.present().map_err(err(path))
}

/// `adaptive.svg`: MemDays against Q, the fixed-TTL curves of Figure 12 (unconditional and
/// conditional, a point per TTL, a few labelled) and each adaptive setting beside them, with the
/// paper's recommended point (conditional, TTL 15) and the region the goal asks for (Q no higher,
/// MemDays at most half) marked.
pub fn write_adaptive_plot(
    dir: &Path,
    info: &SeriesInfo,
    rows: &[Row],
    adaptive: &[AdaptiveRow],
) -> PlotResult<PathBuf> {
    let path = dir.join("adaptive.svg");
    let path = path.as_path();
    let days = info.days;
    let paper = rows
        .iter()
        .find(|r| r.kind == PolicyKind::Conditional && r.ttl == Some(PAPER_TTL))
        .map(|r| (r.measures.q, r.measures.memdays));
    // The axes span the paper's point's neighbourhood (up to 4× its Q and MemDays), where the
    // adaptive settings compete; the TTL-0 and ∞ ends of the curves run off the plot.
    let (pq, pm) = paper.unwrap_or((1, 1));
    let max_q = adaptive
        .iter()
        .map(|r| r.measures.q)
        .chain([pq])
        .max()
        .unwrap_or(1)
        .min(4 * pq)
        .max(1);
    let max_m = adaptive
        .iter()
        .map(|r| r.measures.memdays)
        .chain([pm])
        .max()
        .unwrap_or(1)
        .min(4 * pm)
        .max(1);
    let x_range = 0u64..max_q + max_q / 10;
    let y_range = 0u64..max_m + max_m / 10;
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "MemDays against Q: fixed TTLs and adaptive TTLs{}",
                title_suffix(info)
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range.clone(), y_range.clone())
        .map_err(err(path))?;
    chart
        .configure_mesh()
        .x_desc("Q (fetches)")
        .y_desc("MemDays")
        .draw()
        .map_err(err(path))?;
    let inside = |&(q, m): &(u64, u64)| x_range.contains(&q) && y_range.contains(&m);
    if let Some((q, m)) = paper {
        let goal = RGBColor(255, 221, 87);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0, 0), (q, m / 2)],
                goal.mix(0.35).filled(),
            )))
            .map_err(err(path))?
            .label("goal: Q ≤ TTL 15's, MemDays ≤ half")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], goal.filled()));
    }
    for kind in [PolicyKind::Unconditional, PolicyKind::Conditional] {
        let color = policy_color(kind);
        let c: Vec<(u32, (u64, u64))> = curve(rows, kind, days)
            .into_iter()
            .map(|(x, m, q)| (x, (q, m)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                c.iter().map(|p| p.1).filter(inside),
                color.stroke_width(1),
            ))
            .map_err(err(path))?
            .label(format!("{kind}, fixed TTL"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(
                c.iter()
                    .filter(|p| inside(&p.1))
                    .map(|p| Circle::new(p.1, 2, color.filled())),
            )
            .map_err(err(path))?;
        for (x, p) in c.iter().filter(|p| inside(&p.1)) {
            if [1, 2, 4, 8, 15, 30].contains(x) {
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("TTL {}", x_label(days)(x)),
                        *p,
                        ("sans-serif", 12).into_font().color(&color),
                    )))
                    .map_err(err(path))?;
            }
        }
    }
    let green = policy_color(PolicyKind::Merge);
    let pts: Vec<(u64, u64)> = adaptive
        .iter()
        .map(|r| (r.measures.q, r.measures.memdays))
        .filter(inside)
        .collect();
    chart
        .draw_series(
            pts.iter()
                .map(|&p| TriangleMarker::new(p, 6, green.filled())),
        )
        .map_err(err(path))?
        .label("conditional, adaptive TTL (each setting)")
        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, green.filled()));
    if let Some(p) = paper {
        chart
            .draw_series(std::iter::once(Circle::new(p, 7, BLACK.stroke_width(2))))
            .map_err(err(path))?
            .label("paper's point: conditional, TTL 15")
            .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err(path))?;
    root.present().map_err(err(path))?;
    Ok(path.to_path_buf())
}

/// Which (policy, TTL) cells are on the Pareto front, for the summary.
pub fn front_cells(rows: &[Row]) -> Vec<&Row> {
    let points: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r.measures.q, r.measures.memdays))
        .collect();
    pareto_front(&points)
        .into_iter()
        .map(|i| &rows[i])
        .collect()
}

/// The summary's section on the plots: links and who is on the Pareto front.
pub fn summary_section(dir: &Path, files: &[PathBuf], rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("\n## Plots\n\n");
    for f in files {
        let rel = f.strip_prefix(dir).unwrap_or(f).display().to_string();
        let _ = writeln!(s, "- [{rel}]({rel})");
    }
    let _ = writeln!(
        s,
        "\n![Figure 12 (b)](fig12b.svg)\n\n### The Pareto front (MemDays against Q)\n\n\
         Cells no other cell beats in both MemDays and Q, by Q:\n"
    );
    // One line per distinct point: ties (forever at every TTL, long TTLs equal to ∞) grouped.
    let mut points: std::collections::BTreeMap<(u64, u64), Vec<(PolicyKind, String)>> =
        std::collections::BTreeMap::new();
    for r in front_cells(rows) {
        let ttl = r.ttl.map_or("inf".to_string(), |t| t.to_string());
        points
            .entry((r.measures.q, r.measures.memdays))
            .or_default()
            .push((r.kind, ttl));
    }
    let _ = writeln!(s, "| Q | MemDays | cells |\n|---|---|---|");
    for ((q, m), cells) in points {
        let mut parts = Vec::new();
        for kind in POLICIES {
            let ttls: Vec<&str> = cells
                .iter()
                .filter(|c| c.0 == kind)
                .map(|c| c.1.as_str())
                .collect();
            match ttls.len() {
                0 => {}
                1..=3 => parts.push(format!("{kind} TTL {}", ttls.join(", "))),
                n => parts.push(format!("{kind} ({n} TTLs, {}…{})", ttls[0], ttls[n - 1])),
            }
        }
        let _ = writeln!(s, "| {q} | {m} | {} |", parts.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_axis_says_inf_once() {
        let label = x_label(10);
        assert_eq!(
            [label(&9), label(&10), label(&11)],
            ["9".to_string(), "inf".to_string(), String::new()]
        );
    }

    #[test]
    fn the_front_keeps_only_undominated_points() {
        // (Q, MemDays): (1, 10) and (5, 2) and (9, 0) trade off; (6, 3) is dominated by (5, 2);
        // (5, 2) twice: both on the front.
        let pts = [(1, 10), (6, 3), (5, 2), (9, 0), (5, 2), (9, 1)];
        assert_eq!(pareto_front(&pts), vec![0, 2, 3, 4]);
        assert!(pareto_front(&[]).is_empty());
    }

    #[test]
    fn normalising_divides_by_the_max_and_survives_zeros() {
        assert_eq!(normalised(&[0, 5, 10]), vec![0.0, 0.5, 1.0]);
        assert_eq!(normalised(&[0, 0]), vec![0.0, 0.0]);
    }
}
