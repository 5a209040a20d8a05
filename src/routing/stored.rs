//! The profiles file's bytes: a `tmproxy_disk::frame` of magic `TMRP` (the magic, the format
//! version (u32 LE), a zstd frame of the profiles as MessagePack with field names, then the
//! CRC-32 (u32 LE) of the MessagePack bytes): the cache entries' envelope
//! (src/cache/store/envelope.rs) with its own magic, so a file cut short by a crash or changed
//! on disk is refused, never half-trusted. The layout is the one this file had before the frame
//! was shared, so profiles an older binary saved still load.

use tmproxy_core::routing::{Profiles, StoredProfiles};
use tmproxy_disk::frame::{self, Format, FrameError, FrameWriter};

/// Bumped whenever [`StoredProfiles`]' shape changes; a file of another version is not read.
pub const FORMAT_VERSION: u32 = 1;

const FORMAT: Format = Format::new(b"TMRP", FORMAT_VERSION);

/// The most a profile inflates to per key it may hold (a 253-byte host and a tally for each of
/// dozens of archives fit well within it), with a floor for small bounds: a damaged or planted
/// file cannot make a start allocate without bound.
const BYTES_PER_KEY: u64 = 2048;
const MIN_CAP: u64 = 256 << 20;

/// The file's bytes for `profiles` (see [`Profiles::to_stored`]), streamed into the
/// compressor: never held uncompressed.
pub fn encode(profiles: &StoredProfiles) -> Result<Vec<u8>, String> {
    let mut sink = FrameWriter::new(Vec::new(), FORMAT)
        .map_err(|e| format!("cannot start compressing the profiles: {e}"))?;
    rmp_serde::encode::write_named(&mut sink, profiles)
        .map_err(|e| format!("cannot encode the profiles: {e}"))?;
    sink.finish()
        .map_err(|e| format!("cannot compress the profiles: {e}"))
}

/// Profiles from a file's bytes, bounded to `max_keys`; Err says why they are not trusted.
pub fn decode(bytes: &[u8], max_keys: usize) -> Result<Profiles, String> {
    let cap = (max_keys as u64).saturating_mul(BYTES_PER_KEY).max(MIN_CAP);
    let body = frame::decode(FORMAT, bytes, cap).map_err(|e| match e {
        FrameError::BadMagic { .. } => "not a profiles file (no TMRP header)".to_string(),
        e => e.to_string(),
    })?;
    let stored: StoredProfiles =
        rmp_serde::from_slice(&body).map_err(|e| format!("undecodable: {e}"))?;
    Profiles::from_stored(stored, max_keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use tmproxy_core::routing::{Observation, Outcome, UriKeys};

    fn profiles() -> Profiles {
        let mut p = Profiles::new(100);
        for uri in ["http://a.example.com/", "http://b.example.org/"] {
            p.observe(&Observation {
                keys: UriKeys::of_uri(uri),
                outcomes: vec![
                    ("ia".into(), Outcome::Held),
                    ("pt".into(), Outcome::HeldNone),
                ],
            });
        }
        p
    }

    #[test]
    fn profiles_read_back_equal() {
        let p = profiles();
        let bytes = encode(&p.to_stored()).unwrap();
        assert_eq!(decode(&bytes, 100).unwrap().to_stored(), p.to_stored());
    }

    #[test]
    fn damage_is_refused_never_misread() {
        let p = profiles();
        let bytes = encode(&p.to_stored()).unwrap();
        // Each byte flipped in turn: the magic, the version, the frame or the checksum. A flip
        // that leaves the content intact (zstd's window size, say) may read; other content never.
        let mut refused = 0;
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x20;
            match decode(&bad, 100) {
                Err(_) => refused += 1,
                Ok(read) => assert_eq!(read.to_stored(), p.to_stored(), "byte {i}"),
            }
        }
        assert!(refused >= bytes.len() - 2, "{refused} of {}", bytes.len());
        // Cut short anywhere, as by a crash mid-write.
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len], 100).is_err(), "cut at {len}");
        }
        let mut newer = bytes.clone();
        newer[4] = 2;
        let why = decode(&newer, 100).unwrap_err();
        assert!(why.contains("format version 2"), "{why}");
    }

    /// A copy of the profiles file's encoder as it was before the frame moved into
    /// `tmproxy-disk` (commit e8e87ff), kept so the tests prove what it wrote still reads.
    fn encode_before_shared_frame(profiles: &StoredProfiles) -> Vec<u8> {
        let body = rmp_serde::to_vec_named(profiles).expect("msgpack");
        let mut out = b"TMRP".to_vec();
        out.extend_from_slice(&1u32.to_le_bytes());
        let mut compressor = zstd::stream::write::Encoder::new(out, 1).expect("zstd");
        compressor.write_all(&body).expect("zstd");
        let mut out = compressor.finish().expect("zstd");
        out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        out
    }

    /// `profiles()` as the binary at commit e8e87ff wrote it to its profiles file (the same
    /// bytes as [`encode_before_shared_frame`]): regenerate only to add a case.
    const OLD_FILE: &[u8] = include_bytes!("../../tests/fixtures/old-formats/profiles-tmrp-v1.bin");

    #[test]
    #[ignore = "writes the fixture: run by hand, once"]
    fn write_old_profiles_fixture() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/old-formats/profiles-tmrp-v1.bin"
        );
        std::fs::write(path, encode_before_shared_frame(&profiles().to_stored())).expect("write");
    }

    #[test]
    fn a_profiles_file_written_by_the_older_binary_reads_the_same() {
        let p = profiles();
        let read = decode(OLD_FILE, 100).expect("reads");
        assert_eq!(read.to_stored(), p.to_stored());
        let old = encode_before_shared_frame(&p.to_stored());
        assert_eq!(
            encode(&p.to_stored()).expect("encodes"),
            old,
            "same bytes as before"
        );
    }
}
