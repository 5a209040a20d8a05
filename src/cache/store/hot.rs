//! The in-memory tier: moka, bounded by the bytes its values weigh.

use std::sync::Arc;

use super::{Cacheable, Store, StoreError, TierStats};

/// The in-memory tier: a moka cache bounded by the summed `approx_bytes()` of its values.
/// Cloning is cheap and shares the cache (moka's handle is already shared, never wrap it in a
/// mutex).
pub struct HotTier<V> {
    cache: moka::future::Cache<String, Arc<V>>,
    capacity: u64,
}

impl<V> Clone for HotTier<V> {
    fn clone(&self) -> Self {
        Self {
            cache: self.cache.clone(),
            capacity: self.capacity,
        }
    }
}

impl<V: Cacheable> HotTier<V> {
    /// A hot tier holding at most about `capacity_bytes` of values (plus their keys).
    pub fn new(capacity_bytes: u64) -> Self {
        let cache = moka::future::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|key: &String, value: &Arc<V>| weight(key, value.as_ref()))
            .build();
        Self {
            cache,
            capacity: capacity_bytes,
        }
    }

    /// The byte bound this tier was built with.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Whether this tier keeps `value` under `key`: not when it weighs more than the whole
    /// capacity (see [`Store::put`] below). Such a value is served from the persistent tier.
    pub fn keeps(&self, key: &str, value: &V) -> bool {
        u64::from(weight(key, value)) <= self.capacity
    }

    /// Applies moka's deferred bookkeeping (admission, eviction, counts). moka does this lazily
    /// on later operations; call it before reading `stats()` when exact numbers matter.
    pub async fn run_pending_tasks(&self) {
        self.cache.run_pending_tasks().await;
    }
}

/// moka weighs entries in u32; a value too large for that weighs the maximum, which is already
/// far above any sensible hot capacity, so it is refused rather than under-counted.
fn weight<V: Cacheable>(key: &str, value: &V) -> u32 {
    u32::try_from(value.approx_bytes().saturating_add(key.len())).unwrap_or(u32::MAX)
}

impl<V: Cacheable> Store<V> for HotTier<V> {
    async fn get(&self, key: &str) -> Option<Arc<V>> {
        self.cache.get(key).await
    }

    async fn put(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        // A value heavier than the whole capacity is not kept: moka would accept it and drop
        // it only at its next bookkeeping, which on an idle server may never come, pinning
        // (measured) 800 MiB for a 2-million-memento TimeMap. The persistent tier has it; the
        // key's older value must go, or it would be served instead of the new one.
        if !self.keeps(key, value.as_ref()) {
            self.cache.invalidate(key).await;
            return Ok(());
        }
        self.cache.insert(key.to_owned(), value).await;
        Ok(())
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.cache.invalidate(key).await;
        Ok(())
    }

    fn stats(&self) -> TierStats {
        TierStats {
            entries: self.cache.entry_count(),
            bytes: self.cache.weighted_size(),
            ..TierStats::default()
        }
    }
}
