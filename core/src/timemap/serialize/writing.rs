//! What every renderer shares: the [`Format`] trait each implements, what goes where the
//! memento list goes, and the buffered writing in pieces of [`CHUNK`] bytes.

use super::page::Page;
use super::self_links::SelfLinks;
use crate::timemap::aggregate::Aggregate;
use std::io;

/// One TimeMap format.
pub trait Format: Sync {
    /// The whole TimeMap (`page` None) or one page of it, written to `out` in pieces of about
    /// [`CHUNK`] bytes: a million-memento TimeMap is never whole in memory on its way. `list`
    /// says what goes where the memento list goes (see
    /// [`TimeMapFormat::skeleton`](super::TimeMapFormat::skeleton)).
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

/// About how many bytes a renderer gathers before handing them to its writer: few writes,
/// and a bounded buffer whatever the TimeMap's size.
pub const CHUNK: usize = 64 * 1024;

/// Hands `buf` to `out` once it holds [`CHUNK`] bytes (every renderer calls it per memento).
pub(super) fn flush_into(buf: &mut String, out: &mut dyn io::Write) -> io::Result<()> {
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
pub(super) fn render_vec(
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

/// A whole rendering as text, for the formats that are text.
pub(super) fn into_text(body: Vec<u8>) -> String {
    // Written from `&str`s only, so always UTF-8; lossy rather than a panic all the same.
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
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
