//! Archives asked through their CDX API (`kind = "cdx"`) and the TimeGate fallback, through the
//! real app: fake archives in both CDX dialects (paged, unpaged, with malformed and hostile rows)
//! and a fake whose TimeMap fails while its TimeGate answers (honestly or with hostile
//! `Location`/`Link`), then pywb: its CDX server gives the same mementos as its TimeMap, and
//! its real 307 TimeGate stands in for a TimeMap that fails.

use crate::pywb::{Capture, PywbArchive};
use crate::support::{
    archive_config, client, get_json, memento_uris, outcome, serve_fake, start_proxy,
};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::config::{ArchiveConfig, ArchiveKind, CdxDialect, Config};

const URI_R: &str = "http://example.com/page?a=1&b=2";

/// What the fake CDX servers were asked: each request's query.
#[derive(Default)]
struct Seen {
    queries: Mutex<Vec<HashMap<String, String>>>,
}

impl Seen {
    fn record(&self, q: &HashMap<String, String>) {
        self.queries.lock().expect("lock").push(q.clone());
    }

    fn all(&self) -> Vec<HashMap<String, String>> {
        self.queries.lock().expect("lock").clone()
    }
}

const IA_HEADER: &str =
    r#"["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#;

fn ia_row(ts: &str, url: &str, status: &str) -> String {
    format!(r#"["com,example)/page","{ts}","{url}","text/html","{status}","D","1"]"#)
}

/// IA's dialect, 2 pages: captures (a redirect and a revisit among them), rows that are not
/// rows, and hostile ones (a bad timestamp, a `javascript:` URL, a URL that tries to close its
/// link).
async fn ia_cdx(
    State(seen): State<Arc<Seen>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    seen.record(&q);
    let url = q.get("url").cloned().unwrap_or_default();
    if q.contains_key("showNumPages") {
        return "2\n".into_response();
    }
    let body = match q.get("page").map(String::as_str) {
        Some("0") => format!(
            "[{IA_HEADER},\n{},\n{},\n\"not a row\",\n{}]",
            ia_row("20010101000000", &url, "200"),
            ia_row("20020202000000", &url, "301"),
            ia_row("2002x202000000", &url, "200"),
        ),
        Some("1") => format!(
            "[{IA_HEADER},\n{},\n{},\n{},\n{}]",
            ia_row("20030303000000", &url, "-"),
            ia_row("20040404000000", "javascript:alert(1)", "200"),
            ia_row(
                "20050505000000",
                "http://example.com/x>; rel=\\\"original\\\", <http://evil.example/",
                "200"
            ),
            ia_row("20061306000000", &url, "200"),
        ),
        _ => return StatusCode::BAD_REQUEST.into_response(),
    };
    body.into_response()
}

fn pywb_line(ts: &str, url: &str) -> String {
    format!(
        r#"{{"urlkey": "com,example)/page", "timestamp": "{ts}", "url": "{url}", "mime": "text/html", "status": "200", "digest": "D"}}"#
    )
}

/// pywb's dialect: over a ZipNum index (`{"pages": 2}`), or (`/plain/cdx`) over a plain one,
/// where `showNumPages` gets the captures as CDXJ and one unpaged query follows.
async fn pywb_cdx(
    State(seen): State<Arc<Seen>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    seen.record(&q);
    let url = q.get("url").cloned().unwrap_or_default();
    if q.contains_key("showNumPages") {
        return r#"{"blocks": 2, "pages": 2, "pageSize": 1}"#.into_response();
    }
    match q.get("page").map(String::as_str) {
        Some("0") => format!("{}\nnot json\n", pywb_line("20100101000000", &url)).into_response(),
        Some("1") => format!(
            "{}\n{{\"timestamp\": 5}}\n",
            pywb_line("20110101000000", &url)
        )
        .into_response(),
        _ => StatusCode::BAD_REQUEST.into_response(),
    }
}

async fn plain_cdx(
    State(seen): State<Arc<Seen>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    seen.record(&q);
    let url = q.get("url").cloned().unwrap_or_default();
    if q.contains_key("showNumPages") {
        return format!("com,example)/page 20120101000000 {{\"url\": \"{url}\"}}\n")
            .into_response();
    }
    if q.contains_key("page") {
        return StatusCode::BAD_REQUEST.into_response();
    }
    format!("{}\n", pywb_line("20120101000000", &url)).into_response()
}

/// An archive that answers 200 with an HTML page where its CDX API should be.
async fn html_cdx() -> Response {
    "<html><body>Welcome</body></html>".into_response()
}

/// One fake server with every CDX API above, and a TimeGate that 404s (so no fallback helps).
async fn fake_cdx_server() -> (String, Arc<Seen>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Seen::default());
    let app = axum::Router::new()
        .route("/ia/cdx", axum::routing::get(ia_cdx))
        .route("/pywb/cdx", axum::routing::get(pywb_cdx))
        .route("/plain/cdx", axum::routing::get(plain_cdx))
        .route("/html/cdx", axum::routing::get(html_cdx))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .with_state(seen.clone());
    let (addr, task) = serve_fake(app).await;
    (format!("http://{addr}"), seen, task)
}

/// A replay template, checked as the config loader checks it.
fn replay(template: &str) -> tmproxy_core::cdx::replay::Replay {
    tmproxy_core::cdx::replay::Replay::parse(template).expect("a replay template")
}

pub(crate) fn cdx_archive(id: &str, base: &str, path: &str, dialect: CdxDialect) -> ArchiveConfig {
    ArchiveConfig {
        kind: ArchiveKind::Cdx,
        cdx: Some(format!("{base}/{path}/cdx").parse().expect("an http URL")),
        dialect,
        replay: Some(replay(&format!("{base}/{path}/{{timestamp}}/{{url}}"))),
        ..archive_config(id, "", &format!("{base}/{path}/gate/"))
    }
}

pub(crate) fn config(archives: Vec<ArchiveConfig>) -> Config {
    let mut config = Config::default();
    config.upstream.connect_timeout = Duration::from_secs(2);
    config.upstream.timeout = Duration::from_secs(10);
    config.upstream.deadline = Duration::from_secs(10);
    config.archives = archives;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdx_archives_in_both_dialects_paged_unpaged_and_hostile() {
    let (base, seen, _task) = fake_cdx_server().await;
    let proxy = start_proxy(config(vec![
        cdx_archive("ia", &base, "ia", CdxDialect::Ia),
        cdx_archive("ia-auto", &base, "ia", CdxDialect::Auto),
        cdx_archive("pywb", &base, "pywb", CdxDialect::Auto),
        cdx_archive("plain", &base, "plain", CdxDialect::Pywb),
        cdx_archive("html", &base, "html", CdxDialect::Auto),
    ]))
    .await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");

    // Each archive's URI-Ms, from its replay template; the hostile URL escaped, not dropped.
    let uris = memento_uris(&json);
    let ia = |ts: &str| format!("{base}/ia/{ts}/{URI_R}");
    for ts in ["20010101000000", "20020202000000", "20030303000000"] {
        assert!(uris.contains(&ia(ts)), "{ts} in {uris:?}");
    }
    let escaped = format!(
        "{base}/ia/20050505000000/http://example.com/x%3E;%20rel=%22original%22,%20%3Chttp://evil.example/"
    );
    assert!(uris.contains(&escaped), "{uris:?}");
    assert!(!uris.iter().any(|u| u.contains("javascript:")), "{uris:?}");
    // Both dialect settings read the same IA API, so they list the very same URI-Ms: one
    // answer lists each once, under `ia`. Each is also asked alone.
    assert_eq!(outcome(&json, "ia-auto")["mementos"], 0, "{json}");
    for id in ["ia", "ia-auto"] {
        // URI_R has a query of its own: ours joins it.
        let url = format!("{}/timemap/json/{URI_R}&archives={id}", proxy.base);
        let (status, alone) = get_json(&url).await;
        assert_eq!(status, 200, "{alone}");
        let o = outcome(&alone, id);
        assert_eq!(o["status"], "ok", "{o}");
        assert_eq!(o["mementos"], 4, "{o}");
        assert_eq!(o["pages"], 2, "{o}");
        // "not a row", the bad timestamp, javascript:, month 13.
        assert_eq!(o["skipped"], 4, "{o}");
    }
    let o = outcome(&json, "pywb");
    assert_eq!(
        (o["status"].as_str(), o["mementos"].as_u64()),
        (Some("ok"), Some(2)),
        "{o}"
    );
    assert_eq!(o["skipped"], 2, "{o}");
    assert!(uris.contains(&format!("{base}/pywb/20100101000000/{URI_R}")));
    assert!(uris.contains(&format!("{base}/pywb/20110101000000/{URI_R}")));
    let o = outcome(&json, "plain");
    assert_eq!(
        (o["status"].as_str(), o["pages"].as_u64()),
        (Some("ok"), Some(1)),
        "{o}"
    );
    let o = outcome(&json, "html");
    assert_eq!(o["status"], "malformed", "{o}");
    assert!(
        o["detail"]
            .as_str()
            .unwrap_or("")
            .contains("TimeGate fallback"),
        "{o}"
    );

    // The URI-R was sent whole in `url=`, and the pages in order.
    let queries = seen.all();
    assert!(queries
        .iter()
        .all(|q| q.get("url").map(String::as_str) == Some(URI_R)));
    let raw = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    let text = raw.text().await.expect("body");
    // The hostile URL stays one link: no second `original`, no link to evil.example.
    assert_eq!(text.matches("rel=\"original\"").count(), 1, "{text}");
    assert!(!text.contains("<http://evil.example/"), "{text}");
    assert!(text.contains(&format!("<{escaped}>")), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdx_paging_stops_at_max_pages() {
    let seen = Arc::new(Seen::default());
    let app = axum::Router::new()
        .route(
            "/cdx",
            axum::routing::get(
                |State(seen): State<Arc<Seen>>, Query(q): Query<HashMap<String, String>>| async move {
                    seen.record(&q);
                    if q.contains_key("showNumPages") {
                        return "1000000000".to_string();
                    }
                    let page = q.get("page").cloned().unwrap_or_default();
                    format!(
                        "[{IA_HEADER},{}]",
                        ia_row(&format!("20{:0>2}0101000000", page), URI_R, "200")
                    )
                },
            ),
        )
        .with_state(seen.clone());
    let (addr, _task) = serve_fake(app).await;
    let base = format!("http://{addr}");
    let mut archive = cdx_archive("big", &base, "x", CdxDialect::Auto);
    archive.cdx = Some(format!("{base}/cdx").parse().expect("an http URL"));
    let mut config = config(vec![archive]);
    config.upstream.max_pages = 3;
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let o = outcome(&json, "big");
    assert_eq!(
        (o["mementos"].as_u64(), o["pages"].as_u64()),
        (Some(3), Some(3)),
        "{o}"
    );
    assert!(
        o["detail"].as_str().unwrap_or("").contains("max_pages"),
        "{o}"
    );
    assert_eq!(seen.all().len(), 4, "showNumPages and 3 pages");
}

/// A fake archive whose TimeMap answers `timemap_status` and whose TimeGate answers 302 with the
/// `Location` and `Link` that `headers` makes of the fake's own base URL. The TimeGate checks
/// it is asked for the latest memento (no `Accept-Datetime`).
async fn fake_gate(
    timemap_status: u16,
    headers: impl FnOnce(&str) -> (String, String),
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (location, link) = headers(&base);
    let status = StatusCode::from_u16(timemap_status).expect("status");
    let app = axum::Router::new()
        .route(
            "/tm/{*uri}",
            axum::routing::get(move || async move { status }),
        )
        .route(
            "/tg/{*uri}",
            axum::routing::get(move |asked: HeaderMap| {
                let (location, link) = (location.clone(), link.clone());
                async move {
                    if asked.contains_key("accept-datetime") {
                        return (StatusCode::BAD_REQUEST, HeaderMap::new());
                    }
                    let mut h = HeaderMap::new();
                    for (name, value) in [("location", location), ("link", link)] {
                        if let Ok(v) = HeaderValue::from_str(&value) {
                            h.insert(name, v);
                        }
                    }
                    (StatusCode::FOUND, h)
                }
            }),
        );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, task)
}

fn ia_style_link(base: &str) -> String {
    format!(
        "<{URI_R}>; rel=\"original\", <{base}/tm/{URI_R}>; rel=\"timemap\"; type=\"application/link-format\", \
         <{base}/w/19990101000000/{URI_R}>; rel=\"first memento\"; datetime=\"Fri, 01 Jan 1999 00:00:00 GMT\", \
         <{base}/w/20200101000000/{URI_R}>; rel=\"prev memento\"; datetime=\"Wed, 01 Jan 2020 00:00:00 GMT\", \
         <{base}/w/20240101000000/{URI_R}>; rel=\"last memento\"; datetime=\"Mon, 01 Jan 2024 00:00:00 GMT\""
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_timemap_falls_back_to_the_timegate() {
    // Its Location is its last memento, which its Link dates.
    let (gate_base, task) = fake_gate(500, |base| {
        (
            format!("{base}/w/20240101000000/{URI_R}"),
            ia_style_link(base),
        )
    })
    .await;
    let mut config = config(vec![archive_config(
        "gate",
        &format!("{gate_base}/tm/"),
        &format!("{gate_base}/tg/"),
    )]);
    // A TimeGate standing in keeps the archive awake: one failure would otherwise put it to sleep.
    config.upstream.failures_before_dormant = 1;
    let proxy = start_proxy(config).await;
    let resp = client()
        .get(format!("{}/timemap/json/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(header("x-memento-partial"), "gate");
    assert_eq!(
        header("x-memento-archives"),
        "gate=error;n=3;dup=0;fallback=timegate"
    );
    let json: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(
        memento_uris(&json),
        [
            format!("{gate_base}/w/19990101000000/{URI_R}"),
            format!("{gate_base}/w/20200101000000/{URI_R}"),
            format!("{gate_base}/w/20240101000000/{URI_R}"),
        ]
    );
    let o = outcome(&json, "gate");
    assert_eq!(o["status"], "error", "{o}");
    assert_eq!(o["http_status"], 500, "{o}");
    assert_eq!(o["fallback"], "timegate", "{o}");
    assert!(
        o["detail"]
            .as_str()
            .unwrap_or("")
            .contains("TimeGate fallback (HTTP 302): 3 mementos"),
        "{o}"
    );
    // Another URI-R (a cache miss): the archive was not put to sleep, its TimeGate answers again.
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}&again", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(outcome(&json, "gate")["fallback"], "timegate", "{json}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_timegate_gives_nothing_and_is_never_followed() {
    let canary = tmproxy_testkit::archive::SimulatedArchive::start(
        tmproxy_testkit::archive::Behaviour::Status(200, "canary".into()),
    )
    .await
    .expect("canary");
    let elsewhere = format!("http://{}/w/20240101000000/{URI_R}", canary.addr);
    let link_elsewhere = format!(
        "<{elsewhere}>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2024 00:00:00 GMT\", \
         <javascript:alert(1)>; rel=\"last memento\"; datetime=\"Tue, 02 Jan 2024 00:00:00 GMT\""
    );
    let js_link = link_elsewhere.clone();
    let (js, _a) = fake_gate(502, |_| {
        ("javascript:alert(document.cookie)".into(), js_link)
    })
    .await;
    let other_link = (elsewhere.clone(), link_elsewhere);
    let (other, _b) = fake_gate(503, |_| other_link).await;
    // A 404 is "not archived": no fallback, the TimeGate is not asked.
    let gone_link = (elsewhere.clone(), String::new());
    let (gone, _c) = fake_gate(404, |_| gone_link).await;
    let good = tmproxy_testkit::archive::SimulatedArchive::start(
        tmproxy_testkit::archive::Behaviour::TimeMap(tmproxy_testkit::archive::TimeMapSpec::of(&[
            "20010101000000",
        ])),
    )
    .await
    .expect("good");
    let gate =
        |id: &str, base: &str| archive_config(id, &format!("{base}/tm/"), &format!("{base}/tg/"));
    let proxy = start_proxy(config(vec![
        gate("js", &js),
        gate("other", &other),
        gate("gone", &gone),
        archive_config("good", &good.timemap_prefix(), &good.timegate_prefix()),
    ]))
    .await;
    let resp = client()
        .get(format!("{}/timemap/json/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    let archives_header = resp.headers()["x-memento-archives"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(!archives_header.contains("fallback"), "{archives_header}");
    let json: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(memento_uris(&json), [good.uri_m("20010101000000", URI_R)]);
    for id in ["js", "other"] {
        let o = outcome(&json, id);
        assert_eq!(o["status"], "error", "{o}");
        assert!(o.get("fallback").is_none(), "{o}");
        let detail = o["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains("gave nothing") && detail.contains("refused"),
            "{o}"
        );
    }
    assert_eq!(outcome(&json, "gone")["status"], "not_found");
    assert_eq!(
        canary.requests(),
        0,
        "nothing the TimeGates named was fetched"
    );
}

fn captures(url: &str, stamps: &[&str]) -> Vec<Capture> {
    stamps
        .iter()
        .map(|ts| Capture::new(url, ts, &format!("<html>{url} at {ts}</html>")))
        .collect()
}

/// (archive, uri, datetime) of every memento, sorted.
fn mementos_of(json: &Value, archive: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = json["mementos"]["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|m| m["archive"] == archive)
                .map(|m| {
                    (
                        m["uri"].as_str().unwrap_or("").to_string(),
                        m["datetime"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pywb_asked_through_its_cdx_server_lists_what_its_timemap_lists() {
    let page = "http://example.com/";
    let caps = [
        captures(
            page,
            &["20200101120000", "20210615083000", "19990102030405"],
        ),
        captures("http://example.com/other", &["20100101000000"]),
    ]
    .concat();
    let zcaps = caps.clone();
    let (plain, zipnum) = tokio::task::spawn_blocking(move || {
        std::thread::scope(|s| {
            let z = s.spawn(|| PywbArchive::start_zipnum("zn", &zcaps, 1));
            let p = PywbArchive::start("coll", &caps);
            (p, z.join().expect("zipnum pywb"))
        })
    })
    .await
    .expect("pywb starts");
    let as_cdx = |id: &str, a: &PywbArchive, coll: &str| ArchiveConfig {
        kind: ArchiveKind::Cdx,
        cdx: Some(
            format!("{}/{coll}/cdx", a.base_url())
                .parse()
                .expect("an http URL"),
        ),
        replay: Some(replay(&format!(
            "{}/{coll}/{{timestamp}}mp_/{{url}}",
            a.base_url()
        ))),
        ..archive_config(id, "", &a.timegate_prefix())
    };
    let proxy = start_proxy(config(vec![
        archive_config("tm", &plain.timemap_prefix(), &plain.timegate_prefix()),
        as_cdx("cdx", &plain, "coll"),
        archive_config("zn-tm", &zipnum.timemap_prefix(), &zipnum.timegate_prefix()),
        as_cdx("zn-cdx", &zipnum, "zn"),
    ]))
    .await;
    let (status, json) = get_json(&format!("{}/timemap/json/{page}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    // The same pywb asked both ways lists the very same URI-Ms, which one answer lists once:
    // each archive is read alone to compare them.
    let alone = |id: &str| {
        let url = format!("{}/timemap/json/{page}?archives={id}", proxy.base);
        async move { get_json(&url).await.1 }
    };
    for (tm, cdx) in [("tm", "cdx"), ("zn-tm", "zn-cdx")] {
        let listed = mementos_of(&alone(tm).await, tm);
        assert_eq!(listed.len(), 3, "{json}");
        let by_cdx = alone(cdx).await;
        assert_eq!(
            mementos_of(&by_cdx, cdx),
            listed,
            "{cdx} lists what {tm} lists"
        );
        assert_eq!(outcome(&by_cdx, cdx)["status"], "ok");
        assert_eq!(outcome(&by_cdx, cdx)["skipped"], 0);
        assert_eq!(
            outcome(&json, cdx)["mementos"],
            0,
            "listed once, under {tm}: {json}"
        );
    }
    assert!(
        outcome(&json, "zn-cdx")["pages"].as_u64().unwrap_or(0) >= 1,
        "{json}"
    );
    // Not archived there: a "not found" answer, as from its TimeMap.
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://example.com/never",
            proxy.base
        ))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 404);
    // A JSON route's error is JSON, with each archive's outcome.
    let text = resp.text().await.expect("body");
    let error: Value = serde_json::from_str(&text).expect("a JSON error");
    for id in ["tm", "cdx", "zn-tm", "zn-cdx"] {
        assert_eq!(outcome(&error, id)["status"], "not_found", "{id}: {text}");
    }
    drop((plain, zipnum));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pywbs_307_timegate_stands_in_for_a_failing_timemap() {
    let page = "http://example.com/";
    let caps = captures(
        page,
        &["20200101120000", "20210615083000", "19990102030405"],
    );
    let archive = tokio::task::spawn_blocking(move || PywbArchive::start("coll", &caps))
        .await
        .expect("pywb starts");
    // pywb's `timemap/json/` answers CDX JSON lines with a 200: not a link-format TimeMap.
    let broken = format!("{}/coll/timemap/json/", archive.base_url());
    let proxy = start_proxy(config(vec![archive_config(
        "pywb",
        &broken,
        &archive.timegate_prefix(),
    )]))
    .await;
    let resp = client()
        .get(format!("{}/timemap/json/{page}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-memento-partial"], "pywb");
    let json: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    // Its latest memento, as its TimeMap would name it.
    assert_eq!(
        memento_uris(&json),
        [format!(
            "{}/coll/20210615083000mp_/{page}",
            archive.base_url()
        )]
    );
    let o = outcome(&json, "pywb");
    assert_eq!(o["status"], "malformed", "{o}");
    assert_eq!(o["fallback"], "timegate", "{o}");
    assert!(
        o["detail"].as_str().unwrap_or("").contains("HTTP 307"),
        "{o}"
    );
    drop(archive);
}
