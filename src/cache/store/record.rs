//! How many entries the store held, kept in a small file beside sled's, so entries sled drops
//! when it recovers a damaged log are counted as lost. It has to live outside sled: sled drops
//! everything logged after the damage, a count kept in sled included.
//!
//! Written (not fsynced) after each change that sled has flushed, lowered before a removal is
//! flushed: a crash leaves it at or below the truth, so it never reports a loss that did not
//! happen (a power cut may lose its last updates and so under-report).
//!
//! The count is followed by its CRC32: a file damaged on disk (eight 0xFF bytes read as a count
//! of 2^64 - 1, "lost" nearly all of it) is told from a real count, and the count is unknown.

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
        // One byte more than a record: a longer file is no record of ours.
        let mut bytes = [0u8; RECORD_LEN + 1];
        let mut read = 0;
        while read < bytes.len() {
            // A read that fails leaves what was read: too short, so unknown.
            match file.read_at(&mut bytes[read..], read as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        let recorded = match decode(&bytes[..read]) {
            Recorded::Count(n) => Some(n),
            Recorded::Empty => None,
            Recorded::Damaged => {
                tracing::warn!(
                    file = %dir.join(RECORD_FILE).display(),
                    bytes = read,
                    "the cache entry-count file is damaged: entries lost since the last run are unknown"
                );
                None
            }
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
        if let Err(e) = file.write_all_at(&encode(n), 0) {
            tracing::debug!(error = %e, "cannot update the cache entry count");
        }
    }

    /// Writes `n`.
    pub fn set(&self, n: u64) -> std::io::Result<()> {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all_at(&encode(n), 0)?;
        // A record of an older layout (the count alone) was shorter; one of ours never longer.
        file.set_len(RECORD_LEN as u64)
    }
}

/// A record's length: the count (8 bytes, big-endian), then the CRC32 of those 8 bytes.
const RECORD_LEN: usize = 12;

/// What a record file holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Recorded {
    Count(u64),
    /// Nothing: just created.
    Empty,
    /// Not a record: wrong length (an older layout without its checksum included), or a
    /// checksum that does not match.
    Damaged,
}

pub fn encode(n: u64) -> [u8; RECORD_LEN] {
    let mut out = [0u8; RECORD_LEN];
    out[..8].copy_from_slice(&n.to_be_bytes());
    let sum = crc32fast::hash(&out[..8]);
    out[8..].copy_from_slice(&sum.to_be_bytes());
    out
}

pub fn decode(bytes: &[u8]) -> Recorded {
    if bytes.is_empty() {
        return Recorded::Empty;
    }
    let Ok(record) = <[u8; RECORD_LEN]>::try_from(bytes) else {
        return Recorded::Damaged;
    };
    let (count, sum) = record.split_at(8);
    if crc32fast::hash(count).to_be_bytes() != sum {
        return Recorded::Damaged;
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(count);
    Recorded::Count(u64::from_be_bytes(n))
}

/// How many entries went missing: the record can only under-count after a crash, so anything
/// it holds above what is there was lost.
pub fn lost_entries(recorded: u64, present: u64) -> u64 {
    recorded.saturating_sub(present)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_anything_else_is_damaged_not_a_count() {
        for n in [0, 1, 30, u64::MAX] {
            assert_eq!(decode(&encode(n)), Recorded::Count(n));
        }
        assert_eq!(decode(&[]), Recorded::Empty);
        assert_eq!(decode(&[0xFF; 8]), Recorded::Damaged);
        assert_eq!(decode(&[0xFF; 12]), Recorded::Damaged);
        assert_eq!(decode(&30u64.to_be_bytes()), Recorded::Damaged);
        let mut flipped = encode(30);
        flipped[7] ^= 0x40;
        assert_eq!(decode(&flipped), Recorded::Damaged);
        let mut longer = encode(30).to_vec();
        longer.push(0);
        assert_eq!(decode(&longer), Recorded::Damaged);
    }

    #[test]
    fn a_damaged_file_opens_as_unknown_and_is_rewritten_whole() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join(RECORD_FILE), [0xFF; 8]).expect("write");
        let (record, recorded) = EntryRecord::open(dir.path()).expect("open");
        assert_eq!(recorded, None);
        record.set(30).expect("set");
        let (_, again) = EntryRecord::open(dir.path()).expect("open");
        assert_eq!(again, Some(30));
    }
}
