//! `[server] rate_limit`: a token bucket per client address on the Memento routes. The bucket
//! arithmetic and the bounded table take `now` as a value (pure, unit-tested); only the
//! gate at the bottom reads a clock and the client's address.

use super::gate::Gate;
use crate::config::ServerConfig;
use crate::error::AppError;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most client addresses tracked at once (~64 bytes each, so a few MiB at most).
pub const MAX_CLIENTS: usize = 65_536;

/// How often a full table may be swept for refilled buckets: a sweep walks the whole table, so
/// a flood of new addresses must not trigger one per request.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A client's bucket: the tokens it had at `at` (time since the limiter started).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    at: Duration,
}

/// What to do with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admit,
    /// Over the limit: one token will be back after this long.
    Refuse {
        retry_after: Duration,
    },
}

/// The configured rate: `per_second` tokens flow into a bucket holding at most `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    per_second: f64,
    burst: u32,
}

impl Rate {
    /// None when the limit is off (`rate_limit = 0`) or makes no sense.
    pub fn new(per_second: f64, burst: u32) -> Option<Rate> {
        (per_second.is_finite() && per_second > 0.0 && burst > 0)
            .then_some(Rate { per_second, burst })
    }

    /// `[server] rate_limit` and `rate_burst`; None when the limit is off.
    pub fn configured(server: &ServerConfig) -> Option<Rate> {
        Rate::new(server.rate_limit, server.rate_burst)
    }

    /// The tokens `bucket` holds at `now`; a client never seen has a full bucket.
    fn level(&self, bucket: Option<Bucket>, now: Duration) -> f64 {
        match bucket {
            None => f64::from(self.burst),
            Some(b) => {
                let elapsed = now.saturating_sub(b.at).as_secs_f64();
                (b.tokens + elapsed * self.per_second).min(f64::from(self.burst))
            }
        }
    }

    /// Takes one token for a request at `now`: the decision and the bucket to keep.
    pub fn take(&self, bucket: Option<Bucket>, now: Duration) -> (Admission, Bucket) {
        let tokens = self.level(bucket, now);
        if tokens >= 1.0 {
            (
                Admission::Admit,
                Bucket {
                    tokens: tokens - 1.0,
                    at: now,
                },
            )
        } else {
            let wait = (1.0 - tokens) / self.per_second;
            // A refusal changes nothing: the bucket goes on filling from where it was.
            let kept = bucket.unwrap_or(Bucket { tokens, at: now });
            (
                Admission::Refuse {
                    retry_after: Duration::from_secs_f64(wait),
                },
                kept,
            )
        }
    }

    /// A full bucket is the same as no bucket, so forgetting it loses nothing.
    fn is_full(&self, bucket: Bucket, now: Duration) -> bool {
        self.level(Some(bucket), now) >= f64::from(self.burst)
    }
}

/// The key a client is counted under: its IPv4 address, or its IPv6 /64 (the core's, which
/// routing's per-client bound counts by too).
pub use tmproxy_core::routing::client_key;

struct Table {
    buckets: HashMap<IpAddr, Bucket>,
    last_sweep: Duration,
}

/// A table this big or bigger is split into [`SHARDS`] tables, each with its own lock, the
/// client's shard chosen by a hash keyed at random (so no one can aim their addresses at one
/// shard). One lock would be taken by every connection thread on every request, and held while
/// a sweep walks every bucket: a thread preempted while holding it stalls the others
/// (BENCHMARKS.md, "Small cache hits against nginx"). Smaller tables (tests) stay whole.
const SHARDED_FROM: usize = 16 * 1024;
const SHARDS: usize = 16;

/// The buckets of every client seen recently, at most `capacity` of them.
pub struct Limiter {
    rate: Rate,
    /// The most clients each shard tracks.
    per_shard: usize,
    shards: Box<[Mutex<Table>]>,
    pick: std::hash::RandomState,
    /// Where the limiter's time starts; tokio's clock, so tests can pause and advance it.
    start: tokio::time::Instant,
}

impl Limiter {
    pub fn new(rate: Rate, capacity: usize) -> Limiter {
        let capacity = capacity.max(1);
        let shards = if capacity >= SHARDED_FROM { SHARDS } else { 1 };
        Limiter {
            rate,
            per_shard: capacity / shards,
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Table {
                        buckets: HashMap::new(),
                        last_sweep: Duration::ZERO,
                    })
                })
                .collect(),
            pick: std::hash::RandomState::new(),
            start: tokio::time::Instant::now(),
        }
    }

    /// How many clients are tracked now.
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.shards.iter().map(|s| lock(s).buckets.len()).sum()
    }

    /// The table `key`'s bucket lives in.
    fn shard(&self, key: IpAddr) -> &Mutex<Table> {
        use std::hash::BuildHasher;
        // The count is small and fixed: the remainder keeps the index in range.
        let i = (self.pick.hash_one(key) % self.shards.len() as u64) as usize;
        &self.shards[i]
    }

    /// One request from `ip` at `now` (time since the limiter started).
    pub fn check(&self, ip: IpAddr, now: Duration) -> Admission {
        let key = client_key(ip);
        let rate = self.rate;
        let mut t = lock(self.shard(key));
        // Known before any sweep: a sweep removes only full buckets, and a client whose full
        // bucket was swept is served exactly as if it had been kept.
        let known = t.buckets.contains_key(&key);
        let since_sweep = now.saturating_sub(t.last_sweep);
        let crowded = !known && t.buckets.len() >= self.per_shard;
        if since_sweep >= SWEEP_EVERY && (crowded || since_sweep >= SWEEP_EVERY * 60) {
            t.buckets.retain(|_, b| !rate.is_full(*b, now));
            t.last_sweep = now;
        }
        if !known && t.buckets.len() >= self.per_shard {
            // More clients busy at once than we track: let the newcomer through untracked
            // rather than refuse addresses that have done nothing wrong.
            return Admission::Admit;
        }
        // A newcomer starts full, which is what `take` assumes of a bucket it has never seen.
        let bucket = t.buckets.entry(key).or_insert(Bucket {
            tokens: f64::from(rate.burst),
            at: now,
        });
        let (admission, kept) = rate.take(Some(*bucket), now);
        *bucket = kept;
        admission
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    // A poisoned table holds plain numbers that are still valid: take it over.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

/// The limit on the routes: requests without a known client (a router driven by `oneshot`) pass;
/// others take a token from their client's bucket ([`ClientAddr`](super::client::ClientAddr): behind a trusted balancer,
/// the address it forwards) or get a 429 with `Retry-After`. No OPTIONS
/// gets here: the CORS layer outside answers them all.
impl Gate for Arc<Limiter> {
    fn refuse(&self, req: &Request) -> Option<Response> {
        let client = super::client::client_of(req)?;
        match self.check(client, self.now()) {
            Admission::Admit => None,
            Admission::Refuse { retry_after } => Some(
                AppError::RateLimited {
                    // Whole seconds, rounded up and at least 1: retrying sooner is refused.
                    retry_after: retry_after.as_secs_f64().ceil().max(1.0) as u64,
                    rate: self.rate.per_second,
                    burst: self.rate.burst,
                }
                .into_response(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn off_when_zero_or_nonsense() {
        assert!(Rate::new(0.0, 10).is_none());
        assert!(Rate::new(-1.0, 10).is_none());
        assert!(Rate::new(f64::NAN, 10).is_none());
        assert!(Rate::new(1.0, 0).is_none());
        assert!(Rate::new(0.5, 1).is_some());
    }

    #[test]
    fn a_burst_is_admitted_then_refused_until_a_token_is_back() {
        let rate = Rate::new(2.0, 3).expect("on");
        let mut b = None;
        for _ in 0..3 {
            let (a, next) = rate.take(b, secs(10.0));
            assert_eq!(a, Admission::Admit);
            b = Some(next);
        }
        let (a, next) = rate.take(b, secs(10.0));
        assert_eq!(
            a,
            Admission::Refuse {
                retry_after: secs(0.5)
            }
        );
        // A quarter second later half a token is back: still refused, for the other half.
        let (a, next) = rate.take(Some(next), secs(10.25));
        assert_eq!(
            a,
            Admission::Refuse {
                retry_after: secs(0.25)
            }
        );
        let (a, _) = rate.take(Some(next), secs(10.5));
        assert_eq!(a, Admission::Admit);
    }

    #[test]
    fn refused_requests_do_not_cost_tokens() {
        let rate = Rate::new(1.0, 1).expect("on");
        let (_, b) = rate.take(None, secs(0.0));
        // Hammering while empty does not push the next admission further away.
        let mut b = b;
        for i in 1..10 {
            let (a, next) = rate.take(Some(b), secs(f64::from(i) * 0.1));
            assert!(matches!(a, Admission::Refuse { .. }));
            b = next;
        }
        assert_eq!(rate.take(Some(b), secs(1.0)).0, Admission::Admit);
    }

    #[test]
    fn a_bucket_never_holds_more_than_the_burst() {
        let rate = Rate::new(100.0, 2).expect("on");
        let (_, b) = rate.take(None, secs(0.0));
        let (_, b) = rate.take(Some(b), secs(3600.0));
        let (_, b) = rate.take(Some(b), secs(3600.0));
        assert!(matches!(
            rate.take(Some(b), secs(3600.0)).0,
            Admission::Refuse { .. }
        ));
    }

    #[test]
    fn clients_have_their_own_buckets() {
        let l = Limiter::new(Rate::new(1.0, 1).expect("on"), 10);
        assert_eq!(l.check(ip("10.0.0.1"), secs(0.0)), Admission::Admit);
        assert!(matches!(
            l.check(ip("10.0.0.1"), secs(0.0)),
            Admission::Refuse { .. }
        ));
        assert_eq!(l.check(ip("10.0.0.2"), secs(0.0)), Admission::Admit);
    }

    #[test]
    fn ipv6_clients_are_counted_per_64_and_mapped_v4_as_v4() {
        let l = Limiter::new(Rate::new(1.0, 1).expect("on"), 10);
        assert_eq!(l.check(ip("2001:db8:1:2::1"), secs(0.0)), Admission::Admit);
        assert!(matches!(
            l.check(ip("2001:db8:1:2:ffff::9"), secs(0.0)),
            Admission::Refuse { .. }
        ));
        assert_eq!(l.check(ip("2001:db8:1:3::1"), secs(0.0)), Admission::Admit);
        assert_eq!(l.check(ip("192.0.2.7"), secs(0.0)), Admission::Admit);
        assert!(matches!(
            l.check(ip("::ffff:192.0.2.7"), secs(0.0)),
            Admission::Refuse { .. }
        ));
    }

    #[test]
    fn a_big_table_is_split_and_stays_bounded_with_every_client_limited() {
        let l = Limiter::new(Rate::new(1.0, 1).expect("on"), SHARDED_FROM);
        assert_eq!(l.shards.len(), SHARDS);
        let clients: Vec<IpAddr> = (0..SHARDED_FROM as u32 + 4096)
            .map(|i| IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i)))
            .collect();
        for c in &clients {
            assert_eq!(l.check(*c, secs(0.0)), Admission::Admit);
        }
        assert!(l.tracked() <= SHARDED_FROM, "{}", l.tracked());
        assert!(l.tracked() >= SHARDED_FROM - SHARDS * 64, "{}", l.tracked());
        // The first client of all was tracked wherever its shard is: its second request waits.
        assert!(matches!(
            l.check(clients[0], secs(0.0)),
            Admission::Refuse { .. }
        ));
    }

    #[test]
    fn the_table_is_bounded_and_forgets_refilled_buckets() {
        let l = Limiter::new(Rate::new(1.0, 1).expect("on"), 3);
        for i in 1..=3 {
            l.check(ip(&format!("10.0.0.{i}")), secs(0.0));
        }
        assert_eq!(l.tracked(), 3);
        // Full of busy buckets: a newcomer passes untracked, the table does not grow.
        assert_eq!(l.check(ip("10.0.0.9"), secs(0.5)), Admission::Admit);
        assert_eq!(l.tracked(), 3);
        // Two seconds on every bucket has refilled: the sweep makes room.
        assert_eq!(l.check(ip("10.0.0.9"), secs(2.0)), Admission::Admit);
        assert_eq!(l.tracked(), 1);
        assert!(matches!(
            l.check(ip("10.0.0.9"), secs(2.0)),
            Admission::Refuse { .. }
        ));
    }
}
