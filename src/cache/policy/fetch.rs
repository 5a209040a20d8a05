//! One fan-out's answers as the policy takes them: per archive, before any policy has a say.

use super::tally::{fetch_keys, tally};
use super::Match;
use crate::cache::entry::ArchiveReport;
use crate::timemap::aggregate::{Aggregate, ArchiveStatus};
use crate::timemap::{LinkMemento, TimeMap};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

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
