//! Our own header names, and an answer built from a header map moved in whole.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;

/// Our headers set on every answer, named once: a name given as text is parsed again on each
/// insert, cache hits included.
pub const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
pub const X_CACHE_CASE: HeaderName = HeaderName::from_static("x-cache-case");
pub const X_CACHE_ACTION: HeaderName = HeaderName::from_static("x-cache-action");
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");
/// Request headers the Memento routes read.
pub const PREFER: HeaderName = HeaderName::from_static("prefer");
pub const ACCEPT_DATETIME: HeaderName = HeaderName::from_static("accept-datetime");

/// An answer with these headers, moved in whole: `(status, headers, body).into_response()`
/// copies them one by one into an empty map that grows and rehashes on the way.
pub fn answer(status: StatusCode, headers: HeaderMap, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
