//! The fan-out as the cache asks for it: [`Upstream`] is the cache's [`Archives`], given to it
//! in `app.rs`, so the cache never names the upstream.

use super::Upstream;
use crate::cache::fan_out::{Archives, Ask, Prior, Progress};
use crate::timemap::answer::Fetch;
use crate::uri_r::UriR;
use futures::future::{BoxFuture, FutureExt};
use std::time::Duration;
use tokio::time::Instant;

impl Archives for Upstream {
    fn deadline(&self) -> Duration {
        Upstream::deadline(self)
    }

    fn ids(&self) -> Vec<&str> {
        self.archives().iter().map(|a| &*a.id).collect()
    }

    fn fetch<'a>(
        &'a self,
        uri_r: &'a UriR,
        deadline: Duration,
        arrived: Instant,
        ask: Ask<'a>,
        prior: Option<Prior<'a>>,
        progress: &'a Progress,
    ) -> BoxFuture<'a, Fetch> {
        self.fetch_watched(uri_r.as_str(), deadline, arrived, ask, prior, progress)
            .boxed()
    }

    fn fetch_counts(&self) -> Vec<(String, u64)> {
        Upstream::fetch_counts(self)
    }
}
