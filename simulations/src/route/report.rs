//! `memsim route`'s outputs: the sweep as CSV, a markdown summary with the best trade-off, and
//! the plot of requests avoided against memento recall with the published results marked.

use super::sim::RunResult;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// The target: at least this share of archive requests avoided…
pub const TARGET_AVOIDED: f64 = 0.70;
/// …at a memento recall of at least this.
pub const TARGET_RECALL: f64 = 0.99;

/// The CSV's header, one row per setting.
pub const CSV_HEADER: &str = "mode,min_share,explore,min_evidence,misses,requests,requests_all,\
requests_per_miss,avoided,memento_recall,uri_recall,explored,median_latency_ms,median_latency_all_ms";

pub fn write_csv<W: Write>(rows: &[RunResult], mut out: W) -> std::io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        let opt = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
        writeln!(
            out,
            "{},{},{},{},{},{},{},{:.4},{:.6},{:.6},{:.6},{},{},{}",
            r.mode,
            r.min_share,
            r.explore,
            r.min_evidence,
            r.misses,
            r.requests,
            r.requests_all,
            r.requests_per_miss,
            r.avoided,
            r.memento_recall,
            r.uri_recall,
            r.explored,
            opt(r.median_latency_ms),
            opt(r.median_latency_all_ms)
        )?;
    }
    out.flush()
}

/// The learned setting that avoids the most requests at memento recall ≥ [`TARGET_RECALL`];
/// None when no setting reaches that recall.
pub fn best(rows: &[RunResult]) -> Option<&RunResult> {
    rows.iter()
        .filter(|r| r.mode == "learned" && r.memento_recall >= TARGET_RECALL)
        .max_by(|a, b| a.avoided.total_cmp(&b.avoided))
}

/// `id n (share of the mementos missed)` for each archive that missed any.
fn missed(archives: &[String], r: &RunResult) -> String {
    let total: u64 = r.missed_by_archive.iter().sum();
    let parts: Vec<String> = archives
        .iter()
        .zip(&r.missed_by_archive)
        .filter(|(_, &n)| n > 0)
        .map(|(id, &n)| format!("{id} {n} ({:.0}%)", 100.0 * n as f64 / total as f64))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// The share of the median miss latency a setting cuts against `all`.
pub fn latency_cut(r: &RunResult) -> Option<f64> {
    let (mine, all) = (r.median_latency_ms?, r.median_latency_all_ms?);
    (all > 0).then(|| 1.0 - f64::from(mine) / f64::from(all))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn ms(v: Option<u32>) -> String {
    v.map_or("—".to_string(), |v| format!("{v} ms"))
}

/// One line for a setting, for the terminal and the summary's table.
pub fn table_row(r: &RunResult) -> String {
    format!(
        "| {} | {} | {} | {} | {:.2} | {} | {:.4} | {:.4} | {} | {} |",
        r.mode,
        r.min_share,
        r.explore,
        r.min_evidence,
        r.requests_per_miss,
        pct(r.avoided),
        r.memento_recall,
        r.uri_recall,
        ms(r.median_latency_ms),
        latency_cut(r).map_or("—".to_string(), pct),
    )
}

pub const TABLE_HEAD: &str = "| mode | min_share | explore | min_evidence | requests/miss | avoided | memento recall | URI-R recall | median miss wait | wait cut |\n|---|---|---|---|---|---|---|---|---|---|";

/// The summary: what was replayed, the best trade-off against the target, every setting.
pub fn summary(source: &str, archives: &[String], intro: &[String], rows: &[RunResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Routing: archive requests avoided against recall\n");
    let _ = writeln!(s, "Source: {source}.\n");
    for line in intro {
        let _ = writeln!(s, "{line}");
    }
    if !intro.is_empty() {
        s.push('\n');
    }
    if let Some(all) = rows.iter().find(|r| r.mode == "all") {
        let _ = writeln!(
            s,
            "`all`: {} misses, {} archive requests ({:.2} a miss), {} mementos, median miss wait {}.\n",
            all.misses,
            all.requests,
            all.requests_per_miss,
            all.mementos_all,
            ms(all.median_latency_ms)
        );
    }
    let _ = writeln!(
        s,
        "Target: at least {} of archive requests avoided at memento recall ≥ {}.\n",
        pct(TARGET_AVOIDED),
        TARGET_RECALL
    );
    match best(rows) {
        Some(b) => {
            let met = b.avoided >= TARGET_AVOIDED;
            let _ = writeln!(
                s,
                "Best at recall ≥ {TARGET_RECALL}: min_share {}, explore {}, min_evidence {}: {} \
                 fewer archive requests ({:.2} a miss), memento recall {:.4}, URI-R recall {:.4}, \
                 median miss wait {} (cut {}). Target {}.\n",
                b.min_share,
                b.explore,
                b.min_evidence,
                pct(b.avoided),
                b.requests_per_miss,
                b.memento_recall,
                b.uri_recall,
                ms(b.median_latency_ms),
                latency_cut(b).map_or("—".to_string(), pct),
                if met { "met" } else { "NOT met" }
            );
            let _ = writeln!(
                s,
                "Mementos it missed, by archive: {}.\n",
                missed(archives, b)
            );
        }
        None => {
            let _ = writeln!(s, "No learned setting reaches recall {TARGET_RECALL}.\n");
        }
    }
    let _ = writeln!(s, "{TABLE_HEAD}");
    for r in rows {
        let _ = writeln!(s, "{}", table_row(r));
    }
    s
}

/// The server's `[routing]` defaults (min_share, explore, min_evidence), marked on the plot.
pub const DEFAULTS: (f64, f64, u32) = (0.01, 0.07, 20);

/// A published result to mark on the plot: (memento recall, requests avoided, label).
pub const PUBLISHED: &[(f64, f64, &str)] = &[
    (
        0.847,
        0.77,
        "Bornand et al. JCDL 2016: 77% fewer requests at recall 0.847 (their recall: archives holding the URI found; real data)",
    ),
    (
        1.0,
        0.60,
        "Alam et al. 2019 MementoMap: 60% of one archive's lookups avoided at 100% recall (one archive, not a fan-out)",
    ),
];

/// Requests avoided against memento recall (filled) and URI-R recall (rings) per setting,
/// `all` at (1, 0), the published results as crosses, the target region's corner marked.
/// `zoom`: the recall axis spans only the settings' recalls (a published point left of it is
/// named in its label but not drawn).
pub fn plot(path: &Path, source: &str, rows: &[RunResult], zoom: bool) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let published = PUBLISHED.iter().map(|p| p.0).filter(|_| !zoom);
    let lowest = rows
        .iter()
        .map(|r| r.memento_recall.min(r.uri_recall))
        .chain(published)
        .fold(1.0f64, f64::min);
    let x0 = if zoom {
        ((lowest - 0.002) * 200.0).floor() / 200.0
    } else {
        ((lowest - 0.02) * 50.0).floor() / 50.0
    };
    let y0 = if zoom {
        let low = rows
            .iter()
            .filter(|r| r.mode == "learned")
            .map(|r| r.avoided)
            .fold(1.0f64, f64::min);
        // Room below the points for the legend.
        ((low - 0.2) * 10.0).floor().max(0.0) / 10.0
    } else {
        0.0
    };
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Archive requests avoided against recall — {source}"),
            ("sans-serif", 17),
        )
        .margin(14)
        .x_label_area_size(42)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..1.005f64, y0..1.0f64)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("recall (memento: filled; URI-R: ring)")
        .y_desc("archive requests avoided (share vs all)")
        .draw()
        .map_err(|x| e(&x))?;
    let blue = RGBColor(31, 119, 180);
    let green = RGBColor(44, 160, 44);
    let red = RGBColor(214, 39, 40);
    // The target: at least 70% avoided at recall ≥ 0.99 (the upper right corner).
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(TARGET_RECALL, TARGET_AVOIDED), (1.005, 1.0)],
            RGBColor(255, 200, 0).mix(0.25).filled(),
        )))
        .map_err(|x| e(&x))?
        .label("target: ≥ 70% avoided at memento recall ≥ 0.99")
        .legend(|(x, y)| {
            Rectangle::new(
                [(x, y - 5), (x + 20, y + 5)],
                RGBColor(255, 200, 0).mix(0.5).filled(),
            )
        });
    let learned: Vec<&RunResult> = rows.iter().filter(|r| r.mode == "learned").collect();
    chart
        .draw_series(
            learned
                .iter()
                .map(|r| Circle::new((r.memento_recall, r.avoided), 4, blue.filled())),
        )
        .map_err(|x| e(&x))?
        .label("learned, memento recall (one point per min_share × explore × min_evidence)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, blue.filled()));
    chart
        .draw_series(
            learned
                .iter()
                .map(|r| Circle::new((r.uri_recall, r.avoided), 4, green.stroke_width(1))),
        )
        .map_err(|x| e(&x))?
        .label("learned, URI-R recall")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, green.stroke_width(1)));
    chart
        .draw_series(
            rows.iter()
                .filter(|r| r.mode == "all" && r.avoided >= y0)
                .map(|r| Circle::new((r.memento_recall, r.avoided), 6, BLACK.filled())),
        )
        .map_err(|x| e(&x))?
        .label("all (every archive on every miss)")
        .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.filled()));
    let defaults = learned.iter().filter(|r| {
        (r.min_share, r.explore, r.min_evidence) == (DEFAULTS.0, DEFAULTS.1, DEFAULTS.2)
    });
    chart
        .draw_series(
            defaults.map(|r| {
                TriangleMarker::new((r.memento_recall, r.avoided), 8, BLACK.stroke_width(2))
            }),
        )
        .map_err(|x| e(&x))?
        .label(format!(
            "[routing] defaults: min_share {}, explore {}, min_evidence {}",
            DEFAULTS.0, DEFAULTS.1, DEFAULTS.2
        ))
        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, BLACK.stroke_width(2)));
    if let Some(b) = best(rows) {
        chart
            .draw_series(std::iter::once(Circle::new(
                (b.memento_recall, b.avoided),
                9,
                BLACK.stroke_width(2),
            )))
            .map_err(|x| e(&x))?
            .label(format!(
                "best at memento recall ≥ {TARGET_RECALL}: min_share {}, explore {}, min_evidence {} ({} avoided, recall {:.4})",
                b.min_share, b.explore, b.min_evidence, pct(b.avoided), b.memento_recall
            ))
            .legend(|(x, y)| Circle::new((x + 10, y), 7, BLACK.stroke_width(2)));
    }
    chart
        .draw_series(
            PUBLISHED
                .iter()
                .filter(|p| p.0 >= x0 && p.1 >= y0)
                .map(|p| Cross::new((p.0, p.1), 7, red.stroke_width(2))),
        )
        .map_err(|x| e(&x))?
        .label("published (not the same measure or data: see labels)")
        .legend(move |(x, y)| Cross::new((x + 10, y), 6, red.stroke_width(2)));
    for (i, p) in PUBLISHED.iter().enumerate() {
        let (who, rest) = p.2.split_once(':').unwrap_or((p.2, ""));
        let caveat = rest
            .split_once('(')
            .map_or("", |(_, c)| c.trim_end_matches(')'));
        let anchor = (
            x0 + 0.01 * (1.005 - x0),
            if zoom {
                1.0 - (1.0 - y0) * (0.03 + 0.04 * i as f64)
            } else {
                0.42 - 0.05 * i as f64
            },
        );
        chart
            .draw_series(std::iter::once(Text::new(
                format!("× {who}: recall {}, {} avoided ({caveat})", p.0, pct(p.1)),
                anchor,
                ("sans-serif", 13).into_font().color(&red),
            )))
            .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}
