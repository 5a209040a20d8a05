//! Errors in the route's format: on a JSON route every error of ours (a route's, the rate
//! limit's 429, the header limit's 431, the 404 and 405 fallbacks) goes out as JSON. This layer
//! only reads the path; what is JSON, and the JSON, are decided in `crate::error`.

use crate::error::{in_route_format, ErrorFormat};
use axum::extract::Request;
use axum::response::Response;
use futures::future::{Either, FutureExt, Map};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Puts [`InRouteFormat`] around a service: outside every layer that can answer an error.
#[derive(Clone, Copy)]
pub struct ErrorFormatLayer;

impl<S> Layer<S> for ErrorFormatLayer {
    type Service = InRouteFormat<S>;

    fn layer(&self, inner: S) -> InRouteFormat<S> {
        InRouteFormat { inner }
    }
}

/// A service whose error answers are written as its route writes them.
#[derive(Clone)]
pub struct InRouteFormat<S> {
    inner: S,
}

type ToJson<E> = fn(Result<Response, E>) -> Result<Response, E>;

fn to_json<E>(answer: Result<Response, E>) -> Result<Response, E> {
    answer.map(|r| in_route_format(r, ErrorFormat::Json))
}

impl<S> Service<Request> for InRouteFormat<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, Map<S::Future, ToJson<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // Text routes (nearly every request) pass untouched: errors are text already.
        match ErrorFormat::of_path(req.uri().path()) {
            ErrorFormat::Text => Either::Left(self.inner.call(req)),
            ErrorFormat::Json => Either::Right(self.inner.call(req).map(to_json as ToJson<_>)),
        }
    }
}
