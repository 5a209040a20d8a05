//! The cache's counters: hits, misses, refreshes by Table 1 case and action, fetches per archive.
//! Read by `GET /admin/stats` (JSON) and `GET /metrics` (`crate::metrics`).

use super::policy::{Action, ChangeCase};
use super::status::CacheStatus;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

const ACTIONS: [Action; 6] = [
    Action::Stored,
    Action::Replaced,
    Action::Kept,
    Action::Merged,
    Action::NotStored,
    Action::Unavailable,
];

fn action_index(a: Action) -> usize {
    ACTIONS.iter().position(|x| *x == a).unwrap_or(0)
}

/// Lock-free counters; archives are fixed at start, so their map needs no lock either.
pub struct CacheStats {
    hits: AtomicU64,
    misses: AtomicU64,
    stale: AtomicU64,
    /// [case 0 = none, 1..=7][action]
    decisions: [[AtomicU64; 6]; 8],
    fan_outs: AtomicU64,
    /// Answers served, by [`CacheStatus`] (as `X-Cache` said).
    served: [AtomicU64; 4],
}

/// A point-in-time copy, as the admin API shows it.
#[derive(Debug, Serialize)]
pub struct StatsSnapshot {
    pub hits: u64,
    pub misses: u64,
    pub stale: u64,
    pub fan_outs: u64,
    /// `{"case_6": {"kept": 3}, "none": {"stored": 10}}`, zero counts left out.
    pub decisions: BTreeMap<String, BTreeMap<&'static str, u64>>,
    pub fetches_per_archive: BTreeMap<String, u64>,
    /// Answers served by result: `hit`, `miss`, `refresh`, `stale`, every one listed.
    pub served: BTreeMap<&'static str, u64>,
}

impl CacheStats {
    pub fn new() -> CacheStats {
        CacheStats {
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            decisions: Default::default(),
            fan_outs: AtomicU64::new(0),
            served: Default::default(),
        }
    }

    /// One answer served, whatever its route: `tmproxy_cache_requests_total{result}`.
    pub fn count_served(&self, status: CacheStatus) {
        self.served[status as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_stale(&self) {
        self.stale.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_decision(&self, case: Option<ChangeCase>, action: Action) {
        let c = case.map_or(0, |c| c.number() as usize);
        self.decisions[c.min(7)][action_index(action)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_fan_out(&self) {
        self.fan_outs.fetch_add(1, Ordering::Relaxed);
    }

    /// A copy of the counters; `fetches` (per archive) comes from the fan-out, which alone
    /// knows which archives it really asked.
    pub fn snapshot(&self, fetches: Vec<(String, u64)>) -> StatsSnapshot {
        let mut decisions = BTreeMap::new();
        for (c, row) in self.decisions.iter().enumerate() {
            let counts: BTreeMap<&'static str, u64> = ACTIONS
                .iter()
                .zip(row)
                .map(|(a, n)| (a.as_str(), n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect();
            if !counts.is_empty() {
                let key = if c == 0 {
                    "none".to_string()
                } else {
                    format!("case_{c}")
                };
                decisions.insert(key, counts);
            }
        }
        StatsSnapshot {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            fan_outs: self.fan_outs.load(Ordering::Relaxed),
            decisions,
            fetches_per_archive: fetches.into_iter().collect(),
            served: CacheStatus::ALL
                .iter()
                .map(|s| (s.label(), self.served[*s as usize].load(Ordering::Relaxed)))
                .collect(),
        }
    }
}

impl Default for CacheStats {
    fn default() -> Self {
        CacheStats::new()
    }
}
