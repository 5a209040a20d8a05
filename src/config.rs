//! Configuration: the `config.toml` schema, its built-in defaults, `TMPROXY_*` environment overrides and validation.
//!
//! Each `[table]` of the file is one struct that derives `Deserialize` with `#[serde(default, deny_unknown_fields)]`
//! and implements `Default`; adding a table means adding that struct plus one field on [`Config`].
//! Durations and sizes are written as strings ("10s", "128MiB") and converted by field-level deserializers,
//! so a bad value is reported with the key it sits under, recovered from the span toml gives.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File looked for in the working directory when neither `--config` nor `TMPROXY_CONFIG` names one.
pub const DEFAULT_FILE: &str = "config.toml";
/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "TMPROXY_CONFIG";
/// Origin reported when no file was read.
pub const BUILTIN_ORIGIN: &str = "built-in defaults";

/// Every environment override and the key it replaces, so `--help` text and docs can list them.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("TMPROXY_LISTEN", "server.listen"),
    ("TMPROXY_PUBLIC_URL", "server.public_url"),
    (
        "TMPROXY_UPSTREAM_CONNECT_TIMEOUT",
        "upstream.connect_timeout",
    ),
    ("TMPROXY_UPSTREAM_TIMEOUT", "upstream.timeout"),
    ("TMPROXY_UPSTREAM_DEADLINE", "upstream.deadline"),
    ("TMPROXY_MAX_BODY", "upstream.max_body"),
    ("TMPROXY_USER_AGENT", "upstream.user_agent"),
    ("TMPROXY_ARCHIVES", "archives.enabled"),
    ("TMPROXY_CACHE_POLICY", "cache.policy"),
    ("TMPROXY_CACHE_PATH", "cache.path"),
    ("TMPROXY_ADMIN_TOKEN", "admin.token"),
    ("TMPROXY_ADMIN_LISTEN", "admin.listen"),
    ("TMPROXY_OBSERVE_LOG", "observe.log"),
];

/// The values `[cache] policy` accepts (the policies of cache-policy.md).
pub const CACHE_POLICIES: &[&str] = &["conditional", "merge", "unconditional", "forever", "none"];
/// The values `[cache] match` accepts.
pub const CACHE_MATCHES: &[&str] = &["loose", "strict"];

/// The whole configuration. Missing tables and keys take the values of [`Config::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub upstream: UpstreamConfig,
    /// When the file has any `[[archives]]` entry, the file's list replaces the built-in one entirely;
    /// merging by id would make it impossible to drop a default archive.
    pub archives: Vec<ArchiveConfig>,
    pub cache: CacheConfig,
    pub admin: AdminConfig,
    pub observe: ObserveConfig,
    pub sampling: SamplingConfig,
}

/// `[sampling]`: the boundary of sampling jobs submitted over HTTP, and their CDX budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingConfig {
    /// A job submitted over HTTP may only read index files inside this directory.
    pub input_dir: String,
    /// URL prefixes a job submitted over HTTP may use for `input` and `cdx_api`.
    pub allowed_urls: Vec<String>,
    /// The most concurrent CDX requests a job may make (a spec asking more is capped).
    pub concurrency: usize,
    /// The most CDX requests per second a job may make (0 = unlimited).
    pub rate_limit: f64,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            input_dir: "data/sampling/input".to_owned(),
            allowed_urls: vec!["https://web.archive.org/cdx/search/cdx".to_owned()],
            concurrency: 4,
            rate_limit: 1.0,
        }
    }
}

/// `[cache]`: the conditional TimeMap cache (cache-policy.md). Defaults are the paper's:
/// conditional replacement under loose matching with a 15-day TTL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// One of [`CACHE_POLICIES`]; checked by `validate`, turned into the policy type by the cache.
    pub policy: String,
    /// One of [`CACHE_MATCHES`].
    #[serde(rename = "match")]
    pub matching: String,
    #[serde(with = "duration_field")]
    pub ttl: Duration,
    #[serde(with = "size_field")]
    pub hot_capacity: u64,
    /// sled's page cache bound: what the persistent tier may keep in memory of what it holds.
    #[serde(with = "size_field")]
    pub persistent_cache: u64,
    /// The persistent tier's directory (sled).
    pub path: String,
    pub stale_if_error: bool,
    /// 0 = off; otherwise how long past `fresh_until` an entry is served at once while it is
    /// refreshed in the background.
    #[serde(with = "duration_field")]
    pub stale_while_revalidate: Duration,
    #[serde(with = "duration_field")]
    pub min_refresh_interval: Duration,
    pub redaction_confirmations: u32,
    #[serde(with = "duration_field")]
    pub redaction_grace: Duration,
    /// The longest a request waits for its entry to be written to the persistent tier; past it
    /// the answer says `not_stored` (the write may still land) and the tier is marked degraded.
    #[serde(with = "duration_field")]
    pub write_timeout: Duration,
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

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            policy: "conditional".to_owned(),
            matching: "loose".to_owned(),
            ttl: Duration::from_secs(15 * 86_400),
            hot_capacity: 256 * 1024 * 1024,
            persistent_cache: crate::cache::store::SLED_CACHE_BYTES,
            path: "data/cache".to_owned(),
            stale_if_error: true,
            stale_while_revalidate: Duration::ZERO,
            min_refresh_interval: Duration::from_secs(60),
            redaction_confirmations: 2,
            redaction_grace: Duration::from_secs(7 * 86_400),
            write_timeout: Duration::from_secs(5),
        }
    }
}

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
}

/// `[upstream]`: how the proxy talks to the archives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfig {
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
    /// Consecutive failures before an archive is skipped for `dormant_for`; 0 = never dormant.
    pub failures_before_dormant: u32,
    #[serde(with = "duration_field")]
    pub dormant_for: Duration,
}

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

/// A configuration problem: which source, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {origin}: {key}: {reason}")]
pub struct ConfigError {
    /// The file path, `env TMPROXY_X`, or [`BUILTIN_ORIGIN`].
    pub origin: String,
    /// Dotted key path, `archives[N]` 0-based for array entries; `(file)` when no key applies.
    pub key: String,
    pub reason: String,
}

impl ConfigError {
    fn new(origin: &str, key: &str, reason: impl Into<String>) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
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
        }
    }
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
            failures_before_dormant: 5,
            dormant_for: Duration::from_secs(5 * 60),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: ServerConfig::default(),
            upstream: UpstreamConfig::default(),
            archives: default_archives(),
            cache: CacheConfig::default(),
            admin: AdminConfig::default(),
            observe: ObserveConfig::default(),
            sampling: SamplingConfig::default(),
        }
    }
}

fn enabled_default() -> bool {
    true
}

/// The public Memento-compliant archives; `config.toml` repeats this list and a test keeps them equal.
fn default_archives() -> Vec<ArchiveConfig> {
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

impl Config {
    /// Parses a config file's text; `origin` names it in errors. Does not validate (see [`Config::validate`]).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| toml_error(&e, text, origin))?;
        for a in &mut cfg.archives {
            if a.name.is_empty() {
                a.name = a.id.clone();
            }
        }
        Ok(cfg)
    }

    /// Loads from `explicit` (`--config`), else `$TMPROXY_CONFIG`, else `./config.toml` if present, else the
    /// built-in defaults; then applies env overrides and validates. Returns the config and where it came from.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, String), ConfigError> {
        // Lossy rather than `var().ok()`: a non-UTF-8 value should fail to parse, not be silently ignored.
        let get = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
        Config::load_from(explicit, get, Path::new("."))
    }

    /// [`Config::load`] with the environment and working directory passed in, so tests need not mutate either.
    /// A relative `TMPROXY_CONFIG` is resolved against `cwd`.
    pub fn load_from(
        explicit: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<(Config, String), ConfigError> {
        let path: Option<PathBuf> = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => match get(CONFIG_ENV).filter(|v| !v.trim().is_empty()) {
                Some(p) => Some(cwd.join(p)),
                None => Some(cwd.join(DEFAULT_FILE)).filter(|p| p.is_file()),
            },
        };
        let (mut cfg, origin) = match path {
            Some(p) => {
                let origin = p.display().to_string();
                let text = std::fs::read_to_string(&p).map_err(|e| {
                    ConfigError::new(&origin, "(file)", format!("cannot read: {e}"))
                })?;
                (Config::from_toml_str(&text, &origin)?, origin)
            }
            None => (Config::default(), BUILTIN_ORIGIN.to_owned()),
        };
        cfg.apply_env(get)?;
        cfg.check(&origin)?;
        Ok((cfg, origin))
    }

    /// Applies the `TMPROXY_*` overrides listed in [`ENV_OVERRIDES`]; `get` reads one variable.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = env_override(&get, "TMPROXY_LISTEN", "server.listen", parse_listen)? {
            self.server.listen = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_PUBLIC_URL", "server.public_url", |s| {
            Ok(normalize_public_url(s))
        })? {
            self.server.public_url = v;
        }
        let u = &mut self.upstream;
        for (var, key, slot) in [
            (
                "TMPROXY_UPSTREAM_CONNECT_TIMEOUT",
                "upstream.connect_timeout",
                &mut u.connect_timeout,
            ),
            (
                "TMPROXY_UPSTREAM_TIMEOUT",
                "upstream.timeout",
                &mut u.timeout,
            ),
            (
                "TMPROXY_UPSTREAM_DEADLINE",
                "upstream.deadline",
                &mut u.deadline,
            ),
        ] {
            if let Some(v) = env_override(&get, var, key, parse_duration)? {
                *slot = v;
            }
        }
        if let Some(v) = env_override(&get, "TMPROXY_MAX_BODY", "upstream.max_body", parse_size)? {
            u.max_body = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_USER_AGENT", "upstream.user_agent", |s| {
            Ok(s.to_owned())
        })? {
            u.user_agent = v;
        }
        for (var, key, slot) in [
            (
                "TMPROXY_CACHE_POLICY",
                "cache.policy",
                &mut self.cache.policy,
            ),
            ("TMPROXY_CACHE_PATH", "cache.path", &mut self.cache.path),
            ("TMPROXY_ADMIN_TOKEN", "admin.token", &mut self.admin.token),
            ("TMPROXY_OBSERVE_LOG", "observe.log", &mut self.observe.log),
        ] {
            if let Some(v) = env_override(&get, var, key, |s| Ok(s.to_owned()))? {
                *slot = v;
            }
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_ADMIN_LISTEN",
            "admin.listen",
            parse_opt_listen,
        )? {
            self.admin.listen = v;
        }
        let known: Vec<&str> = self.archives.iter().map(|a| a.id.as_str()).collect();
        if let Some(ids) = env_override(&get, "TMPROXY_ARCHIVES", "archives.enabled", |s| {
            parse_id_list(s, &known)
        })? {
            for a in &mut self.archives {
                a.enabled = ids.contains(&a.id);
            }
        }
        Ok(())
    }

    /// Checks cross-field rules serde cannot express. Having no archive enabled is allowed (tests do it).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check("(validation)")
    }

    fn check(&self, origin: &str) -> Result<(), ConfigError> {
        let fail = |key: &str, reason: String| Err(ConfigError::new(origin, key, reason));
        let sm = &self.sampling;
        if sm.concurrency == 0 || sm.concurrency > 256 {
            return fail("sampling.concurrency", "must be 1-256".into());
        }
        if !(sm.rate_limit.is_finite() && sm.rate_limit >= 0.0) {
            return fail(
                "sampling.rate_limit",
                "must be a number >= 0 (0 = unlimited)".into(),
            );
        }
        for u in &sm.allowed_urls {
            if let Err(r) = check_http_url(u) {
                return fail("sampling.allowed_urls", format!("{u:?}: {r}"));
            }
        }
        let s = &self.server;
        if s.max_header_bytes < 1024 {
            return fail(
                "server.max_header_bytes",
                "must be at least 1KiB (browsers and proxies add headers of their own)".into(),
            );
        }
        if s.header_read_timeout.is_zero() {
            return fail(
                "server.header_read_timeout",
                "must be greater than 0 (a client needs time to send its request)".into(),
            );
        }
        if s.idle_timeout.is_zero() {
            return fail(
                "server.idle_timeout",
                "must be greater than 0 (a kept-alive connection needs time for its next request)"
                    .into(),
            );
        }
        if s.max_connections == 0 {
            return fail(
                "server.max_connections",
                "must be at least 1 (0 would refuse every connection)".into(),
            );
        }
        if !(s.rate_limit.is_finite() && s.rate_limit >= 0.0) {
            return fail(
                "server.rate_limit",
                "must be a number of requests per second >= 0 (0 = off)".into(),
            );
        }
        if s.rate_limit > 0.0 && s.rate_burst == 0 {
            return fail(
                "server.rate_burst",
                "must be at least 1 while rate_limit is on".into(),
            );
        }
        if self
            .admin
            .listen
            .is_some_and(|a| a == s.listen && a.port() != 0)
        {
            return fail(
                "admin.listen",
                "must differ from server.listen (leave it empty to serve the admin API there)"
                    .into(),
            );
        }
        if !s.public_url.is_empty() {
            if let Err(r) = check_http_url(&s.public_url) {
                return fail("server.public_url", r);
            }
        }
        let u = &self.upstream;
        for (key, d) in [
            ("upstream.connect_timeout", u.connect_timeout),
            ("upstream.timeout", u.timeout),
            ("upstream.deadline", u.deadline),
        ] {
            if d.is_zero() {
                return fail(key, "must be greater than 0".into());
            }
        }
        if u.connect_timeout > u.timeout {
            return fail(
                "upstream.connect_timeout",
                format!(
                    "{} is longer than upstream.timeout ({}); a connect cannot outlast the request it belongs to",
                    format_duration(u.connect_timeout),
                    format_duration(u.timeout)
                ),
            );
        }
        if u.max_body == 0 {
            return fail("upstream.max_body", "must be greater than 0".into());
        }
        if u.max_buffered == 0 {
            return fail("upstream.max_buffered", "must be greater than 0".into());
        }
        if u.max_pages == 0 {
            return fail("upstream.max_pages", "must be at least 1".into());
        }
        if u.user_agent.trim().is_empty() || u.user_agent.chars().any(char::is_control) {
            return fail(
                "upstream.user_agent",
                "must be non-empty and free of control characters (it is sent as a header)".into(),
            );
        }
        if u.failures_before_dormant > 0 && u.dormant_for.is_zero() {
            return fail(
                "upstream.dormant_for",
                "must be greater than 0 (set failures_before_dormant = 0 to disable dormancy)"
                    .into(),
            );
        }
        let c = &self.cache;
        if !CACHE_POLICIES.contains(&c.policy.as_str()) {
            return fail(
                "cache.policy",
                format!(
                    "{:?} is not a policy: use {}",
                    c.policy,
                    CACHE_POLICIES.join(", ")
                ),
            );
        }
        if !CACHE_MATCHES.contains(&c.matching.as_str()) {
            return fail(
                "cache.match",
                format!("{:?} is not a match: use loose or strict", c.matching),
            );
        }
        if c.path.trim().is_empty() && c.policy != "none" {
            return fail(
                "cache.path",
                "must name a directory for the persistent tier".into(),
            );
        }
        if c.hot_capacity == 0 {
            return fail("cache.hot_capacity", "must be greater than 0".into());
        }
        // sled refuses a cache under 256 bytes (an assertion, not an error); a MiB is the least
        // that keeps its index in memory.
        if c.persistent_cache < 1024 * 1024 {
            return fail("cache.persistent_cache", "must be at least 1MiB".into());
        }
        if c.write_timeout.is_zero() {
            return fail(
                "cache.write_timeout",
                "must be greater than 0s (every write would be abandoned)".into(),
            );
        }
        if c.redaction_confirmations == 0 {
            return fail(
                "cache.redaction_confirmations",
                "must be at least 1 (a memento missing once is not a redaction)".into(),
            );
        }
        if self.admin.token.chars().any(char::is_control) {
            return fail("admin.token", "must be free of control characters".into());
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, a) in self.archives.iter().enumerate() {
            let key = |field: &str| format!("archives[{i}].{field}");
            if a.id.is_empty() {
                return fail(&key("id"), "must not be empty".into());
            }
            if !a
                .id
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
            {
                return fail(
                    &key("id"),
                    format!("{:?} may only contain a-z, 0-9, '.', '_' and '-'", a.id),
                );
            }
            if let Some(first) = seen.insert(&a.id, i) {
                return fail(
                    &key("id"),
                    format!("duplicate id {:?} (also archives[{first}])", a.id),
                );
            }
            for (field, value) in [("timemap", &a.timemap), ("timegate", &a.timegate)] {
                if let Err(r) = check_http_url(value) {
                    return fail(&key(field), r);
                }
            }
            if a.timeout.is_some_and(|t| t.is_zero()) {
                return fail(&key("timeout"), "must be greater than 0".into());
            }
            for (j, host) in a.redirect_hosts.iter().enumerate() {
                if let Err(r) = crate::upstream::guard::parse_redirect_host(host) {
                    return fail(&format!("archives[{i}].redirect_hosts[{j}]"), r);
                }
            }
        }
        Ok(())
    }

    /// The base URL the proxy writes into its links: `public_url`, or `http://{listen}` when empty.
    pub fn public_url(&self) -> String {
        if self.server.public_url.is_empty() {
            format!("http://{}", self.server.listen)
        } else {
            self.server.public_url.trim_end_matches('/').to_owned()
        }
    }

    /// The archive's own timeout, else `upstream.timeout`.
    pub fn archive_timeout(&self, a: &ArchiveConfig) -> Duration {
        a.timeout.unwrap_or(self.upstream.timeout)
    }
}

/// Reads and parses one override; errors name the variable as origin and the config key it replaces.
fn env_override<T>(
    get: &impl Fn(&str) -> Option<String>,
    var: &str,
    key: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, ConfigError> {
    match get(var) {
        None => Ok(None),
        Some(v) => parse(&v)
            .map(Some)
            .map_err(|r| ConfigError::new(&format!("env {var}"), key, r)),
    }
}

fn parse_id_list(s: &str, known: &[&str]) -> Result<Vec<String>, String> {
    let ids: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect();
    if ids.is_empty() {
        return Err("no archive ids given (comma-separated, e.g. \"ia,arquivo\")".into());
    }
    if let Some(bad) = ids.iter().find(|id| !known.contains(&id.as_str())) {
        return Err(format!(
            "unknown archive id {bad:?} (known: {})",
            known.join(", ")
        ));
    }
    Ok(ids)
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.trim().parse().map_err(|_| {
        format!("{s:?} is not an IP:port address (e.g. \"127.0.0.1:7089\", \"[::]:7089\")")
    })
}

/// An IP:port, or blank for none (`[admin] listen`).
fn parse_opt_listen(s: &str) -> Result<Option<SocketAddr>, String> {
    if s.trim().is_empty() {
        Ok(None)
    } else {
        parse_listen(s).map(Some)
    }
}

fn normalize_public_url(s: &str) -> String {
    s.trim().trim_end_matches('/').to_owned()
}

fn check_http_url(s: &str) -> Result<(), String> {
    let u = url::Url::parse(s).map_err(|e| format!("{s:?} is not an absolute URL ({e})"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!("{s:?} must be an http:// or https:// URL"));
    }
    Ok(())
}

const DURATION_HINT: &str = r#"(use e.g. "10s", "500ms", "15d")"#;

// Largest first: parse requires units in this order, format emits them in it.
const DURATION_UNITS: &[(&str, u64)] = &[
    ("w", 7 * 86_400_000),
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses "500ms", "2s", "5m", "1h", "15d", "1w" and combinations in decreasing order ("1h30m").
/// A bare number is refused: "10" could mean seconds or milliseconds, and a wrong guess is a silent outage.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a duration {DURATION_HINT}");
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{s:?} has no unit; a unit is required {DURATION_HINT}"
        ));
    }
    let too_large = || format!("{s:?} is too large");
    let mut rest = t;
    let mut total: u64 = 0;
    let mut last_unit = usize::MAX; // index into DURATION_UNITS of the previous part
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (num, after) = rest.split_at(digits);
        let letters = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(letters);
        if num.is_empty() || unit.is_empty() {
            return Err(bad());
        }
        let Some(idx) = DURATION_UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(bad());
        };
        if last_unit != usize::MAX && idx <= last_unit {
            return Err(format!(
                "{s:?} is not a duration: combined units must go from largest to smallest, each once {DURATION_HINT}"
            ));
        }
        last_unit = idx;
        let n: u64 = num.parse().map_err(|_| too_large())?;
        let part = n.checked_mul(DURATION_UNITS[idx].1).ok_or_else(too_large)?;
        total = total.checked_add(part).ok_or_else(too_large)?;
        rest = after;
    }
    Ok(Duration::from_millis(total))
}

/// Writes a duration the way [`parse_duration`] reads it: "10s", "5m", "1h30m", "2w", "0s".
/// Sub-millisecond parts are dropped; config durations are millisecond-grained.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".to_owned();
    }
    let week = u128::from(DURATION_UNITS[0].1);
    // Weeks only when exact: "15d" reads better than "2w1d".
    if ms.is_multiple_of(week) {
        return format!("{}w", ms / week);
    }
    let mut out = String::new();
    let mut rest = ms;
    for &(unit, len) in &DURATION_UNITS[1..] {
        let len = u128::from(len);
        let n = rest / len;
        rest %= len;
        if n > 0 {
            let _ = write!(out, "{n}{unit}");
        }
    }
    out
}

const SIZE_UNITS: &[(&str, u64)] = &[
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("kB", 1_000),
    ("B", 1),
];

/// Parses "256MiB", "64KiB", "1GiB" (binary), "100MB", "64kB" (decimal), "512B", or a plain number of bytes.
/// Unit case is ignored, so "100mb" and "64KB" work too.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || {
        format!(r#"{s:?} is not a size (use e.g. "128MiB", "64KiB", "100MB", "512B", or bytes)"#)
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = t.split_at(digits);
    if num.is_empty() {
        return Err(bad());
    }
    let unit = unit.trim();
    let mult = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(unit))
            .map(|&(_, m)| m)
            .ok_or_else(bad)?
    };
    let too_large = || format!("{s:?} is too large");
    let n: u64 = num.parse().map_err(|_| too_large())?;
    n.checked_mul(mult).ok_or_else(too_large)
}

/// Writes a size the way [`parse_size`] reads it, in the exact unit giving the smallest number ("128MiB", "1TB").
pub fn format_size(n: u64) -> String {
    SIZE_UNITS
        .iter()
        .filter(|&&(_, m)| n >= m && n.is_multiple_of(m))
        .min_by_key(|&&(_, m)| n / m)
        .map_or_else(|| "0B".to_owned(), |&(u, m)| format!("{}{u}", n / m))
}

// ---- serde plumbing ----

/// Marks messages from our own value parsers: they already say what is wrong and the key
/// pinpoints them, so unlike toml's own errors they get no line suffix.
const VALUE_MARK: &str = "\u{1f}";

fn value_error<E: de::Error>(reason: String) -> E {
    E::custom(format!("{VALUE_MARK}{reason}"))
}

/// A string, or an integer so that `timeout = 10` gets the "unit is required" message instead of a type error.
enum TextOrInt {
    Text(String),
    Int(i64),
}

impl<'de> Deserialize<'de> for TextOrInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TextOrInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TextOrInt, E> {
                Ok(TextOrInt::Text(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TextOrInt, E> {
                Ok(TextOrInt::Int(v))
            }
        }
        d.deserialize_any(V)
    }
}

mod duration_field {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = match TextOrInt::deserialize(d)? {
            TextOrInt::Text(t) => t,
            TextOrInt::Int(i) => i.to_string(),
        };
        parse_duration(&text).map_err(value_error)
    }
}

mod opt_duration_field {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => duration_field::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        duration_field::deserialize(d).map(Some)
    }
}

mod size_field {
    use super::*;

    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(*n))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match TextOrInt::deserialize(d)? {
            TextOrInt::Text(t) => parse_size(&t).map_err(value_error),
            TextOrInt::Int(i) => u64::try_from(i)
                .map_err(|_| value_error(format!("{i} is not a size (it is negative)"))),
        }
    }
}

fn de_listen<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    parse_listen(&String::deserialize(d)?).map_err(value_error)
}

/// `[admin] listen`: an IP:port, or `""` for none.
mod opt_listen_field {
    use super::*;

    pub fn serialize<S: Serializer>(a: &Option<SocketAddr>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&a.map(|a| a.to_string()).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
        parse_opt_listen(&String::deserialize(d)?).map_err(value_error)
    }
}

fn de_public_url<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(normalize_public_url(&String::deserialize(d)?))
}

/// Turns a toml error into a [`ConfigError`], recovering the key path from its span.
fn toml_error(e: &toml::de::Error, text: &str, origin: &str) -> ConfigError {
    let message = e.message();
    let (ours, message) = match message.strip_prefix(VALUE_MARK) {
        Some(m) => (true, m),
        None => (false, message),
    };
    // toml's parse messages span several lines; a ConfigError is one.
    let mut reason = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let span = e.span();
    let key = span
        .as_ref()
        .and_then(|sp| key_path_at(text, sp.start))
        .unwrap_or_else(|| "(file)".to_owned());
    if let (false, Some(sp)) = (ours, span) {
        let (line, col) = line_col(text, sp.start);
        let _ = write!(reason, " (line {line}, column {col})");
    }
    ConfigError::new(origin, &key, reason)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The dotted key path of whatever sits at byte `offset`, found by replaying table headers up to that line.
/// A heuristic (it does not understand multi-line strings or inline tables), good for this flat schema.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let mut table = String::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let end = pos + line.len();
        let here = offset < end;
        if let Some((name, is_array)) = parse_header(line.trim()) {
            table = if is_array {
                let n = counts.entry(name.clone()).or_insert(0);
                let path = format!("{name}[{n}]");
                *n += 1;
                path
            } else {
                name
            };
            if here {
                return Some(table);
            }
        } else if here {
            let key = line
                .split_once('=')
                .map(|(k, _)| unquote(k.trim()))
                .filter(|k| !k.is_empty() && !k.starts_with('#'));
            return match key {
                Some(k) if table.is_empty() => Some(k),
                Some(k) => Some(format!("{table}.{k}")),
                None => Some(table).filter(|t| !t.is_empty()),
            };
        }
        pos = end;
    }
    Some(table).filter(|t| !t.is_empty())
}

/// `[name]` → (name, false), `[[name]]` → (name, true); trailing comments allowed.
fn parse_header(line: &str) -> Option<(String, bool)> {
    let (inner, is_array) = if let Some(r) = line.strip_prefix("[[") {
        (r.split_once("]]")?.0, true)
    } else {
        (line.strip_prefix('[')?.split_once(']')?.0, false)
    };
    let name = inner.trim();
    if name.is_empty() || name.contains('=') {
        return None;
    }
    Some((unquote(name), is_array))
}

fn unquote(k: &str) -> String {
    k.trim_matches(|c| c == '"' || c == '\'').to_owned()
}

#[cfg(test)]
mod tests;
