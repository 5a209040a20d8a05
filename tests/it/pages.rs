//! Paged TimeMaps: `/timemap/{link|json|cdxj}/{N}/{URI-R}` against fake
//! archives and pywb, with `[server] page_size` small so a handful of mementos make pages.

use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, config_for, get_json, memento_uris, start_proxy};
use tmproxy::timemap::parse::parse_link_format;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";
const SEVEN: [&str; 7] = [
    "20010101000000",
    "20020101000000",
    "20030101000000",
    "20040101000000",
    "20050101000000",
    "20060101000000",
    "20070101000000",
];

async fn archive(stamps: &[&str]) -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(stamps)))
        .await
        .expect("simulated archive starts")
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = client().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request");
    Answer {
        status: resp.status().as_u16(),
        headers: resp.headers().clone(),
        body: resp.text().await.expect("body"),
    }
}

fn header(a: &Answer, name: &str) -> String {
    a.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn pages_in_every_format_hold_their_slice_and_link_the_rest() {
    let a = archive(&SEVEN).await;
    let mut config = config_for(&[("a", &a)]);
    config.server.page_size = 3;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    let uri_ms =
        |stamps: &[&str]| -> Vec<String> { stamps.iter().map(|t| a.uri_m(t, URI_R)).collect() };

    // Link format, page 2: its three mementos, the whole TimeMap and pages 1 and 3 by span.
    let page2 = format!("{base}/timemap/link/2/{URI_R}");
    let r = get(&page2, &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(header(&r, "content-type"), "application/link-format");
    let tm = parse_link_format(&r.body, &page2);
    assert_eq!(tm.skipped, 0, "{}", r.body);
    let got: Vec<String> = tm.mementos.iter().map(|m| m.uri_m.to_string()).collect();
    assert_eq!(got, uri_ms(&SEVEN[3..6]));
    assert_eq!(tm.self_uri.as_deref(), Some(page2.as_str()));
    let pages: Vec<&str> = tm.pages.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(
        pages,
        [
            format!("{base}/timemap/link/{URI_R}"),
            format!("{base}/timemap/link/1/{URI_R}"),
            format!("{base}/timemap/link/3/{URI_R}"),
        ]
    );
    assert!(!r.body.contains("first memento") && !r.body.contains("last memento"));
    // The Link header names the page as self (with its span) and the whole TimeMap.
    let link = header(&r, "link");
    assert!(
        link.contains(&format!(
            "<{page2}>; rel=\"self\"; type=\"application/link-format\"; from=\"Thu, 01 Jan 2004 00:00:00 GMT\"; until=\"Sun, 01 Jan 2006 00:00:00 GMT\""
        )),
        "{link}"
    );
    assert_eq!(
        header(&r, "x-memento-count"),
        "7",
        "the whole TimeMap's count"
    );
    // Its own ETag, honoured; another page's differs.
    let etag = header(&r, "etag");
    assert!(!etag.is_empty());
    let again = get(&page2, &[("if-none-match", etag.as_str())]).await;
    assert_eq!(again.status, 304);
    let page1 = get(&format!("{base}/timemap/link/1/{URI_R}"), &[]).await;
    assert_ne!(header(&page1, "etag"), etag);
    assert!(page1.body.contains("rel=\"first memento\""));

    // JSON, the last page: one memento, pages first/prev/last and no next.
    let (status, json) = get_json(&format!("{base}/timemap/json/3/{URI_R}")).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(memento_uris(&json), uri_ms(&SEVEN[6..]));
    let j = format!("{base}/timemap/json");
    assert_eq!(json["self"], format!("{j}/3/{URI_R}"));
    assert_eq!(json["pages"]["first"], format!("{j}/1/{URI_R}"));
    assert_eq!(json["pages"]["prev"], format!("{j}/2/{URI_R}"));
    assert_eq!(json["pages"]["last"], format!("{j}/3/{URI_R}"));
    assert!(json["pages"].get("next").is_none(), "{json}");
    assert_eq!(json["mementos"]["first"]["uri"], a.uri_m(SEVEN[0], URI_R));

    // CDXJ, page 1: its id, its pages and three lines.
    let r = get(&format!("{base}/timemap/cdxj/1/{URI_R}"), &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains(&format!(
        "!id {{\"uri\": \"{base}/timemap/cdxj/1/{URI_R}\"}}"
    )));
    assert!(
        r.body
            .contains(&format!("\"next\":\"{base}/timemap/cdxj/2/{URI_R}\"")),
        "{}",
        r.body
    );
    let lines: Vec<&str> = r.body.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with(SEVEN[0]));
}

#[tokio::test]
async fn the_whole_timemap_links_its_first_page() {
    let a = archive(&SEVEN).await;
    let mut config = config_for(&[("a", &a)]);
    config.server.page_size = 3;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    let whole = format!("{base}/timemap/link/{URI_R}");
    let r = get(&whole, &[]).await;
    assert_eq!(r.status, 200);
    let tm = parse_link_format(&r.body, &whole);
    assert_eq!(tm.mementos.len(), 7);
    let pages: Vec<&str> = tm.pages.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(pages, [format!("{base}/timemap/link/1/{URI_R}")]);
    assert!(header(&r, "link").contains(&format!(
        "<{base}/timemap/link/1/{URI_R}>; rel=\"timemap\"; type=\"application/link-format\"; from=\"Mon, 01 Jan 2001 00:00:00 GMT\"; until=\"Wed, 01 Jan 2003 00:00:00 GMT\""
    )));
    let (_, json) = get_json(&format!("{base}/timemap/json/{URI_R}")).await;
    assert_eq!(
        json["pages"]["first"],
        format!("{base}/timemap/json/1/{URI_R}")
    );
    assert_eq!(
        json["pages"]["last"],
        format!("{base}/timemap/json/3/{URI_R}")
    );
    assert_eq!(memento_uris(&json).len(), 7);

    // With the default page_size the same TimeMap is one page and links none.
    let one = start_proxy(config_for(&[("a", &a)])).await;
    let r = get(&format!("{}/timemap/link/{URI_R}", one.base), &[]).await;
    assert!(!r.body.contains("/timemap/link/1/") && !header(&r, "link").contains("/1/"));
    let r = get(&format!("{}/timemap/link/1/{URI_R}", one.base), &[]).await;
    assert_eq!(parse_link_format(&r.body, &one.base).mementos.len(), 7);
}

#[tokio::test]
async fn past_the_end_is_a_404_saying_how_many_pages_and_zero_a_400() {
    let a = archive(&SEVEN).await;
    let mut config = config_for(&[("a", &a)]);
    config.server.page_size = 3;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    let r = get(&format!("{base}/timemap/link/4/{URI_R}"), &[]).await;
    assert_eq!(r.status, 404);
    assert!(r.body.contains("3 pages of up to 3 mementos"), "{}", r.body);
    assert_eq!(header(&r, "x-memento-count"), "7");
    // On the JSON route the error is JSON.
    let (status, json) = get_json(&format!("{base}/timemap/json/4/{URI_R}")).await;
    assert_eq!(status, 404);
    assert!(
        json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("3 pages"),
        "{json}"
    );
    // Larger than any integer: still a 404, not an overflow or a 500.
    let huge = "9".repeat(60);
    let r = get(&format!("{base}/timemap/cdxj/{huge}/{URI_R}"), &[]).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("3 pages"));
    let asked = a.requests();
    let (status, json) = get_json(&format!("{base}/timemap/json/0/{URI_R}")).await;
    assert_eq!(status, 400);
    assert!(json["error"]
        .as_str()
        .unwrap_or_default()
        .contains("numbered from 1"));
    assert_eq!(a.requests(), asked, "page 0 asks no archive");
    // A host with digits and a dot is a URI-R, not a page.
    let r = get(&format!("{base}/timemap/link/123.com/"), &[]).await;
    assert_ne!(r.status, 400, "{}", r.body);
}

#[tokio::test]
async fn pages_of_chosen_archives_and_of_the_cache_only() {
    let a = archive(&SEVEN[..4]).await;
    let b = archive(&SEVEN[4..]).await;
    let mut config = config_for(&[("a", &a), ("b", &b)]);
    config.server.page_size = 2;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    // b alone holds three mementos: two pages.
    let (status, json) = get_json(&format!("{base}/timemap/json/2/{URI_R}?archives=b")).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(memento_uris(&json), [b.uri_m(SEVEN[6], URI_R)]);
    assert_eq!(
        json["pages"]["last"],
        format!("{base}/timemap/json/2/{URI_R}")
    );
    let (status, json) = get_json(&format!("{base}/timemap/json/3/{URI_R}?archives=b")).await;
    assert_eq!(status, 404);
    assert!(
        json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("2 pages"),
        "{json}"
    );
    // Nothing cached yet (a choice is never stored): only-if-cached is a 504 for a page too.
    let r = get(
        &format!("{base}/timemap/link/1/{URI_R}"),
        &[("cache-control", "only-if-cached")],
    )
    .await;
    assert_eq!(r.status, 504);
    // Cached whole, then a page of it is served from the cache, filtered by archive.
    assert_eq!(
        get(&format!("{base}/timemap/link/{URI_R}"), &[])
            .await
            .status,
        200
    );
    let asked = (a.requests(), b.requests());
    let r = get(
        &format!("{base}/timemap/link/4/{URI_R}"),
        &[("cache-control", "only-if-cached")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(parse_link_format(&r.body, base).mementos.len(), 1);
    let (status, json) = get_json(&format!("{base}/timemap/json/2/{URI_R}?archives=a")).await;
    assert_eq!(status, 200);
    assert_eq!(
        memento_uris(&json),
        [a.uri_m(SEVEN[2], URI_R), a.uri_m(SEVEN[3], URI_R)]
    );
    assert_eq!(
        (a.requests(), b.requests()),
        asked,
        "pages of a cached entry ask no archive"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_a_pywb_timemap() {
    let stamps = [
        "20150505050505",
        "20180101000000",
        "20200101120000",
        "20210615083000",
        "20221231235959",
    ];
    let caps: Vec<Capture> = stamps
        .iter()
        .map(|ts| Capture::new(URI_R, ts, &format!("<html>at {ts}</html>")))
        .collect();
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("pages", &caps))
        .await
        .expect("pywb starts");
    let mut config = tmproxy::config::Config::default();
    config.upstream.deadline = std::time::Duration::from_secs(10);
    config.upstream.timeout = std::time::Duration::from_secs(10);
    config.archives = vec![archive_config(
        "pywb",
        &pywb.timemap_prefix(),
        &pywb.timegate_prefix(),
    )];
    config.server.page_size = 2;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    let uri_m = |ts: &str| format!("{}/pages/{ts}mp_/{URI_R}", pywb.base_url());

    let page2 = format!("{base}/timemap/link/2/{URI_R}");
    let r = get(&page2, &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tm = parse_link_format(&r.body, &page2);
    let got: Vec<String> = tm.mementos.iter().map(|m| m.uri_m.to_string()).collect();
    assert_eq!(got, [uri_m(stamps[2]), uri_m(stamps[3])]);
    let pages: Vec<&str> = tm.pages.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(
        pages,
        [
            format!("{base}/timemap/link/{URI_R}"),
            format!("{base}/timemap/link/1/{URI_R}"),
            format!("{base}/timemap/link/3/{URI_R}"),
        ]
    );
    let (status, json) = get_json(&format!("{base}/timemap/json/3/{URI_R}")).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(memento_uris(&json), [uri_m(stamps[4])]);
    assert_eq!(
        json["pages"]["prev"],
        format!("{base}/timemap/json/2/{URI_R}")
    );
    let (status, json) = get_json(&format!("{base}/timemap/json/4/{URI_R}")).await;
    assert_eq!(status, 404);
    assert!(
        json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("3 pages"),
        "{json}"
    );
}

#[tokio::test]
async fn a_hostile_uri_r_stays_inside_each_page_link() {
    let a = archive(&SEVEN).await;
    let mut config = config_for(&[("a", &a)]);
    config.server.page_size = 3;
    let proxy = start_proxy(config).await;
    // `>; rel="memento"` smuggled into the URI-R must not become a link of its own.
    let hostile = "http://example.com/a%3E%3B%20rel%3D%22memento%22%3B%20x%3D%22";
    let page2 = format!("{}/timemap/link/2/{hostile}", proxy.base);
    let r = get(&page2, &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tm = parse_link_format(&r.body, &page2);
    assert_eq!(tm.skipped, 0, "{}", r.body);
    assert_eq!(tm.mementos.len(), 3, "{}", r.body);
    assert_eq!(
        tm.pages.len(),
        3,
        "the whole TimeMap, pages 1 and 3: {}",
        r.body
    );
    assert!(tm.pages.iter().all(|p| p.uri.starts_with(&proxy.base)));
    assert!(!header(&r, "link").contains("rel=\"memento\""));
}
