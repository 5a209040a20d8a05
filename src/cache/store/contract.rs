//! What every tier is and offers: the value it stores ([`Cacheable`]), the [`Store`] trait with
//! its compare-and-set ([`PutIf`]), the serving layer's hook for values too heavy for memory
//! ([`Overflow`]) and a tier's counters. The tiers and the pair of them build on these.

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::cas::Observed;
use super::error::StoreError;

/// What a stored value must offer: serde, and an estimate of its heap size for the byte bound.
pub trait Cacheable: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Bumped whenever the serialized shape changes; entries written with another version are
    /// treated as misses (and dropped) rather than misread.
    const FORMAT_VERSION: u32;
    /// Approximate bytes this value keeps alive in memory; weighs it against the hot capacity.
    fn approx_bytes(&self) -> usize;
    /// The same number on every replica for the same value, and another for a value decided
    /// anew: what the shared tier's compare-and-set compares.
    fn revision(&self) -> u64;
}

/// One tier, or the tiered pair. `get` never fails: anything unreadable is a miss, because a
/// cache that errors is worse than one that asks the archives again. Storage only: who fans out
/// for a key across replicas is a [`FanOutLock`](super::lock::FanOutLock)'s to say.
///
/// The futures are spelled `impl Future + Send` (not `async fn`) so callers may hold them across
/// `tokio::spawn`. That makes the trait generic-only (not `dyn`), which is all we need.
pub trait Store<V: Cacheable>: Send + Sync {
    /// The value stored under `key`, if there is a readable one.
    fn get(&self, key: &str) -> impl Future<Output = Option<Arc<V>>> + Send;
    /// Stores `value` under `key`, replacing any previous one.
    fn put(&self, key: &str, value: Arc<V>) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Forgets `key`; removing an absent key is not an error.
    fn remove(&self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Counters for operators and tests; cheap enough to call on every scrape.
    fn stats(&self) -> TierStats;
    /// The value under `key` if it can be had without reading the disk (a tier in memory is
    /// all memory): a caller that holds a copy already need not pay seconds for another.
    fn get_in_memory(&self, key: &str) -> impl Future<Output = Option<Arc<V>>> + Send {
        self.get(key)
    }
    /// Makes everything stored so far durable; nothing to do for a tier in memory.
    fn flush(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(Ok(()))
    }
    /// Whether writes reach a tier other replicas write too, so one may land between reading
    /// an entry and writing what was decided against it.
    fn is_shared(&self) -> bool {
        false
    }
    /// Stores `value` under `key` unless another replica stored something since `expected`
    /// was seen there (compare-and-set): then nothing is written, and what is stored now
    /// comes back to decide against. Without a shared tier, or with it failing, a plain put.
    fn put_if(
        &self,
        key: &str,
        value: Arc<V>,
        _expected: Observed,
    ) -> impl Future<Output = Result<PutIf<V>, StoreError>> + Send {
        let put = self.put(key, value);
        async move { put.await.map(|()| PutIf::Stored) }
    }
    /// Stores `value` in this replica's own tiers only: an entry another replica stored.
    fn install(
        &self,
        key: &str,
        value: Arc<V>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.put(key, value)
    }
    /// The shared entry under `key` when it is not the one of revision `than` (None: any),
    /// installed locally; None when it is, when there is none, or with no shared tier.
    fn shared_newer(
        &self,
        _key: &str,
        _than: Option<u64>,
    ) -> impl Future<Output = Option<Arc<V>>> + Send {
        std::future::ready(None)
    }
}

/// What [`Store::put_if`] came to.
#[derive(Debug)]
pub enum PutIf<V> {
    /// Written (to the local tiers, and to the shared one if it answered).
    Stored,
    /// Another replica's write came first; nothing was written. `current` is what is stored
    /// now (None: nothing, or nothing readable), `seen` what to compare against next.
    Lost {
        current: Option<Arc<V>>,
        seen: Observed,
    },
}

/// What the serving layer keeps of a value too heavy for the hot tier (its renderings on disk and
/// a small head in memory), told of every change to a key so it never outlives the value it was
/// made of. Called in the order the tiers change; each call must return at once (real work goes
/// to a task of its own).
pub trait Overflow<V>: Send + Sync {
    /// A stamp to pass to [`Overflow::read`]: taken before the persistent tier is read, so a
    /// change to `key` while it is read is seen.
    fn stamp(&self, key: &str) -> u64;
    /// `key` now holds `value`, which the hot tier does not keep (None: a value it keeps, or
    /// none): whatever was kept of the old one goes.
    fn replace(&self, key: &str, value: Option<&Arc<V>>);
    /// The value of `key` it holds in memory for now, if any (one whose renderings are being
    /// made): served without reading the persistent tier.
    fn held(&self, _key: &str) -> Option<Arc<V>> {
        None
    }
    /// `value` was read from the persistent tier for `key` (the hot tier does not keep it):
    /// kept too if nothing is kept yet and `key` did not change since `stamp`.
    fn read(&self, key: &str, value: &Arc<V>, stamp: u64);
}

/// Counters of one tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Entries held (moka: may lag inserts until its pending tasks run).
    pub entries: u64,
    /// Hot: the weighted size (sum of weights). Persistent: the files' size on disk.
    pub bytes: u64,
    /// Entries found damaged (checksum, undecodable, lost blob) or of another format version
    /// since this process opened them.
    pub unreadable: u64,
    /// Persistent: writes that did not reach the disk (refused, failed or timed out).
    pub writes_failed: u64,
    /// Persistent: entries the record counted before this start that were gone on open.
    pub lost: u64,
    /// Persistent: damaged stores moved aside at open (0 or 1).
    pub moved_aside: u64,
}
