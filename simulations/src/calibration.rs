//! What a series looks like, measured the way `docs/cache-policy.md` states the paper's facts,
//! so a generated series can be set beside the paper's figures (and a real one described).
//!
//! Definitions (ours, where the paper's wording leaves room):
//! - a *transition* compares one URI-R's TimeMaps on consecutive days (a failed day carries the
//!   day before, so it is case 1); its Table 1 case is tmproxy's own `classify` on the loose
//!   counts `(a, m)`; a *change* is any transition that is not case 1;
//! - *never shrinks*: no transition of the URI-R has m' < m (counted over the URI-Rs that are
//!   not always empty, as the paper's Figure 3 leaves those out);
//! - the *change interval* of a URI-R with k ≥ 1 changes is D / k days; the paper's 37.6 is the
//!   mean of those, its "most frequent 30" the mode (k = 3 in 92 days);
//! - an *outage day* is a day on which at least half of the URI-Rs' observations failed;
//! - a TimeMap's *size* is its number of distinct URI-Ms (the paper's cardinality, its Eq. 4).
//!
//! [`figures`] sets these beside the paper's figures, each with the band it must fall in.

use crate::replay::{day0, outcome};
use crate::series::LiveDay;
use chrono::Duration;
use std::collections::{BTreeMap, HashSet};
use tmproxy_core::policy::{classify, Match};

pub mod figures;

/// Facts of a series, accumulated one URI-R at a time (memory: per day and per size, not per
/// URI-R beyond the sizes kept for percentiles).
#[derive(Debug, Clone, Default)]
pub struct Calibration {
    pub uri_rs: u64,
    pub days: u32,
    pub always_empty: u64,
    /// Of the URI-Rs that are not always empty.
    pub never_shrink: u64,
    /// Changes per URI-R (not always empty) → number of URI-Rs.
    pub changes: BTreeMap<u32, u64>,
    /// Σ D/k over URI-Rs with k ≥ 1 changes, and their number.
    interval_sum: f64,
    interval_n: u64,
    /// Transitions by Table 1 case (index = case number; 0 unused).
    pub cases: [u64; 8],
    /// Transitions of the URI-Rs that are not always empty, and those with m' < m among them.
    pub transitions: u64,
    pub shrinking: u64,
    /// Failed observations per day.
    failed_per_day: Vec<u64>,
    /// Mementos whose loose key another memento of the same TimeMap shares (last day).
    pub loose_collisions: u64,
    /// URI-Rs whose URI-Ms changed while their loose keys stayed (a migration).
    pub migrated_uri_rs: u64,
    /// The largest TimeMap seen on any day, in distinct URI-Ms.
    pub largest: u64,
    /// TimeMap sizes (distinct URI-Ms) on the last day, for the size distribution.
    sizes: Vec<u64>,
}

impl Calibration {
    pub fn new() -> Self {
        Calibration::default()
    }

    /// One URI-R's live days, in day order.
    pub fn push_uri(&mut self, days: &[LiveDay]) {
        self.uri_rs += 1;
        self.days = self.days.max(days.len() as u32);
        if self.failed_per_day.len() < days.len() {
            self.failed_per_day.resize(days.len(), 0);
        }
        let counts: Vec<(usize, usize)> = days
            .iter()
            .map(|d| outcome(d, day0() + Duration::days(i64::from(d.day))).counts(Match::Loose))
            .collect();
        for (t, d) in days.iter().enumerate() {
            self.failed_per_day[t] += u64::from(d.carried);
        }
        for d in days {
            // A day's distinct URI-Ms are at most its list's length: most days need no set.
            if d.mementos.len() as u64 > self.largest {
                let uri_ms: HashSet<&str> = d.mementos.iter().map(|m| &*m.uri_m).collect();
                self.largest = self.largest.max(uri_ms.len() as u64);
            }
        }
        if counts.iter().all(|&(_, m)| m == 0) {
            self.always_empty += 1;
            return;
        }
        let mut shrank = false;
        let mut changes = 0u32;
        for w in counts.windows(2) {
            let ((a, m), (a2, m2)) = (w[0], w[1]);
            let case = classify(a, m, a2, m2).number() as usize;
            self.cases[case] += 1;
            changes += u32::from(case != 1);
            shrank |= m2 < m;
            self.transitions += 1;
            self.shrinking += u64::from(m2 < m);
        }
        self.never_shrink += u64::from(!shrank);
        *self.changes.entry(changes).or_default() += 1;
        if changes > 0 {
            self.interval_sum += days.len() as f64 / f64::from(changes);
            self.interval_n += 1;
        }
        if let Some(last) = days.last() {
            let mut keys = HashSet::new();
            for m in &last.mementos {
                if !keys.insert((m.archive.as_str(), m.datetime)) {
                    self.loose_collisions += 1;
                }
            }
            let uri_ms: HashSet<&str> = last.mementos.iter().map(|m| &*m.uri_m).collect();
            self.sizes.push(uri_ms.len() as u64);
        }
        if migrated(days) {
            self.migrated_uri_rs += 1;
        }
    }

    /// Merges another part's facts (the sweep's threads each keep one).
    pub fn absorb(&mut self, other: Calibration) {
        self.uri_rs += other.uri_rs;
        self.days = self.days.max(other.days);
        self.always_empty += other.always_empty;
        self.never_shrink += other.never_shrink;
        for (k, n) in other.changes {
            *self.changes.entry(k).or_default() += n;
        }
        self.interval_sum += other.interval_sum;
        self.interval_n += other.interval_n;
        for (a, b) in self.cases.iter_mut().zip(other.cases) {
            *a += b;
        }
        self.largest = self.largest.max(other.largest);
        self.transitions += other.transitions;
        self.shrinking += other.shrinking;
        if self.failed_per_day.len() < other.failed_per_day.len() {
            self.failed_per_day.resize(other.failed_per_day.len(), 0);
        }
        for (a, b) in self.failed_per_day.iter_mut().zip(other.failed_per_day) {
            *a += b;
        }
        self.loose_collisions += other.loose_collisions;
        self.migrated_uri_rs += other.migrated_uri_rs;
        self.sizes.extend(other.sizes);
    }

    fn archived(&self) -> u64 {
        self.uri_rs - self.always_empty
    }

    /// Share of the archived URI-Rs that never shrink.
    pub fn never_shrink_share(&self) -> f64 {
        ratio(self.never_shrink, self.archived())
    }

    /// Share of the archived URI-Rs' day-to-day transitions in which m did not fall (the
    /// paper's 80.2% taken literally, per download; see [`figures`]).
    pub fn not_shrinking_transition_share(&self) -> f64 {
        ratio(self.transitions - self.shrinking, self.transitions)
    }

    /// Mean change interval in days (D / k averaged over URI-Rs with k ≥ 1).
    pub fn mean_interval(&self) -> f64 {
        if self.interval_n == 0 {
            0.0
        } else {
            self.interval_sum / self.interval_n as f64
        }
    }

    /// The most frequent number of changes among URI-Rs that changed.
    pub fn mode_changes(&self) -> Option<u32> {
        self.changes
            .iter()
            .filter(|(&k, _)| k > 0)
            .max_by_key(|(&k, &n)| (n, std::cmp::Reverse(k)))
            .map(|(&k, _)| k)
    }

    /// The most frequent change (case 2–7).
    pub fn most_frequent_change(&self) -> Option<usize> {
        (2..8)
            .filter(|&c| self.cases[c] > 0)
            .max_by_key(|&c| (self.cases[c], std::cmp::Reverse(c)))
    }

    /// Days on which at least half of the observations failed, as ranges.
    pub fn outages(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (t, &n) in self.failed_per_day.iter().enumerate() {
            if self.uri_rs > 0 && 2 * n >= self.uri_rs {
                let t = t as u32;
                match out.last_mut() {
                    Some((_, end)) if *end + 1 == t => *end = t,
                    _ => out.push((t, t)),
                }
            }
        }
        out
    }

    /// Failed observations in all.
    pub fn failed(&self) -> u64 {
        self.failed_per_day.iter().sum()
    }

    /// Percentile `p` (0–100) of the last day's sizes.
    pub fn size_percentile(&self, p: f64) -> u64 {
        let mut s = self.sizes.clone();
        s.sort_unstable();
        if s.is_empty() {
            return 0;
        }
        let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
        s[i.min(s.len() - 1)]
    }

    pub fn mean_size(&self) -> f64 {
        ratio(self.sizes.iter().sum(), self.sizes.len() as u64)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Whether some loose key was listed under two different URI-Ms on different days.
fn migrated(days: &[LiveDay]) -> bool {
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return false;
    };
    let before: std::collections::HashMap<_, _> = first
        .mementos
        .iter()
        .map(|m| ((m.archive.as_str(), m.datetime), &*m.uri_m))
        .collect();
    last.mementos.iter().any(|m| {
        before
            .get(&(m.archive.as_str(), m.datetime))
            .is_some_and(|u| *u != m.uri_m)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::LiveMemento;

    fn day(t: u32, sizes: &[(&str, usize)], carried: bool) -> LiveDay {
        let base = day0() - Duration::days(1000);
        LiveDay {
            line: 0,
            uri_r: "http://a.example/".to_string(),
            day: t,
            carried,
            mementos: sizes
                .iter()
                .flat_map(|&(a, n)| {
                    (0..n).map(move |k| LiveMemento {
                        archive: a.to_string(),
                        datetime: base + Duration::days(k as i64),
                        uri_m: format!("http://{a}/{k}"),
                    })
                })
                .collect(),
        }
    }

    #[test]
    fn cases_changes_and_shrinking_are_counted_per_transition() {
        let mut c = Calibration::new();
        // 3 → 4 (case 2) → archive b lost (case 6) → b back (case 3) → same (case 1).
        c.push_uri(&[
            day(0, &[("a", 3)], false),
            day(1, &[("a", 4)], false),
            day(2, &[("a", 4), ("b", 2)], false),
            day(3, &[("a", 4)], false),
            day(4, &[("a", 4)], true),
        ]);
        c.push_uri(&[day(0, &[], false), day(1, &[], false)]);
        assert_eq!(c.uri_rs, 2);
        assert_eq!(c.always_empty, 1);
        assert_eq!(
            (c.cases[1], c.cases[2], c.cases[3], c.cases[6]),
            (1, 1, 1, 1)
        );
        assert_eq!(c.never_shrink, 0);
        assert_eq!(c.mode_changes(), Some(3));
        assert!((c.mean_interval() - 5.0 / 3.0).abs() < 1e-9);
        assert_eq!(c.failed(), 1);
    }
}
