//! `GET /admin/sampling/jobs/{id}/files/{name}` and `.../timemaps/{name}` on the real app: a
//! done job's report, logs and TimeMaps are served byte for byte with their Content-Type; a file
//! not written (yet) is a 404 that says so; only the pinned names and the TimeMap pattern are
//! served, and every attack on the path (`..` raw and percent-encoded, absolute paths, NUL,
//! over-long and non-UTF-8 names, symlinks and a FIFO inside the job's directory) is a 404 that
//! leaks nothing; no token, no file.

use crate::sampling_api::{config, get, post, wait_for, TOKEN};
use crate::sampling_job::{fake_cdx, index_file};
use crate::support::{client, start_proxy};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "SECRET-OUTSIDE-THE-JOB";

/// TimeMap `name` of a job's `out/`, read from its pack.
pub(crate) fn plain_timemap(out: &Path, name: &str) -> String {
    let mut text = String::new();
    let mut r = tmproxy::sampling::pack::open_in(&out.join("timemaps"), name)
        .expect("readable")
        .expect("written");
    std::io::Read::read_to_string(&mut r, &mut text).expect("a whole TimeMap");
    text
}

/// GET with the token: status, Content-Type, body.
pub(crate) async fn fetch(url: &str) -> (u16, String, String) {
    let r = client()
        .get(url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET");
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (r.status().as_u16(), ct, r.text().await.expect("body"))
}

/// A request line sent as is (reqwest would resolve `..` before sending): status and body.
async fn raw_get(base: &str, path: &str) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("answered in time")
        .expect("read");
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// The shared fake CDX server behind one that also answers `showNumPages` (one page), so the
/// TimeMap stage writes TimeMap files: each page query is passed on to the shared fake.
pub(crate) async fn paged_cdx(inner: String) -> (String, tokio::task::JoinHandle<()>) {
    use axum::extract::RawQuery;
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/cdx",
        axum::routing::get(move |RawQuery(q): RawQuery| {
            let inner = inner.clone();
            async move {
                let q = q.unwrap_or_default();
                if q.contains("showNumPages=true") {
                    return "1".into_response();
                }
                match client().get(format!("{inner}?{q}")).send().await {
                    Ok(r) => {
                        let status = axum::http::StatusCode::from_u16(r.status().as_u16())
                            .unwrap_or(axum::http::StatusCode::BAD_GATEWAY);
                        (status, r.text().await.unwrap_or_default()).into_response()
                    }
                    Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
                }
            }
        }),
    );
    let (addr, task) = crate::support::serve_fake(app).await;
    (format!("http://{addr}/cdx"), task)
}

pub(crate) fn job_out(data: &Path, id: &str) -> std::path::PathBuf {
    data.join("sampling/jobs").join(id).join("out")
}

/// A proxy whose jobs read an index among its inputs and ask a fake CDX API behind a paging
/// one, and one job run to its end: seed 5, TimeMaps collected, and `more` of the spec.
pub(crate) struct DoneJob {
    pub dir: tempfile::TempDir,
    pub proxy: crate::support::Proxy,
    pub base: String,
    pub id: String,
    /// The job's output directory.
    pub out: std::path::PathBuf,
    servers: [tokio::task::JoinHandle<()>; 2],
}

impl DoneJob {
    pub(crate) async fn run(more: serde_json::Value) -> DoneJob {
        let (inner, _fake, inner_task) = fake_cdx().await;
        let (cdx, task) = paged_cdx(inner).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let inputs = dir.path().join("inputs");
        std::fs::create_dir_all(&inputs).expect("mkdir");
        index_file(&inputs);
        let data = dir.path().join("data");
        let proxy = start_proxy(config(&inputs, &cdx, &data.join("cache"))).await;
        let base = proxy.base.clone();
        let mut spec = json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 5,
                              "collect_timemaps": true});
        if let (Some(spec), Some(more)) = (spec.as_object_mut(), more.as_object()) {
            spec.extend(more.clone());
        }
        let (status, v) = post(&base, &spec).await;
        assert_eq!(status, 201, "{v}");
        let id = v["id"].as_str().expect("an id").to_string();
        wait_for(&base, &id, "done").await;
        let out = job_out(&data, &id);
        let servers = [task, inner_task];
        DoneJob {
            dir,
            proxy,
            base,
            id,
            out,
            servers,
        }
    }

    pub(crate) async fn stop(self) {
        self.proxy.stop().await;
        for task in self.servers {
            task.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_files_and_timemaps_are_served_and_nothing_else() {
    let job = DoneJob::run(json!({"hydrate_revisits": true})).await;
    let (dir, base, id, out) = (&job.dir, &job.base, &job.id, &job.out);
    let jobs = format!("{base}/admin/sampling/jobs/{id}");
    // A version of the engine without retries.ndjson: it is simply not there.
    let _ = std::fs::remove_file(out.join("retries.ndjson"));

    // The first TimeMap the index names.
    let index = std::fs::read_to_string(out.join("timemaps/index.ndjson")).expect("index");
    let first = index
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v["file"].as_str().map(str::to_string))
        .expect("a TimeMap file");
    let first = format!("timemaps/{first}");

    // Served byte for byte, with their types; a TimeMap as its plain lines, decoded from its
    // pack.
    for (path, ct) in [
        ("files/report.md", "text/markdown; charset=utf-8"),
        ("files/set_aside.ndjson", "application/x-ndjson"),
        ("files/errors.ndjson", "application/x-ndjson"),
        ("timemaps/index.ndjson", "application/x-ndjson"),
        (first.as_str(), "application/x-ndjson"),
        ("timemaps/hydration.json", "application/json"),
    ] {
        let on_disk = path.replace("files/", "");
        let want = match on_disk.strip_prefix("timemaps/") {
            Some(name) if name.starts_with('0') => plain_timemap(out, name),
            _ => std::fs::read_to_string(out.join(&on_disk)).expect(path),
        };
        let (status, got_ct, body) = fetch(&format!("{jobs}/{path}")).await;
        assert_eq!((status, got_ct.as_str()), (200, ct), "{path}: {body}");
        assert_eq!(body, want, "{path}");
    }
    let (_, _, report) = fetch(&format!("{jobs}/files/report.md")).await;
    assert!(report.contains("## URLs per year"));

    // Not written: a 404 saying so, not a 500.
    let (status, _, body) = fetch(&format!("{jobs}/files/retries.ndjson")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("retries.ndjson is not written by this run"),
        "{body}"
    );
    let (status, _, body) = fetch(&format!("{jobs}/timemaps/999999.ndjson")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("timemaps/999999.ndjson is not written"),
        "{body}"
    );
    let (status, _, body) =
        fetch(&format!("{base}/admin/sampling/jobs/nope/files/report.md")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no sampling job"), "{body}");

    // No token, no file.
    for path in ["files/report.md", "timemaps/index.ndjson"] {
        let r = client()
            .get(format!("{jobs}/{path}"))
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status().as_u16(), 401, "{path}");
        let r = client()
            .get(format!("{jobs}/{path}"))
            .bearer_auth("wrong-token")
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status().as_u16(), 401, "{path}");
    }

    // A secret beside the job and at the top of the data directory.
    std::fs::write(dir.path().join("secret.txt"), SECRET).expect("write");
    std::fs::write(out.join("secret.md"), SECRET).expect("write");
    let long = "a".repeat(5000);
    let long_tm = format!("{}.ndjson", "0".repeat(5000));
    let mut refused = vec![
        // Names off the list, and files of the job that have their own rules or none.
        "files/spec.json".to_string(),
        "files/state.json".into(),
        "files/sample.ndjson".into(),
        "files/first_captures.ndjson".into(),
        "files/secret.md".into(),
        "files/REPORT.md".into(),
        "timemaps/report.md".into(),
        "timemaps/0.ndjson".into(),
        "timemaps/000000.ndjson.tmp".into(),
        // Percent-encoded traversal, absolute paths, NUL, non-UTF-8, over-long names.
        "files/..%2Fspec.json".into(),
        "files/%2e%2e%2fspec.json".into(),
        "files/%2E%2E%2F%2E%2E%2F%2E%2E%2F%2E%2E%2Fsecret.txt".into(),
        "files/%2e%2e".into(),
        "timemaps/%2e%2e%2f%2e%2e%2fspec.json".into(),
        "timemaps/..%2findex.ndjson".into(),
        "files/%2Fetc%2Fpasswd".into(),
        "timemaps/%2Fetc%2Fpasswd".into(),
        "files/report.md%00".into(),
        "files/report.md%00.txt".into(),
        "timemaps/000000.ndjson%00".into(),
        "files/%80".into(),
        format!("files/{long}"),
        format!("timemaps/{long_tm}"),
    ];
    refused.extend(
        // Raw, not resolved by the client: `..` segments and an absolute path.
        [
            "files/../spec.json",
            "files/../../../../secret.txt",
            "timemaps/../../spec.json",
            "timemaps/../files/report.md",
            "files//etc/passwd",
            "files/./report.md/..",
        ]
        .map(String::from),
    );
    for path in &refused {
        let (status, text) = raw_get(base, &format!("/admin/sampling/jobs/{id}/{path}")).await;
        assert_eq!(status, 404, "{path}: {text}");
        assert!(!text.contains(SECRET), "{path}");
        assert!(!text.contains("\"cdx_api\""), "{path}: the spec leaked");
    }

    // Symlinks inside the job's output pointing out of it, and a FIFO: refused, nothing leaks,
    // nothing hangs.
    std::fs::remove_file(out.join("report.md")).expect("rm");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), out.join("report.md"))
        .expect("symlink");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("index.ndjson"), SECRET).expect("write");
    std::fs::rename(out.join("timemaps"), dir.path().join("timemaps.moved")).expect("mv");
    std::os::unix::fs::symlink(&elsewhere, out.join("timemaps")).expect("symlink");
    let made = std::process::Command::new("mkfifo")
        .arg(out.join("retries.ndjson"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for path in [
        "files/report.md",
        "timemaps/index.ndjson",
        "files/retries.ndjson",
    ] {
        let (status, _, body) =
            tokio::time::timeout(Duration::from_secs(10), fetch(&format!("{jobs}/{path}")))
                .await
                .expect("answered, not blocked on the FIFO");
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body.contains("refused"), "{path}: {body}");
        assert!(!body.contains(SECRET), "{path}");
    }
    job.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_jobs_report_is_a_404_that_says_it_is_not_written_yet() {
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    index_file(&inputs);
    let data = dir.path().join("data");
    // Slow answers, one at a time: the job is still running when asked.
    fake.latency_ms.store(200, Ordering::Relaxed);
    let proxy = start_proxy(config(&inputs, &cdx, &data.join("cache"))).await;
    let base = proxy.base.clone();
    let (_, v) = post(
        &base,
        &json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "concurrency": 1}),
    )
    .await;
    let id = v["id"].as_str().expect("an id").to_string();
    let jobs = format!("{base}/admin/sampling/jobs/{id}");
    wait_for(&base, &id, "running").await;
    // The set-aside log is opened when the run starts; wait for it.
    for _ in 0..200 {
        if job_out(&data, &id).join("set_aside.ndjson").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (status, _, body) = fetch(&format!("{jobs}/files/report.md")).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("is running: report.md is not written yet"),
        "{body}"
    );
    let (status, _, body) = fetch(&format!("{jobs}/timemaps/index.ndjson")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not written yet"), "{body}");
    // What is there is served as it stands.
    let (status, ct, _) = fetch(&format!("{jobs}/files/set_aside.ndjson")).await;
    assert_eq!((status, ct.as_str()), (200, "application/x-ndjson"));
    // The sample still waits for the end.
    let (status, _) = get(&format!("{jobs}/sample")).await;
    assert_eq!(status, 409);
    let r = client()
        .delete(&jobs)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(r.status().as_u16(), 200);
    proxy.stop().await;
    task.abort();
}
