//! The TimeMap vocabulary shared by parsing, merging, serialising, the cache and the simulations.

use chrono::{DateTime, Utc};
use std::sync::Arc;

/// A Memento-Datetime, kept at second precision in UTC.
pub type MementoDatetime = DateTime<Utc>;

/// The configured id of an archive (`[[archives]] id`). Shared, because a large TimeMap repeats it
/// on every memento.
pub type ArchiveId = Arc<str>;

/// One memento as read from one archive's TimeMap, before we know which archive it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkMemento {
    pub uri_m: Arc<str>,
    pub datetime: MementoDatetime,
}

/// A `rel="timemap"` (or paging `self`) link: another page of the same TimeMap, or an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLink {
    pub uri: String,
    pub from: Option<MementoDatetime>,
    pub until: Option<MementoDatetime>,
}

/// What one link-format document says. Entries the parser could not use are counted in `skipped`,
/// the rest is kept: a real archive's TimeMap is never all-or-nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkTimeMap {
    pub original: Option<String>,
    pub timegate: Option<String>,
    pub self_uri: Option<String>,
    pub mementos: Vec<LinkMemento>,
    /// `rel="timemap"` links other than this document itself: further pages or an index.
    pub pages: Vec<PageLink>,
    /// Entries (or memento datetimes) that could not be understood and were left out.
    pub skipped: usize,
}

/// One memento of an aggregated TimeMap: where it is, when, and which archive holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memento {
    pub uri_m: Arc<str>,
    pub datetime: MementoDatetime,
    pub archive: ArchiveId,
}

/// An aggregated TimeMap: mementos sorted oldest first, each once ([`super::identity`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeMap {
    pub mementos: Vec<Memento>,
}

impl TimeMap {
    pub fn is_empty(&self) -> bool {
        self.mementos.is_empty()
    }

    pub fn len(&self) -> usize {
        self.mementos.len()
    }

    pub fn first(&self) -> Option<&Memento> {
        self.mementos.first()
    }

    pub fn last(&self) -> Option<&Memento> {
        self.mementos.last()
    }

    /// How many mementos each archive holds here (for the per-archive outcomes).
    pub fn count_by_archive(&self) -> std::collections::HashMap<&str, usize> {
        let mut counts = std::collections::HashMap::new();
        for m in &self.mementos {
            *counts.entry(&*m.archive).or_default() += 1;
        }
        counts
    }
}
