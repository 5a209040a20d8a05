//! How many entries the store held, kept in a small file beside sled's, so entries sled drops
//! when it recovers a damaged log are counted as lost. It has to live outside sled: sled drops
//! everything logged after the damage, a count kept in sled included.
//!
//! Written (not fsynced) after each change that sled has flushed, lowered before a removal is
//! flushed: a crash leaves it at or below the truth, so it never reports a loss that did not
//! happen (a power cut may lose its last updates and so under-report).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The file in the store's directory (sled ignores names it does not know).
pub const RECORD_FILE: &str = "tmproxy-entry-count";

pub struct EntryRecord {
    file: Mutex<File>,
}

impl EntryRecord {
    /// Opens (creating) the record in `dir`; the count it held, if it held one.
    pub fn open(dir: &Path) -> std::io::Result<(EntryRecord, Option<u64>)> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(RECORD_FILE))?;
        let mut bytes = [0u8; 8];
        let recorded = match file.read_exact_at(&mut bytes, 0) {
            Ok(()) => Some(u64::from_be_bytes(bytes)),
            Err(_) => None,
        };
        Ok((
            EntryRecord {
                file: Mutex::new(file),
            },
            recorded,
        ))
    }

    /// Writes the current value of `count`. Read under the lock, so concurrent writers never
    /// leave an older value last.
    pub fn save(&self, count: &AtomicU64) {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let n = count.load(Ordering::Relaxed);
        if let Err(e) = file.write_all_at(&n.to_be_bytes(), 0) {
            tracing::debug!(error = %e, "cannot update the cache entry count");
        }
    }

    /// Writes `n`.
    pub fn set(&self, n: u64) -> std::io::Result<()> {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all_at(&n.to_be_bytes(), 0)
    }
}

/// How many entries went missing: the record can only under-count after a crash, so anything
/// it holds above what is there was lost.
pub fn lost_entries(recorded: u64, present: u64) -> u64 {
    recorded.saturating_sub(present)
}
