//! `timemaps/index.offsets`: where each sample line's line of `index.ndjson` starts, 8 bytes
//! (little-endian) a sample line, `u64::MAX` for none; written beside the index when the stage
//! rewrites it in sample order, and removed before a run appends to the index again, so one
//! that is there describes the index as it stands. A TimeMap found by name is one `pread` here
//! and one there, not a scan of the index; whatever the file says is checked (a line start, the
//! name on the line), and anything that does not hold falls back to the scan.

use super::entry::{IndexLine, MAX_LINE};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The file's name in `timemaps/`.
pub const OFFSETS: &str = "index.offsets";

/// The record of a sample line: its index line's first byte, or none.
pub fn offset_record(at: Option<u64>) -> [u8; 8] {
    at.unwrap_or(u64::MAX).to_le_bytes()
}

/// What the offsets say of TimeMap `name` (`NNNNNN.ndjson`): Some(Some(line)) its index line,
/// Some(None) no TimeMap written for its sample line (a failure, or past the end), None when
/// they cannot say (no such record, a line that is not the name's): scan the index.
pub fn lookup(offsets: &File, index: &File, name: &str) -> Option<Option<IndexLine>> {
    let i: u64 = name.strip_suffix(".ndjson")?.parse().ok()?;
    let mut record = [0u8; 8];
    offsets.read_exact_at(&mut record, i.checked_mul(8)?).ok()?;
    let at = u64::from_le_bytes(record);
    if at == u64::MAX {
        return Some(None);
    }
    // A line starts at 0 or after a newline: nothing read from mid-line.
    if at > 0 {
        let mut before = [0u8; 1];
        index.read_exact_at(&mut before, at - 1).ok()?;
        if before[0] != b'\n' {
            return None;
        }
    }
    let line = read_line(index, at)?;
    let e = serde_json::from_slice::<IndexLine>(line.trim_ascii_end()).ok()?;
    match (e.file.as_deref(), &e.error) {
        (Some(f), None) if f == name => Some(Some(e)),
        (None, Some(_)) => Some(None),
        _ => None,
    }
}

/// The line from byte `at`, at most [`MAX_LINE`] bytes; None past the end or when longer.
fn read_line(index: &File, at: u64) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = index
            .read_at(&mut chunk, at.checked_add(line.len() as u64)?)
            .ok()?;
        if n == 0 {
            return (!line.is_empty()).then_some(line);
        }
        if let Some(p) = memchr::memchr(b'\n', &chunk[..n]) {
            line.extend_from_slice(&chunk[..p]);
            return Some(line);
        }
        line.extend_from_slice(&chunk[..n]);
        if line.len() > MAX_LINE {
            return None;
        }
    }
}
