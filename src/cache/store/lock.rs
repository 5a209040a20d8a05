//! The one fan-out per key across replicas, kept apart from storage: a claim taken before the
//! archives are asked and given back after, so replicas sharing a tier ask them once between
//! them. A server alone ([`Alone`]) always fans out itself (its own requests already share one
//! refresh per key in the service); with `[cache] shared` the claim is Redis's
//! (the shared tier implements [`FanOutLock`] beside its Redis calls). A storage backend
//! implements the store's `Store` trait only.

use futures::future::{ready, BoxFuture, FutureExt};
use std::time::Duration;

/// What a claim on a key's fan-out found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FanOutClaim {
    /// This replica fans out; release with this token.
    Won(String),
    /// Another replica is fanning out: wait for its entry.
    Held,
    /// No replica to share with, or the claim's backend failed: fan out alone.
    Alone,
}

/// Who fans out for a key. Object-safe (boxed futures): one is chosen at start, and a claim
/// costs a network round trip or nothing, never an allocation worth saving.
pub trait FanOutLock: Send + Sync {
    /// Claims the one fan-out for `key` for at most `ttl`.
    fn claim<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, FanOutClaim>;
    /// Whether another replica still holds the claim for `key`.
    fn claimed<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool>;
    /// Gives back a claim [`FanOutLock::claim`] won with `token`.
    fn release<'a>(&'a self, key: &'a str, token: &'a str) -> BoxFuture<'a, ()>;
}

/// No replica to share a fan-out with: every claim is [`FanOutClaim::Alone`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Alone;

impl FanOutLock for Alone {
    fn claim<'a>(&'a self, _key: &'a str, _ttl: Duration) -> BoxFuture<'a, FanOutClaim> {
        ready(FanOutClaim::Alone).boxed()
    }

    fn claimed<'a>(&'a self, _key: &'a str) -> BoxFuture<'a, bool> {
        ready(false).boxed()
    }

    fn release<'a>(&'a self, _key: &'a str, _token: &'a str) -> BoxFuture<'a, ()> {
        ready(()).boxed()
    }
}
