//! `[server] trusted_proxies` through the real app: behind a trusted balancer (the test connects
//! from 127.0.0.1, configured as trusted) clients are told apart by the address it forwards; a
//! peer that is not trusted is limited as itself whatever it claims (the test connects from
//! 127.0.0.2: Linux routes all of 127/8 to lo).

use crate::support::{config_for, start_proxy, Proxy};
use std::net::IpAddr;
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

/// A proxy allowing each client two requests, then one per 100 s: the third in a row is
/// refused however slow the machine is.
async fn limited_proxy(archive: &SimulatedArchive, trusted: &[&str]) -> Proxy {
    let mut config = config_for(&[("a", archive)]);
    config.server.rate_limit = 0.01;
    config.server.rate_burst = 2;
    config.server.trusted_proxies = trusted
        .iter()
        .map(|t| match t.contains('/') {
            true => t.parse().expect("net"),
            false => format!("{t}/32").parse().expect("address"),
        })
        .collect();
    start_proxy(config).await
}

async fn archive() -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive")
}

/// A client whose connections leave from `from`.
fn client_from(from: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::from(from))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The status of one TimeMap request with these headers.
async fn status(client: &reqwest::Client, proxy: &Proxy, headers: &[(&str, &str)]) -> u16 {
    let mut req = client.get(format!("{}/timemap/link/http://example.com/", proxy.base));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.send().await.expect("request").status().as_u16()
}

/// Two requests admitted, the third refused: the statuses of three in a row.
async fn three(client: &reqwest::Client, proxy: &Proxy, headers: &[(&str, &str)]) -> [u16; 3] {
    [
        status(client, proxy, headers).await,
        status(client, proxy, headers).await,
        status(client, proxy, headers).await,
    ]
}

const USED_UP: [u16; 3] = [200, 200, 429];

#[tokio::test]
async fn clients_behind_a_trusted_proxy_are_limited_apart() {
    let a = archive().await;
    let proxy = limited_proxy(&a, &["127.0.0.1"]).await;
    let balancer = client_from([127, 0, 0, 1]);
    let first = [("x-forwarded-for", "203.0.113.1")];
    assert_eq!(three(&balancer, &proxy, &first).await, USED_UP);
    // Another client through the same balancer has its own bucket…
    let second = [("x-forwarded-for", "203.0.113.2")];
    assert_eq!(status(&balancer, &proxy, &second).await, 200);
    // …and so has the balancer itself, asking for its own sake.
    assert_eq!(status(&balancer, &proxy, &[]).await, 200);
    // The first is still refused, whatever it writes left of its address.
    let claims = [("x-forwarded-for", "198.51.100.9, 203.0.113.1")];
    assert_eq!(status(&balancer, &proxy, &claims).await, 429);
    // A malformed header from the balancer falls back to the balancer's own bucket.
    let bad = [("x-forwarded-for", "203.0.113.1, not-an-address")];
    assert_eq!(status(&balancer, &proxy, &bad).await, 200);
    assert_eq!(status(&balancer, &proxy, &bad).await, 429);
}

#[tokio::test]
async fn a_spoofed_header_from_an_untrusted_peer_is_ignored() {
    let a = archive().await;
    let proxy = limited_proxy(&a, &["127.0.0.1"]).await;
    let spoofer = client_from([127, 0, 0, 2]);
    // A new address claimed on every request, in both headers: still one client, 127.0.0.2.
    let mut statuses = Vec::new();
    for i in 1..=3 {
        let xff = format!("203.0.113.{i}");
        let fwd = format!("for=198.51.100.{i}");
        let claims = [
            ("x-forwarded-for", xff.as_str()),
            ("forwarded", fwd.as_str()),
        ];
        statuses.push(status(&spoofer, &proxy, &claims).await);
    }
    assert_eq!(statuses, USED_UP);
    // The addresses it claimed were never charged: a client really behind the balancer with
    // one of them is served.
    let balancer = client_from([127, 0, 0, 1]);
    let claimed = [("x-forwarded-for", "203.0.113.1")];
    assert_eq!(three(&balancer, &proxy, &claimed).await, USED_UP);
}

#[tokio::test]
async fn forwarded_for_in_its_bracketed_form_names_the_client() {
    let a = archive().await;
    let proxy = limited_proxy(&a, &["127.0.0.1"]).await;
    let balancer = client_from([127, 0, 0, 1]);
    assert_eq!(
        three(&balancer, &proxy, &[("forwarded", "for=\"[::1]:80\"")]).await,
        USED_UP
    );
    // The same client on another port, and with other parameters: the same bucket.
    let same = [("forwarded", "proto=http;for=\"[::1]:4711\";by=127.0.0.1")];
    assert_eq!(status(&balancer, &proxy, &same).await, 429);
    // Another address in each form: buckets of their own.
    for other in [
        "for=\"[2001:db8::7]\"",
        "for=192.0.2.60:8080",
        "For=192.0.2.61",
    ] {
        let fwd = [("forwarded", other)];
        assert_eq!(status(&balancer, &proxy, &fwd).await, 200, "{other}");
    }
}

#[tokio::test]
async fn the_right_most_untrusted_address_of_a_chain_is_the_client() {
    let a = archive().await;
    // Two balancers in a row: an outer one in 10.0.0.0/8, then this one on 127/8.
    let proxy = limited_proxy(&a, &["127.0.0.0/8", "10.0.0.0/8"]).await;
    let balancer = client_from([127, 0, 0, 1]);
    let chain = [(
        "x-forwarded-for",
        "198.51.100.7, 203.0.113.9, 10.1.1.1, 127.0.0.5",
    )];
    assert_eq!(three(&balancer, &proxy, &chain).await, USED_UP);
    // 203.0.113.9 whatever it claimed to its left, and however many trusted hops follow.
    let same = [("x-forwarded-for", "192.0.2.1, 203.0.113.9, 10.2.2.2")];
    assert_eq!(status(&balancer, &proxy, &same).await, 429);
    // The left hop was never the client: as the right-most one now, it is served.
    let left = [("x-forwarded-for", "203.0.113.9, 198.51.100.7")];
    assert_eq!(status(&balancer, &proxy, &left).await, 200);
}
