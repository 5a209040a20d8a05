//! Reading a hostile index under limits: lines of at most `[sampling] max_line` bytes (a longer
//! one is skipped to its newline without keeping its bytes), lines that are not UTF-8 handed back
//! as such with their number (the run sets them aside and goes on), decompressed input bounded
//! by a size (`max_input_bytes`) and a ratio to the compressed bytes (`max_gzip_ratio`, a gzip
//! bomb), and the input's order checked (SURT key, then timestamp: unsorted or concatenated
//! input is refused with the line number rather than sorted, which would need the whole input).

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The limits of reading one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The longest line kept, in bytes, its newline not counted.
    pub max_line: usize,
    /// The most bytes read from the input after decompression (0 = no limit).
    pub max_input_bytes: u64,
    /// The most decompressed bytes per compressed byte of a gzip input (0 = no limit), checked
    /// once past [`RATIO_FLOOR`] bytes (a small file's ratio says nothing).
    pub max_gzip_ratio: u64,
}

/// Decompressed bytes before the ratio is checked.
pub const RATIO_FLOOR: u64 = 1 << 20;

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_line: 64 * 1024,
            max_input_bytes: 64 << 30,
            max_gzip_ratio: 100,
        }
    }
}

/// Counts decompressed bytes and refuses to go past the limits. `compressed` is the count of
/// bytes read from the file (None: the input is not compressed, no ratio to check).
pub struct Inflated<R> {
    inner: R,
    out: u64,
    compressed: Option<Arc<AtomicU64>>,
    limits: ReadLimits,
}

impl<R> Inflated<R> {
    pub fn new(inner: R, compressed: Option<Arc<AtomicU64>>, limits: ReadLimits) -> Self {
        Inflated {
            inner,
            out: 0,
            compressed,
            limits,
        }
    }
}

impl<R: Read> Read for Inflated<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out += n as u64;
        let l = self.limits;
        if l.max_input_bytes > 0 && self.out > l.max_input_bytes {
            return Err(io::Error::other(format!(
                "the input is larger than [sampling] max_input_bytes ({} bytes) once decompressed",
                l.max_input_bytes
            )));
        }
        if let Some(c) = &self.compressed {
            let c = c.load(Ordering::Relaxed).max(1);
            if l.max_gzip_ratio > 0
                && self.out > RATIO_FLOOR
                && self.out > c.saturating_mul(l.max_gzip_ratio)
            {
                return Err(io::Error::other(format!(
                    "the input decompresses to more than [sampling] max_gzip_ratio ({}) times its \
                     compressed size ({} bytes from {c}): a gzip bomb?",
                    l.max_gzip_ratio, self.out
                )));
            }
        }
        Ok(n)
    }
}

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Text(&'a str),
    /// Longer than `max_line`: its length, and its first bytes (to show where it was).
    TooLong {
        bytes: u64,
        head: String,
    },
    /// Not UTF-8: the byte offset of the first bad byte, and the line made readable.
    NotUtf8 {
        at: usize,
        lossy: String,
    },
}

/// Lines of at most `max_line` bytes, numbered from 1; memory is `max_line` plus the reader's
/// buffer whatever the input holds.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    number: u64,
    max_line: usize,
}

/// What a too-long or non-UTF-8 line shows of itself.
const HEAD: usize = 200;

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, max_line: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            number: 0,
            max_line: max_line.max(1),
        }
    }

    /// The next line and its number; None at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        // At most max_line bytes, its newline, and one more to tell a longer line.
        let cap = self.max_line as u64 + 2;
        let n = (&mut self.inner)
            .take(cap)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        let ended = self.buf.last() == Some(&b'\n');
        let mut body = self.buf.len() - usize::from(ended);
        if self.buf[..body].ends_with(b"\r") {
            body -= 1;
        }
        if body > self.max_line {
            let head = String::from_utf8_lossy(&self.buf[..HEAD.min(body)]).into_owned();
            let mut bytes = n as u64 - u64::from(ended);
            if !ended {
                bytes += skip_line(&mut self.inner)?;
            }
            self.buf.clear();
            self.buf.shrink_to(self.max_line + 2);
            return Ok(Some((self.number, Line::TooLong { bytes, head })));
        }
        let line = &self.buf[..body];
        Ok(Some(match std::str::from_utf8(line) {
            Ok(s) => (self.number, Line::Text(s)),
            Err(e) => {
                let lossy = String::from_utf8_lossy(&line[..HEAD.min(line.len())]).into_owned();
                (
                    self.number,
                    Line::NotUtf8 {
                        at: e.valid_up_to(),
                        lossy,
                    },
                )
            }
        }))
    }
}

/// Skips to the end of the line (its newline consumed, not counted), keeping none of it; the
/// bytes skipped.
fn skip_line(r: &mut impl BufRead) -> io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(skipped);
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => {
                r.consume(i + 1);
                return Ok(skipped + i as u64);
            }
            None => {
                let n = chunk.len();
                skipped += n as u64;
                r.consume(n);
            }
        }
    }
}

/// The order of index lines: by SURT key, then timestamp (a ZipNum secondary index, a CDX or a
/// CDXJ file sorted as `LC_ALL=C sort` leaves it). Keeps the previous line, nothing more.
#[derive(Debug, Default)]
pub struct OrderCheck {
    key: String,
    timestamp: String,
    line: String,
    number: u64,
}

impl OrderCheck {
    /// Ok when line `number` (its key, timestamp and whole text) comes after the previous one;
    /// a key or timestamp going backwards (unsorted, or a file concatenated to itself) or a line
    /// repeated as it is is refused, naming the line.
    pub fn check(
        &mut self,
        key: &str,
        timestamp: &str,
        text: &str,
        number: u64,
    ) -> Result<(), String> {
        if self.number > 0 {
            let back = (key, timestamp) < (self.key.as_str(), self.timestamp.as_str());
            if back || text == self.line {
                let what = if back {
                    "goes backwards"
                } else {
                    "repeats the line before it"
                };
                return Err(format!(
                    "input line {number} {what} (`{key} {timestamp}` after line {} `{} {}`): the \
                     input must be sorted by SURT key then timestamp, each line once (a \
                     concatenated or unsorted index); refused, not sorted",
                    self.number, self.key, self.timestamp
                ));
            }
        }
        self.key.clear();
        self.key.push_str(key);
        self.timestamp.clear();
        self.timestamp.push_str(timestamp);
        self.line.clear();
        self.line.push_str(text);
        self.number = number;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<(u64, String)> {
        let mut r = LineReader::new(io::BufReader::with_capacity(16, input), max);
        let mut out = Vec::new();
        while let Some((n, l)) = r.next_line().expect("read") {
            out.push((n, format!("{l:?}")));
        }
        out
    }

    #[test]
    fn long_lines_are_skipped_and_bad_bytes_named_with_their_line() {
        let mut input = b"ab\r\n".to_vec();
        input.extend(vec![b'x'; 100]);
        input.extend(b"\nok\nb\xffd\nexactly8\nlast");
        let got = lines(&input, 8);
        assert_eq!(got[0], (1, "Text(\"ab\")".into()));
        assert!(got[1].1.starts_with("TooLong { bytes: 100,"), "{got:?}");
        assert_eq!(got[2], (3, "Text(\"ok\")".into()));
        assert!(got[3].1.starts_with("NotUtf8 { at: 1"), "{got:?}");
        assert_eq!(got[4], (5, "Text(\"exactly8\")".into()));
        assert_eq!(got[5], (6, "Text(\"last\")".into()));
        assert_eq!(got.len(), 6);
        // A line with no newline at all, longer than the limit.
        let got = lines(&[0u8; 1000], 8);
        assert_eq!(got.len(), 1);
        assert!(got[0].1.starts_with("TooLong { bytes: 1000"), "{got:?}");
    }

    #[test]
    fn the_order_is_key_then_timestamp_and_a_repeat_is_refused() {
        let mut o = OrderCheck::default();
        assert!(o.check("com,a)/", "2001", "com,a)/ 2001 p 0 1", 1).is_ok());
        assert!(o.check("com,a)/", "2002", "com,a)/ 2002 p 0 1", 2).is_ok());
        // The same key and time in another block, or another capture: not a repeat.
        assert!(o.check("com,a)/", "2002", "com,a)/ 2002 p 9 1", 3).is_ok());
        assert!(o
            .check("com,a)/b", "1999", "com,a)/b 1999 p 0 1", 4)
            .is_ok());
        let e = o
            .check("com,a)/b", "1999", "com,a)/b 1999 p 0 1", 5)
            .unwrap_err();
        assert!(e.contains("input line 5 repeats"), "{e}");
        let e = o
            .check("com,a)/", "2003", "com,a)/ 2003 p 0 1", 6)
            .unwrap_err();
        assert!(e.contains("input line 6 goes backwards"), "{e}");
    }

    #[test]
    fn a_bomb_is_stopped_by_its_ratio_and_any_input_by_its_size() {
        let limits = ReadLimits {
            max_line: 10,
            max_input_bytes: 0,
            max_gzip_ratio: 10,
        };
        let compressed = Arc::new(AtomicU64::new(1000));
        let mut r = Inflated::new(io::repeat(0), Some(compressed), limits);
        let e = io::copy(&mut r, &mut io::sink()).unwrap_err();
        assert!(e.to_string().contains("max_gzip_ratio (10)"), "{e}");
        let limits = ReadLimits {
            max_input_bytes: 5000,
            ..limits
        };
        let mut r = Inflated::new(io::repeat(b'a').take(5001), None, limits);
        let e = io::copy(&mut r, &mut io::sink()).unwrap_err();
        assert!(e.to_string().contains("max_input_bytes (5000"), "{e}");
        let mut r = Inflated::new(io::repeat(b'a').take(5000), None, limits);
        assert_eq!(io::copy(&mut r, &mut io::sink()).expect("within"), 5000);
    }
}
