//! Coded bodies joined from parts coded apart: a TimeMap asked under another spelling of its
//! URI-R differs from the stored spelling's only in its head and tail, so its coded body is the
//! new head and tail coded (a few hundred bytes) around the memento list coded once per entry,
//! instead of the whole list coded again per spelling (seconds of brotli for a large TimeMap).
//!
//! Each coding has its own way to be joined, and each joined body is one ordinary stream any
//! client decodes: zstd frames follow one another (RFC 8878 §3.1); gzip parts are raw deflate
//! each ending in a sync flush (an empty stored block, byte-aligned and not final), so they run
//! on as one deflate stream in one gzip member whose CRC-32 is combined from the parts'; brotli
//! parts are "catable" streams that the `brotli` crate's `BroCatli` splices into one stream.

use super::Coding;
use brotli::concat::{BroCatli, BroCatliResult};
use brotli::enc::BrotliEncoderParams;
use flate2::{Compress, Compression, FlushCompress, Status};
use std::io::{self, Write};

/// One part of a body, coded so that it joins others ([`join`]).
#[derive(Debug, Clone)]
pub struct Part {
    coding: Coding,
    first: bool,
    bytes: Vec<u8>,
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

/// Brotli's window, as [`Coding::encoder`] codes whole bodies (22: 4 MiB).
const BROTLI_LGWIN: i32 = 22;

impl Coding {
    /// `data` coded as a part of a body. The `first` part of a body is coded so that others may
    /// follow it (brotli: appendable); every other one so that it may follow (brotli: catable,
    /// without the static dictionary, which a stream's later parts may not use).
    pub fn part(self, data: &[u8], first: bool) -> io::Result<Part> {
        let bytes = match self {
            Coding::Zstd => zstd::bulk::compress(data, 3)?,
            Coding::Gzip => raw_deflate_synced(data)?,
            Coding::Br => {
                let params = BrotliEncoderParams {
                    quality: 5,
                    lgwin: BROTLI_LGWIN,
                    appendable: first,
                    catable: !first,
                    use_dictionary: first,
                    ..BrotliEncoderParams::default()
                };
                let mut w = brotli::CompressorWriter::with_params(Vec::new(), 64 * 1024, &params);
                w.write_all(data)?;
                w.flush()?;
                w.into_inner()
            }
        };
        let mut crc = crc32fast::Hasher::new();
        crc.update(data);
        Ok(Part {
            coding: self,
            first,
            bytes,
            crc: crc.finalize(),
            len: data.len() as u64,
        })
    }
}

/// The body the `parts` make, in order, coded in their coding: one stream a client decodes to
/// the parts' plain bytes one after another. The first part must have been coded `first`, the
/// others not, all in one coding.
pub fn join(parts: &[&Part]) -> io::Result<Vec<u8>> {
    let Some(head) = parts.first() else {
        return Err(io::Error::other("no part to join"));
    };
    let coding = head.coding;
    let fits = |(i, p): (usize, &&Part)| p.coding == coding && p.first == (i == 0);
    if !parts.iter().enumerate().all(fits) {
        return Err(io::Error::other("parts of another coding or order"));
    }
    let size = parts.iter().map(|p| p.bytes.len()).sum::<usize>() + 32;
    let mut out = Vec::with_capacity(size);
    match coding {
        Coding::Zstd => parts.iter().for_each(|p| out.extend_from_slice(&p.bytes)),
        Coding::Gzip => {
            // RFC 1952: magic, deflate, no flags, no time, no extra flags, OS unknown.
            out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
            let mut crc = crc32fast::Hasher::new_with_initial_len(0, 0);
            let mut len = 0u64;
            for p in parts {
                out.extend_from_slice(&p.bytes);
                crc.combine(&crc32fast::Hasher::new_with_initial_len(p.crc, p.len));
                len += p.len;
            }
            // A final, empty block of fixed codes ends the deflate stream (BFINAL, BTYPE=01,
            // then end-of-block): after a sync flush, the bytes 03 00.
            out.extend_from_slice(&[0x03, 0x00]);
            out.extend_from_slice(&crc.finalize().to_le_bytes());
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
        Coding::Br => join_brotli(parts, &mut out)?,
    }
    Ok(out)
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

fn join_brotli(parts: &[&Part], out: &mut Vec<u8>) -> io::Result<()> {
    let failed = |r: BroCatliResult| io::Error::other(format!("brotli join: {r:?}"));
    let mut cat = BroCatli::new();
    let mut buf = vec![0u8; 64 * 1024];
    for p in parts {
        cat.new_brotli_file();
        let mut read = 0;
        loop {
            let mut wrote = 0;
            let r = cat.stream(&p.bytes, &mut read, &mut buf, &mut wrote);
            out.extend_from_slice(&buf[..wrote]);
            match r {
                BroCatliResult::NeedsMoreOutput => continue,
                BroCatliResult::NeedsMoreInput => break,
                other => return Err(failed(other)),
            }
        }
    }
    loop {
        let mut wrote = 0;
        let r = cat.finish(&mut buf, &mut wrote);
        out.extend_from_slice(&buf[..wrote]);
        match r {
            BroCatliResult::NeedsMoreOutput => continue,
            BroCatliResult::Success => return Ok(()),
            other => return Err(failed(other)),
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
        let cases: [(&[u8], &[u8]); 4] = [
            (b"<http://E.com/>; rel=\"original\"", b"\n"),
            (b"", b""),
            (b"x", b""),
            (&lines(3, "head"), &lines(5, "tail")),
        ];
        for coding in Coding::ALL {
            let shared = coding.part(&list, false).expect("list");
            for (head, tail) in cases {
                let parts = [
                    &coding.part(head, true).expect("head"),
                    &shared,
                    &coding.part(tail, false).expect("tail"),
                ];
                let body = join(&parts).expect("join");
                let want = [head, &list[..], tail].concat();
                assert!(
                    decode(coding, &body) == want,
                    "{coding:?} head {}",
                    head.len()
                );
            }
            // Coded apart, the list is about as small as coded whole.
            let whole = coding.encode(&list).expect("whole");
            assert!(shared.coded_len() < whole.len() * 2, "{coding:?}");
        }
    }

    #[test]
    fn parts_out_of_order_or_of_two_codings_are_refused() {
        let a = Coding::Gzip.part(b"a", true).expect("a");
        let b = Coding::Gzip.part(b"b", false).expect("b");
        let z = Coding::Zstd.part(b"z", false).expect("z");
        assert!(join(&[&a, &b]).is_ok());
        assert!(join(&[&b, &a]).is_err(), "a first part second");
        assert!(join(&[&a, &z]).is_err(), "two codings");
        assert!(join(&[]).is_err());
    }
}
