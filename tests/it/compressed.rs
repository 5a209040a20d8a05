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
        let r = client()
            .get(&url)
            .header("accept-encoding", accept)
            .send()
            .await
            .expect("GET");
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
        let r = client()
            .get(&url)
            .header("accept-encoding", "gzip")
            .send()
            .await
            .expect("GET");
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
        let r = client()
            .get(&url)
            .header("accept-encoding", BROWSER)
            .send()
            .await
            .expect("GET");
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
