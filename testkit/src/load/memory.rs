//! The server's resident memory over a load run: sampled from `/proc/<pid>/status` once a second,
//! and whether its trend over the second half stayed flat.

use super::options::{RSS_TOLERANCE_MIB, RSS_TOLERANCE_SHARE};
use serde::Serialize;
use std::time::{Duration, Instant};

/// The server's resident memory over the run (VmRSS), in MiB.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rss {
    /// After the warm-up, as the load starts.
    pub start_mib: f64,
    /// The sample nearest the middle of the run (30 s of 60).
    pub at_half_mib: f64,
    pub end_mib: f64,
    /// The largest sample of the second half.
    pub max_second_half_mib: f64,
    /// The second half's least-squares trend, in MiB across that half.
    pub growth_mib: f64,
    pub tolerance_mib: f64,
    /// The tolerance divided by the misses of the second half: a leak smaller than this per miss
    /// could hide in it.
    pub hidden_leak_per_miss_bytes: f64,
    pub flat: bool,
    /// One sample a second from the start of the load.
    pub samples_mib: Vec<f64>,
}

/// The server's VmRSS in KiB, from `/proc/<pid>/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// (seconds since `started`, KiB) once a second until `end`.
pub(super) async fn sample_rss(pid: u32, started: Instant, end: Instant) -> Vec<(f64, u64)> {
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = Instant::now();
        if now >= end {
            break;
        }
        if let Some(kib) = rss_kib(pid) {
            samples.push((now.duration_since(started).as_secs_f64(), kib));
        }
    }
    samples
}

pub(super) fn rss_report(samples: &[(f64, u64)], duration: f64, misses_second_half: f64) -> Rss {
    let to_mib = |kib: u64| kib as f64 / 1024.0;
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        // No /proc (not Linux) or the server vanished: nothing shows the memory flat.
        return Rss::default();
    };
    let half = duration / 2.0;
    let at_half = samples
        .iter()
        .min_by(|a, b| (a.0 - half).abs().total_cmp(&(b.0 - half).abs()))
        .map_or(first.1, |s| s.1);
    let max_second_half = samples
        .iter()
        .filter(|s| s.0 >= half)
        .map(|s| s.1)
        .max()
        .unwrap_or(last.1);
    let at_half_mib = to_mib(at_half);
    let growth_mib = trend_mib(samples.iter().filter(|s| s.0 >= half));
    let tolerance_mib = RSS_TOLERANCE_MIB.max(at_half_mib * RSS_TOLERANCE_SHARE);
    Rss {
        start_mib: to_mib(first.1),
        at_half_mib,
        end_mib: to_mib(last.1),
        max_second_half_mib: to_mib(max_second_half),
        growth_mib,
        tolerance_mib,
        hidden_leak_per_miss_bytes: tolerance_mib * 1_048_576.0 / misses_second_half.max(1.0),
        flat: growth_mib <= tolerance_mib,
        samples_mib: samples.iter().map(|s| to_mib(s.1)).collect(),
    }
}

/// The least-squares slope of RSS over time, times the span of the samples: how much the
/// memory climbed across them, with a passing spike weighing little. 0 for fewer than 2 samples.
pub(super) fn trend_mib<'a>(samples: impl Iterator<Item = &'a (f64, u64)>) -> f64 {
    let points: Vec<(f64, f64)> = samples.map(|&(t, kib)| (t, kib as f64 / 1024.0)).collect();
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_m = points.iter().map(|p| p.1).sum::<f64>() / n;
    let var_t: f64 = points.iter().map(|p| (p.0 - mean_t).powi(2)).sum();
    if var_t == 0.0 {
        return 0.0;
    }
    let cov: f64 = points.iter().map(|p| (p.0 - mean_t) * (p.1 - mean_m)).sum();
    let span = points[points.len() - 1].0 - points[0].0;
    cov / var_t * span
}
