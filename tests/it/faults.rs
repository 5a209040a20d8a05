//! Upstream faults, each through the real app: an archive that hangs after its headers, resets
//! mid-body, trickles a byte at a time, sends a body far past max_body, an unasked-for gzip
//! bomb, binary garbage, a redirect loop, 429 with Retry-After, fails the TLS handshake or is
//! not listening at all. The proxy answers within the deadline with the other archive's
//! mementos, names the fault in `archives[]`, and a forced refresh during the fault never
//! replaces the better cached TimeMap.

use crate::support::{client, config_for, start_proxy};
use serde_json::Value;
use std::time::Duration;
use tmproxy::demo::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://faults.example/";
const TOKEN: &str = "faults-token";

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The outcome `archives[]` reports for `id`.
fn outcome<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["archives"]
        .as_array()
        .and_then(|a| a.iter().find(|o| o["id"] == id))
        .unwrap_or(&Value::Null)
}

async fn fault_case(fault: Behaviour, expect_status: &[&str]) {
    let good = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20020101000000",
    ])))
    .await
    .expect("good archive");
    let flaky = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20030101000000",
        "20040101000000",
        "20050101000000",
    ])))
    .await
    .expect("flaky archive");
    let mut config = config_for(&[("good", &good), ("flaky", &flaky)]);
    config.upstream.timeout = Duration::from_secs(2);
    config.upstream.deadline = Duration::from_secs(3);
    config.upstream.max_body = 1024 * 1024;
    config.admin.token = TOKEN.into();
    let proxy = start_proxy(config).await;
    let http = client();

    // Cached while both behave: 5 mementos.
    let (status, v) = json_of(
        http.get(format!("{}/timemap/json/{URI_R}", proxy.base))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["mementos"]["list"].as_array().map(Vec::len), Some(5));

    // The fault, then a forced refresh: the cache keeps the better TimeMap (case 6, kept).
    flaky.set_behaviour(fault.clone());
    let (status, v) = json_of(
        http.post(format!("{}/admin/cache/{URI_R}", proxy.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("POST refresh"),
    )
    .await;
    assert_eq!(status, 200, "{fault:?}: {v}");
    assert_eq!(v["action"], "kept", "{fault:?}: {v}");
    assert_eq!(
        v["entry"]["mementos"], 5,
        "{fault:?}: the better TimeMap stays: {v}"
    );
    // ...and the kept answer names this refetch's failure, not the outcome it was stored with.
    let named = |v: &Value| {
        let s = outcome(v, "flaky")["status"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            expect_status.contains(&s.as_str()),
            "{fault:?}: flaky reported {s:?} after the failed refetch: {v}"
        );
    };
    named(&v);
    // The next hit says the same, and X-Memento-Partial names the archive, while its cached
    // mementos are still served.
    let r = http
        .get(format!("{}/timemap/json/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(
        r.headers().get("x-cache").and_then(|h| h.to_str().ok()),
        Some("HIT")
    );
    assert_eq!(
        r.headers()
            .get("x-memento-partial")
            .and_then(|h| h.to_str().ok()),
        Some("flaky"),
        "{fault:?}"
    );
    let (_, v) = json_of(r).await;
    named(&v);
    assert_eq!(v["mementos"]["list"].as_array().map(Vec::len), Some(5));

    // A URI-R not cached yet, during the fault: the good archive's mementos, the fault named,
    // within the deadline (3 s; the bound below only catches a hang, it times nothing).
    let asked = std::time::Instant::now();
    let (status, v) = json_of(
        http.get(format!("{}/timemap/json/{URI_R}other", proxy.base))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert!(
        asked.elapsed() < Duration::from_secs(3 + 10),
        "{fault:?}: answered after {:?}",
        asked.elapsed()
    );
    assert_eq!(status, 200, "{fault:?}: {v}");
    assert_eq!(
        v["mementos"]["list"].as_array().map(Vec::len),
        Some(2),
        "{fault:?}"
    );
    let flaky_status = outcome(&v, "flaky")["status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        expect_status.contains(&flaky_status.as_str()),
        "{fault:?}: flaky reported {flaky_status:?}: {v}"
    );
    assert_eq!(outcome(&v, "good")["status"], "ok", "{v}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_archive_times_out_and_changes_nothing() {
    fault_case(Behaviour::Trickle(Duration::from_millis(100)), &["timeout"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_costs_no_more_than_its_compressed_size() {
    // 64 MiB of zeros (64 times max_body) in about 65 KB: we neither ask for gzip nor inflate
    // it, so it is a malformed answer of its compressed size (and were it inflated, max_body
    // would stop it at 1 MiB).
    fault_case(
        Behaviour::GzipBomb(64 * 1024 * 1024),
        &["malformed", "error"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_garbage_and_invalid_utf8_are_a_malformed_answer() {
    fault_case(Behaviour::Garbage, &["malformed", "error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_is_reported_not_retried_inline() {
    fault_case(Behaviour::TooManyRequests(30), &["error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_hangs_after_its_headers_times_out_and_changes_nothing() {
    fault_case(Behaviour::HangAfterHeaders, &["timeout"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_mid_body_is_an_error_and_changes_nothing() {
    fault_case(Behaviour::ResetMidBody, &["error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_far_past_max_body_is_cut_and_changes_nothing() {
    // 32 times max_body (1 MiB): refused at the cap while streaming, never held whole.
    fault_case(Behaviour::Oversized(32 << 20), &["error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_is_an_error_and_changes_nothing() {
    fault_case(Behaviour::RedirectLoop, &["error"]).await;
}

/// A good archive beside one reached at `base` (`scheme://host:port`) that cannot be talked to:
/// the answer is the good archive's memento, and `error` for the other alone.
async fn unreachable_is_an_error_for_it_alone(base: &str) {
    let good = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("good archive");
    let mut config = config_for(&[("good", &good)]);
    config.archives.push(crate::support::archive_config(
        "unreachable",
        &format!("{base}/timemap/link/"),
        &format!("{base}/"),
    ));
    let proxy = start_proxy(config).await;
    let (status, v) = json_of(
        client()
            .get(format!("{}/timemap/json/{URI_R}", proxy.base))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["mementos"]["list"].as_array().map(Vec::len), Some(1));
    assert_eq!(outcome(&v, "unreachable")["status"], "error", "{v}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tls_handshake_is_an_error_for_that_archive_alone() {
    // https:// to a server that answers the ClientHello in plain HTTP, as a misconfigured
    // port does: the handshake fails at once.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let plain_addr = plain.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = plain.accept().await {
            let mut hello = [0u8; 512];
            let _ = socket.read(&mut hello).await;
            let _ = socket
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
        }
    });
    unreachable_is_an_error_for_it_alone(&format!("https://{plain_addr}")).await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_refuses_connections_is_an_error_for_it_alone() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    unreachable_is_an_error_for_it_alone(&format!("http://{closed}")).await;
}
