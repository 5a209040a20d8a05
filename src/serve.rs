//! Serving a router on a listener: hyper's HTTP/1 and HTTP/2 connections, each held to
//! `header_read_timeout` and `idle_timeout` by a watchdog, at most `max_connections` open, each
//! on one connection thread from accept to close, and a graceful stop.

mod activity;
pub mod connections;
pub mod descriptors;
mod early;
pub mod threads;
mod watch;

use crate::config::Config;
use crate::http::client::TrustedProxies;
use crate::http::AppState;
use crate::metrics::connections::Connections;
use activity::{decide, Activity, Limits, Phase, Step, TrackedBody, WatchdogPlan};
use axum::extract::Request;
use axum::response::Response;
use connections::{ListenerConnections, OpenConnection};
use futures::FutureExt;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use threads::ConnectionThreads;
use tokio::net::{TcpListener, TcpStream};
use tower::Service;
use watch::First;

/// HTTP/2 streams one connection may have open at once; the peer is told in its SETTINGS and a
/// stream past it is refused (RST_STREAM REFUSED_STREAM). RFC 9113 advises no less than 100,
/// which is what browsers expect; a client needing more opens another connection, which
/// `max_connections` counts.
pub const H2_MAX_STREAMS: u32 = 100;
/// How often an HTTP/2 connection is pinged, busy or idle, and how long the answer may take
/// before the peer is deemed dead and the connection closed: a peer that vanished with a slow
/// request in flight (which `idle_timeout` leaves alone) is noticed within a minute.
pub const H2_PING_INTERVAL: Duration = Duration::from_secs(20);
pub const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);
/// After a graceful close began (idle, or the server stopping) and nothing is in flight: how
/// long the peer has to finish it before the connection is dropped.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What a listener serves: an axum `Router`, or the public listener's `http::Front`.
pub trait Server:
    Service<Request, Response = Response, Error = Infallible, Future: Send + Unpin>
    + Clone
    + Send
    + Sync
    + Unpin
    + 'static
{
}

impl<S> Server for S where
    S: Service<Request, Response = Response, Error = Infallible, Future: Send + Unpin>
        + Clone
        + Send
        + Sync
        + Unpin
        + 'static
{
}

/// How connections are served: what `axum::serve` leaves at hyper's defaults.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// A client must send its first request head (HTTP/2: the preface and a first HEADERS)
    /// within this, or the connection is dropped. hyper also holds each next HTTP/1 head on a
    /// kept-alive connection to it, timed from the end of the previous answer.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/2: GOAWAY first).
    pub idle_timeout: Duration,
    pub h2_ping_interval: Duration,
    pub h2_ping_timeout: Duration,
    /// `[server] trusted_proxies`: whose forwarding headers name the client each request
    /// carries ([`ClientAddr`](crate::http::client::ClientAddr)).
    pub trusted_proxies: Arc<TrustedProxies>,
    /// The open and refused counts (and caps) of the listeners, shared with `/metrics`.
    pub connections: Arc<Connections>,
    /// Where the public listener's connections are served: these threads, each with its own
    /// runtime (what `tmproxy serve` does), or when None the runtime that accepts them.
    pub threads: Option<Arc<ConnectionThreads>>,
}

impl ServeOptions {
    /// The options `config` names, counting connections into `state`'s counts.
    pub fn from_config(config: &Config, state: &AppState) -> ServeOptions {
        ServeOptions {
            connections: state.connections.clone(),
            ..ServeOptions::unshared(config)
        }
    }

    /// The options `config` names, with counts of their own that no `/metrics` shows.
    fn unshared(config: &Config) -> ServeOptions {
        ServeOptions {
            header_read_timeout: config.server.header_read_timeout,
            idle_timeout: config.server.idle_timeout,
            h2_ping_interval: H2_PING_INTERVAL,
            h2_ping_timeout: H2_PING_TIMEOUT,
            trusted_proxies: Arc::new(TrustedProxies::new(&config.server.trusted_proxies)),
            connections: Arc::new(Connections::new(config.server.max_connections)),
            threads: None,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            first_request: self.header_read_timeout,
            idle: self.idle_timeout,
            close_grace: CLOSE_GRACE,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, with the default configuration's
/// options (and connection counts of its own); requests in flight then finish.
pub async fn serve<S: Server>(
    listener: TcpListener,
    router: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let options = ServeOptions::unshared(&Config::default());
    serve_with(listener, router, shutdown, options).await
}

/// Serves the public router and, when given, the admin router on its own listener, until
/// `shutdown` resolves; both then finish their requests in flight. If one listener fails the
/// other is stopped too (a half-up server is harder to notice than a stopped one).
pub async fn serve_both<S: Server, A: Server>(
    public: (TcpListener, S),
    admin: Option<(TcpListener, A)>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    let shutdown = shutdown.boxed().shared();
    let Some((admin_listener, admin_router)) = admin else {
        return serve_with(public.0, public.1, shutdown, options).await;
    };
    let admin_counts = ListenerConnections::counting_into(options.connections.admin.clone());
    // The admin listener's few connections stay on the accepting runtime.
    let admin_options = ServeOptions {
        threads: None,
        ..options.clone()
    };
    let admin = serve_listener(
        admin_listener,
        admin_router,
        shutdown.clone(),
        admin_options,
        admin_counts,
    );
    let public = serve_with(public.0, public.1, shutdown, options);
    tokio::try_join!(public, admin).map(|_| ())
}

/// [`serve`] on the public listener with these options: an accept loop over hyper's auto
/// (HTTP/1 and HTTP/2) connection builder, and a graceful shutdown that stops accepting, lets
/// requests in flight finish and closes idle connections.
pub async fn serve_with<S: Server>(
    listener: TcpListener,
    router: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    let counts = ListenerConnections::counting_into(options.connections.public.clone());
    serve_listener(listener, router, shutdown, options, counts).await
}

async fn serve_listener<S: Server>(
    listener: TcpListener,
    router: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
    counts: Arc<ListenerConnections>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioTimer};
    use hyper_util::server::conn::auto::Builder;

    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(options.h2_ping_interval)
        .keep_alive_timeout(options.h2_ping_timeout)
        .max_concurrent_streams(H2_MAX_STREAMS);
    let builder = Arc::new(builder);
    // Tells the connections that the server is stopping. Each connection holds a child token of
    // its own: a watch receiver, polled on every request, took a lock shared by every
    // connection thread (BENCHMARKS.md, "Small cache hits against nginx").
    let stopping = tokio_util::sync::CancellationToken::new();
    // Every connection task holds a sender: once all are gone, every connection has ended.
    let (running, mut all_ended) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut backing_off = false;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    backing_off = back_off(&e, &counts, backing_off).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if std::mem::take(&mut backing_off) {
            tracing::info!("accepting connections again");
        }
        // Past the cap the oldest idle connection makes room; with none idle the newcomer is
        // accepted and closed at once: left in the backlog it would still hold a kernel slot
        // and keep its client waiting for nothing.
        // Past the cap with MAX_CLOSING connections still going: wait for them (briefly; the
        // connection threads drop them at once) rather than refuse or go further over the cap.
        for _ in 0..ADMIT_WAIT_STEPS {
            if !counts.full_and_closing() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let activity = Activity::new();
        let Some(open) = counts.admit(activity.clone()) else {
            tracing::debug!(%peer, "max_connections open, none idle: connection refused");
            drop(stream);
            continue;
        };
        let (router, builder, stopping) = (router.clone(), builder.clone(), stopping.child_token());
        // The connection needs no handle on the threads: only this loop hands them work.
        let this = ServeOptions {
            threads: None,
            ..options.clone()
        };
        let held = Held {
            open,
            activity,
            _running: running.clone(),
        };
        let serve = move |stream| connection(stream, peer, router, builder, this, stopping, held);
        match &options.threads {
            Some(threads) => threads.hand(stream, serve),
            None => {
                tokio::spawn(serve(stream));
            }
        }
    }
    stopping.cancel();
    drop(listener);
    drop(running);
    let _ = all_ended.recv().await;
    Ok(())
}

/// At most this many 1 ms waits for connections told to close before a newcomer is refused.
const ADMIT_WAIT_STEPS: u32 = 100;

/// How long accepting pauses after running out of descriptors: long enough not to spin on a
/// backlog that cannot be taken, short enough that a descriptor freed is used at once.
const OUT_OF_DESCRIPTORS_PAUSE: Duration = Duration::from_millis(20);

/// After a failed accept: out of descriptors, the oldest idle connection is told to close (its
/// descriptor serves the next one) and accepting pauses briefly; any other error pauses
/// longer. Logged once per run of failures, not per failure; whether a run is on. Only this
/// loop waits: the connections are served on their own threads meanwhile.
async fn back_off(e: &std::io::Error, counts: &ListenerConnections, backing_off: bool) -> bool {
    if descriptors::out_of_descriptors(e) {
        let closing = counts.close_oldest_idle();
        if !backing_off {
            tracing::warn!(error = %e, open = counts.open(), closing_idle = closing, "out of file descriptors: closing the oldest idle connection, accepting again in 20ms");
        }
        tokio::time::sleep(OUT_OF_DESCRIPTORS_PAUSE).await;
    } else {
        if !backing_off {
            tracing::warn!(error = %e, "cannot accept a connection");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

/// What a connection holds until it ends: its place under the cap, its request counts (which
/// the cap's choice of an idle connection reads), and the server's wait for every connection.
struct Held {
    open: OpenConnection,
    activity: Arc<Activity>,
    _running: tokio::sync::mpsc::Sender<()>,
}

/// `router`'s answer to `req`: asked in place when it is ready, as every service served here
/// always is. A copy per request (what `oneshot` needs) would copy every shared handle the
/// service holds, and count each up and down again from every connection thread: a cache
/// hit's most contended writes (BENCHMARKS.md, "Small cache hits against nginx").
fn ask<S: Server>(
    router: &std::cell::RefCell<S>,
    req: Request,
) -> futures::future::Either<S::Future, tower::util::Oneshot<S, Request>> {
    use futures::future::Either;
    use std::task::{Context, Poll, Waker};
    use tower::ServiceExt;
    let mut router = router.borrow_mut();
    match router.poll_ready(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(())) => Either::Left(router.call(req)),
        // Not ready: a copy of its own waits until it is.
        _ => Either::Right(router.clone().oneshot(req)),
    }
}

/// Serves one connection until it ends, is dropped by its watchdog, is told to make room for a
/// new one, or the server stops.
async fn connection<S: Server>(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    router: S,
    builder: Arc<hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>>,
    options: ServeOptions,
    stopping: tokio_util::sync::CancellationToken,
    held: Held,
) {
    use hyper_util::rt::TokioIo;

    let activity = held.activity.clone();
    let limits = options.limits();
    let trusted = options.trusted_proxies.clone();
    let requests = activity.clone();
    // This connection's own copy, asked in place: hyper calls it from this connection's task
    // alone, one request at a time.
    let router = std::cell::RefCell::new(router);
    let service =
        hyper::service::service_fn(move |req: axum::http::Request<hyper::body::Incoming>| {
            let in_flight = requests.begin();
            let mut req = req.map(axum::body::Body::new);
            // Every request, whatever reads it: the rate limit, the request log, routing's
            // per-client bound (`http::client::client_of`).
            let client = trusted.client(peer.ip(), req.headers());
            req.extensions_mut().insert(client);
            let answer = early::poll_now(ask(&router, req));
            async move {
                let response = answer.await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| TrackedBody::new(body, in_flight)),
                )
            }
        });
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    let watch = watch::Watch::new();
    let mut phase = Phase::Open;
    loop {
        let watchdog = watchdog(&activity, &limits, phase, &stopping, &held.open);
        match watch.first(conn.as_mut(), watchdog).await {
            First::Connection(ended) => {
                if let Err(e) = ended {
                    // A client that went away, timed out or sent garbage: nothing to act on.
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            First::Watchdog(Step::Drop) => return,
            First::Watchdog(Step::GoAway) => {
                conn.as_mut().graceful_shutdown();
                phase = Phase::Closing {
                    since: activity.elapsed(),
                };
            }
        }
    }
}

/// What to do to a connection in `phase`, once it is due: a deadline [`decide`] gives has
/// passed, the server is stopping, or the connection is told to close to make room.
async fn watchdog(
    activity: &Activity,
    limits: &Limits,
    phase: Phase,
    stopping: &tokio_util::sync::CancellationToken,
    open: &OpenConnection,
) -> Step {
    loop {
        let now = activity.elapsed();
        let at = match decide(activity.snapshot(), now, phase, limits) {
            WatchdogPlan::At(at, step) if at <= now => return step,
            WatchdogPlan::At(at, _) | WatchdogPlan::LookAgain(at) => at,
        };
        // Woken at that time, or when a request the watchdog has not seen ends (which may set
        // an idle deadline sooner than the first-request one slept towards).
        tokio::select! {
            () = tokio::time::sleep_until(activity.instant(at)) => {},
            () = activity.changed() => {},
            () = stopping.cancelled(), if phase == Phase::Open => return Step::GoAway,
            // Chosen as idle to make room: nothing in flight, nothing to lose by dropping it
            // now (its descriptor is what the newcomer needs); a request begun since then is
            // let finish, as when the server stops.
            () = open.told_to_close(), if phase == Phase::Open => {
                return match activity.snapshot().in_flight {
                    0 => Step::Drop,
                    _ => Step::GoAway,
                };
            }
        }
    }
}
