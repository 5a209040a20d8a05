//! `memsim route` against the server's own routing state (`tmproxy::routing::Routing`, feature
//! `e2e`): the same misses decided by the server's `decide` (its miss counter drawing
//! exploration) and taught through its `observe_for` (the per-client bound, each miss from its
//! SYNTHETIC client) give exactly the requests and mementos memsim counts. The same over HTTP, through the fan-out: `tests/route_e2e.rs`.

use simulations::route::model::{generate, Preset};
use simulations::route::sim;
use tmproxy::config::{Config, RoutingMode};
use tmproxy::routing::Routing;
use tmproxy_core::routing::{client_key, Mode, Observation, Outcome, Settings};

#[test]
fn the_servers_routing_state_asks_what_memsim_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = generate(&Preset::SMALL, 1);
    let misses = stream.misses(Preset::SMALL.ttl);
    assert!(misses.iter().all(|m| m.client.is_some()));
    let mut bound_mattered = false;
    for (min_evidence, min_share, explore) in [(5, 0.02, 0.05), (20, 0.1, 0.0), (3, 0.5, 0.2)] {
        let mut config = Config::default();
        config.cache.path = dir
            .path()
            .join(format!("cache-{min_evidence}"))
            .display()
            .to_string();
        config.routing.mode = RoutingMode::Learned;
        config.routing.min_evidence = min_evidence;
        config.routing.min_share = min_share;
        config.routing.explore = explore;
        let server = Routing::open(&config);
        let ids: Vec<&str> = stream.archives.iter().map(|a| a.id.as_str()).collect();
        let (mut requests, mut mementos, mut explored) = (0u64, 0u64, 0u64);
        for m in &misses {
            let uri = &stream.uris[m.uri as usize];
            let held = &stream.holdings[m.holdings as usize];
            let count = |a: usize| {
                held.iter()
                    .find(|h| usize::from(h.0) == a)
                    .map_or(0, |h| h.1)
            };
            let uri_r =
                tmproxy::uri_r::UriR::parse(&uri.uri_r).expect("the stream's URI-Rs are URI-Rs");
            let decision = server.decide(&ids, &uri_r);
            explored += u64::from(decision.explored);
            let mut outcomes = Vec::new();
            for (a, route) in decision.routes.iter().enumerate() {
                if route.is_ask() {
                    requests += 1;
                    mementos += u64::from(count(a));
                    let o = if count(a) > 0 {
                        Outcome::Held
                    } else {
                        Outcome::HeldNone
                    };
                    outcomes.push((ids[a].to_string(), o));
                }
            }
            server.observe_for(
                Observation {
                    keys: uri.keys.clone(),
                    outcomes,
                },
                m.client.map(client_key),
            );
        }
        let settings = Settings {
            mode: Mode::Learned,
            min_evidence,
            min_share,
            explore,
        };
        let limits = sim::Limits {
            max_keys: config.routing.max_keys,
            max_per_client: config.routing.max_per_client,
        };
        let r = sim::run(&stream, &misses, &settings, limits);
        assert_eq!(
            (r.requests, r.mementos, r.explored),
            (requests, mementos, explored),
            "min_evidence {min_evidence}, min_share {min_share}, explore {explore}"
        );
        assert!(r.requests < r.requests_all);
        // The bound took lessons away: without it the same misses route otherwise.
        let unbounded = sim::run(
            &stream,
            &misses,
            &settings,
            sim::Limits {
                max_per_client: 4096,
                ..limits
            },
        );
        bound_mattered |= unbounded.requests_by_archive != r.requests_by_archive;
    }
    assert!(bound_mattered, "max_per_client changed no route");
}
