//! The CDX client against an in-process fake Internet Archive CDX server on 127.0.0.1:0 that
//! injects the failures the published NYPW scripts lost URLs to: 503s, 429 with Retry-After,
//! 403 "Blocked Site Error", timeouts, empty answers; and CDX pagination.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::sampling::cdx::{CdxClient, CdxSettings, Dialect, FirstCapture};

#[derive(Default)]
struct Fake {
    /// Requests per url parameter.
    seen: Mutex<HashMap<String, u32>>,
}

const HEADER: &str =
    r#"["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#;

fn rows(url: &str, stamps: &[&str]) -> String {
    let mut s = format!("[{HEADER}");
    for t in stamps {
        s.push_str(&format!(
            r#",["com,x)/","{t}","{url}","text/html","200","D{t}","100"]"#
        ));
    }
    s.push(']');
    s
}

async fn cdx(State(fake): State<Arc<Fake>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let url = q.get("url").cloned().unwrap_or_default();
    let n = {
        let mut seen = fake.seen.lock().expect("lock");
        let n = seen.entry(url.clone()).or_default();
        *n += 1;
        *n
    };
    let ok = || rows(&url, &["19990101000000"]).into_response();
    match url.as_str() {
        "http://flaky.example/" if n <= 2 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        "http://slow.example/" if n == 1 => {
            let mut h = HeaderMap::new();
            h.insert("retry-after", HeaderValue::from_static("1"));
            (StatusCode::TOO_MANY_REQUESTS, h, "slow down").into_response()
        }
        "http://blocked.example/" => {
            (StatusCode::FORBIDDEN, "<h1>Blocked Site Error</h1>").into_response()
        }
        "http://empty.example/" => "".into_response(),
        "http://hang.example/" if n == 1 => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            ok()
        }
        "http://dead.example/" => StatusCode::BAD_GATEWAY.into_response(),
        "http://paged.example/" if q.contains_key("showNumPages") => "3\n".into_response(),
        "http://paged.example/" => {
            let page: u32 = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(99);
            let stamps: Vec<String> = (1..=2)
                .map(|month| format!("20{}0{month}01000000", 10 + page))
                .collect();
            let refs: Vec<&str> = stamps.iter().map(String::as_str).collect();
            rows(&url, &refs).into_response()
        }
        _ => ok(),
    }
}

async fn start() -> (String, Arc<Fake>, tokio::task::JoinHandle<()>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/cdx/search/cdx", axum::routing::get(cdx))
        .with_state(fake.clone());
    let (addr, task) = crate::support::serve_fake(app).await;
    (format!("http://{addr}/cdx/search/cdx"), fake, task)
}

fn settings(endpoint: &str) -> CdxSettings {
    CdxSettings {
        timeout: Duration::from_secs(1),
        max_retries: 3,
        backoff_base: Duration::from_millis(50),
        backoff_cap: Duration::from_secs(2),
        concurrency: 4,
        ..CdxSettings::new(endpoint, Dialect::Ia)
    }
}

#[tokio::test]
async fn every_url_gets_an_answer_whatever_the_server_does() {
    let (endpoint, fake, task) = start().await;
    let client = CdxClient::new(settings(&endpoint)).expect("client");
    let urls = [
        "http://ok.example/",
        "http://flaky.example/",
        "http://slow.example/",
        "http://blocked.example/",
        "http://empty.example/",
        "http://hang.example/",
        "http://dead.example/",
    ];
    let answers = futures::future::join_all(urls.iter().map(|u| {
        let c = client.clone();
        async move { (u.to_string(), c.first_capture(u).await) }
    }))
    .await;
    let found = FirstCapture::Found {
        timestamp: "19990101000000".into(),
        mime: "text/html".into(),
        status: "200".into(),
    };
    let a: HashMap<String, FirstCapture> = answers.into_iter().collect();
    assert_eq!(a["http://ok.example/"], found);
    assert_eq!(
        a["http://flaky.example/"], found,
        "two 503s, then retried to success"
    );
    assert_eq!(
        a["http://slow.example/"], found,
        "429 honoured, then success"
    );
    assert_eq!(a["http://hang.example/"], found, "a timeout is retried");
    assert_eq!(a["http://blocked.example/"], FirstCapture::Blocked);
    assert_eq!(a["http://empty.example/"], FirstCapture::NotArchived);
    assert!(
        matches!(&a["http://dead.example/"], FirstCapture::Failed { reason } if reason.contains("gave up after 3 retries")),
        "{:?}",
        a["http://dead.example/"]
    );
    let seen = fake.seen.lock().expect("lock").clone();
    assert_eq!(seen["http://flaky.example/"], 3);
    assert_eq!(seen["http://slow.example/"], 2);
    assert_eq!(seen["http://dead.example/"], 4, "1 try + 3 retries");
    assert_eq!(seen["http://blocked.example/"], 1, "blocked is final");
    let stats = client.stats();
    assert_eq!((stats.blocked, stats.failed), (1, 1));
    assert!(stats.retries >= 2 + 1 + 1 + 3, "{stats:?}");
    task.abort();
}

#[tokio::test]
async fn a_timemap_is_every_page_in_order() {
    let (endpoint, _fake, task) = start().await;
    let client = CdxClient::new(settings(&endpoint)).expect("client");
    let rows = client
        .timemap("http://paged.example/")
        .await
        .expect("pages");
    let stamps: Vec<&str> = rows.iter().map(|r| r.timestamp.as_str()).collect();
    assert_eq!(
        stamps,
        vec![
            "20100101000000",
            "20100201000000",
            "20110101000000",
            "20110201000000",
            "20120101000000",
            "20120201000000"
        ]
    );
    task.abort();
}

/// pywb's CDX server (the dialect of NDJSON objects and `{"pages": n}`), over a collection
/// built from WARCs at test time: detected, first captures, not-archived, paged TimeMaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_speaks_pywbs_dialect() {
    use crate::pywb::{Capture, PywbArchive};
    let caps: Vec<Capture> = ["20050607080910", "19990102030405", "20120101000000"]
        .iter()
        .map(|ts| Capture::new("http://example.com/page", ts, &format!("<html>{ts}</html>")))
        .collect();
    let archive = tokio::task::spawn_blocking(move || PywbArchive::start("coll", &caps))
        .await
        .expect("pywb started");
    let endpoint = format!("{}/coll/cdx", archive.base_url());
    let dialect = tmproxy::sampling::cdx::detect(&endpoint, "http://example.com/page")
        .await
        .expect("detected");
    assert_eq!(dialect, Dialect::Pywb);
    let client = CdxClient::new(CdxSettings::new(&endpoint, dialect)).expect("client");
    match client.first_capture("http://example.com/page").await {
        FirstCapture::Found {
            timestamp,
            mime,
            status,
        } => {
            assert_eq!(timestamp, "19990102030405");
            assert_eq!((mime.as_str(), status.as_str()), ("text/html", "200"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.first_capture("http://example.com/never").await,
        FirstCapture::NotArchived
    );
    let rows = client
        .timemap("http://example.com/page")
        .await
        .expect("timemap");
    let stamps: Vec<&str> = rows.iter().map(|r| r.timestamp.as_str()).collect();
    assert_eq!(
        stamps,
        vec!["19990102030405", "20050607080910", "20120101000000"]
    );
    drop(archive);
}

/// pywb over a ZipNum cluster: `showNumPages` counts pages of index blocks and `page=k` serves
/// them; the client's TimeMap is every page in order. And a whole sampling job whose input is
/// the cluster's own `.idx` (pywb's layout: key, then tab-separated fields) and whose CDX API is
/// that pywb: the dialect detected, first captures and TimeMaps from pywb.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_job_against_pywb_over_a_zipnum_collection() {
    use crate::pywb::{Capture, PywbArchive};
    use tmproxy::sampling::engine::{run, Progress, SampledUrl, Spec};
    let mut caps = Vec::new();
    // One page with 25 captures (several CDX pages), and 12 sites with a few each.
    for k in 0..25 {
        let ts = format!("20{:02}01010000{k:02}", 1 + k % 20);
        caps.push(Capture::new(
            "http://busy.example/",
            &ts,
            "<html>busy</html>",
        ));
    }
    for site in 0..12 {
        for year in [1998 + site, 2010 + site] {
            let url = format!("http://site{site:02}.example/page.html");
            caps.push(Capture::new(
                &url,
                &format!("{year}0601000000"),
                "<html>x</html>",
            ));
        }
    }
    let archive = tokio::task::spawn_blocking(move || PywbArchive::start_zipnum("zn", &caps, 1))
        .await
        .expect("pywb started");
    let endpoint = format!("{}/zn/cdx", archive.base_url());

    let client = CdxClient::new(CdxSettings::new(&endpoint, Dialect::Pywb)).expect("client");
    let rows = client.timemap("http://busy.example/").await.expect("paged");
    assert_eq!(rows.len(), 25);
    let stamps: Vec<&str> = rows.iter().map(|r| r.timestamp.as_str()).collect();
    let mut sorted = stamps.clone();
    sorted.sort_unstable();
    assert_eq!(stamps, sorted, "pages in order");
    assert!(
        client.stats().requests > 2,
        "more than one page was asked for"
    );

    let out = tempfile::tempdir().expect("temp dir");
    let spec = Spec {
        input: archive
            .indexes_dir()
            .join("cluster.idx")
            .display()
            .to_string(),
        cdx_api: endpoint.clone(),
        dialect: None,
        seed: 5,
        years: [1996, 2021],
        concurrency: 2,
        rate_limit: 0.0,
        popular_domains: vec![],
        popular_quota: 20,
        downsampling: Default::default(),
        candidate_pool: None,
        long_tail_threshold: 900_000,
        long_tail_fraction: 0.9,
        collect_timemaps: true,
        hydrate_revisits: true,
    };
    let outcome = run(&spec, out.path(), Arc::new(Progress::default()))
        .await
        .expect("the job runs against pywb");
    let sample: Vec<SampledUrl> = std::fs::read_to_string(out.path().join("sample.ndjson"))
        .expect("sample")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a line"))
        .collect();
    assert_eq!(sample.len(), outcome.sample);
    // Every site's page is sampled (few URLs per domain keep all), with pywb's first capture.
    for site in 0..12 {
        let url = format!("https://site{site:02}.example/page.html");
        let s = sample
            .iter()
            .find(|s| s.url == url)
            .unwrap_or_else(|| panic!("{url} in the sample: {sample:?}"));
        assert_eq!(s.first_capture, format!("{}0601000000", 1998 + site));
        assert_eq!(s.mime, "text/html");
    }
    let index = std::fs::read_to_string(out.path().join("timemaps/index.ndjson")).expect("index");
    assert!(index.contains("\"mementos\":2"), "{index}");
    drop(archive);
}
