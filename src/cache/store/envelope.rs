//! The bytes of one persistent entry: the value's format version, the value in a compact binary
//! form, and a CRC-32 of the value's exact bytes, so a damaged value is a counted miss, never
//! other content.
//!
//! Written as a `tmproxy_disk::frame` of magic `TMB1`: the magic, the format version (u32 LE), a
//! zstd frame of the value as MessagePack with field names, then the CRC-32 (u32 LE) of the
//! MessagePack bytes (the layout this envelope had before the frame was shared, so entries an
//! older binary stored read unchanged). The value is streamed through the checksum into the
//! compressor, so a million-memento entry is held once, compressed, while it is written (the
//! JSON form built a ~130 MB body first).
//!
//! Entries of the older JSON envelope (`{"v":<version>,"crc32":<checksum>,"value":<value>}`,
//! deflated or plain, with or without `crc32`) still read, so an upgrade keeps the cache; each
//! is rewritten in the binary form when that entry is next stored. Only checksummed entries are
//! proven intact.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::Read;
use tmproxy_disk::frame::{self, Format, FrameError, FrameWriter};

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

/// The first byte of a zlib stream (the older JSON envelope) at any level (CM 8, 32 KiB window); a JSON envelope starts
/// with `{`, so the two cannot be mistaken for each other.
const ZLIB_FIRST_BYTE: u8 = 0x78;

/// The most an entry may inflate to: a damaged or planted value cannot make a read allocate
/// without bound. Far above the largest TimeMap we serve (a million mementos is ~250 MB of JSON).
const MAX_INFLATED: u64 = 1 << 30;

/// The first bytes of a binary envelope: neither `{` (a plain JSON envelope) nor zlib's `0x78`.
const MAGIC: &[u8; 4] = b"TMB1";

/// This build's binary envelope for `V`.
fn format<V: Cacheable>() -> Format {
    Format::new(MAGIC, V::FORMAT_VERSION)
}

/// The stored bytes of `value`: its binary envelope. A TimeMap repeats its URI-M prefixes and
/// datetimes, so it shrinks severalfold, and sled 0.34 holds in memory about what it is handed
/// (BENCHMARKS.md, "Memory under many misses").
pub(super) fn encode<V: Cacheable>(value: &V) -> Result<Vec<u8>, String> {
    let mut sink = FrameWriter::new(Vec::with_capacity(4096), format::<V>())
        .map_err(|e| format!("cannot start compressing the entry: {e}"))?;
    rmp_serde::encode::write_named(&mut sink, value)
        .map_err(|e| format!("cannot encode the entry: {e}"))?;
    sink.finish()
        .map_err(|e| format!("cannot compress the entry: {e}"))
}

/// Decodes a binary envelope (`bytes` starts with [`MAGIC`]), inflating to at most `cap` bytes.
fn decode_binary<V: Cacheable>(bytes: &[u8], cap: u64) -> Result<V, String> {
    // The messages the envelope gave before the frame was shared: the store logs them.
    let body = frame::decode(format::<V>(), bytes, cap).map_err(|e| match e {
        FrameError::UnknownVersion { found, .. } => version_mismatch::<V>(found),
        FrameError::TooLarge { cap } => format!("entry inflates past {cap} bytes"),
        FrameError::Decompress(e) => {
            format!("the entry was damaged on disk: cannot inflate it: {e}")
        }
        FrameError::ChecksumMismatch { stored, computed } => format!(
            "checksum mismatch (stored {stored:08x}, computed {computed:08x}): the entry was damaged on disk"
        ),
        FrameError::BadMagic { .. } | FrameError::Truncated { .. } | FrameError::Compress(_) => {
            format!("undecodable entry: {e}")
        }
    })?;
    // From a slice: every length MessagePack states is checked against the bytes left, and
    // serde's collections preallocate at most a bounded amount from a stated length.
    rmp_serde::from_slice::<V>(&body).map_err(|err| format!("undecodable entry: {err}"))
}

/// An older envelope's JSON: inflated (to at most `cap` bytes) when deflated, as is when written
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

/// Decodes an envelope, binary or the older JSON, or says in words why it can't be used.
pub(super) fn decode<V: Cacheable>(bytes: &[u8]) -> Result<V, String> {
    if bytes.starts_with(MAGIC) {
        return decode_binary(bytes, MAX_INFLATED);
    }
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
#[path = "envelope_entry_tests.rs"]
mod entry_tests;
#[cfg(test)]
#[path = "envelope_tests.rs"]
pub(super) mod tests;
