//! Pages in every format: which mementos a page holds, and the links to the whole TimeMap and
//! the other pages (RFC 7089 §4.3) that each page, and the whole paged TimeMap, carry.

use super::tests::{agg, links};
use super::*;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::datetime::format_14digit;
use crate::timemap::parse::parse_link_format;
use serde_json::Value;

/// Seven mementos in pages of three: pages 1 and 2 full, page 3 one memento.
fn seven() -> (Aggregate, SelfLinks) {
    let ts = [
        "20000101000000",
        "20010101000000",
        "20020101000000",
        "20030101000000",
        "20040101000000",
        "20050101000000",
        "20060101000000",
    ];
    let entries: Vec<(&str, &str)> = ts.iter().map(|t| ("ia", *t)).collect();
    (agg(&entries), links().with_page_size(3))
}

fn page(a: &Aggregate, l: &SelfLinks, n: usize) -> Page {
    l.pages(a.timemap.len()).page(n).expect("page exists")
}

const PAGE: &str = "http://proxy.test/timemap/link";

#[test]
fn link_page_holds_its_slice_and_links_the_whole_and_other_pages() {
    let (a, l) = seven();
    let text = String::from_utf8(TimeMapFormat::LINK.render_page(&a, &l, &page(&a, &l, 2)))
        .expect("utf-8");
    let back = parse_link_format(&text, &format!("{PAGE}/2/http://example.com/"));
    assert_eq!(back.skipped, 0);
    let got: Vec<String> = back
        .mementos
        .iter()
        .map(|m| format_14digit(m.datetime))
        .collect();
    assert_eq!(got, ["20030101000000", "20040101000000", "20050101000000"]);
    assert!(text.contains(&format!("<{PAGE}/2/http://example.com/>; rel=\"self\"; type=\"application/link-format\"; from=\"Wed, 01 Jan 2003 00:00:00 GMT\"; until=\"Sat, 01 Jan 2005 00:00:00 GMT\",\n")));
    // The whole TimeMap, then the first and last pages (here also the neighbours), with spans.
    let pages: Vec<(String, Option<String>, Option<String>)> = back
        .pages
        .iter()
        .map(|p| {
            (
                p.uri.clone(),
                p.from.map(format_14digit),
                p.until.map(format_14digit),
            )
        })
        .collect();
    let span =
        |u: &str, f: &str, t: &str| (u.to_string(), Some(f.to_string()), Some(t.to_string()));
    assert_eq!(
        pages,
        [
            span(
                &format!("{PAGE}/http://example.com/"),
                "20000101000000",
                "20060101000000"
            ),
            span(
                &format!("{PAGE}/1/http://example.com/"),
                "20000101000000",
                "20020101000000"
            ),
            span(
                &format!("{PAGE}/3/http://example.com/"),
                "20060101000000",
                "20060101000000"
            ),
        ]
    );
    // The other formats' same page as typed alternates; no memento is the TimeMap's first/last.
    assert!(text.contains("<http://proxy.test/timemap/json/2/http://example.com/>; rel=\"timemap\"; type=\"application/json\""));
    assert!(text.contains("<http://proxy.test/timemap/cdxj/2/http://example.com/>; rel=\"timemap\"; type=\"application/cdxj+ors\""));
    assert!(!text.contains("first memento") && !text.contains("last memento"));
}

#[test]
fn link_pages_mark_the_timemaps_ends_not_the_pages() {
    let (a, l) = seven();
    let first = String::from_utf8(TimeMapFormat::LINK.render_page(&a, &l, &page(&a, &l, 1)))
        .expect("utf-8");
    assert!(first.contains("/20000101000000/http://example.com/>; rel=\"first memento\""));
    assert!(first.contains("/20020101000000/http://example.com/>; rel=\"memento\""));
    let last = String::from_utf8(TimeMapFormat::LINK.render_page(&a, &l, &page(&a, &l, 3)))
        .expect("utf-8");
    assert!(last.contains("/20060101000000/http://example.com/>; rel=\"last memento\""));
    // Page 3 links page 1 (first) and page 2 (prev, whose span ends in 2005).
    assert!(last.contains(&format!("<{PAGE}/2/http://example.com/>; rel=\"timemap\"; type=\"application/link-format\"; from=\"Wed, 01 Jan 2003 00:00:00 GMT\"; until=\"Sat, 01 Jan 2005 00:00:00 GMT\"")));
}

#[test]
fn whole_link_timemap_links_its_first_page_only_when_paged() {
    let (a, l) = seven();
    let text = to_link_format(&a, &l);
    let back = parse_link_format(&text, &format!("{PAGE}/http://example.com/"));
    let pages: Vec<&str> = back.pages.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(pages, [format!("{PAGE}/1/http://example.com/")]);
    assert_eq!(
        back.mementos.len(),
        7,
        "the whole TimeMap lists every memento"
    );
    let one_page = to_link_format(&a, &links().with_page_size(7));
    assert!(!one_page.contains("/timemap/link/1/"));
}

#[test]
fn json_page_lists_its_slice_with_pages_and_the_timemaps_ends() {
    let (a, l) = seven();
    let doc: Value =
        serde_json::from_slice(&TimeMapFormat::JSON.render_page(&a, &l, &page(&a, &l, 2)))
            .expect("json");
    let j = "http://proxy.test/timemap/json";
    assert_eq!(doc["self"], format!("{j}/2/http://example.com/"));
    assert_eq!(
        doc["timemap_uri"]["json_format"],
        format!("{j}/http://example.com/")
    );
    let list = doc["mementos"]["list"].as_array().expect("list");
    assert_eq!(list.len(), 3);
    assert_eq!(list[0]["datetime"], "2003-01-01T00:00:00Z");
    assert_eq!(doc["mementos"]["first"]["datetime"], "2000-01-01T00:00:00Z");
    assert_eq!(doc["mementos"]["last"]["datetime"], "2006-01-01T00:00:00Z");
    assert_eq!(
        doc["pages"],
        serde_json::json!({
            "first": format!("{j}/1/http://example.com/"),
            "prev": format!("{j}/1/http://example.com/"),
            "next": format!("{j}/3/http://example.com/"),
            "last": format!("{j}/3/http://example.com/"),
        })
    );
    let first: Value =
        serde_json::from_slice(&TimeMapFormat::JSON.render_page(&a, &l, &page(&a, &l, 1)))
            .expect("json");
    assert!(first["pages"].get("prev").is_none() && first["pages"]["next"].is_string());
    let whole: Value = serde_json::from_slice(&to_json(&a, &l)).expect("json");
    assert_eq!(
        whole["pages"],
        serde_json::json!({"first": format!("{j}/1/http://example.com/"), "last": format!("{j}/3/http://example.com/")})
    );
    let unpaged: Value = serde_json::from_slice(&to_json(&a, &links())).expect("json");
    assert!(unpaged.get("pages").is_none());
}

#[test]
fn cdxj_page_has_its_id_pages_meta_and_lines() {
    let (a, l) = seven();
    let text = String::from_utf8(TimeMapFormat::CDXJ.render_page(&a, &l, &page(&a, &l, 3)))
        .expect("utf-8");
    let c = "http://proxy.test/timemap/cdxj";
    assert!(text.contains(&format!("!id {{\"uri\": \"{c}/3/http://example.com/\"}}\n")));
    let meta = text
        .lines()
        .find(|l| l.starts_with("!meta {\"pages\": "))
        .and_then(|l| l.strip_prefix("!meta "))
        .expect("pages meta");
    let meta: Value = serde_json::from_str(meta).expect("json");
    let pages = &meta["pages"];
    assert_eq!(pages["prev"], format!("{c}/2/http://example.com/"));
    assert_eq!(pages["last"], format!("{c}/3/http://example.com/"));
    assert!(pages.get("next").is_none());
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("20060101000000 ") && lines[0].contains("\"rel\": \"last memento\"")
    );
    assert!(to_cdxj(&a, &l).contains("!meta {\"pages\": {\"first\""));
    assert!(!to_cdxj(&a, &links()).contains("!meta {\"pages\""));
}

/// What a page costs on a 1,000,000-memento TimeMap (docs/api.md, "Pages"): run with
/// `cargo test -p tmproxy-core --release --lib -- --ignored page_of_a_million --nocapture`.
/// Prints timings; asserts only what the page holds.
#[test]
#[ignore = "a timing to read, not a check: builds a 1,000,000-memento TimeMap"]
fn page_of_a_million_mementos_costs_its_slice() {
    use std::time::Instant;
    let stamps: Vec<String> = (0..1_000_000u64)
        .map(|i| {
            let s = 946_684_800 + i * 60; // one a minute from 2000-01-01
            let dt = chrono::DateTime::from_timestamp(s as i64, 0).expect("in range");
            dt.format("%Y%m%d%H%M%S").to_string()
        })
        .collect();
    let entries: Vec<(&str, &str)> = stamps.iter().map(|t| ("ia", t.as_str())).collect();
    let a = agg(&entries);
    let l = links().with_page_size(10_000);
    let p = page(&a, &l, 50);
    for format in TimeMapFormat::all() {
        // The fastest of five: the first also pays for fresh pages of memory.
        let mut page_took = std::time::Duration::MAX;
        let mut body = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            body = format.render_page(&a, &l, &p);
            page_took = page_took.min(t.elapsed());
        }
        let t = Instant::now();
        let whole = format.render(&a, &l);
        let whole_took = t.elapsed();
        println!(
            "{format:?}: page 50 of 100 ({} bytes) in {page_took:?}; whole ({} bytes) in {whole_took:?}",
            body.len(),
            whole.len()
        );
        assert!(body.len() * 50 < whole.len());
    }
}
