//! The block index of the resumed answers on disk, itself on disk (`index.bin`, beside
//! `answers.bin`) in pages of one 4 KiB read: each of a page's [`PER_PAGE`] entries is a block's
//! first key and the XXH3 checksum of its records, the rest of the page zeros. RAM keeps one
//! entry a page (its first key and the XXH3 of its 4 KiB), 24 bytes a 21,760 answers, so what a
//! run holds no longer grows with its answers in practice (≈ 120 KB at 107 M). A lookup reads
//! one page and checks it against that entry; a page that does not is "no answer" for every key
//! under it (those URLs are asked again), never a wrong block.
//!
//! The file has no header: pages start at multiples of [`PAGE`], so a page read is one page of
//! the page cache, and the answers' header states the layout (`disk.rs`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

pub(super) type KeyBytes = [u8; 16];

/// A page: one read.
pub(super) const PAGE: usize = 4096;
/// An entry: the first key, then the checksum u64 LE.
const ENTRY: usize = 24;
/// Entries a page (170: 4,080 bytes, 16 zeros after them).
pub(super) const PER_PAGE: usize = PAGE / ENTRY;

/// A block, or a page, as the level above knows it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct BlockEntry {
    pub(super) first: KeyBytes,
    pub(super) sum: u64,
}

fn err(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Writes the pages as the blocks' entries come, holding one page; keeps each page's entry.
pub(super) struct Pages {
    path: PathBuf,
    w: BufWriter<File>,
    page: Vec<u8>,
    top: Vec<BlockEntry>,
}

impl Pages {
    pub(super) fn create(path: &Path) -> Result<Pages, String> {
        Ok(Pages {
            path: path.to_path_buf(),
            w: BufWriter::new(File::create(path).map_err(err(path))?),
            page: Vec::with_capacity(PAGE),
            top: Vec::new(),
        })
    }

    /// The next block's entry, in key order.
    pub(super) fn push(&mut self, e: BlockEntry) -> Result<(), String> {
        self.page.extend_from_slice(&e.first);
        self.page.extend_from_slice(&e.sum.to_le_bytes());
        if self.page.len() == PER_PAGE * ENTRY {
            self.end_page()?;
        }
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), String> {
        // Zeros to the page's end, checksummed with it: a flipped pad byte fails the page too.
        self.page.resize(PAGE, 0);
        let mut first = [0; 16];
        first.copy_from_slice(&self.page[..16]);
        self.top.push(BlockEntry {
            first,
            sum: xxh3_64(&self.page),
        });
        self.w.write_all(&self.page).map_err(err(&self.path))?;
        self.page.clear();
        Ok(())
    }

    /// The file flushed and closed, and the pages' entries.
    pub(super) fn finish(mut self) -> Result<Vec<BlockEntry>, String> {
        if !self.page.is_empty() {
            self.end_page()?;
        }
        self.w.flush().map_err(err(&self.path))?;
        self.top.shrink_to_fit();
        Ok(self.top)
    }
}

/// The pages, open (and unlinked), and their entries.
pub(super) struct Index {
    file: File,
    top: Vec<BlockEntry>,
    blocks: u64,
}

impl Index {
    /// Opens the file just written for `blocks` blocks and checks it reads back as written:
    /// exactly `top`'s pages, each matching its entry (one page read at a time). Then unlinks it.
    pub(super) fn open(path: &Path, top: Vec<BlockEntry>, blocks: u64) -> Result<Index, String> {
        // Written to only by the tests, which garble it as a disk might.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(cfg!(test))
            .open(path)
            .map_err(err(path))?;
        let len = file.metadata().map_err(err(path))?.len();
        let pages = blocks.div_ceil(PER_PAGE as u64);
        let index = Index { file, top, blocks };
        let as_written = pages == index.top.len() as u64
            && Some(len) == pages.checked_mul(PAGE as u64)
            && (0..index.top.len()).all(|p| index.page(p).is_some());
        if !as_written {
            return Err(format!("{}: not as written", path.display()));
        }
        std::fs::remove_file(path).map_err(err(path))?;
        Ok(index)
    }

    /// RAM held: the pages' entries.
    pub(super) fn bytes(&self) -> u64 {
        (self.top.capacity() * std::mem::size_of::<BlockEntry>()) as u64
    }

    /// The block that holds `key` if any does (its number and entry): the page's entry found in
    /// RAM, the page read and checked, the block's entry found in it. None below the first
    /// key, or when the page does not read back as written.
    pub(super) fn block(&self, key: &KeyBytes) -> Option<(u64, BlockEntry)> {
        let p = self
            .top
            .partition_point(|e| e.first <= *key)
            .checked_sub(1)?;
        let (page, n) = self.page(p)?;
        // Past the page's first entry (the page's own first key, at most `key`): the last entry
        // at most `key`.
        let (mut lo, mut hi) = (1, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entry(&page, mid)?.first <= *key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let i = lo - 1;
        let b = (p as u64)
            .checked_mul(PER_PAGE as u64)?
            .checked_add(i as u64)?;
        Some((b, entry(&page, i)?))
    }

    /// Page `p` and its number of entries, if it reads back as its entry in RAM says.
    fn page(&self, p: usize) -> Option<([u8; PAGE], usize)> {
        let top = self.top.get(p)?;
        let start = (p as u64).checked_mul(PER_PAGE as u64)?;
        let n = usize::try_from(self.blocks.checked_sub(start)?.min(PER_PAGE as u64)).ok()?;
        let mut page = [0u8; PAGE];
        self.file
            .read_exact_at(&mut page, (p as u64).checked_mul(PAGE as u64)?)
            .ok()?;
        (xxh3_64(&page) == top.sum && page.get(..16)? == top.first).then_some((page, n))
    }

    #[cfg(test)]
    pub(super) fn garble(&self, at: u64, bytes: &[u8]) {
        let _ = self.file.write_all_at(bytes, at);
    }

    #[cfg(test)]
    pub(super) fn truncate(&self, len: u64) {
        let _ = self.file.set_len(len);
    }
}

/// BlockEntry `i` of a page.
fn entry(page: &[u8; PAGE], i: usize) -> Option<BlockEntry> {
    let e = page.get(i.checked_mul(ENTRY)?..)?.get(..ENTRY)?;
    let mut first = [0; 16];
    first.copy_from_slice(e.get(..16)?);
    let sum = u64::from_le_bytes(e.get(16..)?.try_into().ok()?);
    Some(BlockEntry { first, sum })
}
