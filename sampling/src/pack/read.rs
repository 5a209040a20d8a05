//! Reading a TimeMap back by its served name: its line in `index.ndjson` (found through
//! `index.offsets` when that holds, else the last line naming it, read a line at a time, each
//! at most [`MAX_LINE`] bytes), then its frame, decoded once to check it (size,
//! checksum, nothing after it inside its span) and decoded again as it is streamed. Everything
//! read is taken as hostile: a pack name not of the pattern, a span outside the pack, a frame
//! cut short or changed are errors naming the TimeMap, and nothing outside the span is read.

use super::entry::{pack_number, IndexLine, Location, MAX_LINE};
use super::offsets::{lookup, OFFSETS};
use std::borrow::Borrow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The largest window a frame may ask for (8 MiB): what the writer's level uses with room to
/// spare, and the most the decoder allocates whatever a frame's header claims.
const WINDOW_LOG_MAX: u32 = 23;

/// The last line of `index` naming the written TimeMap `name` (an earlier run's line for the
/// same name is superseded by a later one's). Torn and over-long lines are passed over.
pub fn find(index: impl Read, name: &str) -> Result<Option<IndexLine>, String> {
    let mut r = BufReader::with_capacity(64 << 10, index);
    let mut line = Vec::new();
    let mut found = None;
    loop {
        line.clear();
        let limit = MAX_LINE as u64 + 1;
        let n = (&mut r).take(limit).read_until(b'\n', &mut line);
        if n.map_err(|e| format!("index.ndjson: {e}"))? == 0 {
            return Ok(found);
        }
        if line.len() > MAX_LINE {
            skip_line(&mut r)?;
            continue;
        }
        // Most lines are another TimeMap's: passed over without parsing.
        if memchr::memmem::find(&line, name.as_bytes()).is_none() {
            continue;
        }
        if let Ok(e) = serde_json::from_slice::<IndexLine>(line.trim_ascii_end()) {
            if e.file.as_deref() == Some(name) && e.error.is_none() {
                found = Some(e);
            }
        }
    }
}

/// Reads past the rest of an over-long line.
fn skip_line(r: &mut impl BufRead) -> Result<(), String> {
    loop {
        let buf = r.fill_buf().map_err(|e| format!("index.ndjson: {e}"))?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(p) = memchr::memchr(b'\n', buf) {
            r.consume(p + 1);
            return Ok(());
        }
        let n = buf.len();
        r.consume(n);
    }
}

/// `[at, end)` of a file, read with `pread`: nothing before or after it, whatever the reader
/// over it asks for. A file shorter than the span is an error, not an early end.
struct Span<F> {
    file: F,
    at: u64,
    end: u64,
}

impl<F: Borrow<File>> Read for Span<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.end.saturating_sub(self.at);
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        let got = self.file.borrow().read_at(&mut buf[..n], self.at)?;
        if got == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the pack ends inside the frame",
            ));
        }
        self.at += got as u64;
        Ok(got)
    }
}

type Decoder<F> = zstd::stream::read::Decoder<'static, BufReader<Span<F>>>;

fn decoder<F: Borrow<File>>(file: F, at: &Location) -> std::io::Result<Decoder<F>> {
    let span = Span {
        file,
        at: at.offset,
        end: at.offset.saturating_add(at.length),
    };
    let mut d = zstd::stream::read::Decoder::with_buffer(BufReader::new(span))?.single_frame();
    d.window_log_max(WINDOW_LOG_MAX)?;
    Ok(d)
}

/// One TimeMap's lines, decoded as they are read: at most the decoder's window and buffers
/// held, whatever the TimeMap's size.
pub struct Frame(Decoder<File>);

impl Read for Frame {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

/// The frame `at` points to in `pack`, checked whole before it is handed out: its span inside
/// the pack, one frame that decodes with its checksum and fills the span exactly.
pub fn open_frame(pack: File, at: &Location) -> Result<Frame, String> {
    let size = pack
        .metadata()
        .map_err(|e| format!("{}: {e}", at.pack))?
        .len();
    let inside = at
        .offset
        .checked_add(at.length)
        .is_some_and(|end| end <= size);
    if at.length == 0 || !inside {
        return Err(format!(
            "{} bytes from byte {} is outside {} ({size} bytes)",
            at.length, at.offset, at.pack
        ));
    }
    let damaged =
        |e: std::io::Error| format!("the frame at byte {} of {}: {e}", at.offset, at.pack);
    let mut check = decoder(&pack, at).map_err(damaged)?;
    std::io::copy(&mut check, &mut std::io::sink()).map_err(damaged)?;
    let rest = check.finish();
    if !rest.buffer().is_empty() || rest.get_ref().at != rest.get_ref().end {
        return Err(format!(
            "the frame at byte {} of {} is shorter than its {} bytes",
            at.offset, at.pack, at.length
        ));
    }
    decoder(pack, at).map(Frame).map_err(damaged)
}

/// TimeMap `name` (a name of the pattern `NNNNNN.ndjson`): from its pack when its index line
/// says where, else from its own file (a run of a version that wrote one file per TimeMap).
/// `open` opens a file of the TimeMaps' directory by name (None: not there); `damaged` makes
/// its error from what does not hold. None: the TimeMap is not written.
pub fn open_timemap<E>(
    name: &str,
    open: impl Fn(&str) -> Result<Option<File>, E>,
    damaged: impl Fn(String) -> E,
) -> Result<Option<Box<dyn Read + Send>>, E> {
    let entry = match open("index.ndjson")? {
        Some(index) => {
            let quick = match open(OFFSETS)? {
                Some(offsets) => lookup(&offsets, &index, name),
                None => None,
            };
            match quick {
                Some(entry) => entry,
                None => find(&index, name).map_err(&damaged)?,
            }
        }
        None => None,
    };
    let Some(at) = entry.and_then(|e| e.location()) else {
        return Ok(open(name)?.map(|f| Box::new(f) as Box<dyn Read + Send>));
    };
    if pack_number(&at.pack).is_none() {
        let shown: String = at.pack.chars().take(64).collect();
        return Err(damaged(format!(
            "{name}: its index line names no pack ({shown:?})"
        )));
    }
    let Some(pack) = open(&at.pack)? else {
        return Err(damaged(format!("{name}: {} is missing", at.pack)));
    };
    let frame = open_frame(pack, &at).map_err(|e| damaged(format!("{name}: {e}")))?;
    Ok(Some(Box::new(frame)))
}

/// TimeMap `name` of a local run's TimeMaps directory `dir` (`tmproxy sample --out`), its
/// files opened by path: the operator's own directory, where the server's jobs are opened
/// without following a symlink (`jobs`).
pub fn open_in(dir: &Path, name: &str) -> Result<Option<Box<dyn Read + Send>>, String> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(format!("{name:?} is not a TimeMap's name"));
    }
    let open = |n: &str| match File::open(dir.join(n)) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", dir.join(n).display())),
    };
    open_timemap(name, open, |why| why)
}

#[cfg(test)]
mod tests;
