//! The big-bodies benchmark (BENCHMARKS.md, "Five 50 MB TimeMaps against the deadline"): the release `tmproxy serve` in front of
//! `--archives` simulated archives that each wait `--delay`, then send a link-format TimeMap of
//! about `--body-mb` MB (SYNTHETIC captures a minute apart), all at once, for one URI-R; the
//! upstream deadline is `--deadline`. Prints when the answer's head and its last byte came,
//! against the deadline, the server's peak RSS (sampled every 50 ms), what each archive gave,
//! and the same for a second request (served while the entry is still being stored, or a hit),
//! then waits for the entry to be stored; then the same for a refresh (`Cache-Control:
//! no-cache`: the archives send it all again and the policy decides against the huge entry).
//! Exits 1 when the miss or the refresh is answered later than the deadline + 1 s.
//!
//!   big_bodies [--server target/release/tmproxy] [--archives 5] [--body-mb 50]
//!              [--deadline 10s] [--delay 6s] [--set KEY=VALUE]…

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

mod common;
use common::{captures, rss_mib};

#[derive(Parser)]
#[command(
    about = "Big TimeMaps from several archives at once: answer time against the deadline, RSS"
)]
struct Args {
    #[arg(long, default_value = "target/release/tmproxy")]
    server: PathBuf,
    #[arg(long, default_value_t = 5)]
    archives: usize,
    /// Roughly this many MB of link format from each archive.
    #[arg(long, default_value_t = 50)]
    body_mb: usize,
    #[arg(long, default_value = "10s", value_parser = tmproxy::config::parse_duration)]
    deadline: Duration,
    /// How long each archive waits before it sends its body (so bodies end near the deadline).
    #[arg(long, default_value = "6s", value_parser = tmproxy::config::parse_duration)]
    delay: Duration,
    /// Extra config lines, `section.key=value` (TOML value).
    #[arg(long = "set")]
    set: Vec<String>,
}

/// One request: (head after, last byte after, status, X-Memento-Archives, X-Cache-Action,
/// body bytes).
async fn timed(
    http: &reqwest::Client,
    url: &str,
    no_cache: bool,
) -> Result<(Duration, Duration, u16, String, String, usize), String> {
    let started = Instant::now();
    let mut req = http.get(url);
    if no_cache {
        req = req.header("cache-control", "no-cache");
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let head = started.elapsed();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, archives, action) = (
        resp.status().as_u16(),
        header("x-memento-archives"),
        format!("{} {}", header("x-cache"), header("x-cache-action")),
    );
    let body = resp.bytes().await.map_err(|e| e.to_string())?;
    Ok((
        head,
        started.elapsed(),
        status,
        archives,
        action,
        body.len(),
    ))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // About 120 bytes a memento line with a loopback URI-M.
    let per_archive = args.body_mb * 1_000_000 / 120;
    let mut archives = Vec::new();
    for k in 0..args.archives {
        let spec = TimeMapSpec {
            captures: captures(per_archive, k, chrono::Duration::minutes(1)),
            delay: args.delay,
            ..TimeMapSpec::default()
        };
        match SimulatedArchive::start(Behaviour::TimeMap(spec)).await {
            Ok(a) => archives.push(a),
            Err(e) => {
                eprintln!("big_bodies: cannot start an archive: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("big_bodies: no temp dir: {e}");
            return ExitCode::from(2);
        }
    };
    let lines = [
        (
            "cache",
            format!(
                "path = {:?}",
                dir.path().join("cache").display().to_string()
            ),
        ),
        (
            "upstream",
            format!("deadline = \"{}ms\"", args.deadline.as_millis()),
        ),
        (
            "upstream",
            format!("timeout = \"{}ms\"", (args.deadline * 2).as_millis()),
        ),
    ];
    let config = common::config_text(&lines, &args.set, &archives);
    let mut server = match common::start_server(&args.server, dir.path(), &config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("big_bodies: {e}");
            return ExitCode::from(2);
        }
    };
    let pid = server.pid;
    let start_rss = rss_mib(pid);
    let peak = Arc::new(std::sync::Mutex::new(start_rss));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                let rss = rss_mib(pid);
                if let Ok(mut p) = peak.lock() {
                    *p = p.max(rss);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("a plain client builds");
    let url = format!("{}/timemap/link/http://big.example/", server.base);
    let mut late = false;
    for round in ["miss", "hit"] {
        late |= round_trip(&http, &url, round, args.deadline).await;
    }
    let stored_after = until_hit(&http, &url).await;
    println!(
        "stored {:.1} s after the hit request; RSS then {:.1} MiB",
        stored_after.as_secs_f64(),
        rss_mib(pid)
    );
    late |= round_trip(&http, &url, "refresh", args.deadline).await;
    let stored_after = until_hit(&http, &url).await;
    println!(
        "refreshed entry stored {:.1} s after the refresh's answer; RSS then {:.1} MiB",
        stored_after.as_secs_f64(),
        rss_mib(pid)
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    done.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let peak = peak.lock().map_or(0.0, |p| *p);
    println!(
        "big_bodies: {} archives × ~{} MB ({} mementos each); RSS start {start_rss:.1} MiB, peak {peak:.1} MiB, 5 s after the store {:.1} MiB",
        args.archives,
        args.body_mb,
        per_archive,
        rss_mib(pid)
    );
    let _ = server.child.kill().await;
    if late {
        println!("FAIL: the miss or the refresh was answered after the deadline + 1 s");
        ExitCode::from(1)
    } else {
        println!("PASS");
        ExitCode::SUCCESS
    }
}

/// One timed request, printed; true when a miss or refresh came after the deadline + 1 s.
async fn round_trip(http: &reqwest::Client, url: &str, round: &str, deadline: Duration) -> bool {
    let bound = round != "hit";
    match timed(http, url, round == "refresh").await {
        Ok((head, all, status, outcomes, action, bytes)) => {
            println!(
                "{round}: {status} head after {:.2} s, last byte after {:.2} s ({:.1} MB), deadline {:.1} s; x-cache {action}; archives {outcomes}",
                head.as_secs_f64(),
                all.as_secs_f64(),
                bytes as f64 / 1e6,
                deadline.as_secs_f64()
            );
            bound && head > deadline + Duration::from_secs(1)
        }
        Err(e) => {
            println!("{round}: failed: {e}");
            true
        }
    }
}

/// Asks until the answer is a HIT (the entry is stored), at most 120 s; how long it took.
async fn until_hit(http: &reqwest::Client, url: &str) -> Duration {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        let hit = http
            .head(url)
            .send()
            .await
            .ok()
            .and_then(|r| r.headers().get("x-cache").map(|v| v.as_bytes() == b"HIT"));
        if hit == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    started.elapsed()
}
