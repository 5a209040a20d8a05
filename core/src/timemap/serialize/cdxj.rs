//! MemGator's CDXJ TimeMap: `!` metadata lines, then one `YYYYMMDDhhmmss {json}` line per
//! memento.

use super::formats::TimeMapFormat;
use super::page::Page;
use super::self_links::{PageLinks, SelfLinks, Uris};
use super::writing::{finish, flush_into, into_text, memento_rel, render_vec, Format, List, CHUNK};
use crate::timemap::aggregate::Aggregate;
use crate::timemap::datetime::{write_14digit, write_rfc1123};
use std::fmt::Write;
use std::io;

/// `application/cdxj+ors`, at `/timemap/cdxj/…`.
pub struct Cdxj;

impl Format for Cdxj {
    fn write(
        &self,
        agg: &Aggregate,
        links: &SelfLinks,
        page: Option<&Page>,
        list: List<'_>,
        out: &mut dyn io::Write,
    ) -> io::Result<()> {
        write_cdxj(agg, links, page, list, out)
    }
}

/// MemGator's CDXJ TimeMap: `!` metadata lines, then one `YYYYMMDDhhmmss {json}` line per memento.
pub fn to_cdxj(agg: &Aggregate, links: &SelfLinks) -> String {
    into_text(render_vec(&Cdxj, agg, links, None))
}

/// The whole TimeMap or one page: a page's `!id` is the page, `!meta {"pages": …}` names the
/// others (the whole TimeMap's names its first and last when paged); `first`/`last` in a `rel`
/// stay the TimeMap's ends.
fn write_cdxj(
    agg: &Aggregate,
    links: &SelfLinks,
    page: Option<&Page>,
    list: List<'_>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    let all = &agg.timemap.mementos;
    let range = page.map_or(0..all.len(), Page::range);
    let ms = &all[range.clone()];
    let mut out = String::with_capacity(CHUNK + 4096);
    out.push_str("!context [\"https://oduwsdl.github.io/contexts/memento\"]\n");
    let _ = writeln!(
        out,
        "!id {{\"uri\": {}}}",
        json_str(&links.timemap_or_page(TimeMapFormat::CDXJ, page))
    );
    write_keys_and_meta(&mut out, agg, links);
    let pages = links.pages(all.len());
    if let Some(p) = PageLinks::of(links, TimeMapFormat::CDXJ, pages, page) {
        let _ = writeln!(
            out,
            "!meta {{\"pages\": {}}}",
            crate::json_text::to_string(&p).unwrap_or_default()
        );
    }
    if let List::Marker(marker) = list {
        out.push_str(marker);
    }
    let each = matches!(list, List::Each);
    for (i, m) in ms.iter().enumerate().filter(|_| each) {
        write_14digit(&mut out, m.datetime);
        out.push_str(" {\"uri\": ");
        out.push_str(&json_str(&m.uri_m));
        out.push_str(", \"rel\": \"");
        out.push_str(memento_rel(range.start + i, all.len()));
        out.push_str("\", \"datetime\": \"");
        write_rfc1123(&mut out, m.datetime);
        out.push_str("\", \"archive\": ");
        out.push_str(&json_str(&m.archive));
        out.push_str("}\n");
        flush_into(&mut out, w)?;
    }
    finish(&mut out, w)
}

/// The `!keys` line and the `!meta` lines (original, timegate, timemaps, archives) every CDXJ
/// answer of ours carries, the TimeMap's and the closest memento's (`nav`).
pub(super) fn write_keys_and_meta(out: &mut String, agg: &Aggregate, links: &SelfLinks) {
    out.push_str("!keys [\"memento_datetime_YYYYMMDDhhmmss\"]\n");
    let _ = writeln!(out, "!meta {{\"original_uri\": {}}}", json_str(&agg.uri_r));
    let _ = writeln!(
        out,
        "!meta {{\"timegate_uri\": {}}}",
        json_str(&links.timegate())
    );
    let _ = writeln!(
        out,
        "!meta {{\"timemap_uri\": {}}}",
        crate::json_text::to_string(&Uris(links)).unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "!meta {{\"archives\": {}}}",
        crate::json_text::to_string(&agg.outcomes).unwrap_or_default()
    );
}

/// A JSON string literal (quoted and escaped: `"`, `\`, every C0 control and the line
/// separators U+0085, U+2028 and U+2029, so a CDXJ line stays one line).
fn json_str(s: &str) -> String {
    crate::json_text::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}
