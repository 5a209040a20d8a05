//! The memento closest to a datetime and its neighbours (first, prev, next, last), described in
//! a TimeMap format as MemGator's `/memento/{link,json,cdxj}/{DATETIME}/{URI-R}` answers: only
//! those mementos, with the links to the whole TimeMap and the TimeGate.

use super::formats::TimeMapFormat;
use super::self_links::{SelfLinks, Uris};
use crate::timemap::aggregate::{Aggregate, ArchiveOutcome};
use crate::timemap::datetime::{format_rfc3339, write_14digit, write_rfc1123};
use crate::timemap::merge::Closest;
use crate::timemap::model::Memento;
use crate::uri_text::escape_uri;
use serde::Serialize;
use std::fmt::Write;

/// The relations of each memento of the neighbourhood, in time order, one entry per distinct
/// memento (the closest can also be the first, the last, or both). Words in MemGator's order.
fn relations(c: &Closest) -> Vec<(usize, Vec<&'static str>)> {
    let mut rels: Vec<(usize, Vec<&'static str>)> = Vec::with_capacity(5);
    let mut add = |i: usize, word: &'static str| match rels.iter_mut().find(|(j, _)| *j == i) {
        Some((_, words)) => words.push(word),
        None => rels.push((i, vec![word])),
    };
    add(c.first, "first");
    add(c.last, "last");
    add(c.closest, "closest");
    if let Some(n) = c.next {
        add(n, "next");
    }
    if let Some(p) = c.prev {
        add(p, "prev");
    }
    rels.sort_by_key(|(i, _)| *i);
    rels
}

/// The neighbourhood of `c` in `format`.
pub fn render_closest(
    format: TimeMapFormat,
    agg: &Aggregate,
    links: &SelfLinks,
    c: &Closest,
) -> Vec<u8> {
    if format == TimeMapFormat::JSON {
        closest_json(agg, links, c)
    } else if format == TimeMapFormat::CDXJ {
        closest_cdxj(agg, links, c).into_bytes()
    } else {
        closest_link(agg, links, c).into_bytes()
    }
}

/// Link format: the original, the neighbours (RFC 7089 has no `closest` relation: the closest
/// is the one that is only `memento`, or `first memento`…), every TimeMap and the TimeGate.
fn closest_link(agg: &Aggregate, links: &SelfLinks, c: &Closest) -> String {
    let ms = &agg.timemap.mementos;
    let mut out = String::with_capacity(1024);
    let _ = writeln!(out, "<{}>; rel=\"original\",", escape_uri(&agg.uri_r));
    for (i, words) in relations(c) {
        let words: Vec<&str> = words.into_iter().filter(|w| *w != "closest").collect();
        let _ = write!(out, "<{}>; rel=\"", escape_uri(&ms[i].uri_m));
        for w in words {
            out.push_str(w);
            out.push(' ');
        }
        out.push_str("memento\"; datetime=\"");
        write_rfc1123(&mut out, ms[i].datetime);
        out.push_str("\",\n");
    }
    for format in TimeMapFormat::all() {
        let _ = writeln!(
            out,
            "<{}>; rel=\"timemap\"; type=\"{}\",",
            links.timemap(format),
            format.content_type()
        );
    }
    let _ = writeln!(out, "<{}>; rel=\"timegate\"", links.timegate());
    out
}

#[derive(Serialize)]
struct NavJson<'a> {
    original_uri: &'a str,
    mementos: NavMementos<'a>,
    timemap_uri: Uris<'a>,
    timegate_uri: String,
    archives: &'a [ArchiveOutcome],
}

#[derive(Serialize)]
struct NavMementos<'a> {
    first: NavMemento<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prev: Option<NavMemento<'a>>,
    closest: NavMemento<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<NavMemento<'a>>,
    last: NavMemento<'a>,
}

/// One memento as MemGator describes it: `uri` is one string (Time Travel's `/api/json` has a
/// list), plus the archive that holds it, as in our JSON TimeMap.
#[derive(Serialize)]
struct NavMemento<'a> {
    datetime: String,
    uri: &'a str,
    archive: &'a str,
}

impl<'a> NavMemento<'a> {
    fn of(m: &'a Memento) -> NavMemento<'a> {
        NavMemento {
            datetime: format_rfc3339(m.datetime),
            uri: &m.uri_m,
            archive: &m.archive,
        }
    }
}

/// MemGator's JSON: `original_uri`, `mementos` by relation, `timemap_uri`, `timegate_uri`, and
/// our `archives[]`.
fn closest_json(agg: &Aggregate, links: &SelfLinks, c: &Closest) -> Vec<u8> {
    let ms = &agg.timemap.mementos;
    let doc = NavJson {
        original_uri: &agg.uri_r,
        mementos: NavMementos {
            first: NavMemento::of(&ms[c.first]),
            prev: c.prev.map(|i| NavMemento::of(&ms[i])),
            closest: NavMemento::of(&ms[c.closest]),
            next: c.next.map(|i| NavMemento::of(&ms[i])),
            last: NavMemento::of(&ms[c.last]),
        },
        timemap_uri: Uris(links),
        timegate_uri: links.timegate(),
        archives: &agg.outcomes,
    };
    // Plain strings and numbers always serialise; a newline ends it, as every JSON answer.
    let mut body = crate::json_text::to_vec(&doc).unwrap_or_default();
    body.push(b'\n');
    body
}

/// MemGator's CDXJ: the metadata lines (no `!id`: this is not the TimeMap), then one line per
/// neighbour whose `rel` keeps `closest`, as MemGator writes it.
fn closest_cdxj(agg: &Aggregate, links: &SelfLinks, c: &Closest) -> String {
    let ms = &agg.timemap.mementos;
    let json = |s: &str| crate::json_text::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    let mut out = String::with_capacity(1024);
    out.push_str("!context [\"https://oduwsdl.github.io/contexts/memento\"]\n");
    super::cdxj::write_keys_and_meta(&mut out, agg, links);
    for (i, words) in relations(c) {
        let m = &ms[i];
        write_14digit(&mut out, m.datetime);
        let _ = write!(
            out,
            " {{\"uri\": {}, \"rel\": \"{} memento\", \"datetime\": \"",
            json(&m.uri_m),
            words.join(" ")
        );
        write_rfc1123(&mut out, m.datetime);
        let _ = writeln!(out, "\", \"archive\": {}}}", json(&m.archive));
    }
    out
}
