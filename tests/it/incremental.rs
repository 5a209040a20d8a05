//! Incremental refreshes through the real server (docs/cache-policy.md, "Incremental
//! refreshes"): fake archives that record every request and answer only what was asked for (a
//! CDX server honouring `from=`, a paged TimeMap, a TimeMap with an `ETag`), days moved by the
//! simulated clock, and the byte and refresh counters on `/metrics`.

use crate::cache::{set_day, sim_proxy};
use crate::cdx_archives::{cdx_archive, config};
use crate::support::{archive_config, get_json, memento_uris, metric_value, serve_fake, Proxy};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::config::{parse_duration, CdxDialect};
use tmproxy_core::timemap::datetime::{format_rfc1123, parse_14digit};

const URI_R: &str = "http://example.com/";

/// An archive's captures (14-digit stamps, changed between days) and every request it got.
#[derive(Default)]
struct Fake {
    captures: Mutex<Vec<String>>,
    /// Each request: its path and query (or page), and its `If-None-Match`.
    asked: Mutex<Vec<String>>,
    etag: Mutex<Option<String>>,
}

impl Fake {
    fn set(&self, stamps: &[&str]) {
        *self.captures.lock().expect("lock") = stamps.iter().map(|s| s.to_string()).collect();
    }
    fn captures(&self) -> Vec<String> {
        self.captures.lock().expect("lock").clone()
    }
    fn note(&self, what: String) {
        self.asked.lock().expect("lock").push(what);
    }
    /// The requests since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.asked.lock().expect("lock"))
    }
}

/// The mementos served for `URI_R`, by their stamps (the path segment before the URI-R).
async fn served(proxy: &Proxy) -> Vec<String> {
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let mut stamps: Vec<String> = memento_uris(&json)
        .iter()
        .filter_map(|u| {
            u.split('/')
                .find(|s| s.len() == 14 && s.bytes().all(|b| b.is_ascii_digit()))
                .map(str::to_string)
        })
        .collect();
    stamps.sort();
    stamps
}

async fn refreshes(proxy: &Proxy, archive: &str, kind: &str) -> f64 {
    let series = format!(r#"tmproxy_archive_refreshes_total{{archive="{archive}",kind="{kind}"}}"#);
    metric_value(&proxy.base, &series).await.unwrap_or(-1.0)
}

async fn bytes(proxy: &Proxy, archive: &str) -> f64 {
    let series = format!(r#"tmproxy_archive_bytes_total{{archive="{archive}"}}"#);
    metric_value(&proxy.base, &series).await.unwrap_or(-1.0)
}

/// A fake archive on loopback whose handler knows its own base URL (its pages link each other):
/// the fake, the base and the server's task.
async fn knowing_its_base(
    path: &str,
    handler: axum::routing::MethodRouter<(Arc<Fake>, String)>,
) -> (
    Arc<Fake>,
    String,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let fake = Arc::new(Fake::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route(path, handler)
        .with_state((fake.clone(), base.clone()));
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    (fake, base, task)
}

// --- A CDX archive (the Internet Archive's dialect) honouring `from=` ---

async fn cdx(State(fake): State<Arc<Fake>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let from = q.get("from").cloned().unwrap_or_default();
    let kind = if q.contains_key("showNumPages") {
        "count"
    } else {
        "rows"
    };
    fake.note(format!("{kind} from={from}"));
    if q.contains_key("showNumPages") {
        return "1\n".into_response();
    }
    let url = q.get("url").cloned().unwrap_or_default();
    // 14-digit stamps compare as text; `from` is inclusive, as the real servers have it.
    let rows: Vec<String> = fake
        .captures()
        .iter()
        .filter(|ts| from.is_empty() || ts.as_str() >= from.as_str())
        .map(|ts| format!(r#"["com,example)/","{ts}","{url}","text/html","200","D","1"]"#))
        .collect();
    let header = r#"["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#;
    let mut body = format!("[{header}");
    for r in rows {
        body.push_str(",\n");
        body.push_str(&r);
    }
    body.push(']');
    body.into_response()
}

async fn cdx_proxy(policy: &str, full_refresh: &str) -> (Proxy, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/ia/cdx", axum::routing::get(cdx))
        .with_state(fake.clone());
    let (addr, _task) = serve_fake(app).await;
    let base = format!("http://{addr}");
    let archive = cdx_archive("ia", &base, "ia", CdxDialect::Ia);
    let mut config = config(vec![archive]);
    config.cache.policy = policy.parse().expect("policy");
    config.cache.full_refresh = parse_duration(full_refresh).expect("duration");
    (sim_proxy(config).await, fake)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cdx_archive_is_asked_from_the_newest_memento_and_read_whole_when_it_is_gone() {
    let (proxy, fake) = cdx_proxy("conditional", "40d").await;
    let old = [
        "20010101000000",
        "20020101000000",
        "20030101000000",
        "20050101000000",
    ];
    fake.set(&old);
    assert_eq!(served(&proxy).await, old);
    assert_eq!(
        fake.take(),
        ["count from=", "rows from="],
        "a first fetch asks all"
    );
    let full_bytes = bytes(&proxy, "ia").await;

    // Past the TTL: only what may be new is asked for, and added to what is stored.
    let grown = [&old[..], &["20100101000000"]].concat();
    fake.set(&grown);
    set_day(&proxy, 16).await;
    assert_eq!(served(&proxy).await, grown);
    let from = "from=20050101000000";
    assert_eq!(
        fake.take(),
        [format!("count {from}"), format!("rows {from}")]
    );
    assert_eq!(refreshes(&proxy, "ia", "incremental").await, 1.0);
    assert_eq!(refreshes(&proxy, "ia", "full").await, 1.0);
    // Two rows came, not four: fewer bytes than the first listing.
    let incremental_bytes = bytes(&proxy, "ia").await - full_bytes;
    assert!(
        incremental_bytes > 0.0 && incremental_bytes < 0.8 * full_bytes,
        "{incremental_bytes} of {full_bytes}"
    );

    // The newest stored memento is gone: the incremental answer is not trusted, and the same
    // refresh reads the archive whole.
    fake.set(&[&old[..], &["20120101000000"]].concat());
    set_day(&proxy, 32).await;
    served(&proxy).await;
    let from = "from=20100101000000";
    assert_eq!(
        fake.take(),
        [
            format!("count {from}"),
            format!("rows {from}"),
            "count from=".to_string(),
            "rows from=".to_string()
        ]
    );
    assert_eq!(refreshes(&proxy, "ia", "full").await, 2.0);
    assert_eq!(refreshes(&proxy, "ia", "incremental").await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_refresh_after_full_refresh_sees_a_memento_removed() {
    // `unconditional` serves each refresh as it came, so what the archive is seen to hold shows.
    let (proxy, fake) = cdx_proxy("unconditional", "40d").await;
    fake.set(&["20010101000000", "20050101000000"]);
    assert_eq!(served(&proxy).await.len(), 2);
    fake.take();
    // The archive drops its oldest memento (case 6) and gains one.
    fake.set(&["20050101000000", "20100101000000"]);
    set_day(&proxy, 16).await;
    // An incremental refresh cannot see what was removed before its `from`.
    assert_eq!(
        served(&proxy).await,
        ["20010101000000", "20050101000000", "20100101000000"]
    );
    set_day(&proxy, 32).await;
    served(&proxy).await;
    let from = ["count from=20050101000000", "rows from=20050101000000"];
    let since_2010 = ["count from=20100101000000", "rows from=20100101000000"];
    assert_eq!(fake.take(), [&from[..], &since_2010[..]].concat());
    // 48 days after the first listing, past full_refresh: read whole, the removal seen.
    set_day(&proxy, 48).await;
    assert_eq!(served(&proxy).await, ["20050101000000", "20100101000000"]);
    assert_eq!(fake.take(), ["count from=", "rows from="]);
    assert_eq!(refreshes(&proxy, "ia", "full").await, 2.0);
    assert_eq!(refreshes(&proxy, "ia", "incremental").await, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_refresh_zero_asks_in_full_every_time() {
    let (proxy, fake) = cdx_proxy("conditional", "0s").await;
    fake.set(&["20010101000000"]);
    served(&proxy).await;
    set_day(&proxy, 16).await;
    served(&proxy).await;
    assert_eq!(
        fake.take(),
        ["count from=", "rows from=", "count from=", "rows from="]
    );
    assert_eq!(refreshes(&proxy, "ia", "incremental").await, 0.0);
}

// --- A paged link-format TimeMap: three mementos a page, every page linking every other ---

fn link_page(base: &str, stamps: &[String], page: usize, pages: usize) -> String {
    let mut out = format!("<{URI_R}>; rel=\"original\",\n");
    for p in 1..=pages {
        if p == page {
            continue;
        }
        let (from, until) = (
            format!("{:04}0101000000", 2000 + 3 * p - 2),
            format!("{:04}1231000000", 2000 + 3 * p),
        );
        let date = |ts: &str| format_rfc1123(parse_14digit(ts).expect("stamp"));
        out.push_str(&format!(
            "<{base}/tm/{p}/{URI_R}>; rel=\"timemap\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\",\n",
            date(&from),
            date(&until)
        ));
    }
    for ts in stamps {
        let date = format_rfc1123(parse_14digit(ts).expect("stamp"));
        out.push_str(&format!(
            "<{base}/web/{ts}/{URI_R}>; rel=\"memento\"; datetime=\"{date}\",\n"
        ));
    }
    out.trim_end_matches(",\n").to_string()
}

/// Page p (1-based) holds the captures of years 2000+3p-2 … 2000+3p.
async fn paged(
    State((fake, base)): State<(Arc<Fake>, String)>,
    Path(p): Path<(usize, String)>,
) -> Response {
    let page = p.0;
    fake.note(format!("page {page}"));
    let captures = fake.captures();
    let year = |ts: &String| ts[..4].parse::<usize>().unwrap_or(0);
    let pages = captures
        .iter()
        .map(|ts| (year(ts) - 1998) / 3)
        .max()
        .unwrap_or(1);
    if page == 0 || page > pages {
        return StatusCode::NOT_FOUND.into_response();
    }
    let on: Vec<String> = captures
        .iter()
        .filter(|ts| (year(ts) - 1998) / 3 == page)
        .cloned()
        .collect();
    link_page(&base, &on, page, pages).into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paged_timemap_is_read_from_the_page_that_held_the_newest_memento() {
    let (fake, base, task) = knowing_its_base("/tm/{page}/{*uri}", axum::routing::get(paged)).await;
    let mut config = config(vec![archive_config(
        "p",
        &format!("{base}/tm/1/"),
        &format!("{base}/gate/"),
    )]);
    config.upstream.max_pages = 10;
    config.cache.full_refresh = Duration::from_secs(90 * 86_400);
    let proxy = sim_proxy(config).await;
    let stamps = [
        "20010101000000",
        "20020101000000",
        "20040101000000",
        "20050101000000",
        "20070101000000",
    ];
    fake.set(&stamps);
    assert_eq!(served(&proxy).await.len(), 5);
    let mut first = fake.take();
    first.sort();
    assert_eq!(first, ["page 1", "page 2", "page 3"]);

    // New on the last page: only it is read again (the others end before its newest memento).
    fake.set(&[&stamps[..], &["20080101000000"]].concat());
    set_day(&proxy, 16).await;
    assert_eq!(served(&proxy).await.len(), 6);
    assert_eq!(fake.take(), ["page 3"]);
    assert_eq!(refreshes(&proxy, "p", "incremental").await, 1.0);

    // A new page: followed from the newest one.
    fake.set(&[&stamps[..], &["20080101000000", "20100101000000"]].concat());
    set_day(&proxy, 32).await;
    assert_eq!(served(&proxy).await.len(), 7);
    let mut asked = fake.take();
    asked.sort();
    assert_eq!(asked, ["page 3", "page 4"]);
    assert_eq!(refreshes(&proxy, "p", "incremental").await, 2.0);
    assert_eq!(refreshes(&proxy, "p", "full").await, 1.0);
    task.abort();
}

// --- A one-page TimeMap with validators ---

/// The captures as one page, with the fake's `ETag` (a 304 when `If-None-Match` names it)
/// and a `Last-Modified`.
async fn etagged(State((fake, base)): State<(Arc<Fake>, String)>, headers: HeaderMap) -> Response {
    let asked = headers
        .get("if-none-match")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    let since = headers.get("if-modified-since").is_some();
    fake.note(format!("if-none-match {asked} if-modified-since {since}"));
    let etag = fake.etag.lock().expect("lock").clone().unwrap_or_default();
    if asked == etag {
        return (StatusCode::NOT_MODIFIED, [("etag", etag)]).into_response();
    }
    let body = link_page(&base, &fake.captures(), 1, 1);
    let last_modified = "Tue, 01 May 2012 00:00:00 GMT".to_string();
    ([("etag", etag), ("last-modified", last_modified)], body).into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_with_an_etag_is_asked_conditionally_and_a_304_keeps_what_is_stored() {
    let (fake, base, task) = knowing_its_base("/tm/{*uri}", axum::routing::get(etagged)).await;
    let mut config = config(vec![archive_config(
        "e",
        &format!("{base}/tm/"),
        &format!("{base}/gate/"),
    )]);
    config.cache.full_refresh = Duration::from_secs(90 * 86_400);
    // `unconditional` stores each refresh as it came: a 304 must stand for the stored mementos.
    config.cache.policy = "unconditional".parse().expect("policy");
    let proxy = sim_proxy(config).await;
    fake.set(&["20010101000000", "20050101000000"]);
    *fake.etag.lock().expect("lock") = Some("\"v1\"".into());
    assert_eq!(served(&proxy).await.len(), 2);
    assert_eq!(fake.take(), ["if-none-match - if-modified-since false"]);

    // Unchanged: a 304, and the stored mementos stand.
    set_day(&proxy, 16).await;
    assert_eq!(served(&proxy).await.len(), 2);
    assert_eq!(fake.take(), ["if-none-match \"v1\" if-modified-since true"]);
    assert_eq!(refreshes(&proxy, "e", "not_modified").await, 1.0);

    // Changed: the archive answers whole, and that is what is weighed.
    fake.set(&["20010101000000", "20050101000000", "20090101000000"]);
    *fake.etag.lock().expect("lock") = Some("\"v2\"".into());
    set_day(&proxy, 32).await;
    assert_eq!(served(&proxy).await.len(), 3);
    assert_eq!(fake.take(), ["if-none-match \"v1\" if-modified-since true"]);
    assert_eq!(refreshes(&proxy, "e", "full").await, 2.0);

    // An ETag too long to keep (an archive's is a hash or a version) is never sent back.
    *fake.etag.lock().expect("lock") = Some(format!("\"{}\"", "x".repeat(1000)));
    fake.set(&[
        "20010101000000",
        "20050101000000",
        "20090101000000",
        "20110101000000",
    ]);
    set_day(&proxy, 48).await;
    served(&proxy).await;
    fake.take();
    set_day(&proxy, 64).await;
    assert_eq!(served(&proxy).await.len(), 4);
    assert_eq!(fake.take(), ["if-none-match - if-modified-since true"]);
    task.abort();
}
