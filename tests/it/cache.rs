//! The conditional cache through the real server: the simulated clock moves days in an instant,
//! simulated archives change between "days", and sled holds the entries on disk.

use crate::support::{client, config_for, memento_uris, start_proxy, start_proxy_with, Proxy};
use std::sync::Arc;
use std::time::Duration;
use tmproxy::app::ClockChoice;
use tmproxy::clock::SimClock;
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";
pub(crate) const TOKEN: &str = "test-admin-token";

fn tm(captures: &[&str]) -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec::of(captures))
}

async fn archive(b: Behaviour) -> SimulatedArchive {
    SimulatedArchive::start(b).await.expect("simulated archive")
}

/// 2012-05-01T00:00:00Z, the first day of the paper's observations.
pub(crate) fn day0() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(1_335_830_400, 0).expect("valid")
}

pub(crate) async fn sim_proxy(mut config: Config) -> Proxy {
    config.admin.token = TOKEN.to_string();
    start_proxy_with(
        config,
        ClockChoice::Simulated(Arc::new(SimClock::new(day0()))),
    )
    .await
}

/// Moves the proxy's simulated clock to `days` after day 0, through the admin API.
pub(crate) async fn set_day(proxy: &Proxy, days: i64) {
    let now = (day0() + chrono::Duration::days(days))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let resp = client()
        .put(format!("{}/admin/clock", proxy.base))
        .bearer_auth(TOKEN)
        .body(format!("{{\"now\": \"{now}\"}}"))
        .send()
        .await
        .expect("request");
    assert_eq!(
        resp.status(),
        200,
        "{}",
        resp.text().await.unwrap_or_default()
    );
}

/// GET a TimeMap as JSON with extra headers: (status, X-Cache, case, action, mementos).
async fn fetch(
    proxy: &Proxy,
    uri_r: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String, String, usize) {
    let mut req = client().get(format!("{}/timemap/json/{uri_r}", proxy.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request");
    let h = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, x_cache, case, action) = (
        resp.status().as_u16(),
        h("x-cache"),
        h("x-cache-case"),
        h("x-cache-action"),
    );
    let body = resp.text().await.expect("body");
    let n = serde_json::from_str::<serde_json::Value>(&body)
        .map(|j| memento_uris(&j).len())
        .unwrap_or(0);
    (status, x_cache, case, action, n)
}

#[tokio::test]
async fn a_second_request_is_a_hit_with_freshness_headers_and_etag() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    let first = client().get(&url).send().await.expect("request");
    assert_eq!(first.headers()["x-cache"], "MISS");
    assert_eq!(first.headers()["x-cache-action"], "stored");
    let second = client().get(&url).send().await.expect("request");
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["x-cache"], "HIT");
    assert_eq!(second.headers()["etag"], first.headers()["etag"]);
    let max_age: i64 = second.headers()["cache-control"]
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .expect("max-age");
    assert!(
        (15 * 86_400 - 60..=15 * 86_400).contains(&max_age),
        "{max_age}"
    );
    assert!(second.headers().contains_key("age"));
    assert!(second.headers().contains_key("last-modified"));
    let etag = second.headers()["etag"].clone();
    let third = client()
        .get(&url)
        .header("If-None-Match", etag)
        .send()
        .await
        .expect("request");
    assert_eq!(third.status(), 304);
    assert_eq!(a.requests(), 1, "one fan-out for three requests");
}

#[tokio::test]
async fn after_the_ttl_a_worse_timemap_is_kept_and_a_better_one_replaces() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let b = archive(tm(&["20030101000000", "20070101000000"])).await;
    let proxy = sim_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    assert_eq!(
        fetch(&proxy, URI_R, &[]).await,
        (200, "MISS".into(), "".into(), "stored".into(), 4)
    );

    // Day 16 (TTL 15 passed), archive b fails: fewer archives, fewer mementos = case 6, kept.
    b.set_behaviour(Behaviour::Status(503, "down".into()));
    set_day(&proxy, 16).await;
    assert_eq!(
        fetch(&proxy, URI_R, &[]).await,
        (200, "REFRESH".into(), "6".into(), "kept".into(), 4)
    );
    // Kept restarts the TTL: day 17 is a hit, nobody asked.
    set_day(&proxy, 17).await;
    let asked = a.requests();
    assert_eq!(fetch(&proxy, URI_R, &[]).await.1, "HIT");
    assert_eq!(a.requests(), asked);

    // Day 32: b is back and a gained a capture: case 2, replaced.
    b.set_behaviour(tm(&["20030101000000", "20070101000000"]));
    a.set_behaviour(tm(&["20010101000000", "20050101000000", "20090101000000"]));
    set_day(&proxy, 32).await;
    assert_eq!(
        fetch(&proxy, URI_R, &[]).await,
        (200, "REFRESH".into(), "2".into(), "replaced".into(), 5)
    );
}

#[tokio::test]
async fn a_cached_404_becomes_the_timemap_once_one_exists() {
    let a = archive(Behaviour::Status(404, String::new())).await;
    let proxy = sim_proxy(config_for(&[("a", &a)])).await;
    assert_eq!(fetch(&proxy, URI_R, &[]).await.0, 404);
    let (status, x_cache, ..) = fetch(&proxy, URI_R, &[]).await;
    assert_eq!(
        (status, x_cache.as_str()),
        (404, "HIT"),
        "the 404 is cached too"
    );
    assert_eq!(a.requests(), 1);
    a.set_behaviour(tm(&["20120510000000"]));
    set_day(&proxy, 16).await;
    assert_eq!(
        fetch(&proxy, URI_R, &[]).await,
        (200, "REFRESH".into(), "5".into(), "replaced".into(), 1)
    );
}

#[tokio::test]
async fn a_restart_serves_from_disk_without_asking_the_archives() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("a", &a)]);
    config.cache.path = dir.path().join("cache").display().to_string();
    let proxy = start_proxy(config.clone()).await;
    assert_eq!(fetch(&proxy, URI_R, &[]).await.1, "MISS");
    proxy.stop().await;

    a.set_behaviour(Behaviour::Status(500, "should not be asked".into()));
    let restarted = start_proxy(config).await;
    assert_eq!(
        fetch(&restarted, URI_R, &[]).await,
        (200, "HIT".into(), "".into(), "".into(), 2)
    );
    assert_eq!(a.requests(), 1, "served from the persistent tier");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_cold_requests_share_one_fan_out() {
    let slow = |captures: &[&str]| {
        Behaviour::TimeMap(TimeMapSpec {
            delay: Duration::from_millis(300),
            ..TimeMapSpec::of(captures)
        })
    };
    let a = archive(slow(&["20010101000000"])).await;
    let b = archive(slow(&["20020101000000"])).await;
    let proxy = start_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    let c = client();
    let all = futures::future::join_all((0..100).map(|_| {
        let (c, url) = (c.clone(), url.clone());
        async move { c.get(&url).send().await.map(|r| r.status().as_u16()) }
    }))
    .await;
    assert!(all.iter().all(|r| matches!(r, Ok(200))), "{all:?}");
    assert_eq!(
        (a.requests(), b.requests()),
        (1, 1),
        "each archive asked once"
    );
}

#[tokio::test]
async fn stale_if_error_serves_the_cached_timemap_when_every_archive_fails() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let proxy = sim_proxy(config_for(&[("a", &a)])).await;
    fetch(&proxy, URI_R, &[]).await;
    a.set_behaviour(Behaviour::Status(500, "down".into()));
    set_day(&proxy, 16).await;
    let (status, x_cache, _, _, n) = fetch(&proxy, URI_R, &[]).await;
    assert_eq!((status, x_cache.as_str(), n), (200, "STALE", 2));

    let mut config = config_for(&[("a", &a)]);
    config.cache.stale_if_error = false;
    let strict = sim_proxy(config).await;
    a.set_behaviour(tm(&["20010101000000"]));
    fetch(&strict, URI_R, &[]).await;
    a.set_behaviour(Behaviour::Status(500, "down".into()));
    set_day(&strict, 16).await;
    assert_eq!(
        fetch(&strict, URI_R, &[]).await.0,
        502,
        "off: the outage is reported"
    );
}

#[tokio::test]
async fn stale_while_revalidate_answers_at_once_and_refreshes_behind() {
    let a = archive(tm(&["20010101000000"])).await;
    let mut config = config_for(&[("a", &a)]);
    config.cache.stale_while_revalidate = Duration::from_secs(2 * 86_400);
    let proxy = sim_proxy(config).await;
    fetch(&proxy, URI_R, &[]).await;
    a.set_behaviour(tm(&["20010101000000", "20120510000000"]));
    set_day(&proxy, 16).await;
    let (status, x_cache, _, _, n) = fetch(&proxy, URI_R, &[]).await;
    assert_eq!(
        (status, x_cache.as_str(), n),
        (200, "STALE", 1),
        "the old TimeMap, at once"
    );
    // The background refresh lands; poll briefly (bounded) for the new TimeMap.
    let mut last = (0, String::new(), String::new(), String::new(), 0);
    for _ in 0..50 {
        last = fetch(&proxy, URI_R, &[]).await;
        if last.4 == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!((last.1.as_str(), last.4), ("HIT", 2));
    assert_eq!(a.requests(), 2);
}

#[tokio::test]
async fn no_cache_refreshes_at_most_once_per_min_refresh_interval() {
    let a = archive(tm(&["20010101000000"])).await;
    let proxy = sim_proxy(config_for(&[("a", &a)])).await;
    fetch(&proxy, URI_R, &[]).await;
    let nc = [("Cache-Control", "no-cache")];
    assert_eq!(fetch(&proxy, URI_R, &nc).await.1, "REFRESH");
    assert_eq!(
        fetch(&proxy, URI_R, &nc).await.1,
        "HIT",
        "within the interval: served from cache"
    );
    assert_eq!(a.requests(), 2);
    // A worse answer on a forced refresh still does not replace: the only archive now says 404,
    // so the fresh TimeMap lost its archive and its memento (case 6).
    a.set_behaviour(Behaviour::Status(404, String::new()));
    set_day(&proxy, 1).await;
    let (status, x_cache, case, action, n) = fetch(&proxy, URI_R, &nc).await;
    assert_eq!(
        (status, x_cache.as_str(), case.as_str(), action.as_str(), n),
        (200, "REFRESH", "6", "kept", 1)
    );
}

#[tokio::test]
async fn admin_routes_want_the_token() {
    let a = archive(tm(&["20010101000000"])).await;
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = TOKEN.to_string();
    let proxy = start_proxy(config).await;
    let url = format!("{}/admin/stats", proxy.base);
    let none = client().get(&url).send().await.expect("request");
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    let wrong = client()
        .get(&url)
        .bearer_auth("test-admin-tokeN")
        .send()
        .await
        .expect("request");
    assert_eq!(wrong.status(), 401);
    let right = client()
        .get(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(right.status(), 200);
    // Without --sim-clock the clock routes do not exist.
    let clock = client()
        .get(format!("{}/admin/clock", proxy.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(clock.status(), 404);

    let open = start_proxy(config_for(&[("a", &a)])).await;
    let resp = client()
        .get(format!("{}/admin/stats", open.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 403);
    assert!(resp
        .text()
        .await
        .expect("body")
        .contains("TMPROXY_ADMIN_TOKEN"));
}

/// `ttl_mode = "adaptive"`: the entry's own TTL, from its mementos (2001, 2003, 2005 on day 0:
/// 2.5 captures in 4,138 days, T = √(2 · 0.5 · 4138/2.5) ≈ 40.7 days), stored and obeyed.
#[tokio::test]
async fn an_adaptive_ttl_is_the_entrys_own_and_is_obeyed() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let b = archive(tm(&["20030101000000"])).await;
    let mut config = config_for(&[("a", &a), ("b", &b)]);
    config.cache.ttl_mode = tmproxy::config::TtlModeName::Adaptive;
    let proxy = sim_proxy(config).await;
    fetch(&proxy, URI_R, &[]).await;
    let entry_url = format!("{}/admin/cache/{URI_R}", proxy.base);
    let body = client()
        .get(&entry_url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    let e: serde_json::Value = serde_json::from_str(&body).expect("json");
    let ttl = e["ttl_seconds"].as_i64().expect("a TTL");
    assert!((40 * 86_400..41 * 86_400).contains(&ttl), "{e}");
    assert!(
        e["fresh_until"]
            .as_str()
            .is_some_and(|t| t.starts_with("2012-06-10T")),
        "{e}"
    );
    // Day 40 is a hit; day 41 asks the archives again.
    set_day(&proxy, 40).await;
    let (status, x_cache, ..) = fetch(&proxy, URI_R, &[]).await;
    assert_eq!((status, x_cache.as_str()), (200, "HIT"));
    set_day(&proxy, 41).await;
    let (_, x_cache, ..) = fetch(&proxy, URI_R, &[]).await;
    assert_eq!(x_cache, "REFRESH");
}

#[tokio::test]
async fn admin_inspects_refreshes_and_purges_an_entry() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let b = archive(tm(&["20030101000000"])).await;
    let proxy = sim_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    fetch(&proxy, URI_R, &[]).await;
    let entry_url = format!("{}/admin/cache/{URI_R}", proxy.base);
    let resp = client()
        .get(&entry_url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    let e: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(e["mementos"], 3);
    assert_eq!(e["archives"], 2);
    assert_eq!(e["fetched_at"], "2012-05-01T00:00:00Z");
    assert_eq!(e["fresh_until"], "2012-05-16T00:00:00Z");
    assert_eq!(e["ttl_seconds"], 15 * 86_400);
    assert_eq!(e["per_archive"][0]["archive"], "a");
    assert_eq!(e["per_archive"][0]["mementos"], 2);
    assert_eq!(e["history"][0]["action"], "stored");

    b.set_behaviour(Behaviour::Status(500, "down".into()));
    let resp = client()
        .post(&entry_url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    let r: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(
        (
            r["x_cache"].as_str(),
            r["case"].as_u64(),
            r["action"].as_str()
        ),
        (Some("REFRESH"), Some(6), Some("kept"))
    );
    assert_eq!(r["entry"]["history"].as_array().map(Vec::len), Some(2));

    let gone = client()
        .delete(&entry_url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(gone.status(), 204);
    let again = client()
        .get(&entry_url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), 404);
    assert_eq!(fetch(&proxy, URI_R, &[]).await.1, "MISS");

    let (status, stats) = {
        let resp = client()
            .get(format!("{}/admin/stats", proxy.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("request");
        (
            resp.status().as_u16(),
            serde_json::from_str::<serde_json::Value>(&resp.text().await.expect("body"))
                .expect("json"),
        )
    };
    assert_eq!(status, 200);
    assert_eq!(stats["misses"], 2);
    assert_eq!(stats["refreshes"]["case_6"]["kept"], 1);
    assert_eq!(stats["fetches_per_archive"]["a"], 3);
    assert!(stats["tiers"]["persistent"]["entries"].as_u64() >= Some(1));

    let metrics = client()
        .get(format!("{}/metrics", proxy.base))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    assert!(
        metrics.contains("tmproxy_cache_misses_total 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tmproxy_cache_decisions_total{case=\"case_6\",action=\"kept\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tmproxy_archive_fetches_total{archive=\"a\"} 3"),
        "{metrics}"
    );
}

#[tokio::test]
async fn every_fan_out_appends_an_observation_line() {
    let a = archive(tm(&["20010101000000", "20050101000000"])).await;
    let b = archive(Behaviour::Status(500, "down".into())).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("obs").join("observations.ndjson");
    let mut config = config_for(&[("a", &a), ("b", &b)]);
    config.observe.log = log.display().to_string();
    let proxy = sim_proxy(config).await;
    fetch(&proxy, URI_R, &[]).await;
    fetch(&proxy, URI_R, &[]).await; // a hit: no fan-out, no line
    set_day(&proxy, 16).await;
    fetch(&proxy, URI_R, &[]).await;
    let text = std::fs::read_to_string(&log).expect("log written");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["uri_r"], URI_R);
    assert_eq!(lines[0]["at"], "2012-05-01T00:00:00Z");
    assert_eq!(lines[1]["at"], "2012-05-17T00:00:00Z");
    assert_eq!(
        lines[0]["archives"][0],
        serde_json::json!({"id": "a", "status": "ok", "mementos": 2})
    );
    assert_eq!(lines[0]["archives"][1]["status"], "error");
    assert_eq!(
        lines[0]["mementos"][0],
        serde_json::json!(["a", "20010101000000", a.uri_m("20010101000000", URI_R)])
    );
}

#[tokio::test]
async fn policy_none_asks_every_time_and_stores_nothing() {
    let a = archive(tm(&["20010101000000"])).await;
    let mut config = config_for(&[("a", &a)]);
    config.cache.policy = tmproxy_core::policy::PolicyKind::None;
    let dir = tempfile::tempdir().expect("temp dir");
    let cache_path = dir.path().join("cache");
    config.cache.path = cache_path.display().to_string();
    let proxy = start_proxy(config).await;
    for _ in 0..3 {
        assert_eq!(fetch(&proxy, URI_R, &[]).await.1, "MISS");
    }
    assert_eq!(a.requests(), 3);
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers()["cache-control"], "max-age=0");
    assert_eq!(a.requests(), 4);
    proxy.stop().await;
    // Nothing reached the disk: the persistent tier was never even opened.
    assert!(
        !cache_path.exists(),
        "policy none created {}",
        cache_path.display()
    );
}

#[tokio::test]
async fn the_hot_tier_stays_within_hot_capacity_while_disk_keeps_everything() {
    let captures: Vec<String> = (0..100)
        .map(|i| format!("2001{:02}{:02}000000", 1 + i % 12, 1 + i / 12))
        .collect();
    let refs: Vec<&str> = captures.iter().map(String::as_str).collect();
    let a = archive(tm(&refs)).await;
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = TOKEN.to_string();
    config.cache.hot_capacity = 256 * 1024; // about three 100-memento entries
    let proxy = start_proxy(config).await;
    for i in 0..20 {
        let (status, ..) = fetch(&proxy, &format!("http://example.com/{i}"), &[]).await;
        assert_eq!(status, 200);
    }
    let resp = client()
        .get(format!("{}/admin/stats", proxy.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    let stats: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    let hot = stats["tiers"]["hot"]["bytes"].as_u64().expect("hot bytes");
    assert!(hot > 0 && hot <= 256 * 1024, "hot tier {hot} bytes");
    assert_eq!(stats["tiers"]["persistent"]["entries"], 20);
    // An entry evicted from memory is still served from disk, without asking the archive.
    let asked = a.requests();
    assert_eq!(fetch(&proxy, "http://example.com/0", &[]).await.1, "HIT");
    assert_eq!(a.requests(), asked);
}
