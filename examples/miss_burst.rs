//! The memory benchmark (BENCHMARKS.md, "Memory under many misses"): the release `tmproxy serve` as a child process
//! in front of three simulated archives whose merged TimeMap has `--mementos` entries (SYNTHETIC
//! captures), sent `--misses` distinct never-seen URI-Rs over `--connections` connections; then
//! idle for `--after`. Prints the server's RSS (VmRSS) once a second and a summary: the peak during
//! the load, the RSS when the load ends and at the end of the idle time, against
//! `hot_capacity + 256 MiB`. Exits 1 when the bound is broken or any request failed.
//!
//!   miss_burst [--server target/release/tmproxy] [--misses 30000] [--connections 64]
//!              [--mementos 1000] [--hot-capacity 64MiB] [--after 60s] [--set KEY=VALUE]…

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

mod common;
use common::{captures, rss_mib};

#[derive(Parser)]
#[command(about = "N distinct cache misses against tmproxy serve, then its RSS while idle")]
struct Args {
    #[arg(long, default_value = "target/release/tmproxy")]
    server: PathBuf,
    #[arg(long, default_value_t = 30_000)]
    misses: usize,
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Mementos in each merged TimeMap (split 60/25/15 over the three archives).
    #[arg(long, default_value_t = 1000)]
    mementos: usize,
    #[arg(long, default_value = "64MiB", value_parser = tmproxy::config::parse_size)]
    hot_capacity: u64,
    #[arg(long, default_value = "60s", value_parser = tmproxy::config::parse_duration)]
    after: Duration,
    /// Extra lines for the server's config, `section.key=value` (TOML value), e.g.
    /// `--set 'cache.persistent_cache="16MiB"'`.
    #[arg(long = "set")]
    set: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let shares = [0.60, 0.25, 0.15];
    let mut archives = Vec::new();
    for (k, share) in shares.iter().enumerate() {
        let n = ((args.mementos as f64) * share).round() as usize;
        let stamps = captures(n, k, chrono::Duration::days(1));
        let refs: Vec<&str> = stamps.iter().map(String::as_str).collect();
        match SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&refs))).await {
            Ok(a) => archives.push(a),
            Err(e) => {
                eprintln!("miss_burst: cannot start an archive: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("miss_burst: no temp dir: {e}");
            return ExitCode::from(2);
        }
    };
    let lines = [
        ("server", "rate_limit = 0.0".to_string()),
        (
            "cache",
            format!(
                "path = {:?}",
                dir.path().join("cache").display().to_string()
            ),
        ),
        ("cache", format!("hot_capacity = {}", args.hot_capacity)),
        ("admin", "token = \"miss-burst\"".to_string()),
    ];
    let config = common::config_text(&lines, &args.set, &archives);
    let mut server = match common::start_server(&args.server, dir.path(), &config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("miss_burst: {e}");
            return ExitCode::from(2);
        }
    };
    let (pid, base) = (server.pid, server.base.clone());
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(args.connections)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a plain client builds");
    let start_rss = rss_mib(pid);
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..args.connections)
        .map(|_| {
            let (http, base, next, errors) =
                (http.clone(), base.clone(), next.clone(), errors.clone());
            let misses = args.misses;
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= misses {
                        break;
                    }
                    let url = format!("{base}/timemap/link/http://burst.example/{i}");
                    let ok = match http.get(url).send().await {
                        Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let mut peak = start_rss;
    let load = futures::future::join_all(workers);
    tokio::pin!(load);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = &mut load => break,
            _ = tick.tick() => {
                let rss = rss_mib(pid);
                peak = peak.max(rss);
                println!("load t={:>4.0}s done={:>6} rss={rss:.1} MiB", started.elapsed().as_secs_f64(), next.load(Ordering::Relaxed).min(args.misses));
            }
        }
    }
    let load_secs = started.elapsed().as_secs_f64();
    let end_rss = rss_mib(pid);
    peak = peak.max(end_rss);
    let idle = Instant::now();
    let mut after_rss = end_rss;
    while idle.elapsed() < args.after {
        tokio::time::sleep(Duration::from_secs(1)).await;
        after_rss = rss_mib(pid);
        println!(
            "idle t={:>4.0}s rss={after_rss:.1} MiB",
            idle.elapsed().as_secs_f64()
        );
    }
    let _ = server.child.kill().await;
    let bound = args.hot_capacity as f64 / 1_048_576.0 + 256.0;
    let errors = errors.load(Ordering::Relaxed);
    println!(
        "miss_burst: {} misses of {} mementos over {} connections in {load_secs:.1} s ({:.0}/s), {errors} errors",
        args.misses,
        args.mementos,
        args.connections,
        args.misses as f64 / load_secs
    );
    println!(
        "  RSS: start {start_rss:.1} MiB, peak {peak:.1} MiB, at the end of the load {end_rss:.1} MiB, after {:?} idle {after_rss:.1} MiB; bound {bound:.0} MiB",
        args.after
    );
    if peak <= bound && errors == 0 {
        println!("PASS");
        ExitCode::SUCCESS
    } else {
        println!("FAIL");
        ExitCode::from(1)
    }
}
