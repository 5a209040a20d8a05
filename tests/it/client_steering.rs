//! What one client asks never decides what the shared cache holds for the others: a 4xx to a
//! hostile URI-R never puts an archive to sleep, a client's short deadline is never stored, and
//! one client's misses cannot teach routing to skip an archive.

use crate::support::{client, config_for, get_json, outcome, start_proxy};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

fn held() -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000", "20050101000000"]))
}

/// Five (and more) URI-Rs the archive refuses with a 400 used to make it dormant for five
/// minutes, so entries stored meanwhile lacked it. A 4xx is an answer to what a client asked,
/// not a fault of the archive: it is still asked, and is in the next entry.
#[tokio::test]
async fn client_errors_never_make_an_archive_dormant() {
    let good = SimulatedArchive::start(held()).await.expect("archive");
    let dorm = SimulatedArchive::start(Behaviour::Status(400, "bad request".into()))
        .await
        .expect("archive");
    let config = config_for(&[("good", &good), ("dorm", &dorm)]);
    assert_eq!(config.upstream.failures_before_dormant, 5);
    let proxy = start_proxy(config).await;
    // An encoded `..` is refused here (400) before any archive is asked; the malformed
    // escapes reach the archive, which answers 400.
    let (status, _) = get_json(&format!(
        "{}/timemap/json/http://dorm1.com/..%2f..%2f..%2fx",
        proxy.base
    ))
    .await;
    assert_eq!(status, 400);
    assert_eq!(dorm.requests(), 0, "refused before any archive is asked");
    let hostile = ["%zz", "a%zz", "%zzz", "b%zz", "c%zz", "d%zz", "e%zz"];
    for path in hostile {
        let (status, json) = get_json(&format!(
            "{}/timemap/json/http://dorm1.com/{path}",
            proxy.base
        ))
        .await;
        assert_eq!(status, 200, "{path}: {json}");
        let dorm = outcome(&json, "dorm");
        assert_eq!(dorm["http_status"], 400, "{path}: {dorm}");
        assert!(!dorm.to_string().contains("dormant"), "{path}: {dorm}");
    }
    let asked = dorm.requests();
    dorm.set_behaviour(held());
    let (status, json) = get_json(&format!(
        "{}/timemap/json/http://dorm1.com/real",
        proxy.base
    ))
    .await;
    assert_eq!(status, 200, "{json}");
    assert!(dorm.requests() > asked, "the archive is still asked");
    assert_eq!(outcome(&json, "dorm")["status"], "ok", "{json}");
    // And the stored entry holds it.
    let resp = client()
        .get(format!("{}/timemap/json/http://dorm1.com/real", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers()["x-cache"], "HIT");
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(outcome(&json, "dorm")["mementos"], 2, "{json}");
}

/// A 5xx still is the archive's fault: five of them make it dormant.
#[tokio::test]
async fn server_errors_still_make_an_archive_dormant() {
    let good = SimulatedArchive::start(held()).await.expect("archive");
    let broken = SimulatedArchive::start(Behaviour::Status(503, "down".into()))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("good", &good), ("broken", &broken)])).await;
    for i in 0..5 {
        let (status, _) =
            get_json(&format!("{}/timemap/json/http://down.com/{i}", proxy.base)).await;
        assert_eq!(status, 200);
    }
    let asked = broken.requests();
    let (_, json) = get_json(&format!("{}/timemap/json/http://down.com/next", proxy.base)).await;
    assert_eq!(broken.requests(), asked, "dormant: not asked");
    let detail = outcome(&json, "broken")["detail"].to_string();
    assert!(detail.contains("dormant"), "{detail}");
}

/// Archive `a` answers at once, `b` in 3 s: inside the server's 5 s deadline, past a client's 1 s.
async fn fast_and_slow() -> (SimulatedArchive, SimulatedArchive) {
    let a = SimulatedArchive::start(held()).await.expect("archive");
    let slow = TimeMapSpec {
        delay: Duration::from_secs(3),
        ..TimeMapSpec::of(&["20020101000000", "20030101000000", "20040101000000"])
    };
    let b = SimulatedArchive::start(Behaviour::TimeMap(slow))
        .await
        .expect("archive");
    (a, b)
}

fn header(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// A GET of `uri_r`'s JSON TimeMap with `query` and `prefer`: its X-Cache, X-Cache-Action,
/// X-Memento-Partial and body.
async fn timemap(
    base: &str,
    uri_r: &str,
    query: &str,
    prefer: Option<&str>,
) -> (String, String, String, serde_json::Value) {
    let mut req = client().get(format!("{base}/timemap/json/{uri_r}{query}"));
    if let Some(p) = prefer {
        req = req.header("prefer", p);
    }
    let resp = req.send().await.expect("request");
    assert_eq!(resp.status(), 200, "{uri_r}{query}");
    let (cache, action, partial) = (
        header(&resp, "x-cache"),
        header(&resp, "x-cache-action"),
        header(&resp, "x-memento-partial"),
    );
    let body = resp.text().await.expect("body");
    let json = serde_json::from_str(&body).expect("json");
    (cache, action, partial, json)
}

/// The client's cut answer: `b` named partial, `a`'s mementos there, and honestly not stored.
fn assert_cut_for_this_client(cache: &str, action: &str, partial: &str, json: &serde_json::Value) {
    assert_eq!(cache, "MISS", "{json}");
    assert_eq!(action, "not_stored", "{json}");
    assert_eq!(partial, "b", "{json}");
    assert_eq!(outcome(json, "a")["mementos"], 2, "{json}");
    assert_eq!(outcome(json, "b")["status"], "timeout", "{json}");
}

/// A short client deadline (`?timeout=1s`, `Prefer: wait=1`) used to store its cut answer for
/// everyone: the next plain client got a HIT without b for 15 days. Now the shared fan-out
/// runs on to the server's deadline and stores that; the next client joins it (b once).
#[tokio::test]
async fn a_short_client_deadline_is_never_stored_for_the_next_client() {
    for (n, (query, prefer)) in [("?timeout=1s", None), ("", Some("wait=1"))]
        .into_iter()
        .enumerate()
    {
        let (a, b) = fast_and_slow().await;
        let proxy = start_proxy(config_for(&[("a", &a), ("b", &b)])).await;
        let uri_r = format!("http://p4.com/x{n}");
        let (cache, action, partial, json) = timemap(&proxy.base, &uri_r, query, prefer).await;
        assert_cut_for_this_client(&cache, &action, &partial, &json);
        // The plain client right after: never a HIT partial for what only a client's deadline
        // cut; it waits for the shared fan-out, which has b.
        let (cache, _, partial, json) = timemap(&proxy.base, &uri_r, "", None).await;
        assert_eq!(partial, "", "{query}{prefer:?}: {cache} {json}");
        assert_eq!(outcome(&json, "b")["mementos"], 3, "{json}");
        let (cache, _, partial, json) = timemap(&proxy.base, &uri_r, "", None).await;
        assert_eq!((cache.as_str(), partial.as_str()), ("HIT", ""), "{json}");
        assert_eq!(outcome(&json, "b")["mementos"], 3, "{json}");
        assert_eq!(
            b.requests(),
            1,
            "{query}{prefer:?}: b asked once, not per client"
        );
        assert_eq!(a.requests(), 1, "{query}{prefer:?}");
        proxy.stop().await;
    }
}

/// With nobody joining, the fan-out the impatient client started still runs to the server's
/// deadline in the background and stores the entry with b.
#[tokio::test]
async fn the_background_fan_out_stores_what_the_servers_deadline_gives() {
    for (n, (query, prefer)) in [("?timeout=1s", None), ("", Some("wait=1"))]
        .into_iter()
        .enumerate()
    {
        let (a, b) = fast_and_slow().await;
        let proxy = start_proxy(config_for(&[("a", &a), ("b", &b)])).await;
        let uri_r = format!("http://p4.com/y{n}");
        let (cache, action, partial, json) = timemap(&proxy.base, &uri_r, query, prefer).await;
        assert_cut_for_this_client(&cache, &action, &partial, &json);
        // `only-if-cached` never asks the archives: 504 until the entry lands.
        let (partial, json) = stored_when(&proxy.base, &uri_r, |_| true)
            .await
            .expect("the background fan-out stored an entry within 20 s");
        assert_eq!(partial, "", "{query}{prefer:?}: {json}");
        assert_eq!(outcome(&json, "b")["mementos"], 3, "{json}");
        assert_eq!(b.requests(), 1, "{query}{prefer:?}");
        proxy.stop().await;
    }
}

/// The stored entry of `uri_r` once `landed` holds for it, asked with `only-if-cached` (which
/// never asks the archives) every 100 ms for at most 20 s: its X-Memento-Partial and JSON.
async fn stored_when(
    base: &str,
    uri_r: &str,
    landed: impl Fn(&serde_json::Value) -> bool,
) -> Option<(String, serde_json::Value)> {
    let url = format!("{base}/timemap/json/{uri_r}");
    for _ in 0..200 {
        let resp = client()
            .get(&url)
            .header("cache-control", "only-if-cached")
            .send()
            .await
            .expect("request");
        let (status, partial) = (resp.status(), header(&resp, "x-memento-partial"));
        let json: serde_json::Value =
            serde_json::from_str(&resp.text().await.expect("body")).expect("json");
        if status == 200 && landed(&json) {
            return Some((partial, json));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// A client bound to `127.0.0.{last}`: Linux routes all of 127/8 to loopback.
fn client_from(last: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, last]))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The JSON TimeMap of `uri_r` asked by `client`.
async fn routed(client: &reqwest::Client, base: &str, uri_r: &str) -> serde_json::Value {
    let resp = client
        .get(format!("{base}/timemap/json/{uri_r}"))
        .send()
        .await
        .expect("request");
    // 404 when no archive holds it: the body still tells each archive's answer.
    assert!([200, 404].contains(&resp.status().as_u16()), "{uri_r}");
    serde_json::from_str(&resp.text().await.expect("body")).expect("json")
}

/// Archives `a` and `b`, learned routing that never explores: `a` answers 404 and `b` holds.
async fn steerable() -> (SimulatedArchive, SimulatedArchive, tmproxy::config::Config) {
    let a = SimulatedArchive::start(Behaviour::Status(404, "not here".into()))
        .await
        .expect("archive");
    let b = SimulatedArchive::start(held()).await.expect("archive");
    let mut config = config_for(&[("a", &a), ("b", &b)]);
    config.routing.mode = tmproxy::config::RoutingMode::Learned;
    config.routing.explore = 0.0;
    assert_eq!(config.routing.max_per_client, 5);
    assert_eq!(config.routing.min_evidence, 20);
    (a, b, config)
}

/// One client's 120 misses under victim.org, which a answers 404 and b holds, used to teach
/// routing to skip a there: the victim's real page was then stored without a, not even
/// partial, for 15 days. One address counts five times per key: a is still asked.
#[tokio::test]
async fn one_client_cannot_teach_routing_to_skip_an_archive() {
    let (a, b, config) = steerable().await;
    let proxy = start_proxy(config).await;
    let attacker = client_from(1);
    for i in 0..120 {
        let json = routed(&attacker, &proxy.base, &format!("http://victim.org/nf-{i}")).await;
        assert_eq!(
            outcome(&json, "a")["status"],
            "not_found",
            "miss {i}: {json}"
        );
    }
    a.set_behaviour(held());
    let asked = a.requests();
    let json = routed(&client(), &proxy.base, "http://victim.org/real").await;
    assert_eq!(a.requests(), asked + 1, "a is asked: {json}");
    assert_eq!(outcome(&json, "a")["mementos"], 2, "{json}");
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://victim.org/real",
            proxy.base
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(header(&resp, "x-cache"), "HIT");
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(
        outcome(&json, "a")["mementos"],
        2,
        "the stored entry holds a: {json}"
    );
    assert!(b.requests() >= 121);
}

/// The bound is per client: six addresses, five misses each, are evidence enough (30 of the 20
/// min_evidence asks for). Misses no archive holds teach nothing, from however many clients.
#[tokio::test]
async fn many_clients_still_teach_a_skip_but_made_up_urls_teach_nothing() {
    let (a, b, config) = steerable().await;
    let proxy = start_proxy(config).await;
    let clients: Vec<reqwest::Client> = (2..8).map(client_from).collect();
    // Nobody holds these: 60 misses from six clients teach nothing.
    b.set_behaviour(Behaviour::Status(404, "not here".into()));
    for (n, c) in clients.iter().enumerate() {
        for i in 0..10 {
            routed(c, &proxy.base, &format!("http://victim.org/none-{n}-{i}")).await;
        }
    }
    b.set_behaviour(held());
    let json = routed(&clients[0], &proxy.base, "http://victim.org/after-none").await;
    assert_eq!(
        outcome(&json, "a")["status"],
        "not_found",
        "still asked: {json}"
    );
    // Each client's sixth miss is not counted; five from each of six is 30.
    for (n, c) in clients.iter().enumerate() {
        for i in 0..6 {
            routed(c, &proxy.base, &format!("http://victim.org/held-{n}-{i}")).await;
        }
    }
    let asked = a.requests();
    let json = routed(&client_from(9), &proxy.base, "http://victim.org/next").await;
    assert_eq!(outcome(&json, "a")["status"], "skipped", "{json}");
    assert_eq!(a.requests(), asked, "a not asked");
}

/// An expired entry asked with a deadline shorter than the refresh: the client gets the stored
/// entry STALE (b's mementos there, nothing named partial), and the refresh it started runs on
/// to the server's deadline and stores b's answer whole, never the client's cut.
#[tokio::test]
async fn an_expired_entry_is_served_stale_to_a_short_deadline_and_refreshed_whole() {
    use crate::cache::{set_day, sim_proxy};
    let a = SimulatedArchive::start(held()).await.expect("archive");
    let b = SimulatedArchive::start(held()).await.expect("archive");
    let proxy = sim_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    let uri_r = "http://p4.com/stale";
    let (cache, _, partial, json) = timemap(&proxy.base, uri_r, "", None).await;
    assert_eq!((cache.as_str(), partial.as_str()), ("MISS", ""), "{json}");
    assert_eq!(outcome(&json, "b")["mementos"], 2, "{json}");
    // b now answers in 3 s with a third memento; the entry is past its 15 days.
    b.set_behaviour(Behaviour::TimeMap(TimeMapSpec {
        delay: Duration::from_secs(3),
        ..TimeMapSpec::of(&["20010101000000", "20050101000000", "20090101000000"])
    }));
    set_day(&proxy, 16).await;
    let (cache, _, partial, json) = timemap(&proxy.base, uri_r, "?timeout=1s", None).await;
    assert_eq!((cache.as_str(), partial.as_str()), ("STALE", ""), "{json}");
    assert_eq!(
        outcome(&json, "b")["mementos"],
        2,
        "the stored entry: {json}"
    );
    // The refresh lands behind it with b whole (`only-if-cached`: 504 while the stored entry
    // is expired and the refresh has not landed).
    let (partial, json) = stored_when(&proxy.base, uri_r, |json| {
        outcome(json, "b")["mementos"] == 3
    })
    .await
    .expect("the refresh stored b's three mementos within 20 s");
    assert_eq!(partial, "", "{json}");
    assert_eq!(b.requests(), 2, "b asked once per fan-out");
    proxy.stop().await;
}
