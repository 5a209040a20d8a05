//! `report.md` of a sampling run: the funnel beside the paper's (Figure 4 / §4), the top 20
//! domains before and after downsampling (the paper's Tables 6 and 8), and the per-domain CCDF
//! (Figure 12) as a table of thresholds.

use super::downsample::DomainCounts;
use super::FunnelRow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The paper's funnel, by our stage names where one matches.
const PAPER: [(&str, &str); 12] = [
    ("read", "292 M ZipNum lines"),
    ("unique_surts", "285 M unique SURTs"),
    ("surt_to_url", "282.7 M valid (2.3 M invalid)"),
    ("session_ids", "12,996 session-id aliases"),
    ("index_files", "155,014 index-file aliases"),
    ("likely_html", "222 M likely HTML"),
    ("popular_domains", "107 M after popular domains set aside"),
    ("first_capture", "92 M text/html (86.12% of 107 M)"),
    ("root_upsampling", "+20.1 M roots (332 K not archived)"),
    ("long_tail", "applied to 2004 and 2006–2020"),
    ("downsampling", "27.3 M URLs, 7 M domains"),
    ("timemaps", "3.8 B mementos, ≈0.07 s per TimeMap"),
];

/// The report for a finished run.
pub fn report(funnel: &[FunnelRow], counts: &BTreeMap<String, DomainCounts>) -> String {
    let mut s = String::from("# Sampling report\n\n## Funnel\n\n");
    let _ = writeln!(s, "| stage | in | out | set aside | errors | paper |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in funnel {
        let paper = PAPER
            .iter()
            .find(|(n, _)| *n == r.stage)
            .map_or("", |(_, p)| p);
        let c = r.counters;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {paper} |",
            r.stage, c.input, c.output, c.set_aside, c.errors
        );
    }
    let top = |key: fn(&DomainCounts) -> u64| {
        let mut v: Vec<(&String, u64)> = counts.iter().map(|(d, c)| (d, key(c))).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(20);
        v
    };
    let _ = writeln!(
        s,
        "\n## Top 20 domains\n\n| rank | before downsampling | URLs | after | URLs |\n|---|---|---|---|---|"
    );
    let (before, after) = (top(|c| c.before), top(|c| c.after));
    for i in 0..before.len().max(after.len()) {
        let b = before
            .get(i)
            .map_or((String::new(), String::new()), |(d, n)| {
                (d.to_string(), n.to_string())
            });
        let a = after
            .get(i)
            .map_or((String::new(), String::new()), |(d, n)| {
                (d.to_string(), n.to_string())
            });
        let _ = writeln!(s, "| {} | {} | {} | {} | {} |", i + 1, b.0, b.1, a.0, a.1);
    }
    let _ = writeln!(
        s,
        "\n## Per-domain CCDF (share of domains with at least x URLs)\n\n| x | before | after |\n|---|---|---|"
    );
    let n = counts.len().max(1) as f64;
    for x in [
        1u64, 2, 5, 10, 20, 50, 100, 1_000, 10_000, 100_000, 1_000_000,
    ] {
        let b = counts.values().filter(|c| c.before >= x).count() as f64 / n;
        let a = counts.values().filter(|c| c.after >= x).count() as f64 / n;
        let _ = writeln!(s, "| {x} | {b:.4} | {a:.4} |");
    }
    s
}

/// The per-domain CCDF before and after downsampling as an SVG (log-log; drawn by hand: the
/// proxy has no plotting dependency, and this is two step lines).
pub fn ccdf_svg(counts: &BTreeMap<String, DomainCounts>) -> String {
    let (w, h, m) = (720.0_f64, 440.0_f64, 60.0_f64);
    let n = counts.len().max(1) as f64;
    let max = counts.values().map(|c| c.before).max().unwrap_or(1).max(2) as f64;
    let x = |v: f64| m + (v.max(1.0).ln() / max.ln()) * (w - 2.0 * m);
    // Shares from 1/n to 1 on a log scale.
    let y = |share: f64| {
        let lo = (1.0 / n).ln().min(-1e-9);
        h - m - (1.0 - share.max(1.0 / n).ln() / lo) * (h - 2.0 * m)
    };
    let line = |key: fn(&DomainCounts) -> u64| {
        let mut v: Vec<u64> = counts.values().map(key).filter(|&c| c > 0).collect();
        v.sort_unstable();
        let mut pts = String::new();
        for (i, c) in v.iter().enumerate() {
            let share = (v.len() - i) as f64 / n;
            let _ = write!(pts, "{:.1},{:.1} ", x(*c as f64), y(share));
        }
        pts
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"16\">Per-domain CCDF: share of domains with at least x URLs</text>\n\
         <line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"12\">URLs per domain (log, 1 to {max})</text>\n\
         <text x=\"16\" y=\"{}\" font-family=\"sans-serif\" font-size=\"12\" transform=\"rotate(-90 16 {})\">share of domains (log)</text>\n",
        w / 2.0,
        h - m,
        w - m,
        h - m,
        h - m,
        w / 2.0,
        h - m / 3.0,
        h / 2.0,
        h / 2.0
    );
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"{}\"/>",
        line(|c| c.before)
    );
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>",
        line(|c| c.after)
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" fill=\"#d62728\" font-family=\"sans-serif\" font-size=\"12\">before downsampling</text>\n\
         <text x=\"{}\" y=\"{}\" fill=\"#1f77b4\" font-family=\"sans-serif\" font-size=\"12\">after downsampling</text>\n</svg>\n",
        w - m - 150.0,
        m + 10.0,
        w - m - 150.0,
        m + 28.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ccdf_svg_has_both_lines_and_labels() {
        let mut counts = BTreeMap::new();
        for (d, b, a) in [("a.com", 1000, 20), ("b.com", 10, 5), ("c.com", 1, 1)] {
            counts.insert(
                d.to_string(),
                DomainCounts {
                    before: b,
                    after: a,
                },
            );
        }
        let svg = ccdf_svg(&counts);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("before downsampling") && svg.contains("after downsampling"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
