//! The incremental-refresh benchmark (BENCHMARKS.md, "Bytes of a refresh"): bytes a release
//! `tmproxy serve` reads from an archive to refresh an entry of `--mementos` SYNTHETIC captures
//! after `--new` more appeared, asked incrementally, against a full listing of the same archive
//! in the same run (an admin's refresh reads in full). Two archives, one run each: a CDX server
//! in the Internet Archive's dialect honouring `from=`, and a link-format TimeMap in pages of
//! `--page-size` whose pages link their neighbours with `from`/`until`. Bytes come from the
//! server's own `tmproxy_archive_bytes_total`, checked against what the fake archive sent.
//!
//!   refresh_bytes [--server target/release/tmproxy] [--mementos 1000000] [--new 10]
//!                 [--page-size 10000]

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use clap::Parser;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::captures;

#[derive(Parser)]
#[command(about = "Bytes an incremental refresh reads against a full listing")]
struct Args {
    #[arg(long, default_value = "target/release/tmproxy")]
    server: PathBuf,
    #[arg(long, default_value_t = 1_000_000)]
    mementos: usize,
    #[arg(long, default_value_t = 10)]
    new: usize,
    #[arg(long, default_value_t = 10_000)]
    page_size: usize,
}

const URI_R: &str = "http://example.com/";
const TOKEN: &str = "refresh-bytes-token";

/// The fake archive: its captures (oldest first) and the body bytes it sent.
struct Fake {
    stamps: Mutex<Arc<Vec<String>>>,
    sent: AtomicU64,
    page_size: usize,
    base: String,
}

impl Fake {
    fn stamps(&self) -> Arc<Vec<String>> {
        self.stamps.lock().map(|s| s.clone()).unwrap_or_default()
    }
    fn send(&self, body: String) -> Response {
        self.sent.fetch_add(body.len() as u64, Ordering::Relaxed);
        body.into_response()
    }
}

async fn cdx(State(fake): State<Arc<Fake>>, Query(q): Query<HashMap<String, String>>) -> Response {
    if q.contains_key("showNumPages") {
        return fake.send("1\n".into());
    }
    let from = q.get("from").cloned().unwrap_or_default();
    let stamps = fake.stamps();
    let mut body = String::from(
        r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#,
    );
    for ts in stamps.iter().filter(|ts| ts.as_str() >= from.as_str()) {
        body.push_str(&format!(
            ",\n[\"com,example)/\",\"{ts}\",\"{URI_R}\",\"text/html\",\"200\",\"SYNTHETICDIGEST{ts}\",\"2048\"]"
        ));
    }
    body.push(']');
    fake.send(body)
}

fn http_date(ts: &str) -> String {
    chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S")
        .map(|t| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .unwrap_or_default()
}

/// Page `p` (1-based) of the TimeMap, linking the pages before and after it.
async fn paged(State(fake): State<Arc<Fake>>, Path((p, _)): Path<(usize, String)>) -> Response {
    let stamps = fake.stamps();
    let pages = stamps.len().div_ceil(fake.page_size).max(1);
    if p == 0 || p > pages {
        return axum::http::StatusCode::NOT_FOUND.into_response();
    }
    let on = |q: usize| &stamps[(q - 1) * fake.page_size..(q * fake.page_size).min(stamps.len())];
    let base = &fake.base;
    let mut body = format!("<{URI_R}>; rel=\"original\",\n");
    for q in [p - 1, p + 1]
        .into_iter()
        .filter(|q| (1..=pages).contains(q))
    {
        let held = on(q);
        let (first, last) = (&held[0], &held[held.len() - 1]);
        body.push_str(&format!(
            "<{base}/tm/{q}/{URI_R}>; rel=\"timemap\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\",\n",
            http_date(first),
            http_date(last)
        ));
    }
    for ts in on(p) {
        body.push_str(&format!(
            "<{base}/web/{ts}/{URI_R}>; rel=\"memento\"; datetime=\"{}\",\n",
            http_date(ts)
        ));
    }
    fake.send(body.trim_end_matches(",\n").to_string())
}

async fn start_fake(all: &[String], n: usize, page_size: usize) -> Result<Arc<Fake>, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let fake = Arc::new(Fake {
        stamps: Mutex::new(Arc::new(all[..n].to_vec())),
        sent: AtomicU64::new(0),
        page_size,
        base: format!("http://{addr}"),
    });
    let app = axum::Router::new()
        .route("/cdx", axum::routing::get(cdx))
        .route("/tm/{page}/{*uri}", axum::routing::get(paged))
        .with_state(fake.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(fake)
}

fn archive_toml(kind: &str, base: &str) -> String {
    match kind {
        "cdx" => format!(
            "[[archives]]\nid = \"cdx\"\nkind = \"cdx\"\ncdx = \"{base}/cdx\"\ndialect = \"ia\"\nreplay = \"{base}/web/{{timestamp}}/{{url}}\"\ntimegate = \"{base}/gate/\"\n"
        ),
        _ => format!(
            "[[archives]]\nid = \"paged\"\ntimemap = \"{base}/tm/1/\"\ntimegate = \"{base}/gate/\"\n"
        ),
    }
}

/// One value of `/metrics`.
async fn metric(client: &reqwest::Client, base: &str, series: &str) -> f64 {
    let text = match client.get(format!("{base}/metrics")).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// Runs one archive kind: the first listing, the incremental refresh, the full one.
async fn run(args: &Args, kind: &str, all: &[String]) -> Result<(f64, f64), String> {
    let fake = start_fake(all, args.mementos, args.page_size).await?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = dir.path().join("tmproxy.toml");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[admin]\ntoken = \"{TOKEN}\"\n[upstream]\ntimeout = \"120s\"\ndeadline = \"120s\"\nmax_body = \"1GiB\"\nmax_pages = 1000\n[cache]\nttl = \"0s\"\nfull_refresh = \"30d\"\npath = \"{}\"\n{}",
        dir.path().join("cache").display(),
        archive_toml(kind, &fake.base)
    );
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let mut child = std::process::Command::new(&args.server)
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", args.server.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let result = measure(&base, kind, &fake, all, args).await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn measure(
    base: &str,
    kind: &str,
    fake: &Fake,
    all: &[String],
    args: &Args,
) -> Result<(f64, f64), String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let bytes_series = format!("tmproxy_archive_bytes_total{{archive=\"{kind}\"}}");
    let refreshes =
        |k: &str| format!("tmproxy_archive_refreshes_total{{archive=\"{kind}\",kind=\"{k}\"}}");
    let timemap = format!("{base}/timemap/link/{URI_R}");
    let count = |r: &reqwest::Response| {
        r.headers()
            .get("x-memento-count")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?")
            .to_string()
    };
    let t = Instant::now();
    let first = client
        .get(&timemap)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "{kind}: first request {} ({} mementos) in {:.1}s",
        first.status(),
        count(&first),
        t.elapsed().as_secs_f64()
    );
    let listed = metric(&client, base, &bytes_series).await;
    let sent = fake.sent.load(Ordering::Relaxed) as f64;

    if let Ok(mut stamps) = fake.stamps.lock() {
        *stamps = Arc::new(all[..args.mementos + args.new].to_vec());
    }
    let t = Instant::now();
    let second = client
        .get(&timemap)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let incremental = metric(&client, base, &bytes_series).await - listed;
    let sent_incremental = fake.sent.load(Ordering::Relaxed) as f64 - sent;
    println!(
        "{kind}: refresh with {} new: {} ({} mementos, X-Cache {}) in {:.1}s: {incremental} bytes read (archive sent {sent_incremental}), incremental refreshes {}",
        args.new,
        second.status(),
        count(&second),
        second.headers().get("x-cache").and_then(|v| v.to_str().ok()).unwrap_or("?"),
        t.elapsed().as_secs_f64(),
        metric(&client, base, &refreshes("incremental")).await
    );
    drop((first, second));

    let before = metric(&client, base, &bytes_series).await;
    let t = Instant::now();
    let admin = client
        .post(format!("{base}/admin/cache/{URI_R}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let full = metric(&client, base, &bytes_series).await - before;
    println!(
        "{kind}: admin refresh (full) {} in {:.1}s: {full} bytes read, full refreshes {}",
        admin.status(),
        t.elapsed().as_secs_f64(),
        metric(&client, base, &refreshes("full")).await
    );
    Ok((incremental, full))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let step = chrono::Duration::minutes(5);
    let all = captures(args.mementos + args.new, 0, step);
    println!(
        "{} SYNTHETIC mementos + {} new, {} cores, {}",
        args.mementos,
        args.new,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        chrono::Utc::now().format("%F")
    );
    let mut ok = true;
    for kind in ["cdx", "paged"] {
        match run(&args, kind, &all).await {
            Ok((incremental, full)) => {
                let ratio = incremental / full;
                println!(
                    "{kind}: incremental / full = {incremental} / {full} = {:.5}% ({})",
                    100.0 * ratio,
                    if ratio <= 0.01 {
                        "within 1%"
                    } else {
                        "OVER 1%"
                    }
                );
                ok &= ratio <= 0.01;
            }
            Err(e) => {
                eprintln!("{kind}: {e}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
