//! What an answer counts and flags: a URI-M two archives both list is
//! one memento, and an archive whose kept mementos are all served is not called missing.

use crate::cache::{set_day, sim_proxy, TOKEN};
use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, config_for, get_json, outcome, serve_fake};
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

/// A link-format TimeMap listing these (URI-M, 14-digit datetime) pairs.
fn link_timemap(mementos: &[(&str, &str)]) -> String {
    let mut body = format!("<{URI_R}>; rel=\"original\"");
    for (uri_m, ts) in mementos {
        let dt = tmproxy_core::timemap::datetime::parse_14digit(ts).expect("timestamp");
        let dt = tmproxy_core::timemap::datetime::format_rfc1123(dt);
        body.push_str(&format!(",\n<{uri_m}>; rel=\"memento\"; datetime=\"{dt}\""));
    }
    body.push('\n');
    body
}

/// A fake archive answering every TimeMap request with `body`.
async fn fixed_archive(body: String) -> std::net::SocketAddr {
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/link-format")], body) }
    });
    serve_fake(app).await.0
}

fn fixed_config(archives: &[(&str, std::net::SocketAddr)]) -> Config {
    let mut config = config_for(&[]);
    for (id, addr) in archives {
        config.archives.push(archive_config(
            id,
            &format!("http://{addr}/timemap/link/"),
            &format!("http://{addr}/timegate/"),
        ));
    }
    config
}

/// Two archives listing the very same URI-M at the same datetime (a mirror): one memento,
/// counted once in X-Memento-Count and the TimeMap, under the first archive; a third archive's
/// distinct URI-M at that datetime stays, and `/api/json` lists both distinct ones at it.
#[tokio::test]
async fn the_same_uri_m_from_two_archives_is_one_memento() {
    let shared = "http://mirror.example/web/20100101000000/http://example.com/";
    let own = "http://b.example/web/20100101000000/http://example.com/";
    let a = fixed_archive(link_timemap(&[
        (shared, "20100101000000"),
        ("http://a.example/2011", "20110101000000"),
    ]))
    .await;
    let b = fixed_archive(link_timemap(&[
        (shared, "20100101000000"),
        ("http://b.example/2012", "20120101000000"),
    ]))
    .await;
    let c = fixed_archive(link_timemap(&[(own, "20100101000000")])).await;
    let proxy = crate::support::start_proxy(fixed_config(&[("a", a), ("b", b), ("c", c)])).await;

    let r = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-memento-count"], "4");
    // b's listing of the shared URI-M is a's: not b's n, its dup.
    assert_eq!(
        r.headers()["x-memento-archives"],
        "a=ok;n=2;dup=0, b=ok;n=1;dup=1, c=ok;n=1;dup=0"
    );
    let body = r.text().await.expect("body");
    assert_eq!(body.matches(shared).count(), 1, "{body}");

    let (status, json) = get_json(&format!("{}/api/json/2010/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(
        json["mementos"]["closest"]["uri"],
        serde_json::json!([shared, own]),
        "every distinct URI-M at the datetime, the shared one once"
    );
    proxy.stop().await;
}

/// Against pywb: two configured archives that are the same pywb collection list the same
/// URI-Ms, so the aggregate is that collection's TimeMap once, not twice. Then pywb goes down:
/// the entry is kept (case 6) and its mementos are served without a partial flag, each pywb
/// archive `ok` with the connection failure as its `last_error`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pywb_collection_configured_twice_is_counted_once_and_kept_when_down() {
    let caps: Vec<Capture> = ["20150101000000", "20200202020202"]
        .iter()
        .map(|ts| Capture::new(URI_R, ts, "<html>x</html>"))
        .collect();
    let mut archive = tokio::task::spawn_blocking(move || PywbArchive::start("mirror", &caps))
        .await
        .expect("pywb starts");
    let sim = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("sim", &sim)]);
    for id in ["one", "two"] {
        config.archives.push(archive_config(
            id,
            &archive.timemap_prefix(),
            &archive.timegate_prefix(),
        ));
    }
    let proxy = sim_proxy(config).await;
    let url = format!("{}/timemap/json/{URI_R}", proxy.base);
    let (status, json) = get_json(&url).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(crate::support::memento_uris(&json).len(), 3, "{json}");
    assert_eq!(outcome(&json, "one")["mementos"], 2);
    assert_eq!(outcome(&json, "two")["mementos"], 0);
    assert_eq!(outcome(&json, "two")["status"], "ok");

    tokio::task::spawn_blocking(move || archive.stop())
        .await
        .expect("pywb stops");
    set_day(&proxy, 16).await;
    let r = client().get(&url).send().await.expect("GET");
    assert_eq!(r.headers()["x-cache"], "REFRESH");
    assert_eq!(r.headers()["x-cache-action"], "kept");
    assert!(r.headers().get("x-memento-partial").is_none());
    let json: serde_json::Value =
        serde_json::from_str(&r.text().await.expect("body")).expect("json");
    assert_eq!(crate::support::memento_uris(&json).len(), 3, "{json}");
    for id in ["one", "two"] {
        assert_eq!(outcome(&json, id)["status"], "ok", "{json}");
        assert_eq!(
            outcome(&json, id)["last_error"]["status"],
            "error",
            "{json}"
        );
    }
    proxy.stop().await;
}

/// Case 6 keeps the entry when an archive's refresh fails: its mementos are all still served,
/// so no answer calls it missing (X-Memento-Partial) in the 15 days the entry lives; its
/// outcome stays `ok` with its own `fetched_at`, and the failure is its `last_error`.
#[tokio::test]
async fn a_kept_archive_is_not_partial_and_its_failure_is_its_last_error() {
    let tm = |c: &[&str]| Behaviour::TimeMap(TimeMapSpec::of(c));
    let a = SimulatedArchive::start(tm(&["20010101000000", "20050101000000"]))
        .await
        .expect("archive");
    let b = SimulatedArchive::start(tm(&["20030101000000", "20070101000000"]))
        .await
        .expect("archive");
    let proxy = sim_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    let url = format!("{}/timemap/json/{URI_R}", proxy.base);
    let (status, _) = get_json(&url).await;
    assert_eq!(status, 200);

    b.set_behaviour(Behaviour::Status(503, "down".into()));
    set_day(&proxy, 16).await;
    for expected in ["REFRESH", "HIT"] {
        let r = client().get(&url).send().await.expect("GET");
        assert_eq!(r.headers()["x-cache"], expected);
        assert_eq!(r.headers()["x-memento-count"], "4");
        assert!(
            r.headers().get("x-memento-partial").is_none(),
            "{expected}: b's mementos are all served: {:?}",
            r.headers().get("x-memento-partial")
        );
        assert_eq!(
            r.headers()["x-memento-archives"],
            "a=ok;n=2;dup=0, b=ok;n=2;dup=0"
        );
        let json: serde_json::Value =
            serde_json::from_str(&r.text().await.expect("body")).expect("json");
        let b_out = outcome(&json, "b");
        assert_eq!(b_out["status"], "ok", "{json}");
        assert_eq!(b_out["fetched_at"], "2012-05-01T00:00:00Z", "{json}");
        assert_eq!(b_out["last_error"]["status"], "error", "{json}");
        assert_eq!(b_out["last_error"]["http_status"], 503, "{json}");
        assert_eq!(b_out["last_error"]["at"], "2012-05-17T00:00:00Z", "{json}");
        assert!(outcome(&json, "a").get("last_error").is_none(), "{json}");
        // The entry was kept: a's served mementos are still day 0's.
        assert_eq!(outcome(&json, "a")["fetched_at"], "2012-05-01T00:00:00Z");
    }
    let entry = client()
        .get(format!("{}/admin/cache/{URI_R}", proxy.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET");
    let entry: serde_json::Value =
        serde_json::from_str(&entry.text().await.expect("body")).expect("json");
    assert_eq!(
        entry["per_archive"][1]["last_error"]["status"], "error",
        "{entry}"
    );

    // An archive with nothing served is still missing: a third day, a first ask of another
    // URI-R with b down names b.
    let other = format!("{}/timemap/json/http://example.com/other", proxy.base);
    let r = client().get(&other).send().await.expect("GET");
    assert_eq!(r.headers()["x-memento-partial"], "b");

    // b answers again: its failure is cleared.
    b.set_behaviour(tm(&["20030101000000", "20070101000000"]));
    set_day(&proxy, 40).await;
    let (_, json) = get_json(&url).await;
    assert!(outcome(&json, "b").get("last_error").is_none(), "{json}");
    proxy.stop().await;
}
