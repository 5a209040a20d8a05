//! A recorded MemGator answer served by a `kind = "aggregator"` archive beside a direct archive
//! listing the Internet Archive's part of it: every distinct memento once, those the two share
//! credited to the direct archive and counted as the aggregator's `dup`, the others credited
//! to the archives whose hosts they are on.

use super::reading::{distinct, read};
use super::serving::{config, fixture, fixture_text, proxy, recorded_archive};
use crate::support::{client, get_json};
use std::collections::BTreeMap;
use tmproxy::config::ArchiveKind;

const FILE: &str = "memgator-timemap-antifa.com-2020-10-29.link";
const URI_R: &str = "http://antifa.com";

/// The host of a URI-M, lower-cased, without a default port: whom the test credits it to.
fn host(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let authority = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let http = uri.to_ascii_lowercase().starts_with("http:");
    match authority.rsplit_once(':') {
        Some((h, "80")) if http => h.to_string(),
        Some((h, "443")) if !http => h.to_string(),
        _ => authority,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_memgator_answer_as_an_aggregator_beside_a_direct_archive() {
    let reading = read(&fixture_text(FILE));
    let all = distinct(&reading.mementos);
    // The direct archive lists the Internet Archive's part of the recording (taken from it
    // here, in the test; the corpus holds only what was recorded).
    let ia: Vec<_> = all
        .iter()
        .filter(|m| host(&m.uri) == "web.archive.org")
        .collect();
    assert!(
        ia.len() > 10 && ia.len() < all.len(),
        "{} of {}",
        ia.len(),
        all.len()
    );
    let mut direct = format!("<{URI_R}>; rel=\"original\"");
    for m in &ia {
        let date = super::reading::http_date(m.at);
        direct.push_str(&format!(
            ",\n<{}>; rel=\"memento\"; datetime=\"{date}\"",
            m.uri
        ));
    }
    let ia_fake = recorded_archive(direct.into_bytes()).await;
    let mg_fake = recorded_archive(fixture(FILE)).await;
    let mut c = config(&[ia_fake, mg_fake]);
    // "a" is the Internet Archive: its TimeGate (never asked here) puts web.archive.org among
    // its hosts, so the aggregator's mementos there are credited to it.
    c.archives[0].id = "ia".into();
    c.archives[0].timegate = "https://web.archive.org/web/".parse().expect("URL");
    c.archives[1].id = "mg".into();
    c.archives[1].kind = ArchiveKind::Aggregator;
    let proxy = proxy(c).await;

    let r = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["x-memento-count"],
        all.len().to_string().as_str()
    );
    let (k, n) = (ia.len(), all.len() - ia.len());
    assert_eq!(
        r.headers()["x-memento-archives"],
        format!("ia=ok;n={k};dup=0, mg=ok;n={n};dup={k}").as_str()
    );

    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let list = json["mementos"]["list"].as_array().expect("list");
    assert_eq!(list.len(), all.len());
    let mut by_archive: BTreeMap<String, usize> = BTreeMap::new();
    for m in list {
        let uri = m["uri"].as_str().expect("uri");
        let want = match host(uri).as_str() {
            "web.archive.org" => "ia".to_string(),
            other => other.to_string(),
        };
        assert_eq!(m["archive"].as_str(), Some(want.as_str()), "{uri}");
        *by_archive.entry(want).or_default() += 1;
    }
    // archives[]: the configured two, then one row per other host, via the aggregator.
    let rows = json["archives"].as_array().expect("archives");
    for row in rows.iter().filter(|r| r["via"] == "mg") {
        let id = row["id"].as_str().expect("id");
        assert_eq!(
            row["mementos"].as_u64(),
            by_archive.get(id).map(|n| *n as u64),
            "{row}"
        );
    }
    let via: usize = rows
        .iter()
        .filter(|r| r["via"] == "mg")
        .filter_map(|r| r["mementos"].as_u64())
        .sum::<u64>() as usize;
    assert_eq!(via, n, "{json}");
    assert!(by_archive.len() >= 3, "{by_archive:?}");
    proxy.stop().await;
}
