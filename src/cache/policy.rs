//! The cache policy as pure functions: is an entry fresh, and given the cached entry and a fresh
//! fan-out, what to store and what to serve. The clock is an argument, never read, so the server
//! and the simulation harness run the very same decisions.

use super::entry::{
    Absence, ArchiveReport, CachedMemento, Contribution, Entry, HistoryItem, ENTRY_FORMAT_VERSION,
};
use crate::timemap::aggregate::{Aggregate, ArchiveStatus};
use crate::timemap::{LinkMemento, MementoDatetime, TimeMap};
use chrono::{DateTime, Duration, Utc};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::str::FromStr;

/// One fan-out's raw result, per archive, before any policy has a say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOutcome {
    /// The URI-R asked for: a first store needs it for the entry.
    pub uri_r: String,
    pub at: DateTime<Utc>,
    /// In the order the fan-out listed the archives.
    pub archives: Vec<ArchiveResult>,
}

/// What one archive answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveResult {
    pub archive: String,
    pub status: ArchiveStatus,
    pub http_status: Option<u16>,
    pub mementos: Vec<LinkMemento>,
    pub report: ArchiveReport,
}

impl FetchOutcome {
    /// Splits an aggregate's TimeMap back into per-archive answers, in the outcomes' order.
    /// A memento whose archive has no outcome (should not happen with our fan-out) gets an
    /// `ok` result of its own at the end rather than being lost.
    pub fn from_aggregate(agg: &Aggregate) -> FetchOutcome {
        let mut archives: Vec<ArchiveResult> = agg
            .outcomes
            .iter()
            .map(|o| ArchiveResult {
                archive: o.id.clone(),
                status: o.status,
                http_status: o.http_status,
                report: ArchiveReport {
                    detail: o.detail.clone(),
                    skipped: o.skipped,
                    pages: o.pages,
                    elapsed_ms: o.elapsed_ms,
                },
                // The outcome's count is a hint; the TimeMap bounds it.
                mementos: Vec::with_capacity(o.mementos.min(agg.timemap.len())),
            })
            .collect();
        // Borrowed from `agg`, so grouping a 10,000-memento TimeMap allocates no key strings.
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(archives.len());
        for (i, o) in agg.outcomes.iter().enumerate() {
            index.entry(o.id.as_str()).or_insert(i);
        }
        for m in &agg.timemap.mementos {
            let i = match index.get(&*m.archive) {
                Some(&i) => i,
                None => {
                    archives.push(ArchiveResult {
                        archive: m.archive.to_string(),
                        status: ArchiveStatus::Ok,
                        http_status: None,
                        mementos: Vec::new(),
                        report: ArchiveReport::default(),
                    });
                    index.insert(&m.archive, archives.len() - 1);
                    archives.len() - 1
                }
            };
            archives[i].mementos.push(LinkMemento {
                uri_m: m.uri_m.clone(),
                datetime: m.datetime,
            });
        }
        FetchOutcome {
            uri_r: agg.uri_r.clone(),
            at: agg.fetched_at,
            archives,
        }
    }

    /// True when at least one archive gave a usable answer: the fetch is a TimeMap (maybe a
    /// worse one), not an outage.
    pub fn answered(&self) -> bool {
        self.archives.iter().any(|a| a.status.answered())
    }

    /// (a, m) of what the archives listed, under `matching`.
    pub fn counts(&self, matching: Match) -> (usize, usize) {
        tally(fetch_keys(self)).counts(matching)
    }

    /// The fetch as a client would have been served it without a cache.
    pub fn timemap(&self) -> TimeMap {
        crate::timemap::merge::merge(
            self.archives
                .iter()
                .map(|r| crate::timemap::merge::Contribution {
                    archive: r.archive.as_str().into(),
                    mementos: r.mementos.clone(),
                })
                .collect(),
        )
    }
}

/// A row of the spec's Table 1 (completed): how a fresh TimeMap T' compares to the cached T.
/// Serialised as its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
#[repr(u8)]
pub enum ChangeCase {
    /// a' = a, m' = m: unchanged in size.
    C1 = 1,
    /// a' = a, m' > m: gained mementos.
    C2 = 2,
    /// a' > a, m' > m: gained archive(s) and mementos.
    C3 = 3,
    /// a' < a, m' > m: lost archive(s), still gained mementos.
    C4 = 4,
    /// m = 0, m' > 0: a (false) empty TimeMap became non-empty.
    C5 = 5,
    /// a' < a, m' ≤ m: lost archive(s), no gain.
    C6 = 6,
    /// a' ≥ a, m' < m (or a' > a with m' = m): lost mementos without losing an archive.
    C7 = 7,
}

impl ChangeCase {
    pub const ALL: [ChangeCase; 7] = [
        ChangeCase::C1,
        ChangeCase::C2,
        ChangeCase::C3,
        ChangeCase::C4,
        ChangeCase::C5,
        ChangeCase::C6,
        ChangeCase::C7,
    ];

    pub fn number(self) -> u8 {
        self as u8
    }

    /// Cases 2–5 gain mementos: the ones `conditional` replaces on.
    pub fn is_better(self) -> bool {
        matches!(
            self,
            ChangeCase::C2 | ChangeCase::C3 | ChangeCase::C4 | ChangeCase::C5
        )
    }
}

impl From<ChangeCase> for u8 {
    fn from(c: ChangeCase) -> u8 {
        c.number()
    }
}

impl TryFrom<u8> for ChangeCase {
    type Error = String;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        ChangeCase::ALL
            .get(usize::from(n).wrapping_sub(1))
            .copied()
            .ok_or_else(|| format!("no Table 1 case {n}: expected 1 to 7"))
    }
}

impl fmt::Display for ChangeCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// Classifies the fresh (a', m') against the cached (a, m): exactly one case for every input.
/// Case 5 comes before 2–4, as the spec says.
pub fn classify(a: usize, m: usize, a2: usize, m2: usize) -> ChangeCase {
    use std::cmp::Ordering::*;
    if m == 0 && m2 > 0 {
        return ChangeCase::C5;
    }
    match (a2.cmp(&a), m2.cmp(&m)) {
        (Equal, Equal) => ChangeCase::C1,
        (Equal, Greater) => ChangeCase::C2,
        (Greater, Greater) => ChangeCase::C3,
        (Less, Greater) => ChangeCase::C4,
        (Less, _) => ChangeCase::C6,
        // a' ≥ a and m' < m, or a' > a with m' = m.
        (Equal | Greater, Less) | (Greater, Equal) => ChangeCase::C7,
    }
}

/// Which replacement policy the cache runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// No cache: fetch on every request, store nothing (MemGator's behaviour).
    None,
    /// Store the first fetch and never refetch (the 2013 aggregator, TTL ∞).
    Forever,
    /// Replace with whatever the refetch brought.
    Unconditional,
    /// Replace only when the refetch is better (cases 2–5); the paper's policy.
    Conditional,
    /// Keep each archive's contribution; drop a memento only after confirmed absence.
    Merge,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 5] = [
        PolicyKind::None,
        PolicyKind::Forever,
        PolicyKind::Unconditional,
        PolicyKind::Conditional,
        PolicyKind::Merge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::None => "none",
            PolicyKind::Forever => "forever",
            PolicyKind::Unconditional => "unconditional",
            PolicyKind::Conditional => "conditional",
            PolicyKind::Merge => "merge",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A config word that names no policy or match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{got}`: expected one of {expected}")]
pub struct ParseNameError {
    pub what: &'static str,
    pub got: String,
    pub expected: &'static str,
}

impl FromStr for PolicyKind {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ParseNameError {
                what: "cache policy",
                got: s.to_string(),
                expected: "none, forever, unconditional, conditional, merge",
            })
    }
}

/// How two mementos are recognised as the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    /// (archive, datetime): survives URI-M migrations. The paper's Loose Policy, the default.
    Loose,
    /// The URI-M itself.
    Strict,
}

impl Match {
    pub fn as_str(self) -> &'static str {
        match self {
            Match::Loose => "loose",
            Match::Strict => "strict",
        }
    }
}

impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Match {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "loose" => Ok(Match::Loose),
            "strict" => Ok(Match::Strict),
            _ => Err(ParseNameError {
                what: "match",
                got: s.to_string(),
                expected: "loose, strict",
            }),
        }
    }
}

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
    pub fn decide(
        &self,
        cached: Option<&Entry>,
        fresh: &FetchOutcome,
        now: DateTime<Utc>,
    ) -> Decision {
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
            // A first fetch is stored even when empty: that is what case 5 later recovers from.
            let entry = self.entry_from_fetch(fresh, now, VecDeque::new(), None, Action::Stored);
            return Decision::Store {
                case: None,
                action: Action::Stored,
                entry,
            };
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

    fn replaced(
        &self,
        cached: &Entry,
        fresh: &FetchOutcome,
        now: DateTime<Utc>,
        case: ChangeCase,
        same_set: Option<bool>,
    ) -> Entry {
        self.entry_from_fetch(
            fresh,
            now,
            cached.history.clone(),
            Some((case, same_set)),
            Action::Replaced,
        )
    }

    /// A new entry holding exactly the fetch; `history` continues the old entry's.
    fn entry_from_fetch(
        &self,
        fresh: &FetchOutcome,
        now: DateTime<Utc>,
        history: VecDeque<HistoryItem>,
        case: Option<(ChangeCase, Option<bool>)>,
        action: Action,
    ) -> Entry {
        let contributions = fresh
            .archives
            .iter()
            .map(|r| Contribution {
                archive: r.archive.clone(),
                status: r.status,
                http_status: r.http_status,
                report: r.report.clone(),
                fetched_at: fresh.at,
                mementos: r
                    .mementos
                    .iter()
                    .cloned()
                    .map(CachedMemento::from)
                    .collect(),
            })
            .collect();
        let mut e = Entry {
            version: ENTRY_FORMAT_VERSION,
            uri_r: fresh.uri_r.clone(),
            contributions,
            fetched_at: fresh.at,
            checked_at: now,
            fresh_until: self.fresh_until(now),
            loose: 0,
            strict: 0,
            archives: 0,
            history,
        };
        e.recount();
        e.push_history(HistoryItem {
            at: now,
            case: case.map(|(c, _)| c),
            action,
            same_set: case.and_then(|(_, s)| s),
        });
        e
    }

    /// `merge`: per archive, in the fetch's order, then the cached archives it did not list.
    fn merged(
        &self,
        cached: &Entry,
        fresh: &FetchOutcome,
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
                    if r.status.answered() {
                        self.refresh_contribution(c, r, fresh.at, now)
                    } else {
                        // We could not learn what it holds: what it held still stands, and
                        // the status says it failed this time.
                        let mut c = c.clone();
                        c.note_answer(r);
                        c
                    }
                }
                None => Contribution {
                    archive: r.archive.clone(),
                    status: r.status,
                    http_status: r.http_status,
                    report: r.report.clone(),
                    fetched_at: fresh.at,
                    mementos: r
                        .mementos
                        .iter()
                        .cloned()
                        .map(CachedMemento::from)
                        .collect(),
                },
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
        e.fresh_until = self.fresh_until(now);
        e.recount();
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
        (action, e)
    }

    /// An archive that answered: its fresh mementos, plus the cached ones it no longer lists,
    /// marked absent until the redaction rule drops them.
    fn refresh_contribution(
        &self,
        cached: &Contribution,
        fresh: &ArchiveResult,
        fetched_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Contribution {
        // Within one archive the loose key is the datetime. A cached memento whose datetime is
        // listed again is superseded by the fresh one (a new URI-M there is a migration).
        let listed: FxHashSet<MementoDatetime> =
            fresh.mementos.iter().map(|m| m.datetime).collect();
        let mut mementos: Vec<CachedMemento> = fresh
            .mementos
            .iter()
            .cloned()
            .map(CachedMemento::from)
            .collect();
        for m in cached
            .mementos
            .iter()
            .filter(|m| !listed.contains(&m.datetime))
        {
            let absence = match m.absent {
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
                mementos.push(CachedMemento {
                    uri_m: m.uri_m.clone(),
                    datetime: m.datetime,
                    absent: Some(absence),
                });
            }
        }
        Contribution {
            archive: fresh.archive.clone(),
            status: fresh.status,
            http_status: fresh.http_status,
            report: fresh.report.clone(),
            fetched_at,
            mementos,
        }
    }
}

/// (a, m) of a TimeMap under `matching`: a = archives with at least one memento, m = distinct
/// keys (strict: URI-M; loose: (archive, datetime)). Fetches and entries are counted by the same
/// tally over what the archives listed (see [`FetchOutcome::counts`], [`Entry::count`]).
pub fn counts(timemap: &TimeMap, matching: Match) -> (usize, usize) {
    tally(
        timemap
            .mementos
            .iter()
            .map(|m| (&*m.archive, m.datetime, m.uri_m.as_str())),
    )
    .counts(matching)
}

/// a, m under loose and m under strict of a set of mementos given as (archive, datetime, URI-M).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tally {
    pub archives: usize,
    pub loose: usize,
    pub strict: usize,
}

impl Tally {
    fn counts(self, matching: Match) -> (usize, usize) {
        match matching {
            Match::Loose => (self.archives, self.loose),
            Match::Strict => (self.archives, self.strict),
        }
    }
}

/// The one place keys are counted. O(n) with hash sets; FxHash, because these keys are our own
/// (not attacker-chosen table keys that outlive the call) and SipHash was most of a fetch's cost.
pub(super) fn tally<'a>(
    keys: impl Iterator<Item = (&'a str, MementoDatetime, &'a str)> + Clone,
) -> Tally {
    let n = keys.clone().count();
    let mut archives: FxHashSet<&str> = FxHashSet::default();
    let mut loose: FxHashSet<(&str, MementoDatetime)> =
        FxHashSet::with_capacity_and_hasher(n, Default::default());
    let mut strict: FxHashSet<&str> = FxHashSet::with_capacity_and_hasher(n, Default::default());
    for (archive, datetime, uri_m) in keys {
        archives.insert(archive);
        loose.insert((archive, datetime));
        strict.insert(uri_m);
    }
    Tally {
        archives: archives.len(),
        loose: loose.len(),
        strict: strict.len(),
    }
}

fn fetch_keys(f: &FetchOutcome) -> impl Iterator<Item = (&str, MementoDatetime, &str)> + Clone {
    f.archives.iter().flat_map(|r| {
        r.mementos
            .iter()
            .map(move |m| (r.archive.as_str(), m.datetime, m.uri_m.as_str()))
    })
}

pub(super) fn entry_keys(e: &Entry) -> impl Iterator<Item = (&str, MementoDatetime, &str)> + Clone {
    e.contributions.iter().flat_map(|c| {
        c.mementos
            .iter()
            .map(move |m| (c.archive.as_str(), m.datetime, m.uri_m.as_str()))
    })
}

/// Case 1 can hide a swap (one memento gone, another new): are the loose key sets equal?
fn same_loose_set(cached: &Entry, fresh: &FetchOutcome) -> bool {
    let old: FxHashSet<(&str, MementoDatetime)> =
        entry_keys(cached).map(|(a, d, _)| (a, d)).collect();
    let new: FxHashSet<(&str, MementoDatetime)> =
        fetch_keys(fresh).map(|(a, d, _)| (a, d)).collect();
    old == new
}

/// Would a client see the same TimeMap: same loose and same strict key sets?
fn same_served_keys(a: &TimeMap, b: &TimeMap) -> bool {
    fn loose(t: &TimeMap) -> FxHashSet<(&str, MementoDatetime)> {
        t.mementos
            .iter()
            .map(|m| (&*m.archive, m.datetime))
            .collect()
    }
    fn strict(t: &TimeMap) -> FxHashSet<&str> {
        t.mementos.iter().map(|m| m.uri_m.as_str()).collect()
    }
    a.len() == b.len() && loose(a) == loose(b) && strict(a) == strict(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::aggregate::ArchiveOutcome;
    use crate::timemap::datetime::parse_14digit;
    use crate::timemap::Memento;
    use std::sync::Arc;

    /// Simulated day `d` (midnight), the clock of every test.
    fn day(d: i64) -> DateTime<Utc> {
        parse_14digit("20120501000000").expect("test timestamp") + Duration::days(d)
    }

    /// The datetime of memento number `k` (the same k is the same loose key in one archive).
    fn mdt(k: usize) -> MementoDatetime {
        parse_14digit("20000101000000").expect("test timestamp") + Duration::hours(k as i64)
    }

    fn lm(archive: &str, k: usize) -> LinkMemento {
        LinkMemento {
            uri_m: format!("http://{archive}/{k}"),
            datetime: mdt(k),
        }
    }

    /// An archive that answered 200 with mementos numbered `keys`.
    fn ok(archive: &str, keys: impl IntoIterator<Item = usize>) -> ArchiveResult {
        ArchiveResult {
            archive: archive.to_string(),
            status: ArchiveStatus::Ok,
            http_status: Some(200),
            mementos: keys.into_iter().map(|k| lm(archive, k)).collect(),
            report: ArchiveReport::default(),
        }
    }

    /// An archive that answered 404: it holds nothing (a usable answer).
    fn not_found(archive: &str) -> ArchiveResult {
        ArchiveResult {
            archive: archive.to_string(),
            status: ArchiveStatus::NotFound,
            http_status: Some(404),
            mementos: vec![],
            report: ArchiveReport::default(),
        }
    }

    fn failed(archive: &str, status: ArchiveStatus) -> ArchiveResult {
        ArchiveResult {
            archive: archive.to_string(),
            status,
            http_status: None,
            mementos: vec![],
            report: ArchiveReport::default(),
        }
    }

    fn fetch(d: i64, archives: Vec<ArchiveResult>) -> FetchOutcome {
        FetchOutcome {
            uri_r: "http://example.com/".to_string(),
            at: day(d),
            archives,
        }
    }

    fn policy(kind: PolicyKind) -> Policy {
        Policy {
            kind,
            ..Policy::default()
        }
    }

    fn ttl_days(kind: PolicyKind, ttl: Option<i64>) -> Policy {
        Policy {
            kind,
            ttl: ttl.map(Duration::days),
            ..Policy::default()
        }
    }

    /// The entry a first fetch on day 0 stores.
    fn first(p: &Policy, archives: Vec<ArchiveResult>) -> Entry {
        let f = fetch(0, archives);
        p.decide(None, &f, f.at)
            .into_entry()
            .expect("a first fetch is stored")
    }

    fn decide_on(p: &Policy, cached: &Entry, d: i64, archives: Vec<ArchiveResult>) -> Decision {
        p.decide(Some(cached), &fetch(d, archives), day(d))
    }

    fn stored(d: &Decision) -> &Entry {
        d.entry().expect("decision stores an entry")
    }

    fn served_uris(e: &Entry) -> Vec<String> {
        e.timemap().mementos.into_iter().map(|m| m.uri_m).collect()
    }

    fn served_m(e: &Entry) -> usize {
        counts(&e.timemap(), Match::Loose).1
    }

    // ---- Table 1 -------------------------------------------------------------------------

    #[test]
    fn classify_unchanged_sizes_is_case_1_even_when_both_empty() {
        assert_eq!(classify(2, 10, 2, 10), ChangeCase::C1);
        assert_eq!(classify(0, 0, 0, 0), ChangeCase::C1);
    }

    #[test]
    fn classify_gains_are_cases_2_3_4_by_archive_change() {
        assert_eq!(classify(2, 10, 2, 11), ChangeCase::C2);
        assert_eq!(classify(2, 10, 3, 11), ChangeCase::C3);
        assert_eq!(classify(2, 10, 1, 11), ChangeCase::C4);
    }

    #[test]
    fn classify_empty_to_nonempty_is_case_5_before_2_to_4() {
        assert_eq!(classify(0, 0, 1, 5), ChangeCase::C5);
        assert_eq!(classify(0, 0, 3, 1), ChangeCase::C5);
        // Inconsistent counts (archives without mementos) still take case 5 first.
        assert_eq!(classify(1, 0, 1, 3), ChangeCase::C5);
        assert_eq!(classify(2, 0, 1, 3), ChangeCase::C5);
    }

    #[test]
    fn classify_lost_archive_without_gain_is_case_6() {
        assert_eq!(classify(2, 10, 1, 10), ChangeCase::C6);
        assert_eq!(classify(2, 10, 1, 4), ChangeCase::C6);
        // A 404 after a non-empty TimeMap.
        assert_eq!(classify(1, 10, 0, 0), ChangeCase::C6);
    }

    #[test]
    fn classify_lost_mementos_without_losing_archive_is_case_7() {
        assert_eq!(classify(2, 10, 2, 9), ChangeCase::C7);
        assert_eq!(classify(2, 10, 3, 9), ChangeCase::C7);
        // Boundary: a new archive and no more mementos than before.
        assert_eq!(classify(2, 10, 3, 10), ChangeCase::C7);
    }

    #[test]
    fn classify_gives_every_input_the_one_row_it_satisfies() {
        for a in 0..4 {
            for m in 0..4 {
                for a2 in 0..4 {
                    for m2 in 0..4 {
                        let five = m == 0 && m2 > 0;
                        let row = match classify(a, m, a2, m2) {
                            ChangeCase::C1 => a2 == a && m2 == m,
                            ChangeCase::C2 => !five && a2 == a && m2 > m,
                            ChangeCase::C3 => !five && a2 > a && m2 > m,
                            ChangeCase::C4 => !five && a2 < a && m2 > m,
                            ChangeCase::C5 => five,
                            ChangeCase::C6 => a2 < a && m2 <= m,
                            ChangeCase::C7 => (a2 >= a && m2 < m) || (a2 > a && m2 == m),
                        };
                        assert!(row, "({a}, {m}) → ({a2}, {m2})");
                    }
                }
            }
        }
    }

    #[test]
    fn exactly_cases_2_to_5_are_better_and_serialise_as_numbers() {
        let better: Vec<u8> = ChangeCase::ALL
            .iter()
            .filter(|c| c.is_better())
            .map(|c| c.number())
            .collect();
        assert_eq!(better, [2, 3, 4, 5]);
        for c in ChangeCase::ALL {
            let json = serde_json::to_string(&c).expect("serialise");
            assert_eq!(json, c.number().to_string());
            assert_eq!(serde_json::from_str::<ChangeCase>(&json).expect("back"), c);
        }
        assert!(serde_json::from_str::<ChangeCase>("0").is_err());
        assert!(serde_json::from_str::<ChangeCase>("8").is_err());
    }

    // ---- configuration -------------------------------------------------------------------

    #[test]
    fn policy_and_match_parse_from_their_config_words() {
        for k in PolicyKind::ALL {
            assert_eq!(k.as_str().parse::<PolicyKind>(), Ok(k));
            let json = serde_json::to_string(&k).expect("serialise");
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
        assert_eq!("loose".parse::<Match>(), Ok(Match::Loose));
        assert_eq!("strict".parse::<Match>(), Ok(Match::Strict));
        let e = "lru".parse::<PolicyKind>().expect_err("not a policy");
        assert!(e.to_string().contains("`lru`"), "{e}");
        assert!("Loose".parse::<Match>().is_err());
        assert_eq!(
            serde_json::from_str::<Match>("\"strict\"").expect("match"),
            Match::Strict
        );
    }

    #[test]
    fn default_policy_is_the_papers_conditional_loose_15_days() {
        let p = Policy::default();
        assert_eq!(p.kind, PolicyKind::Conditional);
        assert_eq!(p.matching, Match::Loose);
        assert_eq!(p.ttl, Some(Duration::days(15)));
        assert_eq!(p.redaction_confirmations, 2);
        assert_eq!(p.redaction_grace, Duration::days(7));
    }

    // ---- freshness -----------------------------------------------------------------------

    #[test]
    fn freshness_without_an_entry_is_a_miss() {
        for k in PolicyKind::ALL {
            assert_eq!(policy(k).freshness(None, day(0)), Freshness::Miss);
        }
    }

    #[test]
    fn freshness_ttl_zero_refetches_every_request() {
        let p = ttl_days(PolicyKind::Conditional, Some(0));
        let e = first(&p, vec![ok("ia", 0..3)]);
        assert_eq!(p.freshness(Some(&e), day(0)), Freshness::Expired);
        assert_eq!(p.freshness(Some(&e), day(1)), Freshness::Expired);
    }

    #[test]
    fn freshness_ttl_n_serves_days_d_plus_1_to_d_plus_n() {
        let p = ttl_days(PolicyKind::Unconditional, Some(3));
        let e = first(&p, vec![ok("ia", 0..3)]);
        assert_eq!(e.fresh_until, Some(day(3)));
        for d in 1..=3 {
            assert_eq!(p.freshness(Some(&e), day(d)), Freshness::Fresh, "day {d}");
        }
        assert_eq!(p.freshness(Some(&e), day(4)), Freshness::Expired);
        assert_eq!(
            p.freshness(Some(&e), day(3) + Duration::seconds(1)),
            Freshness::Expired
        );
    }

    #[test]
    fn stale_while_revalidate_serves_an_expired_entry_within_its_window() {
        let p = Policy {
            stale_while_revalidate: Duration::days(2),
            ..ttl_days(PolicyKind::Conditional, Some(3))
        };
        let e = first(&p, vec![ok("ia", 0..3)]);
        assert_eq!(p.freshness(Some(&e), day(3)), Freshness::Fresh);
        assert_eq!(
            p.freshness(Some(&e), day(3) + Duration::seconds(1)),
            Freshness::Stale
        );
        assert_eq!(p.freshness(Some(&e), day(5)), Freshness::Stale);
        assert_eq!(
            p.freshness(Some(&e), day(5) + Duration::seconds(1)),
            Freshness::Expired
        );
        // A TTL of zero is never fresh, but the window still counts from the check.
        let zero = Policy {
            ttl: Some(Duration::zero()),
            ..p
        };
        assert_eq!(zero.freshness(Some(&e), day(0)), Freshness::Stale);
        assert_eq!(zero.freshness(Some(&e), day(3)), Freshness::Expired);
        // Nothing cached is a miss, whatever the window.
        assert_eq!(p.freshness(None, day(4)), Freshness::Miss);
    }

    #[test]
    fn without_stale_if_error_an_outage_is_the_answer() {
        let p = Policy {
            stale_if_error: false,
            ..policy(PolicyKind::Conditional)
        };
        let cached = first(&p, vec![ok("ia", 0..3)]);
        let outage = fetch(20, vec![failed("ia", ArchiveStatus::Timeout)]);
        let d = p.decide(Some(&cached), &outage, day(20));
        assert_eq!(d, Decision::Unavailable { serve_stale: false });
        assert_eq!((d.action(), d.serve()), (Action::Unavailable, Serve::Fresh));
    }

    #[test]
    fn freshness_infinite_ttl_is_fresh_forever() {
        let p = ttl_days(PolicyKind::Conditional, None);
        let e = first(&p, vec![ok("ia", 0..3)]);
        assert_eq!(e.fresh_until, None);
        assert_eq!(p.freshness(Some(&e), day(100_000)), Freshness::Fresh);
    }

    #[test]
    fn freshness_forever_ignores_the_ttl() {
        let p = ttl_days(PolicyKind::Forever, Some(0));
        let e = first(&p, vec![ok("ia", 0..3)]);
        assert_eq!(e.fresh_until, None);
        assert_eq!(p.freshness(Some(&e), day(0)), Freshness::Fresh);
        assert_eq!(p.freshness(Some(&e), day(10_000)), Freshness::Fresh);
    }

    #[test]
    fn freshness_under_none_is_always_a_miss() {
        let stored_by = ttl_days(PolicyKind::Conditional, None);
        let e = first(&stored_by, vec![ok("ia", 0..3)]);
        assert_eq!(
            policy(PolicyKind::None).freshness(Some(&e), day(0)),
            Freshness::Miss
        );
    }

    #[test]
    fn keeping_restarts_the_ttl() {
        let p = ttl_days(PolicyKind::Conditional, Some(4));
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 5, vec![ok("ia", 0..3)]);
        assert_eq!(d.action(), Action::Kept);
        let kept = stored(&d);
        assert_eq!(kept.checked_at, day(5));
        assert_eq!(kept.fetched_at, day(0), "content is still day 0's");
        assert_eq!(kept.fresh_until, Some(day(9)));
        assert_eq!(p.freshness(Some(kept), day(9)), Freshness::Fresh);
        assert_eq!(p.freshness(Some(kept), day(10)), Freshness::Expired);
    }

    #[test]
    fn a_kept_entry_names_the_failure_of_the_refetch_not_the_old_outcome() {
        // Found in [hardening]: a case 6 refetch kept the TimeMap and went on reporting the
        // failed archive as `ok`, so the answer hid that it had just timed out.
        let p = policy(PolicyKind::Conditional);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 10..13)]);
        let d = decide_on(
            &p,
            &e,
            20,
            vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
        );
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C6), Action::Kept));
        let kept = stored(&d);
        assert_eq!(kept.contributions[1].status, ArchiveStatus::Timeout);
        assert_eq!(kept.contributions[1].mementos, e.contributions[1].mementos);
        assert_eq!(
            kept.contributions[1].fetched_at,
            e.contributions[1].fetched_at
        );
        assert_eq!(kept.contributions[0].status, ArchiveStatus::Ok);
        assert_eq!(served_m(kept), 8, "the content is unchanged");
        assert_eq!(kept.fetched_at, day(0));
    }

    // ---- outages, none, first store ------------------------------------------------------

    #[test]
    fn an_outage_is_unavailable_under_every_policy_and_stores_nothing() {
        let outages = [
            vec![
                failed("ia", ArchiveStatus::Timeout),
                failed("pt", ArchiveStatus::Error),
                failed("uk", ArchiveStatus::Malformed),
            ],
            vec![],
        ];
        for k in PolicyKind::ALL {
            let p = policy(k);
            let cached = first(&policy(PolicyKind::Conditional), vec![ok("ia", 0..3)]);
            for archives in &outages {
                let f = fetch(20, archives.clone());
                let with = p.decide(Some(&cached), &f, day(20));
                assert_eq!(with, Decision::Unavailable { serve_stale: true }, "{k}");
                let without = p.decide(None, &f, day(20));
                assert_eq!(without.action(), Action::Unavailable);
                assert_eq!(without.entry(), None);
                assert_eq!(without.serve(), Serve::Fresh);
            }
        }
    }

    #[test]
    fn a_partial_answer_is_a_timemap_not_an_outage() {
        let p = policy(PolicyKind::Conditional);
        let e = first(&p, vec![ok("ia", 0..3), ok("pt", 0..2)]);
        let d = decide_on(
            &p,
            &e,
            20,
            vec![ok("ia", 0..3), failed("pt", ArchiveStatus::Timeout)],
        );
        assert_eq!(d.case(), Some(ChangeCase::C6));
        assert_eq!(d.action(), Action::Kept);
        assert_eq!(served_m(stored(&d)), 5);
    }

    #[test]
    fn none_serves_the_fresh_fetch_and_stores_nothing() {
        let p = policy(PolicyKind::None);
        let f = fetch(0, vec![ok("ia", 0..3)]);
        let d = p.decide(None, &f, day(0));
        assert_eq!(d, Decision::Pass);
    }

    #[test]
    fn a_first_fetch_is_stored_by_every_policy_but_none_even_when_empty() {
        for k in PolicyKind::ALL {
            let p = policy(k);
            for archives in [vec![ok("ia", 0..3)], vec![not_found("ia")]] {
                let f = fetch(0, archives);
                let d = p.decide(None, &f, day(0));
                if k == PolicyKind::None {
                    assert_eq!(d.action(), Action::NotStored);
                    continue;
                }
                assert_eq!(d.action(), Action::Stored, "{k}");
                assert_eq!(d.case(), None);
                assert_eq!(d.serve(), Serve::Stored);
                let e = stored(&d);
                assert_eq!(e.version, ENTRY_FORMAT_VERSION);
                assert_eq!(e.uri_r, "http://example.com/");
                assert_eq!((e.fetched_at, e.checked_at), (day(0), day(0)));
                assert_eq!(e.history.len(), 1);
                assert_eq!(e.history[0].action, Action::Stored);
                assert_eq!(e.history[0].case, None);
                let expect_until = (k != PolicyKind::Forever).then(|| day(15));
                assert_eq!(e.fresh_until, expect_until, "{k}");
            }
        }
    }

    #[test]
    fn an_empty_first_fetch_is_stored_with_zero_counts() {
        let e = first(&policy(PolicyKind::Conditional), vec![not_found("ia")]);
        assert_eq!((e.archives, e.loose, e.strict), (0, 0, 0));
        assert_eq!(e.contributions.len(), 1);
        assert_eq!(e.contributions[0].status, ArchiveStatus::NotFound);
    }

    // ---- forever -------------------------------------------------------------------------

    #[test]
    fn forever_keeps_what_it_first_stored_even_on_a_forced_refetch() {
        let p = policy(PolicyKind::Forever);
        let e = first(&p, vec![ok("ia", 0..3)]);
        let d = decide_on(&p, &e, 30, vec![ok("ia", 0..9)]);
        assert_eq!(d.case(), Some(ChangeCase::C2));
        assert_eq!(d.action(), Action::Kept);
        assert_eq!(served_m(stored(&d)), 3);
        assert_eq!(stored(&d).fresh_until, None);
    }

    // ---- unconditional -------------------------------------------------------------------

    #[test]
    fn unconditional_replaces_whatever_the_case_and_records_it() {
        let p = policy(PolicyKind::Unconditional);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5)]);
        let cases = [
            (vec![ok("ia", 5..10), ok("pt", 0..5)], ChangeCase::C1, 10),
            (vec![ok("ia", 0..6), ok("pt", 0..5)], ChangeCase::C2, 11),
            (
                vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
                ChangeCase::C6,
                5,
            ),
            (vec![ok("ia", 0..4), ok("pt", 0..5)], ChangeCase::C7, 9),
        ];
        for (archives, case, m) in cases {
            let d = decide_on(&p, &e, 20, archives);
            assert_eq!((d.case(), d.action()), (Some(case), Action::Replaced));
            let r = stored(&d);
            assert_eq!(served_m(r), m, "case {case}");
            assert_eq!((r.fetched_at, r.checked_at), (day(20), day(20)));
            assert_eq!(r.fresh_until, Some(day(35)));
            assert_eq!(r.history.len(), 2);
            assert_eq!(r.history[1].case, Some(case));
        }
    }

    // ---- conditional ---------------------------------------------------------------------

    #[test]
    fn conditional_replaces_on_cases_2_to_5() {
        let p = policy(PolicyKind::Conditional);
        let two = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5), not_found("uk")]);
        let cases = [
            (
                vec![ok("ia", 0..6), ok("pt", 0..5), not_found("uk")],
                ChangeCase::C2,
                11,
            ),
            (
                vec![ok("ia", 0..5), ok("pt", 0..5), ok("uk", 0..1)],
                ChangeCase::C3,
                11,
            ),
            (
                vec![
                    ok("ia", 0..12),
                    failed("pt", ArchiveStatus::Timeout),
                    not_found("uk"),
                ],
                ChangeCase::C4,
                12,
            ),
        ];
        for (archives, case, m) in cases {
            let d = decide_on(&p, &two, 20, archives);
            assert_eq!((d.case(), d.action()), (Some(case), Action::Replaced));
            assert_eq!(served_m(stored(&d)), m);
            assert_eq!(stored(&d).fetched_at, day(20));
        }
        let empty = first(&p, vec![not_found("ia")]);
        let d = decide_on(&p, &empty, 20, vec![ok("ia", 0..2)]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C5), Action::Replaced)
        );
        assert_eq!(served_m(stored(&d)), 2);
    }

    #[test]
    fn conditional_keeps_on_cases_1_6_and_7() {
        let p = policy(PolicyKind::Conditional);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5)]);
        let cases = [
            (vec![ok("ia", 0..5), ok("pt", 0..5)], ChangeCase::C1),
            (
                vec![ok("ia", 0..6), failed("pt", ArchiveStatus::Error)],
                ChangeCase::C6,
            ),
            (vec![ok("ia", 0..5), ok("pt", 0..4)], ChangeCase::C7),
            (
                vec![ok("ia", 0..5), ok("pt", 0..4), ok("uk", 0..1)],
                ChangeCase::C7,
            ),
        ];
        for (archives, case) in cases {
            let d = decide_on(&p, &e, 20, archives);
            assert_eq!((d.case(), d.action()), (Some(case), Action::Kept));
            let kept = stored(&d);
            // The content is untouched; only each archive's latest status may differ.
            let content = |e: &Entry| {
                e.contributions
                    .iter()
                    .map(|c| (c.archive.clone(), c.mementos.clone(), c.fetched_at))
                    .collect::<Vec<_>>()
            };
            assert_eq!(content(kept), content(&e), "content untouched");
            assert_eq!(kept.fetched_at, day(0));
            assert_eq!(kept.checked_at, day(20));
            assert_eq!(kept.fresh_until, Some(day(35)));
            let last = kept.history.back().expect("history item");
            assert_eq!(
                (last.at, last.case, last.action),
                (day(20), Some(case), Action::Kept)
            );
        }
    }

    #[test]
    fn conditional_case_1_records_whether_the_loose_set_was_equal() {
        let p = policy(PolicyKind::Conditional);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let same = decide_on(&p, &e, 20, vec![ok("ia", 0..5)]);
        assert_eq!(same.case(), Some(ChangeCase::C1));
        assert_eq!(stored(&same).history[1].same_set, Some(true));
        // One memento gone, another new: same count, other set.
        let swapped = decide_on(&p, &e, 20, vec![ok("ia", 1..6)]);
        assert_eq!(swapped.case(), Some(ChangeCase::C1));
        assert_eq!(swapped.action(), Action::Kept);
        assert_eq!(stored(&swapped).history[1].same_set, Some(false));
        // Not case 1: nothing recorded.
        let grew = decide_on(&p, &e, 20, vec![ok("ia", 0..6)]);
        assert_eq!(stored(&grew).history[1].same_set, None);
    }

    #[test]
    fn a_404_never_replaces_a_nonempty_timemap_under_conditional_or_merge() {
        for k in [PolicyKind::Conditional, PolicyKind::Merge] {
            let p = policy(k);
            let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
            let d = decide_on(&p, &e, 20, vec![not_found("ia"), not_found("pt")]);
            assert_eq!(d.case(), Some(ChangeCase::C6), "{k}");
            assert_eq!(d.action(), Action::Kept, "{k}");
            assert_eq!(d.serve(), Serve::Stored);
            assert_eq!(served_uris(stored(&d)), served_uris(&e), "{k}");
            // Nor does a second 404 within the redaction grace.
            let again = decide_on(&p, stored(&d), 21, vec![not_found("ia"), not_found("pt")]);
            assert_eq!(served_m(stored(&again)), 8, "{k}");
        }
    }

    #[test]
    fn a_404_does_replace_a_nonempty_timemap_under_unconditional() {
        let p = policy(PolicyKind::Unconditional);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 20, vec![not_found("ia")]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C6), Action::Replaced)
        );
        assert_eq!(served_m(stored(&d)), 0);
    }

    // ---- merge ---------------------------------------------------------------------------

    #[test]
    fn merge_keeps_a_failed_archives_mementos_and_reports_its_failure() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
        let d = decide_on(
            &p,
            &e,
            20,
            vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
        );
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C6), Action::Kept));
        let m = stored(&d);
        // Its mementos and their fetch time stand; its status says it failed this time.
        assert_eq!(m.contributions[1].mementos, e.contributions[1].mementos);
        assert_eq!(m.contributions[1].fetched_at, e.contributions[1].fetched_at);
        assert_eq!(m.contributions[1].status, ArchiveStatus::Timeout);
        assert_eq!(m.contributions[0].fetched_at, day(20));
        assert_eq!(m.fetched_at, day(0), "served TimeMap unchanged");
        assert_eq!(m.checked_at, day(20));
        assert_eq!(m.fresh_until, Some(day(35)));
    }

    #[test]
    fn merge_case_4_keeps_the_lost_archive_and_the_new_mementos() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
        let d = decide_on(
            &p,
            &e,
            20,
            vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Error)],
        );
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C4), Action::Merged)
        );
        let m = stored(&d);
        assert_eq!(served_m(m), 12);
        assert_eq!((m.archives, m.loose, m.strict), (2, 12, 12));
        assert_eq!(m.fetched_at, day(20));
        // Conditional had to choose: the 9 new ones win and pt's 3 are gone.
        let c = decide_on(
            &policy(PolicyKind::Conditional),
            &e,
            20,
            vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Error)],
        );
        assert_eq!(served_m(stored(&c)), 9);
    }

    #[test]
    fn merge_adds_new_mementos_and_archives() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 20, vec![ok("ia", 0..6)]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C2), Action::Merged)
        );
        assert_eq!(served_m(stored(&d)), 6);
        let d = decide_on(&p, &e, 20, vec![ok("ia", 0..5), ok("pt", 0..2)]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C3), Action::Merged)
        );
        assert_eq!(served_m(stored(&d)), 7);
    }

    #[test]
    fn merge_recovers_from_an_empty_timemap_in_case_5() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![not_found("ia")]);
        let d = decide_on(&p, &e, 20, vec![ok("ia", 0..4)]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C5), Action::Merged)
        );
        assert_eq!(served_m(stored(&d)), 4);
        assert_eq!(stored(&d).contributions[0].status, ArchiveStatus::Ok);
    }

    #[test]
    fn merge_unchanged_answer_is_case_1_kept() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 20, vec![ok("ia", 0..5)]);
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
        assert_eq!(stored(&d).history[1].same_set, Some(true));
    }

    #[test]
    fn merge_marks_a_missing_memento_absent_but_still_serves_it_after_one_answer() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C7), Action::Kept));
        let m = stored(&d);
        assert_eq!(served_m(m), 5);
        let gone = m.contributions[0]
            .mementos
            .iter()
            .find(|c| c.datetime == mdt(4))
            .expect("still cached");
        assert_eq!(
            gone.absent,
            Some(Absence {
                since: day(1),
                confirmations: 1
            })
        );
        assert_eq!(
            m.contributions[0]
                .mementos
                .iter()
                .filter(|c| c.absent.is_some())
                .count(),
            1
        );
    }

    #[test]
    fn merge_keeps_a_memento_absent_twice_within_the_grace() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
        let d2 = decide_on(&p, stored(&d1), 2, vec![ok("ia", 0..4)]);
        assert_eq!(d2.action(), Action::Kept);
        let m = stored(&d2);
        assert_eq!(served_m(m), 5);
        let gone = m.contributions[0]
            .mementos
            .iter()
            .find(|c| c.datetime == mdt(4))
            .expect("still cached");
        assert_eq!(
            gone.absent,
            Some(Absence {
                since: day(1),
                confirmations: 2
            })
        );
    }

    #[test]
    fn merge_drops_a_memento_absent_twice_across_the_grace() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..2)]);
        let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4), ok("pt", 0..2)]);
        // ia failing in between neither confirms nor resets the absence.
        let mid = decide_on(
            &p,
            stored(&d1),
            5,
            vec![failed("ia", ArchiveStatus::Timeout), ok("pt", 0..2)],
        );
        assert_eq!(mid.action(), Action::Kept);
        assert_eq!(
            stored(&mid).contributions[0].mementos,
            stored(&d1).contributions[0].mementos
        );
        let d2 = decide_on(&p, stored(&mid), 8, vec![ok("ia", 0..4), ok("pt", 0..2)]);
        // The entry still served 7 (the absent one included): 6 is case 7.
        assert_eq!(
            (d2.case(), d2.action()),
            (Some(ChangeCase::C7), Action::Merged)
        );
        let m = stored(&d2);
        assert_eq!(served_m(m), 6);
        assert!(m.contributions[0]
            .mementos
            .iter()
            .all(|c| c.absent.is_none()));
        assert!(!m.contributions[0]
            .mementos
            .iter()
            .any(|c| c.datetime == mdt(4)));
        assert_eq!((m.loose, m.strict, m.archives), (6, 6, 2));
    }

    #[test]
    fn merge_needs_the_confirmations_not_only_the_grace() {
        let p = Policy {
            redaction_confirmations: 3,
            ..policy(PolicyKind::Merge)
        };
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
        let d2 = decide_on(&p, stored(&d1), 30, vec![ok("ia", 0..4)]);
        assert_eq!(served_m(stored(&d2)), 5, "two answers of three");
        let d3 = decide_on(&p, stored(&d2), 31, vec![ok("ia", 0..4)]);
        assert_eq!(served_m(stored(&d3)), 4);
    }

    #[test]
    fn merge_clears_the_absence_of_a_memento_that_reappears() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
        let d2 = decide_on(&p, stored(&d1), 2, vec![ok("ia", 0..5)]);
        let m = stored(&d2);
        assert!(m.contributions[0]
            .mementos
            .iter()
            .all(|c| c.absent.is_none()));
        // Absent again much later: the count starts over, so it is not dropped yet.
        let d3 = decide_on(&p, m, 30, vec![ok("ia", 0..4)]);
        assert_eq!(served_m(stored(&d3)), 5);
    }

    #[test]
    fn merge_keeps_cached_archives_the_fetch_did_not_list_at_the_end() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("old", 0..2), ok("ia", 0..3)]);
        let d = decide_on(&p, &e, 20, vec![ok("ia", 0..3), ok("pt", 0..1)]);
        let order: Vec<&str> = stored(&d)
            .contributions
            .iter()
            .map(|c| c.archive.as_str())
            .collect();
        assert_eq!(order, ["ia", "pt", "old"]);
        assert_eq!(served_m(stored(&d)), 6);
    }

    /// Replays one request a day; returns Q and the served m (loose) per day.
    fn run_daily(p: &Policy, live: &[FetchOutcome]) -> (usize, Vec<usize>) {
        let mut entry: Option<Entry> = None;
        let mut q = 0;
        let mut served = Vec::new();
        for f in live {
            let tm = match p.freshness(entry.as_ref(), f.at) {
                Freshness::Fresh => entry.as_ref().expect("fresh implies cached").timemap(),
                // (No stale window in these policies: never `Stale`.)
                Freshness::Miss | Freshness::Stale | Freshness::Expired => {
                    q += 1;
                    let d = p.decide(entry.as_ref(), f, f.at);
                    let serve = d.serve();
                    if let Some(e) = d.into_entry() {
                        entry = Some(e);
                    }
                    match serve {
                        Serve::Fresh => f.timemap(),
                        Serve::Stored => entry.as_ref().expect("stored or cached").timemap(),
                    }
                }
            };
            served.push(counts(&tm, Match::Loose).1);
        }
        (q, served)
    }

    #[test]
    fn merge_never_serves_fewer_than_conditional_on_the_same_schedule() {
        let live: Vec<FetchOutcome> = vec![
            fetch(0, vec![ok("ia", 0..5), ok("pt", 0..3)]),
            fetch(
                1,
                vec![ok("ia", 0..6), failed("pt", ArchiveStatus::Timeout)],
            ),
            fetch(
                2,
                vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Timeout)],
            ),
            fetch(3, vec![ok("ia", 0..4), ok("pt", 0..3)]),
            fetch(4, vec![not_found("ia"), not_found("pt")]),
            fetch(5, vec![ok("ia", 2..12), ok("pt", 0..1)]),
            fetch(6, vec![ok("ia", 2..12), ok("pt", 0..1)]),
        ];
        for ttl in [0, 1, 2] {
            let (_, c) = run_daily(&ttl_days(PolicyKind::Conditional, Some(ttl)), &live);
            let (_, m) = run_daily(&ttl_days(PolicyKind::Merge, Some(ttl)), &live);
            for (day, (c, m)) in c.iter().zip(&m).enumerate() {
                assert!(m >= c, "ttl {ttl}, day {day}: merge {m} < conditional {c}");
            }
        }
    }

    // ---- URI migration and matching ------------------------------------------------------

    /// ia's mementos 0..n at new addresses (same datetimes).
    fn migrated(n: usize) -> ArchiveResult {
        let mut r = ok("ia", 0..n);
        for m in &mut r.mementos {
            m.uri_m = m.uri_m.replace("http://ia/", "https://ia.example/web/");
        }
        r
    }

    #[test]
    fn a_migration_under_loose_matching_is_case_1_kept_by_conditional() {
        let p = policy(PolicyKind::Conditional);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 20, vec![migrated(5)]);
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
        assert_eq!(stored(&d).history[1].same_set, Some(true));
        assert_eq!(served_uris(stored(&d)), served_uris(&e));
    }

    #[test]
    fn merge_serves_the_new_uri_m_after_a_migration() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5)]);
        let d = decide_on(&p, &e, 20, vec![migrated(5)]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C1), Action::Merged)
        );
        let uris = served_uris(stored(&d));
        assert_eq!(uris.len(), 5);
        assert!(
            uris.iter()
                .all(|u| u.starts_with("https://ia.example/web/")),
            "{uris:?}"
        );
        assert!(stored(&d).contributions[0]
            .mementos
            .iter()
            .all(|m| m.absent.is_none()));
    }

    #[test]
    fn strict_matching_sees_a_migration_as_changed_keys() {
        // Mid-migration the archive lists each memento at both addresses.
        let mut both = ok("ia", 0..5);
        both.mementos.extend(migrated(5).mementos);
        let loose = policy(PolicyKind::Conditional);
        let strict = Policy {
            matching: Match::Strict,
            ..loose
        };
        let e = first(&loose, vec![ok("ia", 0..5)]);
        assert_eq!((e.loose, e.strict), (5, 5));
        let d = decide_on(&loose, &e, 20, vec![both.clone()]);
        assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
        let d = decide_on(&strict, &e, 20, vec![both.clone()]);
        assert_eq!(
            (d.case(), d.action()),
            (Some(ChangeCase::C2), Action::Replaced)
        );
        let f = fetch(20, vec![both]);
        assert_eq!(f.counts(Match::Loose), (1, 5));
        assert_eq!(f.counts(Match::Strict), (1, 10));
        // Completed, the migration keeps the strict count: case 1 by numbers, yet the served
        // strict keys changed, which is what merge reports.
        let d = decide_on(&strict, &e, 20, vec![migrated(5)]);
        assert_eq!(d.case(), Some(ChangeCase::C1));
    }

    // ---- history, worked example, round trip, aggregate ----------------------------------

    #[test]
    fn history_through_decide_is_capped_at_twenty() {
        let p = ttl_days(PolicyKind::Conditional, Some(0));
        let mut e = first(&p, vec![ok("ia", 0..1)]);
        for d in 1..=30 {
            let n = d as usize + 1;
            e = decide_on(&p, &e, d, vec![ok("ia", 0..n)])
                .into_entry()
                .expect("replaced");
        }
        assert_eq!(e.history.len(), 20);
        assert_eq!(e.history.front().map(|h| h.at), Some(day(11)));
        assert_eq!(e.history.back().map(|h| h.at), Some(day(30)));
        assert!(e.history.iter().all(|h| h.action == Action::Replaced));
    }

    #[test]
    fn worked_example_conditional_ttl_4_costs_two_fetches_and_8_memdays() {
        let live: Vec<FetchOutcome> = [6, 6, 8, 8, 10, 10]
            .iter()
            .enumerate()
            .map(|(d, &n)| fetch(d as i64, vec![ok("ia", 0..n)]))
            .collect();
        let p = ttl_days(PolicyKind::Conditional, Some(4));
        let (q, served) = run_daily(&p, &live);
        assert_eq!(q, 2);
        assert_eq!(served, [6, 6, 6, 6, 6, 10]);
        let mut best = 0;
        let mut memdays = 0;
        for (f, &c) in live.iter().zip(&served) {
            best = best.max(f.counts(Match::Loose).1);
            memdays += best.saturating_sub(c);
        }
        assert_eq!(memdays, 8);
    }

    #[test]
    fn a_merged_entry_round_trips_through_json() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..2)]);
        let d = decide_on(
            &p,
            &e,
            1,
            vec![ok("ia", 0..4), failed("pt", ArchiveStatus::Timeout)],
        );
        let m = stored(&d);
        let json = serde_json::to_string(m).expect("serialise");
        let back: Entry = serde_json::from_str(&json).expect("deserialise");
        assert_eq!(&back, m);
    }

    #[test]
    fn from_aggregate_splits_the_timemap_by_archive_in_outcome_order() {
        let outcome = |id: &str, status, http_status, mementos| ArchiveOutcome {
            id: id.to_string(),
            status,
            http_status,
            mementos,
            elapsed_ms: 5,
            detail: None,
            pages: 1,
            skipped: 0,
        };
        let memento = |a: &str, k| Memento {
            uri_m: format!("http://{a}/{k}"),
            datetime: mdt(k),
            archive: Arc::from(a),
        };
        let agg = Aggregate {
            uri_r: "http://example.com/".to_string(),
            timemap: TimeMap {
                mementos: vec![
                    memento("uk", 0),
                    memento("ia", 1),
                    memento("uk", 2),
                    memento("ia", 3),
                ],
            },
            outcomes: vec![
                outcome("ia", ArchiveStatus::Ok, Some(200), 2),
                outcome("pt", ArchiveStatus::Timeout, None, 0),
                outcome("uk", ArchiveStatus::Ok, Some(200), 2),
            ],
            fetched_at: day(3),
        };
        let f = FetchOutcome::from_aggregate(&agg);
        // Each archive's report travels with it, so a cached answer can repeat it.
        for r in &f.archives {
            assert_eq!((r.report.pages, r.report.elapsed_ms), (1, 5));
        }
        let f = FetchOutcome {
            archives: f
                .archives
                .into_iter()
                .map(|r| ArchiveResult {
                    report: ArchiveReport::default(),
                    ..r
                })
                .collect(),
            ..f
        };
        assert_eq!(f.uri_r, "http://example.com/");
        assert_eq!(f.at, day(3));
        assert_eq!(
            f.archives,
            vec![
                ok("ia", [1, 3]),
                failed("pt", ArchiveStatus::Timeout),
                ok("uk", [0, 2]),
            ]
        );
        assert_eq!(f.timemap(), agg.timemap);
        assert_eq!(f.counts(Match::Loose), (2, 4));
    }

    #[test]
    fn counts_of_a_timemap_are_archives_and_distinct_keys() {
        let tm = fetch(0, vec![ok("ia", 0..3), ok("pt", 0..2), not_found("uk")]).timemap();
        assert_eq!(counts(&tm, Match::Loose), (2, 5));
        assert_eq!(counts(&tm, Match::Strict), (2, 5));
        assert_eq!(counts(&TimeMap::default(), Match::Loose), (0, 0));
    }

    #[test]
    fn merge_of_ten_thousand_mementos_keeps_and_then_merges() {
        let p = policy(PolicyKind::Merge);
        let e = first(&p, vec![ok("ia", 0..10_000)]);
        let d = decide_on(&p, &e, 1, vec![ok("ia", 0..10_000)]);
        assert_eq!(d.action(), Action::Kept);
        let d = decide_on(&p, stored(&d), 2, vec![ok("ia", 5_000..15_000)]);
        assert_eq!(d.action(), Action::Merged);
        assert_eq!(served_m(stored(&d)), 15_000);
    }
}
