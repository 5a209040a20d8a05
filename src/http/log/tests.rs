//! The request log layer: its line, its id, its counts, and internal errors kept from clients.

use super::*;
use crate::error::AppError;
use crate::http::captured_log::CapturedLog;
use axum::body::Body;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tower::ServiceExt;

async fn broken() -> AppError {
    AppError::Internal("the secret detail".into())
}

async fn hit() -> ([(&'static str, &'static str); 1], &'static str) {
    tracing::Span::current().record("uri_r", "http://example.com/");
    ([("x-cache", "HIT")], "ok")
}

fn app(metrics: &Arc<Metrics>) -> Router {
    Router::new()
        .route("/broken/{*rest}", get(broken))
        .route("/timemap/{*rest}", get(hit))
        .layer(RequestLog::new(metrics.clone()))
}

async fn get_with(app: Router, uri: &str, id: Option<&str>) -> Response {
    let mut req = Request::builder().method("GET").uri(uri);
    if let Some(id) = id {
        req = req.header("x-request-id", id);
    }
    let req = req.body(Body::empty()).expect("request");
    app.oneshot(req).await.expect("infallible")
}

#[tokio::test]
async fn internal_detail_goes_to_the_log_not_the_client() {
    let log = CapturedLog::default();
    // Current-thread test runtime: the handler and the layer run on this thread.
    let _guard = log.install("warn").await;
    let metrics = Arc::new(Metrics::requests_only());
    let mut response = get_with(app(&metrics), "/broken/x?q=1", None).await;
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(take_internal_detail(&mut response).is_none());
    let body = axum::body::to_bytes(response.into_body(), 1024)
        .await
        .expect("body");
    assert_eq!(&body[..], b"500 internal error\n");
    let logged = log.text();
    assert_eq!(logged.lines().count(), 1, "{logged}");
    for part in [
        "ERROR",
        "internal error",
        "method=GET",
        "path=/broken/x",
        "the secret detail",
    ] {
        assert!(logged.contains(part), "{part} in {logged}");
    }
    assert!(!logged.contains("q=1"), "{logged}");
}

#[tokio::test]
async fn every_request_is_one_info_line_with_its_id_and_is_counted() {
    let log = CapturedLog::default();
    let _guard = log.install("info").await;
    let metrics = Arc::new(Metrics::requests_only());
    let response = get_with(app(&metrics), "/timemap/link/http://example.com/", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["x-request-id"].to_str().expect("ascii");
    let logged = log.text();
    assert_eq!(logged.lines().count(), 1, "{logged}");
    for part in [
        " INFO ",
        &format!("id={id}"),
        "method=GET",
        "client=-",
        "route=\"timemap\"",
        "uri_r=\"http://example.com/\"",
        "answered",
        "status=200",
        "cache=\"HIT\"",
        "ms=",
    ] {
        assert!(logged.contains(part), "{part} in {logged}");
    }
    let second = get_with(app(&metrics), "/nowhere", None).await;
    let other = second.headers()["x-request-id"].to_str().expect("ascii");
    assert_ne!(id, other, "each request its own id");
    let text = metrics.render();
    for line in [
        "tmproxy_http_requests_total{route=\"timemap\",status=\"200\"} 1",
        "tmproxy_http_requests_total{route=\"other\",status=\"404\"} 1",
        "tmproxy_http_request_duration_seconds_count{route=\"timemap\"} 1",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

#[tokio::test]
async fn a_plain_client_id_is_kept_and_any_other_replaced() {
    // Not read, but taken: a test that hits the layer's callsites with no log of its own could
    // otherwise leave them off for a test that captures one (see `CapturedLog::install`).
    let _log = CapturedLog::default().install("warn").await;
    let metrics = Arc::new(Metrics::requests_only());
    let kept = get_with(app(&metrics), "/timemap/x", Some("lb-42.a:b_c")).await;
    assert_eq!(kept.headers()["x-request-id"], "lb-42.a:b_c");
    for hostile in [
        "a b",
        "x\u{7f}",
        "\"quoted\"",
        &"y".repeat(65),
        "a=1 status=500",
    ] {
        let Ok(value) = HeaderValue::from_str(hostile) else {
            continue;
        };
        let req = Request::builder()
            .uri("/timemap/x")
            .header("x-request-id", value)
            .body(Body::empty())
            .expect("request");
        let answer = app(&metrics).oneshot(req).await.expect("infallible");
        assert_ne!(answer.headers()["x-request-id"], hostile);
    }
}

#[tokio::test]
async fn the_line_names_the_client_the_connection_found() {
    let log = CapturedLog::default();
    let _guard = log.install("info").await;
    let metrics = Arc::new(Metrics::requests_only());
    let mut req = Request::builder()
        .uri("/timemap/link/http://example.com/")
        // What a client claims is not what the log writes: only the connection's finding is.
        .header("x-forwarded-for", "198.51.100.1 status=500")
        .body(Body::empty())
        .expect("request");
    let client = ClientAddr("203.0.113.5".parse().expect("ip"));
    req.extensions_mut().insert(client);
    let response = app(&metrics).oneshot(req).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let logged = log.text();
    assert!(logged.contains(" client=203.0.113.5 "), "{logged}");
    assert!(!logged.contains("198.51.100.1"), "{logged}");
}

#[test]
fn ids_are_unique_across_threads_and_logs() {
    let (a, b) = (Arc::new(super::Ids::new()), Arc::new(super::Ids::new()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (a, b) = (a.clone(), b.clone());
            // Each thread switches between the two: a block is never used for the other.
            std::thread::spawn(move || {
                (0..3000)
                    .map(|i| if i % 3 == 0 { a.next() } else { b.next() })
                    .map(|v| v.to_str().expect("ascii").to_owned())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for t in threads {
        for id in t.join().expect("thread") {
            assert!(seen.insert(id.clone()), "{id} given twice");
        }
    }
    assert_eq!(seen.len(), 12_000);
}

#[test]
fn an_id_is_spelled_as_format_spells_it() {
    for (prefix, n) in [
        (0u32, 0u64),
        (0x1f1a008b, 0x401),
        (u32::MAX, u64::MAX),
        (7, 1 << 60),
        (0xdeadbeef, 15),
        (1, 16),
    ] {
        let (text, len) = super::id_text(prefix, n);
        let got = std::str::from_utf8(&text[..len]).expect("ascii");
        assert_eq!(got, format!("{prefix:08x}-{n:x}"));
    }
}
