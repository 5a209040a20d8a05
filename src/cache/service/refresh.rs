//! A refresh: the archives are asked, the policy decides against the entry stored now, and the
//! answer comes by the deadline + 250 ms even when deciding, writing and serving a huge entry
//! take seconds longer: past that time the stored entry is served STALE while the refresh lands
//! behind it.

use super::first_store::{ANSWER_AFTER_DEADLINE, BIG_TIMEMAP};
use super::{CacheStatus, CachedTimeMap, Served, ServedView, TimeMapCache};
use crate::cache::fan_out::{Prior, Progress};
use crate::cache::policy::{Action, Decision, Freshness, Match};
use crate::cache::store::{Cacheable, FanOutClaim, Store};
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use crate::uri_r::UriR;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a replica waiting for another's fan-out looks for its entry.
const CLAIM_POLL: Duration = Duration::from_millis(50);

/// What a refresh works on once the archives have answered.
struct Fetched<V> {
    fetch: Fetch,
    cached: Option<Arc<CachedTimeMap<V>>>,
    now: MementoDatetime,
    render: Option<TimeMapFormat>,
    /// Millions of mementos: the work runs on the blocking pool, not a runtime thread.
    big: bool,
}

/// Where a refresh starts from: when its request came and the entry the request read (None
/// when there was none). A refresh always runs to `[upstream] deadline`: a client's shorter
/// one decides only what that client is answered ([`TimeMapCache::within`]).
#[derive(Clone)]
pub(super) struct Begun<V> {
    pub at: tokio::time::Instant,
    pub cached: Option<Arc<CachedTimeMap<V>>>,
    /// An admin's refresh: asks the archives itself, never waits for another replica's.
    pub alone: bool,
    /// `Prefer: archives=all`: every archive is asked, whatever routing would skip.
    pub ask_all: bool,
    /// An admin's refresh: every archive asked for its whole listing, none incrementally.
    pub in_full: bool,
    /// The client whose request started it: what its fan-out teaches routing is credited to
    /// that client (None: the server's own).
    pub client: Option<std::net::IpAddr>,
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// Asks the archives, lets the policy decide against the entry stored now, stores what it
    /// says and returns what to serve. The deadline counts from the request's arrival, so the
    /// time spent reading a huge entry from disk is taken from the archives' time, not added.
    pub(super) async fn refresh(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        begun: Begun<V>,
        render: Option<TimeMapFormat>,
        progress: &Progress,
    ) -> Option<Served<V>> {
        let store = self.store.as_ref()?;
        let limit = self.archives.deadline();
        let due = begun.at + limit;
        let answer_by = due + ANSWER_AFTER_DEADLINE;
        // A huge entry read from disk has no view yet: built while the archives are asked, it
        // is ready to serve STALE if the refresh is not done in time.
        let stale_view = begun
            .cached
            .as_ref()
            .filter(|c| is_big(c) && !c.has_view())
            .map(|cached| {
                let (cached, context) = (cached.clone(), self.context.clone());
                tokio::task::spawn_blocking(move || prepare(&cached, &context, render))
            });
        // One fan-out across the replicas, cold or expired. Another replica's claim means its
        // entry is coming: waited for, by our own deadline, then served as a hit; if it does
        // not come, an expired entry is served STALE, and a cold URI-R is fetched here.
        let claim = if begun.alone {
            None
        } else {
            // Only replicas compare revisions (a claim is held or won only with a shared
            // tier): a server without one does not hash its entry.
            let cached_revision = begun
                .cached
                .as_ref()
                .filter(|_| store.is_shared())
                .map(|c| c.revision());
            match self.fan_out_lock.claim(key, limit).await {
                FanOutClaim::Held => {
                    let found = self
                        .await_other_replica(store, key, cached_revision, due)
                        .await;
                    if let Some(found) = found.or_else(|| begun.cached.clone()) {
                        return Some(self.served_replicas_entry(
                            &found,
                            uri_r.as_str(),
                            cached_revision,
                        ));
                    }
                    None
                }
                FanOutClaim::Won(token) => {
                    // Another replica may have stored its refresh just before this claim.
                    let newer = match cached_revision {
                        Some(_) => store.shared_newer(key, cached_revision).await,
                        None => None,
                    };
                    if let Some(found) = newer.filter(|f| self.is_fresh(f)) {
                        self.fan_out_lock.release(key, &token).await;
                        return Some(self.served_replicas_entry(
                            &found,
                            uri_r.as_str(),
                            cached_revision,
                        ));
                    }
                    Some(token)
                }
                FanOutClaim::Alone => None,
            }
        };
        // An admin's refresh asks every archive in full; any other asks what is new of
        // archives whose stored listing allows it.
        let prior = begun
            .cached
            .as_ref()
            .filter(|_| !begun.in_full)
            .map(|c| Prior {
                contributions: &c.entry.contributions,
                full_refresh: chrono::Duration::from_std(self.settings.full_refresh)
                    .unwrap_or(chrono::Duration::MAX),
            });
        let fetch = self
            .fan_out(
                uri_r,
                Some(limit),
                begun.at,
                begun.ask_all,
                prior,
                Some(progress),
                begun.client,
            )
            .await;
        let served = self
            .refresh_fetched(store, key, fetch, begun, answer_by, render, stale_view)
            .await;
        if let Some(token) = claim {
            self.fan_out_lock.release(key, &token).await;
        }
        served
    }

    /// The entry another replica is fetching for `key` (one not of revision `than`, what this
    /// replica holds), once it is in the shared tier, installed here; None when its claim ends
    /// without one (it failed or gave up) or `due` comes first.
    async fn await_other_replica(
        &self,
        store: &S,
        key: &str,
        than: Option<u64>,
        due: tokio::time::Instant,
    ) -> Option<Arc<CachedTimeMap<V>>> {
        while tokio::time::Instant::now() < due {
            if let Some(found) = store.shared_newer(key, than).await {
                return Some(found);
            }
            if !self.fan_out_lock.claimed(key).await {
                // Stored just before the claim was given back, or never.
                return store.shared_newer(key, than).await;
            }
            tokio::time::sleep_until((tokio::time::Instant::now() + CLAIM_POLL).min(due)).await;
        }
        None
    }

    /// An entry another replica stored (or ours, when its refresh did not land in time): a hit
    /// when it is fresh, else STALE.
    fn served_replicas_entry(
        &self,
        found: &CachedTimeMap<V>,
        uri_r: &str,
        ours: Option<u64>,
    ) -> Served<V> {
        let status = if self.is_fresh(found) && Some(found.revision()) != ours {
            self.stats.count_hit();
            CacheStatus::Hit
        } else {
            self.stats.count_stale();
            CacheStatus::Stale
        };
        Served::stored_as(found, uri_r, self.context.as_ref(), status)
    }

    fn is_fresh(&self, cached: &CachedTimeMap<V>) -> bool {
        let now = self.clock.now();
        self.policy.freshness(Some(&cached.entry), now) == Freshness::Fresh
    }

    /// [`Self::refresh`] once the archives have answered.
    #[allow(clippy::too_many_arguments)]
    async fn refresh_fetched(
        self: &Arc<Self>,
        store: &S,
        key: &str,
        fetch: Fetch,
        begun: Begun<V>,
        answer_by: tokio::time::Instant,
        render: Option<TimeMapFormat>,
        stale_view: Option<tokio::task::JoinHandle<()>>,
    ) -> Option<Served<V>> {
        let now = self.clock.now();
        // Read again: another refresh may have stored something while we were fetching. From
        // memory only when the request read an entry: reading a huge one from disk again would
        // cost seconds and a second copy, and a refresh racing ours can win either way.
        let cached = match begun.cached {
            Some(read) => Some(store.get_in_memory(key).await.unwrap_or(read)),
            None => store.get(key).await,
        };
        let Some(cached) = cached else {
            if fetch.answered() {
                return Some(self.first_store(key, fetch, now, answer_by, render).await);
            }
            // An outage with nothing cached: nothing to build or write.
            let fetched = Fetched {
                fetch,
                cached: None,
                now,
                render,
                big: false,
            };
            return Some(self.settle(key, fetched).await);
        };
        let big = fetch.len() >= BIG_TIMEMAP || is_big(&cached);
        let fetched = Fetched {
            fetch,
            cached: Some(cached.clone()),
            now,
            render,
            big,
        };
        // Set under the `settling` lock once the refresh is over, so a STALE answer is put there
        // only while the refresh still runs (it then takes it out).
        let done = Arc::new(AtomicBool::new(false));
        let mut task = {
            let (this, key, done) = (self.clone(), key.to_string(), done.clone());
            tokio::spawn(async move {
                let served = this.settle(&key, fetched).await;
                let _settling = this.unsettle(&key, CacheStatus::Stale);
                done.store(true, Ordering::SeqCst);
                served
            })
        };
        let late = match tokio::time::timeout_at(answer_by, &mut task).await {
            Ok(Ok(served)) => return Some(served),
            // The refresh panicked: what is stored is all there is.
            Ok(Err(_)) => false,
            Err(_) => true,
        };
        if let Some(view) = stale_view {
            let _ = view.await;
        }
        let stale = Served::stored(&cached, self.context.as_ref(), CacheStatus::Stale);
        if late {
            let mut settling = self.settling.lock().unwrap_or_else(|p| p.into_inner());
            if !done.load(Ordering::SeqCst) {
                settling.insert(key.to_string(), stale.clone());
            }
        }
        self.stats.count_stale();
        Some(stale)
    }

    /// The policy's decision on a fetch, carried out: the entry written, and the answer with its
    /// view ready.
    async fn settle(self: &Arc<Self>, key: &str, fetched: Fetched<V>) -> Served<V> {
        let Fetched {
            fetch,
            cached,
            now,
            render,
            big,
        } = fetched;
        let policy = self.policy.clone();
        // What each archive answered, should deciding fail.
        let answers = fetch.answers();
        // A write to a shared tier may lose to another replica's: the fetch is then decided
        // again, so it is kept whole until the write lands.
        let shared = self.store.as_ref().is_some_and(|s| s.is_shared());
        let decide = {
            let cached = cached.clone();
            move || {
                let mut fetch = fetch;
                let decision = policy.decide(cached.as_ref().map(|c| &c.entry), &fetch, now);
                if let Decision::Store { .. } = decision {
                    if !shared {
                        // The entry holds the fetch now: its mementos go before the entry is
                        // written, so a million-memento refresh does not hold them twice.
                        fetch = fetch.answers();
                    }
                }
                (decision, fetch)
            }
        };
        let (decision, fetch) = if big {
            match tokio::task::spawn_blocking(decide).await {
                Ok(decided) => decided,
                // Deciding panicked: keep what is stored, as a panicked refresh does.
                Err(_) => return self.unchanged(cached, &answers),
            }
        } else {
            decide()
        };
        let status = if cached.is_some() {
            CacheStatus::Refresh
        } else {
            CacheStatus::Miss
        };
        if cached.is_none() {
            self.stats.count_miss();
        }
        let (mut case, action) = (decision.case(), decision.action());
        // What the answer reports: the policy's action, unless the write it called for failed.
        let mut reported = action;
        let serving = match (decision, &cached) {
            (Decision::Store { entry, .. }, _) => {
                let mut value = Arc::new(CachedTimeMap::new(entry));
                if let Some(store) = &self.store {
                    let against = cached.as_ref();
                    let written = self
                        .write_decided(store, key, value.clone(), against, Some(&fetch), now)
                        .await;
                    match written {
                        Ok(written) => {
                            if let Some((c, a)) = written.redecided {
                                (case, reported) = (c, a);
                            }
                            value = written.value;
                        }
                        Err(e) => {
                            // Serving still works (from memory until the disk is back); the
                            // answer must not claim a durable store that did not happen.
                            tracing::error!(uri_r = %value.entry.uri_r, error = %e, "cannot store a TimeMap");
                            reported = Action::NotStored;
                        }
                    }
                }
                Some((value, status))
            }
            (Decision::Unavailable { serve_stale: true }, Some(c)) => {
                self.stats.count_stale();
                Some((c.clone(), CacheStatus::Stale))
            }
            // An outage with nothing to fall back on, or policy `none`: the fetch itself is
            // all there is.
            (Decision::Unavailable { .. } | Decision::Pass, _) => None,
        };
        self.stats.count_decision(case, reported);
        let mut served = match serving {
            Some((value, status)) => {
                if big {
                    let (value, context) = (value.clone(), self.context.clone());
                    let _ = tokio::task::spawn_blocking(move || prepare(&value, &context, render))
                        .await;
                }
                Served::stored(&value, self.context.as_ref(), status)
            }
            None => Served::fresh(&fetch, self.context.as_ref(), status),
        };
        if served.status != CacheStatus::Stale && self.policy.caches() {
            served.case = case;
            served.action = Some(reported);
        }
        served
    }

    /// The answer when deciding failed: what is stored, else what each archive answered.
    fn unchanged(&self, cached: Option<Arc<CachedTimeMap<V>>>, answers: &Fetch) -> Served<V> {
        match cached {
            Some(c) => Served::stored(&c, self.context.as_ref(), CacheStatus::Stale),
            None => Served::fresh(answers, self.context.as_ref(), CacheStatus::Miss),
        }
    }
}

/// Whether an entry is big enough that working on it belongs on the blocking pool.
fn is_big<V: ServedView>(cached: &CachedTimeMap<V>) -> bool {
    cached.entry.count(Match::Loose) >= BIG_TIMEMAP
}

/// Builds an entry's view and, if the format is known, its body: seconds of work for a huge
/// entry, done before its answer is due rather than in the handler.
fn prepare<V: ServedView>(
    cached: &CachedTimeMap<V>,
    context: &V::Context,
    render: Option<TimeMapFormat>,
) {
    let view = cached.view(context);
    if let Some(format) = render {
        view.prepare(format);
    }
}
