//! The cache's part of `/metrics`: its counters, answers by result, decisions by Table 1 case,
//! requests per archive, each tier's size and the persistent tier's disk trouble.

use super::encode::{counter, one};
use crate::cache::service::{CachedTimeMap, ServedView, TimeMapCache};
use crate::cache::store::{Store, Tiered};
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

pub fn encode<V: ServedView>(
    out: &mut DescriptorEncoder,
    cache: &TimeMapCache<Tiered<CachedTimeMap<V>>, V>,
) -> Result<(), std::fmt::Error> {
    let s = cache.stats_snapshot();
    let counters = [
        (
            "tmproxy_cache_hits",
            "TimeMaps served from a fresh cache entry.",
            s.hits,
        ),
        (
            "tmproxy_cache_misses",
            "TimeMaps fetched with no cache entry.",
            s.misses,
        ),
        (
            "tmproxy_cache_stale",
            "Expired entries served (stale-if-error, stale-while-revalidate).",
            s.stale,
        ),
        ("tmproxy_fan_outs", "Fan-outs to the archives.", s.fan_outs),
    ];
    for (name, help, v) in counters {
        one(out, name, help, MetricType::Counter, v)?;
    }
    let mut served = out.encode_descriptor(
        "tmproxy_cache_requests",
        "Answers served, by what the cache did (X-Cache).",
        None,
        MetricType::Counter,
    )?;
    for (result, n) in &s.served {
        counter(&mut served.encode_family(&[("result", *result)])?, *n)?;
    }
    let mut decisions = out.encode_descriptor(
        "tmproxy_cache_decisions",
        "Policy decisions by Table 1 case and action.",
        None,
        MetricType::Counter,
    )?;
    for (case, actions) in &s.decisions {
        for (action, n) in actions {
            let labels = [("case", case.as_str()), ("action", action)];
            counter(&mut decisions.encode_family(&labels)?, *n)?;
        }
    }
    let mut fetches = out.encode_descriptor(
        "tmproxy_archive_fetches",
        "Requests for a TimeMap made to each archive.",
        None,
        MetricType::Counter,
    )?;
    for (archive, n) in &s.fetches_per_archive {
        counter(
            &mut fetches.encode_family(&[("archive", archive.as_str())])?,
            *n,
        )?;
    }
    match cache.store() {
        Some(store) => tiers(out, store),
        None => Ok(()),
    }
}

/// Each tier's bytes and entries, and the persistent tier's trouble since start.
fn tiers<V: ServedView>(
    out: &mut DescriptorEncoder,
    store: &Tiered<CachedTimeMap<V>>,
) -> Result<(), std::fmt::Error> {
    let (hot, persistent) = (store.hot().stats(), store.persistent().stats());
    let degraded = store.persistent().degraded().is_some();
    let tiers = [("hot", &hot), ("persistent", &persistent)];
    let mut bytes = out.encode_descriptor(
        "tmproxy_cache_tier_bytes",
        "Bytes held by each cache tier.",
        None,
        MetricType::Gauge,
    )?;
    for (tier, stats) in tiers {
        bytes
            .encode_family(&[("tier", tier)])?
            .encode_gauge(&stats.bytes)?;
    }
    let mut entries = out.encode_descriptor(
        "tmproxy_cache_tier_entries",
        "Entries held by each cache tier.",
        None,
        MetricType::Gauge,
    )?;
    for (tier, stats) in tiers {
        entries
            .encode_family(&[("tier", tier)])?
            .encode_gauge(&stats.entries)?;
    }
    let disk = [
        ("tmproxy_cache_writes_failed", MetricType::Counter, "Cache writes that did not reach the disk (refused, failed or timed out): answered not_stored.", persistent.writes_failed),
        ("tmproxy_cache_unreadable", MetricType::Counter, "Stored entries found damaged or of another format since start: treated as misses.", persistent.unreadable),
        ("tmproxy_cache_entries_lost", MetricType::Gauge, "Entries recorded before this start that were gone when the store was opened.", persistent.lost),
        ("tmproxy_cache_stores_moved_aside", MetricType::Gauge, "Damaged stores moved aside to <path>.corrupt-<time> at this start.", persistent.moved_aside),
        ("tmproxy_cache_degraded", MetricType::Gauge, "1 while the persistent tier is degraded (see /healthz for why).", u64::from(degraded)),
    ];
    for (name, kind, help, v) in disk {
        one(out, name, help, kind, v)?;
    }
    if let Some(shared) = store.shared() {
        let stats = shared.stats();
        let down = u64::from(shared.degraded().is_some());
        let redis = [
            ("tmproxy_cache_shared_errors", MetricType::Counter, "Calls to the shared tier (Redis) that failed or timed out: served from the local tiers.", stats.errors),
            ("tmproxy_cache_shared_unreadable", MetricType::Counter, "Values in the shared tier found damaged, oversized or of another format: treated as misses.", stats.unreadable),
            ("tmproxy_cache_shared_skipped", MetricType::Counter, "Calls to the shared tier not made because one failed less than 5 s before (the pause after a failure).", stats.skipped),
            ("tmproxy_cache_shared_cas_lost", MetricType::Counter, "Writes to the shared tier that lost a compare-and-set to another replica's: decided again against its entry.", stats.cas_lost),
            ("tmproxy_cache_shared_degraded", MetricType::Gauge, "1 while the shared tier cannot be reached (see /healthz for why).", down),
            ("tmproxy_cache_shared_invalidations", MetricType::Counter, "Keys another replica stored or purged, dropped here from memory and disk (pub/sub).", stats.invalidations),
            ("tmproxy_cache_shared_invalidations_refused", MetricType::Counter, "Invalidation messages ignored: oversized, malformed or not naming a cache key.", stats.invalidations_refused),
            ("tmproxy_cache_shared_invalidation_gaps", MetricType::Counter, "Times the invalidation subscription came back after a loss: messages sent meanwhile were lost.", stats.invalidation_gaps),
        ];
        for (name, kind, help, v) in redis {
            one(out, name, help, kind, v)?;
        }
    }
    Ok(())
}
