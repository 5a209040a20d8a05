//! A configured policy: its kind, matching, TTL, redaction and stale rules, and what follows
//! from them alone (whether it caches at all, when a TTL started now ends).

use super::names::{Match, PolicyKind};
use crate::timemap::credit::Credits;
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

/// A configured policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub kind: PolicyKind,
    pub matching: Match,
    /// None = infinite. Zero (or negative) refetches on every request.
    pub ttl: Option<Duration>,
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

    /// The end of freshness for a TTL (re)started at `now`; None = forever.
    pub fn fresh_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match (self.kind, self.ttl) {
            (PolicyKind::Forever, _) | (_, None) => None,
            (_, Some(ttl)) => now.checked_add_signed(ttl.max(Duration::zero())),
        }
    }
}
