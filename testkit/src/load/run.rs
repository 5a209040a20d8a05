//! A load run itself: the simulated archives and the server started, the cache warmed, the
//! connections driven for the duration, and what they saw gathered into a [`Report`].

use super::client::plain_client;
use super::memory::{rss_kib, rss_report, sample_rss};
use super::options::Options;
use super::report::{Latency, Report};
use super::server::{admin_stats, Server};
use crate::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Starts the archives and the server, warms the cache, drives the load, stops everything it
/// started (the server by its PID) and reports. An `Err` means the run could not be made (no
/// binary, the server did not start, the warm-up failed), not that it measured errors.
pub async fn run(opts: &Options) -> Result<Report, String> {
    if opts.connections == 0 || opts.duration.is_zero() || opts.hot_uris == 0 {
        return Err("connections, duration and hot URI-Rs must be above zero".into());
    }
    if !(0.0..=1.0).contains(&opts.miss_ratio) {
        return Err(format!("miss ratio {} is not in 0..=1", opts.miss_ratio));
    }
    let mut archives = Vec::with_capacity(opts.archives.len());
    for (i, a) in opts.archives.iter().enumerate() {
        let timestamps = captures(a.captures, i);
        let timestamps: Vec<&str> = timestamps.iter().map(String::as_str).collect();
        let spec = TimeMapSpec {
            delay: a.delay,
            ..TimeMapSpec::of(&timestamps)
        };
        let archive = SimulatedArchive::start(Behaviour::TimeMap(spec))
            .await
            .map_err(|e| format!("cannot start a simulated archive: {e}"))?;
        archives.push(archive);
    }
    let server = Server::start(opts, &archives).await?;
    let driven = drive(opts, &server).await;
    let stopped = server.stop().await;
    drop(archives);
    let mut report = driven?;
    stopped?;
    report.hot_capacity_mib = mib(opts.hot_capacity);
    report.sled_cache_capacity_mib = mib(tmproxy::cache::store::SLED_CACHE_BYTES);
    Ok(report)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// `n` distinct capture timestamps for archive `k`, about a month apart from 1999, offset per
/// archive so the archives' lists interleave.
fn captures(n: usize, k: usize) -> Vec<String> {
    let start = chrono::DateTime::from_timestamp(915_148_800, 0).unwrap_or_default();
    (0..n)
        .map(|i| {
            let at = start
                + chrono::Duration::days((i * 31 + k * 7) as i64)
                + chrono::Duration::seconds((k * 3_600 + i * 61) as i64);
            at.format("%Y%m%d%H%M%S").to_string()
        })
        .collect()
}

/// The endpoints mixed in the load, and the status each must answer.
#[derive(Clone, Copy)]
enum Endpoint {
    Link,
    Json,
    TimeGate,
}

impl Endpoint {
    fn path(self) -> &'static str {
        match self {
            Endpoint::Link => "/timemap/link/",
            Endpoint::Json => "/timemap/json/",
            Endpoint::TimeGate => "/timegate/",
        }
    }

    fn expected(self) -> u16 {
        match self {
            Endpoint::TimeGate => 302,
            _ => 200,
        }
    }

    /// 40% link format, 30% JSON, 30% TimeGate.
    fn pick(r: f64) -> Endpoint {
        if r < 0.4 {
            Endpoint::Link
        } else if r < 0.7 {
            Endpoint::Json
        } else {
            Endpoint::TimeGate
        }
    }
}

/// splitmix64: a few lines, seeded per connection, no dependency for a load generator.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What one connection saw.
#[derive(Default)]
struct Tally {
    hit_micros: Vec<u32>,
    miss_micros: Vec<u32>,
    errors: u64,
    error_samples: Vec<String>,
    statuses: BTreeMap<u16, u64>,
    x_cache: BTreeMap<(&'static str, &'static str), u64>,
}

const ERROR_SAMPLES: usize = 10;

impl Tally {
    fn error(&mut self, message: String) {
        self.errors += 1;
        if self.error_samples.len() < ERROR_SAMPLES {
            self.error_samples.push(message);
        }
    }

    fn absorb(&mut self, other: Tally) {
        self.hit_micros.extend(other.hit_micros);
        self.miss_micros.extend(other.miss_micros);
        self.errors += other.errors;
        for e in other.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES {
                self.error_samples.push(e);
            }
        }
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        for (k, v) in other.x_cache {
            *self.x_cache.entry(k).or_default() += v;
        }
    }
}

fn hot_uri(i: usize) -> String {
    format!("http://load.example.org/hot/{i}")
}

/// Warms the cache, then runs the connections and the RSS sampler for the duration.
async fn drive(opts: &Options, server: &Server) -> Result<Report, String> {
    warm(opts, server).await?;
    let hot: Arc<Vec<String>> = Arc::new((0..opts.hot_uris).map(hot_uri).collect());
    let base: Arc<str> = Arc::from(server.base.as_str());
    let started = Instant::now();
    let end = started + opts.duration;
    let sampler = tokio::spawn(sample_rss(server.pid, started, end));
    let mut workers = Vec::with_capacity(opts.connections);
    for id in 0..opts.connections {
        let client = plain_client(1)?;
        let (hot, base) = (hot.clone(), base.clone());
        let (miss_ratio, seed) = (opts.miss_ratio, opts.seed);
        workers.push(tokio::spawn(async move {
            connection(id, client, base, hot, miss_ratio, seed, end).await
        }));
    }
    let mut tally = Tally::default();
    for w in workers {
        match w.await {
            Ok(t) => tally.absorb(t),
            Err(e) => tally.error(format!("a connection task failed: {e}")),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut samples = sampler.await.unwrap_or_default();
    if let Some(kib) = rss_kib(server.pid) {
        samples.push((started.elapsed().as_secs_f64(), kib));
    }
    let server_stats = admin_stats(server).await;

    let misses_second_half = tally.miss_micros.len() as f64 / 2.0;
    let rss = rss_report(&samples, opts.duration.as_secs_f64(), misses_second_half);
    let requests = (tally.hit_micros.len() + tally.miss_micros.len()) as u64;
    let mut all = Vec::with_capacity(requests as usize);
    all.extend_from_slice(&tally.hit_micros);
    all.extend_from_slice(&tally.miss_micros);
    Ok(Report {
        duration_s: elapsed,
        connections: opts.connections,
        hot_uris: opts.hot_uris,
        miss_ratio: opts.miss_ratio,
        requests,
        throughput_rps: requests as f64 / elapsed.max(f64::EPSILON),
        errors: tally.errors,
        error_samples: tally.error_samples,
        statuses: tally.statuses,
        x_cache: tally
            .x_cache
            .into_iter()
            .map(|((class, xc), n)| (format!("{class}/{xc}"), n))
            .collect(),
        hits: Latency::of(tally.hit_micros),
        misses: Latency::of(tally.miss_micros),
        overall: Latency::of(all),
        rss,
        server_stats,
        ..Report::default()
    })
}

/// Asks for every hot URI-R's TimeMap once (32 at a time), so the load's hits are hits.
async fn warm(opts: &Options, server: &Server) -> Result<(), String> {
    use futures::stream::{self, StreamExt};
    let client = plain_client(32)?;
    let failures: Vec<String> = stream::iter(0..opts.hot_uris)
        .map(|i| {
            let url = format!("{}/timemap/link/{}", server.base, hot_uri(i));
            let client = client.clone();
            async move {
                match client.get(&url).send().await {
                    Ok(r) if r.status() == 200 => r.bytes().await.err().map(|e| e.to_string()),
                    Ok(r) => Some(format!("{url}: status {}", r.status())),
                    Err(e) => Some(format!("{url}: {e}")),
                }
            }
        })
        .buffer_unordered(32)
        .filter_map(|f| async move { f })
        .collect()
        .await;
    match failures.first() {
        None => Ok(()),
        Some(first) => Err(format!(
            "warming {} URI-Rs: {} failed, first: {first}",
            opts.hot_uris,
            failures.len()
        )),
    }
}

/// One connection: requests one after another until `end`, each a hit with probability
/// 1 - `miss_ratio` (a warmed URI-R) or a miss (a URI-R nobody asked before).
async fn connection(
    id: usize,
    client: reqwest::Client,
    base: Arc<str>,
    hot: Arc<Vec<String>>,
    miss_ratio: f64,
    seed: u64,
    end: Instant,
) -> Tally {
    let mut rng = Rng(seed ^ (id as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut tally = Tally::default();
    let mut n = 0u64;
    while Instant::now() < end {
        let miss = rng.unit() < miss_ratio;
        let endpoint = Endpoint::pick(rng.unit());
        let url = if miss {
            n += 1;
            format!(
                "{base}{}http://load.example.org/miss/{seed}/{id}/{n}",
                endpoint.path()
            )
        } else {
            let i = (rng.next_u64() % hot.len() as u64) as usize;
            format!("{base}{}{}", endpoint.path(), hot[i])
        };
        let t = Instant::now();
        let answer = match client.get(&url).send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let x_cache = match resp.headers().get("x-cache").map(|v| v.as_bytes()) {
                    Some(b"HIT") => "HIT",
                    Some(b"MISS") => "MISS",
                    Some(b"REFRESH") => "REFRESH",
                    Some(b"STALE") => "STALE",
                    Some(_) => "other",
                    None => "none",
                };
                resp.bytes()
                    .await
                    .map(|_| (status, x_cache))
                    .map_err(|e| format!("{url}: reading the body: {e}"))
            }
            Err(e) => Err(format!("{url}: {e}")),
        };
        let micros = u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX);
        if miss {
            tally.miss_micros.push(micros);
        } else {
            tally.hit_micros.push(micros);
        }
        match answer {
            Ok((status, x_cache)) => {
                *tally.statuses.entry(status).or_default() += 1;
                let class = if miss { "miss" } else { "hit" };
                *tally.x_cache.entry((class, x_cache)).or_default() += 1;
                if status != endpoint.expected() {
                    tally.error(format!(
                        "{url}: status {status}, expected {}",
                        endpoint.expected()
                    ));
                }
            }
            Err(e) => tally.error(e),
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let l = Latency::of((1..=100u32).map(|ms| ms * 1000).collect());
        assert_eq!(l.count, 100);
        assert_eq!(l.p50_ms, 50.0);
        assert_eq!(l.p90_ms, 90.0);
        assert_eq!(l.p99_ms, 99.0);
        assert_eq!(l.max_ms, 100.0);
        assert_eq!(Latency::of(Vec::new()).count, 0);
    }

    #[test]
    fn rss_is_flat_within_the_tolerance_over_the_second_half() {
        let mib = |m: u64| m * 1024;
        // Growth in the first half (the hot tier filling) does not count.
        let filling: Vec<(f64, u64)> = (0..=10)
            .map(|s| (s as f64, mib(if s < 5 { 50 + 10 * s } else { 100 })))
            .collect();
        let r = rss_report(&filling, 10.0, 1000.0);
        assert!(r.flat, "{r:?}");
        assert_eq!(r.at_half_mib, 100.0);
        assert_eq!(r.growth_mib, 0.0);
        // Steady growth in the second half does.
        let leaking: Vec<(f64, u64)> = (0..=10).map(|s| (s as f64, mib(100 + 3 * s))).collect();
        let r = rss_report(&leaking, 10.0, 1000.0);
        assert!(!r.flat, "{r:?}");
        assert!((r.growth_mib - 15.0).abs() < 1e-9, "{r:?}");
        // One spike that is given back is not growth; its height is still reported.
        let spike: Vec<(f64, u64)> = (0..=10)
            .map(|s| (s as f64, mib(if s == 6 { 140 } else { 100 })))
            .collect();
        let r = rss_report(&spike, 10.0, 1000.0);
        assert!(r.flat, "{r:?}");
        assert_eq!(r.max_second_half_mib, 140.0);
        // No samples: not shown flat.
        assert!(!rss_report(&[], 10.0, 0.0).flat);
    }

    #[test]
    fn the_endpoint_mix_and_captures_are_as_documented() {
        assert_eq!(Endpoint::pick(0.0).expected(), 200);
        assert_eq!(Endpoint::pick(0.99).expected(), 302);
        let c = captures(60, 0);
        let mut sorted = c.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 60);
        assert!(c.iter().all(|t| t.len() == 14));
    }
}
