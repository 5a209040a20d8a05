//! The per-domain CCDF before and after downsampling (the paper's Figure 12): the share of
//! domains with at least x URLs, as a table of thresholds and as an SVG of two step lines on
//! log-log axes with decade ticks. Every domain the sampler was given counts, the ones the long
//! tail dropped whole included (their "after" is 0, which a log axis cannot show: they lower the
//! "after" line's start below 1 instead).
//!
//! Drawn by hand rather than with a plotting crate: two paths of `H`/`V` steps and decade ticks
//! are a few lines, where a plotting library would bring fonts and a rasteriser we never use.

use crate::downsample::DomainStats;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The CCDF as a markdown table, thresholds 1, 2, 5, 10, … up to the largest domain.
pub fn markdown(counts: &DomainStats) -> String {
    let n = counts.domains;
    let emptied = counts.emptied();
    let mut s = format!(
        "\n## Per-domain CCDF (domains with at least x URLs)\n\n\
         {n} domains before downsampling, {emptied} of them with no URL after (the long tail \
         dropped them, or Eq. 1 gave 0); shares are of all {n}. Drawn in `ccdf.svg`.\n\n\
         | x | domains before | share before | domains after | share after |\n|---|---|---|---|---|\n"
    );
    let max = counts.max_before();
    let denominator = n.max(1) as f64;
    let mut x = 1u64;
    loop {
        for step in [1, 2, 5] {
            let t = x.saturating_mul(step);
            if t > max.max(1) {
                return s;
            }
            let (b, a) = counts.at_least(t);
            let _ = writeln!(
                s,
                "| {t} | {b} | {:.4} | {a} | {:.4} |",
                b as f64 / denominator,
                a as f64 / denominator
            );
        }
        if x > u64::MAX / 10 {
            return s;
        }
        x *= 10;
    }
}

/// The plot's frame: pixel edges and the decades each axis spans.
struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    /// x from 10^0 to 10^x_decades URLs.
    x_decades: i32,
    /// y from 10^-y_decades to 10^0 of the domains.
    y_decades: i32,
}

impl Frame {
    fn x(&self, urls: f64) -> f64 {
        let t = urls.max(1.0).log10() / f64::from(self.x_decades);
        self.left + t * (self.right - self.left)
    }

    fn y(&self, share: f64) -> f64 {
        let floor = 10f64.powi(-self.y_decades);
        let t = share.max(floor).log10() / f64::from(-self.y_decades);
        self.top + t * (self.bottom - self.top)
    }
}

/// `1`, `10`, `100`, `1k` … `100M`, `1e9` …
fn x_label(decade: i32) -> String {
    match decade {
        0 => "1".into(),
        1 => "10".into(),
        2 => "100".into(),
        3 => "1k".into(),
        4 => "10k".into(),
        5 => "100k".into(),
        6 => "1M".into(),
        7 => "10M".into(),
        8 => "100M".into(),
        d => format!("1e{d}"),
    }
}

/// `1`, `0.1`, `0.01`, `0.001`, `1e-4` …
fn y_label(decade: i32) -> String {
    match decade {
        0 => "1".into(),
        1 => "0.1".into(),
        2 => "0.01".into(),
        3 => "0.001".into(),
        d => format!("1e-{d}"),
    }
}

/// One CCDF as a step path: the share of domains with at least x URLs is flat between two
/// counts that occur and drops at each; past the largest count it is 0, drawn down to the axis.
fn steps(frame: &Frame, domains: u64, histogram: &BTreeMap<u64, u64>) -> String {
    let n = domains.max(1) as f64;
    // Domains with at least the current count, which is > 0 (a log axis has no 0).
    let mut left: u64 = histogram.range(1..).map(|(_, k)| k).sum();
    let mut d = String::new();
    for (i, (&value, &k)) in histogram.range(1..).enumerate() {
        let share = left as f64 / n;
        if i == 0 {
            let _ = write!(d, "M{:.1},{:.1}", frame.x(1.0), frame.y(share));
        } else {
            let _ = write!(d, " H{:.1} V{:.1}", frame.x(value as f64), frame.y(share));
        }
        left -= k;
    }
    if let Some((&last, _)) = histogram.range(1..).next_back() {
        let _ = write!(d, " H{:.1} V{:.1}", frame.x(last as f64), frame.bottom);
    }
    d
}

/// The CCDF before and after downsampling as an SVG (log-log, step lines, decade ticks).
pub fn ccdf_svg(counts: &DomainStats) -> String {
    let n = counts.domains;
    let max = counts.max_before().max(1);
    let (w, h) = (760.0_f64, 480.0_f64);
    let frame = Frame {
        left: 90.0,
        right: w - 30.0,
        top: 56.0,
        bottom: h - 76.0,
        x_decades: ((max as f64).log10().ceil() as i32).max(1),
        y_decades: ((n.max(1) as f64).log10().ceil() as i32).max(1),
    };
    let font = "font-family=\"sans-serif\"";
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" {font} font-size=\"16\">Per-domain CCDF: share of domains with at least x URLs</text>\n\
         <text x=\"{}\" y=\"42\" text-anchor=\"middle\" {font} font-size=\"12\" fill=\"#555\">{n} domains, those the long tail dropped included</text>",
        w / 2.0,
        w / 2.0
    );
    // Grid and ticks, each with its label.
    for d in 0..=frame.x_decades {
        let x = frame.x(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#e0e0e0\"/>\n\
             <line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"black\"/>\n\
             <text class=\"tick x\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" {font} font-size=\"12\">{}</text>",
            frame.top,
            frame.bottom,
            frame.bottom,
            frame.bottom + 6.0,
            frame.bottom + 20.0,
            x_label(d)
        );
    }
    // Unlabelled minor ticks at 2…9 of each decade: a run of small domains spans one decade.
    for d in 0..frame.x_decades {
        for m in 2..10 {
            let x = frame.x(f64::from(m) * 10f64.powi(d));
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
                frame.bottom,
                frame.bottom + 3.0
            );
        }
    }
    for d in 0..=frame.y_decades {
        let y = frame.y(10f64.powi(-d));
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e0e0e0\"/>\n\
             <line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"black\"/>\n\
             <text class=\"tick y\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" {font} font-size=\"12\">{}</text>",
            frame.left,
            frame.right,
            frame.left - 6.0,
            frame.left,
            frame.left - 9.0,
            y + 4.0,
            y_label(d)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" {font} font-size=\"13\">x: URLs per domain (log scale)</text>\n\
         <text x=\"22\" y=\"{}\" text-anchor=\"middle\" {font} font-size=\"13\" transform=\"rotate(-90 22 {})\">share of domains with at least x URLs (log scale)</text>",
        (frame.left + frame.right) / 2.0,
        h - 34.0,
        (frame.top + frame.bottom) / 2.0,
        (frame.top + frame.bottom) / 2.0,
        l = frame.left,
        r = frame.right,
        t = frame.top,
        b = frame.bottom,
    );
    for (histogram, colour, dash, label, row) in [
        (&counts.before, "#d62728", "", "before downsampling", 0.0),
        (
            &counts.after,
            "#1f77b4",
            " stroke-dasharray=\"6 3\"",
            "after downsampling",
            1.0,
        ),
    ] {
        let _ = writeln!(
            s,
            "<path fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash} d=\"{}\"/>\n\
             <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" {font} font-size=\"12\">{label}</text>",
            steps(&frame, counts.domains, histogram),
            frame.left + 220.0 * row,
            h - 12.0,
            frame.left + 220.0 * row + 30.0,
            h - 12.0,
            frame.left + 220.0 * row + 36.0,
            h - 8.0,
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::downsample::DomainCounts;

    fn counts(list: &[(&str, u64, u64)]) -> DomainStats {
        let map: BTreeMap<String, DomainCounts> = list
            .iter()
            .map(|&(d, before, after)| (d.to_string(), DomainCounts { before, after }))
            .collect();
        DomainStats::from(&map)
    }

    /// The tick labels of one axis, in order.
    fn ticks(svg: &str, axis: &str) -> Vec<String> {
        let open = format!("class=\"tick {axis}\"");
        svg.lines()
            .filter(|l| l.contains(&open))
            .filter_map(|l| {
                let start = l.find('>')? + 1;
                let end = l[start..].find('<')? + start;
                Some(l[start..end].to_string())
            })
            .collect()
    }

    #[test]
    fn the_svg_has_step_lines_labelled_axes_and_tick_labels() {
        // Four domains; d.com was dropped whole by the long tail (after = 0).
        let c = counts(&[
            ("a.com", 1000, 20),
            ("b.com", 10, 5),
            ("c.com", 1, 1),
            ("d.com", 1, 0),
        ]);
        let svg = ccdf_svg(&c);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<path").count(), 2);
        assert_eq!(ticks(&svg, "x"), ["1", "10", "100", "1k"]);
        assert_eq!(ticks(&svg, "y"), ["1", "0.1"]);
        assert!(
            svg.contains("x: URLs per domain") && svg.contains("share of domains with at least x")
        );
        assert!(svg.contains("before downsampling") && svg.contains("after downsampling"));
        assert!(svg.contains("4 domains"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // Steps: every path is made of horizontal and vertical moves only.
        for d in svg
            .split(" d=\"")
            .skip(1)
            .map(|t| &t[..t.find('"').unwrap_or(0)])
        {
            assert!(d.starts_with('M'));
            assert!(
                d[1..]
                    .chars()
                    .all(|ch| "HV0123456789., ".contains(ch) || ch == ','),
                "{d}"
            );
        }
        // The "after" line starts at 3/4, not 1: the dropped domain counts.
        let frame_y = |share: f64| {
            let f = Frame {
                left: 90.0,
                right: 730.0,
                top: 56.0,
                bottom: 404.0,
                x_decades: 3,
                y_decades: 1,
            };
            format!("{:.1}", f.y(share))
        };
        assert!(svg.contains(&format!("M90.0,{}", frame_y(1.0))));
        assert!(svg.contains(&format!("M90.0,{}", frame_y(0.75))));
    }

    #[test]
    fn an_empty_run_still_draws_axes() {
        let svg = ccdf_svg(&DomainStats::default());
        assert_eq!(ticks(&svg, "x"), ["1", "10"]);
        assert_eq!(ticks(&svg, "y"), ["1", "0.1"]);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn the_table_counts_domains_dropped_whole() {
        let c = counts(&[
            ("a.com", 1000, 20),
            ("b.com", 10, 5),
            ("c.com", 1, 1),
            ("d.com", 1, 0),
        ]);
        let md = markdown(&c);
        assert!(
            md.contains("4 domains before downsampling, 1 of them with no URL after"),
            "{md}"
        );
        assert!(md.contains("| 1 | 4 | 1.0000 | 3 | 0.7500 |"), "{md}");
        assert!(md.contains("| 10 | 2 | 0.5000 | 1 | 0.2500 |"), "{md}");
        assert!(md.contains("| 1000 | 1 | 0.2500 | 0 | 0.0000 |"), "{md}");
        assert!(
            !md.contains("| 2000 |"),
            "thresholds stop at the largest domain: {md}"
        );
    }
}
