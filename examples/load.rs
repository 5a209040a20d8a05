//! The load benchmark (BENCHMARKS.md, "The 60 s load run"): the release `tmproxy serve` as a child process in front of three
//! simulated archives answering in 20–80 ms, driven by N persistent connections for a fixed time,
//! 90% hits on warmed URI-Rs and 10% misses on never-seen ones. Prints a summary and one JSON
//! line; exits 1 on any error or when the server's RSS grew over the second half of the run,
//! 2 when the run could not be made. `scripts/load.sh` builds and runs it with the defaults.
//!
//!   load [--server target/release/tmproxy] [--duration 60s] [--connections 200] [--hot 300]
//!        [--miss-ratio 0.1] [--hot-capacity 64MiB] [--policy conditional] [--seed 1]

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use tmproxy_testkit::load::{run, Options};

#[derive(Parser)]
// The last of a repeated option wins, so scripts/load.sh's defaults can be overridden after it.
#[command(
    about = "60 s / 200-connection load against tmproxy serve (hits and misses)",
    args_override_self = true
)]
struct Args {
    /// The tmproxy binary to start.
    #[arg(long, default_value = "target/release/tmproxy")]
    server: PathBuf,
    /// How long to drive the load ("60s", "5m").
    #[arg(long, default_value = "60s", value_parser = tmproxy::config::parse_duration)]
    duration: std::time::Duration,
    /// Persistent HTTP/1.1 connections.
    #[arg(long, default_value_t = 200)]
    connections: usize,
    /// Warmed URI-Rs (the hits).
    #[arg(long, default_value_t = 300)]
    hot: usize,
    /// Share of requests for never-seen URI-Rs (the misses).
    #[arg(long, default_value_t = 0.1)]
    miss_ratio: f64,
    /// The server's [cache] hot_capacity.
    #[arg(long, default_value = "64MiB", value_parser = tmproxy::config::parse_size)]
    hot_capacity: u64,
    /// The server's [cache] policy ("none": no cache, every request fans out).
    #[arg(long, default_value = "conditional")]
    policy: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let opts = Options {
        server_bin: args.server,
        duration: args.duration,
        connections: args.connections,
        hot_uris: args.hot,
        miss_ratio: args.miss_ratio,
        hot_capacity: args.hot_capacity,
        cache_policy: args.policy,
        seed: args.seed,
        ..Options::default()
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", load.trim());
    let report = match run(&opts).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("load: cannot run: {e}");
            return ExitCode::from(2);
        }
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average after: {}", load.trim());
    print!("{}", report.summary());
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        Err(e) => eprintln!("load: cannot write the JSON report: {e}"),
    }
    if report.passed() {
        println!("PASS: 0 errors, RSS flat");
        ExitCode::SUCCESS
    } else {
        println!(
            "FAIL: {} errors, RSS {}",
            report.errors,
            if report.rss.flat { "flat" } else { "not flat" }
        );
        ExitCode::from(1)
    }
}
