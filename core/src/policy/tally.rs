//! Counting a TimeMap's archives and mementos (a, m), the one place keys are counted.

use super::names::Match;
use crate::timemap::answer::{Contribution, Fetch};
use crate::timemap::credit::Credits;
use crate::timemap::identity::memento_key;
use crate::timemap::{MementoDatetime, TimeMap};
use rustc_hash::{FxBuildHasher, FxHashSet};
use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::BuildHasher;

/// (a, m) of a TimeMap under `matching`: a = archives with at least one memento, m = distinct
/// keys (strict: URI-M as `timemap::identity` compares them; loose: (archive, datetime)). Fetches and entries are counted by the same
/// tally over what the archives listed (see [`Fetch::counts`], `Entry::count`).
pub fn counts(timemap: &TimeMap, matching: Match) -> (usize, usize) {
    tally(
        timemap
            .mementos
            .iter()
            .map(|m| (Cow::Borrowed(&*m.archive), m.datetime, &*m.uri_m)),
    )
    .counts(matching)
}

/// A contribution's keys: its own archive, or for an aggregator's ([`Credits`]) the archive
/// each memento is credited to, so the loose key is the credited archive's (archive,
/// Memento-Datetime) whoever listed it.
pub fn contribution_keys<'a>(
    c: &'a Contribution,
    credits: &'a Credits,
) -> impl Iterator<Item = Key<'a>> + Clone + 'a {
    let aggregator = credits.is_aggregator(&c.archive);
    c.mementos.iter().map(move |m| {
        let archive = if aggregator {
            credits.credit(&c.archive, &m.uri_m)
        } else {
            Cow::Borrowed(c.archive.as_str())
        };
        (archive, m.datetime, &*m.uri_m)
    })
}

/// (archive, Memento-Datetime, URI-M): what the tallies count.
pub type Key<'a> = (Cow<'a, str>, MementoDatetime, &'a str);

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

/// The one place keys are counted. FxHash, because these keys are our own (not
/// attacker-chosen table keys that outlive the call) and SipHash was most of a fetch's cost.
/// Loose keys need no set when they come as one run per archive, each strictly oldest first,
/// which is how fetches and entries list them: that set was ~70 MB for a million mementos.
/// Strict keys are counted by sorted hashes ([`distinct_by`]), O(n log n) in 8 bytes a key.
pub fn tally<'a>(keys: impl Iterator<Item = Key<'a>> + Clone) -> Tally {
    let n = keys.clone().count();
    let (archives, loose) = match archive_runs(keys.clone()) {
        Some(runs) => (runs, n),
        None => {
            let mut archives: FxHashSet<Cow<str>> = FxHashSet::default();
            let mut loose: FxHashSet<(Cow<str>, MementoDatetime)> =
                FxHashSet::with_capacity_and_hasher(n, Default::default());
            for (archive, datetime, _) in keys.clone() {
                archives.insert(archive.clone());
                loose.insert((archive, datetime));
            }
            (archives.len(), loose.len())
        }
    };
    let strict = distinct_by(keys.map(|(_, _, uri_m)| uri_m), memento_key, |key| {
        FxBuildHasher.hash_one(key)
    });
    Tally {
        archives,
        loose,
        strict,
    }
}

/// How many distinct strings `keys` holds, exactly, in 8 bytes a key: their 64-bit hashes,
/// sorted, count the distinct hash values; only keys whose hash value repeats (the same URI-M
/// listed twice, or a collision) go into a set of strings, which counts them exactly. A set of
/// every key, sized for n, was ~35 MB at a million mementos, and landed on the first request's
/// peak RSS whenever it ran as the body finished rendering (BENCHMARKS.md, "A 1,000,000-memento TimeMap").
fn distinct_by<'a>(
    keys: impl Iterator<Item = &'a str> + Clone,
    norm: impl Fn(&'a str) -> Cow<'a, str>,
    hash: impl Fn(&str) -> u64,
) -> usize {
    let mut hashes: Vec<u64> = keys.clone().map(|k| hash(&norm(k))).collect();
    hashes.sort_unstable();
    let mut distinct_hashes = 0;
    let mut repeated: Vec<u64> = Vec::new();
    for run in hashes.chunk_by(|a, b| a == b) {
        distinct_hashes += 1;
        if run.len() > 1 {
            repeated.push(run[0]);
        }
    }
    drop(hashes);
    if repeated.is_empty() {
        return distinct_hashes;
    }
    // Each repeated value was counted once above; count its distinct strings instead. Keyed
    // SipHash here: URI-Ms come from archives, and keys forged to share an FxHash must not
    // also share this table's probe sequence.
    let mut exact: HashSet<Cow<str>> = HashSet::new();
    for key in keys.map(norm) {
        if repeated.binary_search(&hash(&key)).is_ok() {
            exact.insert(key);
        }
    }
    distinct_hashes - repeated.len() + exact.len()
}

/// How many archives the keys hold, when they come as one run per archive with each run's
/// datetimes strictly increasing (then no (archive, datetime) repeats); None otherwise.
fn archive_runs<'a>(keys: impl Iterator<Item = Key<'a>>) -> Option<usize> {
    let mut seen: Vec<Cow<str>> = Vec::new();
    let mut last: Option<(Cow<str>, MementoDatetime)> = None;
    for (archive, datetime, _) in keys {
        match &last {
            Some((a, d)) if *a == archive => {
                if datetime <= *d {
                    return None;
                }
            }
            _ => {
                // A new run: of an archive no earlier run had (archives are a dozen or so).
                if seen.contains(&archive) {
                    return None;
                }
                seen.push(archive.clone());
            }
        }
        last = Some((archive, datetime));
    }
    Some(seen.len())
}

impl Fetch {
    /// (a, m) of what the archives listed, under `matching`, no archive an aggregator.
    pub fn counts(&self, matching: Match) -> (usize, usize) {
        tally(fetch_keys(self, Credits::none())).counts(matching)
    }
}

pub(super) fn fetch_keys<'a>(
    f: &'a Fetch,
    credits: &'a Credits,
) -> impl Iterator<Item = Key<'a>> + Clone + 'a {
    f.archives
        .iter()
        .flat_map(move |r| contribution_keys(r, credits))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Borrowed keys as the tallies take them.
    fn cow<'a>(
        keys: impl Iterator<Item = (&'a str, MementoDatetime, &'a str)> + Clone,
    ) -> impl Iterator<Item = Key<'a>> + Clone {
        keys.map(|(a, d, u)| (Cow::Borrowed(a), d, u))
    }
    use chrono::{TimeZone, Utc};

    /// The counts by sets alone, as before the run shortcut: the reference.
    fn by_sets<'a>(keys: &[(&'a str, MementoDatetime, &'a str)]) -> Tally {
        let archives: FxHashSet<&str> = keys.iter().map(|k| k.0).collect();
        let loose: FxHashSet<(&str, MementoDatetime)> = keys.iter().map(|k| (k.0, k.1)).collect();
        let strict: FxHashSet<&str> = keys.iter().map(|k| k.2).collect();
        Tally {
            archives: archives.len(),
            loose: loose.len(),
            strict: strict.len(),
        }
    }

    #[test]
    fn runs_and_any_other_order_count_alike() {
        let at = |s: i64| {
            Utc.timestamp_opt(1_000_000_000 + s, 0)
                .single()
                .expect("time")
        };
        let uris: Vec<String> = (0..40).map(|i| format!("http://a/{}", i % 29)).collect();
        let archives = ["ia", "pt", "uk"];
        // A fixed LCG: orders that are runs, runs split in two, repeats and shuffles.
        let mut state = 0x2545_f491_u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for case in 0..500 {
            let len = next(40) as usize;
            let mut keys: Vec<(&str, MementoDatetime, &str)> = (0..len)
                .map(|i| {
                    let archive = archives[next(3) as usize];
                    (archive, at(next(12) as i64), uris[i].as_str())
                })
                .collect();
            if case % 2 == 0 {
                // One run per archive, oldest first, one per datetime: the shortcut's case.
                keys.sort_by_key(|k| (k.0, k.1));
                keys.dedup_by_key(|k| (k.0, k.1));
            }
            let counted = tally(cow(keys.iter().copied()));
            assert_eq!(counted, by_sets(&keys), "case {case}: {keys:?}");
        }
    }

    /// A fixed LCG, so a failure repeats.
    fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |m| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        }
    }

    #[test]
    fn the_strict_count_is_exact_whatever_the_hashes_collide() {
        let mut next = lcg(0x9e37_79b9);
        type Hasher = fn(&str) -> u64;
        let hashers: [(&str, Hasher); 4] = [
            ("fx", |s| FxBuildHasher.hash_one(s)),
            ("all one value", |_| 7),
            ("by length", |s| s.len() as u64),
            ("by last byte", |s| {
                u64::from(s.bytes().last().unwrap_or(0) % 4)
            }),
        ];
        for case in 0..300 {
            // Pools from 1 to 60 URI-Ms for up to 120 keys: from all alike to all distinct.
            let pool = 1 + next(60);
            let uris: Vec<String> = (0..pool)
                .map(|i| format!("http://a.example/{}/{}", next(1000), i))
                .collect();
            let len = next(120) as usize;
            let keys: Vec<&str> = (0..len)
                .map(|_| uris[next(pool) as usize].as_str())
                .collect();
            let expected = keys.iter().collect::<HashSet<_>>().len();
            for (name, hash) in hashers {
                assert_eq!(
                    distinct_by(keys.iter().copied(), Cow::Borrowed, hash),
                    expected,
                    "case {case}, hasher {name}: {keys:?}"
                );
            }
        }
        assert_eq!(distinct_by(std::iter::empty(), Cow::Borrowed, |_| 0), 0);
        // Two different URI-Ms under one hash value, each listed twice: two, not one or four.
        let pairs = ["http://a/1", "http://a/2", "http://a/1", "http://a/2"];
        assert_eq!(distinct_by(pairs.iter().copied(), Cow::Borrowed, |_| 0), 2);
    }

    #[test]
    fn a_uri_m_listed_by_several_archives_counts_once() {
        let at = |s: i64| {
            Utc.timestamp_opt(1_000_000_000 + s, 0)
                .single()
                .expect("time")
        };
        let mut next = lcg(0x5eed);
        let uris: Vec<String> = (0..500).map(|i| format!("http://w.example/{i}")).collect();
        for case in 0..100 {
            // Each archive lists a run, oldest first, drawn from one shared pool of URI-Ms.
            let mut keys: Vec<(&str, MementoDatetime, &str)> = Vec::new();
            for archive in ["ia", "pt", "uk"] {
                for s in 0..next(200) as i64 {
                    keys.push((archive, at(s), uris[next(500) as usize].as_str()));
                }
            }
            assert_eq!(
                tally(cow(keys.iter().copied())),
                by_sets(&keys),
                "case {case}"
            );
        }
    }

    #[test]
    fn an_archive_in_two_runs_or_a_repeated_datetime_is_counted_by_set() {
        let t = |s: i64| Utc.timestamp_opt(s, 0).single().expect("time");
        let split = [("ia", t(1), "u1"), ("pt", t(1), "u2"), ("ia", t(1), "u3")];
        assert_eq!(archive_runs(cow(split.iter().copied())), None);
        assert_eq!(tally(cow(split.iter().copied())).loose, 2);
        let repeat = [("ia", t(1), "u1"), ("ia", t(1), "u2")];
        assert_eq!(archive_runs(cow(repeat.iter().copied())), None);
        assert_eq!(tally(cow(repeat.iter().copied())).loose, 1);
        let runs = [("ia", t(1), "u1"), ("ia", t(2), "u1"), ("pt", t(1), "u2")];
        assert_eq!(archive_runs(cow(runs.iter().copied())), Some(2));
        assert_eq!(
            tally(cow(runs.iter().copied())),
            Tally {
                archives: 2,
                loose: 3,
                strict: 2
            }
        );
    }
}
