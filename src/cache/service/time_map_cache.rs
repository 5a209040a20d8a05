//! The cache service's state: the policy and settings, the store, who is asked, and the
//! refreshes in flight, with what is read of it from outside (stats, flush, the refreshes a
//! stopping server waits for). What the service does with a request is in `lookup` and the
//! modules beside it.

use super::served::{Served, Settings};
use crate::cache::cached::{CachedTimeMap, ServedView};
use crate::cache::fan_out::{Archives, Router, Settled};
use crate::cache::observe::ObservationLog;
use crate::cache::policy::Policy;
use crate::cache::stats::{CacheStats, StatsSnapshot};
use crate::cache::store::{Alone, FanOutLock, Invalidate, Store, Tiered};
use crate::clock::Clock;
use crate::timemap::model::MementoDatetime;
use futures::future::{BoxFuture, Shared};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(super) type SharedRefresh<V> = Shared<BoxFuture<'static, Option<Served<V>>>>;

/// A refresh in flight: its answer to come, and what its fan-out's archives answered so far.
pub(super) struct Flight<V> {
    pub(super) refresh: SharedRefresh<V>,
    pub(super) progress: tokio::sync::watch::Receiver<Settled>,
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
    pub(super) policy: Policy,
    pub(super) settings: Settings,
    pub(super) store: Option<S>,
    /// Who fans out for a key across replicas: this one alone, or the shared tier's claim.
    pub(super) fan_out_lock: Arc<dyn FanOutLock>,
    /// The fan-out (the upstream's).
    pub(super) archives: Arc<dyn Archives>,
    pub(super) clock: Arc<dyn Clock>,
    /// What the views are built with.
    pub(super) context: Arc<V::Context>,
    /// Every map below is by cache key ([`TimeMapCache::key_of`]), not by spelling.
    pub(super) inflight: Mutex<HashMap<String, Flight<V>>>,
    /// First stores and refreshes still being built or written after their answer went out, by
    /// URI-R, with the answer they gave (a first store's MISS, or the stored entry STALE): a
    /// request meanwhile is answered so instead of fanning out again.
    pub(super) settling: Arc<Mutex<HashMap<String, Served<V>>>>,
    /// Last client-forced refresh per URI-R, to bound `no-cache` refreshes.
    pub(super) forced: Mutex<HashMap<String, MementoDatetime>>,
    pub stats: CacheStats,
    pub(super) observe: Option<ObservationLog>,
    /// Which archives a fan-out asks, and what each fan-out teaches (routing's); None: every
    /// archive, and nothing learned (a cache built without a server around it).
    pub(super) router: Option<Arc<dyn Router>>,
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

/// Another replica stored or removed `key` (`[cache] shared`): this one forgets its local copy,
/// so its next lookup reads the shared tier.
impl<V: ServedView> Invalidate for TimeMapCache<Tiered<CachedTimeMap<V>>, V> {
    async fn forget_locally(&self, key: &str) {
        if let Some(store) = &self.store {
            store.forget_locally(key).await;
        }
    }
}
