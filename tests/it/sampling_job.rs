//! The sampling engine end to end against an in-process fake IA CDX server: a SYNTHETIC ZipNum
//! file in, sample/funnel/report out; a run stopped mid-way and started again over the same
//! directory finishes with the sample of an uninterrupted run of the same seed; and the
//! `tmproxy sample` command.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::sampling::engine::{run, Progress, SampledUrl, Spec};

#[derive(Default)]
pub struct Fake {
    pub requests: AtomicU64,
    seen: Mutex<HashMap<String, u32>>,
    /// Added to every answer (to stop a job mid-way).
    pub latency_ms: AtomicU64,
    /// No first-try 503s, so a run's request count is its number of distinct questions.
    pub steady: AtomicBool,
}

/// A stable per-URL number, so the fake's answers do not depend on request order.
fn h(url: &str) -> u64 {
    url.bytes().fold(1469598103934665603u64, |a, b| {
        (a ^ u64::from(b)).wrapping_mul(1099511628211)
    })
}

async fn cdx(State(f): State<Arc<Fake>>, Query(q): Query<HashMap<String, String>>) -> Response {
    f.requests.fetch_add(1, Ordering::Relaxed);
    let latency = f.latency_ms.load(Ordering::Relaxed);
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let url = q.get("url").cloned().unwrap_or_default();
    let n = {
        let mut seen = f.seen.lock().expect("lock");
        let n = seen.entry(url.clone()).or_default();
        *n += 1;
        *n
    };
    let x = h(&url);
    if url.contains("blocked") {
        return (StatusCode::FORBIDDEN, "Blocked Site Error").into_response();
    }
    if x.is_multiple_of(11) && n == 1 && !f.steady.load(Ordering::Relaxed) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if x.is_multiple_of(13) {
        return "".into_response();
    }
    let year = 1996 + x % 26;
    let mime = if x.is_multiple_of(17) {
        "image/jpeg"
    } else {
        "text/html"
    };
    format!(
        r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"],["k","{year}0101000000","{url}","{mime}","200","D","1"]]"#
    )
    .into_response()
}

pub async fn fake_cdx() -> (String, Arc<Fake>, tokio::task::JoinHandle<()>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/cdx", axum::routing::get(cdx))
        .with_state(fake.clone());
    let (addr, task) = crate::support::serve_fake(app).await;
    (format!("http://{addr}/cdx"), fake, task)
}

/// A small SYNTHETIC ZipNum index: 60 hosts with deep pages, roots for some, images, a
/// session id, an index file, a wildcard, an invalid key and a popular domain.
pub fn index_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("index.txt");
    let mut f = std::fs::File::create(&path).expect("create");
    let mut lines = Vec::new();
    for host in 0..60 {
        let key = format!("com,site{host:03})");
        if host % 3 == 0 {
            lines.push(format!("{key}/ 20010101000000 p 0 1"));
        }
        for page in 0..(1 + host % 9) {
            lines.push(format!("{key}/page{page}.html 20050101000000 p 0 1"));
        }
        lines.push(format!("{key}/logo.gif 20050101000000 p 0 1"));
    }
    lines.push("com,site001)/index.php 20050101000000 p 0 1".into());
    lines.push("com,site002)/x.php?PHPSESSID=0123456789abcdef0123456789abcdef 2005 p 0 1".into());
    lines.push("com,site003)/search?q=* 20050101000000 p 0 1".into());
    lines.push(")/?dn=nohost 20050101000000 p 0 1".into());
    for user in 0..30 {
        lines.push(format!("com,twitter)/user{user:02} 20160101000000 p 0 1"));
    }
    lines.push("com,blocked)/page.html 20160101000000 p 0 1".into());
    lines.sort();
    for l in lines {
        writeln!(f, "{l}").expect("write");
    }
    path
}

pub fn spec(input: &std::path::Path, cdx: &str) -> Spec {
    Spec {
        input: input.display().to_string(),
        cdx_api: cdx.to_string(),
        dialect: Some(tmproxy::sampling::cdx::Dialect::Ia),
        seed: 42,
        years: [1996, 2021],
        concurrency: 4,
        rate_limit: 0.0,
        popular_domains: vec!["twitter.com".into()],
        popular_quota: 1,
        downsampling: Default::default(),
        candidate_pool: None,
        long_tail_threshold: 900_000,
        long_tail_fraction: 0.9,
        collect_timemaps: false,
        hydrate_revisits: false,
    }
}

pub fn sample_of(dir: &std::path::Path) -> Vec<SampledUrl> {
    std::fs::read_to_string(dir.join("sample.ndjson"))
        .expect("sample written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a sample line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_end_to_end_and_accounts_for_every_url() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let out = dir.path().join("out");
    let outcome = run(&spec(&input, &cdx), &out, Arc::new(Progress::default()))
        .await
        .expect("the job runs");
    assert!(!outcome.cancelled);
    let sample = sample_of(&out);
    assert_eq!(sample.len(), outcome.sample);
    assert!(sample.len() > 30, "{}", sample.len());
    assert!(sample
        .iter()
        .all(|s| s.mime == "text/html" && s.first_capture.len() == 14));
    assert!(sample.iter().any(|s| s.root) && sample.iter().any(|s| !s.root));
    assert!(sample.iter().any(|s| s.year == "1996-2000"));
    assert!(!sample.iter().any(|s| s.url.contains("logo.gif")));
    // twitter.com re-enters by its quota: at most 1 URL per first-capture year.
    let twitter: Vec<&SampledUrl> = sample
        .iter()
        .filter(|s| s.url.contains("twitter"))
        .collect();
    assert!(!twitter.is_empty());
    let years: std::collections::HashSet<&str> =
        twitter.iter().map(|s| &s.first_capture[..4]).collect();
    assert_eq!(years.len(), twitter.len(), "one per year");
    let funnel: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("funnel.json")).expect("funnel"))
            .expect("JSON");
    let stages: Vec<&str> = funnel
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["stage"].as_str().expect("stage"))
        .collect();
    assert_eq!(
        stages,
        vec![
            "read",
            "unique_surts",
            "surt_to_url",
            "wildcards",
            "www_collisions",
            "session_ids",
            "index_files",
            "likely_html",
            "wildcard_roots",
            "index_file_roots",
            "popular_domains",
            "first_capture",
            "mime_html",
            "years",
            "popular_quota",
            "root_upsampling",
            "long_tail",
            "downsampling",
            "sample"
        ]
    );
    let first = funnel
        .as_array()
        .and_then(|a| a.iter().find(|r| r["stage"] == "first_capture"))
        .expect("first capture row");
    let n = |k: &str| first[k].as_u64().expect("a count");
    assert_eq!(n("in"), n("out") + n("set_aside") + n("errors"), "{first}");
    assert!(
        n("set_aside") > 0,
        "not archived and blocked URLs are set aside"
    );
    let aside = std::fs::read_to_string(out.join("set_aside.ndjson")).expect("set aside");
    assert!(aside.contains("blocked (403 Blocked Site Error)"));
    assert!(aside.contains("not archived (empty CDX answer)"));
    assert!(aside.contains("popular domain twitter.com"));
    assert!(aside.contains("session-id alias"));
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("| first_capture |") && report.contains("Top 20 domains"));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_job_resumes_to_the_same_sample_asking_only_what_it_had_not() {
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());

    let whole = dir.path().join("whole");
    run(&spec(&input, &cdx), &whole, Arc::new(Progress::default()))
        .await
        .expect("uninterrupted run");
    let whole_requests = fake.requests.swap(0, Ordering::Relaxed);
    fake.seen.lock().expect("lock").clear();

    // Stop after 40 answers, as a kill would (the checkpoint is appended as answers arrive).
    let part = dir.path().join("part");
    let progress = Arc::new(Progress::default());
    let watcher = {
        let p = progress.clone();
        tokio::spawn(async move {
            while p.cdx_answers.load(Ordering::Relaxed) < 40 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            p.cancel.store(true, Ordering::Relaxed);
        })
    };
    let first = run(&spec(&input, &cdx), &part, progress)
        .await
        .expect("stopped run");
    let _ = watcher.await;
    assert!(first.cancelled);
    assert!(!part.join("sample.ndjson").exists());
    let resumed_progress = Arc::new(Progress::default());
    run(&spec(&input, &cdx), &part, resumed_progress.clone())
        .await
        .expect("resumed run");
    assert!(resumed_progress.resumed_answers.load(Ordering::Relaxed) >= 30);
    assert_eq!(sample_of(&part), sample_of(&whole));
    let both = fake.requests.load(Ordering::Relaxed);
    assert!(
        both < whole_requests + 40,
        "the resumed run reused the checkpoint: {both} requests for both parts vs {whole_requests}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmproxy_sample_runs_a_toml_spec_and_refuses_a_bad_one() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let spec_path = dir.path().join("spec.toml");
    std::fs::write(
        &spec_path,
        format!(
            "input = {:?}\ncdx_api = {cdx:?}\ndialect = \"ia\"\nseed = 7\ncollect_timemaps = true\nhydrate_revisits = true\n",
            input.display().to_string()
        ),
    )
    .expect("spec");
    let out = dir.path().join("out");
    let bin = env!("CARGO_BIN_EXE_tmproxy");
    let (spec_arg, out_arg) = (spec_path.clone(), out.clone());
    let done = tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin)
            .arg("sample")
            .arg("--spec")
            .arg(&spec_arg)
            .arg("--out")
            .arg(&out_arg)
            .output()
    })
    .await
    .expect("joined")
    .expect("ran");
    assert!(done.status.success(), "{done:?}");
    for f in [
        "sample.ndjson",
        "funnel.json",
        "report.md",
        "ccdf.svg",
        "timemaps/hydration.json",
        "timemaps/index.ndjson",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!("input = \"x\"\ncdx_api = {cdx:?}\nconcurrency = 0\n"),
    )
    .expect("spec");
    let refused = std::process::Command::new(bin)
        .args(["sample", "--spec"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("o2"))
        .output()
        .expect("ran");
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("concurrency"), "{err}");
    task.abort();
}
