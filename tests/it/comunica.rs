//! Comunica, a Memento client nobody here wrote, run unchanged against our TimeGate: its
//! `comunica-sparql -d DATETIME` queries an RDF resource as it was at that datetime, and must
//! get the triples of the memento our TimeGate picks, never the live ones nor another memento's.
//!
//! How it negotiates (`@comunica/actor-http-memento` 1.22.1, the engine's default HTTP actor
//! whenever a datetime is set): every GET carries `Accept-Datetime` (the date in RFC 1123); a
//! redirect is followed by fetch, headers kept; an answer without `Memento-Datetime` whose
//! `Link` has `rel="timegate"` is dropped and that TimeGate asked instead, once. So the live
//! resource here advertises our TimeGate, as a Memento-aware origin does, and our 302 leads to
//! the archive's memento, which answers with `Memento-Datetime`.

use crate::support::{archive_config, config_for, serve_fake, skip, start_proxy};
use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The pinned engine scripts/test.sh installs (testkit/node/package-lock.json).
fn comunica_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testkit/node/node_modules/@comunica/actor-init-sparql/bin/query.js")
}

/// Generous: one run takes well under a second on loopback, even on a loaded machine.
const CLIENT_BOUND: Duration = Duration::from_secs(60);

const DATASET: &str = "http://example.org/dataset";

/// The Turtle of the resource as captured at `ts` (or live): triples that say which state it
/// is, so a query's answer names the memento it was read from.
fn turtle(state: &str) -> String {
    format!(
        "@prefix dct: <http://purl.org/dc/terms/> .\n\
         @prefix ex: <http://example.org/ns#> .\n\
         <{DATASET}> dct:title \"the dataset as of {state}\" ;\n    ex:state \"{state}\" .\n"
    )
}

/// The (predicate, object) pairs [`turtle`] writes for `state`, as the query returns them.
fn triples_of(state: &str) -> Vec<(String, String)> {
    let mut t = vec![
        (
            "http://purl.org/dc/terms/title".to_string(),
            format!("the dataset as of {state}"),
        ),
        ("http://example.org/ns#state".to_string(), state.to_string()),
    ];
    t.sort();
    t
}

fn http_date(ts: &str) -> String {
    let dt = tmproxy::timemap::datetime::parse_14digit(ts).expect("a 14-digit timestamp");
    tmproxy::timemap::datetime::format_rfc1123(dt)
}

/// A Memento archive holding `captures` of any URI-R it is asked for: a link-format TimeMap at
/// `/timemap/link/{URI-R}` and each memento's Turtle at `/web/{ts}/{URI-R}`, with
/// `Memento-Datetime`. Every memento path asked is logged in `asked`.
fn rdf_archive(captures: &'static [&'static str], asked: Arc<Mutex<Vec<String>>>) -> axum::Router {
    axum::Router::new().fallback(move |req: Request| {
        let asked = asked.clone();
        async move {
            let path = req.uri().path().to_string();
            // Its own address, as the proxy reached it: the URI-Ms point back here.
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok());
            let base = format!("http://{}", host.unwrap_or_default());
            if let Some(uri_r) = path.strip_prefix("/timemap/link/") {
                let mut body = format!("<{uri_r}>; rel=\"original\",\n");
                for ts in captures {
                    body.push_str(&format!(
                        "<{base}/web/{ts}/{uri_r}>; rel=\"memento\"; datetime=\"{}\",\n",
                        http_date(ts)
                    ));
                }
                body.truncate(body.len() - 2);
                body.push('\n');
                return ([(header::CONTENT_TYPE, "application/link-format")], body).into_response();
            }
            let Some((ts, uri_r)) = path
                .strip_prefix("/web/")
                .and_then(|rest| rest.split_once('/'))
                .filter(|(ts, _)| captures.contains(ts))
            else {
                return (axum::http::StatusCode::NOT_FOUND, "no such memento").into_response();
            };
            asked.lock().expect("lock").push(path.clone());
            Response::builder()
                .header(header::CONTENT_TYPE, "text/turtle")
                .header("memento-datetime", http_date(ts))
                .header(header::LINK, format!("<{uri_r}>; rel=\"original\""))
                .body(axum::body::Body::from(turtle(ts)))
                .expect("response")
        }
    })
}

/// What one `comunica-sparql` run read: the (predicate, object) pairs about the dataset.
async fn query_at(source: &str, datetime: &str) -> Vec<(String, String)> {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(comunica_script())
        .arg(source)
        .args(["-d", datetime])
        .args(["-t", "application/sparql-results+json"])
        .arg(format!("SELECT ?p ?o WHERE {{ <{DATASET}> ?p ?o }}"))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let run = cmd.output();
    // A timeout drops the run, and kill_on_drop kills the client with it.
    let out = match tokio::time::timeout(CLIENT_BOUND, run).await {
        Ok(out) => out.expect("node runs"),
        Err(_) => panic!(
            "comunica-sparql {source} -d {datetime} did not finish within {CLIENT_BOUND:?}: killed"
        ),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "comunica-sparql {source} -d {datetime}: {}\n{stdout}\n{stderr}",
        out.status
    );
    let json: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not SPARQL JSON results ({e}): {stdout}\n{stderr}"));
    let mut got: Vec<(String, String)> = json["results"]["bindings"]
        .as_array()
        .unwrap_or_else(|| panic!("no bindings: {json}"))
        .iter()
        .map(|b| {
            let v = |k: &str| b[k]["value"].as_str().unwrap_or_default().to_string();
            (v("p"), v("o"))
        })
        .collect();
    got.sort();
    got
}

/// Two archives (2010 and 2020 in one, 2015 in the other) behind us; Comunica asks the live
/// resource for it at datetimes before the first memento, between two (nearer each side),
/// after the last, and once straight at our TimeGate: each time it reads the triples of the
/// memento closest to that datetime across both archives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comunica_reads_the_memento_our_timegate_picks() {
    let script = comunica_script();
    let node = tokio::process::Command::new("node")
        .arg("--version")
        .output()
        .await;
    if !node.is_ok_and(|o| o.status.success()) {
        return skip("node is not installed (scripts/test.sh installs Debian's nodejs)");
    }
    if !script.is_file() {
        return skip(&format!(
            "Comunica is not installed: no {} (scripts/test.sh runs npm ci in testkit/node)",
            script.display()
        ));
    }

    let asked_a: Arc<Mutex<Vec<String>>> = Arc::default();
    let asked_b: Arc<Mutex<Vec<String>>> = Arc::default();
    let (a, _a_task) = serve_fake(rdf_archive(
        &["20100101000000", "20200101000000"],
        asked_a.clone(),
    ))
    .await;
    let (b, _b_task) = serve_fake(rdf_archive(&["20150101000000"], asked_b.clone())).await;

    // The live resource: today's triples, our TimeGate in its Link header (set once the proxy
    // has its port), and every Accept-Datetime it was sent.
    let timegate: Arc<OnceLock<String>> = Arc::default();
    let live_asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (tg, seen) = (timegate.clone(), live_asked.clone());
    let live = axum::Router::new().fallback(move |req: Request| {
        let (tg, seen) = (tg.clone(), seen.clone());
        async move {
            let adt = req.headers().get("accept-datetime");
            let adt = adt.and_then(|v| v.to_str().ok()).unwrap_or("none");
            seen.lock().expect("lock").push(adt.to_string());
            Response::builder()
                .header(header::CONTENT_TYPE, "text/turtle")
                .header(
                    header::LINK,
                    format!("<{}>; rel=\"timegate\"", tg.get().expect("set")),
                )
                .body(axum::body::Body::from(turtle("live")))
                .expect("response")
        }
    });
    let (live, _live_task) = serve_fake(live).await;
    let uri_r = format!("http://{live}/dataset.ttl");

    let mut config = config_for(&[]);
    for (id, addr) in [("a", a), ("b", b)] {
        config.archives.push(archive_config(
            id,
            &format!("http://{addr}/timemap/link/"),
            &format!("http://{addr}/timegate/"),
        ));
    }
    let proxy = start_proxy(config).await;
    let our_timegate = format!("{}/timegate/{uri_r}", proxy.base);
    timegate.set(our_timegate.clone()).expect("set once");

    // (source, datetime asked, the memento it must read, the archive holding it)
    let cases = [
        (&uri_r, "2005-06-01T00:00:00Z", "20100101000000", "a"),
        (&uri_r, "2014-01-01T00:00:00Z", "20150101000000", "b"),
        (&uri_r, "2011-01-01T00:00:00Z", "20100101000000", "a"),
        (&uri_r, "2016-01-01T00:00:00Z", "20150101000000", "b"),
        (&uri_r, "2030-01-01T00:00:00Z", "20200101000000", "a"),
        (&our_timegate, "2019-01-01T00:00:00Z", "20200101000000", "a"),
    ];
    for (source, datetime, want, archive) in cases {
        let (asked, addr) = match archive {
            "a" => (&asked_a, a),
            _ => (&asked_b, b),
        };
        let before = asked.lock().expect("lock").len();
        let got = query_at(source, datetime).await;
        assert_eq!(
            got,
            triples_of(want),
            "{source} at {datetime}: the memento of {want} (not {:?})",
            got.iter()
                .find(|(p, _)| p.ends_with("#state"))
                .map(|(_, o)| o)
        );
        let asked = asked.lock().expect("lock").clone();
        assert_eq!(
            asked.get(before).map(String::as_str),
            Some(format!("/web/{want}/{uri_r}").as_str()),
            "{source} at {datetime}: read from archive {archive} at {addr}: {asked:?}"
        );
    }

    // The client negotiated from the live resource itself: each of its five requests there
    // carried the datetime, in RFC 1123 as RFC 7089 asks.
    let live_asked = live_asked.lock().expect("lock").clone();
    assert_eq!(
        live_asked,
        [
            "Wed, 01 Jun 2005 00:00:00 GMT",
            "Wed, 01 Jan 2014 00:00:00 GMT",
            "Sat, 01 Jan 2011 00:00:00 GMT",
            "Fri, 01 Jan 2016 00:00:00 GMT",
            "Tue, 01 Jan 2030 00:00:00 GMT",
        ]
    );
    proxy.stop().await;
}
