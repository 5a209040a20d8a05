//! The TimeMap stage's bookkeeping, on disk rather than per sampled URL in memory: the finished
//! entries of `timemaps/index.ndjson` (sample line, URL hash, byte offset) and the failures
//! (sample line, reason) go through the engine's external sort ([`ExternalSort`]) in sample-line
//! order, and are merge-joined with `sample.ndjson` read in order, both for what is left to ask
//! and for the index rewritten whole at the end. What is held is the sort's chunk and one
//! record per run while merging, whatever the sample's size.

use crate::engine::sample_file::read_sample;
use crate::engine::sample_file::SampledUrl;
use crate::external_sort::bytes::{put_str, Cursor};
use crate::external_sort::{ExternalSort, Merge, Record};
use crate::pack::{file_name, pack_number, IndexLine};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// The hash each sample line's URL is compared by.
fn url_hash(url: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(url.as_bytes())
}

/// A finished entry: sample line `line`'s TimeMap for the URL hashed `hash`, its index line at
/// byte `offset`. Sorted by line, then offset: the last one for a line is the latest written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Done {
    line: u64,
    offset: u64,
    hash: u64,
}

impl Record for Done {
    fn encode(&self, out: &mut Vec<u8>) {
        for n in [self.line, self.offset, self.hash] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let d = Done {
            line: c.u64()?,
            offset: c.u64()?,
            hash: c.u64()?,
        };
        c.end()?;
        Ok(d)
    }

    fn heap_bytes(&self) -> usize {
        0
    }
}

/// A TimeMap that failed this run: sample line `line`, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Failed {
    pub(super) line: u64,
    pub(super) reason: String,
}

impl Record for Failed {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.line.to_le_bytes());
        put_str(out, &self.reason);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let f = Failed {
            line: c.u64()?,
            reason: c.string()?,
        };
        c.end()?;
        Ok(f)
    }

    fn heap_bytes(&self) -> usize {
        self.reason.len()
    }
}

/// The failures of this run, sorted by sample line when the index is rewritten.
pub(super) fn failures(spill_dir: &Path, max_held: usize) -> Result<ExternalSort<Failed>, String> {
    ExternalSort::new(spill_dir, "timemaps-failed", max_held)
}

/// The finished entries of `dir/index.ndjson`, sorted. Only lines naming the file sample line
/// `i` gets, stored where the line says (its span inside its pack, or its own file for a line
/// with no pack), count here; the URL is matched against the sample's when joined. Torn lines,
/// failures, frames cut off their pack and other samples' entries are left out: asked again.
pub(super) struct Ledger {
    spill: ExternalSort<Done>,
}

impl Ledger {
    pub(super) fn scan(dir: &Path, spill_dir: &Path, max_held: usize) -> Result<Ledger, String> {
        let mut spill = ExternalSort::new(spill_dir, "timemaps-done", max_held)?;
        let Ok(file) = std::fs::File::open(dir.join("index.ndjson")) else {
            return Ok(Ledger { spill });
        };
        let mut offset = 0u64;
        let mut packs = PackSizes::default();
        for line in std::io::BufReader::new(file)
            .split(b'\n')
            .map_while(Result::ok)
        {
            let at = offset;
            offset += line.len() as u64 + 1;
            let Ok(e) = serde_json::from_slice::<IndexLine>(&line) else {
                continue;
            };
            let Some(name) = &e.file else { continue };
            let Some(i) = name
                .strip_suffix(".ndjson")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if *name == file_name(i) && packs.stored(dir, &e) {
                spill.push(Done {
                    line: i as u64,
                    offset: at,
                    hash: url_hash(&e.url),
                })?;
            }
        }
        Ok(Ledger { spill })
    }

    /// Each sample line in order, with the offset of its finished TimeMap's index line if it
    /// has one. Can be called again (the runs stay until [`Ledger::remove`]).
    pub(super) fn join(&mut self, sample: &Path) -> Result<Finished, String> {
        Ok(Finished {
            sample: Box::new(read_sample(sample)?),
            line: 0,
            entries: self.spill.merge()?,
            pending: None,
        })
    }

    /// Deletes the sort's runs.
    pub(super) fn remove(self) {
        self.spill.remove();
    }
}

/// The packs' sizes, each read once a scan (a few dozen packs at most).
#[derive(Default)]
struct PackSizes(HashMap<String, Option<u64>>);

impl PackSizes {
    /// Whether the TimeMap `e` names is there: its frame's span inside a pack of the pattern
    /// (what is in the span is checked when it is read), or its own file.
    fn stored(&mut self, dir: &Path, e: &IndexLine) -> bool {
        let Some(at) = e.location() else {
            return e.pack.is_none() && e.file.as_ref().is_some_and(|f| dir.join(f).is_file());
        };
        if pack_number(&at.pack).is_none() {
            return false;
        }
        let size = *self
            .0
            .entry(at.pack.clone())
            .or_insert_with(|| std::fs::metadata(dir.join(&at.pack)).ok().map(|m| m.len()));
        let end = at.offset.checked_add(at.length);
        at.length > 0 && end.is_some_and(|end| size.is_some_and(|size| end <= size))
    }
}

type SampleLines = Box<dyn Iterator<Item = Result<SampledUrl, String>> + Send>;

/// The sample joined with the sorted entries; a sample line that cannot be read, or a run that
/// does not read back as written, is an error that ends it.
pub(super) struct Finished {
    sample: SampleLines,
    line: u64,
    entries: Merge<Done>,
    pending: Option<Done>,
}

impl Finished {
    /// The offset of the last entry for `line` whose URL hash is `hash`; entries of earlier
    /// lines (none: the sample is met in order) are passed over.
    fn offset(&mut self, line: u64, hash: u64) -> Result<Option<u64>, String> {
        let mut found = None;
        loop {
            if self.pending.is_none() {
                self.pending = self.entries.next().transpose()?;
            }
            match self.pending {
                Some(d) if d.line <= line => {
                    if d.line == line && d.hash == hash {
                        found = Some(d.offset);
                    }
                    self.pending = None;
                }
                _ => return Ok(found),
            }
        }
    }
}

impl Iterator for Finished {
    type Item = Result<(usize, SampledUrl, Option<u64>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = match self.sample.next()? {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let line = self.line;
        self.line += 1;
        let i = usize::try_from(line).unwrap_or(usize::MAX);
        Some(self.offset(line, url_hash(&s.url)).map(|at| (i, s, at)))
    }
}
