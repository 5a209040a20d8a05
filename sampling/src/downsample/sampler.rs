//! [`Sampler`]: the rules' plain statement in memory, one bounded pool per (year, domain), which
//! the spilling sampler is tested against.

use super::results::{DomainCounts, Finished, LongTail, Picked, Shortfall, YearInput};
use super::rules::{seeded_hash, Downsampling, MAX_POOL};
use std::collections::{BTreeMap, BinaryHeap, HashMap};

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
