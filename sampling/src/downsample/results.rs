//! What a sampler hands back, in memory or spilled: the URLs picked, the counts per domain and
//! per year, the long-tail reduction and the targets a pool could not meet.

use std::collections::BTreeMap;

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

/// What [`Sampler::finish`](super::Sampler::finish) hands back.
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
