//! What a feed is: the fetcher the server hands in, and a fed job's state as `<job>/feed.json`
//! keeps it.

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Fetches one URI-R's TimeMap through the aggregator into the cache (`true`: a forced refresh,
/// which fans out and, with `[observe] log` set, appends an observation). Resolves to false when
/// the server refused the URL as a URI-R (the check every client request passes) and asked
/// nothing: a sampled URL is only a string from an index until then.
pub type Fetcher =
    Arc<dyn Fn(String, bool) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// A fed job: its sample warmed into the cache and, with `observe_secs`, refetched every
/// interval. Kept in `<job>/feed.json` so a restart carries on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feed {
    pub warm: bool,
    /// Seconds between refetch rounds; None = no observation.
    pub observe_secs: Option<u64>,
    pub uri_rs: u64,
    pub warmed: u64,
    /// URLs of the sample the server refused as URI-Rs while warming: not fetched, not warmed.
    #[serde(default)]
    pub skipped: u64,
    pub rounds: u64,
    /// RFC 3339, on the server's clock.
    pub next_round_at: Option<String>,
}
