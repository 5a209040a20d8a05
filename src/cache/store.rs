//! Where cached values live: a byte-bounded hot tier in memory (moka) in front of a durable
//! tier on disk (sled), all behind one `Store` trait, generic over the stored value.
//!
//! Freshness is not decided here: values carry their own `fresh_until` and the policy reads it.
//! So moka's expiry is deliberately unused and its size limit is only the memory bound.

use std::future::Future;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a stored value must offer: serde, and an estimate of its heap size for the byte bound.
pub trait Cacheable: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Bumped whenever the serialized shape changes; entries written with another version are
    /// treated as misses (and dropped) rather than misread.
    const FORMAT_VERSION: u32;
    /// Approximate bytes this value keeps alive in memory; weighs it against the hot capacity.
    fn approx_bytes(&self) -> usize;
}

/// One tier, or the tiered pair. `get` never fails: anything unreadable is a miss, because a
/// cache that errors is worse than one that asks the archives again.
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
}

/// Counters of one tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Entries held (moka: may lag inserts until its pending tasks run).
    pub entries: u64,
    /// Hot: the weighted size (sum of weights). Persistent: the files' size on disk.
    pub bytes: u64,
    /// Entries found undecodable or of another format version since this process opened them.
    pub unreadable: u64,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be created or the database in it could not be opened.
    #[error("cannot open the cache store at {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    /// The persistent tier failed to read, write or flush.
    #[error("cache store I/O failed: {0}")]
    Sled(String),
    /// The value could not be serialized.
    #[error("cannot encode a cache entry: {0}")]
    Encode(String),
}

/// Opens the tiered store: sled under `path` (created if missing) and a hot tier of
/// `hot_capacity` bytes. Blocks while sled recovers its log, so call it at startup (or from
/// `spawn_blocking`), not on a request path.
pub fn open<V: Cacheable>(path: &Path, hot_capacity: u64) -> Result<Tiered<V>, StoreError> {
    let persistent = PersistentTier::open(path)?;
    Ok(Tiered::new(HotTier::new(hot_capacity), persistent))
}

// ---------------------------------------------------------------------------------------------
// Hot tier
// ---------------------------------------------------------------------------------------------

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
        // A value heavier than the whole capacity is accepted here and dropped by moka's
        // admission later; the persistent tier still has it.
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
            unreadable: 0,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Persistent tier
// ---------------------------------------------------------------------------------------------

/// sled's page cache defaults to 1 GiB, which would silently dwarf the hot tier's bound. The hot
/// tier is the memory we mean to spend; sled only needs enough for its index and recent writes.
pub const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// Keys are URI-Rs of up to 8 KiB; logging all of that on every warning would bury the reason.
const LOGGED_KEY_CHARS: usize = 200;

/// What is written to disk: versioned, JSON so an operator can read it with any sled dump.
#[derive(Serialize)]
struct EnvelopeOut<'a, V> {
    v: u32,
    value: &'a V,
}

#[derive(Deserialize)]
struct EnvelopeIn<V> {
    v: u32,
    value: V,
}

/// Just the version, to say *why* an envelope did not decode as the current type.
#[derive(Deserialize)]
struct EnvelopeVersion {
    v: u32,
}

#[derive(Default)]
struct Counters {
    /// Kept alongside sled because `sled::Tree::len` is a full scan; maintained from the
    /// previous-value results of sled's atomic insert/remove, so it stays exact.
    entries: AtomicU64,
    unreadable: AtomicU64,
}

impl Counters {
    fn entry_gone(&self) {
        // Saturating: the count can't be negative, whatever happens.
        let _ = self
            .entries
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
    }
}

/// The on-disk tier: one sled database in a directory. Survives restarts (and `kill -9`: `put`
/// and `remove` return only after sled has flushed). Cloning is cheap and shares the database.
///
/// sled calls can block on file I/O (the fsync of every put, large values, reads that miss its
/// page cache), so they and the JSON (de)serialisation run on tokio's blocking pool.
pub struct PersistentTier<V> {
    db: sled::Db,
    counters: Arc<Counters>,
    _value: PhantomData<fn() -> V>,
}

impl<V> Clone for PersistentTier<V> {
    fn clone(&self) -> Self {
        Self {
            db: self.db.clone(),
            counters: Arc::clone(&self.counters),
            _value: PhantomData,
        }
    }
}

/// How long `open` waits for a lock held by a store being dropped in this process. sled 0.34
/// releases its file lock only when the last of its background writes lets go of the file
/// (spacejam/sled#1289): usually within milliseconds, later when those writes queue behind other
/// stores' fsyncs on a busy disk (tests drop and reopen stores while others write). Another
/// tmproxy holding the directory is reported after this wait, so startup against a held
/// directory takes this long to fail.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The pause between two attempts at the lock.
const LOCK_POLL: Duration = Duration::from_millis(50);

impl<V: Cacheable> PersistentTier<V> {
    /// Opens (creating if needed) the database in directory `path`. Blocking: sled replays its
    /// log and we count the entries once (a full scan), so call it at startup.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_waiting(path, LOCK_WAIT)
    }

    /// [`PersistentTier::open`], waiting at most `lock_wait` for a held lock to be released.
    fn open_waiting(path: &Path, lock_wait: Duration) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(path)
            .map_err(|e| open_error(format!("cannot create the directory: {e}")))?;
        let started = Instant::now();
        let mut logged = false;
        let db = loop {
            let opened = sled::Config::new()
                .path(path)
                .cache_capacity(SLED_CACHE_BYTES)
                .open();
            match opened {
                Err(sled::Error::Io(io))
                    if is_lock_conflict(&io) && started.elapsed() < lock_wait =>
                {
                    if !logged && started.elapsed() >= Duration::from_secs(1) {
                        tracing::info!(path = %path.display(), wait = ?lock_wait, "the cache database is locked; waiting for it");
                        logged = true;
                    }
                    std::thread::sleep(LOCK_POLL);
                }
                other => break other,
            }
        }
        .map_err(|e| match e {
            // The usual cause: another process (or an undropped store) holds the lock.
            sled::Error::Io(io) if is_lock_conflict(&io) => {
                open_error(format!(
                    "the database is still locked after {lock_wait:?}, is another tmproxy using it? ({io})"
                ))
            }
            other => open_error(other.to_string()),
        })?;
        let counters = Counters {
            entries: AtomicU64::new(db.len() as u64),
            unreadable: AtomicU64::new(0),
        };
        Ok(Self {
            db,
            counters: Arc::new(counters),
            _value: PhantomData,
        })
    }
}

/// Whether sled refused to open because another handle holds the directory's lock. sled 0.34
/// wraps the `flock` EWOULDBLOCK in an `ErrorKind::Other` error with this message, so the kind
/// alone does not tell (an earlier version of this check looked only at the kind and so never
/// retried).
fn is_lock_conflict(io: &std::io::Error) -> bool {
    io.kind() == std::io::ErrorKind::WouldBlock
        || io.to_string().starts_with("could not acquire lock on")
}

impl<V> PersistentTier<V> {
    /// Makes everything written so far durable, from tokio's blocking pool.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || flush(&db))
            .await
            .map_err(task_error)?
    }
}

/// Makes everything written so far durable (write + fsync of sled's log). Blocking.
///
/// Deliberately not `flush_async`: in sled 0.34 that runs the flush on sled's own small thread
/// pool, and the log write it waits for is queued on the same pool, so about 7 concurrent
/// flushes park every pool thread and nothing ever writes (spacejam/sled#1308, #1241; we hit it
/// in `concurrent_puts_and_gets_complete`). Flushing from tokio's blocking pool keeps sled's
/// pool free for the write.
fn flush(db: &sled::Db) -> Result<(), StoreError> {
    db.flush()
        .map(|_| ())
        .map_err(|e| StoreError::Sled(format!("flush: {e}")))
}

/// The outcome of reading one key, computed on the blocking pool.
enum Read<V> {
    Hit(V),
    Miss,
    Unreadable,
}

/// Decodes an envelope, or says in words why it can't be used.
fn decode<V: Cacheable>(bytes: &[u8]) -> Result<V, String> {
    match serde_json::from_slice::<EnvelopeIn<V>>(bytes) {
        Ok(envelope) if envelope.v == V::FORMAT_VERSION => Ok(envelope.value),
        Ok(envelope) => Err(version_mismatch::<V>(envelope.v)),
        // Parse only the version on the slow path, to tell "older format" from "garbage".
        Err(err) => match serde_json::from_slice::<EnvelopeVersion>(bytes) {
            Ok(header) if header.v != V::FORMAT_VERSION => Err(version_mismatch::<V>(header.v)),
            _ => Err(format!("undecodable entry: {err}")),
        },
    }
}

fn version_mismatch<V: Cacheable>(found: u32) -> String {
    format!(
        "entry has format version {found}, this build reads version {}",
        V::FORMAT_VERSION
    )
}

fn key_for_log(key: &str) -> &str {
    match key.char_indices().nth(LOGGED_KEY_CHARS) {
        Some((cut, _)) => &key[..cut],
        None => key,
    }
}

fn read_entry<V: Cacheable>(db: &sled::Db, counters: &Counters, key: &str) -> Read<V> {
    let bytes = match db.get(key.as_bytes()) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Read::Miss,
        Err(e) => {
            // Not the entry's fault, so not counted as unreadable and not removed.
            tracing::warn!(key = key_for_log(key), error = %e, "cache store read failed; treating as a miss");
            return Read::Miss;
        }
    };
    match decode::<V>(&bytes) {
        Ok(value) => Read::Hit(value),
        Err(reason) => {
            tracing::warn!(
                key = key_for_log(key),
                reason,
                "unreadable cache entry; treating as a miss and removing it"
            );
            counters.unreadable.fetch_add(1, Ordering::Relaxed);
            // Remove only if it is still the bytes we judged: a concurrent put may already have
            // replaced it with a good value, which must not be thrown away.
            match db.compare_and_swap(key.as_bytes(), Some(&bytes), None::<&[u8]>) {
                Ok(Ok(())) => counters.entry_gone(),
                Ok(Err(_replaced)) => {}
                Err(e) => {
                    tracing::warn!(key = key_for_log(key), error = %e, "could not remove an unreadable cache entry");
                }
            }
            Read::Unreadable
        }
    }
}

fn task_error(e: tokio::task::JoinError) -> StoreError {
    StoreError::Sled(format!("storage task failed: {e}"))
}

impl<V: Cacheable> Store<V> for PersistentTier<V> {
    async fn get(&self, key: &str) -> Option<Arc<V>> {
        let db = self.db.clone();
        let counters = Arc::clone(&self.counters);
        let owned_key = key.to_owned();
        let read =
            tokio::task::spawn_blocking(move || read_entry::<V>(&db, &counters, &owned_key)).await;
        match read {
            Ok(Read::Hit(value)) => Some(Arc::new(value)),
            Ok(Read::Miss | Read::Unreadable) => None,
            Err(e) => {
                tracing::warn!(key = key_for_log(key), error = %e, "cache store read task failed; treating as a miss");
                None
            }
        }
    }

    async fn put(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        let db = self.db.clone();
        let counters = Arc::clone(&self.counters);
        let owned_key = key.to_owned();
        tokio::task::spawn_blocking(move || {
            let envelope = EnvelopeOut {
                v: V::FORMAT_VERSION,
                value: value.as_ref(),
            };
            let bytes =
                serde_json::to_vec(&envelope).map_err(|e| StoreError::Encode(e.to_string()))?;
            let previous = db
                .insert(owned_key.as_bytes(), bytes)
                .map_err(|e| StoreError::Sled(format!("insert: {e}")))?;
            if previous.is_none() {
                counters.entries.fetch_add(1, Ordering::Relaxed);
            }
            // Durable before we return: a response already sent must survive a kill -9.
            // Concurrent flushes wait on the same log writes rather than each writing its own.
            flush(&db)
        })
        .await
        .map_err(task_error)?
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        let db = self.db.clone();
        let counters = Arc::clone(&self.counters);
        let owned_key = key.to_owned();
        tokio::task::spawn_blocking(move || {
            let previous = db
                .remove(owned_key.as_bytes())
                .map_err(|e| StoreError::Sled(format!("remove: {e}")))?;
            if previous.is_some() {
                counters.entry_gone();
            }
            // Durable too, so a purge is not undone by a crash.
            flush(&db)
        })
        .await
        .map_err(task_error)?
    }

    fn stats(&self) -> TierStats {
        // size_on_disk is a few metadata syscalls, cheap enough to run inline.
        let bytes = self.db.size_on_disk().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot measure the cache store's size on disk");
            0
        });
        TierStats {
            entries: self.counters.entries.load(Ordering::Relaxed),
            bytes,
            unreadable: self.counters.unreadable.load(Ordering::Relaxed),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The pair
// ---------------------------------------------------------------------------------------------

/// The hot tier in front of the persistent one. The persistent tier is the truth; the hot tier
/// holds a subset of it for speed.
///
/// Racing writers to one key can leave the tiers briefly disagreeing (e.g. a miss promoting the
/// old value while a `remove` runs): the hot tier then serves a value that *was* stored, until
/// it is evicted or overwritten. That is acceptable because freshness is judged from the value's
/// own `fresh_until`, never from its presence.
pub struct Tiered<V> {
    hot: HotTier<V>,
    persistent: PersistentTier<V>,
}

impl<V> Clone for Tiered<V> {
    fn clone(&self) -> Self {
        Self {
            hot: self.hot.clone(),
            persistent: self.persistent.clone(),
        }
    }
}

impl<V: Cacheable> Tiered<V> {
    /// Pairs two tiers; [`open`] is the usual way in.
    pub fn new(hot: HotTier<V>, persistent: PersistentTier<V>) -> Self {
        Self { hot, persistent }
    }

    /// The hot tier, for its own stats.
    pub fn hot(&self) -> &HotTier<V> {
        &self.hot
    }

    /// The persistent tier, for its own stats.
    pub fn persistent(&self) -> &PersistentTier<V> {
        &self.persistent
    }
}

impl<V: Cacheable> Store<V> for Tiered<V> {
    async fn get(&self, key: &str) -> Option<Arc<V>> {
        if let Some(value) = self.hot.get(key).await {
            return Some(value);
        }
        let value = self.persistent.get(key).await?;
        // Promote, so the next request (e.g. the first after a restart) is served from memory.
        // The hot put cannot fail.
        let _ = self.hot.put(key, Arc::clone(&value)).await;
        Some(value)
    }

    async fn put(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        // Disk first: only a durable value may be served from memory as "cached".
        if let Err(e) = self.persistent.put(key, Arc::clone(&value)).await {
            // The disk may now hold either value; drop the hot copy so the next get reads
            // whichever it is instead of keeping the tiers apart.
            let _ = self.hot.remove(key).await;
            return Err(e);
        }
        self.hot.put(key, value).await
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        let on_disk = self.persistent.remove(key).await;
        // Even if the disk failed, stop serving it from memory.
        self.hot.remove(key).await?;
        on_disk
    }

    /// The persistent tier's stats: it holds every entry (the hot tier a subset). Use
    /// [`Tiered::hot`] for memory use.
    fn stats(&self) -> TierStats {
        self.persistent.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tempfile::TempDir;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note {
        body: String,
        fresh_until: i64,
    }

    impl Cacheable for Note {
        const FORMAT_VERSION: u32 = 1;
        fn approx_bytes(&self) -> usize {
            std::mem::size_of::<Self>() + self.body.len()
        }
    }

    fn note(body: impl Into<String>) -> Arc<Note> {
        Arc::new(Note {
            body: body.into(),
            fresh_until: 1_700_000_000,
        })
    }

    fn open_in(dir: &TempDir, hot_capacity: u64) -> Tiered<Note> {
        open(dir.path(), hot_capacity).expect("open store")
    }

    #[tokio::test]
    async fn put_get_remove_through_the_tiers() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 1 << 20);
        let key = "http://example.com/";

        assert!(store.get(key).await.is_none());
        store.put(key, note("first")).await.expect("put");
        assert_eq!(store.get(key).await.expect("hit").body, "first");
        assert!(store.hot().get(key).await.is_some());
        assert!(store.persistent().get(key).await.is_some());

        store.put(key, note("second")).await.expect("overwrite");
        assert_eq!(store.get(key).await.expect("hit").body, "second");
        assert_eq!(store.stats().entries, 1, "an overwrite is not a new entry");

        store.remove(key).await.expect("remove");
        assert!(store.get(key).await.is_none());
        assert!(store.hot().get(key).await.is_none());
        assert!(store.persistent().get(key).await.is_none());
        assert_eq!(store.stats().entries, 0);
        store
            .remove(key)
            .await
            .expect("removing an absent key is fine");
    }

    #[tokio::test]
    async fn a_reopened_store_serves_from_disk_and_promotes() {
        let dir = TempDir::new().expect("tempdir");
        let key = "http://example.com/page?q=1";
        {
            let store = open_in(&dir, 1 << 20);
            store.put(key, note("kept")).await.expect("put");
        }
        let store = open_in(&dir, 1 << 20);
        assert_eq!(store.stats().entries, 1, "counted at open");
        assert!(
            store.hot().get(key).await.is_none(),
            "a fresh process starts cold"
        );
        assert_eq!(store.get(key).await.expect("from disk").body, "kept");
        store.hot().run_pending_tasks().await;
        assert_eq!(
            store.hot().get(key).await.expect("promoted").body,
            "kept",
            "the disk hit was promoted into memory"
        );
    }

    #[tokio::test]
    async fn the_hot_tier_stays_within_its_byte_capacity() {
        let dir = TempDir::new().expect("tempdir");
        let capacity: u64 = 64 * 1024;
        let store = open_in(&dir, capacity);
        let body = "x".repeat(1000);
        let count = 10 * capacity as usize / 1000;
        for i in 0..count {
            store
                .put(&format!("http://example.com/{i}"), note(body.clone()))
                .await
                .expect("put");
        }
        store.hot().run_pending_tasks().await;
        let hot = store.hot().stats();
        assert!(
            hot.bytes <= capacity,
            "hot tier weighs {} > {capacity}",
            hot.bytes
        );
        assert!(hot.entries > 0, "the hot tier still holds something");
        assert!((hot.entries as usize) < count);
        assert_eq!(store.persistent().stats().entries, count as u64);
        for i in 0..count {
            assert!(
                store
                    .persistent()
                    .get(&format!("http://example.com/{i}"))
                    .await
                    .is_some(),
                "entry {i} lost from disk"
            );
        }
    }

    async fn assert_unreadable_is_a_counted_miss(raw: &[u8]) {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 1 << 20);
        let key = "http://example.com/broken";
        store
            .put("http://example.com/fine", note("ok"))
            .await
            .expect("put");
        store
            .persistent()
            .db
            .insert(key.as_bytes(), raw)
            .expect("raw insert");
        // The count was maintained by our own puts; this raw write bypassed it.
        store
            .persistent()
            .counters
            .entries
            .store(2, Ordering::Relaxed);

        assert!(store.get(key).await.is_none());
        let stats = store.stats();
        assert_eq!(stats.unreadable, 1);
        assert_eq!(
            stats.entries, 1,
            "the unreadable entry is no longer counted"
        );
        assert!(
            store
                .persistent()
                .db
                .get(key.as_bytes())
                .expect("sled get")
                .is_none(),
            "the unreadable entry was removed"
        );
        assert!(store.get(key).await.is_none());
        assert_eq!(store.stats().unreadable, 1, "not re-read once removed");
        assert_eq!(
            store
                .get("http://example.com/fine")
                .await
                .expect("hit")
                .body,
            "ok"
        );
    }

    #[tokio::test]
    async fn garbage_bytes_are_a_counted_miss_and_removed() {
        assert_unreadable_is_a_counted_miss(b"\x00\xffnot json at all").await;
        assert_unreadable_is_a_counted_miss(br#"{"v":1,"value":{"body":3}}"#).await;
    }

    #[tokio::test]
    async fn another_format_version_is_a_counted_miss_and_removed() {
        assert_unreadable_is_a_counted_miss(
            br#"{"v":99,"value":{"body":"from the future","fresh_until":0}}"#,
        )
        .await;
        assert_unreadable_is_a_counted_miss(br#"{"v":0,"value":"old shape"}"#).await;
    }

    #[test]
    fn decode_says_why() {
        let other = decode::<Note>(br#"{"v":7,"value":{"body":"b","fresh_until":0}}"#)
            .expect_err("other version");
        assert!(other.contains("format version 7"), "{other}");
        let garbage = decode::<Note>(b"nope").expect_err("garbage");
        assert!(garbage.contains("undecodable"), "{garbage}");
        let good = decode::<Note>(br#"{"v":1,"value":{"body":"b","fresh_until":5}}"#)
            .expect("current version");
        assert_eq!(good.fresh_until, 5);
    }

    #[tokio::test]
    async fn the_envelope_on_disk_is_readable_json() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 1 << 20);
        store.put("k", note("hello")).await.expect("put");
        let raw = store
            .persistent()
            .db
            .get(b"k")
            .expect("sled get")
            .expect("present");
        let json: serde_json::Value = serde_json::from_slice(&raw).expect("json");
        assert_eq!(json["v"], 1);
        assert_eq!(json["value"]["body"], "hello");
    }

    #[tokio::test]
    async fn a_value_larger_than_the_hot_tier_is_served_from_disk() {
        let dir = TempDir::new().expect("tempdir");
        let capacity: u64 = 4 * 1024;
        let store = open_in(&dir, capacity);
        let key = "http://example.com/huge";
        store
            .put(key, note("y".repeat(10 * capacity as usize)))
            .await
            .expect("put");
        store.hot().run_pending_tasks().await;
        assert!(store.hot().stats().bytes <= capacity);
        let value = store.get(key).await.expect("served from disk");
        assert_eq!(value.body.len(), 10 * capacity as usize);
        store.hot().run_pending_tasks().await;
        assert!(store.hot().stats().bytes <= capacity);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_puts_and_gets_complete() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 256 * 1024);
        let mut tasks = Vec::new();
        for i in 0..50 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let own = format!("http://example.com/own/{i}");
                let shared = format!("http://example.com/shared/{}", i % 5);
                for round in 0..5 {
                    store
                        .put(&own, note(format!("{i}-{round}")))
                        .await
                        .expect("put own");
                    store
                        .put(&shared, note(format!("{i}-{round}")))
                        .await
                        .expect("put shared");
                    assert_eq!(
                        store.get(&own).await.expect("own").body,
                        format!("{i}-{round}")
                    );
                    assert!(store.get(&shared).await.is_some());
                }
                if i % 10 == 0 {
                    store.remove(&own).await.expect("remove");
                    assert!(store.persistent().get(&own).await.is_none());
                }
            }));
        }
        for task in tasks {
            task.await.expect("task completed");
        }
        // 45 own keys left after 5 removals, plus 5 shared ones.
        assert_eq!(store.stats().entries, 50);
    }

    #[test]
    fn open_names_the_path_when_it_cannot_create_it() {
        let dir = TempDir::new().expect("tempdir");
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"not a directory").expect("write");
        let path = file.join("store");
        let err = open::<Note>(&path, 1024)
            .err()
            .expect("cannot create a directory under a file");
        assert!(matches!(err, StoreError::Open { .. }));
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_second_open_of_a_held_directory_is_a_clear_error() {
        let dir = TempDir::new().expect("tempdir");
        let _held = open_in(&dir, 1024);
        // A short wait: a lock that is held, not being released, is never going to free up.
        let err = PersistentTier::<Note>::open_waiting(dir.path(), Duration::from_millis(200))
            .err()
            .expect("the directory is locked");
        let message = err.to_string();
        assert!(
            message.contains(&dir.path().display().to_string()),
            "{message}"
        );
        assert!(message.contains("another tmproxy"), "{message}");
    }

    #[test]
    fn open_waits_for_a_lock_that_is_being_released() {
        let dir = TempDir::new().expect("tempdir");
        let held = PersistentTier::<Note>::open(dir.path()).expect("first open");
        // Let go of the lock while the second open is already waiting for it.
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let reopened = PersistentTier::<Note>::open_waiting(dir.path(), Duration::from_secs(30));
        releaser.join().expect("releaser thread");
        assert!(reopened.is_ok(), "{:?}", reopened.err());
    }

    #[test]
    fn only_the_lock_error_counts_as_a_lock_conflict() {
        use std::io::{Error, ErrorKind};
        let sleds = Error::other("could not acquire lock on \"/tmp/x/db\": Os { code: 11 }");
        assert!(is_lock_conflict(&sleds));
        assert!(is_lock_conflict(&Error::from(ErrorKind::WouldBlock)));
        assert!(!is_lock_conflict(&Error::from(ErrorKind::PermissionDenied)));
        assert!(!is_lock_conflict(&Error::other("disk full")));
    }

    /// Timing, not a check: `cargo test --release --lib cache::store -- --ignored --nocapture`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "timing; run manually in --release"]
    async fn timing_hot_get_and_durable_put() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 64 << 20);
        let key = "http://example.com/some/fairly/typical/uri-r?with=query";
        store.put(key, note("v".repeat(2000))).await.expect("put");

        let gets = 100_000;
        let started = Instant::now();
        for _ in 0..gets {
            assert!(store.get(key).await.is_some());
        }
        let per_get = started.elapsed() / gets;
        println!("tiered get, hot hit: {per_get:?} each over {gets}");

        let started = Instant::now();
        for _ in 0..gets {
            assert!(store.hot().get(key).await.is_some());
        }
        println!("hot tier get: {:?} each", started.elapsed() / gets);

        let cold = "http://example.com/cold";
        store
            .persistent()
            .put(cold, note("c".repeat(2000)))
            .await
            .expect("put");
        let reads = 2_000;
        let started = Instant::now();
        for _ in 0..reads {
            assert!(store.persistent().get(cold).await.is_some());
        }
        println!(
            "persistent get (2 KB, spawn_blocking + decode): {:?} each",
            started.elapsed() / reads
        );

        let big = note("p".repeat(100 * 1024));
        let puts = 50;
        let started = Instant::now();
        for i in 0..puts {
            store
                .put(&format!("http://example.com/big/{i}"), Arc::clone(&big))
                .await
                .expect("put");
        }
        println!(
            "durable tiered put of 100 KB: {:?} each over {puts}",
            started.elapsed() / puts
        );

        let started = Instant::now();
        let mut tasks = Vec::new();
        for i in 0..puts {
            let store = store.clone();
            let big = Arc::clone(&big);
            tasks.push(tokio::spawn(async move {
                store
                    .put(&format!("http://example.com/par/{i}"), big)
                    .await
                    .expect("put");
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        println!(
            "{puts} concurrent durable puts of 100 KB: {:?} total",
            started.elapsed()
        );
        println!("disk: {:?}", store.stats());
    }
}
