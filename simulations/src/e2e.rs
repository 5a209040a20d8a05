//! `memsim e2e`: the same series through the real server. tmproxy runs in-process on 127.0.0.1:0
//! with a simulated clock, a real sled cache in a temp dir and fake archives (one loopback HTTP
//! server, one path prefix per archive) that serve the series day by day; every URI-R is asked
//! for once per simulated day over HTTP. MemDays come from the TimeMaps the server served, Q from
//! how often the archives were asked. Equal to `replay` for the same series and policy, this
//! proves the server applies the policy the harness measures.
//!
//! What the archives answer, so that the server's fan-out is the fetch `replay` models
//! (`replay::outcome`): an archive listed on the day answers 200 with its mementos; an archive
//! not listed on a day that lists others answers 503 (not observed: what it held still stands,
//! as replay's "not asked"); and one more archive, `notfound`, holds nothing and answers 404 to
//! every request: on an empty day it is the aggregate's 404 (replay's pseudo-archive), and since
//! every fan-out asks it exactly once, its request count is Q. Dormancy is off (failures would
//! otherwise stop the server asking), and TTL ∞ is 100 years (the server's TTL is a duration).
//!
//! `worse_replacements` is read from the server's own record of its decisions (the admin API's
//! entry history): a fetch day whose decision was `replaced` while the archives listed fewer
//! mementos than the entry held the day before.

use crate::replay::{day0, live_steps, Measures};
use crate::series::LiveDay;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Duration;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use tmproxy::app::{build_with_clock, ClockChoice};
use tmproxy::cache::policy::{Adaptive, Match, PolicyKind};
use tmproxy::clock::SimClock;
use tmproxy::config::Config;
use tmproxy::timemap::datetime::format_rfc1123;

/// The archive that holds nothing and stands for the aggregate's 404 (and counts Q).
pub const NOT_FOUND_ARCHIVE: &str = "notfound";
const ADMIN_TOKEN: &str = "memsim-e2e";
/// URI-Rs asked at once within a simulated day (each URI-R's days stay in order).
const IN_FLIGHT: usize = 8;

/// What the run measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct E2eReport {
    pub measures: Measures,
    pub uri_rs: u64,
    /// Requests to the server's `/timemap/json/`.
    pub requests: u64,
    /// Requests the fake archives received, all archives together.
    pub archive_requests: u64,
}

/// The fake archives' shared state: the series by URI-R, the current day, the request counts.
struct Fake {
    day: AtomicU32,
    series: HashMap<String, Vec<LiveDay>>,
    counts: HashMap<String, AtomicU64>,
}

/// Runs the series (whole URI-Rs, each with days 0..d) through the server under one policy.
/// `observe_log`: the server's `[observe] log`, to replay its observations afterwards.
pub fn run(
    uri_rs: Vec<Vec<LiveDay>>,
    kind: PolicyKind,
    ttl_days: Option<i64>,
    observe_log: Option<&std::path::Path>,
) -> Result<E2eReport, String> {
    run_with(uri_rs, kind, ttl_days, None, observe_log)
}

/// [`run`] with the server's `[cache] ttl_mode = "adaptive"` at `adaptive`'s bounds and budget
/// (`ttl_days` then unused), or fixed when None.
pub fn run_with(
    uri_rs: Vec<Vec<LiveDay>>,
    kind: PolicyKind,
    ttl_days: Option<i64>,
    adaptive: Option<Adaptive>,
    observe_log: Option<&std::path::Path>,
) -> Result<E2eReport, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(run_async(uri_rs, kind, ttl_days, adaptive, observe_log))
}

async fn run_async(
    uri_rs: Vec<Vec<LiveDay>>,
    kind: PolicyKind,
    ttl_days: Option<i64>,
    adaptive: Option<Adaptive>,
    observe_log: Option<&std::path::Path>,
) -> Result<E2eReport, String> {
    let days = uri_rs.iter().map(Vec::len).max().unwrap_or(0);
    let mut archives: Vec<String> = uri_rs
        .iter()
        .flatten()
        .flat_map(|d| d.mementos.iter().map(|m| m.archive.clone()))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    archives.sort();
    archives.push(NOT_FOUND_ARCHIVE.to_string());
    let names: Vec<String> = uri_rs
        .iter()
        .filter_map(|g| g.first().map(|d| d.uri_r.clone()))
        .collect();
    let fake = Arc::new(Fake {
        day: AtomicU32::new(0),
        counts: archives
            .iter()
            .map(|a| (a.clone(), AtomicU64::new(0)))
            .collect(),
        series: uri_rs
            .into_iter()
            .filter_map(|g| Some((g.first()?.uri_r.clone(), g)))
            .collect(),
    });

    // The fake archives.
    let archive_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind the fake archives: {e}"))?;
    let archive_addr = archive_listener
        .local_addr()
        .map_err(|e| format!("fake archives: {e}"))?;
    let archive_app = axum::Router::new()
        .fallback(answer)
        .with_state(fake.clone());
    let archive_task = tokio::spawn(async move {
        let _ = axum::serve(archive_listener, archive_app).await;
    });

    // The proxy.
    let cache_dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let config = config_for(
        &archives,
        &format!("http://{archive_addr}"),
        kind,
        ttl_days,
        adaptive,
        &cache_dir.path().join("cache"),
        observe_log,
    )?;
    let clock = Arc::new(SimClock::new(day0()));
    let proxy_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind the proxy: {e}"))?;
    let proxy_addr = proxy_listener
        .local_addr()
        .map_err(|e| format!("proxy: {e}"))?;
    let base = format!("http://{proxy_addr}");
    let (_state, router) = build_with_clock(
        &config,
        Some(base.clone()),
        ClockChoice::Simulated(clock.clone()),
    )
    .await?;
    let proxy_task = tokio::spawn(async move {
        let _ = tmproxy::app::serve(proxy_listener, router, std::future::pending()).await;
    });

    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let result = drive(&fake, &names, days, &clock, &client, &base).await;
    proxy_task.abort();
    archive_task.abort();
    let (measures, requests) = result?;
    let archive_requests = fake
        .counts
        .values()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    Ok(E2eReport {
        measures: Measures {
            q: fake
                .counts
                .get(NOT_FOUND_ARCHIVE)
                .map_or(0, |c| c.load(Ordering::Relaxed)),
            ..measures
        },
        uri_rs: names.len() as u64,
        requests,
        archive_requests,
    })
}

/// The server's config: our archives only, the policy under test, nothing that would make the
/// server ask the archives other than once per fetch, and every archive asked on every fetch
/// (`[routing] mode = "all"`: `replay` models the cache policy alone, and a routing skip of the
/// `notfound` archive would change the requests it counts as Q).
fn config_for(
    archives: &[String],
    base: &str,
    kind: PolicyKind,
    ttl_days: Option<i64>,
    adaptive: Option<Adaptive>,
    cache_path: &std::path::Path,
    observe_log: Option<&std::path::Path>,
) -> Result<Config, String> {
    let ttl = ttl_days.map_or(36_500, |n| n.max(0));
    // The rule's bounds to the second, as the server's durations hold them.
    let mode = adaptive.map_or(String::new(), |a| {
        format!(
            "ttl_mode = \"adaptive\"\nttl_min = \"{}s\"\nttl_max = \"{}s\"\nttl_budget = {:?}\n",
            a.min.num_seconds(),
            a.max.num_seconds(),
            a.budget
        )
    });
    let mut toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         [upstream]\nfailures_before_dormant = 0\ntimeout = \"60s\"\ndeadline = \"120s\"\n\
         [cache]\npolicy = \"{kind}\"\nmatch = \"loose\"\nttl = \"{ttl}d\"\npath = {path:?}\n\
         stale_while_revalidate = \"0s\"\n{mode}\
         [routing]\nmode = \"all\"\n\
         [admin]\ntoken = \"{ADMIN_TOKEN}\"\n\
         [observe]\nlog = {log:?}\n",
        path = cache_path.display().to_string(),
        log = observe_log.map_or(String::new(), |p| p.display().to_string()),
    );
    for a in archives {
        toml.push_str(&format!(
            "[[archives]]\nid = \"{a}\"\nname = \"{a}\"\ntimemap = \"{base}/{a}/timemap/\"\n\
             timegate = \"{base}/{a}/timegate/\"\n"
        ));
    }
    let config =
        Config::from_toml_str(&toml, "memsim e2e").map_err(|e| format!("e2e config: {e}"))?;
    config.validate().map_err(|e| format!("e2e config: {e}"))?;
    Ok(config)
}

/// One simulated day after another: set both clocks, ask for every URI-R, tally.
async fn drive(
    fake: &Fake,
    names: &[String],
    days: usize,
    clock: &SimClock,
    client: &reqwest::Client,
    base: &str,
) -> Result<(Measures, u64), String> {
    use futures::stream::{self, StreamExt};
    // The references (best so far, union, m(L)) are the series' own, computed as replay does.
    let steps: HashMap<&str, Vec<crate::replay::LiveStep>> = fake
        .series
        .iter()
        .map(|(u, g)| (u.as_str(), live_steps(g, Match::Loose)))
        .collect();
    // The entry's count the day before, per URI-R (for worse replacements).
    let mut held: HashMap<&str, usize> = HashMap::new();
    let mut m = Measures::default();
    let mut requests = 0;
    for t in 0..days {
        fake.day.store(t as u32, Ordering::SeqCst);
        let now = day0() + Duration::days(t as i64);
        clock.set(now);
        let asked: Vec<&String> = names
            .iter()
            .filter(|u| fake.series.get(*u).is_some_and(|g| t < g.len()))
            .collect();
        let answers: Vec<Result<(String, Served), String>> = stream::iter(asked)
            .map(|u| async move {
                let served = ask(client, base, u, now).await?;
                Ok((u.clone(), served))
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        for a in answers {
            let (uri_r, served) = a?;
            requests += 1;
            let Some(live) = steps.get(uri_r.as_str()).and_then(|s| s.get(t)) else {
                continue;
            };
            let before = held.get(uri_r.as_str()).copied().unwrap_or(0);
            if served.replaced_today && live.m_live < before {
                m.worse_replacements += 1;
            }
            if let Some((k, _)) = fake.series.get_key_value(&uri_r) {
                held.insert(k.as_str(), served.entry_count);
            }
            m.memdays += live.best.saturating_sub(served.count) as u64;
            m.memdays_live += live.m_live.saturating_sub(served.count) as u64;
            m.memdays_union += live.union_len.saturating_sub(served.count) as u64;
            if live.best > served.count {
                m.missed_days += 1;
                if served.count == 0 {
                    m.false_zero_days += 1;
                }
            }
        }
    }
    Ok((m, requests))
}

/// What the server served for a URI-R on a day, and what its entry says.
struct Served {
    /// Distinct loose keys of the served TimeMap (0 for a 404).
    count: usize,
    /// The entry's loose count after the request (0 without an entry).
    entry_count: usize,
    /// The entry's last decision was today's and it was `replaced`.
    replaced_today: bool,
}

async fn ask(
    client: &reqwest::Client,
    base: &str,
    uri_r: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Served, String> {
    let url = format!("{base}/timemap/json/{uri_r}");
    let r = client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = r.status();
    let body = r.bytes().await.map_err(|e| format!("GET {url}: {e}"))?;
    let count = match status.as_u16() {
        200 => {
            let v: serde_json::Value =
                serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))?;
            let list = v["mementos"]["list"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            list.iter()
                .map(|m| {
                    (
                        m["archive"].as_str().unwrap_or("").to_string(),
                        m["datetime"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect::<HashSet<_>>()
                .len()
        }
        404 => 0,
        s => {
            return Err(format!(
                "GET {url}: {s}: {}",
                String::from_utf8_lossy(&body).trim()
            ))
        }
    };
    let admin = format!("{base}/admin/cache/{uri_r}");
    let r = client
        .get(&admin)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .map_err(|e| format!("GET {admin}: {e}"))?;
    let (entry_count, replaced_today) = if r.status() == StatusCode::OK {
        let bytes = r.bytes().await.map_err(|e| format!("GET {admin}: {e}"))?;
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("GET {admin}: not JSON: {e}"))?;
        let last = v["history"].as_array().and_then(|h| h.last()).cloned();
        let replaced = last.is_some_and(|h| {
            h["action"] == "replaced"
                && h["at"]
                    .as_str()
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                    .is_some_and(|at| at.with_timezone(&chrono::Utc) == now)
        });
        (v["mementos"].as_u64().unwrap_or(0) as usize, replaced)
    } else {
        (0, false)
    };
    Ok(Served {
        count,
        entry_count,
        replaced_today,
    })
}

/// A fake archive's answer: `/{archive}/timemap/{URI-R}` for the current day.
async fn answer(State(fake): State<Arc<Fake>>, req: Request<Body>) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map_or("", |p| p.as_str())
        .trim_start_matches('/');
    let Some((archive, rest)) = path.split_once('/') else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(count) = fake.counts.get(archive) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    count.fetch_add(1, Ordering::Relaxed);
    let Some(uri_r) = rest.strip_prefix("timemap/") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let decoded = percent_encoding::percent_decode_str(uri_r).decode_utf8_lossy();
    let t = fake.day.load(Ordering::SeqCst) as usize;
    let day = fake
        .series
        .get(uri_r)
        .or_else(|| fake.series.get(decoded.as_ref()))
        .and_then(|g| g.get(t));
    let Some(day) = day else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut body = format!("<{}>; rel=\"original\"", day.uri_r);
    let mut listed = 0;
    for m in day.mementos.iter().filter(|m| m.archive == archive) {
        body.push_str(&format!(
            ",\n<{}>; rel=\"memento\"; datetime=\"{}\"",
            m.uri_m,
            format_rfc1123(m.datetime)
        ));
        listed += 1;
    }
    body.push('\n');
    if listed > 0 {
        (
            [(axum::http::header::CONTENT_TYPE, "application/link-format")],
            body,
        )
            .into_response()
    } else if day.mementos.is_empty() || archive == NOT_FOUND_ARCHIVE {
        StatusCode::NOT_FOUND.into_response()
    } else {
        // Not observed that day: the archive did not answer.
        StatusCode::SERVICE_UNAVAILABLE.into_response()
    }
}
