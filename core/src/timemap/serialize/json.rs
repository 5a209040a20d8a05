//! Time Travel's JSON TimeMap (mementoweb.org's), with the archive of each memento and each
//! archive's outcome in `archives[]`.

use super::page::PageLinks;
use super::{Format, Page, SelfLinks, TimeMapFormat, Uris};
use crate::timemap::aggregate::{Aggregate, ArchiveOutcome};
use crate::timemap::datetime::format_rfc3339;
use crate::timemap::model::Memento;
use serde::Serialize;

/// `application/json`, at `/timemap/json/…`.
pub struct Json;

impl Format for Json {
    fn segment(&self) -> &'static str {
        "json"
    }

    fn content_type(&self) -> &'static str {
        "application/json"
    }

    fn json_key(&self) -> &'static str {
        "json_format"
    }

    fn render(&self, agg: &Aggregate, links: &SelfLinks, page: Option<&Page>) -> Vec<u8> {
        write_json(agg, links, page)
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
    list: Vec<JsonMemento<'a>>,
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
    write_json(agg, links, None)
}

/// The whole TimeMap or one page: a page lists its own mementos; `first` and `last` stay the
/// TimeMap's (the resource's oldest and newest, as Time Travel means them).
fn write_json(agg: &Aggregate, links: &SelfLinks, page: Option<&Page>) -> Vec<u8> {
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
            list: ms.iter().map(JsonMemento::of).collect(),
        },
        archives: &agg.outcomes,
        pages: PageLinks::of(links, TimeMapFormat::JSON, links.pages(all.len()), page),
    };
    // Serialising plain structs of strings and numbers cannot fail; an empty body would be the
    // only fallback, and it is unreachable. A newline ends it, as every JSON answer of ours.
    let mut body = serde_json::to_vec(&doc).unwrap_or_default();
    body.push(b'\n');
    body
}
