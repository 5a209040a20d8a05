//! What the public listener serves: `GET` and `HEAD` on `/timemap/…` through the TimeMap
//! route's own layers put together once, without the router; every other request through
//! [`router`](super::router).
//!
//! Why: the TimeMap route answers nearly every request a busy aggregator gets, most of them
//! cache hits of a few microseconds, and the router's work around them (matching the path,
//! cloning and calling each route's boxed services, the method router) cost a hit more than the
//! cache lookup (BENCHMARKS.md, "Small cache hits against nginx"). The layers are the router's
//! own, in the router's order, so an answer is the same either way (a test asks both).

use super::cors::{CorsLayer, WithCors};
use super::gate::{GateLayer, Gated};
use super::log::{Logged, RequestLog};
use super::router::HeaderLimit;
use super::state::SharedState;
use super::{choices, client, errors, loops, timemap};
use crate::http::rate::Limiter;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::future::{BoxFuture, Either, FutureExt};
use http_body::Body as _;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Service, ServiceBuilder};

/// The public listener's service: [`router`](super::router), with the TimeMap route's
/// `GET` and `HEAD` taken straight to it, unless the log shows each request's trace (which the
/// router alone has).
#[derive(Clone)]
pub struct Front {
    timemaps: Option<Direct>,
    router: Router,
}

/// The TimeMap route under the same layers as in the router, outside in: the request log, CORS,
/// errors in the route's format, the header size limit; then the Memento routes' loop check, rate
/// limit and `Prefer` marks (the client scope is the route's own, [`TimeMapRoute`]).
type Direct = Logged<
    WithCors<
        errors::InRouteFormat<
            Gated<
                HeaderLimit,
                Gated<loops::RefuseLoops, tower::util::Either<Gated<Arc<Limiter>, Inner>, Inner>>,
            >,
        >,
    >,
>;
type Inner = choices::MarkPreferences<TimeMapRoute>;

/// The public service for `state`: what `app::build` serves.
pub fn front(state: SharedState) -> Front {
    // One log for both: request ids from one sequence.
    let log = RequestLog::new(state.metrics.clone());
    let timemaps = ServiceBuilder::new()
        .layer(log.clone())
        .layer(CorsLayer)
        .layer(errors::ErrorFormatLayer)
        .layer(GateLayer(HeaderLimit(state.max_header_bytes)))
        .layer(GateLayer(loops::RefuseLoops(state.clone())))
        .option_layer(state.rate_limiter.clone().map(GateLayer))
        .layer(choices::MarkPreferencesLayer)
        .service(TimeMapRoute(state.clone()));
    Front {
        timemaps: (!super::trace::tracing_on()).then_some(timemaps),
        router: super::router::logged_router(state, log),
    }
}

impl Front {
    /// Whether the TimeMap route's own stack takes `req`: a `GET` or `HEAD` under `/timemap/`
    /// with something after it (the router's `/timemap/{*rest}`, whose `rest` is never empty,
    /// with its method router's methods).
    fn is_timemap(req: &Request) -> bool {
        let under = req.uri().path().strip_prefix("/timemap/");
        (req.method() == Method::GET || req.method() == Method::HEAD)
            && under.is_some_and(|rest| !rest.is_empty())
    }
}

impl Service<Request> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future =
        Either<<Direct as Service<Request>>::Future, <Router as Service<Request>>::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Both are always ready: the router says so, and every layer here passes its inner's.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match &mut self.timemaps {
            Some(timemaps) if Front::is_timemap(&req) => Either::Left(timemaps.call(req)),
            _ => Either::Right(self.router.call(req)),
        }
    }
}

/// `timemap::timemap` as a service, run in its client's scope (the router's `ClientScopeLayer`,
/// inside the one box the answer needs), answering `HEAD` as the router does: the `GET`
/// answer's head, its `Content-Length` that of the body left out.
#[derive(Clone)]
pub struct TimeMapRoute(SharedState);

impl Service<Request> for TimeMapRoute {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let head = req.method() == Method::HEAD;
        let client = client::client_of(&req);
        client::scoped(client, timemap::timemap(State(self.0.clone()), req))
            .map(move |answer| {
                let mut response = answer.into_response();
                if head {
                    without_body(&mut response);
                }
                Ok(response)
            })
            .boxed()
    }
}

/// A `HEAD` answer: the body's exact length kept in `Content-Length`, the body left out.
fn without_body(response: &mut Response) {
    if let Some(n) = response.body().size_hint().exact() {
        if !response.headers().contains_key(header::CONTENT_LENGTH) {
            response
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
        }
    }
    *response.body_mut() = Body::empty();
}
