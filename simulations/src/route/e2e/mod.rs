//! `memsim route-e2e` (feature `e2e`): the misses `memsim route` replays, sent over HTTP to the
//! real server in-process (127.0.0.1:0, `[routing] mode = "learned"` at each setting, `[cache]
//! policy = "none"` so every request is one routed fan-out), against fake archives on one
//! loopback server (a path prefix per archive) that answer each URI-R from the stream's
//! holdings: an archive holding N mementos answers a link-format TimeMap of N mementos, one
//! holding nothing 404. Archive requests are counted at the fake archives, mementos in the
//! TimeMaps the server served (`X-Memento-Count`, and `X-Memento-Archives` per archive).
//!
//! Which requests miss is memsim's cache model (`Stream::misses`, the TTL cache), not the
//! server's: the server is sent the misses alone, one at a time, so its miss counter (the nonce
//! of each exploration draw) counts the same misses in the same order as the replay. The cache
//! itself is `memsim e2e`'s to check. Each setting runs on a fresh server (blank profiles); the
//! fake archives and what they hold are shared. `all` runs first: its mementos and URI-Rs found
//! are the references of recall, measured over HTTP too.
//!
//! A miss with a client is sent with `X-Forwarded-For: <its address>` to a server that trusts
//! loopback as its proxy (`[server] trusted_proxies`), so the server bounds what each client
//! teaches (`[routing] max_per_client`) by the same addresses the replay does.

mod archives;
mod row;

use super::sim::Limits;
use super::{Request, Stream};
use archives::{answer, Fake};
pub use row::{differences, E2eRow};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmproxy::app::{build_with_clock, serve_with, ClockChoice, ServeOptions};
use tmproxy::config::Config;
use tmproxy_core::routing::{Mode, Settings};

/// An archive made slow: it waits this long before every answer (it should hold nothing, for
/// the benchmark's "one slow archive that holds nothing").
#[derive(Debug, Clone)]
pub struct Slow {
    pub archive: String,
    pub delay: Duration,
    /// The first miss (from 0) it is slow for, and timed from: the misses before it warm the
    /// profiles, as a server that has run a while has.
    pub from: usize,
}

/// What one HTTP run counted, before the references of the `all` run are known.
#[derive(Debug, Default)]
struct Counted {
    requests_by_archive: Vec<u64>,
    mementos_by_archive: Vec<u64>,
    uris_found: u64,
    latencies_ms: Vec<f64>,
}

/// Runs `all` and then each of `settings` (those in mode `learned`) over HTTP.
pub fn run(
    stream: &Stream,
    misses: &[Request],
    settings: &[Settings],
    limits: Limits,
    slow: Option<&Slow>,
) -> Result<Vec<E2eRow>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(run_async(stream, misses, settings, limits, slow))
}

async fn run_async(
    stream: &Stream,
    misses: &[Request],
    settings: &[Settings],
    limits: Limits,
    slow: Option<&Slow>,
) -> Result<Vec<E2eRow>, String> {
    let (slow, timed_from) = match slow {
        Some(s) => {
            let i = stream.archives.iter().position(|a| a.id == s.archive);
            let i = i.ok_or_else(|| format!("--slow: no archive {:?} in the stream", s.archive))?;
            (Some((i, s.delay)), s.from)
        }
        None => (None, 0),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind the fake archives: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("fake archives: {e}"))?;
    let fake = Arc::new(Fake {
        base: format!("http://{addr}"),
        current: Mutex::new((String::new(), Vec::new())),
        requests: stream.archives.iter().map(|_| AtomicU64::new(0)).collect(),
        stray: AtomicU64::new(0),
        slow,
        slow_now: Default::default(),
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(fake.clone());
    let archives_task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let all = super::sim::all();
    let mut rows = Vec::new();
    let mut reference: Option<Counted> = None;
    let mut result = Ok(());
    let runs = std::iter::once(&all).chain(settings.iter().filter(|s| s.mode == Mode::Learned));
    for s in runs {
        match one_setting(&fake, stream, misses, s, limits, timed_from).await {
            Ok(counted) => {
                let reference = reference.get_or_insert_with(|| Counted {
                    requests_by_archive: counted.requests_by_archive.clone(),
                    mementos_by_archive: counted.mementos_by_archive.clone(),
                    uris_found: counted.uris_found,
                    latencies_ms: Vec::new(),
                });
                rows.push(row(s, limits, misses.len() as u64, counted, reference));
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    archives_task.abort();
    result.map(|()| rows)
}

fn row(s: &Settings, limits: Limits, misses: u64, mut c: Counted, reference: &Counted) -> E2eRow {
    let requests: u64 = c.requests_by_archive.iter().sum();
    let mementos: u64 = c.mementos_by_archive.iter().sum();
    let requests_all: u64 = reference.requests_by_archive.iter().sum();
    let mementos_all: u64 = reference.mementos_by_archive.iter().sum();
    c.latencies_ms.sort_by(f64::total_cmp);
    E2eRow {
        mode: super::sim::mode_name(s.mode),
        min_share: s.min_share,
        explore: s.explore,
        min_evidence: s.min_evidence,
        max_per_client: limits.max_per_client,
        misses,
        requests,
        requests_all,
        requests_per_miss: super::sim::per_miss(requests, misses),
        avoided: 1.0 - super::sim::ratio(requests, requests_all),
        memento_recall: super::sim::ratio(mementos, mementos_all),
        uri_recall: super::sim::ratio(c.uris_found, reference.uris_found),
        mementos,
        mementos_all,
        uris_found: c.uris_found,
        uris_found_all: reference.uris_found,
        median_miss_ms: c
            .latencies_ms
            .get(c.latencies_ms.len() / 2)
            .copied()
            .unwrap_or(0.0),
        requests_by_archive: c.requests_by_archive,
        mementos_by_archive: c.mementos_by_archive,
    }
}

/// One setting on a fresh server: every miss asked once, in order.
async fn one_setting(
    fake: &Arc<Fake>,
    stream: &Stream,
    misses: &[Request],
    s: &Settings,
    limits: Limits,
    timed_from: usize,
) -> Result<Counted, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let config = config_for(stream, &fake.base, s, limits, &dir.path().join("cache"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind the proxy: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("proxy: {e}"))?;
    let base = format!("http://{addr}");
    let (state, router) = build_with_clock(&config, Some(base.clone()), ClockChoice::System)
        .await
        .map_err(|e| format!("the server: {e}"))?;
    // The server's own accept loop, not axum's: it is what puts each request's client address
    // (from `X-Forwarded-For`, loopback being trusted) where the per-client bound reads it.
    let options = ServeOptions::from_config(&config, &state);
    let proxy_task = tokio::spawn(async move {
        let _ = serve_with(listener, router, std::future::pending(), options).await;
    });
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let result = ask_each(fake, stream, misses, &client, &base, timed_from).await;
    proxy_task.abort();
    result
}

async fn ask_each(
    fake: &Fake,
    stream: &Stream,
    misses: &[Request],
    client: &reqwest::Client,
    base: &str,
    timed_from: usize,
) -> Result<Counted, String> {
    let n = stream.archives.len();
    let mut c = Counted {
        requests_by_archive: vec![0; n],
        mementos_by_archive: vec![0; n],
        ..Counted::default()
    };
    let counts_now = || -> Vec<u64> {
        fake.requests
            .iter()
            .map(|r| r.load(Ordering::SeqCst))
            .collect()
    };
    for (i, m) in misses.iter().enumerate() {
        let uri_r = &stream.uris[m.uri as usize].uri_r;
        let mut held = vec![0u32; n];
        for &(a, k) in &stream.holdings[m.holdings as usize] {
            held[usize::from(a)] = k;
        }
        *fake.current.lock().unwrap_or_else(|e| e.into_inner()) = (uri_r.clone(), held);
        fake.slow_now.store(i >= timed_from, Ordering::SeqCst);
        let before = counts_now();
        let started = Instant::now();
        let served = ask(client, base, uri_r, m.client).await?;
        if i >= timed_from {
            c.latencies_ms
                .push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let after = counts_now();
        let stray = fake.stray.load(Ordering::SeqCst);
        if stray > 0 {
            return Err(format!(
                "miss {i} ({uri_r}): the fake archives got {stray} requests for another URI-R"
            ));
        }
        let mut found = false;
        for (a, archive) in stream.archives.iter().enumerate() {
            let asked = after[a] - before[a];
            let (skipped, listed) = served
                .iter()
                .find(|(id, _, _)| *id == archive.id)
                .map_or((false, 0), |(_, skipped, k)| (*skipped, *k));
            // The server's own account must match what the archives saw.
            if asked != u64::from(!skipped) {
                return Err(format!(
                    "miss {i} ({uri_r}): {} was asked {asked} times, but the server says {}",
                    archive.id,
                    if skipped { "skipped" } else { "asked" }
                ));
            }
            c.requests_by_archive[a] += asked;
            c.mementos_by_archive[a] += listed;
            found |= listed > 0;
        }
        c.uris_found += u64::from(found);
    }
    Ok(c)
}

/// The server's answer for one miss asked as from `from` (none: loopback itself): per archive
/// of `X-Memento-Archives`, (id, skipped, mementos), checked against `X-Memento-Count`.
async fn ask(
    client: &reqwest::Client,
    base: &str,
    uri_r: &str,
    from: Option<std::net::IpAddr>,
) -> Result<Vec<(String, bool, u64)>, String> {
    let url = format!("{base}/timemap/link/{uri_r}");
    let mut get = client.get(&url);
    if let Some(ip) = from {
        get = get.header("x-forwarded-for", ip.to_string());
    }
    let r = get.send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = r.status();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let archives = header("x-memento-archives").unwrap_or_default();
    let count = header("x-memento-count");
    let body = r.bytes().await.map_err(|e| format!("GET {url}: {e}"))?;
    let served = parse_archives(&archives).map_err(|e| format!("GET {url}: {e}"))?;
    let listed: u64 = served.iter().map(|a| a.2).sum();
    let total = match status.as_u16() {
        200 => count
            .and_then(|c| c.parse::<u64>().ok())
            .ok_or_else(|| format!("GET {url}: 200 without a numeric X-Memento-Count"))?,
        404 => 0,
        s => {
            return Err(format!(
                "GET {url}: {s}: {}",
                String::from_utf8_lossy(&body).trim()
            ))
        }
    };
    if listed != total {
        return Err(format!(
            "GET {url}: X-Memento-Archives lists {listed} mementos, the TimeMap has {total}"
        ));
    }
    Ok(served)
}

/// `id=status;n=N[;k=v…], …` → (id, skipped, N).
fn parse_archives(text: &str) -> Result<Vec<(String, bool, u64)>, String> {
    let mut out = Vec::new();
    for part in text.split(", ").filter(|p| !p.is_empty()) {
        let mut fields = part.split(';');
        let (id, status) = fields
            .next()
            .and_then(|f| f.split_once('='))
            .ok_or_else(|| format!("X-Memento-Archives: {part:?}"))?;
        let n = fields
            .find_map(|f| f.strip_prefix("n="))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("X-Memento-Archives: {part:?} has no n="))?;
        out.push((id.to_string(), status == "skipped", n));
    }
    Ok(out)
}

/// The server's config: the stream's archives in its order (`always` kept), routing at `s`,
/// no cache (each request one fan-out), no dormancy, deadlines above any slow archive's delay,
/// loopback trusted as a proxy so `X-Forwarded-For` names each miss's client. A miss without a
/// client comes from loopback itself, as the replay's does not (it bounds nothing there):
/// without clients in the stream, the per-client bound is set to its highest, past any key's
/// count here, so the server learns every lesson memsim does.
fn config_for(
    stream: &Stream,
    base: &str,
    s: &Settings,
    limits: Limits,
    cache_path: &std::path::Path,
) -> Result<Config, String> {
    let max_keys = limits.max_keys;
    let with_client = stream
        .requests
        .iter()
        .filter(|r| r.client.is_some())
        .count();
    let max_per_client = match with_client {
        0 => tmproxy_core::routing::Tally::AGE_AT,
        n if n == stream.requests.len() => limits.max_per_client,
        _ => {
            return Err(
                "some requests name a client and some do not: over HTTP every request has one"
                    .to_string(),
            )
        }
    };
    let mode = super::sim::mode_name(s.mode);
    let mut toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n\
         [upstream]\nfailures_before_dormant = 0\ntimeout = \"60s\"\ndeadline = \"90s\"\n\
         [cache]\npolicy = \"none\"\npath = {path:?}\n\
         [routing]\nmode = \"{mode}\"\nmax_keys = {max_keys}\nmin_evidence = {}\n\
         min_share = {:?}\nexplore = {:?}\nmax_per_client = {max_per_client}\n",
        s.min_evidence,
        s.min_share,
        s.explore,
        path = cache_path.display().to_string(),
    );
    for (i, a) in stream.archives.iter().enumerate() {
        toml.push_str(&format!(
            "[[archives]]\nid = {id:?}\nname = {id:?}\ntimemap = \"{base}/a{i}/timemap/\"\n\
             timegate = \"{base}/a{i}/timegate/\"\nalways = {}\n",
            a.always,
            id = a.id,
        ));
    }
    let config =
        Config::from_toml_str(&toml, "memsim route-e2e").map_err(|e| format!("config: {e}"))?;
    config.validate().map_err(|e| format!("config: {e}"))?;
    Ok(config)
}
