//! The checkpoint's answers held for a resumed run, compactly: at the paper's scale (107 M CDX
//! queries) a map from URL strings to answers of strings would take tens of gigabytes, so each
//! answer is kept as 32 bytes: the URL's 128-bit XXH3 hash (the URL itself stays on disk) and
//! the answer packed in 16 bytes, the few distinct MIME types and statuses interned.
//!
//! Where the 32 bytes live: a small checkpoint (at most [`DiskThreshold::in_memory`] lines) in a hash
//! table in memory; a larger one on disk (`disk.rs`), in a file sorted by key built from the
//! checkpoint at each resume, its blocks' index (a key and a checksum per block of 128 answers)
//! on disk too in 4 KiB pages, and only one entry a page (24 bytes a 21,760 answers, 0.0011
//! bytes an answer) and the interned strings in memory. So what a resume holds in RAM no longer
//! grows by 32+ bytes an answer (≈ 4.4 GB at 107 M) but by ≈ 120 KB at 107 M, and
//! [`Resumed::bytes`] counts only that; the answers and the index pages are in the page cache
//! or on disk.
//!
//! Two URLs share a 128-bit hash with a probability of about n²/2¹²⁹ (10⁻²³ at 10⁸ answers):
//! far below a disk's undetected error rate, so the hash stands for the URL. A later line for
//! the same URL replaces an earlier one, as the map of strings did, on disk too.

mod disk;
#[cfg(test)]
mod disk_tests;
mod index;
#[cfg(test)]
mod index_tests;
mod pack;

use crate::cdx::FirstCapture;
use pack::{Interner, Packed};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

/// The URL's key: its 128-bit XXH3 hash, already uniform, so the map hashes it no further.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key(u64, u64);

impl std::hash::Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0);
    }
}

impl Key {
    /// Big-endian, so the bytes sort as the key does (the file on disk is sorted by them).
    fn to_bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.0.to_be_bytes());
        b[8..].copy_from_slice(&self.1.to_be_bytes());
        b
    }
}

fn key(url: &str) -> Key {
    let h = xxhash_rust::xxh3::xxh3_128(url.as_bytes());
    Key(h as u64, (h >> 64) as u64)
}

/// Passes the key's first word through as the hash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `Key`; kept correct for any other use.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// When a checkpoint's answers go to disk, and in what pieces (the tests set them small).
#[derive(Debug, Clone, Copy)]
pub(super) struct DiskThreshold {
    /// Checkpoints of at most this many lines are held in memory (≤ 2¹⁹ slots, 17 MB).
    pub(super) in_memory: usize,
    /// Answers sorted in memory at once while the file is built (40 bytes each, the key, the
    /// answer and its place in the checkpoint, sorted in place): the build's own bound,
    /// released before the run starts.
    pub(super) chunk: usize,
}

impl Default for DiskThreshold {
    fn default() -> Self {
        DiskThreshold {
            in_memory: 1 << 18,
            chunk: 1 << 20,
        }
    }
}

type Table = HashMap<Key, Packed, BuildHasherDefault<KeyHasher>>;

/// Where the answers are: a hash table, or the sorted file on disk.
enum Answers {
    Memory(Table),
    Disk(disk::Sorted),
}

/// The answers a previous run wrote, by URL.
pub(super) struct Resumed {
    answers: Answers,
    strings: Interner,
}

impl Default for Resumed {
    fn default() -> Self {
        Resumed::with_capacity(0)
    }
}

impl Resumed {
    /// Room for `n` answers at once, so loading a large checkpoint never doubles the table.
    pub(super) fn with_capacity(n: usize) -> Resumed {
        Resumed {
            answers: Answers::Memory(HashMap::with_capacity_and_hasher(
                n,
                BuildHasherDefault::default(),
            )),
            strings: Interner::default(),
        }
    }

    /// A builder of the answers on disk, in `dir` (emptied first: nothing in it is trusted
    /// from an earlier run).
    pub(super) fn on_disk(dir: &Path, spill: DiskThreshold) -> Result<Building, String> {
        Ok(Building {
            builder: disk::Builder::new(dir, spill.chunk)?,
            strings: Interner::default(),
        })
    }

    pub(super) fn len(&self) -> usize {
        match &self.answers {
            Answers::Memory(t) => t.len(),
            Answers::Disk(d) => d.len(),
        }
    }

    /// What is held in memory, for `[sampling] max_memory`: for the table, each slot (key,
    /// answer and hashbrown's control byte), used or not; for the file, only its index's entry
    /// a page (the answers and the index pages are on disk, in the page cache at the kernel's
    /// discretion, not counted); and the interned strings.
    pub(super) fn bytes(&self) -> u64 {
        let slot = (std::mem::size_of::<Key>() + std::mem::size_of::<Packed>() + 1) as u64;
        let answers = match &self.answers {
            Answers::Memory(t) => t.capacity() as u64 * slot,
            Answers::Disk(d) => d.bytes(),
        };
        answers + self.strings.bytes()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(test)]
    pub(super) fn contains(&self, url: &str) -> bool {
        self.packed(key(url)).is_some()
    }

    /// Keeps `answer` for `url`, replacing an earlier one; a failure is not kept (it is asked
    /// again: the archive may answer now) and leaves an earlier answer in place, as before.
    /// In memory only: a file on disk is built by [`Building`].
    pub(super) fn insert(&mut self, url: &str, answer: &FirstCapture) {
        if let (Answers::Memory(t), Some(p)) = (&mut self.answers, self.strings.pack(answer)) {
            t.insert(key(url), p);
        }
    }

    /// The answer for `url`, if the checkpoint had one. On disk this is two positioned reads of
    /// 4 KB, an index page and a block, each checksummed, called from the async stages on a
    /// runtime worker: a few microseconds when they are in the page cache (as they are after
    /// the build, on a machine with the memory for it), disk seeks otherwise; both short beside
    /// the CDX request it replaces, so it is not moved to a blocking thread. A page or a block
    /// that does not read back as written is "no answer": the URL is asked again.
    pub(super) fn get(&self, url: &str) -> Option<FirstCapture> {
        Some(self.strings.unpack(self.packed(key(url))?))
    }

    fn packed(&self, k: Key) -> Option<Packed> {
        match &self.answers {
            Answers::Memory(t) => t.get(&k).copied(),
            Answers::Disk(d) => d.get(k.to_bytes()).map(Packed::from_bytes),
        }
    }
}

/// The answers on their way to disk, in checkpoint order.
pub(super) struct Building {
    builder: disk::Builder,
    strings: Interner,
}

impl Building {
    /// As [`Resumed::insert`]: a later answer for the same URL wins, a failure is skipped.
    pub(super) fn insert(&mut self, url: &str, answer: &FirstCapture) -> Result<(), String> {
        match self.strings.pack(answer) {
            Some(p) => self.builder.push(key(url).to_bytes(), p.to_bytes()),
            None => Ok(()),
        }
    }

    pub(super) fn finish(self) -> Result<Resumed, String> {
        Ok(Resumed {
            answers: Answers::Disk(self.builder.finish()?),
            strings: self.strings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(ts: &str, mime: &str, status: &str) -> FirstCapture {
        FirstCapture::Found {
            timestamp: ts.into(),
            mime: mime.into(),
            status: status.into(),
        }
    }

    #[test]
    fn every_answer_comes_back_as_it_went_in() {
        let answers = [
            found("19960101000000", "text/html", "200"),
            found("00010101000000", "text/html", "200"),
            found("2004", "text/html; charset=utf-8", "-"),
            found("", "", ""),
            found("2004-01-01", "image/jpeg", "301"),
            found("99999999999999", "warc/revisit", "200"),
            found("123456789012345", "text/html", "200"),
            FirstCapture::NotArchived,
            FirstCapture::Blocked,
        ];
        let mut r = Resumed::with_capacity(answers.len());
        for (i, a) in answers.iter().enumerate() {
            r.insert(&format!("https://h{i}.example/é"), a);
        }
        assert_eq!(r.len(), answers.len());
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(r.get(&format!("https://h{i}.example/é")).as_ref(), Some(a));
        }
        assert_eq!(r.get("https://h0.example/"), None);
    }

    #[test]
    fn a_later_answer_wins_and_a_failure_is_asked_again_keeping_an_earlier_answer() {
        let mut r = Resumed::default();
        let url = "https://a.example/";
        r.insert(url, &FirstCapture::NotArchived);
        r.insert(url, &found("20010203040506", "text/html", "200"));
        assert_eq!(
            r.get(url),
            Some(found("20010203040506", "text/html", "200"))
        );
        r.insert(
            url,
            &FirstCapture::Failed {
                reason: "503".into(),
            },
        );
        assert_eq!(
            r.get(url),
            Some(found("20010203040506", "text/html", "200"))
        );
        let other = "https://b.example/";
        r.insert(
            other,
            &FirstCapture::Failed {
                reason: "503".into(),
            },
        );
        assert!(!r.contains(other) && r.len() == 1);
    }
}
