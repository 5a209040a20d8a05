//! The `[[archives]]` entries and the built-in list of public Memento archives.

use super::fields::opt_duration_field;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One `[[archives]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveConfig {
    pub id: String,
    /// Empty in the file means "same as id".
    #[serde(default)]
    pub name: String,
    /// TimeMap URL prefix; the URI-R is appended verbatim.
    pub timemap: String,
    /// TimeGate URL prefix; the URI-R is appended verbatim.
    pub timegate: String,
    /// Overrides `upstream.timeout` for this archive.
    #[serde(
        default,
        with = "opt_duration_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    #[serde(default = "enabled_default")]
    pub enabled: bool,
    /// Hosts (`host` or `host:port`) besides its own that this archive's redirects and
    /// `rel="timemap"` pages may lead to, e.g. where it moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_hosts: Vec<String>,
}

fn enabled_default() -> bool {
    true
}

/// The public Memento-compliant archives; `config.toml` repeats this list and a test keeps them equal.
pub(super) fn default_archives() -> Vec<ArchiveConfig> {
    tmproxy_core::archives::KNOWN
        .iter()
        .map(|a| ArchiveConfig {
            id: a.id.to_owned(),
            name: a.name.to_owned(),
            timemap: a.timemap.to_owned(),
            timegate: a.timegate.to_owned(),
            timeout: None,
            enabled: true,
            redirect_hosts: Vec::new(),
        })
        .collect()
}
