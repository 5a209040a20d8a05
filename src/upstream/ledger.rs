//! What each archive has done since start: how often it gave each outcome, how long it took
//! (buckets for `/metrics`, quantiles for `/archives`) and what it last did.

use crate::timemap::answer::ArchiveStatus;
use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use std::sync::Mutex;
use std::time::Duration;
use tmproxy_core::timemap::refresh::Refresh;

/// One archive's turn in a fan-out, as counted: asked (and what it answered) or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It was asked, and this is its answer's status.
    Asked(ArchiveStatus),
    /// It was not asked: dormant, routing judged it holds nothing there, or it asked us to
    /// wait ([`SkipReason`]).
    Skipped,
}

/// Why an archive was not asked, as `tmproxy_archive_requests_skipped_total{reason}` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Asleep after repeated failures.
    Dormant,
    /// Its routing profile says it holds nothing for the URI-R's domain.
    Routing,
    /// It answered 429 or 503 with `Retry-After`, and that time has not come.
    RetryAfter,
}

impl SkipReason {
    pub const ALL: [SkipReason; 3] = [
        SkipReason::Dormant,
        SkipReason::Routing,
        SkipReason::RetryAfter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Dormant => "dormant",
            SkipReason::Routing => tmproxy_core::routing::decide::DETAIL,
            SkipReason::RetryAfter => tmproxy_core::retry_after::DETAIL,
        }
    }

    /// Its place in [`SkipReason::ALL`] (and in `skipped_by`).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Turn {
    /// Every outcome, in the order counts are kept and shown.
    pub const ALL: [Turn; 7] = [
        Turn::Asked(ArchiveStatus::Ok),
        Turn::Asked(ArchiveStatus::Empty),
        Turn::Asked(ArchiveStatus::NotFound),
        Turn::Asked(ArchiveStatus::Timeout),
        Turn::Asked(ArchiveStatus::Error),
        Turn::Asked(ArchiveStatus::Malformed),
        Turn::Skipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Turn::Asked(status) => status.as_str(),
            Turn::Skipped => "skipped",
        }
    }

    fn index(self) -> usize {
        Turn::ALL.iter().position(|o| *o == self).unwrap_or(0)
    }
}

/// The upper bounds (seconds) of the latency histogram's buckets: from a cached-connection
/// answer to the longest per-archive timeout anyone sets.
pub const BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0,
];

/// One archive's record. A short lock per archive turn: never held across an await.
pub struct Ledger {
    record: Mutex<Record>,
}

struct Record {
    counts: [u64; Turn::ALL.len()],
    /// The `skipped` turns by reason, in [`SkipReason::ALL`] order.
    skipped_by: [u64; SkipReason::ALL.len()],
    /// Per bucket of [`BUCKETS`] (not cumulative); answers slower than the last are only in
    /// `asked`.
    buckets: [u64; BUCKETS.len()],
    asked: u64,
    seconds: f64,
    /// Milliseconds, for quantiles to two significant figures (1%): 16 KiB an archive, where
    /// three figures took 104 KiB.
    latency_ms: Option<Histogram<u64>>,
    last: Option<(Turn, DateTime<Utc>)>,
    /// Body bytes read from it, every listing page and every try.
    bytes: u64,
    /// Listings it answered, by how they were read, in [`Refresh::ALL`] order.
    refreshes: [u64; Refresh::ALL.len()],
}

/// A copy of a ledger, as `/archives` and `/metrics` show it.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerSnapshot {
    /// One count per [`Turn::ALL`], in that order.
    pub counts: [u64; Turn::ALL.len()],
    /// The `skipped` turns by [`SkipReason::ALL`], in that order.
    pub skipped_by: [u64; SkipReason::ALL.len()],
    /// Per [`BUCKETS`] (not cumulative): answers within each bound and over the one before.
    pub buckets: [u64; BUCKETS.len()],
    /// Answers timed (every outcome but `skipped`) and their total time in seconds.
    pub asked: u64,
    pub seconds: f64,
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
    pub last: Option<(Turn, DateTime<Utc>)>,
    /// Body bytes read from it.
    pub bytes: u64,
    /// Listings answered, by [`Refresh::ALL`], in that order.
    pub refreshes: [u64; Refresh::ALL.len()],
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            record: Mutex::new(Record {
                counts: [0; Turn::ALL.len()],
                skipped_by: [0; SkipReason::ALL.len()],
                buckets: [0; BUCKETS.len()],
                asked: 0,
                seconds: 0.0,
                // 1 ms to an hour; a construction that cannot fail with these bounds, but
                // should it, the ledger only loses its quantiles.
                latency_ms: Histogram::new_with_bounds(1, 3_600_000, 2).ok(),
                last: None,
                bytes: 0,
                refreshes: [0; Refresh::ALL.len()],
            }),
        }
    }
}

impl Ledger {
    /// Counts one turn: its outcome at `at` and, when it was asked, how long it took.
    pub fn record(&self, outcome: Turn, elapsed: Option<Duration>, at: DateTime<Utc>) {
        // A poisoned lock only means a panic mid-update of plain counters.
        let mut r = self.record.lock().unwrap_or_else(|p| p.into_inner());
        r.counts[outcome.index()] += 1;
        r.last = Some((outcome, at));
        let Some(elapsed) = elapsed else { return };
        let secs = elapsed.as_secs_f64();
        r.asked += 1;
        r.seconds += secs;
        if let Some(i) = BUCKETS.iter().position(|bound| secs <= *bound) {
            r.buckets[i] += 1;
        }
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        if let Some(h) = &mut r.latency_ms {
            h.saturating_record(ms.max(1));
        }
    }

    /// Counts a turn the archive was not asked, for `reason`.
    pub fn record_skip(&self, reason: SkipReason, at: DateTime<Utc>) {
        let mut r = self.record.lock().unwrap_or_else(|p| p.into_inner());
        r.counts[Turn::Skipped.index()] += 1;
        r.skipped_by[reason.index()] += 1;
        r.last = Some((Turn::Skipped, at));
    }

    /// Counts what one ask read: `bytes` of bodies, and a listing read as `refresh` when it
    /// was answered (None: it failed, or only its TimeGate answered).
    pub fn record_listing(&self, refresh: Option<Refresh>, bytes: u64) {
        let mut r = self.record.lock().unwrap_or_else(|p| p.into_inner());
        r.bytes = r.bytes.saturating_add(bytes);
        if let Some(refresh) = refresh {
            r.refreshes[refresh as usize] += 1;
        }
    }

    pub fn snapshot(&self) -> LedgerSnapshot {
        let r = self.record.lock().unwrap_or_else(|p| p.into_inner());
        let quantile = |q: f64| {
            r.latency_ms
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| h.lowest_equivalent(h.value_at_quantile(q)))
        };
        LedgerSnapshot {
            counts: r.counts,
            skipped_by: r.skipped_by,
            buckets: r.buckets,
            asked: r.asked,
            seconds: r.seconds,
            p50_ms: quantile(0.5),
            p95_ms: quantile(0.95),
            last: r.last,
            bytes: r.bytes,
            refreshes: r.refreshes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn turns_are_counted_by_outcome_and_timed_unless_skipped() {
        let ledger = Ledger::default();
        let at = Utc
            .with_ymd_and_hms(2026, 11, 24, 12, 0, 0)
            .single()
            .expect("time");
        for ms in [20, 40, 60, 80, 100, 120, 140, 160, 180, 3000] {
            let outcome = Turn::Asked(ArchiveStatus::Ok);
            ledger.record(outcome, Some(Duration::from_millis(ms)), at);
        }
        ledger.record_skip(SkipReason::Dormant, at);
        ledger.record_skip(SkipReason::Routing, at);
        ledger.record_skip(SkipReason::Routing, at);
        ledger.record_skip(SkipReason::RetryAfter, at);
        let s = ledger.snapshot();
        assert_eq!(s.counts[0], 10);
        assert_eq!(s.counts[6], 4, "every skip is a skipped turn");
        assert_eq!(
            s.skipped_by,
            [1, 2, 1],
            "by reason: dormant, routing, retry-after"
        );
        assert_eq!(s.asked, 10);
        assert!((s.seconds - 3.9).abs() < 1e-9, "{}", s.seconds);
        assert_eq!(s.p50_ms, Some(100));
        // To two significant figures, never above what was seen.
        assert!(
            s.p95_ms.is_some_and(|ms| (2970..=3000).contains(&ms)),
            "{:?}",
            s.p95_ms
        );
        // 20 ms | 40 ms | 60-100 ms | 120-180 ms, then 3 s in the bucket up to 5 s.
        assert_eq!(s.buckets[..5], [0, 1, 1, 3, 4]);
        assert_eq!(s.buckets[8], 1);
        assert_eq!(s.buckets.iter().sum::<u64>(), 10);
        assert_eq!(s.last, Some((Turn::Skipped, at)));
    }

    #[test]
    fn an_archive_never_asked_has_no_quantiles() {
        let s = Ledger::default().snapshot();
        assert_eq!((s.p50_ms, s.p95_ms, s.asked), (None, None, 0));
    }
}
