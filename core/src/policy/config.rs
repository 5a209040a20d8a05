//! A configured policy: its kind, matching, TTL, redaction and stale rules, and what follows
//! from them alone (whether it caches at all, when a TTL started now ends).

use super::entry::{Entry, HistoryItem};
use super::names::{Match, PolicyKind};
use super::ttl::TtlMode;
use crate::timemap::credit::Credits;
use chrono::{DateTime, Duration, Utc};
use std::collections::VecDeque;
use std::sync::Arc;

/// A configured policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub kind: PolicyKind,
    pub matching: Match,
    /// None = infinite. Zero (or negative) refetches on every request. Unused when `ttl_mode`
    /// is adaptive.
    pub ttl: Option<Duration>,
    /// One TTL for all entries, or each its own from its history.
    pub ttl_mode: TtlMode,
    /// `merge`: successful answers without a memento before it is dropped.
    pub redaction_confirmations: u32,
    /// `merge`: and the least time between the first of them and the drop.
    pub redaction_grace: Duration,
    /// When no archive answers a refresh, serve the stored entry (stale-if-error, RFC 5861)
    /// rather than the outage.
    pub stale_if_error: bool,
    /// How long past its TTL an entry is still served while it is refreshed behind the
    /// request (stale-while-revalidate, RFC 5861); zero = never.
    pub stale_while_revalidate: Duration,
    /// Whose mementos an aggregator's are: loose keys name the credited archive.
    pub credits: Arc<Credits>,
}

impl Default for Policy {
    /// The paper's optimum: conditional, loose, 15 days; an outage serves what is stored.
    fn default() -> Self {
        Policy {
            kind: PolicyKind::Conditional,
            matching: Match::Loose,
            ttl: Some(Duration::days(15)),
            ttl_mode: TtlMode::Fixed,
            redaction_confirmations: 2,
            redaction_grace: Duration::days(7),
            stale_if_error: true,
            stale_while_revalidate: Duration::zero(),
            credits: Arc::default(),
        }
    }
}

impl Policy {
    /// Whether this policy keeps anything at all: `none` is the one that does not (the one
    /// place that says so).
    pub fn caches(&self) -> bool {
        self.kind != PolicyKind::None
    }

    /// The end of freshness for a fixed TTL (re)started at `now`; None = forever.
    pub fn fresh_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match (self.kind, self.ttl) {
            (PolicyKind::Forever, _) | (_, None) => None,
            (_, Some(ttl)) => now.checked_add_signed(ttl.max(Duration::zero())),
        }
    }

    /// The end of freshness for an entry checked at `now` that holds mementos dated
    /// `datetimes` and whose decisions are `history`: [`Policy::fresh_until`] in fixed mode
    /// (the datetimes are then not read), the entry's own TTL in adaptive mode.
    pub fn fresh_until_for(
        &self,
        datetimes: impl IntoIterator<Item = DateTime<Utc>>,
        history: &VecDeque<HistoryItem>,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        match (self.kind, self.ttl_mode) {
            (_, TtlMode::Fixed) | (PolicyKind::Forever, _) => self.fresh_until(now),
            (_, TtlMode::Adaptive(a)) => now.checked_add_signed(a.ttl(datetimes, history, now)),
        }
    }

    /// [`Policy::fresh_until_for`] of a built entry, checked at `now`.
    pub fn entry_fresh_until(&self, e: &Entry, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let datetimes = e
            .contributions
            .iter()
            .flat_map(|c| c.mementos.iter().map(|m| m.datetime));
        self.fresh_until_for(datetimes, &e.history, now)
    }

    /// The TTL an entry last checked at `checked_at`, whose stored end of freshness is
    /// `fresh_until`, is judged by now; None = forever. Fixed: this policy's TTL, so a changed
    /// configuration applies to entries already cached. Adaptive: the stored TTL (one chosen
    /// for the entry when it was checked; forever for an entry stored without one) within the
    /// current `[min, max]`.
    pub fn effective_ttl(
        &self,
        checked_at: DateTime<Utc>,
        fresh_until: Option<DateTime<Utc>>,
    ) -> Option<Duration> {
        match (self.kind, self.ttl_mode, self.ttl) {
            (PolicyKind::Forever, _, _) => None,
            (_, TtlMode::Adaptive(a), _) => {
                Some(a.clamp(fresh_until.map_or(a.max, |u| u.signed_duration_since(checked_at))))
            }
            (_, TtlMode::Fixed, None) => None,
            (_, TtlMode::Fixed, Some(ttl)) => Some(ttl.max(Duration::zero())),
        }
    }
}
