//! A URI-R whose dots hide behind an encoded separator or a `;` parameter (`..%2f`, `%2e%2e%5c`,
//! `..;`) against an archive behind a front end that decodes them (as nginx decodes `%2F`,
//! Tomcat drops `;params`) and resolves dot segments before it routes: no request ever lands
//! outside the archive's prefix, and the client is told 400.

use crate::support::{config_for, serve_fake, start_proxy};
use axum::http::Uri;
use axum::response::IntoResponse;
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::uri_text::remove_dot_segments;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The archive's prefix, as its front end routes it; everything else is the canary.
const PREFIX: &str = "/archive/";

/// The path as a decoding front end reads it: `%2F` and `%5C` (any case) are separators, `\` is
/// `/`, each segment's `;parameters` are dropped, then dot segments are resolved.
fn front_end_path(raw: &str) -> String {
    let mut decoded = String::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let esc = rest.get(..3).map(str::to_ascii_lowercase);
        if esc.as_deref() == Some("%2f") || esc.as_deref() == Some("%5c") {
            decoded.push('/');
            rest = &rest[3..];
        } else {
            let c = rest.chars().next().unwrap_or('/');
            decoded.push(if c == '\\' { '/' } else { c });
            rest = &rest[c.len_utf8()..];
        }
    }
    let plain: Vec<&str> = decoded
        .split('/')
        .map(|seg| seg.split(';').next().unwrap_or(""))
        .collect();
    remove_dot_segments(&plain.join("/").replace("%2e", ".").replace("%2E", "."))
}

/// Records (raw path, routed path) of every request.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

async fn decoding_archive() -> (String, Seen, tokio::task::JoinHandle<()>) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let app = Router::new().fallback(move |uri: Uri| {
        let record = record.clone();
        async move {
            let routed = front_end_path(uri.path());
            record
                .lock()
                .expect("record")
                .push((uri.path().to_string(), routed.clone()));
            let body = if routed.starts_with(PREFIX) {
                "<http://m.example/web/2001/x>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"\n"
            } else {
                "<http://canary.example/2001/x>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"\n"
            };
            ([("content-type", "application/link-format")], body).into_response()
        }
    });
    let (addr, task) = serve_fake(app).await;
    (format!("http://{addr}"), seen, task)
}

/// The status of `GET target`, sent byte for byte (a client would normalise the path).
async fn raw_status(base: &str, target: &str) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read");
        String::from_utf8_lossy(&buf).into_owned()
    };
    let text = tokio::time::timeout(Duration::from_secs(30), exchange)
        .await
        .unwrap_or_else(|_| panic!("GET {target} hung"));
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[test]
fn the_fake_front_end_decodes_as_nginx_and_tomcat_do() {
    assert_eq!(front_end_path("/archive/..%2f..%2fcanary/x1"), "/canary/x1");
    assert_eq!(front_end_path("/archive/%2e%2e%5Ccanary"), "/canary");
    assert_eq!(front_end_path("/archive/..;x/canary"), "/canary");
    assert_eq!(front_end_path("/archive/a/b"), "/archive/a/b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encoded_separators_never_reach_past_the_prefix() {
    let (base, seen, task) = decoding_archive().await;
    let mut config = config_for(&[]);
    let prefix = format!("{base}{PREFIX}");
    config.archives = vec![crate::support::archive_config("dec", &prefix, &prefix)];
    let proxy = start_proxy(config).await;

    let forms = [
        "..%2f..%2f..%2fcanary/x1",
        "..%2F..%2F..%2Fcanary/x1",
        "%2e%2e%2f%2e%2e%2fcanary/x1",
        "%2E%2e%2F%2e%2E%2Fcanary/x1",
        "..%5c..%5ccanary/x1",
        "..%5C..%5Ccanary/x1",
        "..;/..;/canary/x1",
        "%2e%2e;x/%2e%2e;y/canary/x1",
        "a/..%2F..;/%2e%2e%5Ccanary/x1",
        ".%2e%2f.;/canary/x1",
    ];
    for (ri, route) in ["/timemap/link/", "/timegate/", "/memento/json/2001/"]
        .into_iter()
        .enumerate()
    {
        for (i, form) in forms.iter().enumerate() {
            let uri_r = format!("http://e{i}r{ri}.example/{form}");
            let (status, text) = raw_status(&proxy.base, &format!("{route}{uri_r}")).await;
            assert_eq!(status, 400, "{route}{uri_r}: {text}");
            assert!(text.contains("encoded separator"), "{route}{uri_r}: {text}");
            assert!(!text.contains("canary.example"), "{text}");
        }
    }
    // The archive still answers a plain URI-R, under its prefix.
    let (status, text) = raw_status(&proxy.base, "/timemap/link/http://plain.example/a/b").await;
    assert_eq!(status, 200, "{text}");
    let seen = seen.lock().expect("record").clone();
    assert!(!seen.is_empty(), "the plain URI-R reached the archive");
    for (raw, routed) in &seen {
        assert!(
            routed.starts_with(PREFIX),
            "the archive's front end routed {raw} to {routed}"
        );
    }
    task.abort();
    proxy.stop().await;
}
