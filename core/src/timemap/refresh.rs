//! How an archive's listing was read and what that answer lets the next ask skip: stored with
//! each archive's contribution, read by incremental refreshes ([`super::incremental`]).

use super::model::MementoDatetime;
use serde::{Deserialize, Serialize};

/// How an archive's listing was last read. Its name is the metric's `kind` label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refresh {
    /// Every page, every row: the whole TimeMap.
    #[default]
    Full,
    /// Only what may be new since the newest stored memento.
    Incremental,
    /// A conditional ask answered 304: unchanged.
    NotModified,
}

impl Refresh {
    pub fn as_str(self) -> &'static str {
        match self {
            Refresh::Full => "full",
            Refresh::Incremental => "incremental",
            Refresh::NotModified => "not_modified",
        }
    }

    pub const ALL: [Refresh; 3] = [Refresh::Full, Refresh::Incremental, Refresh::NotModified];
}

/// What the answer a contribution's mementos came from lets a later ask skip. Kept with the
/// contribution (not its latest answer), so a kept entry's validators are those of the
/// mementos it serves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// How the mementos were last read.
    #[serde(default)]
    pub refresh: Refresh,
    /// When the archive's whole listing was last read; None: never whole (a fallback), or
    /// stored before incremental refreshes (both ask in full next time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_at: Option<MementoDatetime>,
    /// The first page's `ETag`, when the archive sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The first page's `Last-Modified`, when the archive sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// A paged TimeMap's page that held the newest memento (None: one page, or a CDX archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_page: Option<String>,
}

impl Listing {
    /// Whether there is anything to store beyond the default.
    pub fn is_default(&self) -> bool {
        *self == Listing::default()
    }
}
