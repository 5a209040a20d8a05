//! Compressed TimeMap answers: a client that accepts br,
//! zstd or gzip gets the body coded, made once per cached entry, with its own ETag and
//! `Vary: Accept-Encoding`; one that accepts none gets it as it is.

use crate::support::{client, config_for, start_proxy};
use std::io::Read;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

#[tokio::test]
async fn each_accepted_coding_decodes_to_the_same_timemap() {
    let stamps: Vec<String> = (0..400)
        .map(|i| format!("2001{:02}{:02}000000", 1 + i % 12, 1 + i % 28))
        .collect();
    let stamps: Vec<&str> = stamps.iter().map(String::as_str).collect();
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&stamps)))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let url = format!("{}/timemap/link/http://example.com/", proxy.base);
    let plain = client().get(&url).send().await.expect("GET");
    assert_eq!(plain.status(), 200);
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(plain.headers()["vary"], "accept-encoding");
    let plain_etag = plain.headers()["etag"].to_str().expect("ascii").to_owned();
    let plain = plain.bytes().await.expect("body");

    for (accept, coding) in [
        ("gzip, deflate, br, zstd", "br"),
        ("zstd", "zstd"),
        ("gzip;q=1, br;q=0.1", "gzip"),
    ] {
        let r = get_accepting(&url, accept).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-cache"], "HIT");
        assert_eq!(r.headers()["content-encoding"], coding, "{accept}");
        let etag = r.headers()["etag"].to_str().expect("ascii").to_owned();
        assert_ne!(etag, plain_etag, "each coding its own ETag");
        let coded = r.bytes().await.expect("body");
        assert!(
            coded.len() * 4 < plain.len(),
            "{coding}: {} bytes",
            coded.len()
        );
        let mut back = Vec::new();
        match coding {
            "br" => brotli::Decompressor::new(&coded[..], 4096).read_to_end(&mut back),
            "zstd" => {
                zstd::stream::Decoder::new(&coded[..]).and_then(|mut d| d.read_to_end(&mut back))
            }
            _ => flate2::read::GzDecoder::new(&coded[..]).read_to_end(&mut back),
        }
        .expect("decodes");
        assert_eq!(back, plain, "{coding}");
        // Revalidating with either tag: the client holds this content in some coding.
        for tag in [&etag, &plain_etag] {
            let r = client()
                .get(&url)
                .header("accept-encoding", accept)
                .header("if-none-match", tag.as_str())
                .send()
                .await
                .expect("GET");
            assert_eq!(r.status(), 304, "{coding} with {tag}");
        }
    }
    // Nothing of ours accepted: as it is.
    let r = client()
        .get(&url)
        .header("accept-encoding", "identity, deflate;q=0.5")
        .send()
        .await
        .expect("GET");
    assert!(r.headers().get("content-encoding").is_none());
    assert_eq!(r.bytes().await.expect("body"), plain);
    proxy.stop().await;
}

/// A page is coded from its own body, not the whole TimeMap's (found merging pages with
/// coding: a page asked with `Accept-Encoding` must decode to that page).
#[tokio::test]
async fn a_coded_page_is_that_page() {
    let stamps = [
        "20010101000000",
        "20020101000000",
        "20030101000000",
        "20040101000000",
        "20050101000000",
    ];
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&stamps)))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.server.page_size = 2;
    let proxy = start_proxy(config).await;
    for format in ["link", "json", "cdxj"] {
        let url = format!("{}/timemap/{format}/2/http://example.com/", proxy.base);
        let plain = client().get(&url).send().await.expect("GET");
        assert_eq!(plain.status(), 200, "{format}");
        let plain = plain.bytes().await.expect("body");
        let r = get_accepting(&url, "gzip").await;
        assert_eq!(r.headers()["content-encoding"], "gzip", "{format}");
        let coded = r.bytes().await.expect("body");
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&coded[..])
            .read_to_end(&mut back)
            .expect("decodes");
        assert_eq!(back, plain, "{format}");
        let whole = client()
            .get(url.replace("/2/", "/"))
            .send()
            .await
            .expect("GET");
        let whole = whole.bytes().await.expect("body");
        assert_ne!(back, whole, "{format}: the page, not the whole TimeMap");
    }
    proxy.stop().await;
}

/// What a browser sends.
const BROWSER: &str = "gzip, deflate, br, zstd";

fn decoded(coding: &str, coded: &[u8]) -> Vec<u8> {
    let mut back = Vec::new();
    match coding {
        "br" => brotli::Decompressor::new(coded, 4096).read_to_end(&mut back),
        "zstd" => zstd::stream::Decoder::new(coded).and_then(|mut d| d.read_to_end(&mut back)),
        "gzip" => flate2::read::GzDecoder::new(coded).read_to_end(&mut back),
        other => panic!("coded as {other:?}"),
    }
    .expect("decodes");
    back
}

/// A TimeMap too big to code whole in memory (over 16 MiB as link format) and too heavy for
/// the hot tier: a browser's first request (the MISS that stores it) and those right after it,
/// while its coded renderings are written, each get it coded, never the plain body; and once
/// written, the stored coding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_timemap_is_coded_for_a_browser_from_the_first_request() {
    let start = chrono::DateTime::from_timestamp(978_307_200, 0).expect("2001");
    let stamps: Vec<String> = (0..170_000)
        .map(|i| {
            (start + chrono::Duration::minutes(i))
                .format("%Y%m%d%H%M%S")
                .to_string()
        })
        .collect();
    let stamps: Vec<&str> = stamps.iter().map(String::as_str).collect();
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&stamps)))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.cache.hot_capacity = 8 * 1024 * 1024;
    let proxy = start_proxy(config).await;
    let url = format!("{}/timemap/link/http://example.com/", proxy.base);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let r = get_accepting(&url, BROWSER).await;
        assert_eq!(r.status(), 200);
        let coding = r
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        let x_cache = r.headers()["x-cache"].to_str().expect("ascii").to_owned();
        let body = r.bytes().await.expect("body");
        assert!(
            body.len() < 8 * 1024 * 1024,
            "{x_cache} {coding:?}: {} bytes",
            body.len()
        );
        seen.push((x_cache, decoded(&coding, &body)));
    }
    let plain = client().get(&url).send().await.expect("GET");
    assert!(plain.headers().get("content-encoding").is_none());
    let plain = plain.bytes().await.expect("body");
    assert!(plain.len() > 16 * 1024 * 1024, "{} bytes", plain.len());
    for (x_cache, back) in &seen {
        assert!(back == &plain, "{x_cache}: decodes to {} bytes", back.len());
    }
    assert_eq!(seen[0].0, "MISS");
    proxy.stop().await;
}

/// A whole TimeMap's head is made once per cached entry, format and coding, and cloned for each
/// answer: every hit carries the head the first answer carried, with its own per-answer values
/// (cache status, age, request id), in each coding; a 304 for a coded representation names no
/// coding.
#[tokio::test]
async fn every_hit_carries_the_first_answers_head_with_its_own_values() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20020202000000",
    ])))
    .await
    .expect("archive");
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let url = format!("{}/timemap/link/http://example.com/", proxy.base);
    // `max-age` counts down with the wall clock: three answers may straddle a second.
    let per_answer = [
        "x-cache",
        "x-cache-action",
        "age",
        "cache-control",
        "x-request-id",
        "date",
    ];
    let head_of = |r: &reqwest::Response| {
        let mut h: Vec<(String, String)> = r
            .headers()
            .iter()
            .filter(|(n, _)| !per_answer.contains(&n.as_str()))
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("?").to_owned()))
            .collect();
        h.sort();
        h
    };
    for accept in ["identity", "br", "gzip"] {
        let mut heads = Vec::new();
        let mut ids = std::collections::HashSet::new();
        for i in 0..3 {
            let r = get_accepting(&url, accept).await;
            assert_eq!(r.status(), 200);
            let expected = if accept == "identity" && i == 0 {
                "MISS"
            } else {
                "HIT"
            };
            assert_eq!(r.headers()["x-cache"], expected, "{accept} #{i}");
            assert!(r.headers().contains_key("age"), "{accept} #{i}");
            let cache_control = r.headers()["cache-control"].to_str().expect("ascii");
            assert!(cache_control.starts_with("max-age="), "{cache_control}");
            assert_eq!(r.headers()["x-content-type-options"], "nosniff");
            assert_eq!(r.headers()["access-control-allow-origin"], "*");
            let id = r.headers()["x-request-id"]
                .to_str()
                .expect("ascii")
                .to_owned();
            assert!(ids.insert(id), "each answer has its own request id");
            heads.push(head_of(&r));
        }
        assert!(
            heads.windows(2).all(|w| w[0] == w[1]),
            "{accept}: {heads:?}"
        );
        let head = &heads[0];
        let value = |name: &str| head.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(
            value("content-encoding").as_deref(),
            (accept != "identity").then_some(accept)
        );
        let etag = value("etag").expect("an ETag");
        let coded_tag = accept != "identity";
        assert_eq!(etag.ends_with(&format!("-{accept}\"")), coded_tag, "{etag}");
        // The client has this representation: a 304, with its ETag and no coding.
        let r = client()
            .get(&url)
            .header("accept-encoding", accept)
            .header("if-none-match", &etag)
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 304, "{accept}");
        assert_eq!(r.headers()["etag"], etag.as_str());
        assert!(r.headers().get("content-encoding").is_none(), "{accept}");
    }
}

/// `url` asked with `Accept-Encoding: accept`.
async fn get_accepting(url: &str, accept: &str) -> reqwest::Response {
    client()
        .get(url)
        .header("accept-encoding", accept)
        .send()
        .await
        .expect("GET")
}
