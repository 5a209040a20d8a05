//! The formats' output: what each writes, escaping, and every format linked from each.

use super::*;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::aggregate::ArchiveOutcome;
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
use crate::timemap::datetime::{format_14digit, parse_14digit};
use crate::timemap::model::Memento;
use crate::timemap::model::TimeMap;
use std::sync::Arc;

pub(super) fn agg(entries: &[(&str, &str)]) -> Aggregate {
    Aggregate {
        uri_r: "http://example.com/".to_string(),
        timemap: TimeMap {
            mementos: entries
                .iter()
                .map(|(a, ts)| Memento {
                    uri_m: format!("https://{a}.example/{ts}/http://example.com/").into(),
                    datetime: parse_14digit(ts).expect("ts"),
                    archive: Arc::from(*a),
                })
                .collect(),
        }
        .into(),
        outcomes: vec![ArchiveOutcome {
            id: "ia".into(),
            via: None,
            answer: ArchiveAnswer {
                elapsed_ms: 12,
                pages: 1,
                ..ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None)
            },
            mementos: entries.len(),
            duplicates: 0,
            fetched_at: parse_14digit("20261122").expect("ts"),
            last_error: None,
        }],
        fetched_at: parse_14digit("20261122").expect("ts"),
    }
}

pub(super) fn links() -> SelfLinks {
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
        .map(|m| (m.uri_m.to_string(), format_14digit(m.datetime)))
        .collect();
    let want: Vec<(String, String)> = a
        .timemap
        .mementos
        .iter()
        .map(|m| (m.uri_m.to_string(), format_14digit(m.datetime)))
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
    let body = to_json(&a, &links());
    // One line: the document, then a newline, as every JSON answer of ours.
    assert_eq!(body.iter().position(|&b| b == b'\n'), Some(body.len() - 1));
    let v: serde_json::Value = serde_json::from_slice(&body).expect("valid json");
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
    Arc::make_mut(&mut a.timemap).mementos[0].uri_m = hostile.into();
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
    Arc::make_mut(&mut a.timemap).mementos[0].uri_m =
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
        "!context [\"https://oduwsdl.github.io/contexts/memento\"]"
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
fn formats_round_trip_their_names_and_each_is_told_apart() {
    for f in TimeMapFormat::all() {
        assert_eq!(TimeMapFormat::from_segment(f.segment()), Some(f));
        let others = TimeMapFormat::all().filter(|g| *g != f);
        for g in others {
            assert_ne!(f.segment(), g.segment());
            assert_ne!(f.content_type(), g.content_type());
            assert_ne!(f.json_key(), g.json_key());
        }
    }
    assert_eq!(TimeMapFormat::from_segment("xml"), None);
    assert_eq!(
        [
            TimeMapFormat::LINK,
            TimeMapFormat::JSON,
            TimeMapFormat::CDXJ
        ]
        .map(|f| f.segment()),
        ["link", "json", "cdxj"]
    );
}

#[test]
fn every_document_links_every_format_in_order() {
    let a = agg(&[("ia", "2000")]);
    let link = to_link_format(&a, &links());
    let alternates: Vec<&str> = link
        .lines()
        .filter(|l| l.contains("rel=\"timemap\""))
        .collect();
    assert_eq!(alternates.len(), TimeMapFormat::count() - 1, "{link}");
    let json = String::from_utf8(to_json(&a, &links())).expect("utf-8");
    let at = |key: &str| json.find(key).expect("key");
    assert!(at("\"link_format\"") < at("\"json_format\""));
    assert!(at("\"json_format\"") < at("\"cdxj_format\""));
    let cdxj = to_cdxj(&a, &links());
    assert!(
        cdxj.contains("!meta {\"timemap_uri\": {\"link_format\":"),
        "{cdxj}"
    );
}

/// The neighbourhood of 2005 in a TimeMap of four: first, prev, closest, next, last.
fn around_2005() -> (Aggregate, crate::timemap::merge::Closest) {
    let a = agg(&[
        ("ia", "20000101000000"),
        ("ia", "20030101000000"),
        ("pt", "20050101000000"),
        ("ia", "20070101000000"),
        ("ia", "20090101000000"),
        ("ia", "20110101000000"),
    ]);
    let c = crate::timemap::merge::closest(&a.timemap, parse_14digit("2005").expect("ts"))
        .expect("closest");
    (a, c)
}

#[test]
fn closest_in_json_is_memgators_shape_with_one_uri_each() {
    let (a, c) = around_2005();
    let body = render_closest(TimeMapFormat::JSON, &a, &links(), &c);
    assert_eq!(body.last(), Some(&b'\n'));
    let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(v["original_uri"], "http://example.com/");
    let m = &v["mementos"];
    for (rel, ts) in [
        ("first", "2000"),
        ("prev", "2003"),
        ("closest", "2005"),
        ("next", "2007"),
        ("last", "2011"),
    ] {
        let uri = m[rel]["uri"].as_str().expect(rel);
        assert!(uri.contains(&format!("/{ts}0101000000/")), "{rel}: {uri}");
        assert_eq!(m[rel]["datetime"], format!("{ts}-01-01T00:00:00Z"), "{rel}");
    }
    assert_eq!(m["closest"]["archive"], "pt");
    // Only the neighbourhood: the 2009 memento is in none of the relations, and there is no list.
    assert!(m.get("list").is_none());
    assert!(!String::from_utf8_lossy(&body).contains("2009"));
    assert_eq!(
        v["timegate_uri"],
        "http://proxy.test/timegate/http://example.com/"
    );
    assert_eq!(
        v["timemap_uri"]["cdxj_format"],
        "http://proxy.test/timemap/cdxj/http://example.com/"
    );
    assert!(v["archives"].is_array());
}

#[test]
fn closest_in_link_format_parses_and_has_no_closest_relation() {
    let (a, c) = around_2005();
    let text =
        String::from_utf8(render_closest(TimeMapFormat::LINK, &a, &links(), &c)).expect("utf-8");
    let back = crate::timemap::parse::parse_link_format(&text, "http://proxy.test/");
    assert_eq!(back.skipped, 0);
    assert_eq!(back.original.as_deref(), Some("http://example.com/"));
    assert_eq!(back.mementos.len(), 5);
    assert!(text.contains("rel=\"first memento\""), "{text}");
    assert!(text.contains("rel=\"prev memento\""), "{text}");
    assert!(text.contains("rel=\"next memento\""), "{text}");
    assert!(text.contains("rel=\"last memento\""), "{text}");
    assert!(!text.contains("closest"), "{text}");
    assert!(text.contains("<http://proxy.test/timegate/http://example.com/>; rel=\"timegate\""));
    for f in TimeMapFormat::all() {
        assert!(
            text.contains(&format!("type=\"{}\"", f.content_type())),
            "{text}"
        );
    }
}

#[test]
fn closest_in_cdxj_keeps_closest_and_one_line_per_neighbour() {
    let (a, c) = around_2005();
    let text =
        String::from_utf8(render_closest(TimeMapFormat::CDXJ, &a, &links(), &c)).expect("utf-8");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[2].starts_with("20050101000000 {"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(lines[2].split_once(' ').expect("key").1).expect("json");
    assert_eq!(v["rel"], "closest memento");
    assert!(!text.contains("!id"), "{text}");
    // The closest being also the first: both words on one line.
    let one = agg(&[("ia", "20000101000000")]);
    let c = crate::timemap::merge::closest(&one.timemap, parse_14digit("2020").expect("ts"))
        .expect("closest");
    let text =
        String::from_utf8(render_closest(TimeMapFormat::CDXJ, &one, &links(), &c)).expect("utf-8");
    assert!(
        text.contains("\"rel\": \"first last closest memento\""),
        "{text}"
    );
}

#[test]
fn closest_escapes_hostile_uri_ms_in_every_format() {
    let mut a = agg(&[("ia", "20000101000000")]);
    std::sync::Arc::make_mut(&mut a.timemap).mementos[0].uri_m =
        "http://x.example/a>; rel=\"original\"\n<http://evil/".into();
    let c = crate::timemap::merge::closest(&a.timemap, parse_14digit("2000").expect("ts"))
        .expect("closest");
    let link =
        String::from_utf8(render_closest(TimeMapFormat::LINK, &a, &links(), &c)).expect("utf-8");
    let back = crate::timemap::parse::parse_link_format(&link, "http://proxy.test/");
    assert_eq!(back.mementos.len(), 1, "{link}");
    assert_eq!(back.original.as_deref(), Some("http://example.com/"));
    let cdxj =
        String::from_utf8(render_closest(TimeMapFormat::CDXJ, &a, &links(), &c)).expect("utf-8");
    assert_eq!(
        cdxj.lines().filter(|l| !l.starts_with('!')).count(),
        1,
        "{cdxj}"
    );
    let json = render_closest(TimeMapFormat::JSON, &a, &links(), &c);
    let v: serde_json::Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(v["mementos"]["first"]["uri"], &*a.timemap.mementos[0].uri_m);
}
