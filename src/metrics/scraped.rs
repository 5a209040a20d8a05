//! What `/metrics` reads at each scrape rather than counting twice: the cache's counters and
//! tiers, each archive's ledger and health, the byte budget, the listeners' connections.

use super::cache;
use super::connections::{Connections, ListenerCounts};
use super::encode::{counter, one};
use crate::cache::service::{CachedTimeMap, ServedView, TimeMapCache};
use crate::cache::store::Tiered;
use crate::upstream::Upstream;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use std::sync::Arc;

/// What is read at each scrape rather than counted twice: the cache's counters and tiers, each
/// archive's ledger and health, the byte budget, the listeners.
pub struct Scraped<V: ServedView> {
    /// The routes' cache, whatever view its entries are served from.
    pub cache: Arc<TimeMapCache<Tiered<CachedTimeMap<V>>, V>>,
    pub upstream: Arc<Upstream>,
    pub connections: Arc<Connections>,
    pub admin_separate: bool,
}

impl<V: ServedView> std::fmt::Debug for Scraped<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scraped")
    }
}

impl<V: ServedView> Collector for Scraped<V> {
    fn encode(&self, mut out: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        cache::encode(&mut out, &self.cache)?;
        super::archives::encode(&mut out, &self.upstream)?;
        let budget = self.upstream.budget();
        let gauges = [
            (
                "tmproxy_upstream_buffered_bytes",
                "Bytes of archive bodies held now, every fan-out together.",
                budget.buffered(),
            ),
            (
                "tmproxy_upstream_buffered_bytes_high_water",
                "The most bytes of archive bodies ever held at once.",
                budget.high_water(),
            ),
            (
                "tmproxy_upstream_max_buffered_bytes",
                "The limit on them ([upstream] max_buffered).",
                budget.limit(),
            ),
        ];
        for (name, help, v) in gauges {
            one(&mut out, name, help, MetricType::Gauge, v)?;
        }
        let listeners = self.connections.listeners(self.admin_separate);
        let mut open = out.encode_descriptor(
            "tmproxy_connections_open",
            "Connections open on each listener.",
            None,
            MetricType::Gauge,
        )?;
        for (name, l) in &listeners {
            let labels = [("listener", *name)];
            open.encode_family(&labels)?
                .encode_gauge(&(l.open() as u64))?;
        }
        let counts: [(&str, &str, ListenerCount); 2] = [
            (
                "tmproxy_connections_refused",
                "Connections closed at once because max_connections were open, none idle.",
                ListenerCounts::refused,
            ),
            (
                "tmproxy_connections_evicted",
                "Idle connections closed to make room for a new one (max_connections open, or out of file descriptors).",
                ListenerCounts::evicted,
            ),
        ];
        for (metric, help, count) in counts {
            let mut family = out.encode_descriptor(metric, help, None, MetricType::Counter)?;
            for (name, l) in &listeners {
                let labels = [("listener", *name)];
                counter(&mut family.encode_family(&labels)?, count(l))?;
            }
        }
        Ok(())
    }
}

/// One of a listener's counters.
type ListenerCount = fn(&ListenerCounts) -> u64;
