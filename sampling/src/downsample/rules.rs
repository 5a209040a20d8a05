//! The rules of the downsampling: Eq. 1's target per (year, domain) with Table 7's K, the
//! largest candidate pool, and the seeded priority that decides which URLs stay.

use std::collections::BTreeMap;

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
/// most, which bounds memory whatever K and C say (a larger target is a [`Shortfall`](super::Shortfall)).
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
