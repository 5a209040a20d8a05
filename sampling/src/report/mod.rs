//! `report.md` of a sampling run: the funnel beside the paper's (Figure 4 / §4), the URLs per
//! year in the shape of the paper's Table 7 with the final sample size (`years`), the top 20
//! domains before and after downsampling (the paper's Tables 6 and 8), and the per-domain CCDF
//! (Figure 12) as a table of thresholds and as `ccdf.svg` (`ccdf`).

mod ccdf;
mod years;

pub use ccdf::ccdf_svg;
pub use years::{year_rows, YearRow, YearSample};

use super::downsample::DomainStats;
use super::FunnelRow;
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

/// What a finished run's report is made of.
pub struct Tables<'a> {
    pub funnel: &'a [FunnelRow],
    /// The per-domain URLs before downsampling (the long tail's cut included) and after, summed up.
    pub counts: &'a DomainStats,
    pub years: &'a [YearRow],
    /// Lines of `sample.ndjson`.
    pub sample_size: u64,
}

/// The report for a finished run.
pub fn report(t: &Tables) -> String {
    let (funnel, counts) = (t.funnel, t.counts);
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
    s.push_str(&years::markdown(t.years, t.sample_size));
    let _ = writeln!(
        s,
        "\n## Top 20 domains\n\n| rank | before downsampling | URLs | after | URLs |\n|---|---|---|---|---|"
    );
    let (before, after) = (&counts.top_before, &counts.top_after);
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
    s.push_str(&ccdf::markdown(counts));
    s
}
