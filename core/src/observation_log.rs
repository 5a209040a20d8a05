//! The observation log's line (`[observe] log`): one JSON object per fan-out, written by the
//! server's cache (`src/cache/observe.rs`) and read by `memsim` (`simulations/src/import.rs`).
//! One type on both sides, so the writer and the reader cannot drift apart. Borrowed where it
//! can be: the writer serialises a fan-out without copying its URI-R, ids or URI-Ms.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// `{"uri_r": …, "at": RFC 3339, "archives": [{"id", "status", "mementos"}…], "mementos":
/// [[archive, "YYYYMMDDhhmmss", uri_m]…]}`. The reader needs only `uri_r` and `at`: the rest
/// defaults to empty, as it always has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationLine<'a> {
    #[serde(borrow)]
    pub uri_r: Cow<'a, str>,
    /// When the fan-out was made, RFC 3339 on the server's clock.
    #[serde(borrow)]
    pub at: Cow<'a, str>,
    /// Each archive asked, in configured order.
    #[serde(default, borrow)]
    pub archives: Vec<ArchiveLine<'a>>,
    /// `[archive, "YYYYMMDDhhmmss", uri_m]`: archive by archive, each oldest first (one per
    /// datetime, as the fan-out keeps them).
    #[serde(default)]
    pub mementos: Vec<(Cow<'a, str>, Cow<'a, str>, Cow<'a, str>)>,
}

/// One archive's part of a line: its id, its answer's status (`ok`, `timeout`, …) and how many
/// mementos it listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveLine<'a> {
    #[serde(default, borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub status: Cow<'a, str>,
    #[serde(default)]
    pub mementos: usize,
}

impl ArchiveLine<'_> {
    /// Whether the archive answered (`ok`, `empty`, `not_found`): the observer learnt what it
    /// holds, where a timeout, an error or a malformed body taught nothing.
    pub fn answered(&self) -> bool {
        matches!(&*self.status, "ok" | "empty" | "not_found")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written_and_old_lines_still_read() {
        let line = ObservationLine {
            uri_r: "http://example.com/".into(),
            at: "2026-01-01T00:00:00Z".into(),
            archives: vec![ArchiveLine {
                id: "ia".into(),
                status: "ok".into(),
                mementos: 1,
            }],
            mementos: vec![(
                "ia".into(),
                "20010101000000".into(),
                "http://web.archive.org/web/20010101000000/http://example.com/".into(),
            )],
        };
        let text = serde_json::to_string(&line).expect("encode");
        assert_eq!(
            text,
            r#"{"uri_r":"http://example.com/","at":"2026-01-01T00:00:00Z","archives":[{"id":"ia","status":"ok","mementos":1}],"mementos":[["ia","20010101000000","http://web.archive.org/web/20010101000000/http://example.com/"]]}"#
        );
        let back: ObservationLine = serde_json::from_str(&text).expect("decode");
        assert_eq!(back, line);
        assert!(back.archives[0].answered());
        let bare: ObservationLine =
            serde_json::from_str(r#"{"uri_r":"u","at":"t","archives":[{"status":"timeout"}]}"#)
                .expect("decode");
        assert!(bare.mementos.is_empty());
        assert!(!bare.archives[0].answered());
    }
}
