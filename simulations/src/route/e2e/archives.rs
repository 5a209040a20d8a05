//! The fake archives of `memsim route-e2e`: one loopback server, `/a{index}/timemap/{URI-R}`
//! per archive, answering the miss being asked from what the stream says each archive holds.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, Request as HttpRequest, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration as Span, TimeZone, Utc};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::timemap::datetime::format_rfc1123;

/// The fake archives' shared state: what is being asked now, and the requests counted.
pub(super) struct Fake {
    /// `http://127.0.0.1:PORT`, for the URI-Ms.
    pub(super) base: String,
    /// The miss being asked: its URI-R and each archive's memento count.
    pub(super) current: Mutex<(String, Vec<u32>)>,
    pub(super) requests: Vec<AtomicU64>,
    /// Requests for another URI-R than the one being asked, or outside any TimeMap path.
    pub(super) stray: AtomicU64,
    /// The slow archive's index and delay.
    pub(super) slow: Option<(usize, Duration)>,
    /// Whether the slow archive is slow for the miss being asked.
    pub(super) slow_now: AtomicBool,
}

/// The first memento's datetime; memento `k` of archive `a` is `k` minutes and `a` seconds
/// later, so no two mementos of a TimeMap share an (archive, datetime) or a URI-M.
fn memento_time(a: usize, k: u32) -> DateTime<Utc> {
    let t0 = Utc.with_ymd_and_hms(1996, 1, 1, 0, 0, 0).single();
    t0.unwrap_or_default() + Span::minutes(i64::from(k)) + Span::seconds(a as i64)
}

/// A fake archive's answer to `/a{index}/timemap/{URI-R}`.
pub(super) async fn answer(State(fake): State<Arc<Fake>>, req: HttpRequest<Body>) -> Response {
    let path = req.uri().path_and_query().map_or("", |p| p.as_str());
    let parsed = path
        .strip_prefix("/a")
        .and_then(|p| p.split_once("/timemap/"));
    let Some((a, uri_r)) = parsed.and_then(|(i, u)| Some((i.parse::<usize>().ok()?, u))) else {
        fake.stray.fetch_add(1, Ordering::SeqCst);
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(counter) = fake.requests.get(a) else {
        fake.stray.fetch_add(1, Ordering::SeqCst);
        return StatusCode::NOT_FOUND.into_response();
    };
    let (current, held) = fake
        .current
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let decoded = percent_encoding::percent_decode_str(uri_r).decode_utf8_lossy();
    if uri_r != current && decoded != current {
        fake.stray.fetch_add(1, Ordering::SeqCst);
        return StatusCode::NOT_FOUND.into_response();
    }
    counter.fetch_add(1, Ordering::SeqCst);
    if let Some((slow, delay)) = fake.slow {
        if slow == a && fake.slow_now.load(Ordering::SeqCst) {
            tokio::time::sleep(delay).await;
        }
    }
    let n = held.get(a).copied().unwrap_or(0);
    if n == 0 {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut body = String::with_capacity(64 + 120 * n as usize);
    body.push_str(&format!("<{current}>; rel=\"original\""));
    for k in 0..n {
        let t = memento_time(a, k);
        body.push_str(&format!(
            ",\n<{}/a{a}/web/{}/{current}>; rel=\"memento\"; datetime=\"{}\"",
            fake.base,
            t.format("%Y%m%d%H%M%S"),
            format_rfc1123(t)
        ));
    }
    body.push('\n');
    ([(header::CONTENT_TYPE, "application/link-format")], body).into_response()
}
