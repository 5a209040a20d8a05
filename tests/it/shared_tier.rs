//! The shared tier on a real `redis-server`: two replicas (each its own sled directory and its
//! own simulated archive) share one Redis; an entry one fetched is a hit on the other, Redis
//! going away costs neither an answer, and a damaged value in Redis is a miss.

use crate::disk_faults::healthz;
use crate::redis_server::{RedisCluster, RedisServer};
use crate::support::{client, config_for, start_proxy, Proxy};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

async fn archive() -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20100101000000",
        "20150101000000",
    ])))
    .await
    .expect("simulated archive")
}

/// A replica in front of its own archive, sharing `redis`.
async fn replica(redis: &RedisServer, archive: &SimulatedArchive) -> Proxy {
    replica_of(redis.url(), archive).await
}

async fn replica_of(shared: String, archive: &SimulatedArchive) -> Proxy {
    let mut config = config_for(&[("ia", archive)]);
    config.cache.shared = tmproxy::config::SharedAddress::parse(&shared).expect("a Redis URL");
    start_proxy(config).await
}

/// GET a TimeMap: (status, X-Cache).
async fn fetch(proxy: &Proxy, uri_r: &str) -> (u16, String) {
    let resp = client()
        .get(format!("{}/timemap/json/{uri_r}", proxy.base))
        .send()
        .await
        .expect("request");
    let x_cache = resp
        .headers()
        .get("x-cache")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (resp.status().as_u16(), x_cache)
}

/// The keys tmproxy holds in `redis`.
fn entry_keys(redis: &RedisServer) -> Vec<String> {
    redis
        .cli(&["--raw", "KEYS", "tmproxy:entry:*"])
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .filter(|k| !k.is_empty())
        .collect()
}

fn shared_stats(proxy: &Proxy) -> tmproxy::cache::store::SharedStats {
    shared_tier(proxy).stats()
}

pub fn shared_tier(
    proxy: &Proxy,
) -> &tmproxy::cache::store::SharedTier<impl tmproxy::cache::store::Cacheable> {
    proxy
        .state
        .as_ref()
        .and_then(|s| s.cache.store())
        .and_then(|s| s.shared())
        .expect("a shared tier")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_fetched_through_one_replica_is_a_hit_on_the_other() {
    let redis = RedisServer::start();
    let (archive_a, archive_b) = (archive().await, archive().await);
    let a = replica(&redis, &archive_a).await;
    let b = replica(&redis, &archive_b).await;
    let uri_r = "http://example.com/shared";

    assert_eq!(fetch(&a, uri_r).await, (200, "MISS".to_owned()));
    assert_eq!(archive_a.requests(), 1);
    assert_eq!(entry_keys(&redis).len(), 1, "A wrote its entry to Redis");

    assert_eq!(fetch(&b, uri_r).await, (200, "HIT".to_owned()));
    assert_eq!(archive_b.requests(), 0, "B asked its archive for A's entry");
    // Now local to B: served again without its archive.
    assert_eq!(fetch(&b, uri_r).await, (200, "HIT".to_owned()));
    assert_eq!(archive_b.requests(), 0);
    assert_eq!(shared_stats(&a).errors, 0);
    assert_eq!(shared_stats(&b).errors, 0);
    assert_eq!(healthz(&b.base).await, (200, "ok\n".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_keep_answering_while_redis_is_down_and_share_again_after() {
    let mut redis = RedisServer::start();
    let (archive_a, archive_b) = (archive().await, archive().await);
    let a = replica(&redis, &archive_a).await;
    let b = replica(&redis, &archive_b).await;
    let before = "http://example.com/before";
    assert_eq!(fetch(&a, before).await, (200, "MISS".to_owned()));

    redis.stop();
    // Cached locally: still a hit. Cold: fetched from the archives, each replica its own.
    assert_eq!(fetch(&a, before).await, (200, "HIT".to_owned()));
    for (proxy, n) in [(&a, 1), (&b, 2), (&a, 3), (&b, 4)] {
        let (status, _) = fetch(proxy, &format!("http://example.com/down/{n}")).await;
        assert_eq!(status, 200, "request {n} while Redis is down");
    }
    assert_eq!(archive_b.requests(), 2, "B fetched its cold URI-Rs itself");
    for proxy in [&a, &b] {
        let (status, body) = healthz(&proxy.base).await;
        assert_eq!(status, 200);
        assert!(
            body.starts_with("degraded: shared tier unreachable"),
            "{body}"
        );
        assert!(shared_stats(proxy).errors > 0);
        let metrics = metrics(proxy).await;
        assert!(
            metrics.contains("\ntmproxy_cache_shared_degraded 1\n"),
            "{metrics}"
        );
    }

    redis.restart();
    // The restarted Redis is empty. A's connection finds it again on one of its next calls
    // (the first may still meet the dead socket): bounded, then B must hit A's entry. The
    // pause after a failure is ended here, or each call would skip Redis for its 5 s.
    shared_tier(&b).end_pause();
    let mut shared = None;
    for n in 0..20 {
        shared_tier(&a).end_pause();
        let uri_r = format!("http://example.com/after/{n}");
        assert_eq!(fetch(&a, &uri_r).await.0, 200);
        if !entry_keys(&redis).is_empty() {
            shared = Some(uri_r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let uri_r = shared.expect("A writes to Redis again once it is back");
    let asked = archive_b.requests();
    assert_eq!(fetch(&b, &uri_r).await, (200, "HIT".to_owned()));
    assert_eq!(archive_b.requests(), asked, "B asked its archive");
    assert_eq!(healthz(&a.base).await, (200, "ok\n".to_owned()));
    assert_eq!(healthz(&b.base).await, (200, "ok\n".to_owned()));
    assert!(metrics(&b)
        .await
        .contains("\ntmproxy_cache_shared_degraded 0\n"));
}

async fn metrics(proxy: &Proxy) -> String {
    let resp = client()
        .get(format!("{}/metrics", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    resp.text().await.expect("body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_value_in_redis_is_a_counted_miss() {
    let redis = RedisServer::start();
    let (archive_a, archive_b) = (archive().await, archive().await);
    let a = replica(&redis, &archive_a).await;
    let b = replica(&redis, &archive_b).await;
    // Garbage, a zlib header over garbage, an envelope of another format version, and one
    // whose checksum does not match its value.
    let plants: [&[u8]; 4] = [
        b"\x00\xffnot an entry",
        b"\x78\x9cdamaged",
        br#"{"v":999,"value":{}}"#,
        br#"{"v":1,"crc32":1,"value":{}}"#,
    ];
    for (i, bytes) in plants.into_iter().enumerate() {
        let uri_r = format!("http://example.com/damaged/{i}");
        let keys_before = entry_keys(&redis);
        assert_eq!(fetch(&a, &uri_r).await.0, 200);
        let key = entry_keys(&redis)
            .into_iter()
            .find(|k| !keys_before.contains(k))
            .expect("A wrote a new key");
        redis.set_raw(&key, bytes);

        // B is cold for it: the planted value is not served, B asks its own archive.
        let (asked, unreadable) = (archive_b.requests(), shared_stats(&b).unreadable);
        assert_eq!(
            fetch(&b, &uri_r).await,
            (200, "MISS".to_owned()),
            "plant {i}"
        );
        assert_eq!(archive_b.requests(), asked + 1, "plant {i}");
        // Counted each time it is read (a miss reads the store again before storing).
        assert!(shared_stats(&b).unreadable > unreadable, "plant {i}");
    }
    assert_eq!(shared_stats(&b).errors, 0);
}

/// The same through a three-master Redis Cluster: keys spread over its slots, each found again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_entries_through_a_redis_cluster() {
    let cluster = RedisCluster::start();
    let (archive_a, archive_b) = (archive().await, archive().await);
    let a = replica_of(cluster.url(), &archive_a).await;
    let b = replica_of(cluster.url(), &archive_b).await;
    let uris: Vec<String> = (0..6)
        .map(|n| format!("http://example.com/cluster/{n}"))
        .collect();
    for uri_r in &uris {
        assert_eq!(fetch(&a, uri_r).await, (200, "MISS".to_owned()));
    }
    assert_eq!(cluster.entry_keys().len(), uris.len());
    for uri_r in &uris {
        assert_eq!(fetch(&b, uri_r).await, (200, "HIT".to_owned()), "{uri_r}");
    }
    assert_eq!(archive_b.requests(), 0, "B asked its archive");
    assert_eq!(shared_stats(&a).errors, 0);
    assert_eq!(shared_stats(&b).errors, 0);
}

/// 100 concurrent cold requests for one URI-R, spread over two replicas of the same archive:
/// the archive is asked once, and every answer is a 200 with its mementos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_fan_out_per_uri_r_across_replicas() {
    let redis = RedisServer::start();
    // Slow (a byte every 2 ms, about a second): both replicas are asked while it answers.
    let shared_archive = SimulatedArchive::start(Behaviour::Trickle(Duration::from_millis(2)))
        .await
        .expect("simulated archive");
    let a = replica(&redis, &shared_archive).await;
    let b = replica(&redis, &shared_archive).await;
    let uri_r = "http://example.com/stampede";
    let requests = (0..100).map(|n| {
        let base = if n % 2 == 0 { &a.base } else { &b.base };
        let url = format!("{base}/timemap/json/{uri_r}");
        async move {
            let resp = client().get(url).send().await.expect("request");
            let status = resp.status().as_u16();
            let text = resp.text().await.expect("body");
            let body: serde_json::Value = serde_json::from_str(&text).expect("json");
            (status, crate::support::memento_uris(&body).len())
        }
    });
    for (status, mementos) in futures::future::join_all(requests).await {
        assert_eq!((status, mementos), (200, 2));
    }
    assert_eq!(
        shared_archive.requests(),
        1,
        "the archive was asked more than once"
    );
    assert!(
        redis
            .cli(&["KEYS", "tmproxy:fanout:*"])
            .unwrap_or_default()
            .is_empty(),
        "the fan-out claim was given back"
    );
}
