//! The service's behaviour on the in-memory tier alone (no sled), with a simulated archive on
//! loopback behind a real fan-out and a simulated clock: hits, misses, refreshes, coalescing and
//! the stale rules, and a view type of the tests' own (the cache never looks inside one).

use super::*;
use crate::clock::SimClock;
use crate::config::{ArchiveConfig, Config};
use crate::timemap::datetime::parse_14digit;
use crate::timemap::model::MementoDatetime;
use crate::upstream::resolve::system_lookup;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

/// The tests' view: the aggregate and how many times a format was prepared.
#[derive(Debug)]
struct Plain {
    aggregate: Aggregate,
    prepared: std::sync::atomic::AtomicUsize,
}

impl ServedView for Plain {
    type Context = ();

    fn build(aggregate: Aggregate, _: &()) -> Plain {
        Plain {
            aggregate,
            prepared: Default::default(),
        }
    }

    fn aggregate(&self) -> &Aggregate {
        &self.aggregate
    }

    fn prepare(&self, _: TimeMapFormat) {
        self.prepared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn respell(&self, uri_r: &str, _: &()) -> Plain {
        let mut aggregate = self.aggregate.clone();
        aggregate.uri_r = uri_r.to_owned();
        Plain::build(aggregate, &())
    }

    fn approx_bytes(_: &Entry) -> usize {
        0
    }
}

type MemoryCache = TimeMapCache<super::super::store::HotTier<CachedTimeMap<Plain>>, Plain>;

const URI_R: &str = "http://example.com/";

fn start() -> MementoDatetime {
    parse_14digit("20240101000000").expect("timestamp")
}

/// The cache in front of `archive`, on an in-memory store, with `policy`, on a simulated clock.
fn cache_for(archive: &SimulatedArchive, policy: Policy) -> (Arc<MemoryCache>, Arc<SimClock>) {
    let mut config = Config::default();
    config.upstream.deadline = Duration::from_secs(5);
    config.archives = vec![ArchiveConfig {
        id: "sim".into(),
        name: "simulated".into(),
        timemap: archive.timemap_prefix(),
        timegate: archive.timegate_prefix(),
        timeout: None,
        enabled: true,
        redirect_hosts: Vec::new(),
        ..ArchiveConfig::timemap_default()
    }];
    let clock = Arc::new(SimClock::new(start()));
    let upstream = Upstream::new(&config, clock.clone(), system_lookup()).expect("upstream");
    let settings = Settings {
        min_refresh_interval: Duration::from_secs(60),
        canonical: true,
    };
    let store = super::super::store::HotTier::new(64 << 20);
    let cache = TimeMapCache::new(
        policy,
        settings,
        Some(store),
        Arc::new(upstream),
        clock.clone(),
        (),
        None,
    );
    (Arc::new(cache), clock)
}

async fn archive_of(captures: &[&str]) -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(captures)))
        .await
        .expect("simulated archive")
}

#[tokio::test]
async fn a_miss_is_stored_and_the_next_request_is_a_hit_without_asking_again() {
    let archive = archive_of(&["20010101000000", "20050101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let first = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(first.status, CacheStatus::Miss);
    assert_eq!(first.action, Some(Action::Stored));
    assert_eq!(first.view.aggregate().timemap.len(), 2);
    let second = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(second.status, CacheStatus::Hit);
    assert_eq!(second.view.aggregate().timemap.len(), 2);
    assert_eq!(archive.requests(), 1);
    // The entry's view is built once and shared by every hit.
    let third = cache.lookup(URI_R, Request::default()).await;
    assert!(Arc::ptr_eq(&second.view, &third.view));
}

#[tokio::test]
async fn another_spelling_is_served_from_a_view_of_its_own_kept_beside_the_entry() {
    let archive = archive_of(&["20010101000000", "20050101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let stored = cache.lookup(URI_R, Request::default()).await;
    let spellings = [
        "https://www.example.com/",
        "http://example.com",
        "HTTP://EXAMPLE.COM:80/",
    ];
    let first = cache.lookup(spellings[0], Request::default()).await;
    assert_eq!(first.status, CacheStatus::Hit);
    assert_eq!(first.view.aggregate().uri_r, spellings[0]);
    // The same mementos, not a copy of them.
    assert!(Arc::ptr_eq(
        &first.view.aggregate().timemap,
        &stored.view.aggregate().timemap
    ));
    let again = cache.lookup(spellings[0], Request::default()).await;
    assert!(Arc::ptr_eq(&first.view, &again.view), "kept for the next");
    // At most ALIAS_VIEWS are kept: the oldest gives way.
    for s in &spellings[1..] {
        assert_eq!(
            cache
                .lookup(s, Request::default())
                .await
                .view
                .aggregate()
                .uri_r,
            *s
        );
    }
    let later = cache.lookup(spellings[0], Request::default()).await;
    assert!(
        !Arc::ptr_eq(&first.view, &later.view),
        "evicted, built again"
    );
    assert_eq!(later.view.aggregate().uri_r, spellings[0]);
    // The stored spelling is still served from the entry's own view.
    let own = cache.lookup(URI_R, Request::default()).await;
    assert!(Arc::ptr_eq(&own.view, &stored.view));
    assert_eq!(archive.requests(), 1);
}

#[tokio::test]
async fn past_its_ttl_an_entry_is_refreshed_through_the_policy() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, clock) = cache_for(&archive, Policy::default());
    cache.lookup(URI_R, Request::default()).await;
    archive.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20100101000000",
    ])));
    clock.set(start() + chrono::Duration::days(16));
    let refreshed = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(refreshed.status, CacheStatus::Refresh);
    assert_eq!(refreshed.case, Some(crate::cache::policy::ChangeCase::C2));
    assert_eq!(refreshed.action, Some(Action::Replaced));
    assert_eq!(refreshed.view.aggregate().timemap.len(), 2);
    assert_eq!(archive.requests(), 2);
}

#[tokio::test]
async fn concurrent_misses_for_one_uri_r_share_one_fan_out() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let lookups = (0..8).map(|_| {
        let cache = cache.clone();
        async move { cache.lookup(URI_R, Request::default()).await }
    });
    let answers = futures::future::join_all(lookups).await;
    assert!(answers
        .iter()
        .all(|a| a.view.aggregate().timemap.len() == 1));
    assert_eq!(archive.requests(), 1);
}

#[tokio::test]
async fn an_outage_serves_the_stored_entry_stale_and_leaves_it_untouched() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, clock) = cache_for(&archive, Policy::default());
    cache.lookup(URI_R, Request::default()).await;
    archive.set_behaviour(Behaviour::Status(503, "down".into()));
    clock.set(start() + chrono::Duration::days(16));
    let served = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(served.status, CacheStatus::Stale);
    assert_eq!(served.view.aggregate().timemap.len(), 1);
    let entry = cache.entry(URI_R).await.expect("still stored");
    assert_eq!(entry.entry.checked_at, start());
}

#[tokio::test]
async fn within_stale_while_revalidate_the_entry_is_served_and_refreshed_behind() {
    let archive = archive_of(&["20010101000000"]).await;
    let policy = Policy {
        stale_while_revalidate: chrono::Duration::days(2),
        ..Policy::default()
    };
    let (cache, clock) = cache_for(&archive, policy);
    cache.lookup(URI_R, Request::default()).await;
    archive.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20100101000000",
    ])));
    clock.set(start() + chrono::Duration::days(16));
    let served = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(served.status, CacheStatus::Stale);
    assert_eq!(served.view.aggregate().timemap.len(), 1);
    // The refresh behind the answer lands without another request asking for it.
    for _ in 0..200 {
        if cache.refreshes_in_flight() == 0 && archive.requests() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let next = cache.lookup(URI_R, Request::default()).await;
    assert_eq!(next.status, CacheStatus::Hit);
    assert_eq!(next.view.aggregate().timemap.len(), 2);
}

#[tokio::test]
async fn policy_none_asks_every_time_and_keeps_nothing() {
    let archive = archive_of(&["20010101000000"]).await;
    let policy = Policy {
        kind: crate::cache::policy::PolicyKind::None,
        ..Policy::default()
    };
    let (mut cache, _) = cache_for(&archive, policy);
    // `none` has no store, as the app builds it.
    Arc::get_mut(&mut cache).expect("sole owner").store = None;
    for _ in 0..2 {
        let served = cache.lookup(URI_R, Request::default()).await;
        assert_eq!(served.status, CacheStatus::Miss);
        assert_eq!(served.view.aggregate().timemap.len(), 1);
    }
    assert_eq!(archive.requests(), 2);
    assert!(cache.entry(URI_R).await.is_none());
}

#[tokio::test]
async fn a_known_format_is_prepared_before_a_huge_first_answer() {
    let captures: Vec<String> = (0..super::first_store::BIG_TIMEMAP)
        .map(|i| {
            let at = start() - chrono::Duration::seconds(i as i64 + 1);
            crate::timemap::datetime::format_14digit(at)
        })
        .collect();
    let captures: Vec<&str> = captures.iter().map(String::as_str).collect();
    let archive = archive_of(&captures).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let req = Request {
        render: Some(TimeMapFormat::JSON),
        ..Request::default()
    };
    let served = cache.lookup(URI_R, req).await;
    assert_eq!(
        served.view.aggregate().timemap.len(),
        super::first_store::BIG_TIMEMAP
    );
    assert_eq!(
        served
            .view
            .prepared
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}
