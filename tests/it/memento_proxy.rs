//! `/memento/proxy` against fake memento archives that record what they are asked: a URI-M is
//! fetched only from the archive that listed it and only under its configured prefixes, a HEAD
//! fetches no body, a coded body reaches only a client accepting its coding (any other gets it
//! inflated), a decompression bomb is a 502, and a client that does not read holds the budget,
//! so the next fetch gets a 503 rather than our memory.

use crate::support::{archive_config, client, config_for, metric_value, start_proxy};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tmproxy_testkit::mementos::{Listing, MementoArchive, MementoBody};
use tokio::io::AsyncWriteExt;

/// Lists one memento per URI-R, on the archive itself under `/arch/web/`.
fn own_listing() -> Listing {
    Arc::new(|addr, uri_r| vec![format!("http://{addr}/arch/web/20010101000000/{uri_r}")])
}

/// An archive configured under `/arch/` on the fake.
fn config_under_arch(id: &str, a: &MementoArchive) -> tmproxy::config::ArchiveConfig {
    archive_config(id, &a.url("/arch/timemap/link/"), &a.url("/arch/timegate/"))
}

fn gzip(plain: &[u8]) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    w.write_all(plain).expect("gzip");
    w.finish().expect("gzip")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_m_is_fetched_only_from_its_archive_under_its_prefixes() {
    let b = MementoArchive::start(own_listing(), MementoBody::plain(100))
        .await
        .expect("b");
    let b_addr = b.addr;
    // a lists, per URI-R: a memento of its own, one on b's host, one on its own host outside
    // its prefix.
    let listing: Listing = Arc::new(move |addr, uri_r| {
        let uri_m = if uri_r.contains("cross.example") {
            format!("http://{b_addr}/canary/x")
        } else if uri_r.contains("outside.example") {
            format!("http://{addr}/canary/x")
        } else {
            format!("http://{addr}/arch/web/20010101000000/{uri_r}")
        };
        vec![uri_m]
    });
    let a = MementoArchive::start(listing, MementoBody::plain(100))
        .await
        .expect("a");
    let mut config = config_for(&[]);
    config.archives = vec![config_under_arch("a", &a), config_under_arch("b", &b)];
    let proxy = start_proxy(config).await;
    let proxied = |host: &str| {
        format!(
            "{}/memento/proxy/2001/http://{host}/?archives=a",
            proxy.base
        )
    };

    let r = client()
        .get(proxied("good.example"))
        .send()
        .await
        .expect("good");
    assert_eq!(r.status(), 200);
    for host in ["cross.example", "outside.example"] {
        let r = client().get(proxied(host)).send().await.expect("refused");
        assert_eq!(r.status(), 502, "{host}");
        let body = r.text().await.expect("body");
        assert!(
            body.contains("not under this archive's configured prefixes"),
            "{body}"
        );
    }
    let canary = |archive: &MementoArchive| {
        archive
            .requests()
            .into_iter()
            .filter(|(_, path)| path.starts_with("/canary"))
            .count()
    };
    assert_eq!(canary(&b), 0, "b's canary was asked: {:?}", b.requests());
    assert!(b.requests().is_empty(), "b was asked: {:?}", b.requests());
    assert_eq!(canary(&a), 0, "a's canary was asked: {:?}", a.requests());
    assert_eq!(a.memento_requests().len(), 1, "{:?}", a.requests());
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_asks_the_archive_for_the_head_only() {
    let a = MementoArchive::start(own_listing(), MementoBody::plain(256 * 1024))
        .await
        .expect("a");
    let mut config = config_for(&[]);
    config.archives = vec![config_under_arch("a", &a)];
    let proxy = start_proxy(config).await;
    let url = format!("{}/memento/proxy/2001/http://head.example/", proxy.base);
    let r = client().head(&url).send().await.expect("head");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html");
    let asked = a.memento_requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "HEAD", "{asked:?}");
    assert_eq!(a.body_bytes_sent(), 0);
    // A GET still gets the whole body.
    let r = client().get(&url).send().await.expect("get");
    assert_eq!(r.bytes().await.expect("body").len(), 256 * 1024);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coded_memento_reaches_only_a_client_accepting_its_coding() {
    let plain: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("{} ", i % 977).into_bytes())
        .collect();
    let coded = gzip(&plain);
    let a = MementoArchive::start(own_listing(), MementoBody::coded(coded.clone(), "gzip"))
        .await
        .expect("a");
    let mut config = config_for(&[]);
    config.archives = vec![config_under_arch("a", &a)];
    config.server.memento_proxy_max_bytes = 4 * 1024 * 1024;
    let proxy = start_proxy(config).await;
    let url = format!("{}/memento/proxy/2001/http://coded.example/", proxy.base);
    for (accept, passed_on) in [
        (Some("gzip, deflate"), true),
        (Some("br;q=1, *;q=0.5"), true),
        (Some("br, zstd"), false),
        (Some("gzip;q=0"), false),
        (None, false),
    ] {
        let mut req = client().get(&url);
        if let Some(v) = accept {
            req = req.header("accept-encoding", v);
        }
        let r = req.send().await.expect("get");
        assert_eq!(r.status(), 200, "{accept:?}");
        let coding = r.headers().get("content-encoding").cloned();
        let body = r.bytes().await.expect("body");
        if passed_on {
            assert_eq!(coding.as_ref().map(|v| v.as_bytes()), Some(&b"gzip"[..]));
            assert_eq!(body.as_ref(), &coded[..], "{accept:?}");
        } else {
            assert_eq!(coding, None, "{accept:?}");
            assert_eq!(body.len(), plain.len(), "{accept:?}");
            assert!(
                body.as_ref() == &plain[..],
                "{accept:?}: not the inflated body"
            );
        }
    }
    proxy.stop().await;
}

/// `size` zeros, gzipped as members of 1 MiB each (one member coded once, repeated): a valid
/// gzip body that inflates to `size`, made in milliseconds.
pub fn gzip_bomb(size: usize) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    w.write_all(&vec![0u8; 1 << 20]).expect("gzip");
    let member = w.finish().expect("gzip");
    member.repeat(size >> 20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_a_502_whatever_the_client_accepts() {
    let bomb = gzip_bomb(1 << 30);
    let a = MementoArchive::start(own_listing(), MementoBody::coded(bomb, "gzip"))
        .await
        .expect("a");
    let mut config = config_for(&[]);
    config.archives = vec![config_under_arch("a", &a)];
    let proxy = start_proxy(config).await;
    let url = format!("{}/memento/proxy/2001/http://bomb.example/", proxy.base);
    for accept in ["gzip", "identity"] {
        let r = client()
            .get(&url)
            .header("accept-encoding", accept)
            .send()
            .await
            .expect("get");
        assert_eq!(r.status(), 502, "{accept}");
        let body = r.text().await.expect("body");
        assert!(
            body.contains("inflates past [server] memento_proxy_max_bytes"),
            "{body}"
        );
    }
    let gauge = metric_value(&proxy.base, "tmproxy_upstream_buffered_bytes").await;
    assert_eq!(gauge, Some(0.0), "the budget is given back");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_holds_the_budget_and_the_next_fetch_gets_a_503() {
    // Bigger than the sockets' buffers on both sides can take, so the answer cannot end:
    // loopback buffers autotune to several MiB each, four of them between the archive and the
    // client (16 MiB fitted in them once on a loaded machine).
    const SIZE: usize = 96 << 20;
    let a = MementoArchive::start(own_listing(), MementoBody::plain(SIZE))
        .await
        .expect("a");
    let mut config = config_for(&[]);
    config.archives = vec![config_under_arch("a", &a)];
    config.server.memento_proxy_max_bytes = 128 << 20;
    // The proxy's half has room for one streamed answer's bytes in flight, not two.
    config.upstream.max_buffered = 3 << 20;
    let proxy = start_proxy(config).await;
    let addr = proxy.base.trim_start_matches("http://").to_string();
    let target = "/memento/proxy/2001/http://stall.example/p";
    let mut stalled = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stalled.write_all(req.as_bytes()).await.expect("send");
    // Wait until its answer holds the budget.
    let mut held = 0.0;
    for _ in 0..200 {
        held = metric_value(&proxy.base, "tmproxy_upstream_buffered_bytes")
            .await
            .unwrap_or(0.0);
        if held >= 1024.0 * 1024.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        held >= 1024.0 * 1024.0,
        "the stalled answer holds {held} bytes"
    );
    let r = client()
        .get(format!(
            "{}/memento/proxy/2001/http://next.example/p",
            proxy.base
        ))
        .send()
        .await
        .expect("next");
    assert_eq!(r.status(), 503);
    let body = r.text().await.expect("body");
    assert!(body.contains("memory budget"), "{body}");
    // The archive was not read past what the stalled answer may hold.
    assert!(
        a.body_bytes_sent() < SIZE,
        "the whole memento was read for a client that reads nothing"
    );
    // The stalled client goes: its charge is given back, and the next fetch is served.
    drop(stalled);
    let mut status = 0;
    for _ in 0..100 {
        let r = client()
            .get(format!(
                "{}/memento/proxy/2001/http://after.example/p",
                proxy.base
            ))
            .send()
            .await
            .expect("after");
        status = r.status().as_u16();
        if status == 200 {
            assert_eq!(r.bytes().await.expect("body").len(), SIZE);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200);
    proxy.stop().await;
}
