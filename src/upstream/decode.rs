//! Content codings an archive may send a memento in (gzip, deflate, br, zstd), inflated a
//! bounded piece at a time from a coded body already in memory: however far a few coded bytes
//! inflate (a decompression bomb), one step yields at most about one piece, so its inflated size
//! is checked against a cap without ever holding it. Pure: bytes in, bytes out.

use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, HeapAlloc, HuffmanCode};
use bytes::Bytes;
use std::io::Write;

/// A content coding we can inflate (`Content-Encoding`, RFC 9110 §8.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Gzip,
    /// The zlib format, as HTTP's `deflate` is (RFC 9110 §8.4.1.2).
    Deflate,
    Br,
    Zstd,
}

/// zstd frames asking for a window over 2^23 bytes (8 MiB) are refused, as browsers refuse
/// them: the window is memory the decoder must hold.
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

impl Codec {
    /// The coding named by a `Content-Encoding` token (`x-gzip` is gzip, RFC 9110 §8.4.1.3).
    pub fn from_token(token: &str) -> Option<Codec> {
        match token.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(Codec::Gzip),
            "deflate" => Some(Codec::Deflate),
            "br" => Some(Codec::Br),
            "zstd" => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// The most memory its decoder may hold besides the pieces it yields (its window), to be
    /// charged to the byte budget while it runs.
    pub fn state_bytes(self) -> u64 {
        match self {
            Codec::Gzip | Codec::Deflate => 64 * 1024,
            // RFC 7932's largest window; large windows are refused below.
            Codec::Br => 16 * 1024 * 1024,
            Codec::Zstd => 1 << ZSTD_WINDOW_LOG_MAX,
        }
    }
}

type Brotli = BrotliState<HeapAlloc<u8>, HeapAlloc<u32>, HeapAlloc<HuffmanCode>>;

enum Kind {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    Br(Box<Brotli>),
    Zstd(zstd::stream::raw::Decoder<'static>),
}

/// A coded body being inflated piece by piece ([`Inflate::next_piece`]).
pub struct Inflate {
    kind: Kind,
    coded: Bytes,
    /// How much of `coded` has been consumed.
    pos: usize,
    finished: bool,
}

impl Inflate {
    pub fn new(codec: Codec, coded: Bytes) -> std::io::Result<Inflate> {
        let kind = match codec {
            Codec::Gzip => Kind::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            Codec::Deflate => Kind::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            Codec::Br => {
                let mut state = Brotli::new(
                    HeapAlloc::new(0),
                    HeapAlloc::new(0),
                    HeapAlloc::new(HuffmanCode::default()),
                );
                // Large-window brotli (up to 1 GiB of window) is not HTTP's `br`.
                state.large_window = false;
                Kind::Br(Box::new(state))
            }
            Codec::Zstd => {
                let mut d = zstd::stream::raw::Decoder::new()?;
                d.set_parameter(zstd::stream::raw::DParameter::WindowLogMax(
                    ZSTD_WINDOW_LOG_MAX,
                ))?;
                Kind::Zstd(d)
            }
        };
        Ok(Inflate {
            kind,
            coded,
            pos: 0,
            finished: false,
        })
    }

    /// The next inflated bytes, about `max` at most (flate's own 32 KiB buffer may add to
    /// it); None once the body is inflated whole. An error for a body that is not in its
    /// coding or ends early.
    pub fn next_piece(&mut self, max: usize) -> std::io::Result<Option<Vec<u8>>> {
        if self.finished {
            return Ok(None);
        }
        let coded = &self.coded[..];
        let piece = match &mut self.kind {
            Kind::Gzip(w) => flate_piece(w, coded, &mut self.pos, &mut self.finished, max)?,
            Kind::Deflate(w) => flate_piece(w, coded, &mut self.pos, &mut self.finished, max)?,
            Kind::Br(state) => brotli_piece(state, coded, &mut self.pos, &mut self.finished, max)?,
            Kind::Zstd(d) => zstd_piece(d, coded, &mut self.pos, &mut self.finished, max)?,
        };
        Ok((!piece.is_empty() || !self.finished).then_some(piece))
    }
}

/// The flate2 writers: each `write` inflates into their 32 KiB buffer and hands the previous
/// buffer to `Vec`, so the `Vec` grows by at most that per call.
trait Flate: Write {
    fn out(&mut self) -> &mut Vec<u8>;
    fn end(&mut self) -> std::io::Result<()>;
}

impl Flate for flate2::write::MultiGzDecoder<Vec<u8>> {
    fn out(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
    fn end(&mut self) -> std::io::Result<()> {
        self.try_finish()
    }
}

impl Flate for flate2::write::ZlibDecoder<Vec<u8>> {
    fn out(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
    fn end(&mut self) -> std::io::Result<()> {
        self.try_finish()
    }
}

fn flate_piece(
    w: &mut impl Flate,
    coded: &[u8],
    pos: &mut usize,
    finished: &mut bool,
    max: usize,
) -> std::io::Result<Vec<u8>> {
    while w.out().len() < max && !*finished {
        if *pos < coded.len() {
            let n = w.write(&coded[*pos..])?;
            // 0: the stream has ended; what follows it is not the memento.
            *pos = if n == 0 { coded.len() } else { *pos + n };
        } else {
            w.end()?;
            *finished = true;
        }
    }
    Ok(std::mem::take(w.out()))
}

fn brotli_piece(
    state: &mut Brotli,
    coded: &[u8],
    pos: &mut usize,
    finished: &mut bool,
    max: usize,
) -> std::io::Result<Vec<u8>> {
    let mut out = vec![0u8; max];
    let (mut avail_out, mut out_at, mut total) = (max, 0usize, 0usize);
    let mut avail_in = coded.len() - *pos;
    let result = BrotliDecompressStream(
        &mut avail_in,
        pos,
        coded,
        &mut avail_out,
        &mut out_at,
        &mut out,
        &mut total,
        state,
    );
    out.truncate(out_at);
    match result {
        BrotliResult::NeedsMoreOutput => Ok(out),
        BrotliResult::ResultSuccess => {
            *finished = true;
            Ok(out)
        }
        BrotliResult::NeedsMoreInput => Err(truncated("br")),
        BrotliResult::ResultFailure => Err(std::io::Error::other("not a valid br stream")),
    }
}

fn zstd_piece(
    d: &mut zstd::stream::raw::Decoder<'static>,
    coded: &[u8],
    pos: &mut usize,
    finished: &mut bool,
    max: usize,
) -> std::io::Result<Vec<u8>> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    let mut out = vec![0u8; max];
    let mut input = InBuffer {
        src: coded,
        pos: *pos,
    };
    let mut output = OutBuffer::around(&mut out[..]);
    // Until some output, or the input is used up (a frame header gives none). With no input
    // left, a run still drains what the decoder holds.
    let hint = loop {
        let hint = d.run(&mut input, &mut output)?;
        if output.pos() > 0 || input.pos >= coded.len() {
            break hint;
        }
    };
    let produced = output.pos();
    *pos = input.pos;
    if input.pos == coded.len() && produced < max {
        // All input in and room left over: the decoder has nothing more to give.
        if hint != 0 {
            return Err(truncated("zstd"));
        }
        *finished = true;
    }
    out.truncate(produced);
    Ok(out)
}

fn truncated(coding: &str) -> std::io::Error {
    std::io::Error::other(format!("the {coding} stream ends early"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflate_all(codec: Codec, coded: Vec<u8>, piece: usize) -> std::io::Result<Vec<u8>> {
        let mut i = Inflate::new(codec, Bytes::from(coded))?;
        let mut all = Vec::new();
        while let Some(p) = i.next_piece(piece)? {
            assert!(p.len() <= piece + 32 * 1024, "a piece of {}", p.len());
            all.extend_from_slice(&p);
        }
        Ok(all)
    }

    fn coded(codec: Codec, plain: &[u8]) -> Vec<u8> {
        match codec {
            Codec::Gzip => {
                let mut w = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                w.write_all(plain).expect("gz");
                w.finish().expect("gz")
            }
            Codec::Deflate => {
                let mut w = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
                w.write_all(plain).expect("zlib");
                w.finish().expect("zlib")
            }
            Codec::Br => {
                let mut out = Vec::new();
                {
                    let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                    w.write_all(plain).expect("br");
                }
                out
            }
            Codec::Zstd => zstd::stream::encode_all(plain, 3).expect("zstd"),
        }
    }

    #[test]
    fn each_coding_inflates_back_in_bounded_pieces() {
        let plain: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Br, Codec::Zstd] {
            let back = inflate_all(codec, coded(codec, &plain), 16 * 1024).expect("inflates");
            assert_eq!(back, plain, "{codec:?}");
        }
    }

    #[test]
    fn a_bomb_yields_one_piece_at_a_time() {
        let zeros = vec![0u8; 64 << 20];
        for codec in [Codec::Gzip, Codec::Br, Codec::Zstd] {
            let bomb = coded(codec, &zeros);
            let mut i = Inflate::new(codec, Bytes::from(bomb)).expect("decoder");
            let p = i.next_piece(4096).expect("a piece").expect("not the end");
            assert!(!p.is_empty() && p.len() <= 4096 + 32 * 1024, "{codec:?}");
        }
    }

    #[test]
    fn truncated_or_foreign_bodies_are_errors() {
        let plain = vec![7u8; 100_000];
        for codec in [Codec::Gzip, Codec::Br, Codec::Zstd] {
            let mut c = coded(codec, &plain);
            c.truncate(c.len() / 2);
            assert!(inflate_all(codec, c, 8192).is_err(), "{codec:?} truncated");
            let foreign = b"<html>not coded at all</html>".to_vec();
            assert!(
                inflate_all(codec, foreign, 8192).is_err(),
                "{codec:?} foreign"
            );
        }
        assert_eq!(Codec::from_token(" X-GZIP "), Some(Codec::Gzip));
        assert_eq!(Codec::from_token("compress"), None);
    }
}
