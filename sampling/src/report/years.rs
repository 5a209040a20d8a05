//! The paper's Table 7 for a run: per year bucket, the domains and URLs log downsampling was
//! given, its K and C, the URLs it kept, then what the year holds in the sample (roots, the
//! popular domains' quota picks, all URLs) and how many single-URL domains the long tail cut;
//! the paper's own row beside ours.

use crate::downsample::YearInput;
use crate::filters::bucket_label;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The paper's Table 7 (domains, URLs, K, URLs after downsampling with C = 1) by year bucket.
const PAPER: [(u16, &str, &str, &str, &str); 22] = [
    (2000, "1.4M", "2.6M", "1", "1.7M"),
    (2001, "1.5M", "2.6M", "1", "1.8M"),
    (2002, "1.2M", "2.4M", "1", "1.6M"),
    (2003, "820.3K", "2.1M", "2", "1.3M"),
    (2004, "290.4K", "2.3M", "5", "1.2M"),
    (2005, "635.8K", "2.1M", "3", "1.2M"),
    (2006, "319.1K", "1.8M", "5", "1.2M"),
    (2007, "369.4K", "2.8M", "2", "1.1M"),
    (2008, "318.1K", "2.6M", "3", "1.2M"),
    (2009, "287.8K", "2.3M", "5", "1.2M"),
    (2010, "403.5K", "2.6M", "2", "1.2M"),
    (2011, "418.6K", "3.4M", "2", "1.3M"),
    (2012, "483.7K", "5.1M", "1", "1.1M"),
    (2013, "463.0K", "5.2M", "1", "1.0M"),
    (2014, "370.6K", "5.1M", "2", "1.2M"),
    (2015, "421.0K", "5.1M", "2", "1.3M"),
    (2016, "605.4K", "5.1M", "1", "1.2M"),
    (2017, "531.1K", "6.4M", "1", "1.2M"),
    (2018, "440.2K", "5.6M", "2", "1.4M"),
    (2019, "314.9K", "5.4M", "3", "1.2M"),
    (2020, "382.7K", "5.8M", "3", "1.2M"),
    (2021, "501.9K", "3.9M", "2", "813.7K"),
];

/// The paper's final sample size (the sum of Table 7's last column).
pub const PAPER_SAMPLE: &str = "27.3M";

/// What the sample holds of one year: its URLs and, of those, root URLs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct YearSample {
    pub urls: u64,
    pub roots: u64,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct YearRow {
    pub bucket: u16,
    /// Domains log downsampling was given (after the long tail).
    pub domains: u64,
    /// URLs log downsampling was given: Σ N over the year's domains.
    pub before: u64,
    pub k: f64,
    pub c: f64,
    /// URLs log downsampling kept: Σ min(N, round(K·log N + C)).
    pub after: u64,
    /// Root URLs among the year's sampled URLs.
    pub roots: u64,
    /// The popular domains' quota picks of the year (they skip downsampling).
    pub quota: u64,
    /// The year's URLs in the sample: `after + quota`.
    pub sample: u64,
    /// Single-URL domains the long-tail reduction dropped from the year.
    pub long_tail: u64,
}

/// The bucket a year label of the sample names (`1996-2000` is 2000).
fn bucket_of(label: &str) -> Option<u16> {
    if label == bucket_label(2000) {
        return Some(2000);
    }
    label.parse().ok()
}

/// The table's rows, in year order: `before_long_tail` and `eq1` are the sampler's
/// [`per_year`](crate::downsample::Sampler::per_year) on either side of the long-tail
/// reduction, `picked` how many URLs downsampling kept per bucket, `sample` the sample counted
/// per year label.
pub fn year_rows(
    before_long_tail: &BTreeMap<u16, YearInput>,
    eq1: &BTreeMap<u16, YearInput>,
    picked: &BTreeMap<u16, u64>,
    sample: &BTreeMap<String, YearSample>,
) -> Vec<YearRow> {
    let mut rows: BTreeMap<u16, YearRow> = BTreeMap::new();
    for (&bucket, y) in eq1 {
        let r = rows.entry(bucket).or_default();
        (r.domains, r.before, r.k, r.c) = (y.domains, y.urls, y.k, y.c);
    }
    for (&bucket, y) in before_long_tail {
        let r = rows.entry(bucket).or_default();
        r.long_tail = y
            .domains
            .saturating_sub(eq1.get(&bucket).map_or(0, |e| e.domains));
        if !eq1.contains_key(&bucket) {
            (r.k, r.c) = (y.k, y.c);
        }
    }
    for (&bucket, &n) in picked {
        rows.entry(bucket).or_default().after += n;
    }
    for (label, s) in sample {
        let Some(bucket) = bucket_of(label) else {
            continue;
        };
        let r = rows.entry(bucket).or_default();
        (r.sample, r.roots) = (s.urls, s.roots);
    }
    rows.into_iter()
        .map(|(bucket, mut r)| {
            r.bucket = bucket;
            r.quota = r.sample.saturating_sub(r.after);
            r
        })
        .collect()
}

/// The table as markdown, with a total row and the final sample size.
pub fn markdown(rows: &[YearRow], sample_size: u64) -> String {
    let mut s = String::from(
        "\n## URLs per year (the paper's Table 7)\n\n\
         Log downsampling keeps n = min(N, round(K · log N + C)) of a domain's N URLs in a year. \
         *Domains* and *URLs before downsampling* are what it was given (after the long tail), \
         *URLs after downsampling* what it kept, *roots* the root URLs among the year's sample, \
         *popular quota* the popular domains' picks (they skip downsampling), *sample* the \
         year's URLs in `sample.ndjson`, *long tail* the single-URL domains the long-tail \
         reduction dropped. The paper's column: its domains, URLs, K and URLs after (C = 1).\n\n\
         | year | domains | URLs before downsampling | K | C | URLs after downsampling | roots | popular quota | sample | long tail (domains dropped) | paper: domains, URLs, K, after |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut total = YearRow::default();
    for r in rows {
        let paper = PAPER
            .iter()
            .find(|p| p.0 == r.bucket)
            .map_or(String::new(), |p| {
                format!("{}, {}, {}, {}", p.1, p.2, p.3, p.4)
            });
        // A year only the popular quota reached gave Eq. 1 nothing: no K or C to show.
        let (k, c) = if r.before > 0 || r.long_tail > 0 {
            (r.k.to_string(), r.c.to_string())
        } else {
            (String::new(), String::new())
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {k} | {c} | {} | {} | {} | {} | {} | {paper} |",
            bucket_label(r.bucket),
            r.domains,
            r.before,
            r.after,
            r.roots,
            r.quota,
            r.sample,
            r.long_tail
        );
        total.domains += r.domains;
        total.before += r.before;
        total.after += r.after;
        total.roots += r.roots;
        total.quota += r.quota;
        total.sample += r.sample;
        total.long_tail += r.long_tail;
    }
    let _ = writeln!(
        s,
        "| total | {} | {} |  |  | {} | {} | {} | {} | {} | {PAPER_SAMPLE} |",
        total.domains,
        total.before,
        total.after,
        total.roots,
        total.quota,
        total.sample,
        total.long_tail
    );
    let _ = writeln!(
        s,
        "\n(*domains* totals count a domain once per year it appears in.)\n\n\
         **Final sample size: {sample_size} URLs** (the paper: {PAPER_SAMPLE}).",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::downsample::Picked;

    /// The picks counted per bucket, as the engine hands them over.
    fn per_bucket(picked: &[Picked]) -> BTreeMap<u16, u64> {
        let mut n = BTreeMap::new();
        for p in picked {
            *n.entry(p.bucket).or_default() += 1;
        }
        n
    }

    fn input(domains: u64, urls: u64, k: f64) -> YearInput {
        YearInput {
            domains,
            urls,
            k,
            c: 1.0,
        }
    }

    fn picked(bucket: u16, n: usize) -> Vec<Picked> {
        (0..n)
            .map(|i| Picked {
                bucket,
                domain: format!("d{i}.com"),
                url: format!("https://d{i}.com/"),
                root: i == 0,
                meta: String::new(),
            })
            .collect()
    }

    #[test]
    fn rows_join_the_sampler_the_picks_and_the_sample_by_year() {
        let before = BTreeMap::from([(2000, input(10, 30, 1.0)), (2010, input(50, 80, 2.0))]);
        let eq1 = BTreeMap::from([(2000, input(10, 30, 1.0)), (2010, input(20, 50, 2.0))]);
        let mut p = picked(2000, 12);
        p.extend(picked(2010, 25));
        let sample = BTreeMap::from([
            ("1996-2000".to_string(), YearSample { urls: 12, roots: 4 }),
            ("2010".to_string(), YearSample { urls: 27, roots: 9 }),
            // A year only the popular quota reached.
            ("2016".to_string(), YearSample { urls: 1, roots: 0 }),
        ]);
        let rows = year_rows(&before, &eq1, &per_bucket(&p), &sample);
        assert_eq!(rows.len(), 3);
        let r2010 = rows[1];
        assert_eq!(
            (r2010.bucket, r2010.domains, r2010.before, r2010.after),
            (2010, 20, 50, 25)
        );
        assert_eq!(
            (r2010.k, r2010.long_tail, r2010.quota, r2010.sample),
            (2.0, 30, 2, 27)
        );
        assert_eq!((rows[0].quota, rows[0].roots, rows[0].long_tail), (0, 4, 0));
        assert_eq!(
            (rows[2].bucket, rows[2].quota, rows[2].before),
            (2016, 1, 0)
        );
        let md = markdown(&rows, 40);
        assert!(
            md.contains(
                "| 1996-2000 | 10 | 30 | 1 | 1 | 12 | 4 | 0 | 12 | 0 | 1.4M, 2.6M, 1, 1.7M |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| 2010 | 20 | 50 | 2 | 1 | 25 | 9 | 2 | 27 | 30 | 403.5K, 2.6M, 2, 1.2M |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| 2016 | 0 | 0 |  |  | 0 | 0 | 1 | 1 | 0 | 605.4K, 5.1M, 1, 1.2M |"),
            "{md}"
        );
        assert!(
            md.contains("| total | 30 | 80 |  |  | 37 | 13 | 3 | 40 | 30 | 27.3M |"),
            "{md}"
        );
        assert!(md.contains("**Final sample size: 40 URLs**"), "{md}");
    }
}
