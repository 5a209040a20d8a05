//! Rendering an aggregate in a [`TimeMapFormat`]: which renderer writes each format, the whole
//! TimeMap, a page of it, or its skeleton. The renderers name formats through `formats.rs`, so
//! only this file knows them all.

use super::cdxj::Cdxj;
use super::formats::TimeMapFormat;
use super::json::Json;
use super::link::Link;
use super::page::Page;
use super::self_links::SelfLinks;
use super::writing::{render_vec, Format, List};
use crate::timemap::aggregate::Aggregate;
use std::io;

/// Every format's renderer, in the order of [`TimeMapFormat::all`]. A new format is a file
/// here, its names in `formats.rs`, and a line in this list.
static FORMATS: &[&dyn Format] = &[&Link, &Json, &Cdxj];

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

impl TimeMapFormat {
    fn renderer(self) -> &'static dyn Format {
        FORMATS[self.index()]
    }

    /// The aggregate in this format.
    pub fn render(self, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
        render_vec(self.renderer(), agg, links, None)
    }

    /// The aggregate in this format, written to `out` piece by piece (the same bytes as
    /// [`TimeMapFormat::render`]); stops at the first error `out` returns.
    pub fn render_to(
        self,
        agg: &Aggregate,
        links: &SelfLinks,
        out: &mut dyn io::Write,
    ) -> io::Result<()> {
        self.renderer().write(agg, links, None, List::Each, out)
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
        self.renderer()
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
        render_vec(self.renderer(), agg, links, Some(page))
    }
}

/// Renders the aggregate in `format`.
pub fn render(format: TimeMapFormat, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
    format.render(agg, links)
}
