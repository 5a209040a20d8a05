//! Appending TimeMaps to the packs: one writer (the TimeMap stage's loop), each frame written
//! whole with one `write` call chain before the index line that points at it is appended, so a
//! process killed between the two leaves bytes no line points at, fetched again on resume.

use super::entry::{pack_name, pack_number, Location};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A pack past this many bytes is closed and the next one started: 27 M TimeMaps of a few
/// hundred compressed bytes each make a few dozen packs, not millions of files.
pub const PACK_BYTES: u64 = 1 << 30;

/// The zstd level: fast (the stage is bound by the CDX API, not by this), and a window of at
/// most 2 MiB, well inside what the reader accepts.
const LEVEL: i32 = 3;

/// `ndjson` (one TimeMap's lines) as one zstd frame, with its content size and checksum: a
/// frame cut short, or with a byte changed, fails to decode rather than reading as a TimeMap.
pub fn compress(ndjson: &[u8]) -> Result<Vec<u8>, String> {
    use zstd::zstd_safe::CParameter;
    let mut c = zstd::bulk::Compressor::new(LEVEL).map_err(|e| format!("zstd: {e}"))?;
    c.set_parameter(CParameter::ChecksumFlag(true))
        .map_err(|e| format!("zstd: {e}"))?;
    c.compress(ndjson).map_err(|e| format!("zstd: {e}"))
}

/// The pack TimeMaps are appended to, in `dir`.
pub struct PackWriter {
    dir: PathBuf,
    number: u32,
    file: std::fs::File,
    limit: u64,
}

impl PackWriter {
    /// Appends to the highest-numbered pack in `dir` (or `pack-0000.zst`), a run started again
    /// over the directory going on where the last one stopped; `limit` is [`PACK_BYTES`] but
    /// in tests.
    pub fn open(dir: &Path, limit: u64) -> Result<PackWriter, String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let number = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().and_then(pack_number))
            .max()
            .unwrap_or(0);
        let file = open_pack(dir, number)?;
        Ok(PackWriter {
            dir: dir.to_path_buf(),
            number,
            file,
            limit: limit.max(1),
        })
    }

    /// Appends `frame` and says where it is. The offset is the pack's length as the file
    /// system has it, not one counted here: bytes a failed write left (a full disk) are
    /// passed over, never pointed into.
    pub fn append(&mut self, frame: &[u8]) -> Result<Location, String> {
        let mut offset = self.end()?;
        if offset >= self.limit {
            let next = self.number.checked_add(1).ok_or("too many packs")?;
            self.file = open_pack(&self.dir, next)?;
            self.number = next;
            offset = self.end()?;
        }
        // Not synced, like the index line after it: a killed process loses nothing the kernel
        // has, and a TimeMap a power cut loses is cut off its pack and asked again.
        self.file.write_all(frame).map_err(|e| self.err(e))?;
        Ok(Location {
            pack: pack_name(self.number),
            offset,
            length: frame.len() as u64,
        })
    }

    fn end(&mut self) -> Result<u64, String> {
        self.file.seek(SeekFrom::End(0)).map_err(|e| self.err(e))
    }

    fn err(&self, e: std::io::Error) -> String {
        format!("{}: {e}", self.dir.join(pack_name(self.number)).display())
    }
}

fn open_pack(dir: &Path, number: u32) -> Result<std::fs::File, String> {
    let path = dir.join(pack_name(number));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
}
