//! Upstream faults, each through the real app: an archive that hangs after its headers, resets
//! mid-body, trickles a byte at a time, sends a body far past max_body, an unasked-for gzip
//! bomb, binary garbage, a redirect loop, 429 with Retry-After (then held until then), fails
//! the TLS handshake or is not listening at all. The proxy answers within the deadline with the
//! other archive's mementos, names the fault in `archives[]`, and a forced refresh during the
//! fault never replaces the better cached TimeMap.

use crate::support::{client, config_for, start_proxy};
use serde_json::Value;
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

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

/// How the flaky archive fails after the first, good answer has been cached.
#[derive(Debug, Clone)]
enum Fault {
    /// It answers this way from the next connection on.
    Answers(Behaviour),
    /// It stops listening: its port refuses connections.
    Gone,
}

/// What the fault case saw, for the checks only some faults can make.
struct Seen {
    /// The flaky archive's `archives[]` detail on the forced refresh.
    detail: String,
    /// Requests the flaky archive received for the forced refresh (None once it is gone).
    refresh_requests: Option<usize>,
    /// What the flaky archive is, if still running.
    flaky: Option<SimulatedArchive>,
}

async fn fault_case(fault: Fault, expect_status: &[&str]) -> Seen {
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
    let flaky_addr = flaky.addr;
    let mut flaky = Some(flaky);
    match &fault {
        Fault::Answers(b) => {
            if let Some(f) = &flaky {
                f.set_behaviour(b.clone());
            }
        }
        Fault::Gone => {
            drop(flaky.take());
            // The listener is closed once its aborted task is dropped: wait for refusals.
            let refused = async {
                while tokio::net::TcpStream::connect(flaky_addr).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(5), refused).await;
        }
    }
    let before = flaky.as_ref().map(SimulatedArchive::requests);
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
    // ...and the kept answer names this refetch's failure as the archive's last_error, while
    // the archive stays `ok`: its mementos are all still served.
    let named = |v: &Value| {
        let flaky = outcome(v, "flaky");
        assert_eq!(flaky["status"], "ok", "{fault:?}: {v}");
        let s = flaky["last_error"]["status"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            expect_status.contains(&s.as_str()),
            "{fault:?}: flaky's last_error is {s:?} after the failed refetch: {v}"
        );
    };
    named(&v);
    let seen_detail = outcome(&v, "flaky")["last_error"]["detail"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let refresh_requests = flaky
        .as_ref()
        .zip(before)
        .map(|(f, before)| f.requests() - before);
    // The next hit says the same, and no X-Memento-Partial calls the archive missing: its
    // cached mementos are all served.
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
        None,
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
    Seen {
        detail: seen_detail,
        refresh_requests,
        flaky,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_archive_times_out_and_changes_nothing() {
    fault_case(
        Fault::Answers(Behaviour::Trickle(Duration::from_millis(100))),
        &["timeout"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_costs_no_more_than_its_compressed_size() {
    // 64 MiB of zeros (64 times max_body) in about 65 KB: we neither ask for gzip nor inflate
    // it, so it is a malformed answer of its compressed size. Inflated, it would instead be
    // cut at max_body (1 MiB) as an `error`, which this test refuses.
    let seen = fault_case(
        Fault::Answers(Behaviour::GzipBomb(64 * 1024 * 1024)),
        &["malformed"],
    )
    .await;
    assert!(!seen.detail.contains("max_body"), "{}", seen.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_garbage_and_invalid_utf8_are_a_malformed_answer() {
    fault_case(Fault::Answers(Behaviour::Garbage), &["malformed"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_is_reported_not_retried_inline() {
    // The refresh's 429 is an error; its Retry-After (30 s) then holds the archive, so the new
    // URI-R right after skips it (`skipped`, detail `retry-after`) rather than asking again.
    let seen = fault_case(
        Fault::Answers(Behaviour::TooManyRequests(30)),
        &["error", "skipped"],
    )
    .await;
    assert!(seen.detail.contains("429"), "{}", seen.detail);
    assert!(
        seen.detail.contains("asked us to wait until"),
        "{}",
        seen.detail
    );
    // One request for the refresh: the 429 is reported, not retried within the request.
    assert_eq!(seen.refresh_requests, Some(1));
    // ...and none for the new URI-R, asked within its Retry-After.
    let flaky = seen.flaky.as_ref().map(SimulatedArchive::requests);
    let before_fault = 1;
    assert_eq!(flaky, Some(before_fault + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_hangs_after_its_headers_times_out_and_changes_nothing() {
    fault_case(Fault::Answers(Behaviour::HangAfterHeaders), &["timeout"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_mid_body_is_an_error_and_changes_nothing() {
    fault_case(Fault::Answers(Behaviour::ResetMidBody), &["error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_far_past_max_body_is_cut_and_changes_nothing() {
    // 32 times max_body (1 MiB), with no Content-Length: refused at the cap while streaming.
    let seen = fault_case(Fault::Answers(Behaviour::Oversized(32 << 20)), &["error"]).await;
    assert!(seen.detail.contains("max_body"), "{}", seen.detail);
    // Never held whole: the archive could send only what we read before the cap and what the
    // loopback sockets' buffers hold (a few MiB), far from the 32 MiB (twice, for the refresh
    // and the new URI-R) a client reading it all would take.
    let sent = seen
        .flaky
        .as_ref()
        .map_or(0, SimulatedArchive::body_bytes_sent);
    assert!(sent < 2 * (16 << 20), "the archive sent {sent} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_is_an_error_and_changes_nothing() {
    fault_case(Fault::Answers(Behaviour::RedirectLoop), &["error"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tls_handshake_during_a_refresh_changes_nothing() {
    // The archive moves to https on a port that speaks only plain HTTP: the hop is allowed (its
    // own host and port), the handshake fails.
    let seen = fault_case(Fault::Answers(Behaviour::MovedToHttps), &["error"]).await;
    // Named as what it is, a TLS failure, with rustls's reason.
    assert!(seen.detail.starts_with("tls: "), "{}", seen.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_went_away_during_a_refresh_changes_nothing() {
    let seen = fault_case(Fault::Gone, &["error"]).await;
    assert!(
        seen.detail.starts_with("connect: connection failed: "),
        "{}",
        seen.detail
    );
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
