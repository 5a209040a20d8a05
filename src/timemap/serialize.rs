//! Aggregated TimeMaps as clients read them: link format (RFC 7089), JSON (Time Travel's, plus
//! `archives[]`) and CDXJ (MemGator's). Pure: the public base URL is passed in.

use super::aggregate::{Aggregate, ArchiveOutcome};
use super::datetime::{format_rfc3339, write_14digit, write_rfc1123};
use super::model::Memento;
use crate::uri_text::escape_uri;
use serde::Serialize;
use std::fmt::Write;

/// The TimeMap formats we serve, named as in the path `/timemap/{format}/…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeMapFormat {
    Link,
    Json,
    Cdxj,
}

impl TimeMapFormat {
    pub const ALL: [TimeMapFormat; 3] = [
        TimeMapFormat::Link,
        TimeMapFormat::Json,
        TimeMapFormat::Cdxj,
    ];

    pub fn from_segment(s: &str) -> Option<TimeMapFormat> {
        match s {
            "link" => Some(TimeMapFormat::Link),
            "json" => Some(TimeMapFormat::Json),
            "cdxj" => Some(TimeMapFormat::Cdxj),
            _ => None,
        }
    }

    pub fn segment(self) -> &'static str {
        match self {
            TimeMapFormat::Link => "link",
            TimeMapFormat::Json => "json",
            TimeMapFormat::Cdxj => "cdxj",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            TimeMapFormat::Link => "application/link-format",
            TimeMapFormat::Json => "application/json",
            TimeMapFormat::Cdxj => "application/cdxj+ors",
        }
    }
}

/// The proxy's own URLs for one URI-R. The URI-R is kept escaped ([`escape_uri`]), so every
/// link built from it is a URL that one `<…>` or one header value holds, in every format.
#[derive(Debug, Clone)]
pub struct SelfLinks {
    pub public_url: String,
    pub uri_r: String,
}

impl SelfLinks {
    pub fn new(public_url: &str, uri_r: &str) -> SelfLinks {
        SelfLinks {
            public_url: escape_uri(public_url.trim_end_matches('/')).into_owned(),
            uri_r: escape_uri(uri_r).into_owned(),
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

/// Renders the aggregate in `format`.
pub fn render(format: TimeMapFormat, agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
    match format {
        TimeMapFormat::Link => to_link_format(agg, links).into_bytes(),
        TimeMapFormat::Json => to_json(agg, links),
        TimeMapFormat::Cdxj => to_cdxj(agg, links).into_bytes(),
    }
}

/// The relation of the i-th memento of n, as RFC 7089 §5 marks the ends.
fn memento_rel(i: usize, n: usize) -> &'static str {
    match (i == 0, i + 1 == n) {
        (true, true) => "first last memento",
        (true, false) => "first memento",
        (false, true) => "last memento",
        (false, false) => "memento",
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
        links.timemap(TimeMapFormat::Link)
    );
    if let (Some(first), Some(last)) = (ms.first(), ms.last()) {
        out.push_str("; from=\"");
        write_rfc1123(&mut out, first.datetime);
        out.push_str("\"; until=\"");
        write_rfc1123(&mut out, last.datetime);
        out.push('"');
    }
    out.push_str(",\n");
    for format in [TimeMapFormat::Json, TimeMapFormat::Cdxj] {
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

#[derive(Serialize)]
struct JsonTimeMap<'a> {
    original_uri: &'a str,
    #[serde(rename = "self")]
    self_uri: String,
    timegate_uri: String,
    timemap_uri: JsonTimeMapUris,
    mementos: JsonMementos<'a>,
    archives: &'a [ArchiveOutcome],
}

#[derive(Serialize)]
struct JsonTimeMapUris {
    link_format: String,
    json_format: String,
    cdxj_format: String,
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

fn timemap_uris(links: &SelfLinks) -> JsonTimeMapUris {
    JsonTimeMapUris {
        link_format: links.timemap(TimeMapFormat::Link),
        json_format: links.timemap(TimeMapFormat::Json),
        cdxj_format: links.timemap(TimeMapFormat::Cdxj),
    }
}

/// mementoweb.org's JSON TimeMap with `archive` per memento and `archives[]` outcomes.
pub fn to_json(agg: &Aggregate, links: &SelfLinks) -> Vec<u8> {
    let ms = &agg.timemap.mementos;
    let doc = JsonTimeMap {
        original_uri: &agg.uri_r,
        self_uri: links.timemap(TimeMapFormat::Json),
        timegate_uri: links.timegate(),
        timemap_uri: timemap_uris(links),
        mementos: JsonMementos {
            first: ms.first().map(JsonMemento::of),
            last: ms.last().map(JsonMemento::of),
            list: ms.iter().map(JsonMemento::of).collect(),
        },
        archives: &agg.outcomes,
    };
    // Serialising plain structs of strings and numbers cannot fail; an empty body would be the
    // only fallback, and it is unreachable.
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// MemGator's CDXJ TimeMap: `!` metadata lines, then one `YYYYMMDDhhmmss {json}` line per memento.
pub fn to_cdxj(agg: &Aggregate, links: &SelfLinks) -> String {
    let ms = &agg.timemap.mementos;
    let mut out = String::with_capacity(512 + ms.len() * 160);
    out.push_str("!context [\"http://tools.ietf.org/html/rfc7089\"]\n");
    let _ = writeln!(
        out,
        "!id {{\"uri\": {}}}",
        json_str(&links.timemap(TimeMapFormat::Cdxj))
    );
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
        serde_json::to_string(&timemap_uris(links)).unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "!meta {{\"archives\": {}}}",
        serde_json::to_string(&agg.outcomes).unwrap_or_default()
    );
    for (i, m) in ms.iter().enumerate() {
        write_14digit(&mut out, m.datetime);
        out.push_str(" {\"uri\": ");
        out.push_str(&json_str(&m.uri_m));
        out.push_str(", \"rel\": \"");
        out.push_str(memento_rel(i, ms.len()));
        out.push_str("\", \"datetime\": \"");
        write_rfc1123(&mut out, m.datetime);
        out.push_str("\", \"archive\": ");
        out.push_str(&json_str(&m.archive));
        out.push_str("}\n");
    }
    out
}

/// A JSON string literal (quoted and escaped: `"`, `\` and every control, so a CDXJ line stays
/// one line).
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
    use crate::timemap::datetime::{format_14digit, parse_14digit};
    use crate::timemap::model::TimeMap;
    use std::sync::Arc;

    fn agg(entries: &[(&str, &str)]) -> Aggregate {
        Aggregate {
            uri_r: "http://example.com/".to_string(),
            timemap: TimeMap {
                mementos: entries
                    .iter()
                    .map(|(a, ts)| Memento {
                        uri_m: format!("https://{a}.example/{ts}/http://example.com/"),
                        datetime: parse_14digit(ts).expect("ts"),
                        archive: Arc::from(*a),
                    })
                    .collect(),
            },
            outcomes: vec![ArchiveOutcome {
                id: "ia".into(),
                answer: ArchiveAnswer {
                    elapsed_ms: 12,
                    pages: 1,
                    ..ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None)
                },
                mementos: entries.len(),
            }],
            fetched_at: parse_14digit("20261122").expect("ts"),
        }
    }

    fn links() -> SelfLinks {
        SelfLinks::new("http://proxy.test/", "http://example.com/")
    }

    #[test]
    fn link_format_marks_first_and_last_and_parses_back() {
        let a = agg(&[
            ("ia", "20000620180259"),
            ("pt", "20050101000000"),
            ("ia", "20091027204954"),
        ]);
        let text = to_link_format(&a, &links());
        // Our own output reads back, through the same parser we use on archives, losslessly.
        let back = crate::timemap::parse::parse_link_format(&text, "http://proxy.test/");
        assert_eq!(back.skipped, 0);
        assert_eq!(back.original.as_deref(), Some("http://example.com/"));
        let got: Vec<(String, String)> = back
            .mementos
            .iter()
            .map(|m| (m.uri_m.clone(), format_14digit(m.datetime)))
            .collect();
        let want: Vec<(String, String)> = a
            .timemap
            .mementos
            .iter()
            .map(|m| (m.uri_m.clone(), format_14digit(m.datetime)))
            .collect();
        assert_eq!(got, want);
        assert!(
            back.pages.is_empty(),
            "JSON and CDXJ alternates are not pages"
        );
        assert!(text.starts_with("<http://example.com/>; rel=\"original\",\n"));
        assert!(text.contains("<http://proxy.test/timemap/link/http://example.com/>; rel=\"self\"; type=\"application/link-format\"; from=\"Tue, 20 Jun 2000 18:02:59 GMT\"; until=\"Tue, 27 Oct 2009 20:49:54 GMT\""));
        assert!(text.contains("<http://proxy.test/timegate/http://example.com/>; rel=\"timegate\""));
        assert!(text.contains("<https://ia.example/20000620180259/http://example.com/>; rel=\"first memento\"; datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\""));
        assert!(text.contains("<https://pt.example/20050101000000/http://example.com/>; rel=\"memento\"; datetime=\"Sat, 01 Jan 2005 00:00:00 GMT\""));
        assert!(text
            .trim_end()
            .ends_with("rel=\"last memento\"; datetime=\"Tue, 27 Oct 2009 20:49:54 GMT\""));
        assert_eq!(
            text.matches(",\n").count(),
            text.lines().count() - 1,
            "one link per line, comma-separated"
        );
    }

    #[test]
    fn link_format_single_memento_is_first_last() {
        let text = to_link_format(&agg(&[("ia", "2000")]), &links());
        assert!(text.contains("rel=\"first last memento\""));
    }

    #[test]
    fn json_has_list_first_last_and_archives() {
        let a = agg(&[("ia", "20000620180259"), ("pt", "20050101000000")]);
        let v: serde_json::Value =
            serde_json::from_slice(&to_json(&a, &links())).expect("valid json");
        assert_eq!(v["original_uri"], "http://example.com/");
        assert_eq!(
            v["self"],
            "http://proxy.test/timemap/json/http://example.com/"
        );
        assert_eq!(
            v["timegate_uri"],
            "http://proxy.test/timegate/http://example.com/"
        );
        assert_eq!(
            v["timemap_uri"]["cdxj_format"],
            "http://proxy.test/timemap/cdxj/http://example.com/"
        );
        assert_eq!(v["mementos"]["list"].as_array().map(Vec::len), Some(2));
        assert_eq!(v["mementos"]["first"]["datetime"], "2000-06-20T18:02:59Z");
        assert_eq!(
            v["mementos"]["last"]["uri"],
            "https://pt.example/20050101000000/http://example.com/"
        );
        assert_eq!(v["mementos"]["list"][1]["archive"], "pt");
        assert_eq!(v["archives"][0]["id"], "ia");
        assert_eq!(v["archives"][0]["status"], "ok");
        assert_eq!(v["archives"][0]["http_status"], 200);
    }

    #[test]
    fn json_escapes_hostile_uris() {
        let mut a = agg(&[("ia", "2000")]);
        let hostile = "http://x/\"},{\"evil\":1\n20010101000000 {\"uri\": \"http://evil\"}\r\\\0";
        a.timemap.mementos[0].uri_m = hostile.to_string();
        let v: serde_json::Value =
            serde_json::from_slice(&to_json(&a, &links())).expect("still valid json");
        assert_eq!(v["mementos"]["list"][0]["uri"], hostile);
        let cdxj = to_cdxj(&a, &links());
        let data: Vec<&str> = cdxj.lines().filter(|l| !l.starts_with('!')).collect();
        assert_eq!(data.len(), 1, "one line per memento:\n{cdxj}");
        for line in data {
            let (_, json) = line.split_once(' ').expect("key and json");
            let v: serde_json::Value = serde_json::from_str(json).expect("valid json line");
            assert_eq!(v["uri"], hostile);
        }
    }

    #[test]
    fn hostile_uris_stay_one_link_in_link_format() {
        let mut a = agg(&[("ia", "2000"), ("pt", "2001")]);
        let forged = "http://e.com/inj>; rel=\"memento\"; datetime=\"Sat, 01 Jan 2000 00:00:00 GMT\", <https://evil.example/phish";
        a.uri_r = forged.to_string();
        a.timemap.mementos[0].uri_m =
            "http://m.example/a\r\n<https://evil.example/x>; rel=\"memento\"\0\t é".into();
        let links = SelfLinks::new("http://proxy.test/", forged);
        let text = to_link_format(&a, &links);
        let back = crate::timemap::parse::parse_link_format(&text, "http://proxy.test/");
        assert_eq!(back.skipped, 0, "{text}");
        assert_eq!(back.mementos.len(), 2, "{text}");
        assert!(back
            .original
            .as_deref()
            .is_some_and(|o| o.starts_with("http://e.com/inj%3E;%20rel=%22memento%22")));
        assert!(back
            .mementos
            .iter()
            .all(|m| !m.uri_m.starts_with("https://evil")));
        assert_eq!(text.lines().count(), 7, "one link per line:\n{text}");
        assert!(text.is_ascii());
        assert!(!text.contains(['\0', '\t', '\r']));
        // Our own links are escaped alike.
        assert!(links
            .timegate()
            .starts_with("http://proxy.test/timegate/http://e.com/inj%3E;%20rel=%22"));
    }

    #[test]
    fn cdxj_lines_are_keyed_by_14_digits() {
        let a = agg(&[("ia", "20000620180259"), ("pt", "20050101000000")]);
        let text = to_cdxj(&a, &links());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "!context [\"http://tools.ietf.org/html/rfc7089\"]"
        );
        assert!(lines[1].starts_with("!id {\"uri\": \"http://proxy.test/timemap/cdxj/"));
        assert_eq!(lines[2], "!keys [\"memento_datetime_YYYYMMDDhhmmss\"]");
        let data: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !l.starts_with('!'))
            .collect();
        assert_eq!(data.len(), 2);
        assert!(data[0].starts_with("20000620180259 {\"uri\": \"https://ia.example/"));
        assert!(data[0].contains("\"rel\": \"first memento\""));
        assert!(data[1].contains("\"datetime\": \"Sat, 01 Jan 2005 00:00:00 GMT\""));
    }

    #[test]
    fn formats_round_trip_their_names() {
        for f in TimeMapFormat::ALL {
            assert_eq!(TimeMapFormat::from_segment(f.segment()), Some(f));
        }
        assert_eq!(TimeMapFormat::from_segment("xml"), None);
    }
}
