//! `/admin/sampling/jobs` on the real app: a job started over HTTP runs to its sample and funnel;
//! the HTTP boundary refuses path traversal, symlinks out of input_dir, file:// and URLs outside
//! allowed_urls with a 400 naming the field; a job stopped by a server restart resumes and
//! finishes with the sample of an uninterrupted run.

use crate::sampling_job::{fake_cdx, index_file, sample_of, spec};
use crate::support::{client, start_proxy};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tmproxy::config::Config;
use tmproxy::sampling::engine::{run, Progress};

pub const TOKEN: &str = "sampling-token";

pub fn config(input_dir: &std::path::Path, cdx: &str, cache: &std::path::Path) -> Config {
    let mut c = Config::default();
    c.admin.token = TOKEN.into();
    c.archives = Vec::new();
    c.cache.path = cache.display().to_string();
    c.sampling.input_dir = input_dir.display().to_string();
    c.sampling.allowed_urls = vec![cdx.parse().expect("an http URL")];
    c.sampling.rate_limit = 0.0;
    c
}

pub async fn post(base: &str, body: &Value) -> (u16, Value) {
    let r = client()
        .post(format!("{base}/admin/sampling/jobs"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(json!({ "text": text })),
    )
}

pub async fn get(url: &str) -> (u16, String) {
    let r = client()
        .get(url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET");
    (r.status().as_u16(), r.text().await.expect("body"))
}

pub async fn wait_for(base: &str, id: &str, state: &str) -> Value {
    for _ in 0..600 {
        let (_, text) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&text).expect("status JSON");
        if v["state"] == state {
            return v;
        }
        assert_ne!(v["state"], "failed", "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {id} never became {state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_http_runs_to_its_sample_and_the_boundary_holds() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let index = index_file(&inputs);
    let proxy = start_proxy(config(&inputs, &cdx, &dir.path().join("data/cache"))).await;
    let base = proxy.base.clone();

    // Refusals: each a 400 naming its field, or 401 without the token.
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "com,x)/ 2001 p 0 1\n").expect("write");
    std::os::unix::fs::symlink(&outside, inputs.join("link.txt")).expect("symlink");
    for (body, field) in [
        (
            json!({"input": "index.txt", "cdx_api": cdx, "colour": 1}),
            "colour",
        ),
        (
            json!({"input": "index.txt", "cdx_api": cdx, "concurrency": 0}),
            "concurrency",
        ),
        (json!({"input": "../outside.txt", "cdx_api": cdx}), "input"),
        (json!({"input": "link.txt", "cdx_api": cdx}), "input"),
        (
            json!({"input": outside.display().to_string(), "cdx_api": cdx}),
            "input",
        ),
        (
            json!({"input": "file:///etc/passwd", "cdx_api": cdx}),
            "input",
        ),
        (
            json!({"input": "index.txt", "cdx_api": "http://169.254.169.254/latest/"}),
            "cdx_api",
        ),
        (
            json!({"input": "index.txt", "cdx_api": "file:///etc/passwd"}),
            "cdx_api",
        ),
        (json!({"cdx_api": cdx}), "input"),
    ] {
        let (status, v) = post(&base, &body).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v.to_string().contains(field), "{body}: {v}");
    }
    let r = client()
        .post(format!("{base}/admin/sampling/jobs"))
        .body(json!({"input": "index.txt", "cdx_api": cdx}).to_string())
        .send()
        .await
        .expect("POST");
    assert_eq!(r.status().as_u16(), 401);

    // A job.
    let (status, v) = post(
        &base,
        &json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 42,
                "popular_domains": ["twitter.com"], "popular_quota": 1}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("an id").to_string();
    let done = wait_for(&base, &id, "done").await;
    assert!(
        done["counters"]["sampled"].as_u64().unwrap_or(0) > 30,
        "{done}"
    );
    let (status, sample) = get(&format!("{base}/admin/sampling/jobs/{id}/sample")).await;
    assert_eq!(status, 200);
    let lines: Vec<Value> = sample
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect();
    assert!(lines.iter().all(|l| l["url"].is_string()
        && l["year"].is_string()
        && l["root"].is_boolean()
        && l["first_capture"].is_string()
        && l["mime"] == "text/html"));
    // The same spec through the engine directly gives the same sample.
    let direct = dir.path().join("direct");
    run(&spec(&index, &cdx), &direct, Arc::new(Progress::default()))
        .await
        .expect("engine");
    let want: Vec<String> = sample_of(&direct).iter().map(|s| s.url.clone()).collect();
    let got: Vec<String> = lines
        .iter()
        .map(|l| l["url"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(got, want);
    let (status, funnel) = get(&format!("{base}/admin/sampling/jobs/{id}/funnel")).await;
    assert_eq!(status, 200);
    assert!(funnel.contains("\"stage\": \"first_capture\""), "{funnel}");
    let (_, list) = get(&format!("{base}/admin/sampling/jobs")).await;
    assert!(list.contains(&id));
    let (status, _) = get(&format!("{base}/admin/sampling/jobs/nope")).await;
    assert_eq!(status, 404);
    proxy.stop().await;
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_a_job_and_a_cancelled_one_stays_cancelled() {
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let index = index_file(&inputs);
    let cache = dir.path().join("data/cache");
    let body = json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 42,
                      "popular_domains": ["twitter.com"], "popular_quota": 1, "concurrency": 2});

    fake.latency_ms.store(20, Ordering::Relaxed);
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let (_, v) = post(&base, &body).await;
    let id = v["id"].as_str().expect("an id").to_string();
    let (_, v) = post(&base, &body).await;
    let cancelled = v["id"].as_str().expect("an id").to_string();
    let r = client()
        .delete(format!("{base}/admin/sampling/jobs/{cancelled}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(r.status().as_u16(), 200);
    let (status, _) = get(&format!("{base}/admin/sampling/jobs/{cancelled}/sample")).await;
    assert_eq!(status, 409, "no sample before done");
    // Let some answers arrive, then stop the server as SIGTERM would.
    for _ in 0..200 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        if v["counters"]["cdx_answers"].as_u64().unwrap_or(0) >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let state = proxy.state.clone().expect("state");
    if let Some(jobs) = &state.jobs {
        jobs.stop_all();
    }
    proxy.stop().await;
    // Let the stopped runner finish its last checkpoint write.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(state);

    fake.latency_ms.store(0, Ordering::Relaxed);
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let done = wait_for(&base, &id, "done").await;
    assert!(
        done["counters"]["resumed_answers"].as_u64().unwrap_or(0) >= 10,
        "{done}"
    );
    let (_, v) = get(&format!("{base}/admin/sampling/jobs/{cancelled}")).await;
    assert!(v.contains("\"cancelled\""), "{v}");
    let (_, sample) = get(&format!("{base}/admin/sampling/jobs/{id}/sample")).await;
    let got: Vec<String> = sample
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("NDJSON")["url"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let direct = dir.path().join("direct");
    let mut s = spec(&index, &cdx);
    s.concurrency = 2;
    run(&s, &direct, Arc::new(Progress::default()))
        .await
        .expect("engine");
    let want: Vec<String> = sample_of(&direct).iter().map(|s| s.url.clone()).collect();
    assert_eq!(got, want);
    proxy.stop().await;
    task.abort();
}

/// A gzip bomb submitted as a job: the job is `failed` with the limit named, and a restart does
/// not resume it (before, it stayed `running` and took every restart down with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bomb_fails_its_job_and_a_failed_job_is_not_resumed() {
    use std::io::Write as _;
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    // SYNTHETIC: 32 MB of zeros, no newline, gzipped to about 32 KB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&vec![0u8; 32 << 20]).expect("gzip");
    std::fs::write(inputs.join("bomb.gz"), gz.finish().expect("gzip")).expect("write");
    let cache = dir.path().join("data/cache");
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let (status, v) = post(
        &base,
        &json!({"input": "bomb.gz", "cdx_api": cdx, "dialect": "ia"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("an id").to_string();
    let mut failed = Value::Null;
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        failed = serde_json::from_str(&t).expect("JSON");
        if failed["state"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(failed["state"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap_or("");
    assert!(error.contains("max_gzip_ratio"), "{error}");
    proxy.stop().await;

    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let (_, t) = get(&format!("{}/admin/sampling/jobs/{id}", proxy.base)).await;
    let v: Value = serde_json::from_str(&t).expect("JSON");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["error"], failed["error"]);
    assert_eq!(v["counters"]["index_lines"], 0, "not run again: {v}");
    assert_eq!(fake.requests.load(Ordering::SeqCst), 0);
    proxy.stop().await;
    task.abort();
}

/// A job resumed after a restart is checked against the boundary again: its input swapped for a
/// symlink out of `input_dir` while the server was down, it fails with the reason and reads
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_job_whose_input_became_a_symlink_out_of_input_dir_fails_unread() {
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let index = index_file(&inputs);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let secret = index_file(&outside);
    let cache = dir.path().join("data/cache");
    fake.latency_ms.store(50, Ordering::Relaxed);
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let base = proxy.base.clone();
    let body = json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "concurrency": 1});
    let (status, v) = post(&base, &body).await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("an id").to_string();
    for _ in 0..200 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        if v["counters"]["cdx_answers"].as_u64().unwrap_or(0) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let state = proxy.state.clone().expect("state");
    if let Some(jobs) = &state.jobs {
        jobs.stop_all_and_wait(Duration::from_secs(5)).await;
    }
    // The stopped run's counters (saved in its progress.json, shown again after the restart).
    let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
    let stopped: Value = serde_json::from_str(&t).expect("JSON");
    proxy.stop().await;
    drop(state);

    // While the server is down: the admitted file becomes a symlink to a file outside.
    std::fs::remove_file(&index).expect("rm");
    std::os::unix::fs::symlink(&secret, &index).expect("symlink");
    let asked = fake.requests.load(Ordering::SeqCst);
    let proxy = start_proxy(config(&inputs, &cdx, &cache)).await;
    let (_, t) = get(&format!("{}/admin/sampling/jobs/{id}", proxy.base)).await;
    let v: Value = serde_json::from_str(&t).expect("JSON");
    assert_eq!(v["state"], "failed", "{v}");
    let error = v["error"].as_str().unwrap_or("");
    assert!(
        error.contains("input_dir") && error.contains("checked again at restart"),
        "{error}"
    );
    // Nothing read: the counters are the stopped run's, as saved (a run started again would
    // count its lines from 0 and take the checkpoint's answers as `resumed_answers`).
    assert_eq!(v["counters"], stopped["counters"], "nothing read: {v}");
    assert_eq!(v["counters"]["resumed_answers"], 0, "{v}");
    // Failed as the jobs were opened, before anything could start.
    assert_eq!(fake.requests.load(Ordering::SeqCst), asked, "nothing asked");
    proxy.stop().await;
    task.abort();
}

/// A job's sample fed to the cache: warmed (every URI-R's TimeMap fetched through the
/// aggregator into the cache), then refetched each simulated day into the observation log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fed_sample_warms_the_cache_and_is_observed_each_day() {
    use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
    let (cdx, _fake, task) = fake_cdx().await;
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let log = dir.path().join("observations.jsonl");
    let mut c = config(&inputs, &cdx, &dir.path().join("data/cache"));
    c.archives = vec![crate::support::archive_config(
        "sim",
        &archive.timemap_prefix(),
        &archive.timegate_prefix(),
    )];
    c.observe.log = log.display().to_string();
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .expect("time")
        .with_timezone(&chrono::Utc);
    let clock = Arc::new(tmproxy::clock::SimClock::new(t0));
    let proxy =
        crate::support::start_proxy_with(c, tmproxy::app::ClockChoice::Simulated(clock.clone()))
            .await;
    let base = proxy.base.clone();
    let (_, v) = post(
        &base,
        &json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 3}),
    )
    .await;
    let id = v["id"].as_str().expect("an id").to_string();
    let done = wait_for(&base, &id, "done").await;
    let n = done["counters"]["sampled"].as_u64().expect("sampled");

    let feed = |body: Value| {
        let base = base.clone();
        let id = id.clone();
        async move {
            let r = client()
                .post(format!("{base}/admin/sampling/jobs/{id}/feed"))
                .bearer_auth(TOKEN)
                .body(body.to_string())
                .send()
                .await
                .expect("POST feed");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let (status, text) = feed(json!({"observe": "1s"})).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("observe"), "{text}");
    let (status, text) = feed(json!({"warm": true, "observe": "1d"})).await;
    assert_eq!(status, 202, "{text}");
    // A second feed while this one runs is refused, not started: still one fan-out per URI-R
    // (the count of observations below).
    let (status, text) = feed(json!({"warm": true})).await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("already being fed"), "{text}");

    let lines = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count() as u64
    };
    let feed_of = |v: &Value| v["feed"].clone();
    let mut warmed = false;
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        if feed_of(&v)["warmed"].as_u64() == Some(n) {
            warmed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(warmed, "the sample was warmed");
    assert_eq!(
        lines(),
        n,
        "one fan-out (one observation) per sampled URI-R"
    );
    let (_, sample) = get(&format!("{base}/admin/sampling/jobs/{id}/sample")).await;
    let first: Value = serde_json::from_str(sample.lines().next().expect("a line")).expect("JSON");
    let (status, _) = get(&format!(
        "{base}/admin/cache/{}",
        first["url"].as_str().expect("url")
    ))
    .await;
    assert_eq!(status, 200, "the sampled URI-R is in the cache");

    // A simulated day later, one round of refetches.
    clock.set(t0 + chrono::Duration::days(1));
    let mut rounds = 0;
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        rounds = feed_of(&v)["rounds"].as_u64().unwrap_or(0);
        if rounds == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rounds, 1);
    assert_eq!(lines(), 2 * n, "each URI-R observed again");
    proxy.stop().await;
    task.abort();
}

/// A sampled URL enters the cache as a client's URI-R would, through the same check: a URL the
/// check refuses (here longer than any request target may be, which an index line can hold) is
/// skipped and counted by the feed, not fetched; the rest of the sample is warmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fed_sample_skips_a_url_the_uri_r_check_refuses() {
    use axum::extract::Query;
    use std::collections::HashMap;
    use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
    // Every URL captured once, as text/html in 2005: both URLs reach the sample.
    let app = axum::Router::new().route(
        "/cdx",
        axum::routing::get(|Query(q): Query<HashMap<String, String>>| async move {
            let url = q.get("url").cloned().unwrap_or_default();
            json!([
                [
                    "urlkey",
                    "timestamp",
                    "original",
                    "mimetype",
                    "statuscode",
                    "digest",
                    "length"
                ],
                ["k", "20050101000000", url, "text/html", "200", "D", "1"]
            ])
            .to_string()
        }),
    );
    let (addr, task) = crate::support::serve_fake(app).await;
    let cdx = format!("http://{addr}/cdx");
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20050101000000"])))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let long_path = "a".repeat(tmproxy::uri_r::MAX_URI_LEN);
    let mut lines = [
        "com,example)/page.html 20050101000000 p 0 1".to_string(),
        format!("com,longpath)/{long_path}.html 20050101000000 p 0 1"),
    ];
    lines.sort();
    std::fs::write(inputs.join("index.txt"), lines.join("\n") + "\n").expect("write");
    let log = dir.path().join("observations.jsonl");
    let mut c = config(&inputs, &cdx, &dir.path().join("data/cache"));
    c.archives = vec![crate::support::archive_config(
        "sim",
        &archive.timemap_prefix(),
        &archive.timegate_prefix(),
    )];
    c.observe.log = log.display().to_string();
    let proxy = start_proxy(c).await;
    let base = proxy.base.clone();
    let (_, v) = post(
        &base,
        &json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "popular_domains": []}),
    )
    .await;
    let id = v["id"].as_str().expect("an id").to_string();
    wait_for(&base, &id, "done").await;
    let (_, sample) = get(&format!("{base}/admin/sampling/jobs/{id}/sample")).await;
    let urls: Vec<String> = sample
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a sample line");
            v["url"].as_str().expect("url").to_string()
        })
        .collect();
    assert_eq!(urls.len(), 2, "both URLs sampled: {urls:?}");
    assert!(
        urls.iter().any(|u| u.len() > tmproxy::uri_r::MAX_URI_LEN),
        "the long URL is in the sample"
    );

    let r = client()
        .post(format!("{base}/admin/sampling/jobs/{id}/feed"))
        .bearer_auth(TOKEN)
        .body(json!({"warm": true}).to_string())
        .send()
        .await
        .expect("POST feed");
    assert_eq!(r.status().as_u16(), 202);
    let mut feed = Value::Null;
    for _ in 0..400 {
        let (_, t) = get(&format!("{base}/admin/sampling/jobs/{id}")).await;
        let v: Value = serde_json::from_str(&t).expect("JSON");
        feed = v["feed"].clone();
        if feed["warmed"].as_u64().unwrap_or(0) + feed["skipped"].as_u64().unwrap_or(0) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(feed["warmed"], 1, "{feed}");
    assert_eq!(feed["skipped"], 1, "{feed}");
    // One fan-out, the short URL's: the refused one was never asked of the archive.
    let observed = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(observed.lines().count(), 1, "{observed}");
    assert!(observed.contains("example.com/page.html"), "{observed}");
    assert!(!observed.contains("longpath"), "{observed}");
    proxy.stop().await;
    task.abort();
}

/// An allowed-URL prefix is held by origin and path segment, not by string prefix: a longer
/// last segment, user info naming another host, a longer host, loopback and `localhost` are all
/// refused for `cdx_api` and `input` alike.
#[tokio::test]
async fn allowed_urls_are_matched_by_origin_and_path_not_by_string_prefix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let ia = "https://web.archive.org/cdx/search/cdx";
    let mut c = config(&inputs, ia, &dir.path().join("data/cache"));
    // An operator's prefix with no path: the origin only.
    c.sampling.allowed_urls = vec![
        ia.parse().expect("an http URL"),
        "https://archive.example".parse().expect("an http URL"),
    ];
    let proxy = start_proxy(c).await;
    for url in [
        "https://web.archive.org/cdx/search/cdx.evil.example/x",
        "https://web.archive.org/cdx/search/cdxx",
        "https://web.archive.org@evil.example/cdx/search/cdx",
        "https://web.archive.org/cdx/search/cdx/../../../web/",
        "https://web.archive.org:8443/cdx/search/cdx",
        "https://archive.example.evil.example/",
        "https://archive.example@evil.example/",
        "http://127.0.0.1:9/cdx",
        "http://[::1]/",
        "http://localhost/",
        "http://169.254.169.254/latest/",
    ] {
        let (status, v) = post(&proxy.base, &json!({"input": "index.txt", "cdx_api": url})).await;
        assert_eq!(status, 400, "cdx_api {url}: {v}");
        assert!(v.to_string().contains("cdx_api"), "{url}: {v}");
        let (status, v) = post(&proxy.base, &json!({"input": url, "cdx_api": ia})).await;
        assert_eq!(status, 400, "input {url}: {v}");
        assert!(v.to_string().contains("input"), "{url}: {v}");
    }
    proxy.stop().await;
}

/// A CDX endpoint under allowed_urls that redirects elsewhere (here: another loopback server,
/// standing for an internal address) does not get the job's requests sent there: sampling's
/// clients follow no redirect, with or without a dialect to detect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_off_the_allowed_prefix_is_not_followed() {
    use std::sync::atomic::AtomicUsize;
    let hits = Arc::new(AtomicUsize::new(0));
    let target = {
        let hits = hits.clone();
        axum::Router::new().fallback(move || {
            let hits = hits.clone();
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                "[]"
            }
        })
    };
    let (target_addr, target_task) = crate::support::serve_fake(target).await;
    let redirector = axum::Router::new().fallback(move || async move {
        (
            axum::http::StatusCode::FOUND,
            [(
                axum::http::header::LOCATION,
                format!("http://{target_addr}/internal"),
            )],
        )
    });
    let (redirector_addr, redirector_task) = crate::support::serve_fake(redirector).await;
    let cdx = format!("http://{redirector_addr}/cdx");

    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let proxy = start_proxy(config(&inputs, &cdx, &dir.path().join("data/cache"))).await;
    let mut ids = Vec::new();
    for body in [
        json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 1}),
        json!({"input": "index.txt", "cdx_api": cdx, "seed": 1}),
    ] {
        let (status, v) = post(&proxy.base, &body).await;
        assert_eq!(status, 201, "{v}");
        ids.push(v["id"].as_str().expect("an id").to_string());
    }
    for id in &ids {
        let mut finished = None;
        for _ in 0..600 {
            let (_, text) = get(&format!("{}/admin/sampling/jobs/{id}", proxy.base)).await;
            let v: Value = serde_json::from_str(&text).expect("status JSON");
            if v["state"] == "done" || v["state"] == "failed" {
                finished = Some(v);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let v = finished.unwrap_or_else(|| panic!("job {id} never finished"));
        assert_eq!(
            v["counters"]["sampled"].as_u64().unwrap_or(0),
            0,
            "nothing sampled through a redirect: {v}"
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the redirect target was never asked"
    );
    proxy.stop().await;
    redirector_task.abort();
    target_task.abort();
}
