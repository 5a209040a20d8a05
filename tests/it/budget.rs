//! `[upstream] max_buffered`: several archives sending big bodies slowly at once never hold more
//! than the budget together; the one that would pass it fails with "memory budget", and the
//! deadline still holds.

use crate::support::{admin_stats, archive_config, client, get_json, serve_fake, start_proxy};
use std::time::{Duration, Instant};
use tmproxy::config::Config;

const URI_R: &str = "http://example.com/";
const MIB: usize = 1 << 20;
const CHUNK: usize = 64 * 1024;

/// A fake archive sending `total` bytes of valid link-format entries, about `CHUNK` every `every`,
/// with no Content-Length (so the body's size is only known as it arrives).
async fn dripping(
    total: usize,
    every: Duration,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().fallback(move || async move {
        let line = "<http://drip.example/web/20010101000000/http://example.com/>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n";
        // Whole lines, so every entry is readable: about CHUNK bytes.
        let chunk = bytes::Bytes::from(line.repeat(CHUNK / line.len()));
        let step = chunk.len();
        let stream = futures::stream::unfold(0usize, move |sent| {
            let chunk = chunk.clone();
            async move {
                if sent >= total {
                    return None;
                }
                tokio::time::sleep(every).await;
                Some((Ok::<_, std::io::Error>(chunk), sent + step))
            }
        });
        (
            [(axum::http::header::CONTENT_TYPE, "application/link-format")],
            axum::body::Body::from_stream(stream),
        )
    });
    serve_fake(app).await
}

/// The value of an unlabelled sample in the Prometheus text.
fn sample(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

async fn metrics(base: &str) -> String {
    client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics body")
}

// Two workers: the five dripping archives run on the test's runtime, and on one thread of a busy
// machine they alone could hold the answer's reading up past a tight bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_bodies_at_once_stay_within_max_buffered_and_the_deadline_holds() {
    let budget: u64 = 8 * MIB as u64;
    let deadline = Duration::from_secs(3);
    // Four archives of 3 MiB each (a 4 MiB buffer each, as it doubles; about 1 s from start to
    // end) and one that would send 64 MiB over minutes: 16 MiB and more wanted against 8 MiB.
    let mut fakes = Vec::new();
    for _ in 0..4 {
        fakes.push(dripping(3 * MIB, Duration::from_millis(20)).await);
    }
    fakes.push(dripping(64 * MIB, Duration::from_millis(50)).await);
    let mut config = Config::default();
    config.upstream.max_buffered = budget;
    config.upstream.connect_timeout = Duration::from_secs(2);
    // Each archive could take far longer than the deadline: only the deadline ends the request.
    config.upstream.timeout = Duration::from_secs(60);
    config.upstream.deadline = deadline;
    config.admin.token = "budget-test".into();
    config.archives = fakes
        .iter()
        .enumerate()
        .map(|(i, (at, _))| {
            let prefix = format!("http://{at}/timemap/link/");
            archive_config(&format!("drip{i}"), &prefix, &prefix)
        })
        .collect();
    let proxy = start_proxy(config).await;

    let started = Instant::now();
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    let took = started.elapsed();
    let status = resp.status().as_u16();
    // Each archive's outcome: `id=status;n=…` in the header of a 200, and each failure's detail
    // in the body of a 502 (when every body ran out of budget at once).
    let archives = resp
        .headers()
        .get("x-memento-archives")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.text().await.expect("body");
    // 5 s of margin for two busy cores; without the deadline the fifth archive alone would
    // hold the request for minutes.
    assert!(
        took < deadline + Duration::from_secs(5),
        "answered after {took:?}, deadline {deadline:?}: {status} {archives}"
    );
    assert!(matches!(status, 200 | 502), "{status}: {body}");
    if status == 200 {
        assert!(archives.contains("=error"), "an archive failed: {archives}");
        let (_, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
        let details: Vec<&str> = json["archives"]
            .as_array()
            .expect("archives[]")
            .iter()
            .filter(|o| o["status"] == "error")
            .filter_map(|o| o["detail"].as_str())
            .collect();
        assert!(
            details.iter().any(|d| d.contains("memory budget")),
            "an archive ran out of budget: {json}"
        );
    } else {
        assert!(body.contains("memory budget"), "{body}");
    }

    let m = metrics(&proxy.base).await;
    let high = sample(&m, "tmproxy_upstream_buffered_bytes_high_water");
    assert!(high <= budget, "held {high} bytes at once, budget {budget}");
    assert!(
        high > budget / 2,
        "the bodies were really held ({high} bytes)"
    );
    assert_eq!(sample(&m, "tmproxy_upstream_max_buffered_bytes"), budget);
    let stats = admin_stats(&proxy.base, "budget-test").await;
    assert_eq!(
        stats["upstream"]["buffered_bytes_high_water"], high,
        "{stats}"
    );
    assert_eq!(stats["upstream"]["max_buffered"], budget, "{stats}");
    // Everything is given back once the fan-out is over (the cut-off one included).
    let mut now = sample(&m, "tmproxy_upstream_buffered_bytes");
    for _ in 0..100 {
        if now == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = sample(
            &metrics(&proxy.base).await,
            "tmproxy_upstream_buffered_bytes",
        );
    }
    assert_eq!(now, 0, "the budget is given back after the fan-out");
    for (_, task) in fakes {
        task.abort();
    }
}

/// The high-water mark of a proxy that was asked for `URI_R` once, and that archive's outcome.
async fn high_water_after_one_fetch(
    behaviour: tmproxy_testkit::archive::Behaviour,
    max_body: u64,
) -> (u64, serde_json::Value) {
    let fake = tmproxy_testkit::archive::SimulatedArchive::start(behaviour)
        .await
        .expect("simulated archive starts");
    let good = tmproxy_testkit::archive::SimulatedArchive::start(
        tmproxy_testkit::archive::Behaviour::TimeMap(tmproxy_testkit::archive::TimeMapSpec::of(&[
            "20010101000000",
        ])),
    )
    .await
    .expect("simulated archive starts");
    let mut config = crate::support::config_for(&[("good", &good), ("fake", &fake)]);
    config.upstream.max_body = max_body;
    let proxy = start_proxy(config).await;
    let (_, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    let m = metrics(&proxy.base).await;
    (
        sample(&m, "tmproxy_upstream_buffered_bytes_high_water"),
        crate::support::outcome(&json, "fake").clone(),
    )
}

/// docs/operating.md: a body over max_body is cut while it streams, never held whole; a gzip body is
/// never inflated. The budget's high-water mark is what was really held.
#[tokio::test]
async fn an_oversized_body_is_never_held_whole_and_gzip_is_never_inflated() {
    use tmproxy_testkit::archive::Behaviour;
    let max_body = 1 << 20;
    let (high, o) = high_water_after_one_fetch(Behaviour::Oversized(32 << 20), max_body).await;
    assert_eq!(o["status"], "error", "{o}");
    assert!(
        o["detail"].as_str().unwrap_or("").contains("max_body"),
        "{o}"
    );
    // The good archive's few hundred bytes are charged beside it.
    assert!(
        high <= max_body + 4096,
        "held {high} bytes of a 32 MiB body, max_body {max_body}"
    );
    // 16 MiB of zeros, gzipped to a few KiB: inflated it would be cut at max_body as an error;
    // held as sent it is a small body that is not link format.
    let (high, o) = high_water_after_one_fetch(Behaviour::GzipBomb(16 << 20), max_body).await;
    assert_eq!(o["status"], "malformed", "{o}");
    assert!(
        high < 256 * 1024,
        "held {high} bytes of a gzip body of a few KiB"
    );
}
