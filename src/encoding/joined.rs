//! Coded bodies joined from parts coded apart: a TimeMap asked under another spelling of its
//! URI-R differs from the stored spelling's only in its head and tail, so its coded body is the
//! new head and tail coded (a few hundred bytes) around the memento list coded once per entry,
//! instead of the whole list coded again per spelling (seconds of brotli for a large TimeMap).
//!
//! Every part is coded so that it runs on after any other, byte-aligned and unframed, and the
//! body's own framing goes before the first and after the last. So the list's coded bytes are
//! sent as they are, shared by every spelling, never copied or rewritten, and each joined body
//! is one ordinary stream any client decodes: zstd frames follow one another (RFC 8878 §3.1);
//! gzip parts are raw deflate each ending in a sync flush (an empty stored block, byte-aligned
//! and not final), so they run on as one deflate stream in one gzip member whose CRC-32 is
//! combined from the parts'; brotli parts are bare "catable" streams (RFC 7932 meta-blocks with
//! no window header and no last meta-block, each opening with its first bytes uncompressed,
//! referring to nothing before it and ending byte-aligned), between a window header and an
//! empty last meta-block.

use super::coding::Coding;
use brotli::enc::BrotliEncoderParams;
use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress, Status};
use std::io::{self, Write};

/// One part of a body, coded so that it joins others ([`join`]).
#[derive(Debug, Clone)]
pub struct Part {
    coding: Coding,
    bytes: Bytes,
    /// gzip's trailer is over the whole plain body: each part's CRC-32 and length combine.
    crc: u32,
    len: u64,
}

impl Part {
    /// The coded bytes' size: what a part adds to its holder's memory.
    pub fn coded_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Brotli's window for a joined body, as [`Coding::encoder`] codes whole bodies (22: 4 MiB, the
/// window a brotli decoder is asked to keep). No part refers further back than its own start.
const BROTLI_LGWIN: i32 = 22;

/// The window header of a stream with [`BROTLI_LGWIN`] (RFC 7932 §9.1: `1` then 22 - 17 in
/// three bits), then an empty metadata meta-block (not last, MNIBBLES = 0, no skip bytes) whose
/// fill bits take the stream to a byte boundary, where the first part's meta-blocks begin.
const BROTLI_OPEN: [u8; 2] = [0x6b, 0x00];

/// An empty last meta-block (ISLAST, ISLASTEMPTY), byte-aligned: the end of the stream.
const BROTLI_CLOSE: [u8; 1] = [0x03];

impl Coding {
    /// `data` coded as a part of a body. The memento list is coded once per entry at the levels
    /// of [`Coding::encode`]; a head or tail, coded per spelling, is a few hundred bytes, for
    /// which brotli's quality 2 in a window its size costs a few microseconds (quality 5 sets up
    /// hash tables of a megabyte) and a score of bytes more.
    pub fn part(self, data: &[u8]) -> io::Result<Part> {
        let small = data.len() <= 64 * 1024;
        let bytes = match self {
            Coding::Zstd => zstd::bulk::compress(data, 3)?,
            Coding::Gzip => raw_deflate_synced(data)?,
            Coding::Br => {
                // The smallest window the part fits in (at least brotli's least, 2^10 - 16).
                let fits = usize::BITS - (data.len() + 16).leading_zeros();
                let params = BrotliEncoderParams {
                    quality: if small { 2 } else { 5 },
                    lgwin: (fits as i32).clamp(10, BROTLI_LGWIN),
                    catable: true,
                    bare_stream: true,
                    appendable: true,
                    byte_align: true,
                    use_dictionary: false,
                    size_hint: data.len(),
                    ..BrotliEncoderParams::default()
                };
                let mut w = brotli::CompressorWriter::with_params(Vec::new(), 4096, &params);
                w.write_all(data)?;
                w.flush()?;
                w.into_inner()
            }
        };
        Ok(Part {
            coding: self,
            bytes: Bytes::from(bytes),
            crc: crc32fast::hash(data),
            len: data.len() as u64,
        })
    }
}

/// The body `head`, `list` and `tail` make, in that order, in their coding: one stream a client
/// decodes to the three plain parts one after another, in three pieces to send in order. The
/// first holds the coding's opening and the head, the last the tail and the closing (each
/// copied: a few hundred bytes); the middle is `list`'s own bytes, shared. All three parts must
/// be of one coding.
pub fn join(head: &Part, list: &Part, tail: &Part) -> io::Result<[Bytes; 3]> {
    let coding = head.coding;
    if list.coding != coding || tail.coding != coding {
        return Err(io::Error::other("parts of two codings"));
    }
    let (open, close): (&[u8], Vec<u8>) = match coding {
        Coding::Zstd => (&[], Vec::new()),
        // RFC 1952: magic, deflate, no flags, no time, no extra flags, OS unknown.
        Coding::Gzip => (
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff],
            gzip_close(&[head, list, tail]),
        ),
        Coding::Br => (&BROTLI_OPEN, BROTLI_CLOSE.to_vec()),
    };
    Ok([
        Bytes::from([open, &head.bytes[..]].concat()),
        list.bytes.clone(),
        Bytes::from([&tail.bytes[..], &close[..]].concat()),
    ])
}

/// The end of a gzip member whose deflate stream is `parts` in order: a final, empty block of
/// fixed codes (BFINAL, BTYPE=01, then end-of-block: after a sync flush, the bytes 03 00), then
/// the CRC-32 of the whole plain body, combined from the parts', and its length mod 2^32.
fn gzip_close(parts: &[&Part]) -> Vec<u8> {
    let mut crc = crc32fast::Hasher::new_with_initial_len(0, 0);
    let mut len = 0u64;
    for p in parts {
        crc.combine(&crc32fast::Hasher::new_with_initial_len(p.crc, p.len));
        len += p.len;
    }
    let mut close = vec![0x03, 0x00];
    close.extend_from_slice(&crc.finalize().to_le_bytes());
    close.extend_from_slice(&(len as u32).to_le_bytes());
    close
}

/// `data` as raw deflate (no zlib or gzip framing) ending in a sync flush, at gzip's level.
fn raw_deflate_synced(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut z = Compress::new(Compression::new(6), false);
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    loop {
        let read = usize::try_from(z.total_in()).map_err(io::Error::other)?;
        let status = z
            .compress_vec(&data[read..], &mut out, FlushCompress::Sync)
            .map_err(io::Error::other)?;
        let done = z.total_in() as usize == data.len() && out.len() < out.capacity();
        match status {
            Status::Ok | Status::BufError if done => return Ok(out),
            Status::Ok | Status::BufError => out.reserve(out.capacity().max(64 * 1024)),
            Status::StreamEnd => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn decode(coding: Coding, body: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        match coding {
            Coding::Gzip => {
                // One member: a multi-member reader would hide a join that made two.
                let mut r = flate2::read::GzDecoder::new(body);
                r.read_to_end(&mut plain).expect("gzip");
                let mut rest = Vec::new();
                r.into_inner().read_to_end(&mut rest).expect("rest");
                assert!(rest.is_empty(), "one gzip member, nothing after it");
            }
            Coding::Zstd => {
                zstd::stream::read::Decoder::new(body)
                    .expect("zstd")
                    .read_to_end(&mut plain)
                    .expect("zstd");
            }
            Coding::Br => {
                brotli::Decompressor::new(body, 4096)
                    .read_to_end(&mut plain)
                    .expect("brotli");
            }
        }
        plain
    }

    /// A TimeMap-like text: long runs of near-identical lines, as the list part is.
    fn lines(n: usize, salt: &str) -> Vec<u8> {
        (0..n)
            .map(|i| {
                format!(
                    ",\n<http://a.example/{salt}{}/http://e.com/>; rel=\"memento\"",
                    i * 7919 % 100_003
                )
            })
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn parts_joined_decode_to_the_plain_parts_in_order_in_every_coding() {
        let list = lines(20_000, "web/");
        let big = lines(2_000, "big"); // past the small parts' 64 KiB: coded at quality 5
        let edge = vec![b'a'; 1008]; // brotli's least window holds 1008 bytes, 1009 do not
        let edge2 = [&edge[..], b"b"].concat();
        let cases: [(&[u8], &[u8]); 7] = [
            (b"<http://E.com/>; rel=\"original\"", b"\n"),
            (b"", b""),
            (b"x", b""),
            (&lines(3, "head"), &lines(5, "tail")),
            (&big, b"]}"),
            (&edge, &edge2),
            (&edge2, &edge),
        ];
        for coding in Coding::ALL {
            let shared = coding.part(&list).expect("list");
            for (head, tail) in cases {
                let pieces = join(
                    &coding.part(head).expect("head"),
                    &shared,
                    &coding.part(tail).expect("tail"),
                )
                .expect("join");
                // The list is sent as its own coded bytes, not a copy.
                assert_eq!(pieces[1].as_ptr(), shared.bytes.as_ptr(), "{coding:?}");
                let want = [head, &list[..], tail].concat();
                assert!(
                    decode(coding, &pieces.concat()) == want,
                    "{coding:?} head {} tail {}",
                    head.len(),
                    tail.len()
                );
            }
            // Coded apart, the list is about as small as coded whole.
            let whole = coding.encode(&list).expect("whole");
            assert!(shared.coded_len() < whole.len() * 2, "{coding:?}");
        }
    }

    #[test]
    fn parts_of_two_codings_are_refused() {
        let a = Coding::Gzip.part(b"a").expect("a");
        let b = Coding::Gzip.part(b"b").expect("b");
        let z = Coding::Zstd.part(b"z").expect("z");
        assert!(join(&a, &b, &a).is_ok());
        assert!(join(&a, &z, &b).is_err(), "two codings");
        assert!(join(&z, &a, &b).is_err(), "two codings");
        assert!(join(&a, &b, &z).is_err(), "two codings");
    }
}
