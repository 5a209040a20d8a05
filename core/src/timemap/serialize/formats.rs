//! Which TimeMap formats are served and what names each: its path segment, its content type and
//! the key of its URL in JSON. Kept apart from the renderers, which link to one another's URLs
//! and so need every format's names without needing one another.

use std::fmt;

/// A format served, by its place in `NAMES` (and in the renderers' list): small, `Copy` and
/// comparable.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeMapFormat(usize);

/// What names one format.
struct Names {
    /// The path segment: `/timemap/{segment}/…`.
    segment: &'static str,
    content_type: &'static str,
    /// The key of its URL where JSON lists every format's (`timemap_uri`).
    json_key: &'static str,
}

/// Every format served, in the order documents list them; the renderers' list in `render.rs`
/// is in the same order.
static NAMES: &[Names] = &[
    Names {
        segment: "link",
        content_type: "application/link-format",
        json_key: "link_format",
    },
    Names {
        segment: "json",
        content_type: "application/json",
        json_key: "json_format",
    },
    Names {
        segment: "cdxj",
        content_type: "application/cdxj+ors",
        json_key: "cdxj_format",
    },
];

impl TimeMapFormat {
    /// RFC 7089's, the default (`/timemap/{URI-R}`).
    pub const LINK: TimeMapFormat = TimeMapFormat(0);
    pub const JSON: TimeMapFormat = TimeMapFormat(1);
    pub const CDXJ: TimeMapFormat = TimeMapFormat(2);

    /// Every format, in the order documents list them.
    pub fn all() -> impl Iterator<Item = TimeMapFormat> {
        (0..NAMES.len()).map(TimeMapFormat)
    }

    /// How many formats there are (one rendered body each, at most, per cached entry).
    pub fn count() -> usize {
        NAMES.len()
    }

    pub fn from_segment(s: &str) -> Option<TimeMapFormat> {
        Self::all().find(|f| f.segment() == s)
    }

    /// Its place among [`TimeMapFormat::all`], from 0.
    pub fn index(self) -> usize {
        self.0
    }

    fn names(self) -> &'static Names {
        &NAMES[self.0]
    }

    pub fn segment(self) -> &'static str {
        self.names().segment
    }

    pub fn content_type(self) -> &'static str {
        self.names().content_type
    }

    pub fn json_key(self) -> &'static str {
        self.names().json_key
    }
}

impl fmt::Debug for TimeMapFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.segment())
    }
}
