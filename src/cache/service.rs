//! The cache between the routes and the fan-out: fresh entries are served as they are, expired
//! ones are refreshed through the policy (one fan-out per URI-R however many requests wait), and
//! every answer says what happened (HIT, MISS, REFRESH, STALE).

use super::entry::Entry;
use super::observe::ObservationLog;
use super::policy::{Action, ChangeCase, Freshness, Policy};
use super::stats::{CacheStats, StatsSnapshot};
use super::store::{Cacheable, Store, Tiered};
use crate::clock::Clock;
use crate::timemap::aggregate::{Aggregate, Verdict};
use crate::timemap::answer::Fetch;
use crate::timemap::datetime::format_rfc1123;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::{render, SelfLinks, TimeMapFormat};
use crate::upstream::Upstream;
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

mod first_store;
mod refresh;
use refresh::Begun;

/// What the hot tier holds: the stored entry, plus what serving it needs, built once per load.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CachedTimeMap {
    pub entry: Entry,
    #[serde(skip)]
    view: OnceLock<Arc<View>>,
}

impl CachedTimeMap {
    pub fn new(entry: Entry) -> CachedTimeMap {
        CachedTimeMap {
            entry,
            view: OnceLock::new(),
        }
    }

    /// An entry whose view is already built (from the fetch it was made of).
    fn with_view(entry: Entry, view: Arc<View>) -> CachedTimeMap {
        CachedTimeMap {
            entry,
            view: OnceLock::from(view),
        }
    }

    /// Whether the view is built already (a huge entry read from disk has none yet).
    fn has_view(&self) -> bool {
        self.view.get().is_some()
    }

    /// The aggregate to serve, built from the entry the first time it is needed.
    pub fn view(&self, public_url: &str) -> Arc<View> {
        self.view
            .get_or_init(|| Arc::new(View::new(aggregate_of(&self.entry), public_url)))
            .clone()
    }
}

impl Cacheable for CachedTimeMap {
    const FORMAT_VERSION: u32 = super::entry::ENTRY_FORMAT_VERSION;

    /// The entry, plus the view built from it: the aggregate's copy of each memento and the three
    /// rendered bodies (the URI-M and 70–110 bytes of markup each). Calibrated so the weight is
    /// at least the live heap an entry holds once all three formats are rendered (measured with
    /// `e2e_bench memory`, see BENCHMARKS.md), so `hot_capacity` bounds real memory.
    fn approx_bytes(&self) -> usize {
        let mementos: usize = self
            .entry
            .contributions
            .iter()
            .map(|c| c.mementos.len())
            .sum();
        let uris: usize = self
            .entry
            .contributions
            .iter()
            .flat_map(|c| c.mementos.iter().map(|m| m.uri_m.len()))
            .sum();
        self.entry.approx_bytes() + 3 * uris + 400 * mementos + 2048
    }
}

/// An aggregate ready to serve, with each format rendered at most once and the headers that
/// depend only on the content built once: a cache hit then allocates almost nothing.
#[derive(Debug)]
pub struct View {
    pub aggregate: Aggregate,
    links: SelfLinks,
    bodies: [OnceLock<Rendered>; 3],
    headers: OnceLock<HeaderMap>,
}

/// One format's body and its ETag.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: String,
    pub etag_header: Option<HeaderValue>,
}

impl View {
    pub fn new(aggregate: Aggregate, public_url: &str) -> View {
        let links = SelfLinks::new(public_url, &aggregate.uri_r);
        View {
            aggregate,
            links,
            bodies: Default::default(),
            headers: OnceLock::new(),
        }
    }

    /// `X-Memento-Count`, `X-Memento-Archives`, `X-Memento-Partial`, `Last-Modified`: fixed for
    /// a given content, so built once per view.
    pub fn content_headers(&self) -> HeaderMap {
        self.headers
            .get_or_init(|| {
                let agg = &self.aggregate;
                let mut h = HeaderMap::with_capacity(12);
                h.insert("x-memento-count", HeaderValue::from(agg.timemap.len()));
                if let Some(v) = crate::error::archives_header(agg) {
                    h.insert("x-memento-archives", v);
                }
                if matches!(agg.verdict(), Verdict::Found { partial: true }) {
                    let missing: Vec<&str> = agg.missing().map(|o| o.id.as_str()).collect();
                    if let Ok(v) = HeaderValue::from_str(&missing.join(", ")) {
                        h.insert("x-memento-partial", v);
                    }
                }
                if let Ok(v) = HeaderValue::from_str(&format_rfc1123(agg.fetched_at)) {
                    h.insert(axum::http::header::LAST_MODIFIED, v);
                }
                h
            })
            .clone()
    }

    pub fn rendered(&self, format: TimeMapFormat) -> Rendered {
        let slot = match format {
            TimeMapFormat::Link => &self.bodies[0],
            TimeMapFormat::Json => &self.bodies[1],
            TimeMapFormat::Cdxj => &self.bodies[2],
        };
        slot.get_or_init(|| {
            let mut body = render(format, &self.aggregate, &self.links);
            // Cached for the entry's lifetime: give back the growth slack (up to half of it).
            body.shrink_to_fit();
            let etag = format!("\"{:016x}\"", fnv1a(&body));
            Rendered {
                body: Bytes::from(body),
                etag_header: HeaderValue::from_str(&etag).ok(),
                etag,
            }
        })
        .clone()
    }
}

/// A 64-bit FNV-1a: a stable ETag across restarts, unlike std's seeded hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The aggregate a stored entry stands for: its TimeMap and each archive's recorded answer.
pub fn aggregate_of(entry: &Entry) -> Aggregate {
    Aggregate::of(&entry.uri_r, entry.fetched_at, &entry.contributions)
}

/// How an answer came about, as `X-Cache` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
    Refresh,
    Stale,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "HIT",
            CacheStatus::Miss => "MISS",
            CacheStatus::Refresh => "REFRESH",
            CacheStatus::Stale => "STALE",
        }
    }
}

/// An answer for the routes: what to serve and the facts its headers need.
#[derive(Debug, Clone)]
pub struct Served {
    pub view: Arc<View>,
    pub status: CacheStatus,
    /// On REFRESH: the Table 1 case and what the policy did.
    pub case: Option<ChangeCase>,
    pub action: Option<Action>,
    /// When the archives were last asked, and until when the answer is fresh (when the content
    /// was fetched is the view's `aggregate.fetched_at`).
    pub checked_at: MementoDatetime,
    pub fresh_until: Option<MementoDatetime>,
}

impl Served {
    fn stored(cached: &CachedTimeMap, public_url: &str, status: CacheStatus) -> Served {
        Served {
            view: cached.view(public_url),
            status,
            case: None,
            action: None,
            checked_at: cached.entry.checked_at,
            fresh_until: cached.entry.fresh_until,
        }
    }

    /// A fetch served as it is (policy `none`, an outage): merged here, where it is served.
    fn fresh(fetch: &Fetch, public_url: &str, status: CacheStatus) -> Served {
        let aggregate = Aggregate::of(&fetch.uri_r, fetch.at, &fetch.archives);
        let at = aggregate.fetched_at;
        Served {
            view: Arc::new(View::new(aggregate, public_url)),
            status,
            case: None,
            action: None,
            checked_at: at,
            fresh_until: Some(at),
        }
    }
}

/// What a caller asks of the cache for one URI-R.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    /// The client's own deadline when shorter than the configured one: such a request fans out
    /// on its own (its result still goes through the policy) rather than joining a shared
    /// fan-out that would keep it waiting longer than it asked.
    pub deadline: Option<Duration>,
    /// `Cache-Control: no-cache`: refresh now, at most once per `min_refresh_interval`.
    pub no_cache: bool,
    /// The admin's explicit refresh: always refreshes.
    pub force: bool,
    /// The format the answer will be rendered in, if the caller knows: a first answer renders
    /// it while its entry is being stored, instead of after.
    pub render: Option<TimeMapFormat>,
}

/// Cache settings the service applies (the policy itself is pure and separate, stale rules
/// included).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The least time between two refreshes a client's `no-cache` may force for one URI-R.
    pub min_refresh_interval: Duration,
}

type SharedRefresh = Shared<BoxFuture<'static, Option<Served>>>;

/// The cache service. Shared behind an `Arc`; every method takes `&self`.
pub struct TimeMapCache {
    policy: Policy,
    settings: Settings,
    store: Option<Tiered<CachedTimeMap>>,
    upstream: Arc<Upstream>,
    clock: Arc<dyn Clock>,
    public_url: String,
    inflight: Mutex<HashMap<String, SharedRefresh>>,
    /// First stores and refreshes still being built or written after their answer went out, by
    /// URI-R, with the answer they gave (a first store's MISS, or the stored entry STALE): a
    /// request meanwhile is answered so instead of fanning out again.
    settling: Arc<Mutex<HashMap<String, Served>>>,
    /// Last client-forced refresh per URI-R, to bound `no-cache` refreshes.
    forced: Mutex<HashMap<String, MementoDatetime>>,
    pub stats: CacheStats,
    observe: Option<ObservationLog>,
}

impl TimeMapCache {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        policy: Policy,
        settings: Settings,
        store: Option<Tiered<CachedTimeMap>>,
        upstream: Arc<Upstream>,
        clock: Arc<dyn Clock>,
        public_url: String,
        observe: Option<ObservationLog>,
    ) -> TimeMapCache {
        TimeMapCache {
            policy,
            settings,
            store,
            upstream,
            clock,
            public_url,
            inflight: Mutex::new(HashMap::new()),
            settling: Default::default(),
            forced: Mutex::new(HashMap::new()),
            stats: CacheStats::new(),
            observe,
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn store(&self) -> Option<&Tiered<CachedTimeMap>> {
        self.store.as_ref()
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The answer for `uri_r`: from the cache when fresh, else through a (shared) refresh.
    pub async fn lookup(self: &Arc<Self>, uri_r: &str, req: Request) -> Served {
        let arrived = tokio::time::Instant::now();
        let Some(store) = &self.store else {
            // Policy `none`: every request asks the archives and nothing is kept.
            let fetch = self.fan_out(uri_r, req.deadline, arrived).await;
            self.stats.count_miss();
            self.stats.count_decision(None, Action::NotStored);
            return Served::fresh(&fetch, &self.public_url, CacheStatus::Miss);
        };
        let now = self.clock.now();
        let cached = store.get(uri_r).await;
        let freshness = self
            .policy
            .freshness(cached.as_ref().map(|c| &c.entry), now);
        let wants_refresh = req.force || (req.no_cache && self.may_force(uri_r, now));
        match (&cached, freshness, wants_refresh) {
            (Some(c), Freshness::Fresh, false) => {
                self.stats.count_hit();
                return Served::stored(c, &self.public_url, CacheStatus::Hit);
            }
            // stale-while-revalidate: served now and refreshed behind the client's back,
            // through the same policy.
            (Some(c), Freshness::Stale, false) => {
                let this = self.clone();
                let key = uri_r.to_string();
                tokio::spawn(async move { this.revalidate(&key).await });
                self.stats.count_stale();
                return Served::stored(c, &self.public_url, CacheStatus::Stale);
            }
            _ => {}
        }
        if !req.force {
            if let Some(served) = self.settling_answer(uri_r) {
                return served;
            }
        }
        let mut begun = Begun {
            at: arrived,
            deadline: None,
            cached: cached.clone(),
        };
        let served = match req.deadline {
            Some(d) if d < self.upstream.deadline() => {
                begun.deadline = Some(d);
                self.refresh(uri_r, begun, req.render).await
            }
            _ => self.shared_refresh(uri_r, begun, req.render).await,
        };
        served.unwrap_or_else(|| {
            // The refresh task itself failed (a panic in it): serve what we have rather than 500.
            match &cached {
                Some(c) => Served::stored(c, &self.public_url, CacheStatus::Stale),
                None => Served::fresh(
                    &Fetch {
                        uri_r: uri_r.to_string(),
                        at: now,
                        archives: Vec::new(),
                    },
                    &self.public_url,
                    CacheStatus::Miss,
                ),
            }
        })
    }

    /// stale-while-revalidate's refresh behind the client: joins one in flight, and starts none
    /// when the entry was refreshed since this request read it. A refresh leaves `inflight`
    /// only after storing, so finding none in flight and then reading the store sees its entry.
    async fn revalidate(self: &Arc<Self>, uri_r: &str) {
        let in_flight = self
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(uri_r);
        let mut begun = Begun {
            at: tokio::time::Instant::now(),
            deadline: None,
            cached: None,
        };
        if !in_flight {
            if let Some(store) = &self.store {
                let cached = store.get(uri_r).await;
                let freshness = self
                    .policy
                    .freshness(cached.as_ref().map(|c| &c.entry), self.clock.now());
                if cached.is_some() && matches!(freshness, Freshness::Fresh) {
                    return;
                }
                begun.cached = cached;
            }
        }
        let _ = self.shared_refresh(uri_r, begun, None).await;
    }

    /// Whether a client's `no-cache` may force a refresh now (and records that it did).
    fn may_force(&self, uri_r: &str, now: MementoDatetime) -> bool {
        let interval =
            chrono::Duration::from_std(self.settings.min_refresh_interval).unwrap_or_default();
        let mut forced = self.forced.lock().unwrap_or_else(|p| p.into_inner());
        if forced.get(uri_r).is_some_and(|last| now < *last + interval) {
            return false;
        }
        // Bounded memory: forget refreshes older than the interval once the map grows.
        if forced.len() > 10_000 {
            forced.retain(|_, last| now < *last + interval);
        }
        forced.insert(uri_r.to_string(), now);
        true
    }

    /// One fan-out for `uri_r` shared by every request that arrives while it runs. It runs as its
    /// own task, so a client that hangs up does not cancel it for the others.
    async fn shared_refresh(
        self: &Arc<Self>,
        uri_r: &str,
        begun: Begun,
        render: Option<TimeMapFormat>,
    ) -> Option<Served> {
        let shared = {
            let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(f) = inflight.get(uri_r) {
                f.clone()
            } else {
                let this = self.clone();
                let key = uri_r.to_string();
                let task = tokio::spawn(async move {
                    let served = this.refresh(&key, begun, render).await;
                    this.inflight
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&key);
                    served
                });
                let f: SharedRefresh = async move { task.await.ok().flatten() }.boxed().shared();
                inflight.insert(uri_r.to_string(), f.clone());
                f
            }
        };
        shared.await
    }

    /// The archives' answers for `uri_r`, by `deadline` (else the configured one) counted from
    /// when the request arrived.
    async fn fan_out(
        &self,
        uri_r: &str,
        deadline: Option<Duration>,
        arrived: tokio::time::Instant,
    ) -> Fetch {
        let deadline = deadline.unwrap_or(self.upstream.deadline());
        let fetch = self.upstream.fetch_from(uri_r, deadline, arrived).await;
        self.stats.count_fan_out();
        if let Some(log) = &self.observe {
            log.append(&fetch).await;
        }
        fetch
    }

    /// Refreshes still running, first stores still being written included. A stopping server
    /// waits for them: one whose client hung up, a stale-while-revalidate one or a feed's still
    /// stores its result when it ends.
    pub fn refreshes_in_flight(&self) -> usize {
        let shared = self
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        let settling = self
            .settling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        shared + settling
    }

    /// Makes everything stored so far durable (each put already is; this is the last word
    /// before the process exits, for anything written outside a put).
    pub async fn flush(&self) -> Result<(), String> {
        match &self.store {
            Some(store) => store.persistent().flush().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// The counters, with each archive's request count from the fan-out.
    pub fn stats_snapshot(&self) -> StatsSnapshot {
        self.stats.snapshot(self.upstream.fetch_counts())
    }

    /// Drops the entry for `uri_r` from both tiers.
    pub async fn purge(&self, uri_r: &str) -> Result<bool, String> {
        let Some(store) = &self.store else {
            return Ok(false);
        };
        let existed = store.get(uri_r).await.is_some();
        store.remove(uri_r).await.map_err(|e| e.to_string())?;
        Ok(existed)
    }

    /// The stored entry for `uri_r`, if any (for the admin API).
    pub async fn entry(&self, uri_r: &str) -> Option<Arc<CachedTimeMap>> {
        self.store.as_ref()?.get(uri_r).await
    }
}
