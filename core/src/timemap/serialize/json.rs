//! Time Travel's JSON TimeMap (mementoweb.org's), with the archive of each memento and each
//! archive's outcome in `archives[]`.

use super::formats::TimeMapFormat;
use super::page::Page;
use super::self_links::{PageLinks, SelfLinks, Uris};
use super::writing::{render_vec, Format, List, CHUNK};
use crate::timemap::aggregate::{Aggregate, ArchiveOutcome};
use crate::timemap::datetime::format_rfc3339;
use crate::timemap::model::Memento;
use serde::{Serialize, Serializer};
use std::io::{self, Write};

/// `application/json`, at `/timemap/json/…`.
pub struct Json;

impl Format for Json {
    fn write(
        &self,
        agg: &Aggregate,
        links: &SelfLinks,
        page: Option<&Page>,
        list: List<'_>,
        out: &mut dyn io::Write,
    ) -> io::Result<()> {
        write_json(agg, links, page, list, out)
    }
}

#[derive(Serialize)]
struct JsonTimeMap<'a> {
    original_uri: &'a str,
    #[serde(rename = "self")]
    self_uri: String,
    timegate_uri: String,
    timemap_uri: Uris<'a>,
    mementos: JsonMementos<'a>,
    archives: &'a [ArchiveOutcome],
    /// A page's first, prev, next and last pages; the whole TimeMap's first and last when paged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pages: Option<PageLinks>,
}

#[derive(Serialize)]
struct JsonMementos<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    first: Option<JsonMemento<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last: Option<JsonMemento<'a>>,
    list: JsonList<'a>,
}

/// The mementos listed, each made as it is written: a million are never all in memory. A
/// skeleton's is its marker, as a string.
struct JsonList<'a>(&'a [Memento], List<'a>);

impl Serialize for JsonList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            List::Each => serializer.collect_seq(self.0.iter().map(JsonMemento::of)),
            List::Marker(marker) => serializer.serialize_str(marker),
        }
    }
}

#[derive(Serialize)]
struct JsonMemento<'a> {
    datetime: String,
    uri: &'a str,
    archive: &'a str,
}

impl<'a> JsonMemento<'a> {
    fn of(m: &'a Memento) -> JsonMemento<'a> {
        JsonMemento {
            datetime: format_rfc3339(m.datetime),
            uri: &m.uri_m,
            archive: &m.archive,
        }
    }
}

/// mementoweb.org's JSON TimeMap with `archive` per memento and `archives[]` outcomes.
pub fn to_json(agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
    render_vec(&Json, agg, links, None)
}

/// The whole TimeMap or one page: a page lists its own mementos; `first` and `last` stay the
/// TimeMap's (the resource's oldest and newest, as Time Travel means them).
fn write_json(
    agg: &Aggregate,
    links: &SelfLinks,
    page: Option<&Page>,
    list: List<'_>,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let all = &agg.timemap.mementos;
    let ms = &all[page.map_or(0..all.len(), Page::range)];
    let doc = JsonTimeMap {
        original_uri: &agg.uri_r,
        self_uri: links.timemap_or_page(TimeMapFormat::JSON, page),
        timegate_uri: links.timegate(),
        timemap_uri: Uris(links),
        mementos: JsonMementos {
            first: all.first().map(JsonMemento::of),
            last: all.last().map(JsonMemento::of),
            list: JsonList(ms, list),
        },
        archives: &agg.outcomes,
        pages: PageLinks::of(links, TimeMapFormat::JSON, links.pages(all.len()), page),
    };
    // serde_json writes a few bytes at a time: gathered into pieces of [`CHUNK`]. Serialising
    // plain structs of strings and numbers fails only when `out` does. A newline ends it, as
    // every JSON answer of ours.
    let mut w = io::BufWriter::with_capacity(CHUNK, out);
    crate::json_text::to_writer(&mut w, &doc).map_err(io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush()
}
