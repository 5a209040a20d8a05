//! The outermost layer of every router: a span per request holding its id (echoed as
//! `X-Request-Id`), client, method, route and URI-R; one INFO line when it is answered (status,
//! cache result, duration); the request counted in `/metrics`; our own faults logged at ERROR
//! with the request, taking the detail out of the response so nothing outside ever sees it; and
//! `X-Content-Type-Options: nosniff` on every answer, so no browser reads a TimeMap, an error or
//! a URI-R echoed in plain text as a page or a script (set here, where every answer passes
//! already, rather than in a layer of its own that every cache hit would pay for).
//!
//! Hand-written rather than `axum::middleware::from_fn`, which boxes a future and a `Next` for
//! every request, cache hits included (a per-request cost measured on cache hits).

use super::client::ClientAddr;
use super::{X_CACHE, X_REQUEST_ID};
use crate::error::take_internal_detail;
use crate::metrics::route::{route_of, RouteId};
use crate::metrics::Metrics;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::response::Response;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};
use tracing::Span;

/// The log target of the per-request line: `RUST_LOG=info,tmproxy::request=warn` silences it.
pub const TARGET: &str = "tmproxy::request";

/// A client's own `X-Request-Id` is kept when it is short and plain (a load balancer's id ties
/// its log to ours); anything else gets ours, so no header can forge a log line.
fn client_id(req: &Request) -> Option<HeaderValue> {
    let v = req.headers().get(X_REQUEST_ID)?;
    let plain = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b':');
    let bytes = v.as_bytes();
    (!bytes.is_empty() && bytes.len() <= 64 && bytes.iter().all(plain)).then(|| v.clone())
}

/// A client address for the log, or `-`.
struct ClientShown(Option<std::net::IpAddr>);

impl std::fmt::Display for ClientShown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(ip) => ip.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// Ids unique to this process: a prefix drawn at start (so two runs' logs do not collide) and
/// a counter.
struct Ids {
    prefix: u32,
    next: AtomicU64,
}

impl Ids {
    fn new() -> Ids {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded from the OS's randomness: good enough to tell runs apart.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Ids {
            prefix: h.finish() as u32,
            next: AtomicU64::new(1),
        }
    }

    /// The next id, made as the header it is sent in (its text written on the stack, then
    /// copied once into the header). Each thread takes ids from the shared counter a block at a
    /// time: one counter written by every connection thread on every request moved its cache
    /// line between cores each time.
    fn next(&self) -> HeaderValue {
        thread_local! {
            /// Whose block this thread holds (the `Ids`' address and prefix), its next id and
            /// its end.
            static BLOCK: std::cell::Cell<(usize, u32, u64, u64)> =
                const { std::cell::Cell::new((0, 0, 0, 0)) };
        }
        let me = std::ptr::from_ref(self) as usize;
        let n = BLOCK.with(|block| {
            let (owner, prefix, mut next, mut end) = block.get();
            // Another `Ids`' block (a second router on this thread) is never used for ours.
            if owner != me || prefix != self.prefix || next == end {
                next = self.next.fetch_add(ID_BLOCK, Ordering::Relaxed);
                end = next + ID_BLOCK;
            }
            block.set((me, self.prefix, next + 1, end));
            next
        });
        // Hex digits and a dash: always a valid header value.
        let (text, len) = id_text(self.prefix, n);
        HeaderValue::from_bytes(&text[..len]).unwrap_or_else(|_| HeaderValue::from_static("-"))
    }
}

/// An id's text, `{prefix:08x}-{n:x}`, written on the stack (its bytes and their length):
/// `format!`'s machinery was most of what a cache hit spent on its id.
fn id_text(prefix: u32, n: u64) -> ([u8; 25], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 25];
    for (i, slot) in text[..8].iter_mut().enumerate() {
        *slot = HEX[(prefix >> (28 - 4 * i)) as usize & 0xf];
    }
    text[8] = b'-';
    // At least one digit, no leading zeros: 1 to 16, so the text fits.
    let digits = (64 - n.leading_zeros() as usize).div_ceil(4).max(1);
    for (i, slot) in text[9..9 + digits].iter_mut().enumerate() {
        *slot = HEX[(n >> (4 * (digits - 1 - i))) as usize & 0xf];
    }
    (text, 9 + digits)
}

/// The answer's `X-Cache`, or `-`, for its log line.
fn cache_result(response: &Response) -> &str {
    let value = response.headers().get(X_CACHE);
    value.and_then(|v| v.to_str().ok()).unwrap_or("-")
}

/// Ids a thread takes at once.
const ID_BLOCK: u64 = 1024;

/// Logs and counts every request.
#[derive(Clone)]
pub struct RequestLog {
    metrics: Arc<Metrics>,
    ids: Arc<Ids>,
}

impl RequestLog {
    pub fn new(metrics: Arc<Metrics>) -> RequestLog {
        RequestLog {
            metrics,
            ids: Arc::new(Ids::new()),
        }
    }
}

impl<S> Layer<S> for RequestLog {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Logged<S> {
        Logged {
            inner,
            log: self.clone(),
        }
    }
}

/// A service whose requests are logged and counted.
#[derive(Clone)]
pub struct Logged<S> {
    inner: S,
    log: RequestLog,
}

impl<S> Service<Request> for Logged<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Logging<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let started = Instant::now();
        let id = client_id(&req).unwrap_or_else(|| self.log.ids.next());
        let route = route_of(req.uri().path());
        // Who asked, as the rate limit counts them; "-" for a router driven without a
        // connection. An address, never header text: nothing a client sends reaches the line.
        let client = req.extensions().get::<ClientAddr>().map(|c| c.0);
        let client = tracing::field::display(ClientShown(client));
        // The URI-R is recorded by the route once it has read one (`super::read_lookup`). Only
        // the path goes to an ERROR line: a query is the URI-R's or the client's.
        // Always ASCII: ours is hex, a client's passed `client_id`.
        let shown = id.to_str().unwrap_or("-");
        let span = tracing::info_span!(target: TARGET, "request", id = %shown, client, method = %req.method(), route = route.name(), uri_r = tracing::field::Empty);
        // Cheap to keep (shared bytes); only an internal error reads them.
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let inner = {
            let _entered = span.enter();
            self.inner.call(req)
        };
        Logging {
            inner,
            span,
            started,
            id,
            route,
            method,
            uri,
            metrics: self.log.metrics.clone(),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response on its way out: logged, counted, its internal error (if any) logged.
    pub struct Logging<F> {
        #[pin]
        inner: F,
        span: Span,
        started: Instant,
        id: HeaderValue,
        route: RouteId,
        method: Method,
        uri: Uri,
        metrics: Arc<Metrics>,
    }
}

impl<F, E> Future for Logging<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some(detail) = take_internal_detail(&mut response) {
            // Only the path, clipped: a query is the URI-R's or the client's.
            let path = crate::uri_r::clip(this.uri.path());
            tracing::error!(method = %this.method, %path, %detail, "internal error");
        }
        let elapsed = this.started.elapsed();
        let status = response.status().as_u16();
        // Read inside the macro: only when the line is written.
        tracing::info!(target: TARGET, status, cache = cache_result(&response), ms = format_args!("{:.2}", elapsed.as_secs_f64() * 1000.0), "answered");
        this.metrics.observe(*this.route, status, elapsed);
        // Moved out: polled to here once. A clone of a header made from a String would make
        // its bytes shared, an allocation.
        let id = std::mem::replace(this.id, HeaderValue::from_static("-"));
        let h = response.headers_mut();
        h.insert(X_REQUEST_ID, id);
        // Every route that sets it sets `nosniff`, its only value; a head made once has it.
        h.entry(header::X_CONTENT_TYPE_OPTIONS).or_insert(NOSNIFF);
        Poll::Ready(Ok(response))
    }
}

/// Made once, at compile time (`from_static` checks its text each time it runs).
#[allow(clippy::declare_interior_mutable_const)]
const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");

/// The headers this layer sets on every answer, the request id as a placeholder: for a head
/// made once and cloned per answer, so that setting them adds nothing to it.
pub fn put_per_answer(h: &mut HeaderMap) {
    h.insert(X_REQUEST_ID, HeaderValue::from_static("-"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
}

#[cfg(test)]
mod tests;
