//! The replay: each miss routed by `tmproxy_core::routing::decide` over the profiles learned so
//! far, and the answers of the archives asked fed back through `Profiles::observe`, as the
//! server's fan-out does (`src/routing`): the exploration draw of the n-th miss (from 0) is
//! `draw_for(uri_r, n)`, an archive asked teaches held / held none, a skipped one nothing, a
//! miss no archive holds anything for teaches nothing, and a lesson teaches only the keys its
//! client (`client_key` of its address) has not yet taught `max_per_client` times, counted by
//! the server's own `PerClient`.

use super::{Request, Stream};
use crate::rng::Rng;
use serde::Serialize;
use tmproxy_core::routing::{
    client_key, decide, draw_for, Candidate, Mode, Observation, Outcome, PerClient, Profiles,
    Settings,
};

/// `[routing] max_keys`'s default in the server (src/config/routing.rs).
pub const MAX_KEYS: usize = 100_000;
/// `[routing] max_per_client`'s default in the server (src/config/routing.rs).
pub const MAX_PER_CLIENT: u32 = 5;

/// The bounds of what is learned: `[routing] max_keys` and `max_per_client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_keys: usize,
    pub max_per_client: u32,
}

impl Limits {
    /// The server's defaults.
    pub const SERVER: Limits = Limits {
        max_keys: MAX_KEYS,
        max_per_client: MAX_PER_CLIENT,
    };
}

/// What one routing setting did over a stream of misses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// `all` or `learned`.
    pub mode: &'static str,
    pub min_share: f64,
    pub explore: f64,
    pub min_evidence: u32,
    /// `[routing] max_per_client` (it bounds only requests with a client).
    pub max_per_client: u32,
    pub misses: u64,
    /// Archive requests made.
    pub requests: u64,
    /// Archive requests `all` makes: misses × archives.
    pub requests_all: u64,
    pub requests_per_miss: f64,
    /// 1 − requests / requests_all.
    pub avoided: f64,
    /// Mementos served over mementos `all` would have served, summed over misses.
    pub memento_recall: f64,
    /// Misses that found at least one memento over those `all` finds one for.
    pub uri_recall: f64,
    pub mementos: u64,
    pub mementos_all: u64,
    pub uris_found: u64,
    pub uris_found_all: u64,
    /// Misses drawn to explore (every archive asked).
    pub explored: u64,
    /// The median over misses of the slowest asked archive's response time (ms); None for a
    /// trace, which has no latencies.
    pub median_latency_ms: Option<u32>,
    /// The same when every archive is asked.
    pub median_latency_all_ms: Option<u32>,
    /// Mementos missed, per archive (in the stream's order): where recall is lost.
    #[serde(skip)]
    pub missed_by_archive: Vec<u64>,
    /// Requests made, per archive (in the stream's order): what `memsim route-e2e` counts at
    /// the fake archives.
    #[serde(skip)]
    pub requests_by_archive: Vec<u64>,
}

/// The `all` setting.
pub fn all() -> Settings {
    Settings {
        mode: Mode::All,
        min_evidence: 20,
        min_share: 0.0,
        explore: 0.0,
    }
}

/// Replays `misses` of `stream` under `settings`, profiles (and per-client counts) starting
/// blank.
pub fn run(stream: &Stream, misses: &[Request], settings: &Settings, limits: Limits) -> RunResult {
    let candidates: Vec<Candidate<'_>> = stream
        .archives
        .iter()
        .map(|a| Candidate::new(&a.id, a.always))
        .collect();
    let mut profiles = Profiles::new(limits.max_keys);
    let mut per_client = PerClient::new(limits.max_per_client);
    let (mut requests, mut mementos, mut mementos_all) = (0u64, 0u64, 0u64);
    let (mut found, mut found_all, mut explored) = (0u64, 0u64, 0u64);
    let timed = stream.archives.iter().all(|a| a.latency_ms.is_some());
    let mut waits = Vec::with_capacity(if timed { misses.len() } else { 0 });
    let mut waits_all = Vec::with_capacity(waits.capacity());
    let mut counts = vec![0u32; stream.archives.len()];
    let mut missed = vec![0u64; stream.archives.len()];
    let mut asked = vec![0u64; stream.archives.len()];
    for (n, m) in misses.iter().enumerate() {
        let uri = &stream.uris[m.uri as usize];
        counts.iter_mut().for_each(|c| *c = 0);
        for &(a, c) in &stream.holdings[m.holdings as usize] {
            counts[usize::from(a)] = c;
        }
        let decision = decide(
            &profiles,
            settings,
            &candidates,
            &uri.keys,
            draw_for(&uri.uri_r, n as u64),
        );
        explored += u64::from(decision.explored);
        let mut outcomes = Vec::with_capacity(candidates.len());
        let (mut got, mut wait, mut wait_all) = (0u64, 0u32, 0u32);
        for (a, route) in decision.routes.iter().enumerate() {
            let held = counts[a];
            mementos_all += u64::from(held);
            let latency = if timed {
                latency(stream, n as u64, a)
            } else {
                0
            };
            wait_all = wait_all.max(latency);
            if !route.is_ask() {
                missed[a] += u64::from(held);
                continue;
            }
            requests += 1;
            asked[a] += 1;
            got += u64::from(held);
            wait = wait.max(latency);
            let outcome = if held > 0 {
                Outcome::Held
            } else {
                Outcome::HeldNone
            };
            outcomes.push((stream.archives[a].id.clone(), outcome));
        }
        mementos += got;
        found += u64::from(got > 0);
        found_all += u64::from(counts.iter().any(|&c| c > 0));
        if timed {
            waits.push(wait);
            waits_all.push(wait_all);
        }
        // As the server learns (`Routing::observe_for`): a miss no archive holds anything for
        // (a URL made up, or gone everywhere) teaches nothing and spends none of its client's
        // share; one client teaches a key at most `max_per_client` times.
        let mut lesson = Observation {
            keys: uri.keys.clone(),
            outcomes,
        };
        if lesson.holds_any() {
            if let Some(client) = m.client {
                per_client.admit(client_key(client), &mut lesson.keys);
            }
            profiles.observe(&lesson);
        }
    }
    let requests_all = misses.len() as u64 * stream.archives.len() as u64;
    RunResult {
        mode: mode_name(settings.mode),
        min_share: settings.min_share,
        explore: settings.explore,
        min_evidence: settings.min_evidence,
        max_per_client: limits.max_per_client,
        misses: misses.len() as u64,
        requests,
        requests_all,
        requests_per_miss: per_miss(requests, misses.len() as u64),
        avoided: 1.0 - ratio(requests, requests_all),
        memento_recall: ratio(mementos, mementos_all),
        uri_recall: ratio(found, found_all),
        mementos,
        mementos_all,
        uris_found: found,
        uris_found_all: found_all,
        explored,
        median_latency_ms: median(&mut waits),
        median_latency_all_ms: median(&mut waits_all),
        missed_by_archive: missed,
        requests_by_archive: asked,
    }
}

/// A mode as `[routing] mode` names it.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::All => "all",
        Mode::Learned => "learned",
    }
}

/// Archive requests per miss (0 without misses).
pub fn per_miss(requests: u64, misses: u64) -> f64 {
    if misses == 0 {
        0.0
    } else {
        requests as f64 / misses as f64
    }
}

/// `a / b`, 1 when there is nothing to count (no miss found anything: nothing was lost).
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        if a == 0 {
            1.0
        } else {
            0.0
        }
    } else {
        a as f64 / b as f64
    }
}

fn median(v: &mut [u32]) -> Option<u32> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    Some(*v.select_nth_unstable(mid).1)
}

/// Archive `a`'s response time to miss `n` (ms): its median times a factor between 0.5 and 2
/// (log-uniform), drawn from the seed, the miss and the archive alone, so every setting sees
/// the same time for the same request.
pub fn latency(stream: &Stream, n: u64, a: usize) -> u32 {
    let base = stream.archives[a].latency_ms.unwrap_or(0);
    let mut rng = Rng::new(
        stream.seed ^ n.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ (a as u64).wrapping_mul(0x9E37_79B9),
    );
    rng.next_u64();
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (f64::from(base) * 2f64.powf(2.0 * u - 1.0)).round() as u32
}

/// The settings a sweep tries: `all`, then `learned` at every combination given.
pub fn grid(min_shares: &[f64], explores: &[f64], min_evidences: &[u32]) -> Vec<Settings> {
    let mut out = vec![all()];
    for &min_evidence in min_evidences {
        for &min_share in min_shares {
            for &explore in explores {
                out.push(Settings::learned(min_evidence, min_share, explore));
            }
        }
    }
    out
}

/// Every setting over the same misses, on `threads` threads; results in the settings' order.
pub fn sweep(
    stream: &Stream,
    misses: &[Request],
    settings: &[Settings],
    limits: Limits,
    threads: usize,
    done: &(dyn Fn() + Sync),
) -> Vec<RunResult> {
    let threads = threads.clamp(1, settings.len().max(1));
    let mut out: Vec<Option<RunResult>> = vec![None; settings.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t..settings.len())
                        .step_by(threads)
                        .map(|i| {
                            let result = run(stream, misses, &settings[i], limits);
                            done();
                            (i, result)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            // A panic in a worker is a bug of ours: re-raise it rather than report half a sweep.
            for (i, r) in h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)) {
                out[i] = Some(r);
            }
        }
    });
    out.into_iter().flatten().collect()
}
