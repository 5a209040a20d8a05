//! The envelope's round trips, the older JSON forms it still reads, and damaged or hostile bytes.

use super::*;
use serde::Serialize;
use std::io::Write;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Note {
    body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
    #[serde(default)]
    parts: Vec<String>,
}

impl Cacheable for Note {
    const FORMAT_VERSION: u32 = 1;
    fn approx_bytes(&self) -> usize {
        self.body.len()
    }
    fn revision(&self) -> u64 {
        crate::cache::store::body_revision(&self.body)
    }
}

fn note(n: usize) -> Note {
    Note {
        body: (0..n)
            .map(|i| format!("<http://archive.example/web/2001{i:010}/http://e.com/>"))
            .collect(),
        tag: None,
        parts: (0..n).map(|i| format!("part {i}")).collect(),
    }
}

/// The encoder of the older JSON envelope, kept to prove what it wrote still reads.
pub(in crate::cache::store) fn encode_json<V: Cacheable>(value: &V) -> Vec<u8> {
    let body = serde_json::to_vec(value).expect("json");
    let crc = crc32fast::hash(&body);
    let head = format!("{{\"v\":{},\"crc32\":{crc},\"value\":", V::FORMAT_VERSION);
    let mut out = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    out.write_all(head.as_bytes()).expect("write");
    out.write_all(&body).expect("write");
    out.write_all(b"}").expect("write");
    out.finish().expect("finish")
}

/// A binary envelope around `body` (already MessagePack), with a correct checksum.
fn binary_around(version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&zstd::encode_all(body, 1).expect("zstd"));
    out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    out
}

#[test]
fn an_entry_is_stored_binary_compressed_and_reads_back() {
    let mut value = note(1000);
    value.tag = Some("t".into());
    let bytes = encode(&value).expect("encodes");
    assert!(bytes.starts_with(MAGIC));
    let json = serde_json::to_vec(&value).expect("json").len();
    assert!(bytes.len() * 5 < json, "{} of {json} bytes", bytes.len());
    assert!(
        bytes.len() < encode_json(&value).len(),
        "not smaller than the deflated JSON form"
    );
    assert_eq!(decode::<Note>(&bytes), Ok(value));
}

#[test]
fn skipped_and_defaulted_fields_survive_the_binary_form() {
    let value = Note {
        body: String::new(),
        tag: None,
        parts: Vec::new(),
    };
    assert_eq!(decode::<Note>(&encode(&value).expect("encodes")), Ok(value));
}

#[test]
fn envelopes_of_the_older_json_forms_still_read() {
    let value = note(50);
    assert_eq!(decode::<Note>(&encode_json(&value)), Ok(value));
    let plain = br#"{"v":1,"crc32":null,"value":{"body":"old"}}"#;
    assert_eq!(decode::<Note>(plain).map(|n| n.body), Ok("old".to_string()));
}

#[test]
fn a_binary_entry_of_another_version_says_so() {
    let body = rmp_serde::to_vec_named(&note(1)).expect("msgpack");
    let why = decode::<Note>(&binary_around(7, &body)).expect_err("refused");
    assert!(why.contains("format version 7"), "{why}");
}

#[test]
fn a_damaged_or_truncated_binary_entry_is_refused_not_misread() {
    let value = note(200);
    let bytes = encode(&value).expect("encodes");
    let mut refused = 0;
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        // A flip in a zstd header field that does not change the content (a window-size hint)
        // may still read, as the very same value; any other content is a failure.
        match decode::<Note>(&damaged) {
            Err(_) => refused += 1,
            Ok(read) => assert_eq!(read, value, "flip at {at} read other content"),
        }
    }
    assert!(
        refused * 10 > bytes.len() * 9,
        "{refused} of {}",
        bytes.len()
    );
    for len in 0..bytes.len() {
        assert!(
            decode::<Note>(&bytes[..len]).is_err(),
            "{len} bytes were read"
        );
    }
}

#[test]
fn hostile_lengths_with_a_valid_checksum_are_a_clean_error() {
    // A map of one field whose string, then whose array, claims 4 GiB - 1 of content: the
    // checksum is right, so only the decoder's bounds stand between it and a huge allocation.
    let mut huge_str = vec![0x81, 0xa4];
    huge_str.extend_from_slice(b"body");
    huge_str.extend_from_slice(&[0xdb, 0xff, 0xff, 0xff, 0xff]);
    let mut huge_array = vec![0x82, 0xa4];
    huge_array.extend_from_slice(b"body");
    huge_array.extend_from_slice(&[0xa0, 0xa5]);
    huge_array.extend_from_slice(b"parts");
    huge_array.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
    for body in [huge_str, huge_array] {
        let why = decode::<Note>(&binary_around(1, &body)).expect_err("refused");
        assert!(why.contains("undecodable"), "{why}");
    }
    for garbage in [
        &b"TMB1"[..],
        b"TMB1\x01\x00\x00\x00",
        b"TMB1\x01\x00\x00\x00\x00\x00\x00\x00",
    ] {
        assert!(decode::<Note>(garbage).is_err());
    }
}

#[test]
fn an_entry_that_would_inflate_past_the_cap_is_refused() {
    // Planted bombs, scaled down: 16 MiB + 1 of zeros against a 16 MiB cap, as 1 GiB + 1 would
    // meet MAX_INFLATED; in the binary form and in the older deflated one.
    let cap = 16 << 20;
    let zeros = vec![0u8; cap + 1];
    let bomb = binary_around(1, &zeros);
    let why = decode_binary::<Note>(&bomb, cap as u64).expect_err("refused");
    assert!(why.contains("inflates past"), "{why}");
    let mut bomb = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    bomb.write_all(&zeros).expect("write");
    let bomb = bomb.finish().expect("finish");
    let why = envelope_json(&bomb, cap as u64).expect_err("refused");
    assert!(why.contains("inflates past"), "{why}");
    assert!(envelope_json(&bomb, cap as u64 + 1).is_ok());
}

/// A copy of the binary envelope's encoder as it was before the frame moved into
/// `tmproxy-disk` (commit e8e87ff), kept so the tests prove what it wrote still reads and
/// that today's encoder writes the very same bytes.
fn encode_before_shared_frame<V: Cacheable>(value: &V) -> Vec<u8> {
    struct Checksummed<W> {
        inner: W,
        crc: crc32fast::Hasher,
    }
    impl<W: Write> Write for Checksummed<W> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = self.inner.write(buf)?;
            self.crc.update(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.inner.flush()
        }
    }
    let mut out = b"TMB1".to_vec();
    out.extend_from_slice(&V::FORMAT_VERSION.to_le_bytes());
    let mut sink = Checksummed {
        inner: zstd::stream::write::Encoder::new(out, 1).expect("zstd"),
        crc: crc32fast::Hasher::new(),
    };
    rmp_serde::encode::write_named(&mut sink, value).expect("msgpack");
    let crc = sink.crc.finalize();
    let mut out = sink.inner.finish().expect("zstd");
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The value of `tests/fixtures/old-formats/entry-tmb1-v1.bin`.
fn fixture_note() -> Note {
    Note {
        tag: Some("fixture".into()),
        ..note(3)
    }
}

/// The fixture as the binary at commit e8e87ff wrote it (its `encode`, the same bytes as
/// [`encode_before_shared_frame`]): regenerate only to add a case, never to change this one.
const OLD_ENTRY: &[u8] = include_bytes!("../../../tests/fixtures/old-formats/entry-tmb1-v1.bin");

#[test]
#[ignore = "writes the fixture: run by hand, once"]
fn write_old_entry_fixture() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/old-formats/entry-tmb1-v1.bin"
    );
    std::fs::write(path, encode_before_shared_frame(&fixture_note())).expect("write");
}

/// A shared tier's value (`TMR1`, a revision, then the envelope) as the binary at commit
/// e8e87ff wrote it to Redis (its `cas::framed`, the same code as now): [`OLD_ENTRY`] under
/// revision 0x2a. Its head is read by the
/// compare-and-set script too, so neither side may change what these bytes mean.
const OLD_SHARED: &[u8] = include_bytes!("../../../tests/fixtures/old-formats/shared-tmr1-v1.bin");

#[test]
#[ignore = "writes the fixture: run by hand, once"]
fn write_old_shared_fixture() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/old-formats/shared-tmr1-v1.bin"
    );
    std::fs::write(path, super::super::cas::framed(0x2a, OLD_ENTRY)).expect("write");
}

#[test]
fn a_shared_value_written_by_the_older_binary_reads_the_same() {
    use super::super::cas::{observed, Observed};
    let (seen, envelope) = observed(OLD_SHARED);
    assert_eq!(seen, Observed::Revision(0x2a));
    assert_eq!(decode::<Note>(envelope), Ok(fixture_note()));
    assert_eq!(&OLD_SHARED[..4], b"TMR1");
}

#[test]
fn an_entry_written_by_the_older_binary_reads_the_same() {
    assert_eq!(decode::<Note>(OLD_ENTRY), Ok(fixture_note()));
    for value in [fixture_note(), note(0), note(500)] {
        let old = encode_before_shared_frame(&value);
        assert_eq!(
            encode(&value).expect("encodes"),
            old,
            "same bytes as before"
        );
        assert_eq!(decode::<Note>(&old), Ok(value));
    }
}
