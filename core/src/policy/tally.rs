//! Counting a TimeMap's archives and mementos (a, m), the one place keys are counted.

use super::names::Match;
use crate::timemap::answer::Fetch;
use crate::timemap::{MementoDatetime, TimeMap};
use rustc_hash::FxHashSet;

/// (a, m) of a TimeMap under `matching`: a = archives with at least one memento, m = distinct
/// keys (strict: URI-M; loose: (archive, datetime)). Fetches and entries are counted by the same
/// tally over what the archives listed (see [`Fetch::counts`], `Entry::count`).
pub fn counts(timemap: &TimeMap, matching: Match) -> (usize, usize) {
    tally(
        timemap
            .mementos
            .iter()
            .map(|m| (&*m.archive, m.datetime, &*m.uri_m)),
    )
    .counts(matching)
}

/// a, m under loose and m under strict of a set of mementos given as (archive, datetime, URI-M).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub archives: usize,
    pub loose: usize,
    pub strict: usize,
}

impl Tally {
    pub fn counts(self, matching: Match) -> (usize, usize) {
        match matching {
            Match::Loose => (self.archives, self.loose),
            Match::Strict => (self.archives, self.strict),
        }
    }
}

/// The one place keys are counted. O(n) with hash sets; FxHash, because these keys are our own
/// (not attacker-chosen table keys that outlive the call) and SipHash was most of a fetch's cost.
pub fn tally<'a>(keys: impl Iterator<Item = (&'a str, MementoDatetime, &'a str)> + Clone) -> Tally {
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

impl Fetch {
    /// (a, m) of what the archives listed, under `matching`.
    pub fn counts(&self, matching: Match) -> (usize, usize) {
        tally(fetch_keys(self)).counts(matching)
    }
}

pub(super) fn fetch_keys(f: &Fetch) -> impl Iterator<Item = (&str, MementoDatetime, &str)> + Clone {
    f.archives.iter().flat_map(|r| {
        r.mementos
            .iter()
            .map(move |m| (r.archive.as_str(), m.datetime, &*m.uri_m))
    })
}

/// Would a client see the same TimeMap: same loose and same strict key sets?
pub(super) fn same_served_keys(a: &TimeMap, b: &TimeMap) -> bool {
    fn loose(t: &TimeMap) -> FxHashSet<(&str, MementoDatetime)> {
        t.mementos
            .iter()
            .map(|m| (&*m.archive, m.datetime))
            .collect()
    }
    fn strict(t: &TimeMap) -> FxHashSet<&str> {
        t.mementos.iter().map(|m| &*m.uri_m).collect()
    }
    a.len() == b.len() && loose(a) == loose(b) && strict(a) == strict(b)
}
