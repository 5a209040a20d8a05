//! What the cache stores for one URI-R: each archive's contribution kept apart, so `merge` can
//! refresh one archive without forgetting another, plus the bookkeeping the policy needs.

use super::case::ChangeCase;
use super::names::{Action, Match};
use super::tally::{contribution_keys, tally, Key};
use crate::timemap::answer::{Contribution, Fetch, ListedMemento};
use crate::timemap::credit::Credits;
use crate::timemap::merge;
use crate::timemap::TimeMap;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::mem::size_of;

/// Bumped whenever a stored entry could no longer be read as this struct; a disk tier drops
/// entries of another version instead of misreading them.
pub const ENTRY_FORMAT_VERSION: u32 = 1;

/// How many decisions an entry remembers: enough for an admin to see why it was (not) replaced.
pub const HISTORY_LEN: usize = 20;

/// One cached TimeMap and why it is what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// [`ENTRY_FORMAT_VERSION`] when written.
    pub version: u32,
    pub uri_r: String,
    /// One per archive, in the order the fetch listed them (merge appends archives the latest
    /// fetch did not list).
    pub contributions: Vec<Contribution>,
    /// When the content now stored was fetched (changes on store, replace and merge).
    pub fetched_at: DateTime<Utc>,
    /// The last time the archives were asked for this URI-R, whatever came of it. The TTL
    /// restarts here.
    pub checked_at: DateTime<Utc>,
    /// End of freshness as the storing policy saw it; None = fresh forever (TTL ∞, `forever`).
    pub fresh_until: Option<DateTime<Utc>>,
    /// m of the served TimeMap under loose matching.
    pub loose: usize,
    /// m of the served TimeMap under strict matching.
    pub strict: usize,
    /// a: archives with at least one memento in the served TimeMap.
    pub archives: usize,
    /// The last [`HISTORY_LEN`] decisions, oldest first.
    pub history: VecDeque<HistoryItem>,
}

/// One decision about the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryItem {
    pub at: DateTime<Utc>,
    /// The Table 1 case of the fresh fetch against the cached entry; None on a first store.
    pub case: Option<ChangeCase>,
    pub action: Action,
    /// Case 1 only: whether the loose key sets were equal (the same count can hide a swap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_set: Option<bool>,
}

impl Entry {
    /// The TimeMap to serve: every contribution's mementos, the absent-but-not-yet-dropped
    /// included, through the same merge as a fetch (sorted, each memento once).
    pub fn timemap(&self) -> TimeMap {
        merge::merge(&self.contributions)
    }

    /// A fair estimate of the entry's heap footprint, for the memory tier's weigher. Counts
    /// capacities (what is allocated), not lengths.
    pub fn approx_bytes(&self) -> usize {
        let contributions: usize = self
            .contributions
            .iter()
            .map(|c| {
                c.archive.capacity()
                    + c.mementos.capacity() * size_of::<ListedMemento>()
                    + c.mementos
                        .iter()
                        .map(|m| m.uri_m.len() + 2 * size_of::<usize>())
                        .sum::<usize>()
            })
            .sum();
        size_of::<Entry>()
            + self.uri_r.capacity()
            + self.contributions.capacity() * size_of::<Contribution>()
            + contributions
            + self.history.capacity() * size_of::<HistoryItem>()
    }

    /// m of what the entry serves under `matching` (kept on the entry so a decision need not
    /// rebuild the cached TimeMap).
    pub fn count(&self, matching: Match) -> usize {
        match matching {
            Match::Loose => self.loose,
            Match::Strict => self.strict,
        }
    }

    /// Sets `loose`, `strict` and `archives` from the contributions, an aggregator's mementos
    /// counted as the archives `credits` credits them to.
    pub fn recount(&mut self, credits: &Credits) {
        let t = tally(self.keys(credits));
        self.loose = t.loose;
        self.strict = t.strict;
        self.archives = t.archives;
    }

    /// Every memento's (archive, datetime, URI-M): what the tallies count.
    pub fn keys<'a>(&'a self, credits: &'a Credits) -> impl Iterator<Item = Key<'a>> + Clone + 'a {
        self.contributions
            .iter()
            .flat_map(move |c| contribution_keys(c, credits))
    }

    /// Records what each archive of `fresh` said on this check without touching the content:
    /// a usable answer becomes the archive's answer (status, HTTP status, report); a failure is
    /// its `last_error` while its earlier answer, whose mementos are still served, stays
    /// ([`Contribution::after_failure`]). Archives the entry does not hold are left out (they
    /// contribute nothing served).
    pub fn note_answers(&mut self, fresh: &Fetch) {
        for c in &mut self.contributions {
            if let Some(r) = fresh.archives.iter().find(|r| r.archive == c.archive) {
                if r.answer.status.answered() {
                    c.answer = r.answer.clone();
                    c.last_error = None;
                } else {
                    *c = c.after_failure(&r.answer, fresh.at);
                }
            }
        }
    }

    /// Appends a decision, forgetting the oldest beyond [`HISTORY_LEN`].
    pub fn push_history(&mut self, item: HistoryItem) {
        self.history.push_back(item);
        while self.history.len() > HISTORY_LEN {
            self.history.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::answer::{Absence, ArchiveAnswer, ArchiveStatus};
    use crate::timemap::datetime::parse_14digit;

    fn at(ts: &str) -> DateTime<Utc> {
        parse_14digit(ts).expect("test timestamp")
    }

    fn sample() -> Entry {
        Entry {
            version: ENTRY_FORMAT_VERSION,
            uri_r: "http://example.com/".to_string(),
            contributions: vec![
                Contribution {
                    archive: "ia".to_string(),
                    answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
                    fetched_at: at("20240101000000"),
                    mementos: vec![
                        ListedMemento {
                            uri_m: "http://ia/2001".into(),
                            datetime: at("20010101000000"),
                            absent: None,
                        },
                        ListedMemento {
                            uri_m: "http://ia/1999".into(),
                            datetime: at("19990101000000"),
                            absent: Some(Box::new(Absence {
                                since: at("20231225000000"),
                                confirmations: 1,
                            })),
                        },
                    ],
                    last_error: None,
                    listing: Default::default(),
                },
                Contribution {
                    archive: "pt".to_string(),
                    answer: ArchiveAnswer::failed(ArchiveStatus::Timeout, None, None),
                    fetched_at: at("20231201000000"),
                    mementos: vec![ListedMemento {
                        uri_m: "http://pt/2000".into(),
                        datetime: at("20000101000000"),
                        absent: None,
                    }],
                    last_error: None,
                    listing: Default::default(),
                },
            ],
            fetched_at: at("20240101000000"),
            checked_at: at("20240101000000"),
            fresh_until: Some(at("20240116000000")),
            loose: 3,
            strict: 3,
            archives: 2,
            history: VecDeque::from(vec![
                HistoryItem {
                    at: at("20231201000000"),
                    case: None,
                    action: Action::Stored,
                    same_set: None,
                },
                HistoryItem {
                    at: at("20240101000000"),
                    case: Some(ChangeCase::C1),
                    action: Action::Kept,
                    same_set: Some(true),
                },
            ]),
        }
    }

    #[test]
    fn entry_survives_a_json_round_trip() {
        let e = sample();
        let json = serde_json::to_string(&e).expect("serialise");
        let back: Entry = serde_json::from_str(&json).expect("deserialise");
        assert_eq!(back, e);
        // Readable by an admin: statuses, actions and cases as words and numbers.
        assert!(json.contains("\"timeout\""), "{json}");
        assert!(json.contains("\"kept\""), "{json}");
        assert!(json.contains("\"case\":1"), "{json}");
    }

    #[test]
    fn present_mementos_serialise_without_an_absent_field() {
        let m = ListedMemento {
            uri_m: "http://ia/1".into(),
            datetime: at("20010101000000"),
            absent: None,
        };
        let json = serde_json::to_string(&m).expect("serialise");
        assert!(!json.contains("absent"), "{json}");
        let back: ListedMemento = serde_json::from_str(&json).expect("deserialise");
        assert_eq!(back, m);
    }

    #[test]
    fn timemap_serves_every_contribution_including_absent_mementos_sorted() {
        let t = sample().timemap();
        let got: Vec<&str> = t.mementos.iter().map(|m| &*m.uri_m).collect();
        assert_eq!(got, ["http://ia/1999", "http://pt/2000", "http://ia/2001"]);
        assert_eq!(&*t.mementos[1].archive, "pt");
    }

    #[test]
    fn approx_bytes_grows_with_content() {
        let small = sample();
        let mut big = sample();
        big.contributions[0]
            .mementos
            .extend((0..1000).map(|i| ListedMemento {
                uri_m: format!("http://ia/web/2001{i:010}/http://example.com/").into(),
                datetime: at("20010101000000") + chrono::Duration::seconds(i),
                absent: None,
            }));
        assert!(small.approx_bytes() > size_of::<Entry>());
        // At least the URI-M bytes of the thousand added mementos.
        assert!(big.approx_bytes() > small.approx_bytes() + 40_000);
    }

    #[test]
    fn history_keeps_the_last_twenty_oldest_first() {
        let mut e = sample();
        let start = at("20240101000000");
        for i in 0..30 {
            e.push_history(HistoryItem {
                at: start + chrono::Duration::days(i),
                case: Some(ChangeCase::C2),
                action: Action::Replaced,
                same_set: None,
            });
        }
        assert_eq!(e.history.len(), HISTORY_LEN);
        assert_eq!(
            e.history.front().map(|h| h.at),
            Some(start + chrono::Duration::days(10))
        );
        assert_eq!(
            e.history.back().map(|h| h.at),
            Some(start + chrono::Duration::days(29))
        );
    }
}
