//! Crash loops, with the real binary: a job during which `tmproxy serve` was killed (SIGKILL)
//! twice without getting any further is failed, naming where it was, instead of being resumed a
//! third time; a clean stop (SIGTERM) in between does not count; a failed job is not resumed.
//! The CDX API here never answers, so the job cannot progress between the kills.

use crate::sampling_job::index_file;
use crate::support::{client, ServeProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOKEN: &str = "crash-token";

struct Setup {
    _dir: tempfile::TempDir,
    config: PathBuf,
    jobs: PathBuf,
}

fn setup(cdx: &str) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let data = dir.path().join("data");
    let text = format!(
        "[cache]\npath = {:?}\n\n[admin]\ntoken = {TOKEN:?}\n\n\
         [sampling]\ninput_dir = {:?}\nallowed_urls = [{cdx:?}]\nconcurrency = 2\nrate_limit = 0.0\n",
        data.join("cache").display().to_string(),
        inputs.display().to_string(),
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, text).expect("config");
    Setup {
        jobs: data.join("sampling/jobs"),
        _dir: dir,
        config,
    }
}

async fn status(base: &str, id: &str) -> Value {
    let r = client()
        .get(format!("{base}/admin/sampling/jobs/{id}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("status");
    let text = r.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Polls (bounded) until `until` holds for the job's status and its marker file.
async fn wait(base: &str, id: &str, marker: &Path, until: impl Fn(&Value, &str) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let v = status(base, id).await;
        let m = std::fs::read_to_string(marker).unwrap_or_default();
        if until(&v, &m) {
            return v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{v} / marker {m}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the job is in its first captures, as its marker says, so a kill finds it there.
async fn in_first_captures(base: &str, id: &str, marker: &Path) {
    wait(base, id, marker, |v, m| {
        v["state"] == "running" && m.contains("\"first_capture\"") && !m.contains("\"line\":0,")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_crashed_the_server_twice_is_failed_and_a_clean_stop_does_not_count() {
    // A CDX API that never answers: the job stays in its first captures with nothing to save.
    let app = axum::Router::new().route(
        "/cdx",
        axum::routing::get(std::future::pending::<&'static str>),
    );
    let (addr, task) = crate::support::serve_fake(app).await;
    let cdx = format!("http://{addr}/cdx");
    let s = setup(&cdx);

    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let r = client()
        .post(format!("{base}/admin/sampling/jobs"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia"}).to_string())
        .send()
        .await
        .expect("POST");
    assert_eq!(r.status(), 201);
    let v: Value = serde_json::from_str(&r.text().await.expect("body")).expect("JSON");
    let id = v["id"].as_str().expect("an id").to_string();
    let marker = s.jobs.join(&id).join("running.marker");
    in_first_captures(&base, &id, &marker).await;
    server.kill9();

    // First death: resumed. Then a clean stop, which is not a death.
    let mut server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let v = status(&base, &id).await;
    assert_eq!(v["state"], "running", "resumed once: {v}");
    in_first_captures(&base, &id, &marker).await;
    server.term();
    let exit = server.exit_within(Duration::from_secs(20)).await;
    assert!(exit.success(), "{exit:?}");
    assert!(!marker.exists(), "a clean stop clears the marker");

    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let v = status(&base, &id).await;
    assert_eq!(v["state"], "running", "a clean stop is not a crash: {v}");
    in_first_captures(&base, &id, &marker).await;
    server.kill9();

    // Second death with nothing gained since the first: failed, not resumed a third time.
    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let v = status(&base, &id).await;
    assert_eq!(v["state"], "failed", "{v}");
    let error = v["error"].as_str().unwrap_or("");
    assert!(
        error.starts_with("crashed the server twice while at line ")
            && error.contains(" / stage first_capture"),
        "{error}"
    );
    // Not started again: a run writes its marker as it begins, and this start cleared the old
    // one. (Its counters are the killed run's, as its last progress save caught them: 0 or
    // every line, depending on whether a save came after the input was read, so they say
    // nothing about this start.)
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "not started: {v}");
    let failed_counters = v["counters"].clone();
    drop(server);

    // A failed job stays failed: not resumed by the next start either, so its counters are
    // the ones it failed with.
    let server = ServeProcess::start(&s.config);
    let v = status(&server.base, &id).await;
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["counters"], failed_counters, "{v}");
    assert!(!marker.exists());
    drop(server);
    task.abort();
}
