//! A line of `timemaps/index.ndjson` and the names the TimeMap stage gives its files: the
//! TimeMap of sample line `i` is `NNNNNN.ndjson` (its served name, and its file in the layout of
//! one file per TimeMap), stored in pack `pack-NNNN.zst`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An index line longer than this is passed over (a real one is a URL and a few numbers).
pub const MAX_LINE: usize = 1 << 20;

/// What hydration did over one TimeMap (summed into `hydration.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hydration {
    pub revisits: u64,
    pub hydrated: u64,
    pub misses: u64,
    pub distances: BTreeMap<usize, u64>,
}

/// A line of `timemaps/index.ndjson`: a TimeMap written (`file`, `mementos`, where it is
/// stored) or one that could not be had (`error`). A line without `pack` names a TimeMap
/// written as a file of its own (`timemaps/NNNNNN.ndjson`), as earlier versions did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mementos: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hydration: Option<Hydration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The pack holding the TimeMap's frame, the frame's first byte in it and its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// Where a TimeMap's frame is: `length` bytes from `offset` of pack `pack`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub pack: String,
    pub offset: u64,
    pub length: u64,
}

impl IndexLine {
    /// Where the TimeMap is stored, when the line says so with all three fields; None for a
    /// failure and for a TimeMap of its own file.
    pub fn location(&self) -> Option<Location> {
        match (&self.pack, self.offset, self.length) {
            (Some(pack), Some(offset), Some(length)) => Some(Location {
                pack: pack.clone(),
                offset,
                length,
            }),
            _ => None,
        }
    }

    pub fn set_location(&mut self, at: Location) {
        self.pack = Some(at.pack);
        self.offset = Some(at.offset);
        self.length = Some(at.length);
    }
}

/// The name of sample line `i`'s TimeMap.
pub fn file_name(i: usize) -> String {
    format!("{i:06}.ndjson")
}

/// The name of pack `n`.
pub fn pack_name(n: u32) -> String {
    format!("pack-{n:04}.zst")
}

/// The number of a pack named as [`pack_name`] names it, and only so (no sign, no extra zero,
/// nothing after): a name read from disk is checked against this before it is opened.
pub fn pack_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("pack-")?.strip_suffix(".zst")?;
    if !(4..=9).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = digits.parse::<u32>().ok()?;
    (pack_name(n) == name).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_names_read_back_only_as_written() {
        for n in [0, 7, 9999, 10_000, 123_456_789] {
            assert_eq!(pack_number(&pack_name(n)), Some(n));
        }
        for bad in [
            "pack-000.zst",
            "pack-00000.zst",
            "pack-+001.zst",
            "pack-0001.zst.part",
            "pack-0001.zs",
            "../pack-0001.zst",
            "pack-0001.zst/",
            "pack-1234567890.zst",
            "PACK-0001.zst",
            "",
        ] {
            assert_eq!(pack_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_line_without_all_three_fields_has_no_location() {
        let line = |s: &str| serde_json::from_str::<IndexLine>(s).expect("JSON");
        let old = line(r#"{"file":"000001.ndjson","url":"u","mementos":2}"#);
        assert_eq!(old.location(), None);
        let half = line(r#"{"file":"000001.ndjson","url":"u","pack":"pack-0000.zst","offset":4}"#);
        assert_eq!(half.location(), None);
        let new = line(
            r#"{"file":"000001.ndjson","url":"u","pack":"pack-0000.zst","offset":4,"length":9}"#,
        );
        let at = new.location().expect("a location");
        assert_eq!(
            (at.pack.as_str(), at.offset, at.length),
            ("pack-0000.zst", 4, 9)
        );
    }
}
