//! The cache between the routes and the fan-out: fresh entries are served as they are, expired
//! ones are refreshed through the policy (one fan-out per URI-R however many requests wait), and
//! every answer says what happened (HIT, MISS, REFRESH, STALE).

use super::fan_out::{progress, Archives, Ask, Progress, Router, Settled};
use super::observe::ObservationLog;
use super::policy::{Action, ChangeCase, Freshness, Policy};
use super::stats::{CacheStats, StatsSnapshot};
use super::store::{Alone, FanOutLock, Invalidate, Store, Tiered};
use crate::clock::Clock;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use crate::uri_r::UriR;
use futures::future::{BoxFuture, FutureExt, Shared};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod chosen;
mod first_store;
mod keys;
mod refresh;
mod shared_write;
mod short_deadline;
#[cfg(test)]
mod tests;
use keys::stored_spelling;
use refresh::Begun;

pub use super::cached::{aggregate_of, CachedTimeMap, ServedView, ALIAS_VIEWS};
pub use super::status::CacheStatus;

/// An answer for the routes: what to serve and the facts its headers need.
#[derive(Debug)]
pub struct Served<V> {
    pub view: Arc<V>,
    pub status: CacheStatus,
    /// On REFRESH: the Table 1 case and what the policy did.
    pub case: Option<ChangeCase>,
    pub action: Option<Action>,
    /// Answered from a fan-out that asked every archive because the request said `Prefer:
    /// archives=all` (its `Preference-Applied`).
    pub all_asked: bool,
    /// When the archives were last asked, and until when the answer is fresh (when the content
    /// was fetched is the view's `aggregate.fetched_at`).
    pub checked_at: MementoDatetime,
    pub fresh_until: Option<MementoDatetime>,
}

impl<V> Clone for Served<V> {
    fn clone(&self) -> Self {
        Served {
            view: self.view.clone(),
            ..*self
        }
    }
}

impl<V: ServedView> Served<V> {
    fn stored(cached: &CachedTimeMap<V>, context: &V::Context, status: CacheStatus) -> Served<V> {
        Self::stored_as(cached, &cached.entry.uri_r, context, status)
    }

    /// The stored entry, its view naming `uri_r` (the spelling the client asked).
    fn stored_as(
        cached: &CachedTimeMap<V>,
        uri_r: &str,
        context: &V::Context,
        status: CacheStatus,
    ) -> Served<V> {
        Self::with_view(cached, cached.view_for(uri_r, context), status)
    }

    /// The stored entry's freshness, served through `view` (its own, another spelling's, or a
    /// part of it a client chose).
    fn with_view(cached: &CachedTimeMap<V>, view: Arc<V>, status: CacheStatus) -> Served<V> {
        Served {
            view,
            status,
            case: None,
            action: None,
            all_asked: false,
            checked_at: cached.entry.checked_at,
            fresh_until: cached.entry.fresh_until,
        }
    }

    /// A fetch served as it is (policy `none`, an outage): merged here, where it is served.
    fn fresh(fetch: &Fetch, context: &V::Context, status: CacheStatus) -> Served<V> {
        let aggregate = Aggregate::of(&fetch.uri_r, fetch.at, &fetch.archives);
        let at = aggregate.fetched_at;
        Served {
            view: Arc::new(V::build(aggregate, context)),
            status,
            case: None,
            action: None,
            all_asked: false,
            checked_at: at,
            fresh_until: Some(at),
        }
    }
}

/// What a caller asks of the cache for one URI-R.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    /// The client's own deadline when shorter than the configured one: such a request joins
    /// (or starts) the shared refresh, which runs to `[upstream] deadline` and stores what it
    /// gets, and is answered, unstored, from what has come by its own deadline if that is first.
    pub deadline: Option<Duration>,
    /// `Cache-Control: no-cache`: refresh now, at most once per `min_refresh_interval`.
    pub no_cache: bool,
    /// The admin's explicit refresh: always refreshes.
    pub force: bool,
    /// The format the answer will be rendered in, if the caller knows: a first answer renders
    /// it while its entry is being stored, instead of after.
    pub render: Option<TimeMapFormat>,
    /// `Prefer: archives=all`: any fan-out this request makes asks every archive, whatever
    /// routing would skip (such fan-outs are shared only with requests that asked the same).
    pub ask_all: bool,
    /// The client's address (an IPv6 /64), when a client asked: what a fan-out it starts
    /// teaches routing is bounded per client. None: the server's own (admin, sampling feed).
    pub client: Option<std::net::IpAddr>,
}

/// Cache settings the service applies (the policy itself is pure and separate, stale rules
/// included).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The least time between two refreshes a client's `no-cache` may force for one URI-R.
    pub min_refresh_interval: Duration,
    /// `[cache] canonical`: entries keyed by the URI-R's canonical form
    /// ([`tmproxy_core::surt::canonical_key`]), so its spellings share one; else by its exact text.
    pub canonical: bool,
}

type SharedRefresh<V> = Shared<BoxFuture<'static, Option<Served<V>>>>;

/// A refresh in flight: its answer to come, and what its fan-out's archives answered so far.
struct Flight<V> {
    refresh: SharedRefresh<V>,
    progress: tokio::sync::watch::Receiver<Settled>,
}

impl<V> Clone for Flight<V> {
    fn clone(&self) -> Self {
        Flight {
            refresh: self.refresh.clone(),
            progress: self.progress.clone(),
        }
    }
}

/// The cache service, over a store `S` of entries with their views `V`. Shared behind an
/// `Arc`; every method takes `&self`.
pub struct TimeMapCache<S, V: ServedView> {
    policy: Policy,
    settings: Settings,
    store: Option<S>,
    /// Who fans out for a key across replicas: this one alone, or the shared tier's claim.
    fan_out_lock: Arc<dyn FanOutLock>,
    /// The fan-out (the upstream's).
    archives: Arc<dyn Archives>,
    clock: Arc<dyn Clock>,
    /// What the views are built with.
    context: Arc<V::Context>,
    /// Every map below is by cache key ([`TimeMapCache::key_of`]), not by spelling.
    inflight: Mutex<HashMap<String, Flight<V>>>,
    /// First stores and refreshes still being built or written after their answer went out, by
    /// URI-R, with the answer they gave (a first store's MISS, or the stored entry STALE): a
    /// request meanwhile is answered so instead of fanning out again.
    settling: Arc<Mutex<HashMap<String, Served<V>>>>,
    /// Last client-forced refresh per URI-R, to bound `no-cache` refreshes.
    forced: Mutex<HashMap<String, MementoDatetime>>,
    pub stats: CacheStats,
    observe: Option<ObservationLog>,
    /// Which archives a fan-out asks, and what each fan-out teaches (routing's); None: every
    /// archive, and nothing learned (a cache built without a server around it).
    router: Option<Arc<dyn Router>>,
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        policy: Policy,
        settings: Settings,
        store: Option<S>,
        archives: Arc<dyn Archives>,
        clock: Arc<dyn Clock>,
        context: V::Context,
        observe: Option<ObservationLog>,
    ) -> TimeMapCache<S, V> {
        TimeMapCache {
            policy,
            settings,
            store,
            fan_out_lock: Arc::new(Alone),
            archives,
            clock,
            context: Arc::new(context),
            inflight: Mutex::new(HashMap::new()),
            settling: Default::default(),
            forced: Mutex::new(HashMap::new()),
            stats: CacheStats::new(),
            observe,
            router: None,
        }
    }

    /// Fan-outs routed by, and teaching, `router`.
    pub fn with_router(mut self, router: Arc<dyn Router>) -> Self {
        self.router = Some(router);
        self
    }

    /// Fan-outs claimed through `lock` (the shared tier's), so replicas ask the archives once.
    pub fn with_fan_out_lock(mut self, lock: Arc<dyn FanOutLock>) -> Self {
        self.fan_out_lock = lock;
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn store(&self) -> Option<&S> {
        self.store.as_ref()
    }
}

/// Another replica stored or removed `key` (`[cache] shared`): this one forgets its local copy,
/// so its next lookup reads the shared tier.
impl<V: ServedView> Invalidate for TimeMapCache<Tiered<CachedTimeMap<V>>, V> {
    async fn forget_locally(&self, key: &str) {
        if let Some(store) = &self.store {
            store.forget_locally(key).await;
        }
    }
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// The answer for `uri_r`: from the cache when fresh, else through a (shared) refresh. It
    /// names `uri_r` as given, whichever spelling of it the entry was stored under.
    pub async fn lookup(self: &Arc<Self>, uri_r: &UriR, req: Request) -> Served<V> {
        let key = self.key_of(uri_r);
        let mut served = self.answer(&key, uri_r, req).await;
        // A fan-out shared with, or an answer left by, a request of another spelling.
        if served.view.aggregate().uri_r != uri_r.as_str() {
            let respelled = V::respell(&served.view, uri_r.as_str(), self.context.as_ref());
            served.view = Arc::new(respelled);
        }
        self.stats.count_served(served.status);
        served
    }

    async fn answer(self: &Arc<Self>, key: &str, uri_r: &UriR, req: Request) -> Served<V> {
        let arrived = tokio::time::Instant::now();
        let Some(store) = &self.store else {
            // Policy `none`: every request asks the archives and nothing is kept.
            let fetch = self
                .fan_out(uri_r, req.deadline, arrived, req.ask_all, None, req.client)
                .await;
            self.stats.count_miss();
            self.stats.count_decision(None, Action::NotStored);
            let mut served = Served::fresh(&fetch, self.context.as_ref(), CacheStatus::Miss);
            served.all_asked = req.ask_all;
            return served;
        };
        let now = self.clock.now();
        let cached = self.read(store, key, uri_r.as_str()).await;
        let freshness = self
            .policy
            .freshness(cached.as_ref().map(|c| &c.entry), now);
        let wants_refresh = req.force || (req.no_cache && self.may_force(key, now));
        match (&cached, freshness, wants_refresh) {
            (Some(c), Freshness::Fresh, false) => {
                self.stats.count_hit();
                return Served::stored_as(
                    c,
                    uri_r.as_str(),
                    self.context.as_ref(),
                    CacheStatus::Hit,
                );
            }
            // stale-while-revalidate: served now and refreshed behind the client's back,
            // through the same policy.
            (Some(c), Freshness::Stale, false) => {
                let this = self.clone();
                let asked = stored_spelling(Some(c), uri_r);
                let (key, client) = (key.to_string(), req.client);
                tokio::spawn(async move { this.revalidate(&key, &asked, client).await });
                self.stats.count_stale();
                return Served::stored_as(
                    c,
                    uri_r.as_str(),
                    self.context.as_ref(),
                    CacheStatus::Stale,
                );
            }
            _ => {}
        }
        // A first store being written came from a fan-out this request may not have asked
        // for (a routed one, for `Prefer: archives=all`).
        if !req.force && !req.ask_all {
            if let Some(served) = self.settling_answer(key) {
                return served;
            }
        }
        let begun = Begun {
            at: arrived,
            cached: cached.clone(),
            // Another replica's fan-out may have been routed: one asked for every archive is
            // made here.
            alone: req.force || req.ask_all,
            ask_all: req.ask_all,
            client: req.client,
        };
        // The archives are asked with the spelling the entry was stored under (its first
        // asker's), so an entry's URI-R, and its observation log lines, keep one spelling.
        let asked = stored_spelling(cached.as_deref(), uri_r);
        let served = match req.deadline {
            // What a client's own deadline cuts is never stored: the shared refresh runs to
            // the server's deadline, and this request takes what has come by its own.
            Some(d) if d < self.archives.deadline() => {
                self.within(key, &asked, begun, req.render, d).await
            }
            _ => self.shared_refresh(key, &asked, begun, req.render).await,
        };
        let mut served = served.unwrap_or_else(|| {
            // The refresh task itself failed (a panic in it): serve what we have rather than 500.
            match &cached {
                Some(c) => Served::stored(c, self.context.as_ref(), CacheStatus::Stale),
                None => Served::fresh(
                    &Fetch {
                        uri_r: uri_r.as_str().to_string(),
                        at: now,
                        archives: Vec::new(),
                    },
                    self.context.as_ref(),
                    CacheStatus::Miss,
                ),
            }
        });
        // A MISS or REFRESH of an ask-all request comes from its own ask-all fan-out (it
        // joins no other, nor a settling answer); a HIT or STALE was not asked anew.
        served.all_asked =
            req.ask_all && matches!(served.status, CacheStatus::Miss | CacheStatus::Refresh);
        served
    }

    /// Whether an entry last checked at `checked_at` may be answered as a HIT now without
    /// reading it (a huge entry's head, kept by the serving layer); false sends the request
    /// the ordinary way (stale, expired, or no store). Count it with [`Self::count_head_hit`].
    pub fn head_is_fresh(&self, checked_at: MementoDatetime) -> bool {
        let now = self.clock.now();
        self.store.is_some()
            && self.policy.freshness_checked(Some(checked_at), now) == Freshness::Fresh
    }

    /// Counts a HIT answered from a head ([`Self::head_is_fresh`]).
    pub fn count_head_hit(&self) {
        self.stats.count_hit();
        self.stats.count_served(CacheStatus::Hit);
    }

    /// stale-while-revalidate's refresh behind the client: joins one in flight, and starts none
    /// when the entry was refreshed since this request read it. A refresh leaves `inflight`
    /// only after storing, so finding none in flight and then reading the store sees its entry.
    async fn revalidate(self: &Arc<Self>, key: &str, uri_r: &UriR, client: Option<IpAddr>) {
        let in_flight = self
            .inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(key);
        let mut begun = Begun {
            at: tokio::time::Instant::now(),
            cached: None,
            alone: false,
            ask_all: false,
            client,
        };
        if !in_flight {
            if let Some(store) = &self.store {
                let cached = store.get(key).await;
                let freshness = self
                    .policy
                    .freshness(cached.as_ref().map(|c| &c.entry), self.clock.now());
                if cached.is_some() && matches!(freshness, Freshness::Fresh) {
                    return;
                }
                begun.cached = cached;
            }
        }
        let _ = self.shared_refresh(key, uri_r, begun, None).await;
    }

    /// Whether a client's `no-cache` may force a refresh now (and records that it did).
    fn may_force(&self, key: &str, now: MementoDatetime) -> bool {
        let interval =
            chrono::Duration::from_std(self.settings.min_refresh_interval).unwrap_or_default();
        let mut forced = self.forced.lock().unwrap_or_else(|p| p.into_inner());
        if forced.get(key).is_some_and(|last| now < *last + interval) {
            return false;
        }
        // Bounded memory: forget refreshes older than the interval once the map grows.
        if forced.len() > 10_000 {
            forced.retain(|_, last| now < *last + interval);
        }
        forced.insert(key.to_string(), now);
        true
    }

    /// One fan-out for `key` shared by every request that arrives while it runs, whatever its
    /// spelling: the archives are asked with `uri_r`, the first one's. It runs as its own
    /// task, so a client that hangs up does not cancel it for the others.
    async fn shared_refresh(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        begun: Begun<V>,
        render: Option<TimeMapFormat>,
    ) -> Option<Served<V>> {
        self.flight(key, uri_r, begun, render).refresh.await
    }

    /// The refresh in flight for `key` (of its kind: ask-all or routed), started now if there
    /// is none.
    fn flight(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        begun: Begun<V>,
        render: Option<TimeMapFormat>,
    ) -> Flight<V> {
        // Ask-all fan-outs are shared among themselves only (a NUL never is in a key): a
        // routed one does not answer them, and many of them cost the archives one.
        let inflight_key = match begun.ask_all {
            true => format!("{key}\0all"),
            false => key.to_string(),
        };
        let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = inflight.get(&inflight_key) {
            return f.clone();
        }
        let progress = progress();
        let watched = progress.subscribe();
        let this = self.clone();
        let (owned_key, uri_r) = (key.to_string(), uri_r.clone());
        let flight = inflight_key.clone();
        let task = tokio::spawn(async move {
            let served = this
                .refresh(&owned_key, &uri_r, begun, render, &progress)
                .await;
            this.inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&flight);
            served
        });
        let refresh: SharedRefresh<V> = async move { task.await.ok().flatten() }.boxed().shared();
        let f = Flight {
            refresh,
            progress: watched,
        };
        inflight.insert(inflight_key, f.clone());
        f
    }

    /// The archives' answers for `uri_r`, by `deadline` (else the configured one) counted from
    /// when the request arrived: the archives routing picks (every one with `ask_all`), and
    /// the profiles learn from what they answered, as much as `client` may teach.
    async fn fan_out(
        &self,
        uri_r: &UriR,
        deadline: Option<Duration>,
        arrived: tokio::time::Instant,
        ask_all: bool,
        progress: Option<&Progress>,
        client: Option<IpAddr>,
    ) -> Fetch {
        let deadline = deadline.unwrap_or(self.archives.deadline());
        let decision = match (&self.router, ask_all) {
            (Some(router), false) => Some(router.decide(&self.archives.ids(), uri_r)),
            _ => None,
        };
        let ask = decision.as_ref().map_or(Ask::All, Ask::Routed);
        // Nobody watches a fan-out started without one; it still publishes as it goes.
        let unwatched;
        let progress = match progress {
            Some(progress) => progress,
            None => {
                unwatched = self::progress();
                &unwatched
            }
        };
        let fetch = self
            .archives
            .fetch(uri_r, deadline, arrived, ask, progress)
            .await;
        // The fresh answers, before any merge: skipped and failed archives teach nothing.
        if let Some(router) = &self.router {
            router.observe(&fetch, uri_r, client);
        }
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
            Some(store) => store.flush().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// The counters, with each archive's request count from the fan-out.
    pub fn stats_snapshot(&self) -> StatsSnapshot {
        self.stats.snapshot(self.archives.fetch_counts())
    }
}
