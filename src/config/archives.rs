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
    const LIST: &[(&str, &str, &str, &str)] = &[
        (
            "ia",
            "Internet Archive",
            "https://web.archive.org/web/timemap/link/",
            "https://web.archive.org/web/",
        ),
        (
            "archive-it",
            "Archive-It",
            "https://wayback.archive-it.org/all/timemap/link/",
            "https://wayback.archive-it.org/all/",
        ),
        (
            "arquivo",
            "Arquivo.pt (Portuguese Web Archive)",
            "https://arquivo.pt/wayback/timemap/link/",
            "https://arquivo.pt/wayback/",
        ),
        (
            "archive.today",
            "archive.today",
            "https://archive.today/timemap/",
            "https://archive.today/timegate/",
        ),
        (
            "perma",
            "Perma.cc",
            "https://perma.cc/timemap/link/",
            "https://perma.cc/timegate/",
        ),
        (
            "is",
            "Icelandic Web Archive (vefsafn.is)",
            "http://wayback.vefsafn.is/wayback/timemap/link/",
            "http://wayback.vefsafn.is/wayback/",
        ),
        (
            "ukwa",
            "UK Web Archive",
            "https://www.webarchive.org.uk/wayback/archive/timemap/link/",
            "https://www.webarchive.org.uk/wayback/archive/",
        ),
        (
            "parliament.uk",
            "UK Parliament Web Archive",
            "http://webarchive.parliament.uk/timemap/",
            "http://webarchive.parliament.uk/timegate/",
        ),
        (
            "nrs",
            "National Records of Scotland Web Archive",
            "https://webarchive.nrscotland.gov.uk/timemap/",
            "https://webarchive.nrscotland.gov.uk/timegate/",
        ),
        (
            "lac",
            "Library and Archives Canada (Government of Canada Web Archive)",
            "https://webarchiveweb.wayback.bac-lac.canada.ca/web/timemap/link/",
            "https://webarchiveweb.wayback.bac-lac.canada.ca/web/",
        ),
        (
            "banq",
            "BAnQ (Bibliothèque et Archives nationales du Québec)",
            "https://waext.banq.qc.ca/wayback/timemap/link/",
            "https://waext.banq.qc.ca/wayback/",
        ),
        (
            "nla",
            "Australian Web Archive (NLA / Trove)",
            "https://web.archive.org.au/awa/timemap/link/",
            "https://web.archive.org.au/awa/",
        ),
        (
            "ndl",
            "WARP (National Diet Library, Japan)",
            "https://warp.da.ndl.go.jp/collections/timemap/",
            "https://warp.da.ndl.go.jp/collections/timegate/",
        ),
    ];
    LIST.iter()
        .map(|&(id, name, timemap, timegate)| ArchiveConfig {
            id: id.to_owned(),
            name: name.to_owned(),
            timemap: timemap.to_owned(),
            timegate: timegate.to_owned(),
            timeout: None,
            enabled: true,
            redirect_hosts: Vec::new(),
        })
        .collect()
}
