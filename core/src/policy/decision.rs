//! What the policy answers: whether a request can be served from the cache ([`Freshness`]) and,
//! given a fresh fetch, what to store and what to serve ([`Decision`]), as enums carrying their
//! data.

use super::case::ChangeCase;
use super::entry::Entry;
use super::names::Action;

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

/// The outcome of [`Policy::decide`](super::Policy::decide): what to write and what to answer with.
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
