//! End-to-end benchmark drivers (run in release; results go to BENCHMARKS.md):
//!   archive --captures N [--port P]     a simulated archive serving an N-memento TimeMap
//!   fanout [--archives 10] [--delay-ms 50] [--requests 300] [--policy conditional|none]
//!                                      the proxy in front of slow archives; latency percentiles
//!                                      (distinct URI-Rs, so every request is a miss)
//!   memory --mementos M --entries E    resident memory per cached entry (hot tier, with all three
//!                                      formats rendered), against the weigher's estimate

use std::time::{Duration, Instant};

// The same allocator as the tmproxy binary, wrapped to count live heap bytes, so memory figures
// separate what entries keep alive from what the allocator merely retains.
#[global_allocator]
static GLOBAL: Counting = Counting;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct Counting;

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded unchanged to mimalloc, which upholds GlobalAlloc's contract.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, std::sync::atomic::Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as for dealloc; mimalloc reallocates within the contract.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

fn live_bytes() -> usize {
    LIVE.load(std::sync::atomic::Ordering::Relaxed)
}
use tmproxy::cache::policy::PolicyKind;
use tmproxy::config::{ArchiveConfig, Config};
use tmproxy_testkit::archive::{timemap_body, Behaviour, SimulatedArchive, TimeMapSpec};

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
        Some("memory") => memory(&args).await,
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
    let policy = match args
        .iter()
        .position(|a| a == "--policy")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(PolicyKind::Conditional), |p| p.parse::<PolicyKind>())
    {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("--policy: {e}");
            std::process::exit(2);
        }
    };
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
                timemap: Some(a.timemap_prefix().parse().expect("an http URL")),
                timegate: a.timegate_prefix().parse().expect("an http URL"),
                timeout: None,
                enabled: true,
                redirect_hosts: Vec::new(),
                ..ArchiveConfig::timemap_default()
            })
            .collect(),
        cache: tmproxy::config::CacheConfig {
            policy,
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

/// Resident set size of this process, from /proc (Linux).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

async fn memory(args: &[String]) {
    use tmproxy::cache::policy::Policy;
    use tmproxy::cache::service::CachedTimeMap;
    use tmproxy::cache::store::{Cacheable, HotTier, Store};
    use tmproxy::http::view::View;
    use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, Fetch};
    use tmproxy::timemap::serialize::TimeMapFormat;
    let m = arg(args, "--mementos", 100);
    let entries = arg(args, "--entries", 1000);
    let caps = captures(m);
    let caps: Vec<&str> = caps.iter().map(String::as_str).collect();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], 9).into();
    let policy = Policy::default();
    let hot: HotTier<CachedTimeMap<View>> = HotTier::new(u64::MAX / 2);
    let before = rss_bytes();
    let live_before = live_bytes();
    let mut weighed = 0usize;
    for i in 0..entries {
        // Each entry a different URI-R, as an archive would list it: parsed from link format.
        let uri_r = format!("http://example.com/page/{i}");
        let body = timemap_body(addr, &TimeMapSpec::of(&caps), &uri_r, 1);
        let parsed = tmproxy::timemap::parse::parse_link_format(&body, "http://127.0.0.1:9/");
        let now = chrono::Utc::now();
        let answer = ArchiveAnswer {
            elapsed_ms: 40,
            pages: 1,
            ..ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None)
        };
        let fetch = Fetch {
            uri_r: uri_r.clone(),
            at: now,
            archives: vec![Contribution::listed("ia", answer, now, parsed.mementos)],
        };
        let decision = policy.decide_first(fetch, now);
        let Some(entry) = decision.into_entry() else {
            continue;
        };
        let cached = std::sync::Arc::new(CachedTimeMap::<View>::new(entry));
        let view = cached.view(&tmproxy::http::view::ViewContext {
            public_url: "http://127.0.0.1:7089".to_string(),
            page_size: tmproxy::config::Config::default().server.page_size,
            credits: Default::default(),
        });
        for f in TimeMapFormat::all() {
            let _ = view.rendered(f);
        }
        let _ = view.content_headers();
        weighed += cached.approx_bytes();
        let _ = hot.put(&uri_r, cached).await;
    }
    hot.run_pending_tasks().await;
    let after = rss_bytes();
    let live = live_bytes().saturating_sub(live_before);
    println!(
        "memory: {entries} entries of {m} mementos, all formats rendered: live heap {:.1} KiB per entry, RSS +{:.1} MiB = {:.1} KiB per entry; weigher {:.1} KiB per entry",
        live as f64 / entries as f64 / 1024.0,
        (after.saturating_sub(before)) as f64 / 1048576.0,
        (after.saturating_sub(before)) as f64 / entries as f64 / 1024.0,
        weighed as f64 / entries as f64 / 1024.0
    );
}
