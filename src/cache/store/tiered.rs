//! The hot tier in front of the persistent one, with the shared tier (Redis) behind them when
//! one is configured, as one [`Store`]; and [`open`], the usual way to make the pair.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::cas::{Observed, SetIf};
use super::contract::{Cacheable, Overflow, PutIf, Store, TierStats};
use super::error::StoreError;
use super::hot::HotTier;
use super::persistent::PersistentTier;
use super::remote::SharedTier;

/// Opens the tiered store: sled under `path` (created if missing) and a hot tier of
/// `hot_capacity` bytes. Blocks while sled recovers its log, so call it at startup (or from
/// `spawn_blocking`), not on a request path. A persistent call waits at most `write_timeout`;
/// sled's page cache holds at most `persistent_cache` bytes.
pub fn open<V: Cacheable>(
    path: &Path,
    hot_capacity: u64,
    write_timeout: Duration,
    persistent_cache: u64,
) -> Result<Tiered<V>, StoreError> {
    let persistent = PersistentTier::open_sized(path, write_timeout, persistent_cache)?;
    Ok(Tiered::new(HotTier::new(hot_capacity), persistent))
}

/// The hot tier in front of the persistent one. The persistent tier is the truth; the hot tier
/// holds a subset of it for speed.
///
/// Racing writers to one key can leave the tiers briefly disagreeing (e.g. a miss promoting the
/// old value while a `remove` runs): the hot tier then serves a value that *was* stored, until
/// it is evicted or overwritten. That is acceptable because freshness is judged from the value's
/// own `fresh_until`, never from its presence.
///
/// With a shared tier (Redis, `[cache] shared`) behind them, a local miss reads through to it
/// and a hit there fills the local tiers; every put and remove goes to it too, and a
/// [`Store::put_if`] goes there first, as a compare-and-set. Its failures are
/// counted and reported by the tier itself, never returned: the local tiers are the truth here.
pub struct Tiered<V> {
    hot: HotTier<V>,
    persistent: PersistentTier<V>,
    shared: Option<SharedTier<V>>,
    overflow: Option<Arc<dyn Overflow<V>>>,
}

impl<V> Clone for Tiered<V> {
    fn clone(&self) -> Self {
        Self {
            hot: self.hot.clone(),
            persistent: self.persistent.clone(),
            shared: self.shared.clone(),
            overflow: self.overflow.clone(),
        }
    }
}

impl<V: Cacheable> Tiered<V> {
    /// Pairs two tiers; [`open`] is the usual way in.
    pub fn new(hot: HotTier<V>, persistent: PersistentTier<V>) -> Self {
        Self {
            hot,
            persistent,
            shared: None,
            overflow: None,
        }
    }

    /// The same tiers, telling `overflow` of the values too heavy for the hot tier.
    pub fn with_overflow(self, overflow: Arc<dyn Overflow<V>>) -> Self {
        Self {
            overflow: Some(overflow),
            ..self
        }
    }

    /// Tells the overflow that `key` now holds `value`.
    fn replaced(&self, key: &str, value: Option<&Arc<V>>) {
        if let Some(overflow) = &self.overflow {
            let heavy = value.filter(|v| !self.hot.keeps(key, v));
            overflow.replace(key, heavy);
        }
    }

    /// The same tiers with `shared` behind them.
    pub fn with_shared(self, shared: SharedTier<V>) -> Self {
        Self {
            shared: Some(shared),
            ..self
        }
    }

    /// The shared tier, if one is configured.
    pub fn shared(&self) -> Option<&SharedTier<V>> {
        self.shared.as_ref()
    }

    /// Drops `key` from memory and sled only (another replica announced a change to it), so
    /// the next lookup reads through to the shared tier. A disk failure is the persistent
    /// tier's to count and report.
    pub async fn forget_locally(&self, key: &str) {
        let _ = self.persistent.remove(key).await;
        let _ = self.hot.remove(key).await;
        // Its renderings too: they are of the entry another replica just replaced or removed.
        self.replaced(key, None);
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
        if let Some(value) = self.overflow.as_ref().and_then(|o| o.held(key)) {
            return Some(value);
        }
        let stamp = self.overflow.as_ref().map(|o| o.stamp(key));
        if let Some(value) = self.persistent.get(key).await {
            // Promote, so the next request (e.g. the first after a restart) is served from
            // memory. The hot put cannot fail.
            let _ = self.hot.put(key, Arc::clone(&value)).await;
            if let (Some(overflow), Some(stamp)) = (&self.overflow, stamp) {
                if !self.hot.keeps(key, &value) {
                    overflow.read(key, &value, stamp);
                }
            }
            return Some(value);
        }
        let value = self.shared.as_ref()?.get(key).await?;
        // Another replica's entry: kept locally too, so this replica serves it without Redis
        // from now on. A local write failure is the persistent tier's to report.
        let _ = self.install(key, Arc::clone(&value)).await;
        Some(value)
    }

    async fn put(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        let local = self.install(key, Arc::clone(&value)).await;
        if let Some(shared) = &self.shared {
            shared.put(key, value).await;
        }
        local
    }

    async fn install(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        // Disk first, so a value is in memory only once it is durable, or once the disk has
        // failed: then memory serves it meanwhile (the caller reports it not stored), newer than
        // whatever the disk still holds.
        let on_disk = self.persistent.put(key, Arc::clone(&value)).await;
        self.hot.put(key, Arc::clone(&value)).await?;
        self.replaced(key, Some(&value));
        on_disk
    }

    fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The shared tier first, so the local tiers end with what it holds: ours when the write
    /// landed, else nothing yet (the caller decides again against what comes back).
    async fn put_if(
        &self,
        key: &str,
        value: Arc<V>,
        expected: Observed,
    ) -> Result<PutIf<V>, StoreError> {
        if let Some(shared) = &self.shared {
            if shared.put_if(key, Arc::clone(&value), expected).await == SetIf::Lost {
                if let Some((seen, current)) = shared.read(key).await {
                    return Ok(PutIf::Lost { current, seen });
                }
                // Redis failed right after: this replica goes on with its own tiers.
            }
        }
        self.install(key, value).await.map(|()| PutIf::Stored)
    }

    async fn shared_newer(&self, key: &str, than: Option<u64>) -> Option<Arc<V>> {
        let shared = self.shared.as_ref()?;
        // The head first: 20 bytes, so a replica waiting for another's entry does not read a
        // big one again and again.
        match shared.observe(key).await? {
            Observed::Absent => return None,
            Observed::Revision(r) if Some(r) == than => return None,
            Observed::Revision(_) | Observed::Unversioned => {}
        }
        let value = shared.get(key).await?;
        if Some(value.revision()) == than {
            return None;
        }
        // A local write failure is the persistent tier's to report.
        let _ = self.install(key, Arc::clone(&value)).await;
        Some(value)
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        let on_disk = self.persistent.remove(key).await;
        // Even if the disk failed, stop serving it from memory.
        self.hot.remove(key).await?;
        self.replaced(key, None);
        if let Some(shared) = &self.shared {
            shared.remove(key).await;
        }
        on_disk
    }

    /// The persistent tier's stats: it holds every entry (the hot tier a subset). Use
    /// [`Tiered::hot`] for memory use.
    fn stats(&self) -> TierStats {
        self.persistent.stats()
    }

    async fn get_in_memory(&self, key: &str) -> Option<Arc<V>> {
        match self.hot.get(key).await {
            Some(value) => Some(value),
            None => self.overflow.as_ref().and_then(|o| o.held(key)),
        }
    }

    fn flush(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.persistent.flush()
    }
}

/// The test notes' revision: a hash of their body.
#[cfg(test)]
pub(super) fn body_revision(body: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    body.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::envelope::decode;
    use crate::cache::store::open::is_lock_conflict;
    use crate::cache::store::SLED_CACHE_BYTES;
    use serde::{Deserialize, Serialize};
    use std::sync::atomic::Ordering;
    use std::time::Instant;
    use tempfile::TempDir;

    const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

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
        fn revision(&self) -> u64 {
            body_revision(&self.body)
        }
    }

    fn note(body: impl Into<String>) -> Arc<Note> {
        Arc::new(Note {
            body: body.into(),
            fresh_until: 1_700_000_000,
        })
    }

    fn open_in(dir: &TempDir, hot_capacity: u64) -> Tiered<Note> {
        open(dir.path(), hot_capacity, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("open store")
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

    /// A value heavier than the hot tier is never held there, not even until moka's next
    /// bookkeeping (on an idle server that never comes), and the lighter value it replaces is
    /// not served in its place; the persistent tier serves it.
    #[tokio::test]
    async fn a_value_heavier_than_the_hot_tier_is_served_from_disk_only() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 4096);
        let key = "http://example.com/big";
        store.put(key, note("small")).await.expect("put");
        assert!(store.hot().get(key).await.is_some());
        store.put(key, note("x".repeat(8192))).await.expect("put");
        assert!(
            store.hot().get(key).await.is_none(),
            "the heavy value (or the old one) is in the hot tier"
        );
        assert_eq!(store.hot().stats().entries, 0);
        assert_eq!(store.get(key).await.expect("from disk").body.len(), 8192);
        assert!(store.hot().get(key).await.is_none(), "promoted anyway");
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
            .db()
            .insert(key.as_bytes(), raw)
            .expect("raw insert");
        // The count was maintained by our own puts; this raw write bypassed it.
        store
            .persistent()
            .sled
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
                .db()
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
    async fn the_envelope_on_disk_is_binary_and_zstd_compressed() {
        let dir = TempDir::new().expect("tempdir");
        let store = open_in(&dir, 1 << 20);
        store.put("k", note("hello")).await.expect("put");
        let raw = store
            .persistent()
            .db()
            .get(b"k")
            .expect("sled get")
            .expect("present");
        assert_eq!(&raw[..8], b"TMB1\x01\0\0\0", "magic and version");
        // A zstd frame between the header and the checksum, so `zstd -d` reads it.
        let body = zstd::decode_all(&raw[8..raw.len() - 4]).expect("zstd frame");
        let back: Note = rmp_serde::from_slice(&body).expect("MessagePack");
        assert_eq!(back, *note("hello"));
    }

    #[tokio::test]
    async fn an_entry_of_the_older_json_form_reads_after_a_restart_and_is_rewritten_binary() {
        let dir = TempDir::new().expect("tempdir");
        {
            let store = open_in(&dir, 1 << 20);
            let old =
                crate::cache::store::envelope::tests::encode_json(&*note("from the old build"));
            store.persistent().db().insert(b"k", old).expect("insert");
            store.persistent().db().flush().expect("flush");
        }
        let store = open_in(&dir, 1 << 20);
        let read = store.get("k").await.expect("an old entry is a hit");
        assert_eq!(read.body, "from the old build");
        store.put("k", read).await.expect("put");
        let raw = store
            .persistent()
            .db()
            .get(b"k")
            .expect("get")
            .expect("present");
        assert!(raw.starts_with(b"TMB1"), "stored again in the binary form");
        assert_eq!(store.stats().unreadable, 0);
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
        let err = open::<Note>(&path, 1024, WRITE_TIMEOUT, SLED_CACHE_BYTES)
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
        let err = PersistentTier::<Note>::open_waiting(
            dir.path(),
            WRITE_TIMEOUT,
            Duration::from_millis(200),
        )
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
        let held = PersistentTier::<Note>::open(dir.path(), WRITE_TIMEOUT).expect("first open");
        // Let go of the lock while the second open is already waiting for it.
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let reopened = PersistentTier::<Note>::open_waiting(
            dir.path(),
            WRITE_TIMEOUT,
            Duration::from_secs(30),
        );
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
