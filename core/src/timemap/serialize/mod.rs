//! Aggregated TimeMaps as clients read them, one type per format behind [`Format`]: link
//! format (RFC 7089), JSON (Time Travel's, plus `archives[]`) and CDXJ (MemGator's). Pure: the
//! public base URL is passed in. A new format is a file here and a line in [`FORMATS`].

mod cdxj;
mod json;
mod link;
mod nav;
mod page;

pub use cdxj::{to_cdxj, Cdxj};
pub use json::{to_json, Json};
pub use link::{to_link_format, Link};
pub use nav::render_closest;
pub use page::{Page, PageError, Pages};

use super::aggregate::Aggregate;
use crate::uri_text::escape_uri;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::io;

/// One TimeMap format.
pub trait Format: Sync {
    /// The path segment that names it: `/timemap/{segment}/…`.
    fn segment(&self) -> &'static str;
    fn content_type(&self) -> &'static str;
    /// The key of its URL where JSON lists every format's (`timemap_uri`).
    fn json_key(&self) -> &'static str;
    /// The whole TimeMap (`page` None) or one page of it, written to `out` in pieces of about
    /// [`CHUNK`] bytes: a million-memento TimeMap is never whole in memory on its way. `list`
    /// says what goes where the memento list goes (see [`TimeMapFormat::skeleton`]).
    fn write(
        &self,
        agg: &Aggregate,
        links: &SelfLinks,
        page: Option<&Page>,
        list: List<'_>,
        out: &mut dyn io::Write,
    ) -> io::Result<()>;
}

/// What a renderer writes where the memento list goes.
#[derive(Clone, Copy)]
pub enum List<'a> {
    /// Each memento (every answer).
    Each,
    /// A marker in its place: a skeleton, into which a list rendered before is spliced.
    Marker(&'a str),
}

/// A rendering whose memento list is a marker: the same bytes as the whole TimeMap but for the
/// list, which sits at `list` and depends on the mementos alone, never on the URI-R's spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    pub bytes: Vec<u8>,
    pub list: std::ops::Range<usize>,
}

impl Skeleton {
    /// The memento list of `body`, a whole rendering of the aggregate this skeleton was made
    /// from (under any spelling of its URI-R): what lies between this skeleton's head and tail.
    /// None when `body` does not begin with the head and end with the tail.
    pub fn list_in<'b>(&self, body: &'b [u8]) -> Option<&'b [u8]> {
        let (head, tail) = (&self.bytes[..self.list.start], &self.bytes[self.list.end..]);
        let ends = body.len().checked_sub(tail.len())?;
        (ends >= head.len() && body.starts_with(head) && body.ends_with(tail))
            .then(|| &body[head.len()..ends])
    }

    /// The rendering with `list` (a [`Skeleton::list_in`] of the same mementos) in place.
    pub fn splice(&self, list: &[u8]) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.bytes.len() - self.list.len() + list.len());
        body.extend_from_slice(&self.bytes[..self.list.start]);
        body.extend_from_slice(list);
        body.extend_from_slice(&self.bytes[self.list.end..]);
        body
    }

    /// The bytes before the list.
    pub fn head(&self) -> &[u8] {
        &self.bytes[..self.list.start]
    }

    /// The bytes after the list.
    pub fn tail(&self) -> &[u8] {
        &self.bytes[self.list.end..]
    }
}

/// About how many bytes a renderer gathers before handing them to its writer: few writes,
/// and a bounded buffer whatever the TimeMap's size.
pub const CHUNK: usize = 64 * 1024;

/// Hands `buf` to `out` once it holds [`CHUNK`] bytes (every renderer calls it per memento).
pub(super) fn spill(buf: &mut String, out: &mut dyn io::Write) -> io::Result<()> {
    if buf.len() >= CHUNK {
        out.write_all(buf.as_bytes())?;
        buf.clear();
    }
    Ok(())
}

/// Hands what is left in `buf` to `out`.
pub(super) fn finish(buf: &mut String, out: &mut dyn io::Write) -> io::Result<()> {
    out.write_all(buf.as_bytes())?;
    buf.clear();
    Ok(())
}

/// Renders into memory: a `Vec` never refuses a write.
fn render_vec(
    format: &dyn Format,
    agg: &Aggregate,
    links: &SelfLinks,
    page: Option<&Page>,
) -> Vec<u8> {
    let all = &agg.timemap.mementos;
    let n = page.map_or(all.len(), |p| p.range().len());
    // About 70–110 bytes of markup per memento besides its URI-M: reserved once, so a
    // million-memento body is not regrown.
    let per = all.first().map_or(0, |m| m.uri_m.len()) + 110;
    let mut body = Vec::with_capacity(1024 + n.saturating_mul(per));
    let _ = format.write(agg, links, page, List::Each, &mut body);
    body
}

/// Every format served, in the order documents list them.
static FORMATS: &[&dyn Format] = &[&Link, &Json, &Cdxj];

/// A format served, by its place in [`FORMATS`]: small, `Copy` and comparable.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeMapFormat(usize);

impl TimeMapFormat {
    /// RFC 7089's, the default (`/timemap/{URI-R}`).
    pub const LINK: TimeMapFormat = TimeMapFormat(0);
    pub const JSON: TimeMapFormat = TimeMapFormat(1);
    pub const CDXJ: TimeMapFormat = TimeMapFormat(2);

    /// Every format, in the order documents list them.
    pub fn all() -> impl Iterator<Item = TimeMapFormat> {
        (0..FORMATS.len()).map(TimeMapFormat)
    }

    /// How many formats there are (one rendered body each, at most, per cached entry).
    pub fn count() -> usize {
        FORMATS.len()
    }

    pub fn from_segment(s: &str) -> Option<TimeMapFormat> {
        Self::all().find(|f| f.segment() == s)
    }

    /// Its place among [`TimeMapFormat::all`], from 0.
    pub fn index(self) -> usize {
        self.0
    }

    fn format(self) -> &'static dyn Format {
        FORMATS[self.0]
    }

    pub fn segment(self) -> &'static str {
        self.format().segment()
    }

    pub fn content_type(self) -> &'static str {
        self.format().content_type()
    }

    pub fn json_key(self) -> &'static str {
        self.format().json_key()
    }

    /// The aggregate in this format.
    pub fn render(self, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
        render_vec(self.format(), agg, links, None)
    }

    /// The aggregate in this format, written to `out` piece by piece (the same bytes as
    /// [`TimeMapFormat::render`]); stops at the first error `out` returns.
    pub fn render_to(
        self,
        agg: &Aggregate,
        links: &SelfLinks,
        out: &mut dyn io::Write,
    ) -> io::Result<()> {
        self.format().write(agg, links, None, List::Each, out)
    }

    /// The whole TimeMap in this format with `marker` in place of its memento list, and where
    /// the marker stands. The bytes before and after it are those [`TimeMapFormat::render`]
    /// writes, so the list a rendering holds is what lies between them, and another spelling's
    /// body is its skeleton with that list spliced in: a hit in any spelling costs a head, a
    /// tail and a copy, not a render. `marker` is ASCII letters, digits and `-` (it is written
    /// as a JSON string as it is); None if it is not, or if it occurs in the text around it
    /// (a marker drawn at random never does).
    pub fn skeleton(self, agg: &Aggregate, links: &SelfLinks, marker: &str) -> Option<Skeleton> {
        if marker.is_empty()
            || !marker
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return None;
        }
        let mut bytes = Vec::with_capacity(4096);
        self.format()
            .write(agg, links, None, List::Marker(marker), &mut bytes)
            .ok()?;
        // JSON writes its list's marker as a string: the quotes are the marker's too.
        let token = match self == TimeMapFormat::JSON {
            true => format!("\"{marker}\""),
            false => marker.to_string(),
        };
        let token = token.as_bytes();
        let mut at = bytes
            .windows(token.len())
            .enumerate()
            .filter(|(_, w)| *w == token);
        let (start, _) = at.next()?;
        if at.next().is_some() {
            return None;
        }
        Some(Skeleton {
            list: start..start + token.len(),
            bytes,
        })
    }

    /// One page of the aggregate in this format: only its mementos are written, read in place.
    pub fn render_page(self, agg: &Aggregate, links: &SelfLinks, page: &Page) -> Vec<u8> {
        render_vec(self.format(), agg, links, Some(page))
    }
}

impl fmt::Debug for TimeMapFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.segment())
    }
}

/// [`render`] as text, for the formats that are text.
fn render_text(format: TimeMapFormat, agg: &Aggregate, links: &SelfLinks) -> String {
    let body = render(format, agg, links);
    // Written from `&str`s only, so always UTF-8; lossy rather than a panic all the same.
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Renders the aggregate in `format`.
pub fn render(format: TimeMapFormat, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
    format.render(agg, links)
}

/// The proxy's own URLs for one URI-R. The URI-R is kept escaped ([`escape_uri`]), so every
/// link built from it is a URL that one `<…>` or one header value holds, in every format.
#[derive(Debug, Clone)]
pub struct SelfLinks {
    pub public_url: String,
    pub uri_r: String,
    /// `[server] page_size`: how many mementos a page holds, so which pages exist.
    pub page_size: usize,
}

impl SelfLinks {
    pub fn new(public_url: &str, uri_r: &str) -> SelfLinks {
        SelfLinks {
            public_url: escape_uri(public_url.trim_end_matches('/')).into_owned(),
            uri_r: escape_uri(uri_r).into_owned(),
            page_size: usize::MAX,
        }
    }

    /// The same links, for a TimeMap split into pages of `page_size` (one page without it).
    pub fn with_page_size(mut self, page_size: usize) -> SelfLinks {
        self.page_size = page_size.max(1);
        self
    }

    /// How a TimeMap of `len` mementos splits into this server's pages.
    pub fn pages(&self, len: usize) -> Pages {
        Pages::new(len, self.page_size)
    }

    /// Page `number` of the TimeMap in `format`: `/timemap/{format}/{number}/{URI-R}`.
    pub fn timemap_page(&self, format: TimeMapFormat, number: usize) -> String {
        format!(
            "{}/timemap/{}/{number}/{}",
            self.public_url,
            format.segment(),
            self.uri_r
        )
    }

    /// The whole TimeMap's URL (`page` None) or a page's.
    pub fn timemap_or_page(&self, format: TimeMapFormat, page: Option<&Page>) -> String {
        match page {
            Some(p) => self.timemap_page(format, p.number),
            None => self.timemap(format),
        }
    }

    pub fn timemap(&self, format: TimeMapFormat) -> String {
        format!(
            "{}/timemap/{}/{}",
            self.public_url,
            format.segment(),
            self.uri_r
        )
    }

    pub fn timegate(&self) -> String {
        format!("{}/timegate/{}", self.public_url, self.uri_r)
    }
}

/// Every format's URL of the TimeMap, keyed by [`Format::json_key`] in the order of [`FORMATS`].
struct Uris<'a>(&'a SelfLinks);

impl Serialize for Uris<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(TimeMapFormat::count()))?;
        for format in TimeMapFormat::all() {
            map.serialize_entry(format.json_key(), &self.0.timemap(format))?;
        }
        map.end()
    }
}

/// The relation of the i-th memento of n, as RFC 7089 §5 marks the ends.
pub(super) fn memento_rel(i: usize, n: usize) -> &'static str {
    match (i == 0, i + 1 == n) {
        (true, true) => "first last memento",
        (true, false) => "first memento",
        (false, true) => "last memento",
        (false, false) => "memento",
    }
}

#[cfg(test)]
mod page_tests;
#[cfg(test)]
mod skeleton_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
