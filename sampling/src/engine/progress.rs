//! Progress as the job's status and the CLI show it, computed purely from a [`Snapshot`] of the
//! run's counters and the rates its [`RateWindow`]s give at a clock value passed in: per stage
//! done, total (exact, or an estimate flagged as one, with its basis), the rate of answers
//! actually fetched over the last minute (answers reused from the checkpoint never count), and
//! an ETA summed from the remaining work of the current and later stages, or null with the
//! reason when some remaining stage's work or rate is not known: never a made-up number.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The stages progress is shown for, in pipeline order.
pub const STAGES: [&str; 6] = [
    "offline",
    "first_capture",
    "popular_quota",
    "root_upsampling",
    "downsampling",
    "timemaps",
];
pub const OFFLINE: usize = 0;
pub const FIRST_CAPTURE: usize = 1;
pub const POPULAR_QUOTA: usize = 2;
pub const ROOT_UPSAMPLING: usize = 3;
pub const DOWNSAMPLING: usize = 4;
pub const TIMEMAPS: usize = 5;
/// What a stage's done and total count.
const UNITS: [&str; 6] = ["bytes", "candidates", "urls", "domains", "urls", "timemaps"];
/// The stages that ask one first capture per item of work, through the same client (same
/// concurrency and rate cap): one rate serves the three.
const CDX_STAGES: [usize; 3] = [FIRST_CAPTURE, POPULAR_QUOTA, ROOT_UPSAMPLING];
/// The rate's window.
pub const WINDOW_MS: u64 = 60_000;
/// No rate before this long has been measured: two answers in the first 10 ms say little.
pub const MIN_SPAN_MS: u64 = 5_000;

/// One stage's counters as the engine keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageCounts {
    pub done: u64,
    /// Set by the engine once known (when the stage starts; first_capture's when the input is
    /// through; popular_quota's is its pool, which it may not exhaust).
    pub total: Option<u64>,
    /// Towards an estimate of the total before it is known: candidates handed over so far
    /// (first_capture), the popular pool so far (popular_quota), domains kept without a root
    /// so far (root_upsampling).
    pub seen: u64,
    /// Answers (TimeMaps) fetched from the CDX server, over the job's life.
    pub fetched: u64,
    /// Answers (TimeMaps) taken from the checkpoint, in this run.
    pub reused: u64,
}

/// What the run's progress is, persisted as `progress.json` (so a finished job still shows its
/// stage and counters after a restart, and a resumed one starts from them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Snapshot {
    /// The spec's result hash: a snapshot is only resumed from by the same spec.
    pub spec_hash: String,
    pub stage: String,
    pub stages: [StageCounts; 6],
    /// The first-capture answers the checkpoint held when this run started.
    pub checkpoint_answers: u64,
    pub collect_timemaps: bool,
    /// The popular pool's most URLs (popular domains × the per-domain pool); 0: none.
    pub popular_cap: u64,
    /// Whether root upsampling asks anything (`years` overlaps its 1996–2002 window).
    pub roots_window: bool,
    /// The status's `counters` (kept as they were before the per-stage view).
    pub lines: u64,
    pub candidates: u64,
    pub cdx_answers: u64,
    pub sampled: u64,
    pub timemaps: u64,
    pub warnings: Vec<String>,
}

/// Counts per whole second over the last minute, from instants passed in (milliseconds on any
/// clock that does not go back). At most 61 buckets.
#[derive(Debug, Clone, Default)]
pub struct RateWindow {
    since_ms: Option<u64>,
    buckets: VecDeque<(u64, u64)>,
}

impl RateWindow {
    /// Starts counting at `at_ms` (the rate before it is not this run's).
    pub fn start(&mut self, at_ms: u64) {
        self.since_ms = Some(at_ms);
        self.buckets.clear();
    }

    pub fn record(&mut self, at_ms: u64, n: u64) {
        self.since_ms.get_or_insert(at_ms);
        let sec = at_ms / 1000;
        match self.buckets.back_mut() {
            Some((s, c)) if *s == sec => *c += n,
            _ => self.buckets.push_back((sec, n)),
        }
        while self.buckets.front().is_some_and(|(s, _)| s + 61 <= sec) {
            self.buckets.pop_front();
        }
    }

    /// Per second over the last minute (or since the start, when shorter); None when nothing
    /// was counted in it, or less than [`MIN_SPAN_MS`] was measured. A bucket on the window's
    /// edge counts whole.
    pub fn rate(&self, now_ms: u64) -> Option<f64> {
        let from = now_ms.saturating_sub(WINDOW_MS);
        let n: u64 = self
            .buckets
            .iter()
            .filter(|(s, _)| s * 1000 + 999 >= from && s * 1000 <= now_ms)
            .map(|(_, c)| c)
            .sum();
        let since = self.since_ms.unwrap_or(now_ms).max(from);
        let span = now_ms.saturating_sub(since);
        (n > 0 && span >= MIN_SPAN_MS).then(|| n as f64 * 1000.0 / span as f64)
    }
}

/// The rates at one instant: per stage (its own unit), and the first-capture answers of the
/// three CDX stages together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    pub stage: [Option<f64>; 6],
    pub cdx: Option<f64>,
}

/// One stage in the status's `stages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageView {
    pub stage: &'static str,
    /// `pending`, `running`, `done`, `stopped` (a job not running) or `skipped`.
    pub state: &'static str,
    pub unit: &'static str,
    pub done: u64,
    pub total: Option<u64>,
    pub total_estimated: bool,
    /// Where the total comes from (or why there is none yet).
    pub total_basis: String,
    pub fetched: u64,
    pub reused: u64,
    /// Fetched (offline: bytes read) per second over the last minute, while running.
    pub rate_per_s: Option<f64>,
    pub eta_seconds: Option<f64>,
}

/// The whole view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgressView {
    pub stage: String,
    pub stages: Vec<StageView>,
    /// First-capture answers fetched per second over the last minute, all CDX stages.
    pub cdx_rate_per_s: Option<f64>,
    pub eta_seconds: Option<f64>,
    /// What the ETA sums, or why there is none.
    pub eta_basis: String,
}

/// The estimated total to show: the one shown before while the new estimate stays within the
/// band the evidence allows (±50% of it with nothing of the input read, narrowing to ±5% with all
/// of it), else the new estimate; never under what is done. Parts of an input differ in how
/// dense they are, so an estimate that followed every new byte would jump back and forth.
pub fn steady(shown: Option<u64>, estimate: u64, read_share: f64, done: u64) -> u64 {
    let band = 0.05 + 0.45 * (1.0 - read_share.clamp(0.0, 1.0));
    match shown {
        Some(s) if s >= done && (estimate as f64 - s as f64).abs() <= band * s as f64 => s,
        _ => estimate.max(done),
    }
}

/// Estimate `seen` × `whole` / `part`, None when `part` is 0.
fn scale(seen: u64, whole: u64, part: u64) -> Option<u64> {
    (part > 0).then(|| (u128::from(seen) * u128::from(whole) / u128::from(part)) as u64)
}

/// A stage's total: (total, estimated, basis).
fn total_of(s: &Snapshot, i: usize) -> (Option<u64>, bool, String) {
    let st = &s.stages[i];
    let (read, size) = (s.stages[OFFLINE].done, s.stages[OFFLINE].total.unwrap_or(0));
    let known = |basis: &str| (st.total, false, basis.to_string());
    match i {
        OFFLINE => known("the input's size"),
        FIRST_CAPTURE if st.total.is_some() => known("candidates from the whole input"),
        FIRST_CAPTURE => match scale(st.seen, size, read) {
            Some(t) => (
                Some(t.max(st.done)),
                true,
                "candidates per input byte so far × input size".into(),
            ),
            None => (None, false, "not known before the input is read".into()),
        },
        POPULAR_QUOTA if s.popular_cap == 0 => (Some(0), false, "no popular domains".into()),
        POPULAR_QUOTA => {
            let at_most = ", at most: the stage stops once every year's quota is met";
            match st.total {
                Some(t) => (Some(t), true, format!("URLs in the popular pool{at_most}")),
                None => match scale(st.seen, size, read) {
                    Some(t) => (
                        Some(t.min(s.popular_cap).max(st.done)),
                        true,
                        format!("popular pool per input byte so far × input size{at_most}"),
                    ),
                    None => (None, false, "not known before the input is read".into()),
                },
            }
        }
        ROOT_UPSAMPLING if !s.roots_window => {
            (Some(0), false, "years do not overlap 1996–2002".into())
        }
        ROOT_UPSAMPLING if st.total.is_some() => known("domains kept without a root URL"),
        ROOT_UPSAMPLING => {
            let fc = &s.stages[FIRST_CAPTURE];
            match total_of(s, FIRST_CAPTURE)
                .0
                .and_then(|t| scale(st.seen, t, fc.done))
            {
                Some(t) => (
                    Some(t),
                    true,
                    "domains without a root so far × first_capture's total / done".into(),
                ),
                None => (None, false, "not known before first captures arrive".into()),
            }
        }
        DOWNSAMPLING if st.total.is_some() => known("URLs given to downsampling"),
        DOWNSAMPLING => (None, false, "known when the stage starts".into()),
        _ if st.total.is_some() => known("the sample's size"),
        _ => (
            None,
            false,
            "the sample's size, known once downsampling ends".into(),
        ),
    }
}

/// The view of `s` with the `rates` of now; `active`: the run is going (a stopped, failed or
/// cancelled job has no rate and no ETA).
/// `shown`: each stage's total as last shown (empty: none yet), which an estimate keeps until the
/// evidence moves it ([`steady`]).
pub fn view(s: &Snapshot, rates: &Rates, shown: &[Option<u64>], active: bool) -> ProgressView {
    let current = STAGES.iter().position(|n| *n == s.stage);
    let finished = s.stage == "done";
    let (read, size) = (s.stages[OFFLINE].done, s.stages[OFFLINE].total.unwrap_or(0));
    let read_share = if size > 0 {
        read as f64 / size as f64
    } else {
        0.0
    };
    let mut stages: Vec<StageView> = (0..STAGES.len())
        .map(|i| {
            let (mut total, total_estimated, total_basis) = total_of(s, i);
            if total_estimated {
                let before = shown.get(i).copied().flatten();
                total = total.map(|t| steady(before, t, read_share, s.stages[i].done));
            }
            let skipped = i == TIMEMAPS && !s.collect_timemaps;
            let ran = match current {
                // The offline stages run alongside first_capture until the input is through.
                Some(_) if i == OFFLINE => {
                    if s.stages[FIRST_CAPTURE].total.is_some() || current > Some(FIRST_CAPTURE) {
                        "done"
                    } else {
                        "running"
                    }
                }
                Some(c) if i < c => "done",
                Some(c) if i == c => "running",
                _ if finished => "done",
                _ => "pending",
            };
            let state = match ran {
                _ if skipped => "skipped",
                "running" if !active => "stopped",
                other => other,
            };
            StageView {
                stage: STAGES[i],
                state,
                unit: UNITS[i],
                done: s.stages[i].done,
                total,
                total_estimated,
                total_basis,
                fetched: s.stages[i].fetched,
                reused: s.stages[i].reused,
                rate_per_s: (state == "running").then_some(rates.stage[i]).flatten(),
                eta_seconds: None,
            }
        })
        .collect();
    let (eta_seconds, eta_basis) = eta(&mut stages, rates, finished, active, current);
    ProgressView {
        stage: s.stage.clone(),
        stages,
        cdx_rate_per_s: active.then_some(rates.cdx).flatten(),
        eta_seconds,
        eta_basis,
    }
}

/// Sums remaining / rate over the CDX stages and the TimeMaps not done; fills each stage's
/// `eta_seconds` where it has one. The offline stages run alongside first_capture (their
/// time is inside its) and downsampling runs in memory: neither is counted.
fn eta(
    stages: &mut [StageView],
    rates: &Rates,
    finished: bool,
    active: bool,
    current: Option<usize>,
) -> (Option<f64>, String) {
    if finished {
        return (Some(0.0), "done".into());
    }
    if !active {
        return (None, "the run is not going".into());
    }
    if current.is_none() {
        return (None, "not started".into());
    }
    let offline = &mut stages[OFFLINE];
    if let (Some(t), Some(r), "running") = (offline.total, offline.rate_per_s, offline.state) {
        offline.eta_seconds = Some(t.saturating_sub(offline.done) as f64 / r);
    }
    let mut parts = Vec::new();
    let mut unknown = Vec::new();
    let mut sum = 0.0;
    for i in CDX_STAGES.into_iter().chain([TIMEMAPS]) {
        let st = &mut stages[i];
        if matches!(st.state, "done" | "skipped") {
            continue;
        }
        let Some(total) = st.total else {
            unknown.push(format!("{}: no total ({})", st.stage, st.total_basis));
            continue;
        };
        let left = total.saturating_sub(st.done);
        let rate = if i == TIMEMAPS {
            rates.stage[TIMEMAPS].filter(|_| st.state == "running")
        } else {
            rates.cdx
        };
        let approx = if st.total_estimated { "~" } else { "" };
        match rate {
            _ if left == 0 => st.eta_seconds = Some(0.0),
            Some(r) => {
                let secs = left as f64 / r;
                st.eta_seconds = Some(secs);
                sum += secs;
                parts.push(format!("{}: {approx}{left} left at {r:.1}/s", st.stage));
            }
            None if i == TIMEMAPS && st.state != "running" => {
                unknown.push("timemaps: no rate before the stage starts".into())
            }
            None => unknown.push(format!(
                "{}: no rate yet (nothing fetched in the last minute, or under {} s measured)",
                st.stage,
                MIN_SPAN_MS / 1000
            )),
        }
    }
    if !unknown.is_empty() {
        return (None, format!("unknown: {}", unknown.join("; ")));
    }
    let rest = "(offline runs inside first_capture; downsampling, in memory, not counted)";
    let basis = if parts.is_empty() {
        format!("no CDX work left {rest}")
    } else {
        format!("{} {rest}", parts.join(" + "))
    };
    (Some(sum), basis)
}

/// A duration as people read it: `45s`, `12m 05s`, `3h 02m`, `2d 07h`.
pub fn human_secs(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86400, s % 86400 / 3600),
    }
}

/// One stage on one line: `first_capture 1234/~8000 candidates, 84.6/s fetched, 200 reused`.
pub fn stage_line(s: &StageView) -> String {
    let total = match s.total {
        Some(t) if s.total_estimated => format!("/~{t}"),
        Some(t) => format!("/{t}"),
        None => String::new(),
    };
    let mut line = format!("{} {}{total} {} ({})", s.stage, s.done, s.unit, s.state);
    if let Some(r) = s.rate_per_s {
        let what = if s.stage == "offline" {
            "read"
        } else {
            "fetched"
        };
        line.push_str(&format!(", {r:.1}/s {what}"));
    }
    if s.reused > 0 {
        line.push_str(&format!(", {} reused", s.reused));
    }
    line
}

/// The run on one plain line: its current stage, and the ETA or why there is none.
pub fn plain_line(v: &ProgressView) -> String {
    let current = v
        .stages
        .iter()
        .find(|s| s.stage == v.stage)
        .map(stage_line)
        .unwrap_or_else(|| format!("stage {}", if v.stage.is_empty() { "-" } else { &v.stage }));
    match v.eta_seconds {
        Some(s) => format!("{current}; ETA {}", human_secs(s)),
        None => format!("{current}; ETA {}", v.eta_basis),
    }
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
