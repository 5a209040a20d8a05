//! The shared tier on Redis (`[cache] shared`): behind memory and sled, what the replicas of one
//! deployment share. Values are the envelope bytes sled holds, so a damaged or planted value is a
//! counted miss; Redis failing never fails a request: it is counted, warned about at most once a
//! minute, and reported by `/healthz` until an operation succeeds again. After a failure the
//! calls skip Redis for [`PAUSE_AFTER_FAILURE`], so a Redis that drops packets costs one call
//! timeout, not one per request. Writes of decided entries are compare-and-set on the entry's
//! revision ([`super::cas`]).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;

use super::cas::{framed, observed, Observed, SetIf, HEAD_LEN, SET_IF};
use super::envelope::{decode, encode};
use super::invalidate::{self, Invalidate, InvalidationCounters};
use super::lock::{FanOutClaim, FanOutLock};
use super::pause::{Pause, PAUSE_AFTER_FAILURE};
use super::Cacheable;

/// Where every key of ours lives in Redis, so tmproxy can share a Redis with others.
pub const KEY_PREFIX: &str = "tmproxy:entry:";

/// The most bytes read for one value: a planted value cannot make a replica allocate without
/// bound. Entries are deflated (about tenfold), so this is far above the largest TimeMap served.
pub const MAX_VALUE_BYTES: usize = 256 << 20;

/// The longest one Redis call may take, connecting included: an unreachable Redis costs a
/// request at most this, then the request goes on with the local tiers and the archives.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the same trouble is logged at WARN.
const WARN_EVERY: Duration = Duration::from_secs(60);

pub use crate::config::SharedAddress;

/// The connection: a manager that reconnects by itself, or a cluster connection made on first
/// use (the cluster client connects eagerly, and Redis may be down when tmproxy starts).
enum Conn {
    Single(ConnectionManager),
    Cluster {
        // Boxed: the client is large, and the enum should not be.
        client: Box<redis::cluster::ClusterClient>,
        conn: tokio::sync::Mutex<Option<ClusterConnection>>,
    },
}

/// What the tier's clones share.
struct Inner {
    conn: Conn,
    display: String,
    errors: AtomicU64,
    unreadable: AtomicU64,
    skipped: AtomicU64,
    lost: AtomicU64,
    pause: Pause,
    /// Why the last call failed, while no call has succeeded since.
    failing: Mutex<Option<String>>,
    last_warn: Mutex<Option<Instant>>,
    /// Where the invalidation subscriber connects.
    address: SharedAddress,
    /// This replica's id in the invalidations it publishes, so it skips its own.
    replica: String,
    /// The invalidation subscriber's counters.
    invalidations: Arc<InvalidationCounters>,
}

/// The shared tier; cheap to clone.
pub struct SharedTier<V> {
    inner: Arc<Inner>,
    _value: PhantomData<fn() -> V>,
}

impl<V> Clone for SharedTier<V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _value: PhantomData,
        }
    }
}

/// The shared tier's counters and health.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedStats {
    /// Calls to Redis that failed or timed out since start.
    pub errors: u64,
    /// Values found damaged, oversized or of another format: treated as misses.
    pub unreadable: u64,
    /// Keys other replicas said they stored or removed, dropped here from memory and sled.
    pub invalidations: u64,
    /// Invalidation messages refused: oversized, malformed, or not naming a cache key.
    pub invalidations_refused: u64,
    /// Times the invalidation subscription came back after being lost (messages may be lost).
    pub invalidation_gaps: u64,
    /// Calls not made because an earlier one failed less than [`PAUSE_AFTER_FAILURE`] ago
    /// (not errors: Redis was not asked).
    pub skipped: u64,
    /// Compare-and-set writes that lost to another replica's write (then decided again).
    pub cas_lost: u64,
}

impl<V: Cacheable> SharedTier<V> {
    /// The tier for `address`, without connecting: the first call connects, so a Redis that is
    /// down at startup only degrades the server.
    pub fn new(address: &SharedAddress) -> Result<SharedTier<V>, String> {
        let conn = match address {
            SharedAddress::Single(url) => {
                let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CALL_TIMEOUT))
                    .set_response_timeout(Some(CALL_TIMEOUT))
                    .set_number_of_retries(1)
                    .set_max_delay(CALL_TIMEOUT);
                Conn::Single(
                    ConnectionManager::new_lazy_with_config(client, config)
                        .map_err(|e| e.to_string())?,
                )
            }
            SharedAddress::Cluster(seeds) => Conn::Cluster {
                client: Box::new(
                    ClusterClientBuilder::new(seeds.clone())
                        .connection_timeout(CALL_TIMEOUT)
                        .response_timeout(CALL_TIMEOUT)
                        .retries(1)
                        .build()
                        .map_err(|e| e.to_string())?,
                ),
                conn: tokio::sync::Mutex::new(None),
            },
        };
        Ok(SharedTier {
            inner: Arc::new(Inner {
                conn,
                display: address.display(),
                errors: AtomicU64::new(0),
                unreadable: AtomicU64::new(0),
                skipped: AtomicU64::new(0),
                lost: AtomicU64::new(0),
                pause: Pause::default(),
                failing: Mutex::new(None),
                last_warn: Mutex::new(None),
                address: address.clone(),
                replica: claim_token(),
                invalidations: Arc::default(),
            }),
            _value: PhantomData,
        })
    }

    /// The value under `key` in Redis, if there is a readable one; anything else is a miss.
    pub async fn get(&self, key: &str) -> Option<Arc<V>> {
        self.read(key).await?.1
    }

    /// What is stored under `key` (for a compare-and-set) and its value if readable; None when
    /// Redis failed.
    pub async fn read(&self, key: &str) -> Option<(Observed, Option<Arc<V>>)> {
        // GETRANGE, not GET: at most one byte past the cap is read, so an oversized value is
        // known without taking it whole. A missing key reads as empty.
        let mut cmd = redis::cmd("GETRANGE");
        cmd.arg(redis_key(key)).arg(0).arg(MAX_VALUE_BYTES);
        let bytes: Vec<u8> = self.call(cmd).await?;
        let seen = observed(&bytes).0;
        if bytes.is_empty() {
            return Some((seen, None));
        }
        if bytes.len() > MAX_VALUE_BYTES {
            let reason = format!("larger than {MAX_VALUE_BYTES} bytes");
            return Some((seen, self.unreadable(key, reason)));
        }
        // Inflating and parsing a big TimeMap is seconds of CPU: off the runtime's threads.
        let decoded = tokio::task::spawn_blocking(move || decode::<V>(observed(&bytes).1))
            .await
            .unwrap_or_else(|e| Err(format!("the decoding task failed: {e}")));
        match decoded {
            Ok(value) => Some((seen, Some(Arc::new(value)))),
            Err(reason) => Some((seen, self.unreadable(key, reason))),
        }
    }

    /// What is stored under `key`, from its first bytes only; None when Redis failed.
    pub async fn observe(&self, key: &str) -> Option<Observed> {
        let mut cmd = redis::cmd("GETRANGE");
        cmd.arg(redis_key(key)).arg(0).arg(HEAD_LEN - 1);
        let head: Vec<u8> = self.call(cmd).await?;
        Some(observed(&head).0)
    }

    /// Writes `value` under `key` whatever is stored; a failure is counted and logged, never
    /// returned: the entry is still stored locally.
    pub async fn put(&self, key: &str, value: Arc<V>) {
        let Some(bytes) = self.encoded(key, value).await else {
            return;
        };
        let mut cmd = redis::cmd("SET");
        cmd.arg(redis_key(key)).arg(bytes);
        let stored: Option<()> = self.call(cmd).await;
        if stored.is_some() {
            self.announce(key).await;
        }
    }

    /// Writes `value` under `key` only if what is stored is still `expected` (what the
    /// writer's policy decided against): compare-and-set, in one script on one key.
    pub async fn put_if(&self, key: &str, value: Arc<V>, expected: Observed) -> SetIf {
        let Some(bytes) = self.encoded(key, value).await else {
            return SetIf::Unavailable;
        };
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(SET_IF)
            .arg(1)
            .arg(redis_key(key))
            .arg(expected.expected_arg())
            .arg(bytes);
        match self.call::<i64>(cmd).await {
            Some(1) => {
                // The other replicas drop their local copies and read this one.
                self.announce(key).await;
                SetIf::Stored
            }
            Some(_) => {
                self.inner.lost.fetch_add(1, Ordering::Relaxed);
                SetIf::Lost
            }
            None => SetIf::Unavailable,
        }
    }

    /// `value` as Redis holds it: its revision, then its envelope (None, logged, if it cannot
    /// be encoded).
    async fn encoded(&self, key: &str, value: Arc<V>) -> Option<Vec<u8>> {
        let encoded = tokio::task::spawn_blocking(move || {
            encode(value.as_ref()).map(|bytes| framed(value.revision(), &bytes))
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
        match encoded {
            Ok(bytes) => Some(bytes),
            Err(reason) => {
                tracing::warn!(key, reason, "cannot encode an entry for the shared tier");
                None
            }
        }
    }

    /// Forgets `key` in Redis.
    pub async fn remove(&self, key: &str) {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(redis_key(key));
        // Announced even when Redis had no value: another replica may hold one locally.
        if self.call::<i64>(cmd).await.is_some() {
            self.announce(key).await;
        }
    }

    /// Tells the other replicas that `key` changed here, so they drop their local copies.
    async fn announce(&self, key: &str) {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(invalidate::CHANNEL)
            .arg(invalidate::message(&self.inner.replica, key));
        let _: Option<i64> = self.call(cmd).await;
    }

    /// Starts this replica's invalidation subscriber (one per server): it drops from `target`'s
    /// local tiers the keys other replicas announce, until `target` is dropped.
    pub fn spawn_invalidations<T: Invalidate>(
        &self,
        target: std::sync::Weak<T>,
    ) -> tokio::task::JoinHandle<()> {
        // A cluster broadcasts PUBLISH to every node, so one reachable seed is enough.
        let servers = match &self.inner.address {
            SharedAddress::Single(url) => vec![url.clone()],
            SharedAddress::Cluster(seeds) => seeds.clone(),
        };
        invalidate::spawn(
            servers,
            self.inner.replica.clone(),
            Arc::clone(&self.inner.invalidations),
            target,
        )
    }

    /// Claims the one fan-out for `key` across replicas for at most `ttl` (SET NX PX; this is
    /// the tier as a [`super::FanOutLock`]): won with a token, or held by another replica. A
    /// Redis that fails lets every replica fan out by itself, as without a shared tier.
    pub async fn claim_fan_out(&self, key: &str, ttl: Duration) -> FanOutClaim {
        let token = claim_token();
        let mut cmd = redis::cmd("SET");
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        cmd.arg(lock_key(key))
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis);
        match self.call::<Option<String>>(cmd).await {
            Some(Some(_)) => FanOutClaim::Won(token),
            Some(None) => FanOutClaim::Held,
            None => FanOutClaim::Alone,
        }
    }

    /// Whether some replica still holds the fan-out claim for `key` (false when Redis fails).
    pub async fn fan_out_claimed(&self, key: &str) -> bool {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(lock_key(key));
        self.call::<i64>(cmd).await.unwrap_or(0) > 0
    }

    /// Gives the claim back, only if it is still ours: one that expired and was claimed by
    /// another replica is not taken from it.
    pub async fn release_fan_out(&self, key: &str, token: &str) {
        const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
            return redis.call('DEL', KEYS[1]) else return 0 end";
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(RELEASE).arg(1).arg(lock_key(key)).arg(token);
        let _: Option<i64> = self.call(cmd).await;
    }

    /// Why the tier is failing (`shared tier unreachable …`), while it is.
    pub fn degraded(&self) -> Option<String> {
        lock(&self.inner.failing).clone()
    }

    pub fn stats(&self) -> SharedStats {
        SharedStats {
            errors: self.inner.errors.load(Ordering::Relaxed),
            unreadable: self.inner.unreadable.load(Ordering::Relaxed),
            invalidations: self.inner.invalidations.applied.load(Ordering::Relaxed),
            invalidations_refused: self.inner.invalidations.refused.load(Ordering::Relaxed),
            invalidation_gaps: self.inner.invalidations.gaps.load(Ordering::Relaxed),
            skipped: self.inner.skipped.load(Ordering::Relaxed),
            cas_lost: self.inner.lost.load(Ordering::Relaxed),
        }
    }

    /// Ends a pause after a failure now, so the next call asks Redis (tests, and a Redis known
    /// to be back).
    pub fn end_pause(&self) {
        self.inner.pause.end();
    }

    fn unreadable(&self, key: &str, reason: String) -> Option<Arc<V>> {
        self.inner.unreadable.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            key,
            reason,
            "unreadable entry in the shared tier: treated as a miss"
        );
        None
    }

    /// Runs `cmd`, bounded by [`CALL_TIMEOUT`] (twice, for a cluster's connect then call);
    /// None when Redis failed, after counting and reporting it, or when an earlier call failed
    /// less than [`PAUSE_AFTER_FAILURE`] ago (counted as skipped).
    async fn call<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Option<T> {
        if self.inner.pause.skips(Instant::now()) {
            self.inner.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let result = match &self.inner.conn {
            Conn::Single(manager) => {
                let mut manager = manager.clone();
                within(cmd.query_async::<T>(&mut manager)).await
            }
            Conn::Cluster { client, conn } => match cluster_connection(client, conn).await {
                Ok(mut c) => within(cmd.query_async::<T>(&mut c)).await,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(value) => {
                self.recovered();
                Some(value)
            }
            Err(reason) => {
                self.failed(reason);
                None
            }
        }
    }

    fn failed(&self, reason: String) {
        let inner = &self.inner;
        inner.errors.fetch_add(1, Ordering::Relaxed);
        inner.pause.failed(Instant::now(), PAUSE_AFTER_FAILURE);
        let reason = format!("shared tier unreachable ({}): {reason}", inner.display);
        *lock(&inner.failing) = Some(reason.clone());
        let mut last = lock(&inner.last_warn);
        if last.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            *last = Some(Instant::now());
            let errors = inner.errors.load(Ordering::Relaxed);
            tracing::warn!(reason, errors, "serving from the local tiers only");
        }
    }

    fn recovered(&self) {
        if lock(&self.inner.failing).take().is_some() {
            tracing::info!(address = %self.inner.display, "the shared tier is reachable again");
        }
    }
}

/// The cluster connection, made now if there is none yet.
async fn cluster_connection(
    client: &redis::cluster::ClusterClient,
    slot: &tokio::sync::Mutex<Option<ClusterConnection>>,
) -> Result<ClusterConnection, String> {
    let mut slot = slot.lock().await;
    if let Some(conn) = slot.as_ref() {
        return Ok(conn.clone());
    }
    let conn = within(client.get_async_connection()).await?;
    *slot = Some(conn.clone());
    Ok(conn)
}

async fn within<T>(
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {CALL_TIMEOUT:?}")),
    }
}

/// A token no other claim has: this process's id, a counter, and the time.
fn claim_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}-{nanos}", std::process::id())
}

/// Where the fan-out claim for a cache key lives.
fn lock_key(key: &str) -> String {
    format!("tmproxy:fanout:{key}")
}

/// The Redis key of a cache key.
pub fn redis_key(key: &str) -> String {
    format!("{KEY_PREFIX}{key}")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared tier's claim: a Redis key per fan-out (SET NX PX), given back only by its holder.
impl<V: Cacheable> FanOutLock for SharedTier<V> {
    fn claim<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, FanOutClaim> {
        self.claim_fan_out(key, ttl).boxed()
    }

    fn claimed<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        self.fan_out_claimed(key).boxed()
    }

    fn release<'a>(&'a self, key: &'a str, token: &'a str) -> BoxFuture<'a, ()> {
        self.release_fan_out(key, token).boxed()
    }
}
