//! What the cache needs from outside itself to fill an entry, as its own small traits: the
//! archives asked within a deadline, each answer published as it settles ([`Archives`]: the
//! upstream's fan-out), and which archives to ask and what an answer teaches ([`Router`]:
//! routing's profiles). Both are given at construction (`app.rs`), so the cache calls nothing
//! above or beside it; what the two sides share is pure and lives in the core
//! ([`Ask`], [`Settled`]), but for the channel a fan-out publishes to ([`Progress`]).

use crate::timemap::answer::Fetch;
use crate::uri_r::UriR;
use futures::future::BoxFuture;
use std::net::IpAddr;
use std::time::Duration;
use tmproxy_core::routing::Decision;
use tokio::sync::watch;
use tokio::time::Instant;

pub use tmproxy_core::fan_out::{Ask, Prior, Settled};

/// Where a fan-out publishes its [`Settled`] answers.
pub type Progress = watch::Sender<Settled>;

/// A fresh [`Progress`], nothing begun.
pub fn progress() -> Progress {
    watch::Sender::new(Settled::default())
}

/// The archives, as the cache asks them.
pub trait Archives: Send + Sync + 'static {
    /// The configured whole-request deadline (the most a client's own can ask for).
    fn deadline(&self) -> Duration;
    /// Every enabled archive's id, in configured order (a fan-out's order).
    fn ids(&self) -> Vec<&str>;
    /// Asks the archives `ask` says for `uri_r` and keeps what arrives within `deadline`
    /// (capped at the configured one) counted from `arrived`, publishing each archive's
    /// contribution to `progress` as it settles. Never fails: each archive's failure is in its
    /// answer. With `prior` (a refresh), an archive may be asked only for what is new.
    fn fetch<'a>(
        &'a self,
        uri_r: &'a UriR,
        deadline: Duration,
        arrived: Instant,
        ask: Ask<'a>,
        prior: Option<Prior<'a>>,
        progress: &'a Progress,
    ) -> BoxFuture<'a, Fetch>;
    /// How many times each archive has been asked since start, by id, in configured order.
    fn fetch_counts(&self) -> Vec<(String, u64)>;
}

/// Which archives a fan-out asks, and what it learns from their answers.
pub trait Router: Send + Sync + 'static {
    /// Routes one miss of `uri_r` over the archives `ids` (in the fan-out's order).
    fn decide(&self, ids: &[&str], uri_r: &UriR) -> Decision;
    /// Learns a fan-out's fresh answers for `uri_r`, before any merge, as much as `client` may
    /// teach (None: the server's own fan-out).
    fn observe(&self, fetch: &Fetch, uri_r: &UriR, client: Option<IpAddr>);
}
