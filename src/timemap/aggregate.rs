//! What a fan-out produced: the merged TimeMap and each archive's outcome, honest about failures.

use super::model::{MementoDatetime, TimeMap};
use serde::{Deserialize, Serialize};

/// How one archive answered. Serialised in lower case, as clients see it in `archives[]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveStatus {
    /// Answered with at least one memento.
    Ok,
    /// Answered 2xx with a TimeMap that lists no memento.
    Empty,
    /// Answered 404: it holds nothing for this URI-R.
    NotFound,
    /// No (complete) answer before its timeout or the request's deadline.
    Timeout,
    /// Connection failure, non-2xx/404 status, oversized body, redirect loop…
    Error,
    /// Answered 2xx but nothing in the body could be read as a TimeMap.
    Malformed,
}

impl ArchiveStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveStatus::Ok => "ok",
            ArchiveStatus::Empty => "empty",
            ArchiveStatus::NotFound => "not_found",
            ArchiveStatus::Timeout => "timeout",
            ArchiveStatus::Error => "error",
            ArchiveStatus::Malformed => "malformed",
        }
    }

    /// True when the archive gave a usable answer (even "nothing here"): the aggregate may then
    /// say 404 with confidence. False when we could not learn what the archive holds.
    pub fn answered(self) -> bool {
        matches!(
            self,
            ArchiveStatus::Ok | ArchiveStatus::Empty | ArchiveStatus::NotFound
        )
    }
}

/// One archive's part in an aggregate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveOutcome {
    pub id: String,
    pub status: ArchiveStatus,
    /// The last HTTP status it sent, when it sent one.
    pub http_status: Option<u16>,
    /// Mementos it contributed (after its own duplicates were removed).
    pub mementos: usize,
    pub elapsed_ms: u64,
    /// Why it failed, or what was odd (`skipped 3 malformed entries`, `connection refused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// TimeMap pages fetched from it (1 unless it pages).
    pub pages: usize,
    /// Entries it sent that could not be read and were left out.
    pub skipped: usize,
}

/// The answer to one TimeMap request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    pub uri_r: String,
    pub timemap: TimeMap,
    /// In the configured archive order.
    pub outcomes: Vec<ArchiveOutcome>,
    pub fetched_at: MementoDatetime,
}

/// What the aggregate means for a client, before any cache has a say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At least one memento; `partial` when some archive could not be asked or read.
    Found { partial: bool },
    /// No memento among the archives that answered; `partial` when others failed, so the
    /// answer is "not in the archives that could be asked" and says which could not.
    NotArchived { partial: bool },
    /// No archive gave a usable answer (or none is enabled): we know nothing.
    /// `timed_out` when every failure was a timeout (→ 504 rather than 502).
    Unavailable { timed_out: bool },
}

impl Aggregate {
    pub fn verdict(&self) -> Verdict {
        let answered = self.outcomes.iter().filter(|o| o.status.answered()).count();
        let partial = answered < self.outcomes.len();
        if !self.timemap.is_empty() {
            Verdict::Found { partial }
        } else if answered > 0 {
            Verdict::NotArchived { partial }
        } else {
            Verdict::Unavailable {
                timed_out: !self.outcomes.is_empty()
                    && self
                        .outcomes
                        .iter()
                        .all(|o| o.status == ArchiveStatus::Timeout),
            }
        }
    }

    /// The archives whose answer is missing from the aggregate.
    pub fn missing(&self) -> impl Iterator<Item = &ArchiveOutcome> {
        self.outcomes.iter().filter(|o| !o.status.answered())
    }
}
