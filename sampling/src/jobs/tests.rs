//! The jobs' boundary and life: prefixes, ids, clocks.
use super::admit::under_prefix;
use super::*;
use crate::engine::Spec;
use std::sync::Arc;
use tmproxy_core::clock::Clock;

#[test]
fn under_prefix_holds_scheme_host_port_and_segment_boundaries() {
    let cdx = "https://web.archive.org/cdx/search/cdx";
    let ok = |u: &str, p: &str| under_prefix(u, &url::Url::parse(p).expect("a prefix")).is_some();
    assert!(ok(cdx, cdx));
    assert!(ok("https://web.archive.org/cdx/search/cdx?url=x", cdx));
    assert!(ok("https://web.archive.org/cdx/search/cdx/sub", cdx));
    assert!(ok("https://web.archive.org:443/cdx/search/cdx", cdx));
    for bad in [
        "https://web.archive.org/cdx/search/cdx.evil.example/x",
        "https://web.archive.org/cdx/search/cdxfoo",
        "https://web.archive.org@evil.example/cdx/search/cdx",
        "https://user:pw@web.archive.org/cdx/search/cdx",
        "https://web.archive.org.evil.example/cdx/search/cdx",
        "https://web.archive.org:8443/cdx/search/cdx",
        "http://web.archive.org/cdx/search/cdx",
        "https://web.archive.org/cdx/search/cdx/../../../web/",
        "https://web.archive.org/cdx/search/cdx/%2e%2e/%2e%2e/x",
        "http://127.0.0.1:9/cdx",
        "http://[::1]/",
        "http://localhost/",
        "file:///etc/passwd",
        "not a url",
    ] {
        assert!(!ok(bad, cdx), "{bad}");
    }
    // An operator's prefix without a path: any path on that origin, still not another host.
    let origin = "https://web.archive.org";
    assert!(ok("https://web.archive.org/anything", origin));
    for bad in [
        "https://web.archive.org.evil.example/",
        "https://web.archive.org@evil.example/",
        "https://evil.example/?https://web.archive.org",
    ] {
        assert!(!ok(bad, origin), "{bad}");
    }
    // What is used is the resolved form.
    assert_eq!(
        under_prefix(
            "https://web.archive.org/cdx/search/cdx/a/../b",
            &url::Url::parse(cdx).expect("a prefix")
        )
        .as_deref(),
        Some("https://web.archive.org/cdx/search/cdx/b")
    );
}

#[tokio::test]
async fn a_restarted_server_never_reuses_a_job_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec: Spec = serde_json::from_str(
        r#"{"input": "/nonexistent/index", "cdx_api": "http://127.0.0.1:9/cdx", "dialect": "ia"}"#,
    )
    .expect("spec");
    let now = chrono::Utc::now();
    let clock: Arc<dyn Clock> = Arc::new(tmproxy_core::clock::SimClock::new(now));
    let open = || Jobs::open(dir.path(), Bounds::default(), None, clock.clone(), false);
    let jobs = open().expect("open");
    let first = jobs
        .submit(spec.clone(), "2026-01-01T00:00:00Z")
        .expect("submit");
    drop(jobs);
    // Same (simulated, standing) time after a restart: the counter starts over.
    let jobs = open().expect("reopen");
    let second = jobs.submit(spec, "2026-01-01T00:00:00Z").expect("submit");
    assert_ne!(first, second);
    assert!(dir.path().join(&first).join("spec.json").exists());
    assert!(dir.path().join(&second).join("spec.json").exists());
}

#[tokio::test]
async fn finished_at_is_on_the_servers_clock() {
    let dir = tempfile::tempdir().expect("temp dir");
    // An input that cannot be read: the job fails at once, which finishes it.
    let spec: Spec = serde_json::from_str(
        r#"{"input": "/nonexistent/index", "cdx_api": "http://127.0.0.1:9/cdx", "dialect": "ia"}"#,
    )
    .expect("spec");
    // Far from the machine's time, so a reading of the machine's clock cannot pass.
    let then = chrono::DateTime::from_timestamp(1_335_830_400, 0).expect("valid"); // 2012-05-01
    let clock: Arc<dyn Clock> = Arc::new(tmproxy_core::clock::SimClock::new(then));
    let jobs = Jobs::open(dir.path(), Bounds::default(), None, clock, false).expect("open");
    let id = jobs.submit(spec, "2012-05-01T00:00:00Z").expect("submit");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        let status = jobs.status(&id).expect("status");
        if status["state"] != "queued" && status["state"] != "running" {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "job never finished");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(status["state"], "failed");
    assert_eq!(status["finished_at"], "2012-05-01T00:00:00Z");
    let on_disk: JobRecord = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(&id).join("state.json")).expect("state"),
    )
    .expect("record");
    assert_eq!(on_disk.finished_at.as_deref(), Some("2012-05-01T00:00:00Z"));
}
