//! The policies and matchings by the names the configuration and the simulations use.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which replacement policy the cache runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// No cache: fetch on every request, store nothing (MemGator's behaviour).
    None,
    /// Store the first fetch and never refetch (the 2013 aggregator, TTL ∞).
    Forever,
    /// Replace with whatever the refetch brought.
    Unconditional,
    /// Replace only when the refetch is better (cases 2–5); the paper's policy.
    Conditional,
    /// Keep each archive's contribution; drop a memento only after confirmed absence.
    Merge,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 5] = [
        PolicyKind::None,
        PolicyKind::Forever,
        PolicyKind::Unconditional,
        PolicyKind::Conditional,
        PolicyKind::Merge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::None => "none",
            PolicyKind::Forever => "forever",
            PolicyKind::Unconditional => "unconditional",
            PolicyKind::Conditional => "conditional",
            PolicyKind::Merge => "merge",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A config word that names no policy or match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{got}`: expected one of {expected}")]
pub struct ParseNameError {
    pub what: &'static str,
    pub got: String,
    pub expected: &'static str,
}

impl FromStr for PolicyKind {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ParseNameError {
                what: "cache policy",
                got: s.to_string(),
                expected: "none, forever, unconditional, conditional, merge",
            })
    }
}

/// How two mementos are recognised as the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    /// (archive, datetime): survives URI-M migrations. The paper's Loose Policy, the default.
    Loose,
    /// The URI-M itself.
    Strict,
}

impl Match {
    pub fn as_str(self) -> &'static str {
        match self {
            Match::Loose => "loose",
            Match::Strict => "strict",
        }
    }
}

impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Match {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "loose" => Ok(Match::Loose),
            "strict" => Ok(Match::Strict),
            _ => Err(ParseNameError {
                what: "match",
                got: s.to_string(),
                expected: "loose, strict",
            }),
        }
    }
}

/// What a decision did to the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// First store of this URI-R.
    Stored,
    /// The fresh fetch replaced the cached content.
    Replaced,
    /// The cached content stays (its TTL restarted).
    Kept,
    /// `merge` changed the served TimeMap.
    Merged,
    /// Policy `none`: nothing is stored.
    NotStored,
    /// No archive answered: nothing changed.
    Unavailable,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Stored => "stored",
            Action::Replaced => "replaced",
            Action::Kept => "kept",
            Action::Merged => "merged",
            Action::NotStored => "not_stored",
            Action::Unavailable => "unavailable",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
