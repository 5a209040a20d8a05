//! End-to-end benchmark drivers (run in release; results go to BENCHMARKS.md):
//!   archive --captures N [--port P]     a simulated archive serving an N-memento TimeMap
//!   fanout [--archives 10] [--delay-ms 50] [--requests 300] [--policy conditional|none]
//!                                      the proxy in front of slow archives; latency percentiles
//!                                      (distinct URI-Rs, so every request is a miss)

use std::time::{Duration, Instant};
use tmproxy::config::{ArchiveConfig, Config};
use tmproxy::demo::archive::{timemap_body, Behaviour, SimulatedArchive, TimeMapSpec};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// N distinct capture timestamps, one a minute from 2000-01-01.
fn captures(n: u64) -> Vec<String> {
    let start = chrono::DateTime::from_timestamp(946_684_800, 0).unwrap_or_default();
    (0..n)
        .map(|i| {
            (start + chrono::Duration::minutes(i as i64))
                .format("%Y%m%d%H%M%S")
                .to_string()
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("archive") => archive(&args).await,
        Some("fanout") => fanout(&args).await,
        _ => eprintln!("usage: e2e_bench archive --captures N [--port P] | fanout [--archives N] [--delay-ms D] [--requests R]"),
    }
}

async fn archive(args: &[String]) {
    let n = arg(args, "--captures", 1_000_000);
    let port = arg(args, "--port", 0) as u16;
    // Render once, serve the same bytes: the benchmark measures the proxy, not this generator.
    let spec = TimeMapSpec {
        captures: captures(n),
        newest_first: true,
        ..TimeMapSpec::default()
    };
    let listener_addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let body = timemap_body(listener_addr, &spec, "http://example.com/", 1);
    let a = SimulatedArchive::start_on(listener_addr, Behaviour::Body(body.clone()))
        .await
        .expect("bind");
    println!(
        "archive: {} mementos, {} bytes, newest first, at {}",
        n,
        body.len(),
        a.timemap_prefix()
    );
    tokio::signal::ctrl_c().await.ok();
}

async fn fanout(args: &[String]) {
    let n = arg(args, "--archives", 10);
    let delay = Duration::from_millis(arg(args, "--delay-ms", 50));
    let requests = arg(args, "--requests", 300);
    let policy = args
        .iter()
        .position(|a| a == "--policy")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "conditional".to_string());
    // The cache (for a miss: one durable sled write) lives in a temp dir, removed at the end.
    let cache_dir = std::env::temp_dir().join(format!("tmproxy-bench-{}", std::process::id()));
    let mut archives = Vec::new();
    for i in 0..n {
        let spec = TimeMapSpec {
            delay,
            ..TimeMapSpec::of(&[&format!("20{:02}0101000000", i % 100), "20200101000000"])
        };
        archives.push(
            SimulatedArchive::start(Behaviour::TimeMap(spec))
                .await
                .expect("archive"),
        );
    }
    let config = Config {
        archives: archives
            .iter()
            .enumerate()
            .map(|(i, a)| ArchiveConfig {
                id: format!("a{i}"),
                name: format!("archive {i}"),
                timemap: a.timemap_prefix(),
                timegate: a.timegate_prefix(),
                timeout: None,
                enabled: true,
            })
            .collect(),
        cache: tmproxy::config::CacheConfig {
            policy: policy.clone(),
            path: cache_dir.display().to_string(),
            ..Default::default()
        },
        ..Config::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (_state, router) = tmproxy::app::build(&config, Some(base.clone()))
        .await
        .expect("app");
    tokio::spawn(tmproxy::app::serve(
        listener,
        router,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let mut times = Vec::with_capacity(requests as usize);
    for i in 0..requests {
        let url = format!("{base}/timemap/link/http://example.com/{i}");
        let t = Instant::now();
        let resp = client.get(&url).send().await.expect("request");
        assert_eq!(resp.status(), 200);
        let _ = resp.bytes().await.expect("body");
        times.push(t.elapsed());
    }
    times.sort();
    let pct =
        |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
    let _ = std::fs::remove_dir_all(&cache_dir);
    println!(
        "fanout (policy {policy}): {n} archives x {} ms delay, {requests} sequential requests: median {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        delay.as_millis(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
}
