//! The cache policy as pure functions: is an entry fresh (and may a stale one still be
//! served), and given the cached entry and a fresh fan-out, what to store and what to serve.
//! The clock is an argument, never read, so the server and the simulation harness run the very
//! same decisions.

mod build;
mod case;
mod config;
mod decision;
pub mod entry;
mod names;
mod revision;
mod tally;
mod ttl;

pub use case::{classify, ChangeCase};
pub use config::Policy;
pub use decision::{Decision, Freshness, Serve};
pub use names::{Action, Match, ParseNameError, PolicyKind};
pub use revision::revision;
pub use tally::counts;
pub use ttl::{gain_rate, Adaptive, TtlMode, RECENT};

use crate::timemap::answer::Fetch;
use build::{same_loose_set, with_skipped_kept};
use chrono::{DateTime, Duration, Utc};
use entry::{Entry, HistoryItem};
use std::collections::VecDeque;
use tally::{fetch_keys, tally};

impl Policy {
    /// Can `entry` answer a request at `now`? TTL n: fresh while `now <= checked_at + n` (the
    /// TTL restarts at every refetch), so with daily requests an entry fetched on day d serves
    /// days d+1 … d+n. A fixed TTL is this policy's rather than the stored `fresh_until`, so a
    /// changed configuration applies to entries already cached; an adaptive one is the stored
    /// TTL within the current bounds ([`Policy::effective_ttl`]).
    /// Past the TTL, an entry within `stale_while_revalidate` of it is [`Freshness::Stale`].
    pub fn freshness(&self, entry: Option<&Entry>, now: DateTime<Utc>) -> Freshness {
        self.freshness_checked(entry.map(|e| (e.checked_at, e.fresh_until)), now)
    }

    /// [`Policy::freshness`] of an entry last checked at `checked_at` with its stored
    /// `fresh_until` (None: no entry), the two facts it reads: for an answer kept without its
    /// entry (a huge entry's head).
    pub fn freshness_checked(
        &self,
        checked: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
        now: DateTime<Utc>,
    ) -> Freshness {
        let Some((checked_at, fresh_until)) = checked else {
            return Freshness::Miss;
        };
        if !self.caches() {
            return Freshness::Miss;
        }
        let Some(ttl) = self.effective_ttl(checked_at, fresh_until) else {
            return Freshness::Fresh;
        };
        // Past the end of representable time counts as forever.
        let Some(until) = checked_at.checked_add_signed(ttl) else {
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
        // What the archives said, for the record; what is weighed and stored keeps the cached
        // part of each archive routing skipped.
        let answers = fresh;
        let weighed = with_skipped_kept(cached, answers);
        let fresh: &Fetch = &weighed;

        let fresh_tally = tally(fetch_keys(fresh, &self.credits));
        let (a2, m2) = fresh_tally.counts(self.matching);
        let case = classify(cached.archives, cached.count(self.matching), a2, m2);
        let same_set =
            (case == ChangeCase::C1).then(|| same_loose_set(cached, fresh, &self.credits));

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
                e.note_answers(answers);
                e.checked_at = now;
                e.push_history(HistoryItem {
                    at: now,
                    case: Some(case),
                    action: Action::Kept,
                    same_set,
                });
                e.fresh_until = self.entry_fresh_until(&e, now);
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
