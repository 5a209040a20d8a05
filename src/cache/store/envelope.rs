//! The bytes of one persistent entry: a JSON envelope with the value's format version and a
//! CRC-32 of the value's exact bytes, so a damaged value is a counted miss, never other content.
//!
//! Written as `{"v":<version>,"crc32":<checksum>,"value":<value>}`. Envelopes written before the
//! checksum existed (no `crc32`) still read: the upgrade keeps the cache, and their JSON must
//! still parse as the current shape. Only checksummed entries are proven intact.

use serde::Deserialize;
use serde_json::value::RawValue;

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

/// The stored bytes of `value`.
pub(super) fn encode<V: Cacheable>(value: &V) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(value)?;
    let crc = crc32fast::hash(&body);
    let head = format!("{{\"v\":{},\"crc32\":{crc},\"value\":", V::FORMAT_VERSION);
    let mut out = Vec::with_capacity(head.len() + body.len() + 1);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(&body);
    out.push(b'}');
    Ok(out)
}

/// Decodes an envelope, or says in words why it can't be used.
pub(super) fn decode<V: Cacheable>(bytes: &[u8]) -> Result<V, String> {
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
