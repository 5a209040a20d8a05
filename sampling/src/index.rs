//! Reading a Wayback index: ZipNum secondary-index lines (IA's `SURT timestamp part offset
//! length [block]`, space-separated; pywb's `SURT timestamp` then tab-separated fields), CDX
//! lines (`urlkey timestamp original mimetype statuscode digest length`) and CDXJ lines
//! (`urlkey timestamp {json}`), from plain or gzip files (ZipNum's concatenated gzip members
//! included), streamed a line at a time. Parsing borrows from the line: no allocation per line.

use super::reading::{Inflated, ReadLimits};
use flate2::read::MultiGzDecoder;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// One index line, its fields borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexLine<'a> {
    /// The SURT key.
    pub key: &'a str,
    pub timestamp: Option<&'a str>,
    /// CDX only: the URL as captured.
    pub original: Option<&'a str>,
    pub mime: Option<&'a str>,
    pub status: Option<&'a str>,
    pub digest: Option<&'a str>,
}

/// Why a line is not an index line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadLine {
    Empty,
    /// A CDX header (` CDX N b a m s k r M S V g`) or a `!` metadata line: skip, not an error.
    Header,
    /// No timestamp of 4–14 digits after the key.
    NoTimestamp,
}

fn is_timestamp(s: &str) -> bool {
    (4..=14).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
}

/// Parses one line of any of the three formats.
pub fn parse_line(line: &str) -> Result<IndexLine<'_>, BadLine> {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.trim().is_empty() {
        return Err(BadLine::Empty);
    }
    if line.starts_with(" CDX") || line.starts_with("CDX ") || line.starts_with('!') {
        return Err(BadLine::Header);
    }
    // pywb's ZipNum: "SURT timestamp\tpart\toffset\tlength".
    let head = line.split('\t').next().unwrap_or(line);
    let mut words = head.split(' ').filter(|w| !w.is_empty());
    let key = words.next().ok_or(BadLine::Empty)?;
    let timestamp = words.next().filter(|t| is_timestamp(t));
    let Some(ts) = timestamp else {
        return Err(BadLine::NoTimestamp);
    };
    let mut out = IndexLine {
        key,
        timestamp: Some(ts),
        original: None,
        mime: None,
        status: None,
        digest: None,
    };
    let Some(first) = words.next() else {
        return Ok(out);
    };
    if first.starts_with('{') {
        // CDXJ: the rest of the line is the JSON (offset of `first` within `head`, so the
        // JSON's own spaces survive); its fields found without a JSON parser (hot path).
        let json = &head[first.as_ptr() as usize - head.as_ptr() as usize..];
        out.original = json_str(json, "url");
        out.mime = json_str(json, "mime");
        out.status = json_str(json, "status");
        out.digest = json_str(json, "digest");
        return Ok(out);
    }
    // CDX has original, mimetype, statuscode, digest, … ; ZipNum has part, offset, length.
    if first.contains(':') {
        let (mime, status, digest) = (words.next(), words.next(), words.next());
        if digest.is_some() {
            out.original = Some(first);
            out.mime = mime;
            out.status = status;
            out.digest = digest;
        }
    }
    Ok(out)
}

/// The string value of `"name": "…"` in a flat JSON object (no escapes needed in index values).
fn json_str<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let pat = format!("\"{name}\"");
    let at = json.find(&pat)? + pat.len();
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

/// A reader over an index file: gzip (by its magic bytes) or plain, under the default limits.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    open_counted(
        path,
        std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
        ReadLimits::default(),
    )
}

/// Counts the file's bytes as they are read (before any decompression), for progress: the
/// share of the file read is the share of the input done, gzip or not.
struct Counted<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// [`open`], adding the bytes read from the file to `read`, the bytes after decompression held
/// to `limits` (a gzip bomb is an error naming the limit it broke).
pub fn open_counted(
    path: &Path,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    limits: ReadLimits,
) -> io::Result<Box<dyn BufRead + Send>> {
    let file = Counted {
        inner: std::fs::File::open(path)?,
        read: read.clone(),
    };
    let mut file = BufReader::with_capacity(1 << 16, file);
    let gz = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        let inflated = Inflated::new(MultiGzDecoder::new(file), Some(read), limits);
        Box::new(BufReader::with_capacity(1 << 16, inflated))
    } else {
        Box::new(BufReader::with_capacity(
            1 << 16,
            Inflated::new(file, None, limits),
        ))
    })
}

/// The same for bytes already in hand (an HTTP body).
pub fn from_bytes<R: Read + Send + 'static>(
    mut reader: BufReader<R>,
) -> io::Result<Box<dyn BufRead + Send>> {
    let gz = reader.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::new(MultiGzDecoder::new(reader)))
    } else {
        Box::new(reader)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn ia_zipnum_pywb_zipnum_cdx_and_cdxj_lines() {
        let z = parse_line("com,example)/a 20040101000000 part-00001 1234 567").expect("zipnum");
        assert_eq!(
            (z.key, z.timestamp, z.original),
            ("com,example)/a", Some("20040101000000"), None)
        );
        let p = parse_line("com,example)/b 20050101000000\tindex.cdx.gz\t0\t1845").expect("pywb");
        assert_eq!(
            (p.key, p.timestamp),
            ("com,example)/b", Some("20050101000000"))
        );
        let c = parse_line(
            "com,example)/ 19970101000000 http://www.example.com/ text/html 200 ABCDEF 1234",
        )
        .expect("cdx");
        assert_eq!(c.original, Some("http://www.example.com/"));
        assert_eq!(
            (c.mime, c.status, c.digest),
            (Some("text/html"), Some("200"), Some("ABCDEF"))
        );
        let j = parse_line(
            r#"com,example)/ 20200101000000 {"url": "https://example.com/", "mime": "warc/revisit", "status": "-", "digest": "XYZ"}"#,
        )
        .expect("cdxj");
        assert_eq!(
            (j.original, j.mime, j.status),
            (
                Some("https://example.com/"),
                Some("warc/revisit"),
                Some("-")
            )
        );
        assert_eq!(
            parse_line(" CDX N b a m s k r M S V g"),
            Err(BadLine::Header)
        );
        assert_eq!(
            parse_line("com,example)/ notatime"),
            Err(BadLine::NoTimestamp)
        );
        assert_eq!(parse_line("   "), Err(BadLine::Empty));
    }

    #[test]
    fn gzip_members_concatenated_read_as_one_stream() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("idx.gz");
        let mut bytes = Vec::new();
        for chunk in ["com,a)/ 2001 p 0 1\n", "com,b)/ 2002 p 1 1\n"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(chunk.as_bytes()).expect("gzip");
            bytes.extend(e.finish().expect("gzip"));
        }
        std::fs::write(&path, bytes).expect("write");
        let lines: Vec<String> = open(&path)
            .expect("open")
            .lines()
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(lines, vec!["com,a)/ 2001 p 0 1", "com,b)/ 2002 p 1 1"]);
    }
}
