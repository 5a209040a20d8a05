//! What the report needs of the per-domain counts, in bounded form: how many domains have
//! each URL count before and after downsampling (the CCDF's histogram: its distinct counts are
//! at most √(2·URLs), however many domains there are) and the top 20 domains each way.

use super::results::DomainCounts;
use std::collections::BTreeMap;

/// Domains kept in each top list.
pub const TOP: usize = 20;

/// The per-domain counts, summed up: fed each domain once, in any order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainStats {
    /// Every domain the sampler was given (the long tail's dropped ones included).
    pub domains: u64,
    /// Domains per URL count, before and after downsampling.
    pub before: BTreeMap<u64, u64>,
    pub after: BTreeMap<u64, u64>,
    /// The `TOP` domains by URLs before and after, most first, ties by name; a count of 0
    /// is never listed.
    pub top_before: Vec<(String, u64)>,
    pub top_after: Vec<(String, u64)>,
}

impl DomainStats {
    /// Counts one domain (each domain must come once).
    pub fn add(&mut self, domain: &str, c: DomainCounts) {
        self.domains += 1;
        *self.before.entry(c.before).or_default() += 1;
        *self.after.entry(c.after).or_default() += 1;
        top(&mut self.top_before, domain, c.before);
        top(&mut self.top_after, domain, c.after);
    }

    /// Domains with no URL after downsampling.
    pub fn emptied(&self) -> u64 {
        self.after.get(&0).copied().unwrap_or(0)
    }

    /// The largest domain's URLs before downsampling (0 with no domain).
    pub fn max_before(&self) -> u64 {
        self.before.keys().next_back().copied().unwrap_or(0)
    }

    /// Domains with at least `x` URLs, before and after.
    pub fn at_least(&self, x: u64) -> (u64, u64) {
        let count = |h: &BTreeMap<u64, u64>| h.range(x..).map(|(_, n)| n).sum();
        (count(&self.before), count(&self.after))
    }
}

/// Keeps `list` the [`TOP`] largest counts (ties by name), most first.
fn top(list: &mut Vec<(String, u64)>, domain: &str, n: u64) {
    if n == 0 {
        return;
    }
    let before = |a: &(String, u64)| a.1 > n || (a.1 == n && a.0.as_str() < domain);
    let at = list.partition_point(before);
    if at < TOP {
        list.insert(at, (domain.to_string(), n));
        list.truncate(TOP);
    }
}

impl From<&BTreeMap<String, DomainCounts>> for DomainStats {
    fn from(counts: &BTreeMap<String, DomainCounts>) -> Self {
        let mut s = DomainStats::default();
        for (d, c) in counts {
            s.add(d, c.clone());
        }
        s
    }
}
