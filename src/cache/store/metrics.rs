//! The persistent tier's health as Prometheus text, appended to `/metrics`.

use std::fmt::Write;

use super::TierStats;

/// Counters of disk trouble, and a gauge that is 1 while the tier is degraded.
pub fn prometheus(stats: &TierStats, degraded: bool) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, v: u64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
        );
    };
    metric(
        "tmproxy_cache_writes_failed_total",
        "counter",
        "Cache writes that did not reach the disk (refused, failed or timed out): answered not_stored.",
        stats.writes_failed,
    );
    metric(
        "tmproxy_cache_unreadable_total",
        "counter",
        "Stored entries found damaged or of another format since start: treated as misses.",
        stats.unreadable,
    );
    metric(
        "tmproxy_cache_entries_lost",
        "gauge",
        "Entries recorded before this start that were gone when the store was opened.",
        stats.lost,
    );
    metric(
        "tmproxy_cache_stores_moved_aside",
        "gauge",
        "Damaged stores moved aside to <path>.corrupt-<time> at this start.",
        stats.moved_aside,
    );
    metric(
        "tmproxy_cache_degraded",
        "gauge",
        "1 while the persistent tier is degraded (see /healthz for why).",
        u64::from(degraded),
    );
    out
}
