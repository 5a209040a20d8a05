//! Recorded TimeGate heads where tmproxy asks a TimeGate: an archive whose TimeMap fails (here a
//! 500) is asked its TimeGate once, and what the recorded `Location`, `Link` and
//! `Memento-Datetime` date is what tmproxy may list for it.

use super::checks::{served_problems, timegate_problems};
use super::reading::{distinct, read, seconds, Listed};
use super::serving::{config, fixture_text, proxy};
use crate::support::{get_json, memento_uris, outcome, serve_fake};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The recorded heads, each with the URI-R it answered for.
pub const HEADS: &[(&str, &str)] = &[
    (
        "odu-aggregator-timegate-head-cs.odu.edu.txt",
        "http://www.cs.odu.edu/",
    ),
    ("ia-timegate-head-antifa.com.txt", "http://antifa.com"),
];

/// The first response of a recording (curl's `-i`/`-D` output, several responses when it followed
/// redirects): its status and headers, as recorded.
fn first_head(text: &str) -> (u16, Vec<(String, String)>) {
    let mut lines = text.lines();
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {status_line}"));
    let headers = lines
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers)
}

/// A fake archive whose TimeMap answers 500 and whose TimeGate answers with `status` and the
/// Memento headers recorded (`Location`, `Link`, `Memento-Datetime`, `Vary`); the others (dates,
/// lengths, the server's own) say nothing about mementos and some would contradict our body.
async fn recorded_gate(status: u16, headers: &[(String, String)]) -> std::net::SocketAddr {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if ["location", "link", "memento-datetime", "vary"].contains(&name.as_str()) {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                HeaderValue::from_str(value).expect("a recorded header value"),
            );
        }
    }
    let status = StatusCode::from_u16(status).expect("a status");
    let app = axum::Router::new()
        .route(
            "/timemap/link/{*uri}",
            axum::routing::get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route(
            "/timegate/{*uri}",
            axum::routing::get(move || {
                let map = map.clone();
                async move { (status, map) }
            }),
        );
    serve_fake(app).await.0
}

/// The mementos a head dates, in our reading: the `Link` mementos, and the `Location` when its
/// `Link` entry or a `Memento-Datetime` gives its datetime.
fn dated_by(headers: &[(String, String)]) -> Vec<Listed> {
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    let link = headers
        .iter()
        .filter(|(n, _)| n == "link")
        .map(|(_, v)| v.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut listed = read(&link).mementos;
    if let Some(location) = header("location") {
        let in_link = listed.iter().find(|m| &m.uri == location).map(|m| m.at);
        let dated = in_link.or_else(|| header("memento-datetime").and_then(|d| seconds(d)));
        if let Some(at) = dated {
            let rels = vec!["memento".to_string()];
            listed.push(Listed {
                uri: location.clone(),
                rels,
                at,
            });
        }
    }
    listed
}

/// The host `Location` names: tmproxy takes a TimeGate's URIs only on the archive's hosts or its
/// `redirect_hosts`, and the recorded mementos live on the real archive's host.
fn location_host(headers: &[(String, String)]) -> String {
    let location = headers
        .iter()
        .find(|(n, _)| n == "location")
        .expect("a Location");
    let url = url::Url::parse(&location.1).expect("an absolute Location");
    url.host_str().expect("a host").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_timegate_heads_stand_in_for_a_failing_timemap() {
    for (file, uri_r) in HEADS {
        let (status, headers) = first_head(&fixture_text(file));
        let expected = distinct(&dated_by(&headers));
        let gate = recorded_gate(status, &headers).await;
        let mut config = config(&[gate]);
        config.archives[0].redirect_hosts =
            vec![location_host(&headers).parse().expect("a redirect host")];
        let proxy = proxy(config).await;
        if expected.is_empty() {
            // Nothing dated (IA's redirect names its capture only in the URL): nothing is listed,
            // and the archive's outcome says why.
            let (_, json) = get_json(&format!("{}/timemap/json/{uri_r}", proxy.base)).await;
            assert!(memento_uris(&json).is_empty(), "{file}: {json}");
            let detail = outcome(&json, "a")["detail"]
                .as_str()
                .unwrap_or("")
                .to_string();
            assert!(detail.contains("gave nothing"), "{file}: {detail}");
        } else {
            let mut problems = served_problems(&proxy, uri_r, &expected).await;
            problems.extend(timegate_problems(&proxy, uri_r, &expected).await);
            assert!(problems.is_empty(), "{file}:\n{}", problems.join("\n"));
        }
        proxy.stop().await;
    }
}
