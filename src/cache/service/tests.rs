//! The service's behaviour on the in-memory tier alone (no sled), with a simulated archive on
//! loopback behind a real fan-out and a simulated clock: hits, misses, refreshes, coalescing and
//! the stale rules, and a view type of the tests' own (the cache never looks inside one).

use super::*;
use crate::cache::entry::Entry;
use crate::cache::policy::{Action, Policy};
use crate::cache::store::{Cacheable, Observed, PutIf, Store, StoreError};
use crate::clock::SimClock;
use crate::config::{ArchiveConfig, Config};
use crate::timemap::aggregate::Aggregate;
use crate::timemap::credit::Credits;
use crate::timemap::datetime::parse_14digit;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use std::sync::Arc;
use std::time::Duration;
// The real fan-out behind the cache's `Archives`, as `app.rs` gives it.
use crate::upstream::resolve::system_lookup;
use crate::uri_r::UriR;

/// A URI-R as a request hands it to the cache: parsed once.
fn u(text: &str) -> UriR {
    UriR::parse(text).expect("a URI-R")
}
use crate::upstream::Upstream;
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

    fn credits(_: &()) -> &Credits {
        Credits::none()
    }

    fn aggregate(&self) -> &Aggregate {
        &self.aggregate
    }

    fn prepare(&self, _: TimeMapFormat) {
        self.prepared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn respell(this: &Arc<Plain>, uri_r: &str, _: &()) -> Plain {
        let mut aggregate = this.aggregate.clone();
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
    cache_on(archive, policy, super::super::store::HotTier::new(64 << 20))
}

/// [`cache_for`] on `store`.
fn cache_on<S: Store<CachedTimeMap<Plain>> + 'static>(
    archive: &SimulatedArchive,
    policy: Policy,
    store: S,
) -> (Arc<TimeMapCache<S, Plain>>, Arc<SimClock>) {
    let mut config = Config::default();
    config.upstream.deadline = Duration::from_secs(5);
    config.archives = vec![ArchiveConfig {
        id: "sim".into(),
        name: "simulated".into(),
        timemap: Some(archive.timemap_prefix().parse().expect("an http URL")),
        timegate: archive.timegate_prefix().parse().expect("an http URL"),
        timeout: None,
        enabled: true,
        redirect_hosts: Vec::new(),
        ..ArchiveConfig::timemap_default()
    }];
    let clock = Arc::new(SimClock::new(start()));
    let upstream = Upstream::new(
        &config,
        "http://127.0.0.1:7089",
        clock.clone(),
        system_lookup(),
    )
    .expect("upstream");
    let settings = Settings {
        min_refresh_interval: Duration::from_secs(60),
        canonical: true,
        full_refresh: Duration::from_secs(30 * 86_400),
    };
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
    let first = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(first.status, CacheStatus::Miss);
    assert_eq!(first.action, Some(Action::Stored));
    assert_eq!(first.view.aggregate().timemap.len(), 2);
    let second = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(second.status, CacheStatus::Hit);
    assert_eq!(second.view.aggregate().timemap.len(), 2);
    assert_eq!(archive.requests(), 1);
    // The entry's view is built once and shared by every hit.
    let third = cache.lookup(&u(URI_R), Request::default()).await;
    assert!(Arc::ptr_eq(&second.view, &third.view));
}

#[tokio::test]
async fn another_spelling_is_served_from_a_view_of_its_own_kept_beside_the_entry() {
    let archive = archive_of(&["20010101000000", "20050101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let stored = cache.lookup(&u(URI_R), Request::default()).await;
    let spellings = [
        "https://www.example.com/",
        "http://example.com",
        "HTTP://EXAMPLE.COM:80/",
    ];
    let first = cache.lookup(&u(spellings[0]), Request::default()).await;
    assert_eq!(first.status, CacheStatus::Hit);
    assert_eq!(first.view.aggregate().uri_r, spellings[0]);
    // The same mementos, not a copy of them.
    assert!(Arc::ptr_eq(
        &first.view.aggregate().timemap,
        &stored.view.aggregate().timemap
    ));
    let again = cache.lookup(&u(spellings[0]), Request::default()).await;
    assert!(Arc::ptr_eq(&first.view, &again.view), "kept for the next");
    // At most ALIAS_VIEWS are kept: the oldest gives way.
    for s in &spellings[1..] {
        assert_eq!(
            cache
                .lookup(&u(s), Request::default())
                .await
                .view
                .aggregate()
                .uri_r,
            *s
        );
    }
    let later = cache.lookup(&u(spellings[0]), Request::default()).await;
    assert!(
        !Arc::ptr_eq(&first.view, &later.view),
        "evicted, built again"
    );
    assert_eq!(later.view.aggregate().uri_r, spellings[0]);
    // The stored spelling is still served from the entry's own view.
    let own = cache.lookup(&u(URI_R), Request::default()).await;
    assert!(Arc::ptr_eq(&own.view, &stored.view));
    assert_eq!(archive.requests(), 1);
}

#[tokio::test]
async fn past_its_ttl_an_entry_is_refreshed_through_the_policy() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, clock) = cache_for(&archive, Policy::default());
    cache.lookup(&u(URI_R), Request::default()).await;
    archive.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20100101000000",
    ])));
    clock.set(start() + chrono::Duration::days(16));
    let refreshed = cache.lookup(&u(URI_R), Request::default()).await;
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
        async move { cache.lookup(&u(URI_R), Request::default()).await }
    });
    let answers = futures::future::join_all(lookups).await;
    assert!(answers
        .iter()
        .all(|a| a.view.aggregate().timemap.len() == 1));
    assert_eq!(archive.requests(), 1);
}

#[tokio::test]
async fn concurrent_ask_all_misses_share_one_fan_out_among_themselves() {
    // `Prefer: archives=all` from many clients at once must not multiply the load on the
    // archives: such fan-outs are shared, with each other only.
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let ask_all = Request {
        ask_all: true,
        ..Request::default()
    };
    let lookups = (0..8).map(|_| {
        let cache = cache.clone();
        async move { cache.lookup(&u(URI_R), ask_all).await }
    });
    let answers = futures::future::join_all(lookups).await;
    assert!(answers
        .iter()
        .all(|a| a.all_asked && a.status == CacheStatus::Miss));
    assert_eq!(archive.requests(), 1);
    // A HIT asked nobody: the preference was not applied to it.
    let hit = cache.lookup(&u(URI_R), ask_all).await;
    assert_eq!((hit.status, hit.all_asked), (CacheStatus::Hit, false));
}

#[tokio::test]
async fn an_outage_serves_the_stored_entry_stale_and_leaves_it_untouched() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, clock) = cache_for(&archive, Policy::default());
    cache.lookup(&u(URI_R), Request::default()).await;
    archive.set_behaviour(Behaviour::Status(503, "down".into()));
    clock.set(start() + chrono::Duration::days(16));
    let served = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(served.status, CacheStatus::Stale);
    assert_eq!(served.view.aggregate().timemap.len(), 1);
    let entry = cache.entry(&u(URI_R)).await.expect("still stored");
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
    cache.lookup(&u(URI_R), Request::default()).await;
    archive.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20100101000000",
    ])));
    clock.set(start() + chrono::Duration::days(16));
    let served = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(served.status, CacheStatus::Stale);
    assert_eq!(served.view.aggregate().timemap.len(), 1);
    // The refresh behind the answer lands without another request asking for it.
    for _ in 0..200 {
        if cache.refreshes_in_flight() == 0 && archive.requests() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let next = cache.lookup(&u(URI_R), Request::default()).await;
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
        let served = cache.lookup(&u(URI_R), Request::default()).await;
        assert_eq!(served.status, CacheStatus::Miss);
        assert_eq!(served.view.aggregate().timemap.len(), 1);
    }
    assert_eq!(archive.requests(), 2);
    assert!(cache.entry(&u(URI_R)).await.is_none());
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
    let served = cache.lookup(&u(URI_R), req).await;
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

/// A store where another replica's writes win: its `put_if` loses `wins` times to `rival` (what
/// the shared tier holds, as if written again just before each try), then writes.
struct Rival {
    local: super::super::store::HotTier<CachedTimeMap<Plain>>,
    rival: Arc<CachedTimeMap<Plain>>,
    wins: std::sync::atomic::AtomicUsize,
}

impl Store<CachedTimeMap<Plain>> for Rival {
    async fn get(&self, key: &str) -> Option<Arc<CachedTimeMap<Plain>>> {
        self.local.get(key).await
    }
    async fn put(&self, key: &str, v: Arc<CachedTimeMap<Plain>>) -> Result<(), StoreError> {
        self.local.put(key, v).await
    }
    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.local.remove(key).await
    }
    fn stats(&self) -> crate::cache::store::TierStats {
        self.local.stats()
    }
    fn is_shared(&self) -> bool {
        true
    }
    async fn put_if(
        &self,
        key: &str,
        value: Arc<CachedTimeMap<Plain>>,
        expected: Observed,
    ) -> Result<PutIf<CachedTimeMap<Plain>>, StoreError> {
        // Another replica writes just before each of ours while it wins: whatever we expected
        // is then out of date.
        let seen = Observed::Revision(self.rival.revision());
        let ordering = std::sync::atomic::Ordering::SeqCst;
        if self.wins.load(ordering) > 0 {
            assert_ne!(expected, Observed::Revision(value.revision()));
            self.wins.fetch_sub(1, ordering);
            let current = Some(self.rival.clone());
            return Ok(PutIf::Lost { current, seen });
        }
        self.local.put(key, value).await.map(|()| PutIf::Stored)
    }
}

/// The entry a cache on an archive of `captures` stores for [`URI_R`]: another replica's.
async fn entry_of(captures: &[&str]) -> Arc<CachedTimeMap<Plain>> {
    let archive = archive_of(captures).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    cache.lookup(&u(URI_R), Request::default()).await;
    let store = cache.store().expect("a store");
    store.get(&cache.key_of(&u(URI_R))).await.expect("stored")
}

#[tokio::test]
async fn a_write_that_lost_is_decided_again_against_the_winner() {
    let rival = entry_of(&["20010101000000", "20030101000000", "20050101000000"]).await;
    let archive = archive_of(&["20010101000000", "20050101000000"]).await;
    let store = Rival {
        local: super::super::store::HotTier::new(64 << 20),
        rival: rival.clone(),
        wins: 1.into(),
    };
    let (cache, _) = cache_on(&archive, Policy::default(), store);
    // A first store whose if-absent write lost: our two mementos decided against the three
    // another replica stored, kept out by the conditional policy.
    let first = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(first.action, Some(Action::Kept));
    let store = cache.store().expect("a store");
    let stored = store.get(&cache.key_of(&u(URI_R))).await.expect("stored");
    assert_eq!(stored.entry.loose, 3);
    assert_ne!(stored.revision(), rival.revision(), "a decision of its own");
    let next = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(
        (next.status, next.view.aggregate().timemap.len()),
        (CacheStatus::Hit, 3)
    );
}

#[tokio::test]
async fn after_every_write_lost_the_shared_entry_stands_here_too() {
    let rival = entry_of(&["20010101000000", "20030101000000", "20050101000000"]).await;
    let archive = archive_of(&["20010101000000"]).await;
    let store = Rival {
        local: super::super::store::HotTier::new(64 << 20),
        rival: rival.clone(),
        wins: usize::MAX.into(),
    };
    let (cache, _) = cache_on(&archive, Policy::default(), store);
    let first = cache.lookup(&u(URI_R), Request::default()).await;
    assert_eq!(first.action, Some(Action::Kept));
    let store = cache.store().expect("a store");
    let stored = store
        .get(&cache.key_of(&u(URI_R)))
        .await
        .expect("installed");
    assert_eq!(
        stored.revision(),
        rival.revision(),
        "the rival's entry, as it is"
    );
    assert_eq!(
        store.wins.load(std::sync::atomic::Ordering::SeqCst),
        usize::MAX - crate::cache::store::CAS_ATTEMPTS
    );
}

/// docs/operating.md, "Bookkeeping": past 10,000 URI-Rs the `no-cache` bookkeeping keeps only those forced
/// within the last `min_refresh_interval` (60 s here), so a client forcing ever new URI-Rs
/// cannot grow it without bound, and a recent force is still held to the interval.
#[tokio::test]
async fn no_cache_bookkeeping_past_10000_entries_keeps_only_the_recent() {
    let archive = archive_of(&["20010101000000"]).await;
    let (cache, _) = cache_for(&archive, Policy::default());
    let forced = |cache: &MemoryCache| cache.forced.lock().expect("forced").len();
    let t0 = start();
    for i in 0..=10_000 {
        assert!(cache.may_force(&format!("k{i}"), t0));
    }
    // All recent: none is forgotten, and each is still refused within the interval.
    let soon = t0 + chrono::Duration::seconds(30);
    assert!(cache.may_force("recent", soon));
    assert_eq!(forced(&cache), 10_002);
    assert!(!cache.may_force("k0", soon));
    // Past the interval the next force forgets every older one.
    let later = t0 + chrono::Duration::seconds(61);
    assert!(cache.may_force("later", later));
    assert_eq!(forced(&cache), 2, "kept: `recent` (31 s old) and `later`");
    assert!(!cache.may_force("recent", later));
}
