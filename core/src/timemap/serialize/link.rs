//! RFC 7089's link format: the TimeMap every Memento client reads, oldest first, one link per
//! line.

use super::{memento_rel, Format, SelfLinks, TimeMapFormat};
use crate::timemap::aggregate::Aggregate;
use crate::timemap::datetime::write_rfc1123;
use crate::uri_text::escape_uri;
use std::fmt::Write;

/// `application/link-format`, at `/timemap/link/…` (and `/timemap/…`).
pub struct Link;

impl Format for Link {
    fn segment(&self) -> &'static str {
        "link"
    }

    fn content_type(&self) -> &'static str {
        "application/link-format"
    }

    fn json_key(&self) -> &'static str {
        "link_format"
    }

    fn render(&self, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
        to_link_format(agg, links).into_bytes()
    }
}

/// Link format, oldest first, one link per line. Every URI is written through [`escape_uri`]:
/// a `>`, `"`, space or line end in a URI-R or URI-M can never end its link or start another.
pub fn to_link_format(agg: &Aggregate, links: &SelfLinks) -> String {
    let ms = &agg.timemap.mementos;
    // About 140 bytes per memento line; reserving avoids regrowth on million-memento TimeMaps.
    let mut out =
        String::with_capacity(512 + ms.len() * (ms.first().map_or(0, |m| m.uri_m.len()) + 90));
    let _ = writeln!(out, "<{}>; rel=\"original\",", escape_uri(&agg.uri_r));
    let _ = write!(
        out,
        "<{}>; rel=\"self\"; type=\"application/link-format\"",
        links.timemap(TimeMapFormat::LINK)
    );
    if let (Some(first), Some(last)) = (ms.first(), ms.last()) {
        out.push_str("; from=\"");
        write_rfc1123(&mut out, first.datetime);
        out.push_str("\"; until=\"");
        write_rfc1123(&mut out, last.datetime);
        out.push('"');
    }
    out.push_str(",\n");
    // Every other format as an alternate (not a page: no from/until, another type).
    for format in TimeMapFormat::all().filter(|f| *f != TimeMapFormat::LINK) {
        let _ = writeln!(
            out,
            "<{}>; rel=\"timemap\"; type=\"{}\",",
            links.timemap(format),
            format.content_type()
        );
    }
    let _ = write!(out, "<{}>; rel=\"timegate\"", links.timegate());
    for (i, m) in ms.iter().enumerate() {
        out.push_str(",\n<");
        out.push_str(&escape_uri(&m.uri_m));
        out.push_str(">; rel=\"");
        out.push_str(memento_rel(i, ms.len()));
        out.push_str("\"; datetime=\"");
        write_rfc1123(&mut out, m.datetime);
        out.push('"');
    }
    out.push('\n');
    out
}
