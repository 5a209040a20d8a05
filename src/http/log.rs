//! The layer that logs our own faults (every router has it): at ERROR with the request's method
//! and path, which `AppError::into_response` cannot know. It takes the detail out of the
//! response, so whatever wraps the router never sees it.
//!
//! Hand-written rather than `axum::middleware::from_fn`, which boxes a future and a `Next` for
//! every request, cache hits included (BENCHMARKS.md, [refactor]): here a request costs a clone
//! of its method and URI.

use crate::error::take_internal_detail;
use axum::extract::Request;
use axum::http::{Method, Uri};
use axum::response::Response;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tower::{Layer, Service};

/// Logs each internal error with the request it answers.
#[derive(Clone, Copy)]
pub struct LogInternalErrors;

impl<S> Layer<S> for LogInternalErrors {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Logged<S> {
        Logged { inner }
    }
}

/// A service whose internal errors are logged.
#[derive(Clone)]
pub struct Logged<S> {
    inner: S,
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
        // The URI is cheap to keep (its parts are shared bytes). Only its path is logged: a
        // query is the URI-R's or the client's (`?timeout=`) and says nothing about our fault.
        let (method, uri) = (req.method().clone(), req.uri().clone());
        Logging {
            inner: self.inner.call(req),
            method,
            uri,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response on its way out, its internal error (if any) logged.
    pub struct Logging<F> {
        #[pin]
        inner: F,
        method: Method,
        uri: Uri,
    }
}

impl<F, E> Future for Logging<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some(detail) = take_internal_detail(&mut response) {
            tracing::error!(method = %this.method, path = %this.uri.path(), %detail, "internal error");
        }
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
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

    #[tokio::test]
    async fn internal_detail_goes_to_the_log_not_the_client() {
        let log = CapturedLog::default();
        // Current-thread test runtime: the handler and the layer run on this thread.
        let _guard = tracing::subscriber::set_default(log.subscriber("info"));
        let app = Router::new()
            .route("/broken/{*rest}", get(broken))
            .layer(LogInternalErrors);
        let req = Request::builder()
            .method("GET")
            .uri("/broken/x?q=1")
            .body(Body::empty())
            .expect("request");
        let mut response = app.oneshot(req).await.expect("infallible");
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
}
