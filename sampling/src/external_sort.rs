//! External sorting for the sampling engine: records pushed in any order are sorted in chunks
//! of bounded size, each written as a run file, and read back as one sorted stream by a k-way
//! merge (a `BinaryHeap` holding one record per run), so what is held never grows with the
//! input, only the number of runs does (one open file and a 16 KiB buffer each; past
//! [`MAX_FAN_IN`] runs the oldest are merged into one first).
//!
//! Hand-written rather than an external-sort crate: the records are the engine's own, the
//! format is a few lines, and the reading must be defensive (a run is bytes on disk: a torn or
//! garbled one is an error, never a panic or a silently short stream). A run is `MAGIC`, then
//! each record as `len: u32 LE, xxh3: u64 LE, bytes`, then `END` and the record count; runs
//! are never trusted across runs of the engine: the caller starts from an empty directory.
//!
//! Not a `tmproxy_disk` frame: a run is read as a stream by the merge, each record checked as
//! it is taken (a frame's one checksum would prove the run only at its end, after its records
//! were merged), it is never read by another build, and compressing it would put zstd in the
//! sort's hot path.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// A record that can be spilled: totally ordered, and encoded to and from bytes.
pub(crate) trait Record: Ord + Sized {
    /// Appends the record's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The record back from its bytes; Err on anything that is not one.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
    /// Heap bytes it holds beside its own size (for the chunk's bound).
    fn heap_bytes(&self) -> usize;
}

const MAGIC: &[u8; 8] = b"TMSPILL1";
/// The length that marks the end of a run (then the record count).
const END: u32 = u32::MAX;
/// No record the engine spills comes near this: a longer length is a garbled file.
const MAX_RECORD: u32 = 16 << 20;
/// Runs merged at once; more are first merged into one run, oldest first, which bounds the
/// open files and the merge's buffers.
pub(crate) const MAX_FAN_IN: usize = 64;
const BUFFER: usize = 16 << 10;

/// Records pushed, held in a chunk of at most `max_held` bytes, then in runs under `dir`.
pub(crate) struct ExternalSort<T: Record> {
    dir: PathBuf,
    prefix: String,
    chunk: Vec<T>,
    held: usize,
    max_held: usize,
    runs: Vec<PathBuf>,
    /// Names given so far (a merged run gets a new one).
    named: usize,
}

impl<T: Record> ExternalSort<T> {
    /// A spill writing `dir/{prefix}-N.run`; `dir` is created if missing.
    pub(crate) fn new(dir: &Path, prefix: &str, max_held: usize) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(ExternalSort {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            chunk: Vec::new(),
            held: 0,
            max_held: max_held.max(1),
            runs: Vec::new(),
            named: 0,
        })
    }

    /// Bytes held in memory now (the chunk being filled).
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// Run files there now.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Run files written so far, those merged down since included.
    pub(crate) fn written(&self) -> usize {
        self.named
    }

    pub(crate) fn push(&mut self, r: T) -> Result<(), String> {
        self.held += r.heap_bytes() + std::mem::size_of::<T>();
        self.chunk.push(r);
        if self.held >= self.max_held {
            self.write_chunk()?;
        }
        Ok(())
    }

    /// The chunk, sorted, as a new run; then too many runs are merged down.
    fn write_chunk(&mut self) -> Result<(), String> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        self.chunk.sort_unstable();
        let chunk = std::mem::take(&mut self.chunk);
        self.held = 0;
        let path = self.next_name();
        write_run(&path, chunk.into_iter().map(Ok))?;
        self.runs.push(path);
        while self.runs.len() > MAX_FAN_IN {
            let oldest: Vec<PathBuf> = self.runs.drain(..MAX_FAN_IN).collect();
            let path = self.next_name();
            write_run(&path, Merge::<T>::open(&oldest)?)?;
            for p in &oldest {
                let _ = std::fs::remove_file(p);
            }
            self.runs.insert(0, path);
        }
        Ok(())
    }

    fn next_name(&mut self) -> PathBuf {
        self.named += 1;
        self.dir
            .join(format!("{}-{:05}.run", self.prefix, self.named))
    }

    /// Everything pushed, in order (the chunk is written as a run first). Can be called again:
    /// the runs stay until [`ExternalSort::remove`].
    pub(crate) fn merge(&mut self) -> Result<Merge<T>, String> {
        self.write_chunk()?;
        Merge::open(&self.runs)
    }

    /// Deletes the run files.
    pub(crate) fn remove(self) {
        for p in &self.runs {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes `records` (already sorted) as a run at `path`.
fn write_run<T: Record>(
    path: &Path,
    records: impl Iterator<Item = Result<T, String>>,
) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(err)?;
    let mut w = BufWriter::with_capacity(BUFFER * 4, file);
    w.write_all(MAGIC).map_err(err)?;
    let mut buf = Vec::new();
    let mut n = 0u64;
    for r in records {
        buf.clear();
        r?.encode(&mut buf);
        let len = u32::try_from(buf.len())
            .ok()
            .filter(|&l| l <= MAX_RECORD)
            .ok_or_else(|| format!("{}: a record of {} bytes", path.display(), buf.len()))?;
        let sum = xxhash_rust::xxh3::xxh3_64(&buf);
        w.write_all(&len.to_le_bytes()).map_err(err)?;
        w.write_all(&sum.to_le_bytes()).map_err(err)?;
        w.write_all(&buf).map_err(err)?;
        n += 1;
    }
    w.write_all(&END.to_le_bytes()).map_err(err)?;
    w.write_all(&n.to_le_bytes()).map_err(err)?;
    w.flush().map_err(err)
}

/// One run read back, checked as it goes.
struct RunReader {
    path: PathBuf,
    r: BufReader<std::fs::File>,
    read: u64,
    ended: bool,
    buf: Vec<u8>,
}

impl RunReader {
    fn open(path: &Path) -> Result<RunReader, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut r = RunReader {
            path: path.to_path_buf(),
            r: BufReader::with_capacity(BUFFER, file),
            read: 0,
            ended: false,
            buf: Vec::new(),
        };
        let mut magic = [0u8; 8];
        r.exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(r.bad("not a spill run"));
        }
        Ok(r)
    }

    fn bad(&self, what: &str) -> String {
        format!(
            "{}: {what} (a torn or garbled spill file)",
            self.path.display()
        )
    }

    fn exact(&mut self, into: &mut [u8]) -> Result<(), String> {
        self.r.read_exact(into).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => self.bad("ends before its end mark"),
            _ => format!("{}: {e}", self.path.display()),
        })
    }

    fn next<T: Record>(&mut self) -> Result<Option<T>, String> {
        if self.ended {
            return Ok(None);
        }
        let mut len = [0u8; 4];
        self.exact(&mut len)?;
        let len = u32::from_le_bytes(len);
        if len == END {
            let mut n = [0u8; 8];
            self.exact(&mut n)?;
            if u64::from_le_bytes(n) != self.read {
                return Err(self.bad("record count differs from its end mark"));
            }
            let mut more = [0u8; 1];
            if self.r.read(&mut more).map_err(|e| e.to_string())? != 0 {
                return Err(self.bad("bytes after its end mark"));
            }
            self.ended = true;
            return Ok(None);
        }
        if len > MAX_RECORD {
            return Err(self.bad("a record length out of range"));
        }
        let mut sum = [0u8; 8];
        self.exact(&mut sum)?;
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(len as usize, 0);
        self.exact(&mut buf)?;
        if xxhash_rust::xxh3::xxh3_64(&buf) != u64::from_le_bytes(sum) {
            return Err(self.bad("a record's checksum differs"));
        }
        let r = T::decode(&buf).map_err(|e| self.bad(&e))?;
        self.buf = buf;
        self.read += 1;
        Ok(Some(r))
    }
}

/// The k-way merge of runs: every record, in order; the first error ends it.
pub(crate) struct Merge<T: Record> {
    readers: Vec<RunReader>,
    heap: BinaryHeap<Reverse<(T, usize)>>,
    failed: bool,
}

impl<T: Record> Merge<T> {
    fn open(runs: &[PathBuf]) -> Result<Merge<T>, String> {
        let mut m = Merge {
            readers: Vec::with_capacity(runs.len()),
            heap: BinaryHeap::with_capacity(runs.len()),
            failed: false,
        };
        for (i, p) in runs.iter().enumerate() {
            let mut r = RunReader::open(p)?;
            if let Some(rec) = r.next()? {
                m.heap.push(Reverse((rec, i)));
            }
            m.readers.push(r);
        }
        Ok(m)
    }
}

impl<T: Record> Iterator for Merge<T> {
    type Item = Result<T, String>;

    fn next(&mut self) -> Option<Result<T, String>> {
        if self.failed {
            return None;
        }
        let Reverse((rec, i)) = self.heap.pop()?;
        match self.readers.get_mut(i).map(|r| r.next()) {
            Some(Ok(Some(next))) => self.heap.push(Reverse((next, i))),
            Some(Ok(None)) | None => {}
            Some(Err(e)) => {
                self.failed = true;
                return Some(Err(e));
            }
        }
        Some(Ok(rec))
    }
}

pub(crate) mod bytes;

#[cfg(test)]
mod tests;
