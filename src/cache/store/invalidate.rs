//! Cross-replica invalidation over Redis pub/sub: a replica that stores or removes an entry in
//! the shared tier PUBLISHes its key; every replica's subscriber drops that key from its own
//! memory and sled tiers, so its next request reads through to Redis and sees the new entry (or
//! the purge) instead of serving its older local copy.
//!
//! Pub/sub is fire-and-forget: while a subscriber is disconnected, messages to it are lost. On
//! reconnecting it does not guess which local entries went stale (dropping the memory tier
//! would not help, sled still holds them; dropping sled would throw this replica's cache away
//! whenever Redis blinks, and a Redis restarted empty cannot say what changed). It counts the
//! gap and logs it: such entries stay until their own expiry (then the conditional refresh
//! runs as usual) or a purge on this replica.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;

/// The channel every replica publishes and subscribes on.
pub const CHANNEL: &str = "tmproxy:invalidate";

/// The longest key acted on: twice the longest URI-R accepted (8 KiB), as a canonical key is a
/// little longer than the URI-R it comes from. Anything longer is no key of ours.
pub const MAX_KEY_BYTES: usize = 16 * 1024;

/// The longest message acted on: a replica id, a space and a key.
pub const MAX_MESSAGE_BYTES: usize = MAX_KEY_BYTES + 128;

/// How long connecting, subscribing or a PING may take before the attempt counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How often an idle subscription is PINGed: a connection that died without closing (a
/// network partition) is noticed within this, not never.
const PING_EVERY: Duration = Duration::from_secs(10);

/// The wait before the first reconnection attempt, doubled after each failure up to
/// [`BACKOFF_MAX`], so a Redis that is down is not hammered.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What receives the invalidations: the cache, which drops a key from its local tiers only.
pub trait Invalidate: Send + Sync + 'static {
    fn forget_locally(&self, key: &str) -> impl Future<Output = ()> + Send;
}

/// The subscriber's counters, read by [`super::SharedTier::stats`].
#[derive(Debug, Default)]
pub struct InvalidationCounters {
    /// Keys dropped locally because another replica announced them.
    pub applied: AtomicU64,
    /// Messages refused (too long, malformed, not a cache key).
    pub refused: AtomicU64,
    /// Subscriptions re-established after one was lost.
    pub gaps: AtomicU64,
}

/// The payload announcing `key` from `replica`: `<replica> <key>` (ids hold no space).
pub fn message(replica: &str, key: &str) -> String {
    format!("{replica} {key}")
}

/// What a received payload asks of this replica.
#[derive(Debug, PartialEq, Eq)]
pub enum Received<'a> {
    /// Drop this key locally.
    Forget(&'a str),
    /// This replica's own announcement: nothing to do, its tiers already hold the change.
    Own,
    /// Not a message of ours: ignored, with why.
    Refused(&'static str),
}

/// Reads `payload` as seen by replica `own`. Everything is checked: anyone who can PUBLISH on
/// this Redis can send anything.
pub fn read<'a>(payload: &'a [u8], own: &str) -> Received<'a> {
    if payload.len() > MAX_MESSAGE_BYTES {
        return Received::Refused("oversized");
    }
    let Ok(text) = std::str::from_utf8(payload) else {
        return Received::Refused("not UTF-8");
    };
    let Some((replica, key)) = text.split_once(' ') else {
        return Received::Refused("no replica id");
    };
    if replica.is_empty() {
        return Received::Refused("no replica id");
    }
    if !is_cache_key(key) {
        return Received::Refused("not a cache key");
    }
    if replica == own {
        return Received::Own;
    }
    Received::Forget(key)
}

/// Whether `key` could be a key the cache stores under: a URI-R or its canonical form, so
/// non-empty, bounded, without control characters or spaces (URI-Rs are percent-encoded).
pub fn is_cache_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_BYTES
        && !key.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Starts the subscriber: it connects to `servers` (one, or a cluster's seeds tried in turn),
/// subscribes to [`CHANNEL`] and drops announced keys from `target` until `target` is gone.
pub fn spawn<T: Invalidate>(
    servers: Vec<String>,
    replica: String,
    counters: Arc<InvalidationCounters>,
    target: Weak<T>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let subscriber = Subscriber {
            replica,
            counters,
            target,
        };
        subscriber.run(&servers).await;
    })
}

struct Subscriber<T> {
    replica: String,
    counters: Arc<InvalidationCounters>,
    target: Weak<T>,
}

/// Why listening on one subscription ended.
enum Ended {
    /// The server stopped (its cache is dropped): the task ends.
    Stopped,
    /// The connection was lost: reconnect.
    Lost(String),
}

impl<T: Invalidate> Subscriber<T> {
    async fn run(&self, servers: &[String]) {
        let mut backoff = BACKOFF_FIRST;
        let mut subscribed_before = false;
        // A cluster broadcasts every PUBLISH to all its nodes, so a subscription on any one
        // node hears every replica: the seeds are tried in turn until one answers.
        let mut next = 0usize;
        loop {
            if self.target.strong_count() == 0 {
                return;
            }
            let Some(server) = servers.get(next % servers.len().max(1)) else {
                return;
            };
            match subscribe(server).await {
                Ok(pubsub) => {
                    if subscribed_before {
                        self.counters.gaps.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            "subscribed to invalidations again: those sent meanwhile were lost, \
                             so local entries may be stale until they expire or are purged here"
                        );
                    } else {
                        tracing::info!(channel = CHANNEL, "subscribed to invalidations");
                    }
                    subscribed_before = true;
                    backoff = BACKOFF_FIRST;
                    match self.listen(pubsub).await {
                        Ended::Stopped => return,
                        // INFO: the shared tier's own calls WARN about an outage (once a minute).
                        Ended::Lost(reason) => {
                            tracing::info!(reason, "invalidation subscription lost; reconnecting")
                        }
                    }
                }
                Err(reason) => {
                    tracing::debug!(reason, "cannot subscribe to invalidations yet");
                    next = next.wrapping_add(1);
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn listen(&self, pubsub: redis::aio::PubSub) -> Ended {
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        loop {
            tokio::select! {
                message = stream.next() => {
                    let Some(message) = message else {
                        return Ended::Lost("the connection closed".into());
                    };
                    if !self.receive(message.get_payload_bytes()).await {
                        return Ended::Stopped;
                    }
                }
                _ = ping.tick() => {
                    if self.target.strong_count() == 0 {
                        return Ended::Stopped;
                    }
                    let answer = tokio::time::timeout(CONNECT_TIMEOUT, sink.ping::<redis::Value>());
                    match answer.await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Ended::Lost(format!("PING failed: {e}")),
                        Err(_) => return Ended::Lost(format!("no PONG within {CONNECT_TIMEOUT:?}")),
                    }
                }
            }
        }
    }

    /// Acts on one payload; false once the server is gone.
    async fn receive(&self, payload: &[u8]) -> bool {
        match read(payload, &self.replica) {
            Received::Forget(key) => {
                let Some(target) = self.target.upgrade() else {
                    return false;
                };
                target.forget_locally(key).await;
                self.counters.applied.fetch_add(1, Ordering::Relaxed);
            }
            Received::Own => {}
            Received::Refused(why) => {
                // DEBUG, not WARN: whoever floods the channel must not flood the logs too.
                self.counters.refused.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(why, bytes = payload.len(), "invalidation message refused");
            }
        }
        true
    }
}

/// A dedicated pub/sub connection to `server`, subscribed to [`CHANNEL`].
async fn subscribe(server: &str) -> Result<redis::aio::PubSub, String> {
    let client = redis::Client::open(server).map_err(|e| e.to_string())?;
    let attempt = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(CHANNEL).await?;
        Ok::<_, redis::RedisError>(pubsub)
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(pubsub)) => Ok(pubsub),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {CONNECT_TIMEOUT:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_back_and_own_ones_skipped() {
        let key = "com,example)/page?q=1";
        let sent = message("41-0-17", key);
        assert_eq!(read(sent.as_bytes(), "99-3-18"), Received::Forget(key));
        assert_eq!(read(sent.as_bytes(), "41-0-17"), Received::Own);
    }

    #[test]
    fn hostile_messages_are_refused() {
        let long_key = format!("http://example.com/{}", "a".repeat(MAX_KEY_BYTES));
        let huge = vec![b'a'; MAX_MESSAGE_BYTES + 1];
        for (payload, why) in [
            (b"".to_vec(), "no replica id"),
            (b"no-space-at-all".to_vec(), "no replica id"),
            (b" http://example.com/".to_vec(), "no replica id"),
            (b"r1 ".to_vec(), "not a cache key"),
            (
                b"r1 http://e.com/\nX-Injected: 1".to_vec(),
                "not a cache key",
            ),
            (b"r1 http://e.com/ two".to_vec(), "not a cache key"),
            (b"r1 \xff\xfe".to_vec(), "not UTF-8"),
            (message("r1", &long_key).into_bytes(), "not a cache key"),
            (huge, "oversized"),
        ] {
            assert_eq!(read(&payload, "me"), Received::Refused(why), "{payload:?}");
        }
    }
}
