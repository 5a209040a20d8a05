//! RFC 7089's link format: the TimeMap every Memento client reads, oldest first, one link per
//! line.

use super::formats::TimeMapFormat;
use super::page::Page;
use super::self_links::SelfLinks;
use super::writing::{finish, flush_into, into_text, memento_rel, render_vec, Format, List, CHUNK};
use crate::timemap::aggregate::Aggregate;
use crate::timemap::datetime::write_rfc1123;
use crate::timemap::model::Memento;
use crate::uri_text::escape_uri;
use std::fmt::Write;
use std::io;

/// `application/link-format`, at `/timemap/link/…` (and `/timemap/…`).
pub struct Link;

impl Format for Link {
    fn write(
        &self,
        agg: &Aggregate,
        links: &SelfLinks,
        page: Option<&Page>,
        list: List<'_>,
        out: &mut dyn io::Write,
    ) -> io::Result<()> {
        write_link_format(agg, links, page, list, out)
    }
}

/// Link format, oldest first, one link per line. Every URI is written through [`escape_uri`]:
/// a `>`, `"`, space or line end in a URI-R or URI-M can never end its link or start another.
pub fn to_link_format(agg: &Aggregate, links: &SelfLinks) -> String {
    into_text(render_vec(&Link, agg, links, None))
}

/// The whole TimeMap, or one page of it as RFC 7089 §4.3 pages one: `self` is the page with its
/// span, the whole TimeMap and the first, neighbour and last pages are `timemap` links with
/// theirs. The whole TimeMap links its first page the same way when there is more than one.
fn write_link_format(
    agg: &Aggregate,
    links: &SelfLinks,
    page: Option<&Page>,
    list: List<'_>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    let all = &agg.timemap.mementos;
    let pages = links.pages(all.len());
    let range = page.map_or(0..all.len(), Page::range);
    let ms = &all[range.clone()];
    let mut out = String::with_capacity(CHUNK + 4096);
    let _ = writeln!(out, "<{}>; rel=\"original\",", escape_uri(&agg.uri_r));
    let own = links.timemap_or_page(TimeMapFormat::LINK, page);
    write_span_link(&mut out, &own, "self", ms);
    let link_page = |out: &mut String, n: usize| {
        let url = links.timemap_page(TimeMapFormat::LINK, n);
        write_span_link(out, &url, "timemap", &all[pages.range(n)]);
    };
    match page {
        Some(p) => {
            write_span_link(
                &mut out,
                &links.timemap(TimeMapFormat::LINK),
                "timemap",
                all,
            );
            for n in p.linked() {
                link_page(&mut out, n);
            }
        }
        None if pages.paged() => link_page(&mut out, 1),
        None => {}
    }
    // Every other format (of the same page) as an alternate: no from/until, another type.
    for format in TimeMapFormat::all().filter(|f| *f != TimeMapFormat::LINK) {
        let _ = writeln!(
            out,
            "<{}>; rel=\"timemap\"; type=\"{}\",",
            links.timemap_or_page(format, page),
            format.content_type()
        );
    }
    let _ = write!(out, "<{}>; rel=\"timegate\"", links.timegate());
    if let List::Marker(marker) = list {
        out.push_str(marker);
    }
    let each = matches!(list, List::Each);
    for (i, m) in ms.iter().enumerate().filter(|_| each) {
        out.push_str(",\n<");
        out.push_str(&escape_uri(&m.uri_m));
        out.push_str(">; rel=\"");
        // first/last are the TimeMap's ends, not the page's.
        out.push_str(memento_rel(range.start + i, all.len()));
        out.push_str("\"; datetime=\"");
        write_rfc1123(&mut out, m.datetime);
        out.push('"');
        flush_into(&mut out, w)?;
    }
    out.push('\n');
    finish(&mut out, w)
}

/// One link-format TimeMap link (`self` or `timemap`) with the span of its mementos, and `,\n`.
fn write_span_link(out: &mut String, url: &str, rel: &str, ms: &[Memento]) {
    let _ = write!(
        out,
        "<{url}>; rel=\"{rel}\"; type=\"application/link-format\""
    );
    if let (Some(first), Some(last)) = (ms.first(), ms.last()) {
        out.push_str("; from=\"");
        write_rfc1123(out, first.datetime);
        out.push_str("\"; until=\"");
        write_rfc1123(out, last.datetime);
        out.push('"');
    }
    out.push_str(",\n");
}
