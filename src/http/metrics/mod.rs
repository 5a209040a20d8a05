//! `GET /metrics` in the Prometheus text format, written by `prometheus-client`: the requests
//! this server answered (counted as they leave), and at each scrape what the cache, the archives,
//! the byte budget and the listeners hold.

mod cache;
mod histogram;

use super::route::{Route, ROUTES};
use super::{Cache, SharedState};
use crate::serve::connections::ListenerConnections;
use crate::upstream::ledger::{SkipReason, Turn, BUCKETS};
use crate::upstream::Upstream;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use histogram::AtomicHistogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::{counter::Counter, MetricType};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

/// Upper bounds (seconds) of the request-duration buckets: a hit takes well under a
/// millisecond, a miss up to the deadline.
const REQUEST_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: &'static str,
}

fn request_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&REQUEST_BUCKETS)
}

/// One server's registry. Labels come from fixed sets only (a route is one of
/// [`super::route::ROUTES`], never a path a client made up), so no client can grow it.
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteStatus, Counter>,
    /// One histogram per route, made up front: a request finds its own by index, with no
    /// lookup in the family's map on the hit path.
    durations: Vec<AtomicHistogram>,
}

impl Metrics {
    /// A registry with the request families and the scrape-time view of `scraped`.
    pub fn new(scraped: Scraped) -> Metrics {
        let mut metrics = Metrics::requests_only();
        metrics.registry.register_collector(Box::new(scraped));
        metrics
    }

    /// The request families alone (for a router tested without a cache behind it).
    pub fn requests_only() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RouteStatus, Counter>::default();
        let durations = Family::new_with_constructor(request_histogram as fn() -> AtomicHistogram);
        registry.register(
            "tmproxy_http_requests",
            "Requests answered, by route and status.",
            requests.clone(),
        );
        registry.register(
            "tmproxy_http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by route.",
            durations.clone(),
        );
        let durations = ROUTES
            .iter()
            .map(|route| durations.get_or_create(&RouteLabel { route }).clone())
            .collect();
        Metrics {
            registry,
            requests,
            durations,
        }
    }

    /// One answered request.
    pub fn observe(&self, route: Route, status: u16, elapsed: Duration) {
        let route_name = route.name();
        self.requests
            .get_or_create(&RouteStatus {
                route: route_name,
                status,
            })
            .inc();
        if let Some(h) = self.durations.get(route.index()) {
            h.observe(elapsed);
        }
    }

    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail; an encoder error would leave a partial text.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

pub async fn metrics(State(state): State<SharedState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// What is read at each scrape rather than counted twice: the cache's counters and tiers, each
/// archive's ledger and health, the byte budget, the listeners.
pub struct Scraped {
    pub cache: Arc<Cache>,
    pub upstream: Arc<Upstream>,
    pub connections: Arc<crate::serve::connections::Connections>,
    pub admin_separate: bool,
}

impl std::fmt::Debug for Scraped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scraped")
    }
}

impl Collector for Scraped {
    fn encode(&self, mut out: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        cache::encode(&mut out, &self.cache)?;
        archives(&mut out, &self.upstream)?;
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
                ListenerConnections::refused,
            ),
            (
                "tmproxy_connections_evicted",
                "Idle connections closed to make room for a new one (max_connections open, or out of file descriptors).",
                ListenerConnections::evicted,
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
type ListenerCount = fn(&ListenerConnections) -> u64;

/// Per archive: its turns by outcome, their latency, and whether it sleeps now.
fn archives(out: &mut DescriptorEncoder, upstream: &Upstream) -> Result<(), std::fmt::Error> {
    let ledgers: Vec<_> = upstream.ledgers().iter().map(|l| l.snapshot()).collect();
    let ids: Vec<&str> = upstream.archives().iter().map(|a| &*a.id).collect();
    let mut requests = out.encode_descriptor(
        "tmproxy_archive_requests",
        "Each archive's turns in a fan-out, by outcome (skipped: not asked, dormant or routed).",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        for (outcome, n) in Turn::ALL.iter().zip(ledger.counts) {
            let labels = [("archive", *id), ("outcome", outcome.as_str())];
            counter(&mut requests.encode_family(&labels)?, n)?;
        }
    }
    let mut skipped = out.encode_descriptor(
        "tmproxy_archive_requests_skipped",
        "Each archive's turns it was not asked, by reason (dormant; routing: its profile says it holds nothing there).",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        for (reason, n) in SkipReason::ALL.iter().zip(ledger.skipped_by) {
            let labels = [("archive", *id), ("reason", reason.as_str())];
            counter(&mut skipped.encode_family(&labels)?, n)?;
        }
    }
    let mut durations = out.encode_descriptor(
        "tmproxy_archive_duration_seconds",
        "How long each archive took to answer, fail or be cut off.",
        None,
        MetricType::Histogram,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        let buckets: Vec<(f64, u64)> = BUCKETS.iter().copied().zip(ledger.buckets).collect();
        let labels = [("archive", *id)];
        durations
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(ledger.seconds, ledger.asked, &buckets, None)?;
    }
    let now = upstream.now();
    let mut dormant = out.encode_descriptor(
        "tmproxy_archive_dormant",
        "1 while the archive is skipped after repeated failures, else 0.",
        None,
        MetricType::Gauge,
    )?;
    for (id, health) in ids.iter().zip(upstream.health()) {
        let labels = [("archive", *id)];
        let v = u64::from(health.is_dormant(now));
        dormant.encode_family(&labels)?.encode_gauge(&v)?;
    }
    Ok(())
}

/// A metric with one unlabelled series.
pub(super) fn one(
    out: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let mut m = out.encode_descriptor(name, help, None, kind)?;
    match kind {
        MetricType::Counter => counter(&mut m, v),
        _ => m.encode_gauge(&v),
    }
}

/// A counter's value (no exemplar).
pub(super) fn counter(
    m: &mut prometheus_client::encoding::MetricEncoder,
    v: u64,
) -> Result<(), std::fmt::Error> {
    m.encode_counter::<NoLabelSet, _, u64>(&v, None)
}
