//! Two real `tmproxy serve` processes, each with its own cache directory, sharing a real
//! `redis-server` (or a three-master Redis Cluster) in front of the same simulated archives:
//! one fan-out per URI-R across them, a purge or refresh on one evicts the other's local copy
//! (pub/sub), and Redis going away costs neither an answer.

use crate::disk_faults::{healthz, metric};
use crate::redis_server::{RedisCluster, RedisServer};
use crate::support::{client, memento_uris, ServeProcess};
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "replicas-token";

/// How long a replica may take to (re)subscribe to invalidations: far above its backoff.
const SUBSCRIBE_BOUND: Duration = Duration::from_secs(20);

/// One `tmproxy serve` with its own cache directory; dropping it kills the process.
struct Replica {
    process: ServeProcess,
    _dir: tempfile::TempDir,
}

impl Replica {
    fn start(shared: &str, archives: &[&SimulatedArchive]) -> Replica {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut text = format!(
            "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"10s\"\ndeadline = \"10s\"\n\n\
             [cache]\npath = {:?}\nshared = {shared:?}\n\n[admin]\ntoken = {TOKEN:?}\n",
            dir.path().join("cache").display().to_string()
        );
        for (i, a) in archives.iter().enumerate() {
            text.push_str(&format!(
                "\n[[archives]]\nid = \"a{i}\"\nname = \"a{i}\"\ntimemap = {:?}\ntimegate = {:?}\n",
                a.timemap_prefix(),
                a.timegate_prefix()
            ));
        }
        let config = dir.path().join("config.toml");
        std::fs::write(&config, text).expect("config");
        Replica {
            process: ServeProcess::start(&config),
            _dir: dir,
        }
    }

    fn base(&self) -> &str {
        &self.process.base
    }

    /// GET its JSON TimeMap: (status, X-Cache, memento count).
    async fn get(&self, uri_r: &str) -> (u16, String, usize) {
        let resp = client()
            .get(format!("{}/timemap/json/{uri_r}", self.base()))
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let x_cache = header(&resp, "x-cache");
        let text = resp.text().await.expect("body");
        let mementos = serde_json::from_str(&text).map_or(0, |j| memento_uris(&j).len());
        (status, x_cache, mementos)
    }

    /// `DELETE /admin/cache/{uri_r}` (204 when it was cached).
    async fn purge(&self, uri_r: &str) -> u16 {
        let resp = client()
            .delete(format!("{}/admin/cache/{uri_r}", self.base()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("purge");
        resp.status().as_u16()
    }

    /// `POST /admin/cache/{uri_r}`: a refresh through the policy; its JSON answer.
    async fn refresh(&self, uri_r: &str) -> serde_json::Value {
        let resp = client()
            .post(format!("{}/admin/cache/{uri_r}", self.base()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("refresh");
        assert_eq!(resp.status(), 200);
        serde_json::from_str(&resp.text().await.expect("body")).expect("JSON")
    }

    /// Log lines at WARN that speak of the shared tier.
    fn shared_warnings(&self) -> usize {
        self.process
            .log()
            .lines()
            .filter(|l| l.contains(" WARN ") && l.contains("shared tier"))
            .count()
    }
}

fn header(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

async fn archive(captures: &[&str]) -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(captures)))
        .await
        .expect("simulated archive")
}

fn requests(archives: &[&SimulatedArchive]) -> Vec<usize> {
    archives.iter().map(|a| a.requests()).collect()
}

/// Subscribers to the invalidation channel over `nodes` (each node counts its own).
fn subscribers(nodes: &[&RedisServer]) -> usize {
    nodes
        .iter()
        .filter_map(|n| n.cli(&["PUBSUB", "NUMSUB", "tmproxy:invalidate"]))
        .filter_map(|out| {
            out.lines()
                .last()
                .and_then(|l| l.trim().parse::<usize>().ok())
        })
        .sum()
}

/// Waits (bounded) until `count` replicas listen for invalidations on `nodes`.
async fn wait_subscribed(nodes: &[&RedisServer], count: usize) {
    let started = Instant::now();
    while subscribers(nodes) < count {
        assert!(
            started.elapsed() < SUBSCRIBE_BOUND,
            "only {} of {count} replicas subscribed",
            subscribers(nodes)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until `replica` has dropped `count` keys other replicas announced: the
/// announcements travel asynchronously, and each is counted once acted on.
async fn wait_invalidations(replica: &Replica, count: u64) {
    let started = Instant::now();
    while invalidations(replica).await < count {
        assert!(
            started.elapsed() < SUBSCRIBE_BOUND,
            "{} never heard {count} announcements",
            replica.base()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn invalidations(replica: &Replica) -> u64 {
    metric(replica.base(), "tmproxy_cache_shared_invalidations_total").await
}

/// Asks `replica` for `uri_r` until it answers MISS (bounded): an announcement reached it.
async fn wait_for_miss(replica: &Replica, uri_r: &str) {
    let started = Instant::now();
    loop {
        let (status, x_cache, _) = replica.get(uri_r).await;
        assert_eq!(status, 200);
        if x_cache == "MISS" {
            return;
        }
        assert!(started.elapsed() < SUBSCRIBE_BOUND, "{uri_r} never evicted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two replicas on one Redis, both listening for invalidations.
async fn pair_on(redis: &RedisServer, archives: &[&SimulatedArchive]) -> (Replica, Replica) {
    let a = Replica::start(&redis.url(), archives);
    let b = Replica::start(&redis.url(), archives);
    wait_subscribed(&[redis], 2).await;
    (a, b)
}

/// (a) 100 concurrent cold requests for one URI-R spread over both replicas: each archive is
/// asked once, and every answer is a 200 with the same mementos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_fan_out_for_100_cold_requests_over_two_processes() {
    let redis = RedisServer::start();
    // Slow (a byte every 2 ms, about a second): both replicas are asked while they answer.
    let slow = Behaviour::Trickle(Duration::from_millis(2));
    let x = SimulatedArchive::start(slow.clone())
        .await
        .expect("archive");
    let y = SimulatedArchive::start(slow).await.expect("archive");
    let (a, b) = pair_on(&redis, &[&x, &y]).await;
    let uri_r = "http://example.com/stampede";
    let answers =
        futures::future::join_all((0..100).map(|n| if n % 2 == 0 { &a } else { &b }.get(uri_r)))
            .await;
    for (status, _, mementos) in answers {
        assert_eq!(
            (status, mementos),
            (200, 4),
            "two mementos from each archive"
        );
    }
    assert_eq!(requests(&[&x, &y]), [1, 1], "an archive was asked twice");
}

/// (b) A purge on A evicts B's local copy: B's next request is a MISS that asks the archives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_on_one_replica_is_a_miss_on_the_other() {
    let redis = RedisServer::start();
    let x = archive(&["20100101000000", "20150101000000"]).await;
    let (a, b) = pair_on(&redis, &[&x]).await;
    let uri_r = "http://example.com/purged";
    assert_eq!(a.get(uri_r).await, (200, "MISS".into(), 2));
    // A announced its store; B had nothing to drop yet. Heard before B reads, so it cannot
    // drop B's copy later and pass for the purge.
    wait_invalidations(&b, 1).await;
    // B takes A's entry from Redis, then holds it locally (a hit with Redis out of the way).
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 2));
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 2));
    assert_eq!(x.requests(), 1);

    assert_eq!(a.purge(uri_r).await, 204);
    // The purge reaches B asynchronously: bounded wait for its counter, then the request.
    wait_invalidations(&b, 2).await;
    // A heard only itself so far (its store, its purge), and skipped both.
    assert_eq!(invalidations(&a).await, 0);
    assert_eq!(b.get(uri_r).await, (200, "MISS".into(), 2));
    assert_eq!(x.requests(), 2, "B did not ask the archive again");
    let refused = "tmproxy_cache_shared_invalidations_refused_total";
    assert_eq!(metric(b.base(), refused).await, 0);

    // Anyone who can reach Redis can publish: junk, a key with a line break, an oversized
    // message. Each is refused and counted by both; neither stops answering or listening.
    let huge = format!("r1 http://example.com/{}", "a".repeat(40_000));
    for junk in ["junk", "r1 http://example.com/\nX-Injected: 1", &huge] {
        assert_eq!(
            redis
                .cli(&["PUBLISH", "tmproxy:invalidate", junk])
                .as_deref(),
            Some("2")
        );
    }
    for replica in [&a, &b] {
        let started = Instant::now();
        while metric(replica.base(), refused).await < 3 {
            assert!(started.elapsed() < SUBSCRIBE_BOUND, "junk not refused");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(replica.get(uri_r).await.0, 200);
    }
    wait_subscribed(&[&redis], 2).await;
}

/// (c) A conditional refresh on A that stores a changed TimeMap: B serves the new one without
/// asking the archives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_on_one_replica_is_seen_by_the_other() {
    let redis = RedisServer::start();
    let x = archive(&["20100101000000", "20150101000000"]).await;
    let (a, b) = pair_on(&redis, &[&x]).await;
    let uri_r = "http://example.com/refreshed";
    assert_eq!(a.get(uri_r).await, (200, "MISS".into(), 2));
    wait_invalidations(&b, 1).await;
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 2));

    x.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20100101000000",
        "20150101000000",
        "20200101000000",
    ])));
    let refreshed = a.refresh(uri_r).await;
    assert_eq!(refreshed["x_cache"], "REFRESH", "{refreshed}");
    assert_eq!(x.requests(), 2);
    wait_invalidations(&b, 2).await;
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 3));
    assert_eq!(x.requests(), 2, "B asked the archive");
}

/// (d) and (e): Redis killed mid-run: both replicas keep answering (no 5xx), say `degraded`,
/// and each logs one WARN about it however many requests fail; Redis back on the same port:
/// they share entries again and hear each other's invalidations again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_ride_out_a_redis_outage_and_share_again() {
    let mut redis = RedisServer::start();
    let x = archive(&["20100101000000", "20150101000000"]).await;
    let (a, b) = pair_on(&redis, &[&x]).await;
    let warm = "http://example.com/warm";
    assert_eq!(a.get(warm).await, (200, "MISS".into(), 2));
    wait_invalidations(&b, 1).await;
    assert_eq!(b.get(warm).await, (200, "HIT".into(), 2));

    redis.stop();
    let rounds = 5;
    for n in 0..rounds {
        for replica in [&a, &b] {
            let (status, _, mementos) = replica.get(warm).await;
            assert_eq!((status, mementos), (200, 2), "warm, request {n}");
            let cold = format!("http://example.com/down/{n}");
            let (status, _, mementos) = replica.get(&cold).await;
            assert_eq!((status, mementos), (200, 2), "{cold}");
        }
    }
    for replica in [&a, &b] {
        let (status, body) = healthz(replica.base()).await;
        assert_eq!(status, 200);
        assert!(
            body.starts_with("degraded: shared tier unreachable"),
            "{body}"
        );
        // A failed call, then calls skipped for the pause after it: one way or the other,
        // every request's call is accounted for.
        let errors = metric(replica.base(), "tmproxy_cache_shared_errors_total").await;
        let skipped = metric(replica.base(), "tmproxy_cache_shared_skipped_total").await;
        assert!(
            errors >= 1 && errors + skipped >= rounds,
            "{errors} + {skipped}"
        );
        // Once a minute: this run is far shorter than one.
        assert_eq!(replica.shared_warnings(), 1, "{}", replica.process.log());
    }

    redis.restart();
    // Both subscribers come back (each counts the gap), and so does sharing.
    wait_subscribed(&[&redis], 2).await;
    let mut shared = None;
    // Up to ~15 s: each replica skips Redis for 5 s after its own last failed call, so A may
    // write before B reads again (B then fetches for itself): a fresh URI-R each round, until
    // one A fetched is a HIT on B without B asking the archive.
    for n in 0..50 {
        let uri_r = format!("http://example.com/after/{n}");
        assert_eq!(a.get(&uri_r).await.0, 200);
        let asked = x.requests();
        let on_b = b.get(&uri_r).await;
        assert_eq!(on_b.0, 200);
        if on_b == (200, "HIT".into(), 2) && x.requests() == asked {
            shared = Some(uri_r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let uri_r = shared.expect("an entry A fetched is a HIT on B once Redis is back");
    assert!(redis.cli(&["DBSIZE"]).is_some_and(|s| s != "0"));
    assert_eq!(a.purge(&uri_r).await, 204);
    wait_for_miss(&b, &uri_r).await;
    for replica in [&a, &b] {
        assert_eq!(healthz(replica.base()).await, (200, "ok\n".to_owned()));
        assert!(
            metric(
                replica.base(),
                "tmproxy_cache_shared_invalidation_gaps_total"
            )
            .await
                >= 1
        );
    }
}

/// (f) Through a three-master Redis Cluster: a purge on A reaches B (PUBLISH is broadcast to
/// every node), then every node stops: both replicas answer 200, warm and cold, and say
/// `degraded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_ride_out_a_redis_cluster_outage() {
    let mut cluster = RedisCluster::start();
    let x = archive(&["20100101000000", "20150101000000"]).await;
    let a = Replica::start(&cluster.url(), &[&x]);
    let b = Replica::start(&cluster.url(), &[&x]);
    wait_subscribed(&cluster.nodes.iter().collect::<Vec<_>>(), 2).await;
    let uri_r = "http://example.com/cluster";
    assert_eq!(a.get(uri_r).await, (200, "MISS".into(), 2));
    wait_invalidations(&b, 1).await;
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 2));
    assert_eq!(b.get(uri_r).await, (200, "HIT".into(), 2));
    assert_eq!(a.purge(uri_r).await, 204);
    wait_invalidations(&b, 2).await;
    assert_eq!(b.get(uri_r).await, (200, "MISS".into(), 2));

    for node in &mut cluster.nodes {
        node.stop();
    }
    for replica in [&a, &b] {
        let (status, _, mementos) = replica.get(uri_r).await;
        assert_eq!((status, mementos), (200, 2), "warm");
        let (status, _, mementos) = replica.get("http://example.com/cluster-down").await;
        assert_eq!((status, mementos), (200, 2), "cold");
        let (status, body) = healthz(replica.base()).await;
        assert_eq!(status, 200);
        assert!(
            body.starts_with("degraded: shared tier unreachable"),
            "{body}"
        );
    }
}

/// An idle subscription outlives its keep-alive PINGs (every 10 s): no gap is counted, and an
/// announcement still gets through after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_subscription_survives_its_keep_alive() {
    let redis = RedisServer::start();
    let x = archive(&["20100101000000", "20150101000000"]).await;
    let (a, b) = pair_on(&redis, &[&x]).await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let uri_r = "http://example.com/idle";
    assert_eq!(a.get(uri_r).await, (200, "MISS".into(), 2));
    wait_invalidations(&b, 1).await;
    for replica in [&a, &b] {
        let gaps = "tmproxy_cache_shared_invalidation_gaps_total";
        assert_eq!(
            metric(replica.base(), gaps).await,
            0,
            "{}",
            replica.process.log()
        );
    }
}
