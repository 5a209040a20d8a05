//! Log downsampling per domain per year (`n = min(N, round(K·log(N) + C))`, the paper's Eq. 1
//! with Table 7's K by year), the long-tail reduction, and a seeded choice of which URLs stay.
//!
//! The choice is "bottom-k by seeded hash": every URL gets a priority `hash(seed, url)` and a
//! domain keeps the URLs with the smallest priorities, its root URL first. That is a uniform
//! random sample, the same for a seed whatever order the URLs arrive in (so a resumed job picks
//! what an uninterrupted one would), and it streams: a domain holds at most [`KEEP_CAP`]
//! candidates (enough for any N this side of 10^12), so memory grows with the domains kept,
//! never with the input.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// The paper's Table 7: K per year bucket (2000 = 1996–2000). C = 1 in every year.
pub const TABLE7_K: [(u16, f64); 22] = [
    (2000, 1.0),
    (2001, 1.0),
    (2002, 1.0),
    (2003, 2.0),
    (2004, 5.0),
    (2005, 3.0),
    (2006, 5.0),
    (2007, 2.0),
    (2008, 3.0),
    (2009, 5.0),
    (2010, 2.0),
    (2011, 2.0),
    (2012, 1.0),
    (2013, 1.0),
    (2014, 2.0),
    (2015, 2.0),
    (2016, 1.0),
    (2017, 1.0),
    (2018, 2.0),
    (2019, 3.0),
    (2020, 3.0),
    (2021, 2.0),
];

/// Eq. 1's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Downsampling {
    /// K per year bucket; a bucket not listed uses `default_k`.
    pub k: BTreeMap<u16, f64>,
    pub default_k: f64,
    pub c: f64,
    /// The logarithm's base; the paper does not name it: e (natural) by default.
    pub log_base: f64,
}

impl Default for Downsampling {
    fn default() -> Self {
        Downsampling {
            k: TABLE7_K.into_iter().collect(),
            default_k: 2.0,
            c: 1.0,
            log_base: std::f64::consts::E,
        }
    }
}

impl Downsampling {
    pub fn k_for(&self, bucket: u16) -> f64 {
        self.k.get(&bucket).copied().unwrap_or(self.default_k)
    }

    /// How many of a domain's `n` URLs stay in `bucket`.
    pub fn target(&self, n: u64, bucket: u16) -> u64 {
        target(n, self.k_for(bucket), self.c, self.log_base)
    }
}

/// Eq. 1: `min(N, round(K·log_base(N) + C))` (0 for N = 0).
pub fn target(n: u64, k: f64, c: f64, base: f64) -> u64 {
    if n == 0 {
        return 0;
    }
    let v = (k * (n as f64).ln() / base.ln() + c).round();
    (v.max(0.0) as u64).min(n)
}

/// The most candidates a domain keeps: Eq. 1 at N = 10^12 with K = 10, C = 10, natural log.
pub const KEEP_CAP: usize = 300;

/// SplitMix64 of (seed, text): the seeded priority of a URL or domain (FNV-1a of the text, then
/// a SplitMix64 finaliser). Stable across platforms and runs.
pub fn seeded_hash(seed: u64, text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One domain's URLs in one year bucket, as they stream past.
#[derive(Debug, Default, Clone)]
struct DomainBucket {
    /// Every URL seen (N of Eq. 1).
    n: u64,
    /// The root URL and its payload.
    root: Option<(String, String)>,
    /// The non-root URLs with the smallest priorities (a max-heap, so the largest is evicted),
    /// each with its payload.
    keep: BinaryHeap<(u64, String, String)>,
}

/// The sampler: feed (bucket, domain, url, is_root), then take the sample.
#[derive(Debug, Clone)]
pub struct Sampler {
    seed: u64,
    params: Downsampling,
    buckets: HashMap<(u16, String), DomainBucket>,
}

/// One URL that stays.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Picked {
    pub bucket: u16,
    pub domain: String,
    pub url: String,
    pub root: bool,
    /// What the caller passed along with the URL (the engine: its first capture and MIME).
    pub meta: String,
}

/// Per-domain counts before and after, for the report's top domains and CCDF.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainCounts {
    pub before: u64,
    pub after: u64,
}

/// What the long-tail reduction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LongTail {
    /// Buckets over the threshold.
    pub buckets: Vec<u16>,
    /// Single-URL domains dropped.
    pub dropped_domains: u64,
}

/// One year bucket as the sampler holds it: its domains and URLs (N summed over the domains),
/// and the K and C Eq. 1 gives it. Taken before and after the long-tail reduction, it is the
/// input side of the paper's Table 7.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct YearInput {
    pub domains: u64,
    pub urls: u64,
    pub k: f64,
    pub c: f64,
}

impl Sampler {
    pub fn new(seed: u64, params: Downsampling) -> Sampler {
        Sampler {
            seed,
            params,
            buckets: HashMap::new(),
        }
    }

    pub fn push(&mut self, bucket: u16, domain: &str, url: &str, root: bool) {
        self.push_with(bucket, domain, url, root, "");
    }

    /// [`Sampler::push`] with a payload kept beside the URL while it may still be picked (so
    /// no per-URL side table is needed: memory stays per domain).
    pub fn push_with(&mut self, bucket: u16, domain: &str, url: &str, root: bool, meta: &str) {
        let b = self
            .buckets
            .entry((bucket, domain.to_string()))
            .or_default();
        b.n += 1;
        if root {
            if b.root.is_none() {
                b.root = Some((url.to_string(), meta.to_string()));
            }
            return;
        }
        let p = seeded_hash(self.seed, url);
        if b.keep.len() < KEEP_CAP {
            b.keep.push((p, url.to_string(), meta.to_string()));
        } else if b.keep.peek().is_some_and(|(top, _, _)| p < *top) {
            b.keep.pop();
            b.keep.push((p, url.to_string(), meta.to_string()));
        }
    }

    /// URLs pushed so far (N summed over every domain and bucket).
    pub fn urls(&self) -> u64 {
        self.buckets.values().map(|b| b.n).sum()
    }

    /// Domains kept so far (what memory grows with).
    pub fn domains(&self) -> usize {
        self.buckets.len()
    }

    /// Per year bucket: domains, URLs, K and C, as held now (a read: the state is unchanged).
    pub fn per_year(&self) -> BTreeMap<u16, YearInput> {
        let mut years: BTreeMap<u16, YearInput> = BTreeMap::new();
        for ((bucket, _), b) in &self.buckets {
            let y = years.entry(*bucket).or_insert_with(|| YearInput {
                k: self.params.k_for(*bucket),
                c: self.params.c,
                ..YearInput::default()
            });
            y.domains += 1;
            y.urls += b.n;
        }
        years
    }

    /// URLs per domain summed over the buckets, as held now. Taken before the long-tail
    /// reduction, it still counts the domains the reduction drops (the CCDF's "before").
    pub fn urls_per_domain(&self) -> BTreeMap<String, u64> {
        let mut per: BTreeMap<String, u64> = BTreeMap::new();
        for ((_, domain), b) in &self.buckets {
            *per.entry(domain.clone()).or_default() += b.n;
        }
        per
    }

    /// Drops `fraction` of the single-URL domains (chosen by seeded hash) in every bucket with
    /// more than `threshold` domains (the paper: 90% above 900,000).
    pub fn reduce_long_tail(&mut self, threshold: u64, fraction: f64) -> LongTail {
        let mut per_bucket: BTreeMap<u16, u64> = BTreeMap::new();
        for (bucket, _) in self.buckets.keys() {
            *per_bucket.entry(*bucket).or_default() += 1;
        }
        let over: Vec<u16> = per_bucket
            .iter()
            .filter(|(_, &n)| n > threshold)
            .map(|(&b, _)| b)
            .collect();
        let cut = (fraction.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        let seed = self.seed ^ 0x5A5A_5A5A_5A5A_5A5A;
        let before = self.buckets.len();
        self.buckets.retain(|(bucket, domain), b| {
            !(over.contains(bucket) && b.n == 1 && seeded_hash(seed, domain) < cut)
        });
        LongTail {
            buckets: over,
            dropped_domains: (before - self.buckets.len()) as u64,
        }
    }

    /// The sample, in (bucket, domain, root first, then priority) order, and per-domain counts
    /// (summed over buckets).
    pub fn finish(self) -> (Vec<Picked>, BTreeMap<String, DomainCounts>) {
        let mut keys: Vec<&(u16, String)> = self.buckets.keys().collect();
        keys.sort();
        let mut out = Vec::new();
        let mut counts: BTreeMap<String, DomainCounts> = BTreeMap::new();
        for key in keys {
            let Some(b) = self.buckets.get(key) else {
                continue;
            };
            let (bucket, domain) = key;
            let k = self.params.target(b.n, *bucket) as usize;
            let mut picked = 0;
            if let Some((root, meta)) = &b.root {
                if k > 0 {
                    out.push(Picked {
                        bucket: *bucket,
                        domain: domain.clone(),
                        url: root.clone(),
                        root: true,
                        meta: meta.clone(),
                    });
                    picked += 1;
                }
            }
            let mut rest: Vec<&(u64, String, String)> = b.keep.iter().collect();
            rest.sort();
            for (_, url, meta) in rest.into_iter().take(k.saturating_sub(picked)) {
                out.push(Picked {
                    bucket: *bucket,
                    domain: domain.clone(),
                    url: url.clone(),
                    root: false,
                    meta: meta.clone(),
                });
                picked += 1;
            }
            let c = counts.entry(domain.clone()).or_default();
            c.before += b.n;
            c.after += picked as u64;
        }
        (out, counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_1_on_the_papers_numbers() {
        let p = Downsampling::default();
        // google.com's 1.8 M URLs in one 2004 bucket (K = 5): round(5·ln(1.8e6) + 1) = 73.
        assert_eq!(p.target(1_800_000, 2004), 73);
        // K = 1 (2012): round(ln(1.8e6) + 1) = 15.
        assert_eq!(p.target(1_800_000, 2012), 15);
        // Small domains keep everything: min(N, …).
        assert_eq!(p.target(1, 2004), 1);
        assert_eq!(p.target(2, 2004), 2);
        assert_eq!(p.target(0, 2004), 0);
        // Base 10 instead of e.
        assert_eq!(target(1_000_000, 2.0, 1.0, 10.0), 13);
        // The paper's 459 for google.com is a sum over its year buckets; with Table 7's K and
        // 1.8 M spread evenly over the 22 buckets it would be Σ round(K·ln(81,818) + 1).
        let spread: u64 = TABLE7_K
            .iter()
            .map(|&(b, _)| p.target(1_800_000 / 22, b))
            .sum();
        assert_eq!(spread, 590);
    }

    #[test]
    fn root_first_then_a_seeded_choice_independent_of_order() {
        let urls: Vec<String> = (0..500).map(|i| format!("https://a.com/p{i}")).collect();
        let run = |seed: u64, rev: bool| {
            let mut s = Sampler::new(seed, Downsampling::default());
            let mut list = urls.clone();
            if rev {
                list.reverse();
            }
            for u in &list {
                s.push(2004, "a.com", u, false);
            }
            s.push(2004, "a.com", "https://a.com/", true);
            s.finish()
        };
        let (picked, counts) = run(7, false);
        // N = 501: round(5·ln 501 + 1) = 32.
        assert_eq!(picked.len(), 32);
        assert!(picked[0].root && picked[0].url == "https://a.com/");
        assert_eq!(
            counts["a.com"],
            DomainCounts {
                before: 501,
                after: 32
            }
        );
        assert_eq!(
            run(7, true).0,
            picked,
            "the order of arrival does not matter"
        );
        assert_ne!(run(8, false).0, picked, "the seed does");
    }

    #[test]
    fn the_long_tail_drops_single_url_domains_only_in_crowded_buckets() {
        let mut s = Sampler::new(1, Downsampling::default());
        for i in 0..1000 {
            s.push(
                2010,
                &format!("d{i}.com"),
                &format!("https://d{i}.com/x"),
                false,
            );
        }
        s.push(2010, "big.com", "https://big.com/a", false);
        s.push(2010, "big.com", "https://big.com/b", false);
        for i in 0..10 {
            s.push(
                2003,
                &format!("e{i}.com"),
                &format!("https://e{i}.com/x"),
                false,
            );
        }
        let before = s.urls_per_domain();
        assert_eq!(before.len(), 1011);
        assert_eq!(before["big.com"], 2);
        let lt = s.reduce_long_tail(500, 0.9);
        assert_eq!(lt.buckets, vec![2010]);
        assert!((850..=950).contains(&lt.dropped_domains), "{lt:?}");
        let after = s.per_year();
        assert_eq!(after[&2010].domains, 1001 - lt.dropped_domains);
        assert_eq!(after[&2010].urls, 1002 - lt.dropped_domains);
        assert_eq!((after[&2003].domains, after[&2003].urls), (10, 10));
        assert_eq!(
            (after[&2010].k, after[&2003].k, after[&2010].c),
            (2.0, 2.0, 1.0)
        );
        let (picked, _) = s.finish();
        assert!(picked.iter().any(|p| p.domain == "big.com"));
        assert_eq!(picked.iter().filter(|p| p.bucket == 2003).count(), 10);
    }
}
