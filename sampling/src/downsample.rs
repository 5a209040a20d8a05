//! Log downsampling per domain per year (`n = min(N, round(K·log(N) + C))`, the paper's Eq. 1
//! with Table 7's K by year), the long-tail reduction, and a seeded choice of which URLs stay.
//!
//! The choice is "bottom-k by seeded hash": every URL gets a priority `hash(seed, url)` and a
//! domain keeps the URLs with the smallest priorities, its root URL first. That is a uniform
//! random sample, the same for a seed whatever order the URLs arrive in (so a resumed job picks
//! what an uninterrupted one would), and it streams: a (year, domain) holds at most `pool`
//! candidates (the spec's `candidate_pool`, by default Eq. 1's largest target over the years
//! for any N a u64 can count, see [`Downsampling::largest_target`]), so [`Sampler`]'s memory
//! grows with the (year, domain)s kept, never with their URLs. Every URL that leaves the pool
//! (evicted, a second root, not picked, dropped by the long tail) is handed to the caller's
//! sink, so none is lost silently; a target the pool cannot meet is reported as a
//! [`Shortfall`]. [`SpillSampler`] applies the same rules to candidates spilled to sorted runs
//! on disk, so its memory does not grow with the domains either: the engine runs it;
//! [`Sampler`] stays as the rules' plain statement, which the spilling one is tested against.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

mod domains;
mod spilling;

pub use domains::DomainStats;
pub use spilling::{Left, SpillSampler, Summary};

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

    /// Eq. 1's largest target over the year buckets of `years` (inclusive) at N = u64::MAX:
    /// a pool this large never falls short, whatever the input.
    pub fn largest_target(&self, years: [u16; 2]) -> u64 {
        (years[0]..=years[1])
            .map(|y| self.target(u64::MAX, y.max(2000)))
            .max()
            .unwrap_or(0)
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

/// The largest candidate pool a spec may ask for: a (year, domain) holds this many URLs at
/// most, which bounds memory whatever K and C say (a larger target is a [`Shortfall`]).
pub const MAX_POOL: usize = 100_000;

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
    /// Candidates kept per (year, domain) besides its root.
    pool: usize,
    buckets: HashMap<(u16, String), DomainBucket>,
}

/// A (year, domain) whose Eq. 1 target is above what its candidate pool could hold.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shortfall {
    /// The year bucket (2000 = 1996–2000).
    pub year: u16,
    pub domain: String,
    /// N of Eq. 1.
    pub urls: u64,
    pub target: u64,
    /// What the sample holds instead.
    pub sampled: u64,
    pub pool: usize,
}

/// What [`Sampler::finish`] hands back.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    pub picked: Vec<Picked>,
    pub counts: BTreeMap<String, DomainCounts>,
    pub shortfalls: Vec<Shortfall>,
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
    /// A sampler keeping `pool` candidates per (year, domain) (clamped to 1..=[`MAX_POOL`]).
    pub fn new(seed: u64, params: Downsampling, pool: usize) -> Sampler {
        Sampler {
            seed,
            params,
            pool: pool.clamp(1, MAX_POOL),
            buckets: HashMap::new(),
        }
    }

    /// [`Sampler::push_with`] without a payload; the URL that left the pool, if any.
    pub fn push(&mut self, bucket: u16, domain: &str, url: &str, root: bool) -> Option<String> {
        self.push_with(bucket, domain, url, root, "")
    }

    /// Feeds a URL with a payload kept beside it while it may still be picked (so no per-URL
    /// side table is needed: memory stays per domain). Returns the URL that can no longer be
    /// picked, if one left: this one or the one it evicted (a second root URL of a (year,
    /// domain) leaves at once: the first stands for it).
    pub fn push_with(
        &mut self,
        bucket: u16,
        domain: &str,
        url: &str,
        root: bool,
        meta: &str,
    ) -> Option<String> {
        let b = self
            .buckets
            .entry((bucket, domain.to_string()))
            .or_default();
        b.n += 1;
        if root {
            if b.root.is_none() {
                b.root = Some((url.to_string(), meta.to_string()));
                return None;
            }
            return Some(url.to_string());
        }
        let p = seeded_hash(self.seed, url);
        if b.keep.len() < self.pool {
            b.keep.push((p, url.to_string(), meta.to_string()));
            None
        } else if b.keep.peek().is_some_and(|(top, _, _)| p < *top) {
            let evicted = b.keep.pop().map(|(_, u, _)| u);
            b.keep.push((p, url.to_string(), meta.to_string()));
            evicted
        } else {
            Some(url.to_string())
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
    /// more than `threshold` domains (the paper: 90% above 900,000); each dropped URL goes to
    /// `dropped` (bucket, domain, url).
    pub fn reduce_long_tail(
        &mut self,
        threshold: u64,
        fraction: f64,
        dropped: &mut impl FnMut(u16, &str, &str),
    ) -> LongTail {
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
            let drop = over.contains(bucket) && b.n == 1 && seeded_hash(seed, domain) < cut;
            if drop {
                // A single-URL domain holds its one URL as its root or in its pool.
                let url = b
                    .root
                    .as_ref()
                    .map(|r| &r.0)
                    .or(b.keep.peek().map(|k| &k.1));
                if let Some(url) = url {
                    dropped(*bucket, domain, url);
                }
            }
            !drop
        });
        LongTail {
            buckets: over,
            dropped_domains: (before - self.buckets.len()) as u64,
        }
    }

    /// The sample, in (bucket, domain, root first, then priority) order, per-domain counts
    /// (summed over buckets) and the targets the pool could not meet; every candidate not
    /// picked goes to `not_picked` (bucket, domain, url).
    pub fn finish(self, not_picked: &mut impl FnMut(u16, &str, &str)) -> Finished {
        let mut keys: Vec<&(u16, String)> = self.buckets.keys().collect();
        keys.sort();
        let mut out = Vec::new();
        let mut counts: BTreeMap<String, DomainCounts> = BTreeMap::new();
        let mut shortfalls = Vec::new();
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
                } else {
                    not_picked(*bucket, domain, root);
                }
            }
            let mut rest: Vec<&(u64, String, String)> = b.keep.iter().collect();
            rest.sort();
            let take = k.saturating_sub(picked);
            for (i, (_, url, meta)) in rest.into_iter().enumerate() {
                if i >= take {
                    not_picked(*bucket, domain, url);
                    continue;
                }
                out.push(Picked {
                    bucket: *bucket,
                    domain: domain.clone(),
                    url: url.clone(),
                    root: false,
                    meta: meta.clone(),
                });
                picked += 1;
            }
            if picked < k {
                shortfalls.push(Shortfall {
                    year: *bucket,
                    domain: domain.clone(),
                    urls: b.n,
                    target: k as u64,
                    sampled: picked as u64,
                    pool: self.pool,
                });
            }
            let c = counts.entry(domain.clone()).or_default();
            c.before += b.n;
            c.after += picked as u64;
        }
        Finished {
            picked: out,
            counts,
            shortfalls,
        }
    }
}

#[cfg(test)]
mod tests;
