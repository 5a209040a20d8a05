//! The cache policy as pure functions: is an entry fresh (and may a stale one still be
//! served), and given the cached entry and a fresh fan-out, what to store and what to serve.
//! The clock is an argument, never read, so the server and the simulation harness run the very
//! same decisions.

mod build;
mod case;
mod names;
mod tally;

pub use case::{classify, ChangeCase};
pub use names::{Match, ParseNameError, PolicyKind};
pub use tally::counts;
pub(crate) use tally::{entry_keys, tally};

use super::entry::{Entry, HistoryItem};
use crate::timemap::answer::Fetch;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fmt;
use tally::{fetch_keys, same_loose_set};

/// A configured policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        }
    }
}

/// Whether a request can be answered from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Nothing cached (or policy `none`): fetch.
    Miss,
    /// Serve the entry without asking the archives.
    Fresh,
    /// Past its TTL but within the stale-while-revalidate window: serve the entry, and refetch
    /// behind the request (then `decide`).
    Stale,
    /// Past its TTL and any stale window: refetch, then `decide`, before answering.
    Expired,
}

/// What a decision did to the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// First store of this URI-R.
    Stored,
    /// The fresh fetch replaced the cached content.
    Replaced,
    /// The cached content stays (its TTL restarted).
    Kept,
    /// `merge` changed the served TimeMap.
    Merged,
    /// Policy `none`: nothing is stored.
    NotStored,
    /// No archive answered: nothing changed.
    Unavailable,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Stored => "stored",
            Action::Replaced => "replaced",
            Action::Kept => "kept",
            Action::Merged => "merged",
            Action::NotStored => "not_stored",
            Action::Unavailable => "unavailable",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of [`Policy::decide`]: what to write and what to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No archive answered, which tells nothing about the TimeMap: the cache is untouched.
    /// `serve_stale`: answer with the stored entry (stale-if-error, and there is one);
    /// otherwise the outage itself is the answer.
    Unavailable { serve_stale: bool },
    /// Policy `none`: nothing is stored; the fetch is the answer.
    Pass,
    /// Write `entry` and answer with it. `case` is None on a first store.
    Store {
        case: Option<ChangeCase>,
        action: Action,
        entry: Entry,
    },
}

impl Decision {
    /// What the decision did to the cache, as `X-Cache-Action` says it.
    pub fn action(&self) -> Action {
        match self {
            Decision::Unavailable { .. } => Action::Unavailable,
            Decision::Pass => Action::NotStored,
            Decision::Store { action, .. } => *action,
        }
    }

    /// The Table 1 case, when a cached entry was compared with the fetch.
    pub fn case(&self) -> Option<ChangeCase> {
        match self {
            Decision::Store { case, .. } => *case,
            Decision::Unavailable { .. } | Decision::Pass => None,
        }
    }

    /// What the answer is made of.
    pub fn serve(&self) -> Serve {
        match self {
            Decision::Unavailable { serve_stale: true } | Decision::Store { .. } => Serve::Stored,
            Decision::Unavailable { serve_stale: false } | Decision::Pass => Serve::Fresh,
        }
    }

    /// The entry to write, if any.
    pub fn entry(&self) -> Option<&Entry> {
        match self {
            Decision::Store { entry, .. } => Some(entry),
            Decision::Unavailable { .. } | Decision::Pass => None,
        }
    }

    /// The entry to write, if any, taken out of the decision.
    pub fn into_entry(self) -> Option<Entry> {
        match self {
            Decision::Store { entry, .. } => Some(entry),
            Decision::Unavailable { .. } | Decision::Pass => None,
        }
    }
}

/// What an answer is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    /// The fresh fetch as it is (policy `none`, or an outage with nothing stored to serve).
    Fresh,
    /// The entry the decision stores, or the stored one when it stores nothing.
    Stored,
}

impl Policy {
    /// Can `entry` answer a request at `now`? TTL n: fresh while `now <= checked_at + n` (the
    /// TTL restarts at every refetch), so with daily requests an entry fetched on day d serves
    /// days d+1 … d+n. Judged with this policy's TTL rather than the stored `fresh_until`, so a
    /// changed configuration applies to entries already cached.
    /// Past the TTL, an entry within `stale_while_revalidate` of it is [`Freshness::Stale`].
    pub fn freshness(&self, entry: Option<&Entry>, now: DateTime<Utc>) -> Freshness {
        let Some(entry) = entry else {
            return Freshness::Miss;
        };
        if !self.caches() {
            return Freshness::Miss;
        }
        let ttl = match (self.kind, self.ttl) {
            (PolicyKind::Forever, _) | (_, None) => return Freshness::Fresh,
            (_, Some(ttl)) => ttl.max(Duration::zero()),
        };
        // Past the end of representable time counts as forever.
        let Some(until) = entry.checked_at.checked_add_signed(ttl) else {
            return Freshness::Fresh;
        };
        if now <= until && ttl > Duration::zero() {
            return Freshness::Fresh;
        }
        let window = self.stale_while_revalidate;
        let within = until
            .checked_add_signed(window)
            .is_none_or(|end| now <= end);
        if window > Duration::zero() && within {
            Freshness::Stale
        } else {
            Freshness::Expired
        }
    }

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

    /// Decides what a fresh fetch does to the cache. `cached` is the current entry, if any.
    pub fn decide(&self, cached: Option<&Entry>, fresh: &Fetch, now: DateTime<Utc>) -> Decision {
        // An outage tells us nothing about the TimeMap: never let it touch the cache.
        if !fresh.answered() {
            return Decision::Unavailable {
                serve_stale: cached.is_some() && self.stale_if_error,
            };
        }
        if !self.caches() {
            return Decision::Pass;
        }
        let Some(cached) = cached else {
            return self.decide_first(fresh.clone(), now);
        };

        let fresh_tally = tally(fetch_keys(fresh));
        let (a2, m2) = fresh_tally.counts(self.matching);
        let case = classify(cached.archives, cached.count(self.matching), a2, m2);
        let same_set = (case == ChangeCase::C1).then(|| same_loose_set(cached, fresh));

        let (action, entry) = match self.kind {
            PolicyKind::Unconditional => {
                let e = self.replaced(cached, fresh, now, case, same_set);
                (Action::Replaced, e)
            }
            PolicyKind::Conditional if case.is_better() => {
                let e = self.replaced(cached, fresh, now, case, same_set);
                (Action::Replaced, e)
            }
            PolicyKind::Merge => self.merged(cached, fresh, now, case, same_set),
            // `forever` only gets here when the caller refetched anyway (an admin refresh):
            // like a conditional non-improvement, it keeps what it has. (`none` returned above.)
            PolicyKind::Conditional | PolicyKind::Forever | PolicyKind::None => {
                let mut e = cached.clone();
                // The content stays, but each archive's status is what it said this time: a
                // kept answer must not claim an archive is fine when its refetch just failed.
                e.note_answers(fresh);
                e.checked_at = now;
                e.fresh_until = self.fresh_until(now);
                e.push_history(HistoryItem {
                    at: now,
                    case: Some(case),
                    action: Action::Kept,
                    same_set,
                });
                (Action::Kept, e)
            }
        };
        Decision::Store {
            case: Some(case),
            action,
            entry,
        }
    }

    /// [`Policy::decide`] with nothing cached, taking the fetch: its contributions move into
    /// the entry uncopied (a first fetch of millions of mementos is not held twice).
    pub fn decide_first(&self, fresh: Fetch, now: DateTime<Utc>) -> Decision {
        if !fresh.answered() {
            return Decision::Unavailable { serve_stale: false };
        }
        if !self.caches() {
            return Decision::Pass;
        }
        // A first fetch is stored even when empty: that is what case 5 later recovers from.
        let entry = self.entry_from_fetch(fresh, now, VecDeque::new(), None, Action::Stored);
        Decision::Store {
            case: None,
            action: Action::Stored,
            entry,
        }
    }
}

#[cfg(test)]
mod tests;
