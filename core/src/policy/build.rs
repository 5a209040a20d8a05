//! The entries a decision writes: the fetch as it is (a first store, a replacement) or merged
//! into the cached entry per archive, with the redaction rule for mementos no longer listed.

use super::case::ChangeCase;
use super::config::Policy;
use super::entry::{Entry, HistoryItem, ENTRY_FORMAT_VERSION};
use super::names::{Action, Match};
use super::tally::{fetch_keys, same_served_keys};
use crate::timemap::answer::{Absence, Contribution, Fetch, ListedMemento};
use crate::timemap::credit::Credits;
use crate::timemap::identity::memento_key;
use crate::timemap::MementoDatetime;
use chrono::{DateTime, Utc};
use rustc_hash::FxHashSet;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

impl Policy {
    pub(super) fn replaced(
        &self,
        cached: &Entry,
        fresh: &Fetch,
        now: DateTime<Utc>,
        case: ChangeCase,
        same_set: Option<bool>,
    ) -> Entry {
        self.entry_from_fetch(
            fresh.clone(),
            now,
            cached.history.clone(),
            Some((case, same_set)),
            Action::Replaced,
        )
    }

    /// A new entry holding exactly the fetch; `history` continues the old entry's.
    pub(super) fn entry_from_fetch(
        &self,
        fresh: Fetch,
        now: DateTime<Utc>,
        history: VecDeque<HistoryItem>,
        case: Option<(ChangeCase, Option<bool>)>,
        action: Action,
    ) -> Entry {
        let mut e = Entry {
            version: ENTRY_FORMAT_VERSION,
            uri_r: fresh.uri_r,
            contributions: fresh.archives,
            fetched_at: fresh.at,
            checked_at: now,
            fresh_until: self.fresh_until(now),
            loose: 0,
            strict: 0,
            archives: 0,
            history,
        };
        e.recount(&self.credits);
        e.push_history(HistoryItem {
            at: now,
            case: case.map(|(c, _)| c),
            action,
            same_set: case.and_then(|(_, s)| s),
        });
        e.fresh_until = self.entry_fresh_until(&e, now);
        e
    }

    /// `merge`: per archive, in the fetch's order, then the cached archives it did not list.
    pub(super) fn merged(
        &self,
        cached: &Entry,
        fresh: &Fetch,
        now: DateTime<Utc>,
        case: ChangeCase,
        same_set: Option<bool>,
    ) -> (Action, Entry) {
        let mut by_archive: HashMap<&str, usize> =
            HashMap::with_capacity(cached.contributions.len());
        for (i, c) in cached.contributions.iter().enumerate() {
            by_archive.entry(c.archive.as_str()).or_insert(i);
        }
        let mut used = vec![false; cached.contributions.len()];
        let mut contributions = Vec::with_capacity(fresh.archives.len().max(used.len()));
        for r in &fresh.archives {
            let prev = by_archive
                .get(r.archive.as_str())
                .copied()
                .filter(|&i| !used[i]);
            let c = match prev {
                Some(i) => {
                    used[i] = true;
                    let c = &cached.contributions[i];
                    if r.answer.status.answered() {
                        self.refresh_contribution(c, r, now)
                    } else {
                        // We could not learn what it holds: what it held still stands, and
                        // its last_error says it failed this time.
                        let mut kept = c.after_failure(&r.answer, fresh.at);
                        if r.answer.fallback.is_some() {
                            // A fallback's few mementos are real: added, never a reason to mark
                            // the others absent.
                            add_new(&mut kept.mementos, &r.mementos, self.matching);
                        }
                        kept
                    }
                }
                None => r.clone(),
            };
            contributions.push(c);
        }
        for (c, _) in cached
            .contributions
            .iter()
            .zip(&used)
            .filter(|(_, &used)| !used)
        {
            contributions.push(c.clone());
        }

        let mut e = cached.clone();
        e.contributions = contributions;
        e.checked_at = now;
        e.recount(&self.credits);
        let action = if same_served_keys(&cached.timemap(), &e.timemap()) {
            Action::Kept
        } else {
            e.fetched_at = fresh.at;
            Action::Merged
        };
        e.push_history(HistoryItem {
            at: now,
            case: Some(case),
            action,
            same_set,
        });
        e.fresh_until = self.entry_fresh_until(&e, now);
        (action, e)
    }

    /// An archive that answered: its fresh mementos, plus the cached ones it no longer lists,
    /// marked absent until the redaction rule drops them.
    fn refresh_contribution(
        &self,
        cached: &Contribution,
        fresh: &Contribution,
        now: DateTime<Utc>,
    ) -> Contribution {
        // A cached memento the fresh listing still covers under the matching in force is
        // superseded by it: loose, a memento at its datetime (another URI-M there is a
        // migration); strict, its own URI-M. The others are absent until redaction drops them.
        let covered = Covered::of(self.matching, &fresh.mementos);
        let mut mementos: Vec<ListedMemento> = fresh.mementos.clone();
        for m in cached.mementos.iter().filter(|m| !covered.covers(m)) {
            let absence = match m.absent.as_deref() {
                Some(a) => Absence {
                    since: a.since,
                    confirmations: a.confirmations.saturating_add(1),
                },
                None => Absence {
                    since: now,
                    confirmations: 1,
                },
            };
            let redacted = absence.confirmations >= self.redaction_confirmations
                && now.signed_duration_since(absence.since) >= self.redaction_grace;
            if !redacted {
                mementos.push(ListedMemento {
                    uri_m: m.uri_m.clone(),
                    datetime: m.datetime,
                    absent: Some(Box::new(absence)),
                });
            }
        }
        Contribution {
            archive: fresh.archive.clone(),
            answer: fresh.answer.clone(),
            fetched_at: fresh.fetched_at,
            mementos,
            // None for an answer just listed; a skipped archive's kept contribution
            // ([`with_skipped_kept`]) keeps the skip as its last_error.
            last_error: fresh.last_error.clone(),
            // Its listed mementos are the fresh answer's: so are its validators.
            listing: fresh.listing.clone(),
        }
    }
}

/// The fetch as the policy weighs it against `cached`: an archive routing did not ask keeps
/// its cached contribution (the skip as its `last_error`), as a failed archive does under
/// `merge`. So a routed fan-out is never read as that archive losing its mementos: no case 6
/// from it, and no replacement (conditional, unconditional) that would drop them. Borrowed
/// unchanged when no skipped archive held anything, nearly always: routing skips archives
/// that hold nothing there.
pub(super) fn with_skipped_kept<'a>(cached: &Entry, fresh: &'a Fetch) -> Cow<'a, Fetch> {
    let kept = |r: &Contribution| {
        if !r.answer.status.skipped() {
            return None;
        }
        cached
            .contributions
            .iter()
            .find(|c| c.archive == r.archive && !c.mementos.is_empty())
    };
    if !fresh.archives.iter().any(|r| kept(r).is_some()) {
        return Cow::Borrowed(fresh);
    }
    let archives = fresh
        .archives
        .iter()
        .map(|r| match kept(r) {
            Some(c) => c.after_failure(&r.answer, fresh.at),
            None => r.clone(),
        })
        .collect();
    Cow::Owned(Fetch {
        uri_r: fresh.uri_r.clone(),
        at: fresh.at,
        archives,
    })
}

/// The keys of a listing under a matching, to ask whether it covers a memento: the datetime
/// under loose (the paper's (archive, datetime) within one archive), the URI-M under strict
/// (as [`crate::timemap::identity`] compares them).
enum Covered<'a> {
    Datetimes(FxHashSet<MementoDatetime>),
    UriMs(FxHashSet<Cow<'a, str>>),
}

impl<'a> Covered<'a> {
    fn of(matching: Match, listed: &'a [ListedMemento]) -> Covered<'a> {
        match matching {
            Match::Loose => Covered::Datetimes(listed.iter().map(|m| m.datetime).collect()),
            Match::Strict => Covered::UriMs(listed.iter().map(|m| memento_key(&m.uri_m)).collect()),
        }
    }

    fn covers(&self, m: &ListedMemento) -> bool {
        match self {
            Covered::Datetimes(d) => d.contains(&m.datetime),
            Covered::UriMs(u) => u.contains(&memento_key(&m.uri_m)),
        }
    }
}

/// Adds to `kept` (oldest first) the mementos of `more` it does not cover under `matching`.
fn add_new(kept: &mut Vec<ListedMemento>, more: &[ListedMemento], matching: Match) {
    let covered = Covered::of(matching, kept);
    let new: Vec<ListedMemento> = more
        .iter()
        .filter(|m| !covered.covers(m))
        .cloned()
        .collect();
    if !new.is_empty() {
        kept.extend(new);
        kept.sort_by_key(|m| m.datetime);
    }
}

/// Case 1 can hide a swap (one memento gone, another new): are the loose key sets equal?
pub(super) fn same_loose_set(cached: &Entry, fresh: &Fetch, credits: &Credits) -> bool {
    let old: FxHashSet<(Cow<str>, MementoDatetime)> =
        cached.keys(credits).map(|(a, d, _)| (a, d)).collect();
    let new: FxHashSet<(Cow<str>, MementoDatetime)> =
        fetch_keys(fresh, credits).map(|(a, d, _)| (a, d)).collect();
    old == new
}
