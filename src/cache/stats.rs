//! The cache's counters: hits, misses, refreshes by Table 1 case and action, fetches per archive.
//! Read by `GET /admin/stats` (JSON) and `GET /metrics` (Prometheus text).

use super::policy::{Action, ChangeCase};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
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
}

impl CacheStats {
    pub fn new() -> CacheStats {
        CacheStats {
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            decisions: Default::default(),
            fan_outs: AtomicU64::new(0),
        }
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
        }
    }
}

/// The Prometheus text exposition of a snapshot plus the tiers' sizes.
pub fn prometheus(s: &StatsSnapshot, tiers: &[(&str, u64, u64)]) -> String {
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, v: u64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
        );
    };
    counter(
        "tmproxy_cache_hits_total",
        "TimeMaps served from a fresh cache entry.",
        s.hits,
    );
    counter(
        "tmproxy_cache_misses_total",
        "TimeMaps fetched with no cache entry.",
        s.misses,
    );
    counter(
        "tmproxy_cache_stale_total",
        "Expired entries served (stale-if-error, stale-while-revalidate).",
        s.stale,
    );
    counter(
        "tmproxy_fan_outs_total",
        "Fan-outs to the archives.",
        s.fan_outs,
    );
    let _ = writeln!(out, "# HELP tmproxy_cache_decisions_total Policy decisions by Table 1 case and action.\n# TYPE tmproxy_cache_decisions_total counter");
    for (case, actions) in &s.decisions {
        for (action, n) in actions {
            let _ = writeln!(
                out,
                "tmproxy_cache_decisions_total{{case=\"{case}\",action=\"{action}\"}} {n}"
            );
        }
    }
    let _ = writeln!(out, "# HELP tmproxy_archive_fetches_total Requests for a TimeMap made to each archive.\n# TYPE tmproxy_archive_fetches_total counter");
    for (archive, n) in &s.fetches_per_archive {
        let _ = writeln!(
            out,
            "tmproxy_archive_fetches_total{{archive=\"{archive}\"}} {n}"
        );
    }
    let _ = writeln!(out, "# HELP tmproxy_cache_tier_bytes Bytes held by each cache tier.\n# TYPE tmproxy_cache_tier_bytes gauge");
    for (tier, bytes, _) in tiers {
        let _ = writeln!(out, "tmproxy_cache_tier_bytes{{tier=\"{tier}\"}} {bytes}");
    }
    let _ = writeln!(out, "# HELP tmproxy_cache_tier_entries Entries held by each cache tier.\n# TYPE tmproxy_cache_tier_entries gauge");
    for (tier, _, entries) in tiers {
        let _ = writeln!(
            out,
            "tmproxy_cache_tier_entries{{tier=\"{tier}\"}} {entries}"
        );
    }
    out
}

impl Default for CacheStats {
    fn default() -> Self {
        CacheStats::new()
    }
}
