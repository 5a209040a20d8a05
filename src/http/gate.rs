//! Checks that may answer a request before any route sees it (the header size limit, the rate
//! limit), as one small tower layer.
//!
//! Hand-written rather than `axum::middleware::from_fn`: that clones the inner service and boxes
//! a future and a `Next` for every request, and the header check runs on every request, cache
//! hits included. Here a passed request costs the check and nothing else.

use axum::extract::Request;
use axum::response::Response;
use futures::future::Either;
use std::future::{ready, Ready};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// A check on a request: `Some(answer)` refuses it with that answer, `None` lets it through.
pub trait Gate: Clone + Send + Sync + 'static {
    fn refuse(&self, req: &Request) -> Option<Response>;
}

/// Puts a [`Gate`] in front of a service (`Router::layer` / `route_layer`).
#[derive(Clone)]
pub struct GateLayer<G>(pub G);

impl<G: Gate, S> Layer<S> for GateLayer<G> {
    type Service = Gated<G, S>;

    fn layer(&self, inner: S) -> Self::Service {
        Gated {
            gate: self.0.clone(),
            inner,
        }
    }
}

/// A service behind a [`Gate`].
#[derive(Clone)]
pub struct Gated<G, S> {
    gate: G,
    inner: S,
}

impl<G, S> Service<Request> for Gated<G, S>
where
    G: Gate,
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match self.gate.refuse(&req) {
            Some(answer) => Either::Left(ready(Ok(answer))),
            None => Either::Right(self.inner.call(req)),
        }
    }
}
