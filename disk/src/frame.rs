//! One frame around a stored value: the format's magic, its version (u32 LE), a zstd frame of
//! the body, then the CRC-32 (u32 LE) of the body's uncompressed bytes. The checksum is of what
//! the caller wrote, not of the compressed bytes, so it proves the value itself came back, and
//! it is computed as the body streams into the compressor: a million-memento cache entry is
//! never held uncompressed while it is written.
//!
//! This is the byte layout the cache entries (`TMB1`) and the routing profiles file (`TMRP`)
//! were written in before they shared it, unchanged, so what older binaries stored still reads.
//! The reader trusts nothing: a wrong magic, another version, a cut, a damaged compressed
//! frame, a body past the caller's bound or a checksum that differs is each its own
//! [`FrameError`], never a panic or other content.

use crate::checksum::Checksummed;
use std::io::{self, Read, Write};

/// zstd's level 1: about as fast as deflate's fast level and smaller. Both formats are written
/// on the server's own threads (an entry on every miss), so speed before size.
const LEVEL: i32 = 1;

/// The version and the checksum: the bytes besides the magic and the compressed body.
const VERSION_AND_CRC: usize = 4 + 4;

/// A stored format: its magic (the first bytes, telling it from the other formats and from
/// garbage) and the version of its body's shape this build writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub magic: &'static [u8],
    pub version: u32,
}

impl Format {
    pub const fn new(magic: &'static [u8], version: u32) -> Format {
        Format { magic, version }
    }

    /// The bytes around the compressed body: the shortest a frame can be.
    pub const fn framing(&self) -> usize {
        self.magic.len() + VERSION_AND_CRC
    }

    /// Whether `bytes` claim to be of this format (they start with its magic).
    pub fn claims(&self, bytes: &[u8]) -> bool {
        bytes.starts_with(self.magic)
    }

    fn name(&self) -> String {
        String::from_utf8_lossy(self.magic).into_owned()
    }
}

/// Why stored bytes were not a frame of the format asked for, or could not be written as one.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("not a {magic} frame (its first bytes are not {magic})")]
    BadMagic { magic: String },
    #[error("shorter than its framing ({len} bytes, a frame is at least {framing})")]
    Truncated { len: usize, framing: usize },
    #[error("format version {found}, this build reads version {expected}")]
    UnknownVersion { found: u32, expected: u32 },
    #[error("damaged: cannot inflate it: {0}")]
    Decompress(#[source] io::Error),
    #[error("inflates past {cap} bytes")]
    TooLarge { cap: u64 },
    #[error("damaged: checksum mismatch (stored {stored:08x}, computed {computed:08x})")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("cannot compress it: {0}")]
    Compress(#[source] io::Error),
}

/// Writes a frame into `inner` as the body is written into it: the header at once, the body
/// compressed and checksummed as it comes, the checksum at [`FrameWriter::finish`]. Dropped
/// unfinished, what `inner` holds is no frame (it has no checksum).
pub struct FrameWriter<W: Write> {
    sink: Checksummed<zstd::stream::write::Encoder<'static, W>>,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(mut inner: W, format: Format) -> Result<FrameWriter<W>, FrameError> {
        inner
            .write_all(format.magic)
            .and_then(|()| inner.write_all(&format.version.to_le_bytes()))
            .map_err(FrameError::Compress)?;
        let compressor =
            zstd::stream::write::Encoder::new(inner, LEVEL).map_err(FrameError::Compress)?;
        Ok(FrameWriter {
            sink: Checksummed::new(compressor),
        })
    }

    /// Ends the compressed body and appends the checksum; `inner` back, holding the frame.
    pub fn finish(self) -> Result<W, FrameError> {
        let (compressor, crc, _len) = self.sink.finish().map_err(FrameError::Compress)?;
        let mut inner = compressor.finish().map_err(FrameError::Compress)?;
        inner
            .write_all(&crc.to_le_bytes())
            .map_err(FrameError::Compress)?;
        Ok(inner)
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}

/// `body` framed as `format`, in memory.
pub fn encode(format: Format, body: &[u8]) -> Result<Vec<u8>, FrameError> {
    let out = Vec::with_capacity(body.len() / 3 + format.framing());
    let mut w = FrameWriter::new(out, format)?;
    w.write_all(body).map_err(FrameError::Compress)?;
    w.finish()
}

/// The body of a frame of `format`, inflated to at most `cap` bytes (a damaged or planted frame
/// cannot make a read allocate without bound) and checked against its checksum.
pub fn decode(format: Format, bytes: &[u8], cap: u64) -> Result<Vec<u8>, FrameError> {
    let Some(rest) = bytes.strip_prefix(format.magic) else {
        return Err(FrameError::BadMagic {
            magic: format.name(),
        });
    };
    let truncated = || FrameError::Truncated {
        len: bytes.len(),
        framing: format.framing(),
    };
    let (version, rest) = rest.split_first_chunk::<4>().ok_or_else(truncated)?;
    let found = u32::from_le_bytes(*version);
    if found != format.version {
        return Err(FrameError::UnknownVersion {
            found,
            expected: format.version,
        });
    }
    let (frame, stored) = rest.split_last_chunk::<4>().ok_or_else(truncated)?;
    let stored = u32::from_le_bytes(*stored);
    let mut body = Vec::new();
    zstd::stream::read::Decoder::with_buffer(frame)
        .map_err(FrameError::Decompress)?
        // One frame, as written: bytes after it are damage, not a second body.
        .single_frame()
        .take(cap.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(FrameError::Decompress)?;
    if body.len() as u64 > cap {
        return Err(FrameError::TooLarge { cap });
    }
    let computed = crc32fast::hash(&body);
    if computed != stored {
        return Err(FrameError::ChecksumMismatch { stored, computed });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Format = Format::new(b"TEST", 3);

    fn body() -> Vec<u8> {
        (0..5000u32)
            .flat_map(|i| format!("line {} of the body\n", i % 97).into_bytes())
            .collect()
    }

    #[test]
    fn a_body_reads_back_from_its_frame() {
        let body = body();
        let framed = encode(TEST, &body).expect("encodes");
        assert!(TEST.claims(&framed));
        assert!(
            framed.len() * 5 < body.len(),
            "compressed: {}",
            framed.len()
        );
        assert_eq!(decode(TEST, &framed, 1 << 20).expect("decodes"), body);
        assert_eq!(
            decode(TEST, &encode(TEST, b"").expect("empty"), 0).expect("empty"),
            b""
        );
    }

    #[test]
    fn the_layout_is_magic_version_zstd_crc() {
        let body = body();
        let framed = encode(TEST, &body).expect("encodes");
        assert_eq!(&framed[..4], b"TEST");
        assert_eq!(&framed[4..8], &3u32.to_le_bytes());
        let crc = &framed[framed.len() - 4..];
        assert_eq!(crc, &crc32fast::hash(&body).to_le_bytes());
        let inflated = zstd::decode_all(&framed[8..framed.len() - 4]).expect("a zstd frame");
        assert_eq!(inflated, body);
    }

    #[test]
    fn streamed_writes_frame_the_same_bytes() {
        let body = body();
        let mut w = FrameWriter::new(Vec::new(), TEST).expect("writer");
        for piece in body.chunks(7) {
            w.write_all(piece).expect("write");
        }
        let streamed = w.finish().expect("finish");
        assert_eq!(decode(TEST, &streamed, 1 << 20).expect("decodes"), body);
    }

    #[test]
    fn each_wrong_thing_is_named() {
        let body = body();
        let framed = encode(TEST, &body).expect("encodes");
        let cap = 1 << 20;
        let err = |bytes: &[u8]| decode(TEST, bytes, cap).expect_err("refused");

        assert!(matches!(
            err(b"NOPE\x03\0\0\0"),
            FrameError::BadMagic { .. }
        ));
        assert!(matches!(err(b"TES"), FrameError::BadMagic { .. }));
        assert!(matches!(err(b"TEST\x03\0"), FrameError::Truncated { .. }));
        assert!(matches!(
            err(b"TEST\x03\0\0\0\0"),
            FrameError::Truncated { .. }
        ));

        let mut newer = framed.clone();
        newer[4] = 4;
        let why = err(&newer);
        assert!(matches!(
            why,
            FrameError::UnknownVersion {
                found: 4,
                expected: 3
            }
        ));
        assert!(why.to_string().contains("format version 4"), "{why}");

        let mut crc = framed.clone();
        let last = crc.len() - 1;
        crc[last] ^= 1;
        assert!(matches!(err(&crc), FrameError::ChecksumMismatch { .. }));

        let mut frame = framed.clone();
        frame[20] ^= 0xff;
        assert!(matches!(
            err(&frame),
            FrameError::Decompress(_) | FrameError::ChecksumMismatch { .. }
        ));

        assert!(matches!(
            decode(TEST, &framed, body.len() as u64 - 1),
            Err(FrameError::TooLarge { .. })
        ));
        assert!(decode(TEST, &framed, body.len() as u64).is_ok());
    }

    #[test]
    fn damage_anywhere_is_refused_never_misread() {
        let body = body();
        let framed = encode(TEST, &body).expect("encodes");
        let mut refused = 0;
        for at in 0..framed.len() {
            let mut bad = framed.clone();
            bad[at] ^= 0x20;
            // A flip in a zstd header field that leaves the content (a window-size hint) may
            // read, as the very same body; any other content is a failure.
            match decode(TEST, &bad, 1 << 20) {
                Err(_) => refused += 1,
                Ok(read) => assert_eq!(read, body, "flip at {at} read other content"),
            }
        }
        assert!(
            refused * 10 > framed.len() * 9,
            "{refused} of {}",
            framed.len()
        );
        for len in 0..framed.len() {
            assert!(
                decode(TEST, &framed[..len], 1 << 20).is_err(),
                "cut at {len}"
            );
        }
    }
}
