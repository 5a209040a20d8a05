//! The checkpoint's answers held for a resumed run, compactly: at the paper's scale (107 M CDX
//! queries) a map from URL strings to answers of strings would take tens of gigabytes, so each
//! answer is kept as 32 bytes: the URL's 128-bit XXH3 hash (the URL itself stays on disk) and
//! the answer packed in 16 bytes, the few distinct MIME types and statuses interned.
//!
//! Two URLs share a 128-bit hash with a probability of about n²/2¹²⁹ (10⁻²³ at 10⁸ answers):
//! far below a disk's undetected error rate, so the hash stands for the URL. A later line for
//! the same URL replaces an earlier one, as the map of strings did.

use crate::sampling::cdx::FirstCapture;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The URL's key: its 128-bit XXH3 hash, already uniform, so the map hashes it no further.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key(u64, u64);

impl std::hash::Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0);
    }
}

fn key(url: &str) -> Key {
    let h = xxhash_rust::xxh3::xxh3_128(url.as_bytes());
    Key(h as u64, (h >> 64) as u64)
}

/// Passes the key's first word through as the hash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `Key`; kept correct for any other use.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

// `ts` layout: bits 0–46 the timestamp's digits as a number, 48–52 their count, 56–57 the
// kind; bit 58 set when the timestamp was not 1–14 digits and bits 0–31 are an interned string.
const KIND_SHIFT: u32 = 56;
const LEN_SHIFT: u32 = 48;
const INTERNED_TS: u64 = 1 << 58;
const FOUND: u64 = 0;
const NOT_ARCHIVED: u64 = 1;
const BLOCKED: u64 = 2;

/// An answer in 16 bytes.
#[derive(Clone, Copy)]
struct Packed {
    ts: u64,
    mime: u32,
    status: u32,
}

/// Strings seen few times over many answers (MIME types, statuses), each stored once.
#[derive(Default)]
struct Interner {
    ids: HashMap<Box<str>, u32>,
    strings: Vec<Box<str>>,
}

impl Interner {
    /// None past 2³² distinct strings (a hostile checkpoint): that answer is asked again.
    fn id(&mut self, s: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(s) {
            return Some(id);
        }
        let id = u32::try_from(self.strings.len()).ok()?;
        self.strings.push(s.into());
        self.ids.insert(s.into(), id);
        Some(id)
    }

    fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", |s| s)
    }
}

/// The answers a previous run wrote, by URL.
#[derive(Default)]
pub(super) struct Resumed {
    answers: HashMap<Key, Packed, BuildHasherDefault<KeyHasher>>,
    strings: Interner,
}

impl Resumed {
    /// Room for `n` answers at once, so loading a large checkpoint never doubles the table.
    pub(super) fn with_capacity(n: usize) -> Resumed {
        Resumed {
            answers: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
            strings: Interner::default(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.answers.len()
    }

    /// What the table holds in memory, for `[sampling] max_memory`: each slot (key, answer and
    /// hashbrown's control byte), used or not, and the interned strings.
    pub(super) fn bytes(&self) -> u64 {
        let slot = (std::mem::size_of::<Key>() + std::mem::size_of::<Packed>() + 1) as u64;
        let strings: u64 = self
            .strings
            .strings
            .iter()
            .map(|s| 2 * s.len() as u64 + 48)
            .sum();
        self.answers.capacity() as u64 * slot + strings
    }

    pub(super) fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    #[cfg(test)]
    pub(super) fn contains(&self, url: &str) -> bool {
        self.answers.contains_key(&key(url))
    }

    /// Keeps `answer` for `url`, replacing an earlier one; a failure is not kept (it is asked
    /// again: the archive may answer now) and leaves an earlier answer in place, as before.
    pub(super) fn insert(&mut self, url: &str, answer: &FirstCapture) {
        let k = key(url);
        let packed = match answer {
            FirstCapture::Found {
                timestamp,
                mime,
                status,
            } => {
                let ts = match pack_digits(timestamp) {
                    Some(ts) => Some(ts),
                    None => self
                        .strings
                        .id(timestamp)
                        .map(|id| INTERNED_TS | u64::from(id)),
                };
                match (ts, self.strings.id(mime), self.strings.id(status)) {
                    (Some(ts), Some(mime), Some(status)) => Some(Packed {
                        ts: ts | FOUND << KIND_SHIFT,
                        mime,
                        status,
                    }),
                    _ => None,
                }
            }
            FirstCapture::NotArchived => Some(kind_only(NOT_ARCHIVED)),
            FirstCapture::Blocked => Some(kind_only(BLOCKED)),
            FirstCapture::Failed { .. } => None,
        };
        if let Some(p) = packed {
            self.answers.insert(k, p);
        }
    }

    pub(super) fn get(&self, url: &str) -> Option<FirstCapture> {
        let p = self.answers.get(&key(url))?;
        Some(match (p.ts >> KIND_SHIFT) & 3 {
            NOT_ARCHIVED => FirstCapture::NotArchived,
            BLOCKED => FirstCapture::Blocked,
            _ => FirstCapture::Found {
                timestamp: unpack_ts(p.ts, &self.strings),
                mime: self.strings.get(p.mime).to_string(),
                status: self.strings.get(p.status).to_string(),
            },
        })
    }
}

fn kind_only(kind: u64) -> Packed {
    Packed {
        ts: kind << KIND_SHIFT,
        mime: 0,
        status: 0,
    }
}

/// 1–14 ASCII digits (every IA timestamp) as their value and count, leading zeros kept.
fn pack_digits(ts: &str) -> Option<u64> {
    if ts.is_empty() || ts.len() > 14 || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = ts.parse().ok()?;
    Some(value | (ts.len() as u64) << LEN_SHIFT)
}

fn unpack_ts(ts: u64, strings: &Interner) -> String {
    if ts & INTERNED_TS != 0 {
        return strings.get(ts as u32).to_string();
    }
    let len = ((ts >> LEN_SHIFT) & 0x1f) as usize;
    format!("{:0len$}", ts & ((1 << 47) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(ts: &str, mime: &str, status: &str) -> FirstCapture {
        FirstCapture::Found {
            timestamp: ts.into(),
            mime: mime.into(),
            status: status.into(),
        }
    }

    #[test]
    fn every_answer_comes_back_as_it_went_in() {
        let answers = [
            found("19960101000000", "text/html", "200"),
            found("00010101000000", "text/html", "200"),
            found("2004", "text/html; charset=utf-8", "-"),
            found("", "", ""),
            found("2004-01-01", "image/jpeg", "301"),
            found("99999999999999", "warc/revisit", "200"),
            found("123456789012345", "text/html", "200"),
            FirstCapture::NotArchived,
            FirstCapture::Blocked,
        ];
        let mut r = Resumed::with_capacity(answers.len());
        for (i, a) in answers.iter().enumerate() {
            r.insert(&format!("https://h{i}.example/é"), a);
        }
        assert_eq!(r.len(), answers.len());
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(r.get(&format!("https://h{i}.example/é")).as_ref(), Some(a));
        }
        assert_eq!(r.get("https://h0.example/"), None);
    }

    #[test]
    fn a_later_answer_wins_and_a_failure_is_asked_again_keeping_an_earlier_answer() {
        let mut r = Resumed::default();
        let url = "https://a.example/";
        r.insert(url, &FirstCapture::NotArchived);
        r.insert(url, &found("20010203040506", "text/html", "200"));
        assert_eq!(
            r.get(url),
            Some(found("20010203040506", "text/html", "200"))
        );
        r.insert(
            url,
            &FirstCapture::Failed {
                reason: "503".into(),
            },
        );
        assert_eq!(
            r.get(url),
            Some(found("20010203040506", "text/html", "200"))
        );
        let other = "https://b.example/";
        r.insert(
            other,
            &FirstCapture::Failed {
                reason: "503".into(),
            },
        );
        assert!(!r.contains(other) && r.len() == 1);
    }
}
