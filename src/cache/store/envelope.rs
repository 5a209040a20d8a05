//! The bytes of one persistent entry: a JSON envelope with the value's format version and a
//! CRC-32 of the value's exact bytes, so a damaged value is a counted miss, never other content.
//!
//! Written as `{"v":<version>,"crc32":<checksum>,"value":<value>}`, deflated (zlib). Envelopes
//! written before the checksum existed (no `crc32`) or before deflating (plain JSON) still read:
//! the upgrade keeps the cache, and their JSON must still parse as the current shape. Only
//! checksummed entries are proven intact.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{Read, Write};

use super::Cacheable;

/// What is read back: the value is kept raw so its checksum covers the bytes as stored.
#[derive(Deserialize)]
struct EnvelopeIn<'a> {
    v: u32,
    #[serde(default)]
    crc32: Option<u32>,
    #[serde(borrow)]
    value: &'a RawValue,
}

/// Just the version, to say *why* an envelope did not decode as the current type.
#[derive(Deserialize)]
struct EnvelopeVersion {
    v: u32,
}

/// The first byte of a zlib stream at any level (CM 8, 32 KiB window); a JSON envelope starts
/// with `{`, so the two cannot be mistaken for each other.
const ZLIB_FIRST_BYTE: u8 = 0x78;

/// The most an entry may inflate to: a damaged or planted value cannot make a read allocate
/// without bound. Far above the largest TimeMap we serve (a million mementos is ~250 MB of JSON).
const MAX_INFLATED: u64 = 1 << 30;

/// The stored bytes of `value`: its envelope, deflated. A TimeMap's JSON repeats its URI-M
/// prefixes and datetimes, so it shrinks about tenfold, and sled 0.34 holds in memory about
/// what it is handed (BENCHMARKS.md, [hardening-2] memory under many misses); the fast level
/// costs about a millisecond per 100 KB, on the store's own threads.
pub(super) fn encode<V: Cacheable>(value: &V) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(value)?;
    let crc = crc32fast::hash(&body);
    let head = format!("{{\"v\":{},\"crc32\":{crc},\"value\":", V::FORMAT_VERSION);
    let mut out = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(body.len() / 8 + 64),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail; an error here would be a bug in flate2, reported as one.
    let deflated = out
        .write_all(head.as_bytes())
        .and_then(|()| out.write_all(&body))
        .and_then(|()| out.write_all(b"}"))
        .and_then(|()| out.finish());
    deflated.map_err(serde_json::Error::io)
}

/// The envelope's JSON: inflated (to at most `cap` bytes) when deflated, as is when written
/// before deflating.
fn envelope_json(bytes: &[u8], cap: u64) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    match bytes.first() {
        Some(&ZLIB_FIRST_BYTE) => {
            let mut json = Vec::new();
            flate2::read::ZlibDecoder::new(bytes)
                .take(cap.saturating_add(1))
                .read_to_end(&mut json)
                // zlib's own Adler-32 catches most damage before the checksum does.
                .map_err(|e| format!("the entry was damaged on disk: cannot inflate it: {e}"))?;
            if json.len() as u64 > cap {
                return Err(format!("entry inflates past {cap} bytes"));
            }
            Ok(std::borrow::Cow::Owned(json))
        }
        _ => Ok(std::borrow::Cow::Borrowed(bytes)),
    }
}

/// Decodes an envelope, or says in words why it can't be used.
pub(super) fn decode<V: Cacheable>(bytes: &[u8]) -> Result<V, String> {
    let json = envelope_json(bytes, MAX_INFLATED)?;
    let bytes: &[u8] = &json;
    let envelope = match serde_json::from_slice::<EnvelopeIn<'_>>(bytes) {
        Ok(envelope) => envelope,
        // Parse only the version on the slow path, to tell "older format" from "garbage".
        Err(err) => {
            return match serde_json::from_slice::<EnvelopeVersion>(bytes) {
                Ok(header) if header.v != V::FORMAT_VERSION => Err(version_mismatch::<V>(header.v)),
                _ => Err(format!("undecodable entry: {err}")),
            }
        }
    };
    if envelope.v != V::FORMAT_VERSION {
        return Err(version_mismatch::<V>(envelope.v));
    }
    let raw = envelope.value.get();
    if let Some(stored) = envelope.crc32 {
        let computed = crc32fast::hash(raw.as_bytes());
        if computed != stored {
            return Err(format!(
                "checksum mismatch (stored {stored:08x}, computed {computed:08x}): the entry was damaged on disk"
            ));
        }
    }
    serde_json::from_str::<V>(raw).map_err(|err| format!("undecodable entry: {err}"))
}

fn version_mismatch<V: Cacheable>(found: u32) -> String {
    format!(
        "entry has format version {found}, this build reads version {}",
        V::FORMAT_VERSION
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Note {
        body: String,
    }

    impl Cacheable for Note {
        const FORMAT_VERSION: u32 = 1;
        fn approx_bytes(&self) -> usize {
            self.body.len()
        }
    }

    fn note(n: usize) -> Note {
        Note {
            body: (0..n)
                .map(|i| format!("<http://archive.example/web/2001{i:010}/http://e.com/>"))
                .collect(),
        }
    }

    #[test]
    fn an_entry_is_stored_deflated_and_reads_back() {
        let value = note(1000);
        let bytes = encode(&value).expect("encodes");
        assert_eq!(bytes.first(), Some(&ZLIB_FIRST_BYTE));
        let plain = serde_json::to_vec(&value).expect("json").len();
        assert!(bytes.len() * 5 < plain, "{} of {plain} bytes", bytes.len());
        assert_eq!(decode::<Note>(&bytes), Ok(value));
    }

    #[test]
    fn a_plain_envelope_from_before_deflating_still_reads() {
        let plain = br#"{"v":1,"crc32":null,"value":{"body":"old"}}"#;
        assert_eq!(decode::<Note>(plain).map(|n| n.body), Ok("old".to_string()));
    }

    #[test]
    fn a_damaged_deflated_entry_is_refused_not_misread() {
        let bytes = encode(&note(200)).expect("encodes");
        for at in [2, bytes.len() / 3, bytes.len() / 2, bytes.len() - 2] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x20;
            assert!(decode::<Note>(&damaged).is_err(), "flip at {at} was read");
        }
        let cut = &bytes[..bytes.len() / 2];
        assert!(decode::<Note>(cut).is_err(), "a truncated entry was read");
    }

    #[test]
    fn an_entry_that_would_inflate_past_the_cap_is_refused() {
        // A planted bomb, scaled down: 16 MiB + 1 of zeros (a few KB deflated) against a
        // 16 MiB cap, as 1 GiB + 1 would meet MAX_INFLATED.
        let cap = 16 << 20;
        let mut bomb = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        bomb.write_all(&vec![0u8; cap + 1]).expect("write");
        let bomb = bomb.finish().expect("finish");
        let why = envelope_json(&bomb, cap as u64).expect_err("refused");
        assert!(why.contains("inflates past"), "{why}");
        assert!(envelope_json(&bomb, cap as u64 + 1).is_ok());
    }
}
