//! The `[[archives]]` entries and the built-in list of public Memento archives.

use super::fields::opt_duration_field;
use super::{HttpUrl, RedirectHost};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tmproxy_core::cdx::replay::Replay;
use tmproxy_core::raw_memento::RawForm;

/// One `[[archives]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveConfig {
    pub id: String,
    /// Empty in the file means "same as id".
    #[serde(default)]
    pub name: String,
    /// How its mementos are listed: a link-format TimeMap (`timemap`), a CDX API (`cdx`), or
    /// another aggregator's link-format TimeMap (`aggregator`).
    #[serde(default, skip_serializing_if = "ArchiveKind::is_timemap")]
    pub kind: ArchiveKind,
    /// TimeMap URL prefix; the URI-R is appended verbatim. Required for `kind = "timemap"`
    /// (None: empty or absent).
    #[serde(default, with = "super::fields::opt_http_url_field")]
    pub timemap: Option<HttpUrl>,
    /// TimeGate URL prefix; the URI-R is appended verbatim.
    #[serde(with = "super::fields::http_url_field")]
    pub timegate: HttpUrl,
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
    #[serde(
        default,
        with = "super::fields::redirect_hosts_field",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub redirect_hosts: Vec<RedirectHost>,
    /// `kind = "cdx"`: the CDX API endpoint (`https://host/cdx/search/cdx`, `http://host/coll/cdx`).
    #[serde(
        default,
        with = "super::fields::opt_http_url_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub cdx: Option<HttpUrl>,
    /// `kind = "cdx"`: the CDX API's dialect, or `auto` to tell it from the answers.
    #[serde(default, skip_serializing_if = "CdxDialect::is_auto")]
    pub dialect: CdxDialect,
    /// `kind = "cdx"`: the URI-M of a capture, with `{timestamp}` and `{url}` put in. Checked
    /// once, as the file is read.
    #[serde(
        default,
        with = "super::fields::replay_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub replay: Option<Replay>,
    /// Asked on every miss whatever its routing profile says (`[routing] mode = "learned"`);
    /// the Internet Archive (`ia`) always is.
    #[serde(default, skip_serializing_if = "is_false")]
    pub always: bool,
    /// How `/memento/proxy` makes the raw form of this archive's URI-Ms, asked before the
    /// listed one: `true` (the `id_` rewrite), `false` (none) or a template. Checked once, as
    /// the file is read.
    #[serde(
        default,
        with = "super::fields::raw_field",
        skip_serializing_if = "RawForm::is_default"
    )]
    pub raw: RawForm,
    /// The most of our requests in flight to it at once, every fan-out and `/memento/proxy`
    /// together (1 to [`MAX_CONCURRENCY`]).
    #[serde(
        default = "max_concurrency_default",
        skip_serializing_if = "is_max_concurrency_default"
    )]
    pub max_concurrency: u32,
    /// The most of our requests a second it is sent, paced one period apart; 0 = unlimited.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate: f64,
}

/// The most `[[archives]] max_concurrency` may be: more is no bound at all.
pub const MAX_CONCURRENCY: u32 = 1024;

/// `[[archives]] max_concurrency` left out: a handful, as a polite crawler keeps per host.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 8;

fn max_concurrency_default() -> u32 {
    DEFAULT_MAX_CONCURRENCY
}

fn is_max_concurrency_default(n: &u32) -> bool {
    *n == DEFAULT_MAX_CONCURRENCY
}

fn is_zero(r: &f64) -> bool {
    *r == 0.0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `[[archives]] kind`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveKind {
    /// Asked for its link-format TimeMap at `timemap` + URI-R.
    #[default]
    Timemap,
    /// Asked through its CDX API at `cdx`; URI-Ms are built from `replay`.
    Cdx,
    /// Another aggregator (MemGator, a Time Travel-shaped service, another tmproxy), asked
    /// like `timemap`; each memento it lists is credited to the archive whose host it is on.
    Aggregator,
}

impl ArchiveKind {
    fn is_timemap(&self) -> bool {
        *self == ArchiveKind::Timemap
    }
}

/// `[[archives]] dialect` of a CDX API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CdxDialect {
    /// Told from the answers (IA's page count is a bare number, its rows an array of arrays).
    #[default]
    Auto,
    Ia,
    Pywb,
}

impl CdxDialect {
    fn is_auto(&self) -> bool {
        *self == CdxDialect::Auto
    }

    /// The dialect to read answers in, or None to tell it from them.
    pub fn known(self) -> Option<tmproxy_core::cdx::Dialect> {
        match self {
            CdxDialect::Auto => None,
            CdxDialect::Ia => Some(tmproxy_core::cdx::Dialect::Ia),
            CdxDialect::Pywb => Some(tmproxy_core::cdx::Dialect::Pywb),
        }
    }
}

impl ArchiveConfig {
    /// An enabled `kind = "timemap"` archive with every optional key at its default, to fill
    /// the rest of an entry built in code (`..ArchiveConfig::timemap_default()`). `timegate` is
    /// required and has no default: it is a reserved `.invalid` name here, which no lookup
    /// resolves, for the entry to replace.
    pub fn timemap_default() -> ArchiveConfig {
        ArchiveConfig {
            id: String::new(),
            name: String::new(),
            kind: ArchiveKind::Timemap,
            timemap: None,
            timegate: HttpUrl::parse("http://timegate.invalid/").expect("an http URL"),
            timeout: None,
            enabled: true,
            redirect_hosts: Vec::new(),
            cdx: None,
            dialect: CdxDialect::Auto,
            replay: None,
            always: false,
            raw: RawForm::Id,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            rate: 0.0,
        }
    }
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
            // The built-in list is checked by a test, as `config.toml`'s copy of it.
            timemap: Some(HttpUrl::parse(a.timemap).expect("a built-in archive's TimeMap URL")),
            timegate: HttpUrl::parse(a.timegate).expect("a built-in archive's TimeGate URL"),
            timeout: None,
            enabled: true,
            redirect_hosts: Vec::new(),
            ..ArchiveConfig::timemap_default()
        })
        .collect()
}
