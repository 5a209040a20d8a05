//! The log thread never holds a request up (docs/operating.md, Logs): the real binary's
//! stderr is a pipe the test stops reading once the server has said where it listens, so the
//! pipe fills and the log's writer blocks on it for good, and requests are still answered.

use crate::support::{client, ChildGuard};
use std::io::{BufRead, BufReader};
use std::process::{ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

/// Requests sent at once, and between two looks at the pipe.
const BATCH: usize = 200;
/// Far more lines than a pipe holds (at most 1 MiB by default, 64 KiB usually): if the pipe
/// has not filled by then, requests are not being logged and the test proves nothing.
const MAX_REQUESTS: usize = 20_000;

/// Bytes written into the pipe and not read.
fn unread(stderr: &ChildStderr) -> u64 {
    rustix::io::ioctl_fionread(stderr).expect("FIONREAD on the stderr pipe")
}

/// `n` requests, `BATCH` at once, each answered in full within a generous bound.
async fn answered(base: &str, paths: impl Iterator<Item = String>) {
    let requests = paths.map(|path| {
        let url = format!("{base}{path}");
        async move {
            let r = client()
                .get(&url)
                .timeout(Duration::from_secs(20))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{url} held up while the log is blocked: {e}"));
            assert_eq!(r.status().as_u16(), 200, "{url}");
            r.bytes().await.expect("body");
        }
    });
    futures::future::join_all(requests).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_nobody_reads_never_holds_a_request_up() {
    tokio::time::timeout(Duration::from_secs(240), log_nobody_reads())
        .await
        .expect("the test hung");
}

async fn log_nobody_reads() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[cache]\npath = {:?}\n\n[[archives]]\nid = \"a\"\nname = \"a\"\ntimemap = {:?}\ntimegate = {:?}\n",
            dir.path().join("cache").display().to_string(),
            archive.timemap_prefix(),
            archive.timegate_prefix()
        ),
    )
    .expect("config");
    let mut child = ChildGuard(Some(
        Command::new(env!("CARGO_BIN_EXE_tmproxy"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env_remove("TMPROXY_CONFIG")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts"),
    ));
    // Read up to the line saying where it listens, then never again; kept open, so the log's
    // writes block instead of failing.
    let mut stderr = BufReader::new(child.get().stderr.take().expect("stderr"));
    let mut line = String::new();
    let base = loop {
        line.clear();
        let read = stderr.read_line(&mut line).expect("read stderr");
        assert!(read > 0, "serve exited before it said where it listens");
        if let Some(at) = line.find("public_url=") {
            let rest = &line[at + "public_url=".len()..];
            break rest.split_whitespace().next().expect("a URL").to_string();
        }
    };

    // A request's log line each, until nothing more gets into the pipe: it is full.
    let mut sent = 0;
    let mut before = unread(stderr.get_ref());
    loop {
        answered(&base, (0..BATCH).map(|_| "/healthz".to_string())).await;
        sent += BATCH;
        let now = unread(stderr.get_ref());
        if now == before && now > 0 {
            break;
        }
        assert!(
            sent < MAX_REQUESTS,
            "the stderr pipe never filled ({now} bytes after {sent} requests)"
        );
        before = now;
    }

    // The writer is blocked on the full pipe: every request from here has a line it cannot
    // write. Misses (a fan-out, a store) and hits are answered all the same.
    let started = Instant::now();
    answered(
        &base,
        (0..BATCH).map(|i| format!("/timemap/link/http://example.com/{}", i % 20)),
    )
    .await;
    answered(&base, (0..BATCH).map(|_| "/healthz".to_string())).await;
    eprintln!(
        "{} requests with the log blocked in {:?}",
        2 * BATCH,
        started.elapsed()
    );
    assert_eq!(
        unread(stderr.get_ref()),
        before,
        "the pipe was read after all"
    );
    assert!(
        child.get().try_wait().expect("try_wait").is_none(),
        "serve exited"
    );
}
