//! The on-disk tier: one sled database in a directory, written through a gate that a failing
//! disk cannot wedge. Every sled call runs on a thread of our own the caller waits for at most
//! `write_timeout`; a write the disk refuses or sled fails marks the tier degraded, and one that
//! breaks sled (an error, a panic, a write that never returns) takes the database out of service
//! until [`super::recover`] has reopened it, the hot tier serving meanwhile.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::disk_threads::DiskThreads;
use super::envelope::{decode, encode};
use super::open::{open_or_replace, Handle, SLED_CACHE_BYTES};
use super::sled_db::{SledCounters, SledDb};
use super::{Cacheable, Store, StoreError, TierStats};

/// How long `open` waits for a lock held by a store being dropped in this process. sled 0.34
/// releases its file lock only when the last of its background writes lets go of the file
/// (spacejam/sled#1289): usually within milliseconds, later when those writes queue behind other
/// stores' fsyncs on a busy disk (tests drop and reopen stores while others write). Another
/// tmproxy holding the directory is reported after this wait, so startup against a held
/// directory takes this long to fail.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// sled calls running at once, and so the threads they run on. More buy nothing (each put waits
/// on the same fsync) and each thread costs mimalloc memory; a call abandoned at its timeout
/// gives its slot back, so a sled thread stuck for good costs that thread, never the slot.
pub const DISK_THREADS: usize = 8;

/// Entries (by `approx_bytes`) from which encoding runs on the blocking pool, not in place.
const BIG_ENTRY_BYTES: usize = 4 << 20;

/// Keys are URI-Rs of up to 8 KiB; logging all of that on every warning would bury the reason.
const LOGGED_KEY_CHARS: usize = 200;

/// Why a call on a disk thread gave no answer.
pub(super) enum Abandoned {
    TimedOut(Duration),
    /// The thread panicked (sled on damaged data) or could not be started.
    Failed(String),
}

/// The persistent tier. Survives restarts (and `kill -9`: `put` and `remove` return only after
/// sled has flushed). Cloning is cheap and shares the database.
pub struct PersistentTier<V> {
    pub(super) sled: Arc<SledDb>,
    _value: PhantomData<fn() -> V>,
}

impl<V> Clone for PersistentTier<V> {
    fn clone(&self) -> Self {
        Self {
            sled: Arc::clone(&self.sled),
            _value: PhantomData,
        }
    }
}

impl<V: Cacheable> PersistentTier<V> {
    /// Opens (creating if needed) the database in directory `path`; a damaged one is moved
    /// aside and replaced. Blocking: sled replays its log and we count the entries once (a full
    /// scan), so call it at startup.
    pub fn open(path: &Path, write_timeout: Duration) -> Result<Self, StoreError> {
        Self::open_with(path, write_timeout, LOCK_WAIT, SLED_CACHE_BYTES)
    }

    /// [`PersistentTier::open`] with sled's page cache bounded at `page_cache` bytes
    /// (`[cache] persistent_cache`).
    pub fn open_sized(
        path: &Path,
        write_timeout: Duration,
        page_cache: u64,
    ) -> Result<Self, StoreError> {
        Self::open_with(path, write_timeout, LOCK_WAIT, page_cache)
    }

    /// [`PersistentTier::open`], waiting at most `lock_wait` for a held lock to be released
    /// (tests of a held directory fail fast with it).
    #[cfg(test)]
    pub(super) fn open_waiting(
        path: &Path,
        write_timeout: Duration,
        lock_wait: Duration,
    ) -> Result<Self, StoreError> {
        Self::open_with(path, write_timeout, lock_wait, SLED_CACHE_BYTES)
    }

    fn open_with(
        path: &Path,
        write_timeout: Duration,
        lock_wait: Duration,
        page_cache: u64,
    ) -> Result<Self, StoreError> {
        let opened = open_or_replace(path, lock_wait, page_cache, chrono::Utc::now())?;
        if opened.lost > 0 {
            tracing::error!(path = %path.display(), lost = opened.lost, "cache entries recorded before the restart are gone from the store");
        }
        let counters = SledCounters {
            entries: AtomicU64::new(opened.entries),
            lost: AtomicU64::new(opened.lost),
            moved_aside: AtomicU64::new(u64::from(opened.moved_aside.is_some())),
            ..SledCounters::default()
        };
        Ok(Self {
            sled: Arc::new(SledDb {
                path: path.to_path_buf(),
                handle: RwLock::new(Some(opened.handle)),
                degraded: Mutex::new(None),
                counters,
                write_timeout,
                page_cache,
                recovering: AtomicBool::new(false),
                gate: tokio::sync::Semaphore::new(DISK_THREADS),
                threads: DiskThreads::new("tmproxy-store"),
            }),
            _value: PhantomData,
        })
    }
}

impl<V> PersistentTier<V> {
    /// Why the tier is degraded (writes refused or failing, or the database out of service),
    /// or None when it is healthy.
    pub fn degraded(&self) -> Option<String> {
        self.sled
            .degraded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes everything written so far durable, within `write_timeout`.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let Some(handle) = self.handle() else {
            return Ok(());
        };
        match self.on_disk_thread(move || flush(&handle.db)).await {
            Ok(result) => result,
            Err(abandoned) => Err(self.abandoned("flush", abandoned)),
        }
    }

    fn handle(&self) -> Option<Handle> {
        self.sled
            .handle
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Runs `job` on a disk thread and waits for it at most `write_timeout`, the wait for a free
    /// slot included. A job that outlives the wait runs on, keeping its thread.
    pub(super) async fn on_disk_thread<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Abandoned> {
        let limit = self.sled.write_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let slot = match tokio::time::timeout_at(deadline, self.sled.gate.acquire()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(closed)) => {
                drop_off_runtime(job);
                return Err(Abandoned::Failed(closed.to_string()));
            }
            Err(_) => {
                drop_off_runtime(job);
                return Err(Abandoned::TimedOut(limit));
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.sled
            .threads
            .run(job, move |answer| {
                let _ = tx.send(answer);
            })
            .map_err(|e| Abandoned::Failed(format!("cannot start a thread: {e}")))?;
        let answer = tokio::time::timeout_at(deadline, rx).await;
        drop(slot);
        match answer {
            Ok(Ok(value)) => Ok(value),
            // A dropped sender means the job panicked.
            Ok(Err(_)) => Err(Abandoned::Failed("the storage thread panicked".into())),
            Err(_) => Err(Abandoned::TimedOut(limit)),
        }
    }

    /// A call that never answered: sled may be wedged for good, so the database leaves service.
    fn abandoned(&self, what: &str, abandoned: Abandoned) -> StoreError {
        let reason = match abandoned {
            Abandoned::TimedOut(limit) => {
                format!("a cache {what} did not finish within write_timeout ({limit:?})")
            }
            Abandoned::Failed(why) => format!("a cache {what} failed: {why}"),
        };
        self.out_of_service(reason.clone());
        StoreError::Sled(reason)
    }

    /// sled failed: after an I/O error sled 0.34 refuses (or hangs) every later write, so the
    /// database is closed and reopened in the background.
    pub(super) fn out_of_service(&self, reason: String) {
        self.sled.set_degraded(reason);
        let old = self
            .sled
            .handle
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // Dropping the last handle of a sled database flushes it, which on a failed log can
        // block for good: never on a runtime thread (it hung a request in our full-disk test).
        if let Some(old) = old {
            drop_off_runtime(old);
        }
        super::recover::start(&self.sled);
    }
}

/// Drops `value` on a thread of its own: a job that never ran holds a database handle, and
/// dropping the last handle of a failed sled database can block for good.
fn drop_off_runtime<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("tmproxy-store-close".into())
        .spawn(move || drop(value));
}

/// Makes everything written so far durable (write + fsync of sled's log). Blocking.
///
/// Deliberately not `flush_async`: in sled 0.34 that runs the flush on sled's own small thread
/// pool, and the log write it waits for is queued on the same pool, so about 7 concurrent
/// flushes park every pool thread and nothing ever writes (spacejam/sled#1308, #1241; we hit it
/// in `concurrent_puts_and_gets_complete`). Flushing from our own threads keeps sled's pool free
/// for the write.
fn flush(db: &sled::Db) -> Result<(), StoreError> {
    db.flush()
        .map(|_| ())
        .map_err(|e| StoreError::Sled(format!("flush: {e}")))
}

/// The outcome of reading one key, computed on a disk thread.
enum Read<V> {
    Hit(V),
    Miss,
    Unreadable,
}

fn key_for_log(key: &str) -> &str {
    match key.char_indices().nth(LOGGED_KEY_CHARS) {
        Some((cut, _)) => &key[..cut],
        None => key,
    }
}

fn read_entry<V: Cacheable>(handle: &Handle, counters: &SledCounters, key: &str) -> Read<V> {
    let db = &handle.db;
    let bytes = match db.get(key.as_bytes()) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Read::Miss,
        // A blob sled lost or a page it finds damaged: the entry is gone for good.
        Err(e) if is_damage(&e) => {
            tracing::warn!(key = key_for_log(key), error = %e, "damaged cache entry; treating as a miss and removing it");
            counters.unreadable.fetch_add(1, Ordering::Relaxed);
            if let Ok(Some(_)) = db.remove(key.as_bytes()) {
                counters.entry_gone();
                handle.record.save(&counters.entries);
            }
            return Read::Unreadable;
        }
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
                Ok(Ok(())) => {
                    counters.entry_gone();
                    handle.record.save(&counters.entries);
                }
                Ok(Err(_replaced)) => {}
                Err(e) => {
                    tracing::warn!(key = key_for_log(key), error = %e, "could not remove an unreadable cache entry");
                }
            }
            Read::Unreadable
        }
    }
}

/// sled's read errors that mean the stored data is damaged or gone (a missing blob file is
/// `NotFound`), as opposed to a disk that failed this time.
fn is_damage(e: &sled::Error) -> bool {
    match e {
        sled::Error::Corruption { .. } => true,
        sled::Error::Io(io) => io.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// How a write ended on its thread.
enum Written {
    Done,
    /// The disk check refused it before sled saw it: sled is unharmed.
    Refused(String),
    /// sled itself failed.
    Failed(StoreError),
}

fn write_entry(
    handle: &Handle,
    counters: &SledCounters,
    path: &Path,
    key: &str,
    bytes: Vec<u8>,
) -> Written {
    if let Err(reason) = super::disk_check::room_for(path, bytes.len()) {
        return Written::Refused(reason);
    }
    let previous = match handle.db.insert(key.as_bytes(), bytes) {
        Ok(previous) => previous,
        Err(e) => return Written::Failed(StoreError::Sled(format!("insert: {e}"))),
    };
    if previous.is_none() {
        counters.entries.fetch_add(1, Ordering::Relaxed);
    }
    // Durable before we return: a response already sent must survive a kill -9.
    // Concurrent flushes wait on the same log writes rather than each writing its own.
    if let Err(e) = flush(&handle.db) {
        return Written::Failed(e);
    }
    // After the flush: a crash before this under-counts, never reports a false loss.
    if previous.is_none() {
        handle.record.save(&counters.entries);
    }
    Written::Done
}

impl<V: Cacheable> Store<V> for PersistentTier<V> {
    fn flush(&self) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        PersistentTier::flush(self)
    }

    async fn get(&self, key: &str) -> Option<Arc<V>> {
        let handle = self.handle()?;
        let db = Arc::clone(&self.sled);
        let owned_key = key.to_owned();
        let read = self
            .on_disk_thread(move || read_entry::<V>(&handle, &db.counters, &owned_key))
            .await;
        match read {
            Ok(Read::Hit(value)) => Some(Arc::new(value)),
            Ok(Read::Miss | Read::Unreadable) => None,
            Err(Abandoned::TimedOut(limit)) => {
                tracing::warn!(
                    key = key_for_log(key),
                    ?limit,
                    "cache store read did not finish in time; treating as a miss"
                );
                None
            }
            Err(Abandoned::Failed(why)) => {
                tracing::warn!(
                    key = key_for_log(key),
                    error = why,
                    "cache store read failed; treating as a miss"
                );
                None
            }
        }
    }

    async fn put(&self, key: &str, value: Arc<V>) -> Result<(), StoreError> {
        let counters = &self.sled.counters;
        let Some(handle) = self.handle() else {
            counters.writes_failed.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Unavailable(self.degraded().unwrap_or_default()));
        };
        // Encoded before the disk call, not within it: `write_timeout` is for a disk that
        // stops answering, and the CPU work for millions of mementos can take seconds on a slow
        // machine, which would take a healthy database out of service.
        // An ordinary entry takes about a millisecond and is encoded in place; a big one
        // would hold a runtime thread for as long.
        let encoded = if value.approx_bytes() < BIG_ENTRY_BYTES {
            encode(value.as_ref())
        } else {
            tokio::task::spawn_blocking(move || encode(value.as_ref()))
                .await
                .unwrap_or_else(|e| Err(format!("the encoding task failed: {e}")))
        };
        let bytes = match encoded {
            Ok(bytes) => bytes,
            Err(e) => {
                counters.writes_failed.fetch_add(1, Ordering::Relaxed);
                return Err(StoreError::Encode(e));
            }
        };
        let db = Arc::clone(&self.sled);
        let owned_key = key.to_owned();
        let written = self
            .on_disk_thread(move || write_entry(&handle, &db.counters, &db.path, &owned_key, bytes))
            .await;
        let failure = match written {
            Ok(Written::Done) => {
                self.sled.set_healthy();
                return Ok(());
            }
            Ok(Written::Refused(reason)) => {
                self.sled.set_degraded(reason.clone());
                StoreError::Refused(reason)
            }
            Ok(Written::Failed(e)) => {
                self.out_of_service(e.to_string());
                e
            }
            Err(abandoned) => self.abandoned("write", abandoned),
        };
        counters.writes_failed.fetch_add(1, Ordering::Relaxed);
        Err(failure)
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        let Some(handle) = self.handle() else {
            return Err(StoreError::Unavailable(self.degraded().unwrap_or_default()));
        };
        let db = Arc::clone(&self.sled);
        let owned_key = key.to_owned();
        let removed = self
            .on_disk_thread(move || {
                let previous = handle
                    .db
                    .remove(owned_key.as_bytes())
                    .map_err(|e| StoreError::Sled(format!("remove: {e}")))?;
                if previous.is_some() {
                    // Lowered before the removal is durable: a crash leaves it low, not high.
                    db.counters.entry_gone();
                    handle.record.save(&db.counters.entries);
                }
                // Durable too, so a purge is not undone by a crash.
                flush(&handle.db)
            })
            .await;
        match removed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.out_of_service(e.to_string());
                Err(e)
            }
            Err(abandoned) => Err(self.abandoned("remove", abandoned)),
        }
    }

    fn stats(&self) -> TierStats {
        // size_on_disk is a few metadata syscalls, cheap enough to run inline.
        // Read in place, not cloned: a clone could end up the last handle, dropped here.
        let bytes = self
            .sled
            .handle
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or(0, |h| {
                h.db.size_on_disk().unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot measure the cache store's size on disk");
                    0
                })
            });
        let c = &self.sled.counters;
        TierStats {
            entries: c.entries.load(Ordering::Relaxed),
            bytes,
            unreadable: c.unreadable.load(Ordering::Relaxed),
            writes_failed: c.writes_failed.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            moved_aside: c.moved_aside.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
impl<V> PersistentTier<V> {
    /// The open database, for tests that write raw bytes.
    pub(super) fn db(&self) -> sled::Db {
        self.handle().expect("in service").db
    }
}
