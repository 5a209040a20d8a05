//! The resumed answers on disk: 32-byte records (the URL's key, big-endian so bytes sort as keys,
//! and its packed answer) in one file sorted by key, and a two-level index of its blocks of
//! [`BLOCK`] records: each block's first key and XXH3 checksum in a second file in pages
//! (`index.rs`), and in RAM one entry a page. The files are built from the checkpoint at each
//! resume by the engine's external sort ([`ExternalSort`]): the answers, each with its place in
//! checkpoint order, are sorted in runs of a bounded number, and the runs' merge, in key order
//! and then checkpoint order, is written as `answers.bin`, one record a key: the last of its
//! answers, as the table in memory keeps the later line. The blocks' entries go to `index.bin`
//! as each block ends, a page at a time, so the build holds no index of its own either.
//!
//! The index is a file of its own rather than the records' tail: written beside the records it
//! needs no buffering of its entries nor a copy, and its pages start at multiples of 4 KiB, one
//! page of the page cache a read.
//!
//! The files are never trusted across runs: their directory is emptied before each build, and
//! once a file is open it is unlinked, so it lasts as long as the run holds it (a crash leaves
//! at most runs, an index and answers without their header, removed by the next build). A
//! build that does not read back as written (the header, the files' lengths, every index page)
//! fails, as any error writing it does. The bytes are still read as hostile (a disk, or anyone writing through
//! `/proc`, may change them): an index page or a block whose checksum or first key is not the
//! level above's is "no answer" for the keys under it, and those URLs are asked again; nothing
//! here panics on them. The header is read only at the build's check.
//!
//! Not a `tmproxy_disk` frame: a lookup reads one 4 KiB block at its offset, which a zstd body
//! cannot give, so each block has its checksum in the index instead of one for the file; and
//! the files are never read by another build.
//!
//! Layout of `answers.bin`: a 32-byte header (`TMRSUM02`, the record count u64 LE, the block
//! size u32 LE, the index's entries a page u32 LE, the XXH3-64 of all records u64 LE), then the
//! records.

use super::index::{BlockEntry, Index, KeyBytes, Pages, PER_PAGE};
use crate::external_sort::bytes::Cursor;
use crate::external_sort::{ExternalSort, Record};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

const MAGIC: &[u8; 8] = b"TMRSUM02";
const HEADER: usize = 32;
const RECORD: usize = 32;
/// Records per block: 4 KiB, one read per lookup after the index page's.
pub(super) const BLOCK: usize = 128;

fn err(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// An answer on its way through the sort. Ordered by key, then by its place in the checkpoint
/// (`line` is unique, so `packed` never decides), so the last of a key's answers comes last
/// however the runs were cut and merged.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Answer {
    key: KeyBytes,
    line: u64,
    packed: [u8; 16],
}

impl Record for Answer {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.line.to_le_bytes());
        out.extend_from_slice(&self.packed);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let bytes16 = |c: &mut Cursor| -> Result<[u8; 16], String> {
            <[u8; 16]>::try_from(c.take(16)?).map_err(|_| "a record shorter than its fields".into())
        };
        let key = bytes16(&mut c)?;
        let line = c.u64()?;
        let packed = bytes16(&mut c)?;
        c.end()?;
        Ok(Answer { key, line, packed })
    }

    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Collects answers in checkpoint order into the sort.
pub(super) struct Builder {
    dir: PathBuf,
    spill: ExternalSort<Answer>,
    lines: u64,
}

impl Builder {
    /// Empties `dir` (what an earlier run or a crash left) and sorts into it, `chunk` answers
    /// held at most.
    pub(super) fn new(dir: &Path, chunk: usize) -> Result<Builder, String> {
        // A directory, or whatever else stands at its name (a symlink is removed, not followed).
        match std::fs::remove_dir_all(dir).or_else(|_| std::fs::remove_file(dir)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err(dir)(e)),
            _ => {}
        }
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        // The spill bounds its chunk in bytes, an answer's size each (it holds no heap): so
        // exactly `chunk` answers a run.
        let max_held = chunk.max(1).saturating_mul(std::mem::size_of::<Answer>());
        Ok(Builder {
            dir: dir.to_path_buf(),
            spill: ExternalSort::new(dir, "chunk", max_held)?,
            lines: 0,
        })
    }

    pub(super) fn push(&mut self, key: KeyBytes, packed: [u8; 16]) -> Result<(), String> {
        let line = self.lines;
        self.lines += 1;
        self.spill.push(Answer { key, line, packed })
    }

    /// The runs merged into the sorted file, opened, checked and unlinked; on an error the
    /// directory is removed (the run fails: asking every answer again would be silent and slow).
    pub(super) fn finish(mut self) -> Result<Sorted, String> {
        let built = self.build();
        let _ = std::fs::remove_dir_all(&self.dir);
        built
    }

    fn build(&mut self) -> Result<Sorted, String> {
        let path = self.dir.join("answers.bin");
        let mut out = Writer::new(&path)?;
        // Of a key's answers, in checkpoint order, each replaces the one before; the last is
        // written when the next key comes (or the merge ends).
        let mut last: Option<Answer> = None;
        for a in self.spill.merge()? {
            let a = a?;
            if let Some(done) = last.take().filter(|l| l.key != a.key) {
                out.push(&done)?;
            }
            last = Some(a);
        }
        if let Some(done) = last {
            out.push(&done)?;
        }
        out.finish()
    }
}

/// Writes the sorted file and, as each block ends, its entry in the index's pages.
struct Writer {
    path: PathBuf,
    w: BufWriter<File>,
    count: u64,
    all: Xxh3,
    block: Vec<u8>,
    first: KeyBytes,
    pages: Pages,
}

impl Writer {
    fn new(path: &Path) -> Result<Writer, String> {
        let mut w = BufWriter::new(File::create(path).map_err(err(path))?);
        // Zeros, no magic, until the records are all written: a cut build is no file.
        w.write_all(&[0; HEADER]).map_err(err(path))?;
        Ok(Writer {
            path: path.to_path_buf(),
            w,
            count: 0,
            all: Xxh3::new(),
            block: Vec::with_capacity(BLOCK * RECORD),
            first: [0; 16],
            pages: Pages::create(&path.with_file_name("index.bin"))?,
        })
    }

    fn push(&mut self, a: &Answer) -> Result<(), String> {
        if self.block.is_empty() {
            self.first = a.key;
        }
        self.block.extend_from_slice(&a.key);
        self.block.extend_from_slice(&a.packed);
        self.count += 1;
        if self.block.len() == BLOCK * RECORD {
            self.end_block()?;
        }
        Ok(())
    }

    fn end_block(&mut self) -> Result<(), String> {
        self.pages.push(BlockEntry {
            first: self.first,
            sum: xxh3_64(&self.block),
        })?;
        self.all.update(&self.block);
        self.w.write_all(&self.block).map_err(err(&self.path))?;
        self.block.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Sorted, String> {
        if !self.block.is_empty() {
            self.end_block()?;
        }
        let top = self.pages.finish()?;
        let file = self
            .w
            .into_inner()
            .map_err(|e| err(&self.path)(e.into_error()))?;
        let sum = self.all.digest();
        file.write_all_at(&header(self.count, sum), 0)
            .map_err(err(&self.path))?;
        drop(file);
        Sorted::open(&self.path, self.count, sum, top)
    }
}

fn header(count: u64, sum: u64) -> [u8; HEADER] {
    let mut h = [0; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..16].copy_from_slice(&count.to_le_bytes());
    h[16..20].copy_from_slice(&(BLOCK as u32).to_le_bytes());
    h[20..24].copy_from_slice(&(PER_PAGE as u32).to_le_bytes());
    h[24..].copy_from_slice(&sum.to_le_bytes());
    h
}

/// The sorted file and its index, open (and unlinked).
pub(super) struct Sorted {
    file: File,
    count: u64,
    index: Index,
}

impl Sorted {
    /// Opens the files just written and checks they are the ones: the header as written, the
    /// length the header and `count` records, the index as `Index::open` checks it. Then
    /// unlinks them: the open files are the run's alone.
    fn open(path: &Path, count: u64, sum: u64, top: Vec<BlockEntry>) -> Result<Sorted, String> {
        // Written to only by the tests, which garble it as a disk might.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(cfg!(test))
            .open(path)
            .map_err(err(path))?;
        let len = file.metadata().map_err(err(path))?.len();
        let mut h = [0; HEADER];
        file.read_exact_at(&mut h, 0).map_err(err(path))?;
        let expected = (HEADER as u64).checked_add(count.saturating_mul(RECORD as u64));
        if h != header(count, sum) || expected != Some(len) {
            return Err(format!("{}: not as written", path.display()));
        }
        let blocks = count.div_ceil(BLOCK as u64);
        let index = Index::open(&path.with_file_name("index.bin"), top, blocks)?;
        std::fs::remove_file(path).map_err(err(path))?;
        Ok(Sorted { file, count, index })
    }

    pub(super) fn len(&self) -> usize {
        usize::try_from(self.count).unwrap_or(usize::MAX)
    }

    /// The memory held: only the index's entry a page (the blocks' entries are on disk too).
    pub(super) fn bytes(&self) -> u64 {
        self.index.bytes()
    }

    /// The packed answer for `key`: one index page read and checked, then one block, then
    /// searched. None when the key is not there, or the page or the block does not read back
    /// as written.
    pub(super) fn get(&self, key: KeyBytes) -> Option<[u8; 16]> {
        let (b, entry) = self.index.block(&key)?;
        let start = b.checked_mul(BLOCK as u64)?;
        let n = usize::try_from(self.count.checked_sub(start)?.min(BLOCK as u64)).ok()?;
        let mut buf = [0u8; BLOCK * RECORD];
        let bytes = buf.get_mut(..n * RECORD)?;
        let at = (HEADER as u64).checked_add(start.checked_mul(RECORD as u64)?)?;
        self.file.read_exact_at(bytes, at).ok()?;
        if xxh3_64(bytes) != entry.sum || bytes.get(..16)? != entry.first {
            return None;
        }
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = bytes.get(mid * RECORD..(mid + 1) * RECORD)?;
            match r.get(..16)?.cmp(&key[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let mut packed = [0; 16];
                    packed.copy_from_slice(r.get(16..)?);
                    return Some(packed);
                }
            }
        }
        None
    }

    /// Overwrites bytes of the open file, as a disk or a hostile writer might.
    #[cfg(test)]
    pub(super) fn garble(&self, at: u64, bytes: &[u8]) {
        let _ = self.file.write_all_at(bytes, at);
    }

    #[cfg(test)]
    pub(super) fn truncate(&self, len: u64) {
        let _ = self.file.set_len(len);
    }

    /// The open index file, to garble or cut as the tests do the records.
    #[cfg(test)]
    pub(super) fn index(&self) -> &Index {
        &self.index
    }
}
