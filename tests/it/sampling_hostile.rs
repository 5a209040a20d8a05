//! Hostile input to the sampling engine and `tmproxy sample` (all of it SYNTHETIC, written by
//! these tests): a line past `max_line` and a non-UTF-8 byte are set aside with their line
//! number while the rest is sampled as if they were not there; a gzip bomb, an input
//! decompressing past the ratio or the size limit, an unsorted or concatenated index end the
//! run with an error naming the limit or the line; a sparse file of zeros is skipped, not held;
//! a run where nothing could work exits non-zero; off a terminal the CLI still reports.

use crate::sampling_job::{fake_cdx, index_file, sample_of, spec};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use tmproxy::sampling::engine::{run, run_with, Limits, Progress, Spec};
use tmproxy::sampling::reading::ReadLimits;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

fn set_aside(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("set_aside.ndjson"))
        .expect("set_aside.ndjson")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn read_row(out: &Path) -> serde_json::Value {
    let funnel: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("funnel.json")).expect("funnel"))
            .expect("JSON");
    funnel
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["stage"] == "read").cloned())
        .expect("a read row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_line_and_a_bad_byte_are_set_aside_by_line_and_the_rest_is_sampled() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let clean = index_file(dir.path());
    let text = std::fs::read(&clean).expect("index");
    let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
    // Mid-file: a 100 KB line (past the 64 KiB default) and a line with a byte that is not UTF-8.
    let mut hostile = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 40 {
            hostile.extend(b"com,site014)/");
            hostile.extend(vec![b'a'; 100_000]);
            hostile.extend(b" 20050101000000 p 0 1\n");
        }
        if i == 80 {
            hostile.extend(b"com,site027)/caf\xe9.html 20050101000000 p 0 1\n");
        }
        hostile.extend_from_slice(l);
    }
    let bad = dir.path().join("hostile.txt");
    std::fs::write(&bad, &hostile).expect("write");

    let (want, got) = (dir.path().join("clean"), dir.path().join("hostile"));
    let p = Arc::new(Progress::default());
    run(&spec(&clean, &cdx), &want, p).await.expect("clean run");
    let p = Arc::new(Progress::default());
    let o = run(&spec(&bad, &cdx), &got, p)
        .await
        .expect("the run goes on");
    assert!(o.sample > 0);
    assert_eq!(
        sample_of(&got),
        sample_of(&want),
        "the rest sampled as without them"
    );
    let aside = set_aside(&got);
    let long = aside
        .iter()
        .find(|a| a["reason"].as_str().is_some_and(|r| r.contains("max_line")))
        .expect("the long line set aside");
    assert!(
        long["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("line 41: 100034 bytes"),
        "{long}"
    );
    assert!(
        long["url"].as_str().unwrap_or("").len() <= 200,
        "its head only"
    );
    let utf8 = aside
        .iter()
        .find(|a| {
            a["reason"]
                .as_str()
                .is_some_and(|r| r.contains("not UTF-8"))
        })
        .expect("the bad byte set aside");
    assert!(
        utf8["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("line 82: not UTF-8"),
        "{utf8}"
    );
    assert_eq!(
        read_row(&got)["errors"],
        read_row(&want)["errors"].as_u64().unwrap_or(0) + 2
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_and_an_input_past_its_limits_end_the_run_naming_the_limit() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    // 64 MB of zeros, no newline: about 64 KB of gzip.
    let bomb = dir.path().join("bomb.gz");
    std::fs::write(&bomb, gzip(&vec![0u8; 64 << 20])).expect("write");
    let p = Arc::new(Progress::default());
    let e = run(&spec(&bomb, &cdx), &dir.path().join("o1"), p.clone())
        .await
        .expect_err("a bomb is an error");
    assert!(e.contains("max_gzip_ratio (100)"), "{e}");
    assert!(
        p.input_read.load(std::sync::atomic::Ordering::Relaxed) < 1 << 20,
        "stopped early"
    );

    // Many short sorted lines that compress well: past a ratio of 10.
    let mut text = String::new();
    let pad = "a".repeat(200);
    for i in 0..20_000 {
        text.push_str(&format!("com,example)/{pad}/{i:06} 20050101000000 p 0 1\n"));
    }
    let packed = gzip(text.as_bytes());
    let ratio = text.len() / packed.len();
    assert!(ratio > 10, "the test input must be past the limit: {ratio}");
    let lines = dir.path().join("lines.gz");
    std::fs::write(&lines, &packed).expect("write");
    let limits = Limits {
        read: ReadLimits {
            max_gzip_ratio: 10,
            ..ReadLimits::default()
        },
        ..Limits::default()
    };
    let p = Arc::new(Progress::default());
    let e = run_with(&spec(&lines, &cdx), &dir.path().join("o2"), p, limits)
        .await
        .expect_err("past the ratio");
    assert!(e.contains("max_gzip_ratio (10)"), "{e}");

    // The size limit, on the same input uncompressed.
    let plain = dir.path().join("lines.txt");
    std::fs::write(&plain, &text).expect("write");
    let limits = Limits {
        read: ReadLimits {
            max_input_bytes: 1 << 20,
            ..ReadLimits::default()
        },
        ..Limits::default()
    };
    let p = Arc::new(Progress::default());
    let e = run_with(&spec(&plain, &cdx), &dir.path().join("o3"), p, limits)
        .await
        .expect_err("past the size");
    assert!(e.contains("max_input_bytes (1048576 bytes)"), "{e}");
    assert!(e.contains("after line"), "{e}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsorted_or_concatenated_index_is_refused_with_its_line() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let index = index_file(dir.path());
    let text = std::fs::read_to_string(&index).expect("index");
    let n = text.lines().count();
    let twice = dir.path().join("twice.txt");
    std::fs::write(&twice, format!("{text}{text}")).expect("write");
    let p = Arc::new(Progress::default());
    let e = run(&spec(&twice, &cdx), &dir.path().join("o1"), p)
        .await
        .expect_err("refused");
    assert!(
        e.contains(&format!("input line {} goes backwards", n + 1)),
        "{e}"
    );

    let mut lines: Vec<&str> = text.lines().collect();
    lines.swap(10, 11);
    let swapped = dir.path().join("swapped.txt");
    std::fs::write(&swapped, lines.join("\n") + "\n").expect("write");
    let p = Arc::new(Progress::default());
    let e = run(&spec(&swapped, &cdx), &dir.path().join("o2"), p)
        .await
        .expect_err("refused");
    assert!(e.contains("input line 12 goes backwards"), "{e}");

    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(20, lines[19]);
    let repeated = dir.path().join("repeated.txt");
    std::fs::write(&repeated, lines.join("\n") + "\n").expect("write");
    let p = Arc::new(Progress::default());
    let e = run(&spec(&repeated, &cdx), &dir.path().join("o3"), p)
        .await
        .expect_err("refused");
    assert!(e.contains("input line 21 repeats"), "{e}");
    task.abort();
}

/// `tmproxy sample --spec … --out …`, stdout and stderr piped (not a terminal).
async fn sample_cli(dir: &Path, input: &Path, cdx: &str) -> std::process::Output {
    let spec_path = dir.join("spec.toml");
    std::fs::write(
        &spec_path,
        format!(
            "input = {:?}\ncdx_api = {cdx:?}\ndialect = \"ia\"\nseed = 7\n",
            input.display().to_string()
        ),
    )
    .expect("spec");
    let out = dir.join("out");
    let bin = env!("CARGO_BIN_EXE_tmproxy");
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin)
            .args(["sample", "--spec"])
            .arg(&spec_path)
            .arg("--out")
            .arg(&out)
            .env("TMPROXY_PROGRESS_SECS", "1")
            .output()
    })
    .await
    .expect("joined")
    .expect("ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_file_of_zeros_is_skipped_not_held_and_the_cli_fails() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let sparse = dir.path().join("sparse.idx");
    let f = std::fs::File::create(&sparse).expect("create");
    f.set_len(200 << 20).expect("200 MB of zeros, no newline");
    drop(f);
    let done = sample_cli(dir.path(), &sparse, &cdx).await;
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    assert!(err.contains("no input line could be read"), "{err}");
    let aside = set_aside(&dir.path().join("out"));
    assert_eq!(aside.len(), 1);
    let reason = aside[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with(&format!("line 1: {} bytes", 200 << 20)),
        "{reason}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_non_zero_when_every_line_is_bad_or_every_cdx_request_fails() {
    // A CDX server that answers 503 to everything (Retry-After: 0, so the retries are quick).
    let app = axum::Router::new().route(
        "/cdx",
        axum::routing::get(|| async {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [("retry-after", "0")],
                "down",
            )
                .into_response()
        }),
    );
    let (addr, task) = crate::support::serve_fake(app).await;
    let down = format!("http://{addr}/cdx");
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("few.txt");
    std::fs::write(
        &input,
        "com,a)/ 20050101000000 p 0 1\ncom,b)/x.html 20050101000000 p 0 1\n",
    )
    .expect("write");
    let done = sample_cli(dir.path(), &input, &down).await;
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    assert!(err.contains("every CDX request failed"), "{err}");

    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bad.txt");
    let mut bad = b"com,a)/\xff 2005 p 0 1\nno timestamp here\n".to_vec();
    bad.extend(vec![b'z'; 70_000]);
    std::fs::write(&input, bad).expect("write");
    let done = sample_cli(dir.path(), &input, &down).await;
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no input line could be read (3 lines"),
        "{err}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_a_terminal_the_cli_prints_plain_progress_and_its_summary() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let done = sample_cli(dir.path(), &input, &cdx).await;
    let (out, err) = (
        String::from_utf8_lossy(&done.stdout),
        String::from_utf8_lossy(&done.stderr),
    );
    assert!(done.status.success(), "{err}");
    assert!(out.contains("URLs sampled →"), "{out}");
    // The last progress line, whatever the timing: the final stage and its counters.
    let last = err
        .lines()
        .rfind(|l| l.starts_with("sample: "))
        .expect("a progress line");
    assert!(last.starts_with("sample: stage done:"), "{err}");
    assert!(
        last.contains("index lines") && last.contains("sampled"),
        "{last}"
    );
    // The end, said once: no rate, no ETA, how long it took.
    assert!(
        last.contains("; finished in ") && !last.contains("ETA") && !last.contains("running"),
        "{last}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_max_memory_fails_naming_it() {
    let (cdx, fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    // 8,192 URLs of a popular domain: held in its pool, asked nothing while the input is read.
    let input = dir.path().join("popular.txt");
    let text: String = (0..8192)
        .map(|i| format!("com,twitter)/user{i:05} 20160101000000 p 0 1\n"))
        .collect();
    std::fs::write(&input, text).expect("write");
    let limits = Limits {
        max_memory: 500_000,
        ..Limits::default()
    };
    let p = Arc::new(Progress::default());
    let e = run_with(
        &spec(&input, &cdx),
        &dir.path().join("o1"),
        p.clone(),
        limits,
    )
    .await
    .expect_err("past max_memory");
    assert!(
        e.contains("past [sampling] max_memory (500000 bytes)"),
        "{e}"
    );
    assert!(e.contains("popular pool"), "{e}");
    assert_eq!(
        p.lines.load(std::sync::atomic::Ordering::Relaxed),
        4096,
        "checked as the input is read, not at its end"
    );
    assert_eq!(fake.requests.load(std::sync::atomic::Ordering::SeqCst), 0);

    // A checkpoint too large to hold: refused before anything is read.
    let out = dir.path().join("o2");
    std::fs::create_dir_all(&out).expect("mkdir");
    // The checkpoint's header ties it to the spec, as a run writes it.
    let sp = spec(&input, &cdx);
    let header = serde_json::json!({"spec_hash": sp.result_hash(), "fields": Spec::RESULT_FIELDS});
    let answers: String = std::iter::once(format!("{header}\n"))
        .chain((0..5000)
        .map(|i| format!("{{\"url\":\"https://h{i}.example/\",\"answer\":{{\"result\":\"not_archived\"}}}}\n")))
        .collect();
    std::fs::write(out.join("first_captures.ndjson"), answers).expect("write");
    let limits = Limits {
        max_memory: 100_000,
        ..Limits::default()
    };
    let p = Arc::new(Progress::default());
    let e = run_with(&sp, &out, p.clone(), limits)
        .await
        .expect_err("past max_memory");
    assert!(e.contains("resumed answers"), "{e}");
    assert_eq!(p.lines.load(std::sync::atomic::Ordering::Relaxed), 0);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_input_url_is_cut_at_max_input_bytes() {
    let (cdx, _fake, task) = fake_cdx().await;
    // An input URL whose body never ends (SYNTHETIC zeros, 64 KiB a chunk).
    let app = axum::Router::new().route(
        "/index",
        axum::routing::get(|| async {
            let chunks = futures::stream::repeat_with(|| {
                Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![0u8; 64 << 10]))
            });
            axum::body::Body::from_stream(chunks)
        }),
    );
    let (addr, endless) = crate::support::serve_fake(app).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = spec(Path::new("unused"), &cdx);
    s.input = format!("http://{addr}/index");
    let limits = Limits {
        read: ReadLimits {
            max_input_bytes: 1 << 20,
            ..ReadLimits::default()
        },
        ..Limits::default()
    };
    let out = dir.path().join("out");
    let p = Arc::new(Progress::default());
    let e = run_with(&s, &out, p, limits).await.expect_err("cut");
    assert!(e.contains("max_input_bytes (1048576 bytes)"), "{e}");
    assert!(
        !out.join("input.index").exists(),
        "the partial download removed"
    );
    endless.abort();
    task.abort();
}
