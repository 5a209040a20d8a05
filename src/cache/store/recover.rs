//! Putting the persistent tier back into service after sled failed. sled 0.34 does not recover
//! in-process (after an I/O error its log refuses every write), so the database is reopened:
//! the failing handle was already dropped, and this thread retries opening the same directory
//! with backoff until it opens and takes a durable probe write.
//!
//! sled locks `<path>/db` with `flock` until its last handle is gone. A sled call stuck for good
//! (a write parked in sled's `make_stable`) keeps its handle, so the lock, for the life of the
//! process: the reopen then never succeeds, the tier stays out of service (memory only, /healthz
//! degraded) and only a restart brings it back. Reopening into another directory instead would
//! serve without the stored entries and leave two stores to reconcile; we chose not to.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::open::{reopen, Handle};
use super::sled_db::SledDb;

/// The first pause before a reopen, doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Each reopen replays sled's log and counts the entries, so not more often than this.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long one attempt waits for the lock the old handle may still be letting go of.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// Starts the recovery thread unless one is already running.
pub(super) fn start(db: &Arc<SledDb>) {
    if db.recovering.swap(true, Ordering::AcqRel) {
        return;
    }
    let weak = Arc::downgrade(db);
    let spawned = std::thread::Builder::new()
        .name("tmproxy-store-recover".into())
        .spawn(move || run(weak));
    if let Err(e) = spawned {
        db.recovering.store(false, Ordering::Release);
        tracing::error!(error = %e, "cannot start the cache store's recovery thread");
    }
}

fn run(weak: Weak<SledDb>) {
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u64;
    loop {
        std::thread::sleep(backoff);
        // The store was dropped (the server stopped): nothing to recover for.
        let Some(db) = weak.upgrade() else {
            return;
        };
        attempts += 1;
        match reopen(&db.path, LOCK_WAIT, db.page_cache).and_then(|opened| {
            probe(&opened.handle, db.write_timeout, &db.path)?;
            Ok(opened)
        }) {
            Ok(opened) => {
                tracing::warn!(path = %db.path.display(), attempts, "the persistent cache tier was reopened");
                db.install(opened);
                db.recovering.store(false, Ordering::Release);
                return;
            }
            Err(reason) => {
                // Loud once, then quiet: the degraded reason already says the tier is down.
                if attempts == 1 {
                    tracing::error!(path = %db.path.display(), reason, "cannot reopen the persistent cache tier yet; serving from memory, retrying");
                } else {
                    tracing::debug!(path = %db.path.display(), reason, attempts, "cache store reopen failed");
                }
                db.set_degraded(format!(
                    "persistent cache tier out of service, reopening: {reason}"
                ));
            }
        }
        drop(db);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A small durable write through the reopened database, so a disk that still fails is found
/// here rather than by the next client. Waits at most `limit`: a probe stuck in sled keeps its
/// thread, the attempt fails.
fn probe(handle: &Handle, limit: Duration, dir: &std::path::Path) -> Result<(), String> {
    super::disk_check::room_for(dir, 0)?;
    let probe = handle.probe.clone();
    let db = handle.db.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("tmproxy-store-probe".into())
        .spawn(move || {
            let written = probe
                .insert(b"probe", &[1u8][..])
                .and_then(|_| db.flush())
                .map(|_| ())
                .map_err(|e| format!("probe write failed: {e}"));
            let _ = tx.send(written);
        })
        .map_err(|e| format!("cannot start a probe thread: {e}"))?;
    rx.recv_timeout(limit)
        .map_err(|_| format!("the probe write did not finish within {limit:?}"))?
}
