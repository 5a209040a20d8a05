//! The client a request is made for, beyond the rate limit: routing credits what a fan-out
//! teaches to the client whose request started it. [`client_of`] reads the one [`ClientAddr`]
//! the connection put on the request; [`ClientScopeLayer`] makes it readable by the Memento
//! routes ([`current`]) without threading it through every handler.

use super::address::ClientAddr;
use axum::extract::Request;
use std::net::IpAddr;
use std::task::{Context, Poll};
use tokio::task::futures::TaskLocalFuture;
use tower::{Layer, Service};

tokio::task_local! {
    static CLIENT: Option<IpAddr>;
}

/// The address a request comes from: its [`ClientAddr`] (the serve loop puts one on every
/// request). None for a request with no peer (a router driven by `oneshot`).
pub fn client_of(req: &Request) -> Option<IpAddr> {
    req.extensions().get::<ClientAddr>().map(|c| c.0)
}

/// The client of the request being served on this task, when it runs under
/// [`ClientScopeLayer`].
pub fn current() -> Option<IpAddr> {
    CLIENT.try_with(|c| *c).ok().flatten()
}

/// Runs each request's route with its [`client_of`] readable through [`current`]: a task-local
/// scope around the route's future, no allocation.
#[derive(Clone, Copy)]
pub struct ClientScopeLayer;

impl<S> Layer<S> for ClientScopeLayer {
    type Service = ClientScope<S>;

    fn layer(&self, inner: S) -> ClientScope<S> {
        ClientScope { inner }
    }
}

/// A service run under [`ClientScopeLayer`].
#[derive(Clone)]
pub struct ClientScope<S> {
    inner: S,
}

impl<S: Service<Request>> Service<Request> for ClientScope<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = TaskLocalFuture<Option<IpAddr>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let client = client_of(&req);
        CLIENT.scope(client, self.inner.call(req))
    }
}

/// `answer`, the answer to a request from `client` ([`client_of`]), run with `client` readable
/// through [`current`]: what [`ClientScopeLayer`] does, for a route that boxes its answer anyway
/// (the scope is not `Unpin`).
pub fn scoped<F: std::future::Future>(
    client: Option<IpAddr>,
    answer: F,
) -> TaskLocalFuture<Option<IpAddr>, F> {
    CLIENT.scope(client, answer)
}
