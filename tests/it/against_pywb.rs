//! The aggregator in front of real archive software nobody here wrote: two pywb servers with
//! overlapping captures of the same URLs.

use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, get_json, memento_uris, outcome, start_proxy};
use std::time::Duration;
use tmproxy::config::Config;

const URI_R: &str = "http://example.com/";

fn captures(url: &str, stamps: &[&str]) -> Vec<Capture> {
    stamps
        .iter()
        .map(|ts| Capture::new(url, ts, &format!("<html>{url} at {ts}</html>")))
        .collect()
}

fn config_for(archives: &[(&str, &PywbArchive)]) -> Config {
    let mut config = Config::default();
    config.upstream.deadline = Duration::from_secs(10);
    config.upstream.timeout = Duration::from_secs(10);
    config.archives = archives
        .iter()
        .map(|(id, a)| archive_config(id, &a.timemap_prefix(), &a.timegate_prefix()))
        .collect();
    config
}

/// pywb lists mementos as `{base}/{coll}/{ts}mp_/{url}`.
fn uri_m(a: &PywbArchive, coll: &str, ts: &str, url: &str) -> String {
    format!("{}/{coll}/{ts}mp_/{url}", a.base_url())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pywb_archives_aggregate_dedup_timegate_and_partial_answer() {
    // Overlap: both hold 2020-01-01 12:00:00; each has captures the other lacks; a second URL
    // proves pywb's answer is per URI-R.
    let a_caps: Vec<Capture> = [
        captures(URI_R, &["20200101120000", "20210615083000"]),
        captures("http://example.com/other", &["20190101000000"]),
        captures(
            "http://example.com/third",
            &["20180101000000", "20190202000000"],
        ),
    ]
    .concat();
    let b_caps = captures(
        URI_R,
        &["20200101120000", "20221231235959", "20150505050505"],
    );
    let archives = tokio::task::spawn_blocking(move || {
        PywbArchive::start_all(&[("a", &a_caps), ("b", &b_caps)])
    })
    .await
    .expect("pywb starts");
    let (a, b) = (&archives[0], &archives[1]);
    let proxy = start_proxy(config_for(&[("pywb-a", a), ("pywb-b", b)])).await;

    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(
        memento_uris(&json),
        vec![
            uri_m(b, "b", "20150505050505", URI_R),
            uri_m(a, "a", "20200101120000", URI_R),
            uri_m(b, "b", "20200101120000", URI_R),
            uri_m(a, "a", "20210615083000", URI_R),
            uri_m(b, "b", "20221231235959", URI_R),
        ]
    );
    assert_eq!(outcome(&json, "pywb-a")["status"], "ok");
    assert_eq!(outcome(&json, "pywb-a")["mementos"], 2);
    assert_eq!(outcome(&json, "pywb-b")["mementos"], 3);
    assert_eq!(
        outcome(&json, "pywb-a")["skipped"],
        0,
        "pywb's `collection` attribute is not an error"
    );

    // The link format serves each memento once.
    let text = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    for uri in memento_uris(&json) {
        assert_eq!(
            text.matches(&format!("<{uri}>")).count(),
            1,
            "{uri} once in {text}"
        );
    }

    // TimeGate: closest across both archives, including pywb-b's neighbour.
    let resp = client()
        .get(format!("{}/timegate/{URI_R}", proxy.base))
        .header("Accept-Datetime", "Sun, 01 Aug 2021 00:00:00 GMT")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 302);
    assert_eq!(
        resp.headers()["location"],
        uri_m(a, "a", "20210615083000", URI_R).as_str()
    );
    let link = resp.headers()["link"].to_str().expect("ascii").to_string();
    assert!(
        link.contains(&format!(
            "<{}>; rel=\"next last memento\"",
            uri_m(b, "b", "20221231235959", URI_R)
        )),
        "{link}"
    );

    // A URI-R only pywb-a holds: pywb-b's 404 is "not_found", not a failure.
    let (status, json) = get_json(&format!(
        "{}/timemap/json/http://example.com/other",
        proxy.base
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(outcome(&json, "pywb-b")["status"], "not_found");
    assert_eq!(memento_uris(&json).len(), 1);

    // Stop pywb-b. A URI-R not cached yet: a partial 200 that names it.
    let mut archives = archives;
    tokio::task::block_in_place(|| archives[1].stop());
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://example.com/third",
            proxy.base
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-cache"], "MISS");
    assert_eq!(resp.headers()["x-memento-partial"], "pywb-b");
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(outcome(&json, "pywb-b")["status"], "error");
    assert_eq!(outcome(&json, "pywb-a")["status"], "ok");
    assert_eq!(memento_uris(&json).len(), 2);

    // The cached URI-R, refreshed on the client's demand while pywb-b is down: the fresh
    // TimeMap lost an archive and mementos (Table 1 case 6), so the conditional policy keeps
    // the five-memento TimeMap instead of replacing it with pywb-a's two.
    let resp = client()
        .get(format!("{}/timemap/json/{URI_R}", proxy.base))
        .header("Cache-Control", "no-cache")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-cache"], "REFRESH");
    assert_eq!(resp.headers()["x-cache-case"], "6");
    assert_eq!(resp.headers()["x-cache-action"], "kept");
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(memento_uris(&json).len(), 5);
}
