//! What a load run measured: latency percentiles, statuses, the server's memory, and whether the
//! benchmark passed.

use super::memory::Rss;
use serde::Serialize;
use std::collections::BTreeMap;

/// Latency percentiles of one class of requests, in milliseconds (nearest rank).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub(super) fn of(mut micros: Vec<u32>) -> Latency {
        if micros.is_empty() {
            return Latency::default();
        }
        micros.sort_unstable();
        let n = micros.len();
        let rank = |q: f64| {
            let i = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            f64::from(micros[i]) / 1000.0
        };
        Latency {
            count: n as u64,
            p50_ms: rank(0.50),
            p90_ms: rank(0.90),
            p99_ms: rank(0.99),
            max_ms: f64::from(micros[n - 1]) / 1000.0,
        }
    }
}

/// What a run measured. `passed()` is the benchmark's verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub duration_s: f64,
    pub connections: usize,
    pub hot_uris: usize,
    pub miss_ratio: f64,
    pub requests: u64,
    pub throughput_rps: f64,
    /// Transport errors and unexpected statuses (a TimeMap not 200, a TimeGate not 302).
    pub errors: u64,
    /// The first few errors, verbatim.
    pub error_samples: Vec<String>,
    /// Count per HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Count per (intended class, `X-Cache` the server answered), e.g. `hit/HIT`, `miss/MISS`.
    pub x_cache: BTreeMap<String, u64>,
    pub hits: Latency,
    pub misses: Latency,
    pub overall: Latency,
    pub rss: Rss,
    /// The server's `[cache] hot_capacity` and sled's page cache (fixed in the store), in MiB.
    pub hot_capacity_mib: f64,
    pub sled_cache_capacity_mib: f64,
    /// The server's own counters at the end (`/admin/stats`: hits, misses, tiers).
    pub server_stats: serde_json::Value,
}

impl Report {
    /// Zero errors and a flat RSS.
    pub fn passed(&self) -> bool {
        self.errors == 0 && self.rss.flat
    }

    /// A few lines for a human; the JSON form has everything.
    pub fn summary(&self) -> String {
        let lat = |name: &str, l: &Latency| {
            format!(
                "  {name:<8} n={:<8} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms\n",
                l.count, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            )
        };
        let mut s = format!(
            "load: {} connections for {:.1} s, {:.0}% misses over {} hot URI-Rs\n  {} requests, {:.0} req/s, {} errors, statuses {:?}\n",
            self.connections,
            self.duration_s,
            self.miss_ratio * 100.0,
            self.hot_uris,
            self.requests,
            self.throughput_rps,
            self.errors,
            self.statuses
        );
        s.push_str(&lat("hits", &self.hits));
        s.push_str(&lat("misses", &self.misses));
        s.push_str(&lat("overall", &self.overall));
        s.push_str(&format!(
            "  X-Cache {:?}\n  server RSS: start {:.1} MiB, at half {:.1} MiB, end {:.1} MiB, max of second half {:.1} MiB: growth {:+.1} MiB (tolerance {:.1} MiB) -> {}\n  bounds: hot_capacity {:.0} MiB, sled cache {:.0} MiB\n",
            self.x_cache,
            self.rss.start_mib,
            self.rss.at_half_mib,
            self.rss.end_mib,
            self.rss.max_second_half_mib,
            self.rss.growth_mib,
            self.rss.tolerance_mib,
            if self.rss.flat { "flat" } else { "NOT FLAT" },
            self.hot_capacity_mib,
            self.sled_cache_capacity_mib,
        ));
        for e in &self.error_samples {
            s.push_str(&format!("  error: {e}\n"));
        }
        s
    }
}
