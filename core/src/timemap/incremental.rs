//! Incremental refreshes, decided without I/O: what an archive's stored contribution lets the
//! next ask of it skip ([`Listing`], [`Since`]), whether an incremental answer can be trusted,
//! and the whole contribution the policy weighs (what was stored plus what is new).
//!
//! A refresh asks an archive only for what may be new when its contribution came from a full
//! listing less than `[cache] full_refresh` ago: a CDX archive `from=` its newest stored
//! datetime, a paged TimeMap from the page that held it, any archive that sent `ETag` or
//! `Last-Modified` conditionally. What it answers must still hold the newest stored memento
//! (asked from inclusive): when it does not, the archive removed it or paged anew, and only a
//! full listing says what it holds now (docs/cache-policy.md, "Incremental refreshes").

use super::answer::{ArchiveAnswer, Contribution};
use super::identity::memento_key;
use super::model::{LinkMemento, MementoDatetime};
use super::refresh::{Listing, Refresh};
use chrono::Duration;

/// What an incremental ask of one archive sends, from its stored contribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// The newest stored memento's datetime: `from=` for a CDX archive.
    pub newest: MementoDatetime,
    /// Its URI-M: the answer must list it again, or it is not trusted.
    pub newest_uri_m: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// A paged TimeMap's page to start from.
    pub page: Option<String>,
}

impl Since {
    /// What a refresh of `c`'s archive at `now` may skip; None when it must ask in full: its
    /// last full listing is `full_refresh` old or more (or unknown), its latest answer was not
    /// a listing (a failure, a fallback), or it holds no memento to ask from.
    pub fn of(c: &Contribution, now: MementoDatetime, full_refresh: Duration) -> Option<Since> {
        let full_at = c.listing.full_at?;
        if full_refresh <= Duration::zero() || now.signed_duration_since(full_at) >= full_refresh {
            return None;
        }
        if !c.answer.status.answered() || c.answer.fallback.is_some() || c.last_error.is_some() {
            return None;
        }
        // Mementos the archive stopped listing (kept by `merge`) are not in its listing.
        let newest = c.mementos.iter().rev().find(|m| m.absent.is_none())?;
        Some(Since {
            newest: newest.datetime,
            newest_uri_m: newest.uri_m.to_string(),
            etag: c.listing.etag.clone(),
            last_modified: c.listing.last_modified.clone(),
            page: c.listing.newest_page.clone(),
        })
    }

    /// Whether an incremental answer listing `mementos` can stand for the archive's new part:
    /// it lists the newest stored memento again (asked from it, inclusive).
    pub fn trusts(&self, mementos: &[LinkMemento]) -> bool {
        let key = memento_key(&self.newest_uri_m);
        mementos
            .iter()
            .any(|m| m.datetime == self.newest && memento_key(&m.uri_m) == key)
    }
}

/// The whole contribution of an archive asked incrementally at `at`: what `prior` holds (as
/// its archive listed it: mementos it stopped listing left out) and the `new` ones, each once,
/// under `answer`. `listing` is the incremental answer's; the last full read stays `prior`'s.
pub fn extended(
    prior: &Contribution,
    answer: ArchiveAnswer,
    at: MementoDatetime,
    new: Vec<LinkMemento>,
    listing: Listing,
) -> Contribution {
    let listed = prior.mementos.iter().filter(|m| m.absent.is_none());
    let mut all: Vec<LinkMemento> = Vec::with_capacity(prior.mementos.len() + new.len());
    all.extend(listed.map(|m| LinkMemento {
        uri_m: m.uri_m.clone(),
        datetime: m.datetime,
    }));
    all.extend(new);
    let mut c = Contribution::listed(&prior.archive, answer, at, all);
    c.listing = Listing {
        refresh: Refresh::Incremental,
        full_at: prior.listing.full_at,
        ..listing
    };
    c
}

/// The contribution of an archive whose conditional ask at `at` answered 304: `prior`'s
/// mementos (as listed), now confirmed, under `answer`.
pub fn unchanged(prior: &Contribution, answer: ArchiveAnswer, at: MementoDatetime) -> Contribution {
    let mut c = extended(prior, answer, at, Vec::new(), prior.listing.clone());
    c.listing.refresh = Refresh::NotModified;
    c
}

#[cfg(test)]
mod tests;
