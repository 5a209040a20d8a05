//! Per-entry TTLs (`[cache] ttl_mode = "adaptive"`): each entry stays fresh for a time set by how
//! fast its own TimeMap has been gaining mementos, so a page captured hourly is asked about again
//! sooner than one captured once a year. Pure: the entry's datetimes, its decisions and the time
//! come in; a TTL goes out. The derivation is in docs/cache-policy.md ("Adaptive TTL").

use super::entry::HistoryItem;
use chrono::{DateTime, Duration, Utc};
use std::collections::VecDeque;

/// How a policy chooses the TTL of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TtlMode {
    /// One TTL, `Policy::ttl`, for every entry (the paper's rule).
    #[default]
    Fixed,
    /// Each entry its own, from its history: see [`Adaptive`].
    Adaptive(Adaptive),
}

/// The adaptive rule's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adaptive {
    /// No entry is fresh for less (unless `max` is less still).
    pub min: Duration,
    /// Nor for more: a TimeMap quiet for years may still gain a memento tomorrow.
    pub max: Duration,
    /// Expected memento-days missed per refetch: the area λT²/2 a Poisson stream of λ new
    /// mementos a day leaves unserved over a TTL of T days.
    pub budget: f64,
}

/// How many of the newest distinct Memento-Datetimes the rate is read from: enough that one
/// odd capture does not set the TTL, few enough that the window stays recent (8 captures of an
/// hourly page span 8 hours, of a yearly one 8 years).
pub const RECENT: usize = 8;

/// The shortest window a rate is read over: a first fetch has watched for no time at all, and
/// captures seconds apart say no more than captures an hour apart once the TTL is at its floor.
const MIN_WINDOW_SECS: f64 = 3_600.0;
const DAY_SECS: f64 = 86_400.0;

impl Adaptive {
    /// The TTL of an entry holding mementos dated `datetimes` whose decisions so far are
    /// `history`, checked at `now`.
    pub fn ttl(
        &self,
        datetimes: impl IntoIterator<Item = DateTime<Utc>>,
        history: &VecDeque<HistoryItem>,
        now: DateTime<Utc>,
    ) -> Duration {
        self.ttl_for_rate(gain_rate(datetimes, history, now))
    }

    /// T = √(2·budget/λ) days for λ mementos a day, within `[min, max]`.
    pub fn ttl_for_rate(&self, per_day: f64) -> Duration {
        let days = (2.0 * self.budget.max(0.0) / per_day).sqrt();
        let max_secs = self.max.num_seconds().max(0) as f64;
        // NaN (0/0) and ∞ (a rate of 0) both mean "no evidence of gains": the longest TTL.
        let secs = if days.is_finite() {
            (days * DAY_SECS).min(max_secs)
        } else {
            max_secs
        };
        self.clamp(Duration::seconds(secs as i64))
    }

    /// `ttl` within `[min, max]`; when they cross (validation refuses it), `min` wins.
    pub fn clamp(&self, ttl: Duration) -> Duration {
        ttl.min(self.max).max(self.min).max(Duration::zero())
    }
}

/// λ, the mementos a day the TimeMap gains, as the smaller of two estimates from its distinct
/// Memento-Datetimes not after `now` (a later one is a clock or data error and says nothing):
/// - recent: the k ≤ [`RECENT`] newest span a window S back from `now` holding k − 1 captures
///   after its start, λ = (k − ½)/S (the mean of the Jeffreys posterior of a Poisson rate);
///   quick to see a TimeMap fall quiet (its newest memento ancient), but one crawl of many
///   captures makes it spike;
/// - lifetime: all n of them over the span from the oldest to `now`, (n − ½)/S: steady, slow.
///
/// The smaller one lets dormancy lengthen the TTL at once, while a burst shortens it only as far
/// as it raises the lifetime mean. With no memento, S is the time the entry has been watched (from
/// its oldest remembered decision, `history`) and λ = ½/S: an empty TimeMap is asked again soon,
/// then less and less often while it stays empty.
pub fn gain_rate(
    datetimes: impl IntoIterator<Item = DateTime<Utc>>,
    history: &VecDeque<HistoryItem>,
    now: DateTime<Utc>,
) -> f64 {
    let seen = Seen::of(datetimes, now);
    match (seen.newest.last(), seen.oldest) {
        (Some(&recent_start), Some(oldest)) => {
            let recent = (seen.newest.len() as f64 - 0.5) / window_days(now, recent_start);
            let lifetime = (seen.distinct as f64 - 0.5) / window_days(now, oldest);
            recent.min(lifetime)
        }
        _ => {
            let since = history.front().map_or(now, |h| h.at);
            0.5 / window_days(now, since)
        }
    }
}

/// Days from `since` to `now`, at least [`MIN_WINDOW_SECS`].
fn window_days(now: DateTime<Utc>, since: DateTime<Utc>) -> f64 {
    // chrono's datetimes span ±262,000 years and its durations ±292 million: no overflow.
    let secs = now.signed_duration_since(since).num_seconds() as f64;
    secs.max(MIN_WINDOW_SECS) / DAY_SECS
}

/// What [`gain_rate`] reads of the datetimes, in one pass.
struct Seen {
    /// The [`RECENT`] newest distinct ones, newest first.
    newest: Vec<DateTime<Utc>>,
    oldest: Option<DateTime<Utc>>,
    /// How many distinct ones (a capture listed twice, by two collections or archives at the
    /// same second, is one capture).
    distinct: usize,
}

impl Seen {
    fn of(datetimes: impl IntoIterator<Item = DateTime<Utc>>, now: DateTime<Utc>) -> Seen {
        let mut all: Vec<DateTime<Utc>> = datetimes.into_iter().filter(|&d| d <= now).collect();
        // Sorting costs what building the entry did; decisions are not on the hot path of hits.
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.dedup();
        Seen {
            newest: all.iter().take(RECENT).copied().collect(),
            oldest: all.last().copied(),
            distinct: all.len(),
        }
    }
}

#[cfg(test)]
#[path = "ttl_tests.rs"]
mod tests;
