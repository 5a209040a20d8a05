//! The aggregate of several archives' TimeMaps, and the closest-memento choice on it.

use super::answer::Contribution;
use super::credit::Credits;
use super::identity::firsts;
use super::model::{Memento, MementoDatetime, TimeMap};
use rustc_hash::FxHashSet;
use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::collections::HashMap;
use std::sync::Arc;

/// The union of the contributions, sorted oldest first, ties in archive order, each memento
/// once: listed again (by its archive or another) under an equal URI-M ([`super::identity`]),
/// only its first place stays, in that order.
///
/// MemGator and pywb list duplicates (an archive often lists a memento as both `first memento`
/// and `memento`); a client counting mementos would be misled. Two archives can also list the
/// very same URI-M (a mirror, or an aggregator configured as an archive): it is one memento,
/// listed once, where it is listed first. Distinct URI-Ms at one datetime all stay, whichever
/// archive listed them: an aggregator's TimeMap holds several archives' captures of one second.
/// Sorting is O(n log n) whatever the input order, so newest-first TimeMaps cost the same.
/// The contributions are kept (they are the cache entry), so each URI-M served is copied once.
pub fn merge(contributions: &[Contribution]) -> TimeMap {
    merge_with(contributions, &Credits::default(), |_| true).timemap
}

/// An aggregator's contribution (by position) and the archives its kept mementos are credited
/// to, each with how many, in order of first appearance.
pub type Credited = (usize, Vec<(Arc<str>, usize)>);

/// A merge and what each contribution came to in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub timemap: TimeMap,
    /// Per contribution: its mementos in the TimeMap.
    pub kept: Vec<usize>,
    /// Per contribution: its mementos left out because another archive's listing of them comes
    /// first (earlier datetime, then configured order; an archive's own repeats are not
    /// counted): what `X-Memento-Archives` calls `dup`.
    pub duplicates: Vec<usize>,
    /// Per aggregator's contribution, whom its kept mementos are credited to.
    pub credited: Vec<Credited>,
}

/// [`merge`], each URI-M first passed through `servable` (one that is not is left out), and
/// an aggregator's mementos ([`Credits`]) credited to the archives whose hosts they are on.
pub fn merge_with(
    contributions: &[Contribution],
    credits: &Credits,
    servable: impl Fn(&str) -> bool,
) -> Merged {
    let total: usize = contributions.iter().map(|c| c.mementos.len()).sum();
    // (datetime, archive rank, position within the archive): sorting by this tuple gives the
    // datetime order, ties in archive order, and keeps each archive's own order stable.
    // Each archive's run sorted on its own (found sorted, or newest first, in one pass: as
    // archives list them), then the runs merged: sorting them all together compared every
    // memento anew, most of a small merge's time.
    // A second copy of a few thousand keys is nothing; of a million-memento merge's it would
    // be tens of MB more at its peak: those are sorted together, in place.
    let merging = total <= MERGED_RUNS_UP_TO;
    let mut runs: Vec<(MementoDatetime, u32, u32)> = Vec::with_capacity(total);
    let mut ends = Vec::with_capacity(contributions.len());
    for (rank, c) in contributions.iter().enumerate() {
        let start = runs.len();
        for (pos, m) in c.mementos.iter().enumerate() {
            if servable(&m.uri_m) {
                runs.push((m.datetime, rank as u32, pos as u32));
            }
        }
        if merging {
            runs[start..].sort_unstable();
        }
        ends.push(runs.len());
    }
    let order = if merging {
        merge_runs(runs, &ends)
    } else {
        runs.sort_unstable();
        runs
    };
    let uri_m = |&(_, rank, pos): &(MementoDatetime, u32, u32)| {
        &*contributions[rank as usize].mementos[pos as usize].uri_m
    };
    let firsts = firsts(order.iter().map(uri_m));
    let mut duplicates = vec![0; contributions.len()];
    // (archive rank, position of the first): an archive listing another's memento twice has
    // one duplicate, not two.
    let mut counted: FxHashSet<(u32, u32)> = FxHashSet::default();
    for (k, first) in order.iter().zip(&firsts) {
        if let Some(f) = *first {
            let by = order[f as usize].1;
            if by != k.1 && counted.insert((k.1, f)) {
                duplicates[k.1 as usize] += 1;
            }
        }
    }
    let order = order
        .into_iter()
        .zip(firsts)
        .filter_map(|(k, first)| first.is_none().then_some(k));

    // One shared id per archive, and per credited archive: a large TimeMap repeats it on every
    // memento.
    let ids: Vec<Arc<str>> = contributions
        .iter()
        .map(|c| Arc::from(c.archive.as_str()))
        .collect();
    let aggregators: Vec<bool> = contributions
        .iter()
        .map(|c| credits.is_aggregator(&c.archive))
        .collect();
    let mut interned: HashMap<String, Arc<str>> = HashMap::new();
    let mut kept = vec![0; contributions.len()];
    let mut credited: Vec<Credited> = Vec::new();
    let mementos = order
        .map(|(datetime, rank, pos)| {
            let (rank, pos) = (rank as usize, pos as usize);
            kept[rank] += 1;
            let uri_m = contributions[rank].mementos[pos].uri_m.clone();
            let archive = if aggregators[rank] {
                let id = credits.credit(&contributions[rank].archive, &uri_m);
                let id = match interned.get(id.as_ref()) {
                    Some(a) => a.clone(),
                    None => {
                        let a: Arc<str> = Arc::from(id.as_ref());
                        interned.insert(id.into_owned(), a.clone());
                        a
                    }
                };
                tally_credit(&mut credited, rank, &id);
                id
            } else {
                ids[rank].clone()
            };
            Memento {
                uri_m,
                datetime,
                archive,
            }
        })
        .collect();
    Merged {
        timemap: TimeMap { mementos },
        kept,
        duplicates,
        credited,
    }
}

/// How many mementos a merge takes by merging its archives' sorted runs ([`merge_runs`]).
const MERGED_RUNS_UP_TO: usize = 1 << 16;

/// The sorted runs of `runs` (run i ends at `ends[i]`) merged into one sorted vector:
/// O(n log k) comparisons for k runs, a heap holding each run's next element.
fn merge_runs<T: Ord + Copy>(runs: Vec<T>, ends: &[usize]) -> Vec<T> {
    if ends.len() <= 1 {
        return runs;
    }
    // (element, its index, the end of its run), smallest element on top.
    let mut heads = BinaryHeap::with_capacity(ends.len());
    let mut start = 0;
    for &end in ends {
        if let Some(&first) = runs.get(start).filter(|_| start < end) {
            heads.push(Reverse((first, start, end)));
        }
        start = end;
    }
    let mut merged = Vec::with_capacity(runs.len());
    while let Some(mut top) = heads.peek_mut() {
        let Reverse((smallest, at, end)) = *top;
        merged.push(smallest);
        match runs.get(at + 1).filter(|_| at + 1 < end) {
            // Replaced in place: one sift down, not a pop and a push.
            Some(&next) => *top = Reverse((next, at + 1, end)),
            None => {
                PeekMut::pop(top);
            }
        }
    }
    merged
}

/// Counts one more memento of the aggregator at `rank` credited to `id`.
fn tally_credit(credited: &mut Vec<Credited>, rank: usize, id: &Arc<str>) {
    let at = match credited.iter().position(|(r, _)| *r == rank) {
        Some(at) => at,
        None => {
            credited.push((rank, Vec::new()));
            credited.len() - 1
        }
    };
    let per = &mut credited[at].1;
    // An aggregator's mementos are on a few dozen hosts at most: a scan is cheaper than a map.
    match per.iter_mut().find(|(a, _)| Arc::ptr_eq(a, id)) {
        Some((_, n)) => *n += 1,
        None => per.push((id.clone(), 1)),
    }
}

/// The neighbourhood of the memento closest to a requested datetime, as a TimeGate answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closest {
    pub first: usize,
    pub prev: Option<usize>,
    pub closest: usize,
    pub next: Option<usize>,
    pub last: usize,
}

/// Picks the memento with the smallest absolute time difference to `target`. Ties go to the
/// earlier memento; before the first → first; after the last → last. None for an empty TimeMap.
///
/// `prev`/`next` are the nearest mementos at an earlier / later datetime in the aggregate (another
/// archive's memento can be the neighbour, which is why the TimeGate answers from the aggregate);
/// mementos sharing the closest one's datetime are neither.
pub fn closest(timemap: &TimeMap, target: MementoDatetime) -> Option<Closest> {
    let ms = &timemap.mementos;
    if ms.is_empty() {
        return None;
    }
    // First index whose datetime is >= target.
    let after = ms.partition_point(|m| m.datetime < target);
    let closest = if after == 0 {
        0
    } else if after == ms.len() {
        ms.len() - 1
    } else {
        let before = after - 1;
        let d_before = target - ms[before].datetime;
        let d_after = ms[after].datetime - target;
        if d_after < d_before {
            after
        } else {
            // Equal distance: the earlier one. Several mementos may share the earlier datetime;
            // the first of them in archive order is the one to pick.
            let dt = ms[before].datetime;
            ms[..=before].partition_point(|m| m.datetime < dt)
        }
    };
    // An exact match may also have equal-datetime siblings: pick the first in archive order.
    let closest = {
        let dt = ms[closest].datetime;
        ms[..=closest].partition_point(|m| m.datetime < dt)
    };
    let dt = ms[closest].datetime;
    let next = ms.partition_point(|m| m.datetime <= dt);
    let prev_dt = closest.checked_sub(1).map(|i| ms[i].datetime);
    Some(Closest {
        first: 0,
        // The first memento of the previous datetime, so "prev" and the group at that datetime
        // agree on which memento leads it.
        prev: prev_dt.map(|p| ms.partition_point(|m| m.datetime < p)),
        closest,
        next: (next < ms.len()).then_some(next),
        last: ms.len() - 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
    use crate::timemap::datetime::parse_14digit;
    use crate::timemap::LinkMemento;

    proptest::proptest! {
        #![proptest_config(crate::prop_tests::config())]

        /// Merging sorted runs is sorting their concatenation, for any runs (empty ones, one,
        /// equal elements across runs).
        #[test]
        fn merged_runs_are_the_runs_sorted_together(
            mut runs in proptest::collection::vec(proptest::collection::vec(0u8..20, 0..12), 0..6),
        ) {
            let mut all = Vec::new();
            let mut ends = Vec::new();
            for run in &mut runs {
                run.sort_unstable();
                all.extend_from_slice(run);
                ends.push(all.len());
            }
            let merged = merge_runs(all.clone(), &ends);
            all.sort_unstable();
            proptest::prop_assert_eq!(merged, all);
        }
    }

    /// A contribution as an archive listed it, unsorted and with its duplicates.
    fn contribution(archive: &str, mementos: Vec<LinkMemento>) -> Contribution {
        Contribution {
            archive: archive.to_string(),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: parse_14digit("20240101000000").expect("ts"),
            mementos: mementos.into_iter().map(Into::into).collect(),
            last_error: None,
            listing: Default::default(),
        }
    }

    fn lm(uri: &str, ts: &str) -> LinkMemento {
        LinkMemento {
            uri_m: uri.into(),
            datetime: parse_14digit(ts).expect("test timestamp"),
        }
    }

    fn tm(entries: &[(&str, &str)]) -> TimeMap {
        TimeMap {
            mementos: entries
                .iter()
                .map(|(a, ts)| Memento {
                    uri_m: format!("http://{a}/{ts}").into(),
                    datetime: parse_14digit(ts).expect("test timestamp"),
                    archive: Arc::from(*a),
                })
                .collect(),
        }
    }

    #[test]
    fn merge_is_sorted_union_without_duplicates() {
        let ia = vec![
            lm("http://ia/2009", "20091027204954"),
            lm("http://ia/2000", "20000620180259"),
            lm("http://ia/2000", "20000620180259"), // exact duplicate
            lm("http://ia/2000b", "20000620180259"), // same second, other URI-M: kept
            lm("HTTP://IA:80/2000", "20000620180259"), // the first URI-M, spelt otherwise
        ];
        let pt = vec![
            lm("http://pt/2005", "20050101000000"),
            lm("http://pt/2009", "20091027204954"),
        ];
        let merged = merge(&[contribution("ia", ia), contribution("arquivo", pt)]);
        let got: Vec<&str> = merged.mementos.iter().map(|m| &*m.uri_m).collect();
        // Ties (2009) in archive order: ia before arquivo; one second's URI-Ms in listed order.
        assert_eq!(
            got,
            [
                "http://ia/2000",
                "http://ia/2000b",
                "http://pt/2005",
                "http://ia/2009",
                "http://pt/2009"
            ]
        );
        assert_eq!(merged.first().map(|m| &*m.archive), Some("ia"));
        assert_eq!(merged.last().map(|m| &*m.archive), Some("arquivo"));
    }

    #[test]
    fn the_same_uri_m_from_two_archives_is_listed_once() {
        let shared = "http://mirror.example/20100101000000/http://e.com/";
        let ia = vec![
            lm(shared, "20100101000000"),
            lm("http://ia/2011", "20110101000000"),
        ];
        let pt = vec![
            lm(shared, "20100101000000"),
            // Same datetime, another URI-M: a distinct memento, kept.
            lm("http://pt/2010", "20100101000000"),
            // The same URI-M at another datetime: the same memento, listed once at its first.
            lm(shared, "20120101000000"),
        ];
        let all = [contribution("ia", ia), contribution("pt", pt)];
        let Merged {
            timemap: merged,
            kept,
            duplicates,
            ..
        } = merge_with(&all, &Credits::default(), |_| true);
        // pt lists ia's memento twice (at two datetimes): one duplicate.
        assert_eq!((kept, duplicates), (vec![2, 1], vec![0, 1]));
        let got: Vec<(&str, &str)> = merged
            .mementos
            .iter()
            .map(|m| (&*m.archive, &*m.uri_m))
            .collect();
        assert_eq!(
            got,
            [
                ("ia", shared),
                ("pt", "http://pt/2010"),
                ("ia", "http://ia/2011"),
            ],
            "the shared URI-M once, pt's own 2010 memento kept"
        );
    }

    #[test]
    fn merge_of_nothing_is_empty() {
        assert!(merge(&[]).is_empty());
        assert!(merge(&[contribution("ia", vec![])]).is_empty());
    }

    #[test]
    fn newest_first_input_merges_like_oldest_first() {
        let oldest: Vec<LinkMemento> = (0..1000)
            .map(|i| LinkMemento {
                uri_m: format!("http://ia/{i}").into(),
                datetime: parse_14digit("20000101000000").expect("ts")
                    + chrono::Duration::seconds(i),
            })
            .collect();
        let newest: Vec<LinkMemento> = oldest.iter().rev().cloned().collect();
        let a = merge(&[contribution("ia", oldest)]);
        let b = merge(&[contribution("ia", newest)]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 1000);
    }

    fn at(ts: &str) -> MementoDatetime {
        parse_14digit(ts).expect("test timestamp")
    }

    #[test]
    fn closest_picks_smallest_difference() {
        let t = tm(&[("ia", "2000"), ("ia", "2004"), ("pt", "2010")]);
        let c = closest(&t, at("2005")).expect("non-empty");
        assert_eq!((c.prev, c.closest, c.next), (Some(0), 1, Some(2)));
        let c = closest(&t, at("2008")).expect("non-empty");
        assert_eq!(c.closest, 2);
        assert_eq!(c.next, None);
    }

    #[test]
    fn closest_tie_goes_to_earlier() {
        let t = tm(&[("ia", "20000101000000"), ("ia", "20000101000010")]);
        let c = closest(&t, at("20000101000005")).expect("non-empty");
        assert_eq!(c.closest, 0);
    }

    #[test]
    fn closest_before_first_and_after_last() {
        let t = tm(&[("ia", "2000"), ("ia", "2004")]);
        assert_eq!(closest(&t, at("1990")).map(|c| c.closest), Some(0));
        assert_eq!(closest(&t, at("2030")).map(|c| c.closest), Some(1));
        assert_eq!(closest(&TimeMap::default(), at("2030")), None);
    }

    #[test]
    fn closest_among_equal_datetimes_is_first_in_archive_order() {
        let t = tm(&[
            ("ia", "2000"),
            ("ia", "2004"),
            ("pt", "2004"),
            ("uk", "2008"),
        ]);
        let c = closest(&t, at("2004")).expect("non-empty");
        // pt's 2004 memento shares the closest datetime: it is not "next".
        assert_eq!((c.prev, c.closest, c.next), (Some(0), 1, Some(3)));
        let c = closest(&t, at("2008")).expect("non-empty");
        assert_eq!((c.prev, c.closest, c.next), (Some(1), 3, None));
        // Nearer the pair at 2004 than 2000: still the first of the pair.
        let c = closest(&t, at("20030101000000")).expect("non-empty");
        assert_eq!(c.closest, 1);
        // Exactly between 2004 and 2008 (both ends at the same distance): the earlier, 2004's first.
        let t = tm(&[
            ("ia", "20040101000000"),
            ("pt", "20040101000000"),
            ("uk", "20040101000020"),
        ]);
        let c = closest(&t, at("20040101000010")).expect("non-empty");
        assert_eq!(c.closest, 0);
    }
}
