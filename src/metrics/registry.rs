//! The server's registry: the requests it answered, counted as they leave, and whatever is read
//! at each scrape, in the Prometheus text format written by `prometheus-client`.

use super::histogram::AtomicHistogram;
use super::route::{RouteId, ROUTES};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;
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

const _: () = assert!(REQUEST_BUCKETS.len() <= super::histogram::MAX_BOUNDS);

fn request_histogram() -> AtomicHistogram {
    AtomicHistogram::new(&REQUEST_BUCKETS)
}

/// One server's registry. Labels come from fixed sets only (a route is one of
/// [`ROUTES`], never a path a client made up), so no client can grow it.
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteStatus, Counter>,
    /// One histogram per route, made up front: a request finds its own by index, with no
    /// lookup in the family's map on the hit path.
    durations: Vec<AtomicHistogram>,
    /// Each route's counter of `200` answers (nearly every request's), kept from the family
    /// once it has one: the family's map is read under a lock whose count every connection
    /// thread writes, and a cache hit has no other shared write.
    ok: Vec<OnceLock<Counter>>,
}

impl Metrics {
    /// A registry with the request families and the scrape-time view of `scraped` (the server's
    /// is [`Scraped`](super::Scraped)).
    pub fn new(scraped: impl Collector) -> Metrics {
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
            ok: ROUTES.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// One answered request.
    pub fn observe(&self, route: RouteId, status: u16, elapsed: Duration) {
        let label = RouteStatus {
            route: route.name(),
            status,
        };
        match self.ok.get(route.index()) {
            // Made in the family on the first: a route that never answered 200 shows none.
            Some(ok) if status == 200 => {
                ok.get_or_init(|| self.requests.get_or_create(&label).clone())
                    .inc();
            }
            _ => {
                self.requests.get_or_create(&label).inc();
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::route::route_of;

    #[test]
    fn answers_are_counted_by_route_and_status_and_only_those_given() {
        let metrics = Metrics::requests_only();
        let timemap = route_of("/timemap/link/http://example.com/");
        for _ in 0..3 {
            metrics.observe(timemap, 200, Duration::from_millis(1));
        }
        metrics.observe(timemap, 404, Duration::from_millis(1));
        metrics.observe(
            route_of("/timegate/http://example.com/"),
            302,
            Duration::ZERO,
        );
        let text = metrics.render();
        let line = |route: &str, status: u16| {
            format!("tmproxy_http_requests_total{{route=\"{route}\",status=\"{status}\"}}")
        };
        let count = |route: &str, status: u16| {
            let wanted = line(route, status);
            text.lines()
                .find_map(|l| l.strip_prefix(&wanted))
                .map(|n| n.trim().to_owned())
        };
        let (tm, tg) = (timemap.name(), route_of("/timegate/x").name());
        assert_eq!(count(tm, 200).as_deref(), Some("3"), "{text}");
        assert_eq!(count(tm, 404).as_deref(), Some("1"), "{text}");
        assert_eq!(count(tg, 302).as_deref(), Some("1"), "{text}");
        // No route's 200 counter is there before it answered one.
        assert_eq!(count(tg, 200), None, "{text}");
    }
}
