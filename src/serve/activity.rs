//! One connection's requests in flight, and the decision of when to close it: no first request
//! within `header_read_timeout`, or no request in flight for `idle_timeout`.
//!
//! hyper 1 times out only an HTTP/1 request head; an HTTP/2 connection that sent its preface
//! and then nothing, or that stays open between streams, is never closed by hyper itself. So
//! each connection counts its requests here (the service marks a request's start, and its
//! response body, when dropped, its end) and a watchdog beside it asks [`decide`].
//!
//! The watchdog is lazy: it sleeps towards a deadline and, woken, asks again. Requests only
//! ever move a deadline later, except the first one (an idle deadline may fall before the
//! first-request one), so only the end of a request the watchdog has not seen wakes it: a
//! kept-alive connection's requests cost it nothing (BENCHMARKS.md, "Small cache hits against nginx"),
//! and it is polled only when one of the things it waits for woke it ([`super::watch`]).

use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The bounds a connection is held to, measured from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The first request must have arrived (head parsed, for HTTP/2 its HEADERS) by then.
    pub first_request: Duration,
    /// No request in flight for this long: the connection is told to close (GOAWAY in HTTP/2).
    pub idle: Duration,
    /// Once told to close, and with no request in flight, it is dropped after this even if the
    /// peer never finishes the close: hyper's HTTP/2 graceful close waits for the peer's PING
    /// answer, which a silent peer never sends.
    pub close_grace: Duration,
}

/// What the connection's requests look like at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub in_flight: usize,
    /// Requests begun on the connection so far.
    pub requests: u64,
    /// Since the connection's start: when the last request ended (zero before any).
    pub idle_since: Duration,
}

/// Whether the connection has been told to close, and when (since its start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Open,
    Closing { since: Duration },
}

/// What the watchdog does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchdogPlan {
    /// A request is in flight: nothing can be due before this time since the connection's
    /// start (the request ends no sooner than now, and every deadline runs from its end); look
    /// again then.
    LookAgain(Duration),
    /// Unless a request begins first, take `Step` at this time since the connection's start.
    At(Duration, Step),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Start a graceful close: HTTP/1 closes once idle, HTTP/2 sends GOAWAY.
    GoAway,
    /// Drop the connection: nothing is in flight, so no answer is lost.
    Drop,
}

/// When a connection in this state, `elapsed` since its start, is to be closed, and how.
pub fn decide(now: Snapshot, elapsed: Duration, phase: Phase, limits: &Limits) -> WatchdogPlan {
    if now.in_flight > 0 {
        return WatchdogPlan::LookAgain(match phase {
            Phase::Open => elapsed + limits.idle,
            Phase::Closing { .. } => elapsed + limits.close_grace,
        });
    }
    match phase {
        Phase::Closing { since } => {
            WatchdogPlan::At(since.max(now.idle_since) + limits.close_grace, Step::Drop)
        }
        // Nothing asked yet: a client that cannot send one request head in time is not served.
        Phase::Open if now.requests == 0 => WatchdogPlan::At(limits.first_request, Step::Drop),
        Phase::Open => WatchdogPlan::At(now.idle_since + limits.idle, Step::GoAway),
    }
}

/// An idle connection, ordered so that the first to close comes first: one that never asked
/// anything before any that did, then the longest idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Idle {
    pub asked: bool,
    pub since: Instant,
}

/// The counts one connection's service and its watchdog share.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    in_flight: AtomicUsize,
    requests: AtomicU64,
    idle_since_ms: AtomicU64,
    /// Until the watchdog has seen a request: it may sleep towards the first-request deadline,
    /// and the idle one may come sooner.
    unseen: AtomicBool,
    /// Told when the last request in flight ends while `unseen`.
    changed: Notify,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            started: Instant::now(),
            in_flight: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            idle_since_ms: AtomicU64::new(0),
            unseen: AtomicBool::new(true),
            changed: Notify::new(),
        })
    }

    /// A request begins; it ends when the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        // The watchdog is not woken: whenever its deadline comes it sees the request in flight
        // and looks again later.
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    /// The counts now, as the watchdog reads them: once it has read a request, later ones no
    /// longer wake it.
    pub fn snapshot(&self) -> Snapshot {
        let now = self.peek();
        if now.requests > 0 {
            self.unseen.store(false, Ordering::SeqCst);
        }
        now
    }

    fn peek(&self) -> Snapshot {
        Snapshot {
            in_flight: self.in_flight.load(Ordering::SeqCst),
            requests: self.requests.load(Ordering::SeqCst),
            idle_since: Duration::from_millis(self.idle_since_ms.load(Ordering::SeqCst)),
        }
    }

    /// With no request in flight: whether the connection ever asked anything, and since when
    /// it has been idle (its start, when it never asked). What picks the connection to close
    /// when a new one needs its place ([`super::connections`]).
    pub fn idle(&self) -> Option<Idle> {
        let now = self.peek();
        (now.in_flight == 0).then(|| Idle {
            asked: now.requests > 0,
            since: self.started + now.idle_since,
        })
    }

    /// Time since the connection's start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The instant `at` (since the connection's start) falls on.
    pub fn instant(&self, at: Duration) -> Instant {
        self.started + at
    }

    /// Resolves once the last request in flight has ended while the watchdog had seen none
    /// (perhaps before this was called: [`Notify`] keeps the wake-up, so the caller re-reads
    /// the counts and never misses one).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// A request in flight on its connection; dropping it ends the request.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        // Written before the count drops, so whoever sees no request in flight sees this time.
        let ms = u64::try_from(a.elapsed().as_millis()).unwrap_or(u64::MAX);
        a.idle_since_ms.store(ms, Ordering::SeqCst);
        // `unseen` is read after the count drops: a watchdog that cleared it has read the
        // request, so its deadline is no later than the one this end sets.
        if a.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 && a.unseen.load(Ordering::SeqCst) {
            a.changed.notify_one();
        }
    }
}

/// A response body that keeps its request in flight until hyper has sent it all (or the client
/// went away) and drops it: a long answer to a slow reader is not an idle connection.
pub struct TrackedBody {
    inner: axum::body::Body,
    _in_flight: InFlight,
}

impl TrackedBody {
    pub fn new(inner: axum::body::Body, in_flight: InFlight) -> TrackedBody {
        TrackedBody {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        first_request: Duration::from_secs(30),
        idle: Duration::from_secs(60),
        close_grace: Duration::from_secs(2),
    };

    fn at(in_flight: usize, requests: u64, idle_since: u64) -> Snapshot {
        Snapshot {
            in_flight,
            requests,
            idle_since: Duration::from_secs(idle_since),
        }
    }

    #[test]
    fn a_connection_that_never_asks_is_dropped_at_the_first_request_deadline() {
        assert_eq!(
            decide(at(0, 0, 0), Duration::ZERO, Phase::Open, &LIMITS),
            WatchdogPlan::At(Duration::from_secs(30), Step::Drop)
        );
    }

    #[test]
    fn an_idle_connection_is_told_to_close_idle_time_after_its_last_request() {
        assert_eq!(
            decide(
                at(0, 3, 100),
                Duration::from_secs(120),
                Phase::Open,
                &LIMITS
            ),
            WatchdogPlan::At(Duration::from_secs(160), Step::GoAway)
        );
    }

    #[test]
    fn a_request_in_flight_holds_the_connection_whatever_the_clock() {
        for phase in [
            Phase::Open,
            Phase::Closing {
                since: Duration::from_secs(1),
            },
        ] {
            // Nothing can be due before the request ends: a look again an idle time (or, when
            // closing, a grace) from now, however late it is.
            let again = match phase {
                Phase::Open => LIMITS.idle,
                Phase::Closing { .. } => LIMITS.close_grace,
            };
            for now in [0, 31, 1000].map(Duration::from_secs) {
                assert_eq!(
                    decide(at(1, 1, 0), now, phase, &LIMITS),
                    WatchdogPlan::LookAgain(now + again)
                );
                // The first request arrived, still running: not cut at the first-request deadline.
                assert_eq!(
                    decide(at(2, 2, 0), now, phase, &LIMITS),
                    WatchdogPlan::LookAgain(now + again)
                );
            }
        }
    }

    #[test]
    fn a_closing_connection_is_dropped_a_grace_after_it_fell_idle() {
        let closing = Phase::Closing {
            since: Duration::from_secs(70),
        };
        assert_eq!(
            decide(at(0, 1, 10), Duration::from_secs(71), closing, &LIMITS),
            WatchdogPlan::At(Duration::from_secs(72), Step::Drop)
        );
        // Its last request ended after the close began: the grace counts from then.
        assert_eq!(
            decide(at(0, 2, 80), Duration::from_secs(81), closing, &LIMITS),
            WatchdogPlan::At(Duration::from_secs(82), Step::Drop)
        );
    }

    #[tokio::test]
    async fn the_guard_counts_requests_and_wakes_the_watchdog_when_an_unseen_one_ends() {
        let a = Activity::new();
        let first = a.begin();
        let second = a.begin();
        assert_eq!(a.peek().in_flight, 2);
        assert_eq!(a.peek().requests, 2);
        drop(first);
        assert_eq!(a.peek().in_flight, 1);
        drop(second);
        assert_eq!(a.peek().in_flight, 0);
        // The wake-up was kept although no one waited yet.
        tokio::time::timeout(Duration::from_secs(5), a.changed())
            .await
            .expect("woken");
    }

    #[tokio::test]
    async fn once_the_watchdog_has_read_a_request_later_ends_do_not_wake_it() {
        let a = Activity::new();
        drop(a.begin());
        tokio::time::timeout(Duration::from_secs(5), a.changed())
            .await
            .expect("the first end wakes it");
        assert_eq!(a.snapshot().requests, 1);
        for _ in 0..3 {
            drop(a.begin());
        }
        // A wake-up would be kept and resolve at once; none is, so this waits the whole 200 ms.
        let woken = tokio::time::timeout(Duration::from_millis(200), a.changed()).await;
        assert!(
            woken.is_err(),
            "a seen connection's requests woke the watchdog"
        );
        assert_eq!(a.peek().requests, 4);
    }

    #[tokio::test]
    async fn a_request_between_the_watchdogs_read_and_its_sleep_still_wakes_it() {
        let a = Activity::new();
        // The watchdog reads no request yet, then one begins and ends before it sleeps.
        assert_eq!(a.snapshot().requests, 0);
        drop(a.begin());
        tokio::time::timeout(Duration::from_secs(5), a.changed())
            .await
            .expect("woken");
    }
}
