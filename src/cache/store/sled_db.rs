//! The sled database of the persistent tier, as its clones and its recovery thread share it: the
//! handle (None while it is out of service), its health and its counters. Its own module, so the
//! tier and the recovery depend on it and not on each other.

use super::disk_threads::DiskThreads;
use super::open::{Handle, Opened};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// What the tier counts, for its stats and `/metrics`.
#[derive(Default)]
pub(super) struct SledCounters {
    /// Kept alongside sled because `sled::Tree::len` is a full scan; maintained from the
    /// previous-value results of sled's atomic insert/remove, so it stays exact.
    pub entries: AtomicU64,
    pub unreadable: AtomicU64,
    pub writes_failed: AtomicU64,
    pub lost: AtomicU64,
    pub moved_aside: AtomicU64,
}

impl SledCounters {
    pub fn entry_gone(&self) {
        // Saturating: the count can't be negative, whatever happens.
        let _ = self
            .entries
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
    }
}

/// What the tier's handle and health are, shared by its clones and the recovery thread.
pub(super) struct SledDb {
    pub path: PathBuf,
    /// None while the database is out of service (after sled failed, until it is reopened).
    pub handle: RwLock<Option<Handle>>,
    /// Why the tier is not healthy, if it is not.
    pub degraded: Mutex<Option<String>>,
    pub counters: SledCounters,
    pub write_timeout: Duration,
    /// sled's page cache bound, for a reopen.
    pub page_cache: u64,
    /// Set while a recovery thread runs, so a burst of failures starts only one.
    pub recovering: AtomicBool,
    /// A slot per disk call running, [`super::persistent::DISK_THREADS`] of them.
    pub gate: tokio::sync::Semaphore,
    pub threads: DiskThreads,
}

impl SledDb {
    pub fn set_degraded(&self, reason: String) {
        let mut degraded = self.degraded.lock().unwrap_or_else(|p| p.into_inner());
        if degraded.as_deref() != Some(reason.as_str()) {
            tracing::error!(path = %self.path.display(), reason, "the persistent cache tier is degraded");
        }
        *degraded = Some(reason);
    }

    pub fn set_healthy(&self) {
        let mut degraded = self.degraded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(was) = degraded.take() {
            tracing::warn!(path = %self.path.display(), was, "the persistent cache tier is healthy again");
        }
    }

    /// Puts a freshly (re)opened database into service.
    pub fn install(&self, opened: Opened) {
        self.counters
            .entries
            .store(opened.entries, Ordering::Relaxed);
        *self.handle.write().unwrap_or_else(|p| p.into_inner()) = Some(opened.handle);
        self.set_healthy();
    }
}
