//! `memsim route`: replays a stream of misses through the server's own routing code
//! (`tmproxy_core::routing::{decide, Profiles}`) under each routing setting and measures the
//! archive requests avoided against the mementos and URI-Rs still found.
//!
//! A [`Stream`] is what is replayed: the archives, the URI-Rs (with their routing keys, computed
//! once) and the requests in order, each with what every archive holds for its URI-R at that
//! moment. It comes from a SYNTHETIC holdings model ([`model`]) or a trace file ([`trace`]);
//! [`sim`] replays it, [`report`] writes the CSV, the summary and the plot.

pub mod command;
#[cfg(feature = "e2e")]
pub mod e2e;
pub mod e2e_command;
pub mod model;
pub mod report;
pub mod sim;
pub mod trace;

use std::net::IpAddr;
use tmproxy_core::routing::UriKeys;

/// One archive of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Archive {
    pub id: String,
    /// Never skipped (`--always`; the Internet Archive is always asked by the core anyway).
    pub always: bool,
    /// The median of its response time, in ms: SYNTHETIC presets only (a trace has none).
    pub latency_ms: Option<u32>,
}

/// One URI-R of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Uri {
    pub uri_r: String,
    /// Its routing keys, as the server computes them ([`UriKeys::of_uri`]).
    pub keys: UriKeys,
}

/// What the archives hold for a URI-R: `(archive index, mementos)`, only archives with at least
/// one memento, in archive order.
pub type Holdings = Vec<(u16, u32)>;

/// One client request: a URI-R, what the archives hold for it when it is asked, and who asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Index into [`Stream::uris`].
    pub uri: u32,
    /// Index into [`Stream::holdings`].
    pub holdings: u32,
    /// The client's address: what a fan-out it starts teaches is bounded per client
    /// (`[routing] max_per_client`). None: no client (a trace without one), nothing bounded,
    /// as for the server's own refreshes.
    pub client: Option<IpAddr>,
}

/// What is replayed.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    /// Where it came from, for the outputs (says SYNTHETIC for a preset).
    pub source: String,
    pub archives: Vec<Archive>,
    pub uris: Vec<Uri>,
    pub holdings: Vec<Holdings>,
    pub requests: Vec<Request>,
    /// The seed of the latency draws (presets only).
    pub seed: u64,
}

impl Stream {
    /// The requests that miss a TTL cache keyed by URI-R, in order: request `i` arrives at tick
    /// `i`; a URI-R fetched at tick `t` is fresh while `i - t < ttl` (0: every request misses,
    /// as every line of a trace of fan-outs does). Hits never reach the archives, so which
    /// requests miss does not depend on the routing setting: it is computed once.
    pub fn misses(&self, ttl: u64) -> Vec<Request> {
        let mut fetched: Vec<Option<u64>> = vec![None; self.uris.len()];
        let mut out = Vec::new();
        for (i, r) in self.requests.iter().enumerate() {
            let now = i as u64;
            let slot = &mut fetched[r.uri as usize];
            let fresh = matches!(*slot, Some(t) if now - t < ttl);
            if !fresh {
                *slot = Some(now);
                out.push(*r);
            }
        }
        out
    }
}
