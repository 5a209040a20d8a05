//! An entry's revision: a short, deterministic name of one decision's outcome, so replicas
//! sharing a cache can tell whether the entry one decided against is still the one stored
//! (compare-and-set) without storing anything beside the entry.

use super::entry::Entry;
use xxhash_rust::xxh3::xxh3_64;

/// The revision of `entry`: the same on every replica and every build that reads it alike.
///
/// Every decision sets `checked_at` and appends to `history`, so two decisions differ here even
/// when they keep the same content; the contributions are named by their archive, answer,
/// size and ends rather than every memento, so a million-memento entry costs microseconds.
pub fn revision(entry: &Entry) -> u64 {
    let mut bytes = Vec::with_capacity(256 + entry.contributions.len() * 96);
    let mut put = |b: &[u8]| {
        bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
        bytes.extend_from_slice(b);
    };
    put(entry.uri_r.as_bytes());
    for at in [
        Some(entry.fetched_at),
        Some(entry.checked_at),
        entry.fresh_until,
    ] {
        put(&at.map_or(i64::MIN, |t| t.timestamp()).to_le_bytes());
        put(&at.map_or(0, |t| t.timestamp_subsec_nanos()).to_le_bytes());
    }
    for n in [entry.loose, entry.strict, entry.archives] {
        put(&(n as u64).to_le_bytes());
    }
    for item in &entry.history {
        put(&serde_json::to_vec(item).unwrap_or_default());
    }
    for c in &entry.contributions {
        put(c.archive.as_bytes());
        put(&serde_json::to_vec(&c.answer.status).unwrap_or_default());
        put(&c
            .fetched_at
            .timestamp_nanos_opt()
            .unwrap_or(0)
            .to_le_bytes());
        put(&(c.mementos.len() as u64).to_le_bytes());
        for m in c.mementos.first().into_iter().chain(c.mementos.last()) {
            put(m.uri_m.as_bytes());
        }
        put(&[u8::from(c.last_error.is_some())]);
    }
    xxh3_64(&bytes)
}
