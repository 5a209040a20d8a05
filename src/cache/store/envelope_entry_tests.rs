//! The compact stored form of the real cache entry: its round trip (prefix-coded URI-Ms) and its
//! size on disk against the older JSON envelope (BENCHMARKS.md, "The compact stored form").

use super::tests::encode_json;
use super::{decode, encode};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::collections::VecDeque;
use tmproxy_core::policy::entry::{Entry, ENTRY_FORMAT_VERSION};
use tmproxy_core::timemap::answer::{
    Absence, ArchiveAnswer, ArchiveStatus, Contribution, LastError, ListedMemento,
};

/// `n` distinct datetimes scattered over 1996-2025 (a fixed LCG: every run is the same), which
/// compress far less than evenly spaced ones.
fn scattered(n: usize) -> Vec<DateTime<Utc>> {
    let start = Utc
        .with_ymd_and_hms(1996, 1, 1, 0, 0, 0)
        .single()
        .expect("date");
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < n {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seen.insert((state >> 34) % (30 * 365 * 86_400));
    }
    seen.into_iter()
        .map(|s| start + Duration::seconds(s as i64))
        .collect()
}

/// An entry of `n` mementos split over three archives, some marked absent.
pub(super) fn entry_of(n: usize) -> Entry {
    let at = scattered(n);
    let archives = [
        "https://web.archive.org/web/",
        "https://archive.example.org/wayback/",
        "https://arquivo.pt/wayback/",
    ];
    let contributions = archives
        .iter()
        .enumerate()
        .map(|(a, base)| Contribution {
            archive: format!("archive{a}"),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: at[0],
            mementos: at
                .iter()
                .skip(a)
                .step_by(archives.len())
                .enumerate()
                .map(|(i, t)| ListedMemento {
                    uri_m: format!("{base}{}/http://example.com/", t.format("%Y%m%d%H%M%S")).into(),
                    datetime: *t,
                    absent: (i % 97 == 0).then(|| {
                        Box::new(Absence {
                            since: at[0],
                            confirmations: 2,
                        })
                    }),
                })
                .collect(),
            last_error: None,
            listing: Default::default(),
        })
        .collect();
    Entry {
        version: ENTRY_FORMAT_VERSION,
        uri_r: "http://example.com/".into(),
        contributions,
        fetched_at: at[0],
        checked_at: at[0],
        fresh_until: None,
        loose: n,
        strict: n,
        archives: archives.len(),
        history: VecDeque::new(),
    }
}

#[test]
fn an_entry_round_trips_through_the_compact_form_with_its_uri_ms_prefix_coded() {
    let mut entry = entry_of(3_000);
    entry.contributions[1].last_error = Some(LastError {
        at: entry.fetched_at,
        status: ArchiveStatus::Timeout,
        http_status: None,
        detail: Some("timed out".into()),
    });
    let bytes = encode(&entry).expect("encodes");
    // Compared without printing thousands of mementos on a failure.
    let back = decode::<Entry>(&bytes);
    assert!(back.as_ref() == Ok(&entry), "{:?}", back.err());
    // And the older JSON envelope of the same entry still reads as the same entry.
    let old = decode::<Entry>(&encode_json(&entry));
    assert!(old.as_ref() == Ok(&entry), "{:?}", old.err());
}

#[test]
fn a_prefix_longer_than_the_uri_m_before_it_is_a_clean_error() {
    // A contribution whose second memento claims to share 500 bytes of a 1-byte URI-M.
    let mut entry = entry_of(2);
    entry.contributions.truncate(1);
    entry.contributions[0].mementos[0].uri_m = "a".into();
    let bytes = encode(&entry).expect("encodes");
    let body = zstd::decode_all(&bytes[8..bytes.len() - 4]).expect("zstd");
    let planted = body
        .windows(2)
        .position(|w| w == [0x95, 0x00])
        .expect("the first coded memento: a 5-tuple sharing 0 bytes");
    let mut hostile = body.clone();
    hostile[planted + 1] = 0x01; // shares 1 byte of "" (nothing before it)
    let mut framed = bytes[..8].to_vec();
    framed.extend_from_slice(&zstd::encode_all(&hostile[..], 1).expect("zstd"));
    framed.extend_from_slice(&crc32fast::hash(&hostile).to_le_bytes());
    let why = decode::<Entry>(&framed).expect_err("refused");
    assert!(why.contains("shares 1 bytes"), "{why}");
}

#[test]
fn a_datetime_out_of_range_is_a_clean_error() {
    let mut entry = entry_of(1);
    entry.contributions.truncate(1);
    let bytes = encode(&entry).expect("encodes");
    let body = zstd::decode_all(&bytes[8..bytes.len() - 4]).expect("zstd");
    let secs = entry.contributions[0].mementos[0].datetime.timestamp();
    // A positive number is written as the smallest unsigned int that holds it: uint 32 here.
    let mut stated = vec![0xce];
    stated.extend_from_slice(&u32::try_from(secs).expect("fits").to_be_bytes());
    let at = body
        .windows(stated.len())
        .position(|w| w == stated)
        .expect("the seconds as uint 32");
    // Seconds as int 64 i64::MAX: no datetime has them.
    let mut hostile = body[..at].to_vec();
    hostile.push(0xd3);
    hostile.extend_from_slice(&i64::MAX.to_be_bytes());
    hostile.extend_from_slice(&body[at + stated.len()..]);
    let mut framed = bytes[..8].to_vec();
    framed.extend_from_slice(&zstd::encode_all(&hostile[..], 1).expect("zstd"));
    framed.extend_from_slice(&crc32fast::hash(&hostile).to_le_bytes());
    let why = decode::<Entry>(&framed).expect_err("refused");
    assert!(why.contains("no datetime"), "{why}");
}

#[test]
fn a_10000_memento_entry_is_smaller_on_disk_than_its_json_envelope() {
    let entry = entry_of(10_000);
    let json = serde_json::to_vec(&entry).expect("json").len();
    let old = encode_json(&entry).len();
    let new = encode(&entry).expect("encodes").len();
    println!("10,000 mementos: JSON {json} B, JSON deflated (old form) {old} B, binary zstd {new} B ({:.2} of the old form)", new as f64 / old as f64);
    assert!(new < old, "{new} B not under the old form's {old} B");
}

// The served type wraps an `Entry` transparently (`CachedTimeMap`); the entry alone is enough
// here.
impl super::Cacheable for Entry {
    const FORMAT_VERSION: u32 = ENTRY_FORMAT_VERSION;
    fn approx_bytes(&self) -> usize {
        Entry::approx_bytes(self)
    }
    fn revision(&self) -> u64 {
        tmproxy_core::policy::revision(self)
    }
}
