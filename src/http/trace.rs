//! The span and the DEBUG events around every request (tower-http's `TraceLayer`), there when
//! the log would show them.

use axum::Router;
use tower_http::trace::{
    DefaultMakeSpan, DefaultOnFailure, DefaultOnRequest, DefaultOnResponse, TraceLayer,
};
use tower_http::LatencyUnit;
use tracing::Level;

/// The outermost layer of every listener's router: a span per request (method, URI, version),
/// and on the response its status and latency. All at DEBUG, so the default INFO level logs
/// nothing new per request, and the span, whose URI holds the URI-R, is off there and adds it
/// to no INFO line. A 5xx is a DEBUG event here too: an internal error is already logged at
/// ERROR by the [`super::log`] layer, and a 502 or 504 is the archives' trouble, logged where it
/// is met. Headers stay out of the span: `Authorization` carries the admin token.
///
/// Only when the log would show it (`RUST_LOG=tower_http=debug`, decided as the router is
/// built): the layer wraps every response body, which axum then boxes again, and cache hits
/// measured 3-5% slower with it off at the log level (measured on cache hits).
pub(super) fn traced(router: Router) -> Router {
    if !tracing_on() {
        return router;
    }
    router.layer(
        TraceLayer::new_for_http()
            .make_span_with(
                DefaultMakeSpan::new()
                    .level(Level::DEBUG)
                    .include_headers(false),
            )
            .on_request(DefaultOnRequest::new().level(Level::DEBUG))
            .on_response(
                DefaultOnResponse::new()
                    .level(Level::DEBUG)
                    .latency_unit(LatencyUnit::Micros),
            )
            .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
    )
}

/// Whether the log would show the per-request DEBUG span and events (decided once, as a router
/// is built).
pub(super) fn tracing_on() -> bool {
    tracing::enabled!(target: "tower_http::trace", Level::DEBUG)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::captured_log::CapturedLog;
    use axum::body::Body;
    use axum::extract::Request;
    use axum::routing::get;
    use tower::ServiceExt;

    /// What one request to a traced router logs under `filter`.
    async fn logged_under(filter: &str) -> String {
        let log = CapturedLog::default();
        // Current-thread test runtime: building the router and serving run on this thread.
        let _guard = log.install(filter).await;
        let app = traced(Router::new().route("/x", get(|| async { "ok" })));
        let req = Request::builder()
            .uri("/x")
            .body(Body::empty())
            .expect("request");
        let response = app.oneshot(req).await.expect("infallible");
        let _ = axum::body::to_bytes(response.into_body(), 1024).await;
        log.text()
    }

    #[tokio::test]
    async fn a_request_is_traced_at_debug_and_not_at_the_default_level() {
        let debug = logged_under("tower_http=debug").await;
        assert!(debug.contains("started processing request"), "{debug}");
        assert!(debug.contains("finished processing request"), "{debug}");
        assert!(debug.contains("status=200"), "{debug}");
        assert_eq!(logged_under("info").await, "");
    }
}
