//! A request's way through the cache: served fresh, served stale while a refresh runs behind it,
//! or joined to the one refresh in flight for its key (started if there is none), whose fan-out
//! asks the archives routing picks.

use super::keys::stored_spelling;
use super::refresh::Begun;
use super::served::Request;
use super::served::Served;
use super::time_map_cache::{Flight, SharedRefresh, TimeMapCache};
use crate::cache::cached::{CachedTimeMap, ServedView};
use crate::cache::fan_out::{progress, Ask, Prior, Progress};
use crate::cache::policy::{Action, Freshness};
use crate::cache::status::CacheStatus;
use crate::cache::store::Store;
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use crate::uri_r::UriR;
use futures::future::FutureExt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

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

    pub(super) async fn answer(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        req: Request,
    ) -> Served<V> {
        let arrived = tokio::time::Instant::now();
        let Some(store) = &self.store else {
            // Boxed, as the refresh below: begun only when needed, their state is not part of
            // the future every hit's request moves and keeps.
            return Box::pin(self.uncached(uri_r, req, arrived)).await;
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
                let hit = CacheStatus::Hit;
                return Served::stored_as(c, uri_r.as_str(), self.context.as_ref(), hit);
            }
            // stale-while-revalidate: served now and refreshed behind the client's back,
            // through the same policy.
            (Some(c), Freshness::Stale, false) => {
                let this = self.clone();
                let asked = stored_spelling(Some(c), uri_r);
                let (key, client) = (key.to_string(), req.client);
                tokio::spawn(async move { this.revalidate(&key, &asked, client).await });
                self.stats.count_stale();
                let stale = CacheStatus::Stale;
                return Served::stored_as(c, uri_r.as_str(), self.context.as_ref(), stale);
            }
            _ => {}
        }
        Box::pin(self.refreshed(key, uri_r, req, cached, now, arrived)).await
    }

    /// Policy `none`: every request asks the archives and nothing is kept.
    async fn uncached(
        self: &Arc<Self>,
        uri_r: &UriR,
        req: Request,
        arrived: tokio::time::Instant,
    ) -> Served<V> {
        let fetch = self
            .fan_out(
                uri_r,
                req.deadline,
                arrived,
                req.ask_all,
                None,
                None,
                req.client,
            )
            .await;
        self.stats.count_miss();
        self.stats.count_decision(None, Action::NotStored);
        let mut served = Served::fresh(&fetch, self.context.as_ref(), CacheStatus::Miss);
        served.all_asked = req.ask_all;
        served
    }

    /// [`Self::answer`] when what is cached (`cached`, read at `now`) will not do: the answer of
    /// a refresh, joined or begun, or of a first store being written.
    async fn refreshed(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        req: Request,
        cached: Option<Arc<CachedTimeMap<V>>>,
        now: MementoDatetime,
        arrived: tokio::time::Instant,
    ) -> Served<V> {
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
            in_full: req.force,
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

    /// Whether an entry last checked at `checked_at`, stored fresh until `fresh_until`, may be
    /// answered as a HIT now without reading it (a huge entry's head, kept by the serving
    /// layer); false sends the request the ordinary way (stale, expired, or no store). Count
    /// it with [`Self::count_head_hit`].
    pub fn head_is_fresh(
        &self,
        checked_at: MementoDatetime,
        fresh_until: Option<MementoDatetime>,
    ) -> bool {
        let now = self.clock.now();
        self.store.is_some()
            && self
                .policy
                .freshness_checked(Some((checked_at, fresh_until)), now)
                == Freshness::Fresh
    }

    /// Counts a HIT answered from a head ([`Self::head_is_fresh`]).
    pub fn count_head_hit(&self) {
        self.stats.count_hit();
        self.stats.count_served(CacheStatus::Hit);
    }

    /// stale-while-revalidate's refresh behind the client: joins one in flight, and starts none
    /// when the entry was refreshed since this request read it. A refresh leaves `inflight`
    /// only after storing, so finding none in flight and then reading the store sees its entry.
    pub(super) async fn revalidate(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        client: Option<IpAddr>,
    ) {
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
            in_full: false,
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
    pub(super) fn may_force(&self, key: &str, now: MementoDatetime) -> bool {
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
    pub(super) async fn shared_refresh(
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
    pub(super) fn flight(
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
    /// the profiles learn from what they answered, as much as `client` may teach. With
    /// `prior` (a refresh), archives may be asked only for what is new.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fan_out(
        &self,
        uri_r: &UriR,
        deadline: Option<Duration>,
        arrived: tokio::time::Instant,
        ask_all: bool,
        prior: Option<Prior<'_>>,
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
            .fetch(uri_r, deadline, arrived, ask, prior, progress)
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
}
