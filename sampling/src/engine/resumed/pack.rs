//! An answer packed in 16 bytes (the timestamp's digits as a number, the kind, interned MIME
//! type and status), and the interner of those few distinct strings.

use crate::cdx::FirstCapture;
use std::collections::HashMap;

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
pub(super) struct Packed {
    ts: u64,
    mime: u32,
    status: u32,
}

impl Packed {
    pub(super) fn to_bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.ts.to_le_bytes());
        b[8..12].copy_from_slice(&self.mime.to_le_bytes());
        b[12..].copy_from_slice(&self.status.to_le_bytes());
        b
    }

    /// Any 16 bytes decode to some answer (an unknown string id reads as ""): the file's
    /// blocks are checksummed before they get here.
    pub(super) fn from_bytes(b: [u8; 16]) -> Packed {
        let [t0, t1, t2, t3, t4, t5, t6, t7, m0, m1, m2, m3, s0, s1, s2, s3] = b;
        Packed {
            ts: u64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
            mime: u32::from_le_bytes([m0, m1, m2, m3]),
            status: u32::from_le_bytes([s0, s1, s2, s3]),
        }
    }
}

/// Strings seen few times over many answers (MIME types, statuses), each stored once.
#[derive(Default)]
pub(super) struct Interner {
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

    /// Each string twice (the map's key and the vector's) with their headers, roughly.
    pub(super) fn bytes(&self) -> u64 {
        self.strings.iter().map(|s| 2 * s.len() as u64 + 48).sum()
    }

    /// `answer` in 16 bytes; None for a failure (asked again on resume: the archive may answer
    /// now) or past the interner's room.
    pub(super) fn pack(&mut self, answer: &FirstCapture) -> Option<Packed> {
        match answer {
            FirstCapture::Found {
                timestamp,
                mime,
                status,
            } => {
                let ts = match pack_digits(timestamp) {
                    Some(ts) => ts,
                    None => INTERNED_TS | u64::from(self.id(timestamp)?),
                };
                Some(Packed {
                    ts: ts | FOUND << KIND_SHIFT,
                    mime: self.id(mime)?,
                    status: self.id(status)?,
                })
            }
            FirstCapture::NotArchived => Some(kind_only(NOT_ARCHIVED)),
            FirstCapture::Blocked => Some(kind_only(BLOCKED)),
            FirstCapture::Failed { .. } => None,
        }
    }

    pub(super) fn unpack(&self, p: Packed) -> FirstCapture {
        match (p.ts >> KIND_SHIFT) & 3 {
            NOT_ARCHIVED => FirstCapture::NotArchived,
            BLOCKED => FirstCapture::Blocked,
            _ => FirstCapture::Found {
                timestamp: unpack_ts(p.ts, self),
                mime: self.get(p.mime).to_string(),
                status: self.get(p.status).to_string(),
            },
        }
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
