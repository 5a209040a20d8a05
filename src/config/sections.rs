//! The `[server]`, `[upstream]`, `[cache]`, `[admin]`, `[observe]` and `[sampling]` tables, each
//! with the defaults a missing key takes.

use super::fields::{
    de_listen, de_public_url, duration_field, nets_field, opt_listen_field, size_field,
};
use super::{HttpUrl, SharedAddress};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;
use tmproxy_core::policy::{Match, PolicyKind};

/// sled's page cache defaults to 1 GiB, which would silently dwarf the hot tier's bound. The hot
/// tier is the memory we mean to spend; sled only needs enough for its index and recent writes.
/// The default of `[cache] persistent_cache`; the cache store reads it from here.
pub const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// `[server]`: where the proxy listens and how it names itself in the links it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(deserialize_with = "de_listen")]
    pub listen: SocketAddr,
    /// Empty means `http://<listen>`; stored without a trailing slash so joining paths is plain concatenation.
    #[serde(deserialize_with = "de_public_url")]
    pub public_url: String,
    /// The most bytes of request header names and values a request may carry (431 beyond).
    #[serde(with = "size_field")]
    pub max_header_bytes: u64,
    /// A client must send a whole request head within this, or its connection is closed.
    #[serde(with = "duration_field")]
    pub header_read_timeout: Duration,
    /// A connection (HTTP/1 kept alive or HTTP/2) with no request in flight for this long is closed.
    #[serde(with = "duration_field")]
    pub idle_timeout: Duration,
    /// The most connections open at once on each listener; past it a new one is closed at once.
    pub max_connections: usize,
    /// Requests per second each client address may make to the Memento routes (0 = off).
    pub rate_limit: f64,
    /// How many requests a client may make at once before `rate_limit` applies (the bucket).
    pub rate_burst: u32,
    /// Peers (load balancers) whose `X-Forwarded-For` / `Forwarded` name the client: addresses
    /// or CIDR ranges. Empty: every peer is its own client and those headers are ignored.
    #[serde(with = "nets_field")]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Whose shape `/api/json` answers in where Time Travel and MemGator disagree.
    pub compat: Compat,
    /// The most body bytes `/memento/proxy` passes on from an archive (502 beyond).
    #[serde(with = "size_field")]
    pub memento_proxy_max_bytes: u64,
    /// Mementos per page of `/timemap/{format}/{N}/{URI-R}`.
    pub page_size: usize,
    /// Where routing's profiles (`routing/`) and the sampling jobs (`sampling/`) live; empty
    /// means the parent of `[cache] path` ([`super::Config::data_dir`]).
    pub data_dir: String,
}

/// The largest `[server] page_size`: a page is rendered per request, so it stays a bounded cost.
pub const MAX_PAGE_SIZE: usize = 1_000_000;

/// `[server] compat`: the aggregator whose clients `/api/json/{DATETIME}/{URI-R}` answers as
/// they expect. Time Travel lists every URI-M at a datetime (`"uri": [...]`); MemGator answers
/// its `/memento/json` there (`"uri": "..."`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Compat {
    #[default]
    #[serde(rename = "timetravel")]
    TimeTravel,
    #[serde(rename = "memgator")]
    MemGator,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7089)),
            public_url: String::new(),
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 10_000,
            rate_limit: 0.0,
            rate_burst: 20,
            trusted_proxies: Vec::new(),
            compat: Compat::TimeTravel,
            memento_proxy_max_bytes: 4 * 1024 * 1024,
            page_size: 10_000,
            data_dir: String::new(),
        }
    }
}

/// `[upstream]`: how the proxy talks to the archives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Left unset by the file and the environment, `Config::load` makes it the shorter of its
    /// default and `timeout`; set, it may not exceed `timeout`.
    #[serde(with = "duration_field")]
    pub connect_timeout: Duration,
    /// Per archive, covering every page of its TimeMap.
    #[serde(with = "duration_field")]
    pub timeout: Duration,
    /// Whole client request: whatever has arrived by then is served.
    #[serde(with = "duration_field")]
    pub deadline: Duration,
    #[serde(with = "size_field")]
    pub max_body: u64,
    /// Bytes held from archives by every fan-out together; past it an archive's body fails.
    #[serde(with = "size_field")]
    pub max_buffered: u64,
    pub max_pages: usize,
    pub user_agent: String,
    /// A URL or an email address where archive operators can reach whoever runs this proxy,
    /// added to `user_agent` as crawlers do; empty = none (checked in `config::contact`).
    pub contact: String,
    /// Consecutive failures before an archive is skipped for `dormant_for`; 0 = never dormant.
    pub failures_before_dormant: u32,
    #[serde(with = "duration_field")]
    pub dormant_for: Duration,
    /// The longest an archive's `Retry-After` (on a 429 or 503) holds our requests to it; 0 =
    /// Retry-After is not honoured (such answers are failures like any other).
    #[serde(with = "duration_field")]
    pub max_retry_after: Duration,
    /// An archive list in MemGator's `archives.json` shape that replaces the built-in one
    /// (`config::archives_file`); empty = none.
    pub archives_file: String,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(15),
            max_body: 128 * 1024 * 1024,
            max_buffered: 512 * 1024 * 1024,
            max_pages: 10,
            user_agent: "tmproxy/0.1 (Memento aggregator)".to_owned(),
            contact: String::new(),
            failures_before_dormant: 5,
            dormant_for: Duration::from_secs(5 * 60),
            max_retry_after: Duration::from_secs(10 * 60),
            archives_file: String::new(),
        }
    }
}

/// `[cache]`: the conditional TimeMap cache (docs/cache-policy.md). Defaults are the paper's:
/// conditional replacement under loose matching with a 15-day TTL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// One of [`super::CACHE_POLICIES`], read once, with the file.
    #[serde(with = "super::fields::policy_field")]
    pub policy: PolicyKind,
    /// One of [`super::CACHE_MATCHES`], read once, with the file.
    #[serde(rename = "match", with = "super::fields::match_field")]
    pub matching: Match,
    /// The TTL of every entry in `fixed` mode (unused in `adaptive`).
    #[serde(with = "duration_field")]
    pub ttl: Duration,
    /// `fixed`: `ttl` for every entry; `adaptive`: each entry its own (docs/cache-policy.md).
    #[serde(with = "super::fields::ttl_mode_field")]
    pub ttl_mode: super::fields::TtlModeName,
    /// `adaptive`: the shortest TTL an entry gets.
    #[serde(with = "duration_field")]
    pub ttl_min: Duration,
    /// `adaptive`: the longest.
    #[serde(with = "duration_field")]
    pub ttl_max: Duration,
    /// `adaptive`: expected memento-days missed per refetch of an entry.
    pub ttl_budget: f64,
    #[serde(with = "size_field")]
    pub hot_capacity: u64,
    /// sled's page cache bound: what the persistent tier may keep in memory of what it holds.
    #[serde(with = "size_field")]
    pub persistent_cache: u64,
    /// Bytes of huge entries' renderings on disk (`<path>/renderings/`): entries too heavy for
    /// the hot tier are streamed from them on a hit. 0 = off (such hits read the entry).
    #[serde(with = "size_field")]
    pub renderings_capacity: u64,
    /// The persistent tier's directory (sled).
    pub path: String,
    pub stale_if_error: bool,
    /// 0 = off; otherwise how long past `fresh_until` an entry is served at once while it is
    /// refreshed in the background.
    #[serde(with = "duration_field")]
    pub stale_while_revalidate: Duration,
    #[serde(with = "duration_field")]
    pub min_refresh_interval: Duration,
    /// The longest an archive's contribution goes without a full listing: refreshes between
    /// ask only for what may be new. 0 = every refresh asks in full.
    #[serde(with = "duration_field")]
    pub full_refresh: Duration,
    pub redaction_confirmations: u32,
    #[serde(with = "duration_field")]
    pub redaction_grace: Duration,
    /// The longest a request waits for its entry to be written to the persistent tier; past it
    /// the answer says `not_stored` (the write may still land) and the tier is marked degraded.
    #[serde(with = "duration_field")]
    pub write_timeout: Duration,
    /// One entry per URL however spelled: keyed by the URI-R's canonical (SURT) form; false =
    /// by its exact text.
    pub canonical: bool,
    /// The shared tier on Redis, behind memory and sled: `redis://HOST:PORT/DB`, `rediss://…` or
    /// `redis+cluster://HOST:PORT,HOST:PORT,…`; empty = off. Read once, with the file.
    #[serde(with = "super::fields::shared_field")]
    pub shared: Option<SharedAddress>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            policy: PolicyKind::Conditional,
            matching: Match::Loose,
            ttl: Duration::from_secs(15 * 86_400),
            ttl_mode: super::fields::TtlModeName::Fixed,
            ttl_min: Duration::from_secs(86_400),
            ttl_max: Duration::from_secs(90 * 86_400),
            ttl_budget: 0.5,
            hot_capacity: 256 * 1024 * 1024,
            persistent_cache: SLED_CACHE_BYTES,
            renderings_capacity: 2 * 1024 * 1024 * 1024,
            path: "data/cache".to_owned(),
            stale_if_error: true,
            stale_while_revalidate: Duration::ZERO,
            min_refresh_interval: Duration::from_secs(60),
            full_refresh: Duration::from_secs(30 * 86_400),
            redaction_confirmations: 2,
            redaction_grace: Duration::from_secs(7 * 86_400),
            write_timeout: Duration::from_secs(5),
            canonical: true,
            shared: None,
        }
    }
}

/// `[admin]`: the admin API. Empty token = admin routes refused with 403.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    pub token: String,
    /// A second listener for `/admin/*` and `/metrics` only; None (`""` in the file) = those
    /// routes are served on `[server] listen` with the rest.
    #[serde(with = "opt_listen_field")]
    pub listen: Option<SocketAddr>,
}

/// By hand so that the token never reaches a log through `{:?}` of the config.
impl fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = if self.token.is_empty() {
            ""
        } else {
            "<redacted>"
        };
        f.debug_struct("AdminConfig")
            .field("token", &token)
            .field("listen", &self.listen)
            .finish()
    }
}

/// `[observe]`: the observation log the simulations replay. Empty = off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObserveConfig {
    pub log: String,
}

/// `[log]`: how the process log is written (always to stderr; `RUST_LOG` picks the levels).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
}

/// A log line as text for people, or one JSON object per line for a log pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[sampling]`: the boundary of sampling jobs submitted over HTTP, and their CDX budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingConfig {
    /// A job submitted over HTTP may only read index files inside this directory.
    pub input_dir: String,
    /// URL prefixes a job submitted over HTTP may use for `input` and `cdx_api`, each checked
    /// as the file is read.
    #[serde(with = "super::fields::http_urls_field")]
    pub allowed_urls: Vec<HttpUrl>,
    /// The most concurrent CDX requests a job may make (a spec asking more is capped).
    pub concurrency: usize,
    /// The most CDX requests per second a job may make (0 = unlimited).
    pub rate_limit: f64,
    /// The longest index line kept (its newline not counted): a longer one is set aside with its
    /// line number, skipped without being buffered.
    #[serde(with = "size_field")]
    pub max_line: u64,
    /// The most bytes an input may hold once decompressed (0 = no limit).
    #[serde(with = "size_field")]
    pub max_input_bytes: u64,
    /// The most decompressed bytes per compressed byte of a gzip input, checked past its first
    /// MiB (0 = no limit): a gzip bomb is an error naming this key.
    pub max_gzip_ratio: u64,
    /// The most a run's own account of its big structures may reach (an estimate, not the RSS;
    /// 0 = no limit): past it the run fails, naming this key.
    #[serde(with = "size_field")]
    pub max_memory: u64,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            input_dir: "data/sampling/input".to_owned(),
            allowed_urls: vec![
                HttpUrl::parse("https://web.archive.org/cdx/search/cdx").expect("an http URL")
            ],
            concurrency: 4,
            rate_limit: 1.0,
            max_line: 64 * 1024,
            max_input_bytes: 64 << 30,
            max_gzip_ratio: 100,
            max_memory: 2 << 30,
        }
    }
}
