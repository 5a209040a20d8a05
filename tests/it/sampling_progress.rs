//! Progress that tells the truth, on the real app and the engine against the fake CDX server
//! (a SYNTHETIC index): a job's status shows each stage's done and total and counts only the
//! answers fetched from the CDX server; a done job shows its stage and counters after a server
//! restart; a rerun over a checkpoint counts every answer as reused, none as fetched; a
//! checkpoint from before spec hashes is adopted, with a warning, its answers kept.

use crate::sampling_api::{config, get, post, wait_for};
use crate::sampling_job::{fake_cdx, index_file, sample_of, spec};
use crate::support::start_proxy;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tmproxy::sampling::engine::progress::{FIRST_CAPTURE, POPULAR_QUOTA, ROOT_UPSAMPLING};
use tmproxy::sampling::engine::{run, Progress};

const STAGES: [&str; 6] = [
    "offline",
    "first_capture",
    "popular_quota",
    "root_upsampling",
    "downsampling",
    "timemaps",
];

fn stage<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["stages"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["stage"] == name))
        .unwrap_or_else(|| panic!("no stage {name} in {status}"))
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_status_shows_each_stage_and_survives_a_restart() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    fake.latency_ms.store(10, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let index = index_file(&inputs);
    let size = std::fs::metadata(&index).expect("size").len();
    let cache = dir.path().join("data/cache");
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let (status, v) = post(
        &base,
        &json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 42,
                "popular_domains": ["twitter.com"], "popular_quota": 1, "concurrency": 2}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("an id").to_string();

    // While the first captures come in: six stages, first_capture with a total (estimated
    // from the input read so far, or known once it is through) and only fetched answers.
    let mut seen_running = false;
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("status JSON");
        if v["state"] != "running" || v["stage"] != "first_capture" {
            if v["state"] == "done" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let names: Vec<&str> = v["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter_map(|s| s["stage"].as_str())
            .collect();
        assert_eq!(names, STAGES);
        let fc = stage(&v, "first_capture");
        if n(&fc["done"]) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        assert_eq!(fc["state"], "running", "{v}");
        assert_eq!(fc["unit"], "candidates");
        assert!(n(&fc["total"]) >= n(&fc["done"]), "{v}");
        assert!(fc["total_estimated"].is_boolean() && fc["total_basis"].is_string());
        assert_eq!(n(&fc["reused"]), 0, "a first run reuses nothing: {v}");
        assert!(n(&fc["fetched"]) >= 1, "{v}");
        assert!(v["eta_basis"].is_string(), "{v}");
        assert!(v["eta_seconds"].is_null() || v["eta_seconds"].as_f64().is_some());
        assert_eq!(stage(&v, "timemaps")["state"], "skipped");
        seen_running = true;
        break;
    }
    assert!(seen_running, "the job was never seen in first_capture");

    let done = wait_for(&base, &id, "done").await;
    assert_eq!(done["stage"], "done");
    assert_eq!(done["eta_seconds"], 0.0, "{done}");
    let offline = stage(&done, "offline");
    assert_eq!((n(&offline["done"]), n(&offline["total"])), (size, size));
    for name in ["first_capture", "root_upsampling", "downsampling"] {
        let s = stage(&done, name);
        assert_eq!(s["state"], "done", "{done}");
        assert_eq!(s["done"], s["total"], "{name}: {done}");
        assert_eq!(s["total_estimated"], false, "{name}: {done}");
    }
    // Every candidate decided was answered by the CDX server, none from a checkpoint, and no
    // stage counted more answers than the server was asked for.
    let fc = stage(&done, "first_capture");
    assert_eq!(fc["fetched"], fc["done"], "{done}");
    assert_eq!(n(&fc["done"]), n(&done["counters"]["candidates"]));
    let fetched: u64 = ["first_capture", "popular_quota", "root_upsampling"]
        .iter()
        .map(|s| n(&stage(&done, s)["fetched"]))
        .sum();
    assert!(fetched <= fake.requests.load(Ordering::Relaxed), "{done}");
    let quota = stage(&done, "popular_quota");
    assert!(
        n(&quota["done"]) >= 1 && n(&quota["fetched"]) >= 1,
        "{done}"
    );
    assert!(n(&done["counters"]["sampled"]) > 30, "{done}");
    proxy.stop().await;

    // Restarted: the done job still shows its stage and every counter.
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let (status, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
    assert_eq!(status, 200);
    let after: Value = serde_json::from_str(&t).expect("status JSON");
    assert_eq!(after["state"], "done");
    assert_eq!(after["stage"], "done");
    assert_eq!(after["counters"], done["counters"]);
    assert_eq!(after["stages"], done["stages"]);
    assert_eq!(after["input"], done["input"]);
    assert_eq!(after["eta_seconds"], 0.0);
    proxy.stop().await;
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_over_its_checkpoint_counts_every_answer_as_reused() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let out = dir.path().join("out");
    let s = spec(&input, &cdx);
    let first = Arc::new(Progress::default());
    run(&s, &out, first.clone()).await.expect("first run");
    let first = first.snapshot();
    let asked = fake.requests.load(Ordering::Relaxed);

    let again = Arc::new(Progress::default());
    run(&s, &out, again.clone()).await.expect("second run");
    assert_eq!(
        fake.requests.load(Ordering::Relaxed),
        asked,
        "nothing asked"
    );
    let view = again.view(true);
    let snap = again.snapshot();
    for i in [FIRST_CAPTURE, POPULAR_QUOTA, ROOT_UPSAMPLING] {
        let (was, now) = (&first.stages[i], &snap.stages[i]);
        // Fetched over the job's life: the first run's, not doubled by the reuse.
        assert_eq!(now.fetched, was.fetched, "stage {i}");
        assert_eq!(now.reused, was.fetched, "stage {i}: every answer reused");
        assert_eq!(view.stages[i].rate_per_s, None, "stage {i}");
    }
    assert_eq!(view.cdx_rate_per_s, None, "no answer fetched in this run");
    assert_eq!(
        snap.stages[FIRST_CAPTURE].done,
        first.stages[FIRST_CAPTURE].done
    );
    assert_eq!(snap.stage, "done");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_from_before_spec_hashes_is_adopted_with_a_warning() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = spec(&input, &cdx);
    let outcome = run(&s, &a, Arc::new(Progress::default()))
        .await
        .expect("run");
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);
    // The checkpoint as an older tmproxy wrote it: answers from the first line, no header.
    let text = std::fs::read_to_string(a.join("first_captures.ndjson")).expect("checkpoint");
    let (header, answers) = text.split_once('\n').expect("a header line");
    assert!(header.contains("spec_hash"), "{header}");
    std::fs::create_dir_all(&b).expect("dir");
    std::fs::write(b.join("first_captures.ndjson"), answers).expect("write");
    let asked = fake.requests.load(Ordering::Relaxed);
    let outcome = run(&s, &b, Arc::new(Progress::default()))
        .await
        .expect("adopted, not refused");
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("checkpoint from before spec hashes: adopted without a check")),
        "{:?}",
        outcome.warnings
    );
    assert_eq!(fake.requests.load(Ordering::Relaxed), asked, "answers kept");
    assert_eq!(sample_of(&b), sample_of(&a));
    let adopted = std::fs::read_to_string(b.join("first_captures.ndjson")).expect("read");
    assert!(adopted.starts_with(header), "the header written in front");
    // Tied to its spec from now on: another spec is refused.
    let other = tmproxy::sampling::engine::Spec { seed: 7, ..s };
    let err = run(&other, &b, Arc::new(Progress::default()))
        .await
        .expect_err("refused");
    assert!(err.contains("another spec"), "{err}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_resumed_after_a_restart_counts_its_checkpoint_as_reused() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    fake.latency_ms.store(20, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let cache = dir.path().join("data/cache");
    let body = json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 42,
                      "popular_domains": ["twitter.com"], "popular_quota": 1, "concurrency": 2});
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let (_, v) = post(&base, &body).await;
    let id = v["id"].as_str().expect("an id").to_string();
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        if n(&stage(&v, "first_capture")["done"]) >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Stopped as SIGTERM stops it: at its checkpoint, `running` on disk, its progress saved.
    let state = proxy.state.clone().expect("state");
    let jobs = state.jobs.clone().expect("jobs");
    assert!(jobs.stop_all_and_wait(Duration::from_secs(20)).await);
    proxy.stop().await;
    drop((jobs, state));
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.path()
                .join(format!("data/sampling/jobs/{id}/out/progress.json")),
        )
        .expect("progress.json"),
    )
    .expect("JSON");
    let before = n(&saved["stages"][FIRST_CAPTURE]["fetched"]);
    assert!(before >= 10, "{saved}");

    fake.latency_ms.store(0, Ordering::Relaxed);
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let done = wait_for(&base, &id, "done").await;
    let fc = stage(&done, "first_capture");
    // Every answer the stopped run fetched is reused, not fetched again; fetched carries on
    // from the saved count, so over the job's life each candidate was fetched once.
    assert_eq!(n(&fc["reused"]), before, "{done}");
    assert_eq!(fc["fetched"], fc["done"], "{done}");
    assert_eq!(fc["done"], fc["total"], "{done}");
    proxy.stop().await;
    task.abort();
}
