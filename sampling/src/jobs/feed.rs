//! Feeding a done job's sample to the cache: warmed once (each URI-R's TimeMap fetched through
//! the aggregator, rate-limited) and, when asked, refetched every interval so the observation
//! log gets a row per URI-R per round. Its state is `<job>/feed.json`, so a restart carries on.

use super::error::JobError;
use super::feed_state::Feed;
use super::record::write_json_atomically;
use super::registry::Jobs;
use crate::engine::SampledUrl;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Jobs {
    /// Feeds a done job's sample to the cache: warms it (each URI-R's TimeMap fetched through the
    /// aggregator, rate-limited) and, with `observe_secs`, refetches every URI-R each interval
    /// so the observation log gets a row per URI-R per round.
    pub fn feed(
        self: &Arc<Self>,
        id: &str,
        warm: bool,
        observe_secs: Option<u64>,
    ) -> Result<Feed, JobError> {
        self.done(id)?;
        // One feed per job: a second POST while one runs would fetch every URI-R twice.
        if !self.claim_feed(id) {
            let running = self.feed_status(id).unwrap_or_default();
            return Err(JobError::FeedRunning {
                id: id.to_string(),
                feed: running,
            });
        }
        let uri_rs = self.sample_urls(id).len() as u64;
        let feed = Feed {
            warm,
            observe_secs,
            uri_rs,
            ..Feed::default()
        };
        self.clone().spawn_feed(id.to_string(), feed.clone(), false);
        Ok(feed)
    }

    /// Marks job `id` as being fed; false when it already is.
    pub(super) fn claim_feed(&self, id: &str) -> bool {
        self.feeding
            .lock()
            .map(|mut f| f.insert(id.to_string()))
            .unwrap_or(false)
    }

    fn release_feed(&self, id: &str) {
        if let Ok(mut f) = self.feeding.lock() {
            f.remove(id);
        }
    }

    /// The feed of a job, if it was fed.
    pub fn feed_status(&self, id: &str) -> Option<Feed> {
        self.feeds.lock().ok()?.get(id).cloned()
    }

    fn sample_urls(&self, id: &str) -> Vec<String> {
        std::fs::read_to_string(self.job_dir(id).join("out/sample.ndjson"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<SampledUrl>(l).ok())
            .map(|s| s.url)
            .collect()
    }

    fn save_feed(&self, id: &str, feed: &Feed) {
        if let Ok(mut g) = self.feeds.lock() {
            g.insert(id.to_string(), feed.clone());
        }
        if let Err(e) = write_json_atomically(&self.job_dir(id).join("feed.json"), feed) {
            tracing::error!(job = %id, error = %e, "cannot save the feed's state");
        }
    }

    pub(super) fn spawn_feed(self: Arc<Self>, id: String, mut feed: Feed, resumed: bool) {
        let Some(fetch) = self.fetcher.clone() else {
            self.release_feed(&id);
            return;
        };
        let urls = self.sample_urls(&id);
        let gap = (self.feed_rate > 0.0)
            .then(|| std::time::Duration::from_secs_f64(1.0 / self.feed_rate));
        self.save_feed(&id, &feed);
        let jobs = self.clone();
        jobs.track(tokio::spawn(async move {
            // However the task ends (done, stopping, aborted), the job may be fed again.
            struct Fed(Arc<Jobs>, String);
            impl Drop for Fed {
                fn drop(&mut self) {
                    self.0.release_feed(&self.1);
                }
            }
            let _fed = Fed(self.clone(), id.clone());
            let pace = || async {
                if let Some(g) = gap {
                    tokio::time::sleep(g).await;
                }
            };
            // Where the warming stands: every URL before it was warmed or skipped.
            let done = |f: &Feed| f.warmed + f.skipped;
            if feed.warm && (!resumed || done(&feed) < feed.uri_rs) {
                for u in urls.iter().skip(done(&feed) as usize) {
                    if self.stopping.load(Ordering::Relaxed) {
                        return;
                    }
                    if fetch(u.clone(), false).await {
                        feed.warmed += 1;
                    } else {
                        feed.skipped += 1;
                    }
                    if done(&feed).is_multiple_of(100) {
                        self.save_feed(&id, &feed);
                    }
                    pace().await;
                }
                self.save_feed(&id, &feed);
            }
            let Some(every) = feed.observe_secs.filter(|s| *s > 0) else {
                return;
            };
            let every = chrono::Duration::seconds(every as i64);
            loop {
                let next = feed
                    .next_round_at
                    .as_deref()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .unwrap_or_else(|| self.clock.now() + every);
                if feed.next_round_at.is_none() {
                    feed.next_round_at =
                        Some(tmproxy_core::timemap::datetime::format_rfc3339(next));
                    self.save_feed(&id, &feed);
                }
                // The server's clock (simulated in simulations) decides when a round is due.
                while self.clock.now() < next {
                    if self.stopping.load(Ordering::Relaxed) {
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                for u in &urls {
                    if self.stopping.load(Ordering::Relaxed) {
                        return;
                    }
                    fetch(u.clone(), true).await;
                    pace().await;
                }
                feed.rounds += 1;
                feed.next_round_at = Some(tmproxy_core::timemap::datetime::format_rfc3339(
                    next + every,
                ));
                self.save_feed(&id, &feed);
            }
        }));
    }
}
