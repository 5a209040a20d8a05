//! CORS on the public listener: any origin's page may read every answer and the headers in
//! [`EXPOSED_HEADERS`], and every `OPTIONS` is answered here as a preflight, so no route sees one
//! and no archive is asked (MemGator aggregates on `OPTIONS` and its preflights fail).
//!
//! Every header here is the same whatever the request says (any origin, fixed lists), so each is
//! a constant, sent without `Vary`, and a cache hit's head, made once, carries them already. A
//! general CORS layer (tower-http's) builds and drains a header map per request: 2.5% of a cache
//! hit's CPU (BENCHMARKS.md, "Small cache hits against nginx").

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::response::Response;
use futures::future::{Either, FutureExt, Map};
use std::future::{ready, Ready};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The headers browsers may read: docs/api.md's CORS list, kept equal to it by a test.
pub const EXPOSED_HEADERS: &[&str] = &[
    "link",
    "location",
    "x-memento-count",
    "memento-datetime",
    "x-memento-archives",
    "etag",
    "x-cache",
    "x-memento-partial",
    "preference-applied",
    "x-memento-raw",
];

/// [`EXPOSED_HEADERS`] as they are sent (a test keeps the two equal).
const EXPOSED: &str = "link,location,x-memento-count,memento-datetime,x-memento-archives,etag,\
                       x-cache,x-memento-partial,preference-applied,x-memento-raw";
/// What a preflight may ask for: the Memento routes' methods, and the request headers they read.
const METHODS: &str = "GET,HEAD,OPTIONS";
const HEADERS: &str = "accept-datetime,accept,if-none-match,cache-control,prefer";
/// How long a browser may keep a preflight's answer: a day.
const MAX_AGE: &str = "86400";

// Made once, at compile time: `from_static` checks its text each time it runs, and these two go
// on every answer, cache hits included (a header value's shared bytes are never mutated).
#[allow(clippy::declare_interior_mutable_const)]
const ANY_ORIGIN: HeaderValue = HeaderValue::from_static("*");
#[allow(clippy::declare_interior_mutable_const)]
const EXPOSED_VALUE: HeaderValue = HeaderValue::from_static(EXPOSED);

/// Puts [`WithCors`] around a service.
#[derive(Clone, Copy)]
pub struct CorsLayer;

impl<S> Layer<S> for CorsLayer {
    type Service = WithCors<S>;

    fn layer(&self, inner: S) -> WithCors<S> {
        WithCors { inner }
    }
}

/// A service any origin may read, whose `OPTIONS` are answered as preflights.
#[derive(Clone)]
pub struct WithCors<S> {
    inner: S,
}

type Readable<E> = fn(Result<Response, E>) -> Result<Response, E>;

impl<S> Service<Request> for WithCors<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, Map<S::Future, Readable<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.method() == Method::OPTIONS {
            return Either::Left(ready(Ok(preflight())));
        }
        Either::Right(self.inner.call(req).map(readable as Readable<S::Error>))
    }
}

/// An answer any origin's page may read, with the headers it may read.
fn readable<E>(answer: Result<Response, E>) -> Result<Response, E> {
    answer.map(|mut response| {
        let h = response.headers_mut();
        // A head made once (a whole TimeMap's) has them already: [`put_readable`] alone
        // writes the exposed list, and always with the origin. One lookup, where writing
        // both again cost a hit two hashed inserts.
        if !h.contains_key(ACCESS_CONTROL_EXPOSE_HEADERS) {
            put_readable(h);
        }
        response
    })
}

/// The headers that let any origin's page read an answer, and which headers it may read.
pub fn put_readable(h: &mut HeaderMap) {
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, ANY_ORIGIN);
    h.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED_VALUE);
}

/// The answer to any `OPTIONS`: 200, empty, what a cross-origin request may do.
fn preflight() -> Response {
    let mut response = Response::new(Body::empty());
    let h = response.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, ANY_ORIGIN);
    h.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(METHODS),
    );
    h.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(HEADERS),
    );
    h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[test]
    fn the_exposed_headers_are_sent_as_listed() {
        assert_eq!(EXPOSED, EXPOSED_HEADERS.join(","));
    }

    /// The answers of a route behind tower-http's CORS layer as the router had it configured,
    /// and behind this one, to a preflight and to a `GET`, with and without `Origin`.
    #[tokio::test]
    async fn answers_carry_what_tower_http_s_cors_layer_sent() {
        use axum::http::{header, HeaderName};
        use std::time::Duration;
        let theirs = tower_http::cors::CorsLayer::new()
            .allow_origin(tower_http::cors::Any)
            .allow_methods([Method::GET, Method::HEAD, Method::OPTIONS])
            .allow_headers([
                HeaderName::from_static("accept-datetime"),
                header::ACCEPT,
                header::IF_NONE_MATCH,
                header::CACHE_CONTROL,
                HeaderName::from_static("prefer"),
            ])
            .expose_headers(
                EXPOSED_HEADERS
                    .iter()
                    .map(|h| HeaderName::from_static(h))
                    .collect::<Vec<_>>(),
            )
            .max_age(Duration::from_secs(86400))
            .vary(Vec::<HeaderName>::new());
        let route = tower::service_fn(|_req: Request| async {
            Ok::<_, std::convert::Infallible>(Response::new(Body::from("a TimeMap")))
        });
        for method in [Method::OPTIONS, Method::GET] {
            for origin in [None, Some("https://example.org")] {
                let ask = || {
                    let mut b = Request::builder().method(method.clone()).uri("/timemap/x");
                    if let Some(o) = origin {
                        b = b.header(header::ORIGIN, o);
                    }
                    if method == Method::OPTIONS {
                        b = b.header("access-control-request-method", "GET");
                    }
                    b.body(Body::empty()).expect("request")
                };
                let expected = theirs.layer(route).oneshot(ask()).await.expect("answer");
                let got = CorsLayer.layer(route).oneshot(ask()).await.expect("answer");
                assert_eq!(got.status(), expected.status(), "{method} {origin:?}");
                assert_eq!(got.headers(), expected.headers(), "{method} {origin:?}");
            }
        }
    }
}
