//! The cross-field rules serde cannot express, checked once the file and the environment are merged.

use super::sections::UpstreamConfig;
use super::values::{check_http_url, format_duration};
use super::{ArchiveKind, CdxDialect, Config, ConfigError, HttpUrl, BUILTIN_ORIGIN};
use std::collections::HashMap;
use tmproxy_core::policy::PolicyKind;

impl Config {
    /// Checks cross-field rules serde cannot express. Having no archive enabled is allowed (tests do it).
    /// A config built in code sets every key itself, so both timeouts count as explicit.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check("(validation)")?;
        let origin = Some("(validation)");
        self.connect_within_timeout(origin, origin)
    }

    /// Settles `upstream.connect_timeout` once the file and the environment are merged. Unset, it
    /// follows `upstream.timeout` down (the shorter of its default and the timeout), so a config
    /// that only shortens the timeout starts. Set, it may not outlast the timeout; the error
    /// names where each value came from. `None` = not set by the file nor the environment.
    pub(super) fn settle_connect_timeout(
        &mut self,
        connect_from: Option<&str>,
        timeout_from: Option<&str>,
    ) -> Result<(), ConfigError> {
        if connect_from.is_none() {
            let u = &mut self.upstream;
            u.connect_timeout = UpstreamConfig::default().connect_timeout.min(u.timeout);
            return Ok(());
        }
        self.connect_within_timeout(connect_from, timeout_from)
    }

    /// A connect cannot outlast the request it belongs to. Checked only for a connect timeout
    /// someone set: a default one is settled to fit (see [`Config::settle_connect_timeout`]).
    fn connect_within_timeout(
        &self,
        connect_from: Option<&str>,
        timeout_from: Option<&str>,
    ) -> Result<(), ConfigError> {
        let u = &self.upstream;
        let Some(connect_from) = connect_from else {
            return Ok(());
        };
        if u.connect_timeout <= u.timeout {
            return Ok(());
        }
        let timeout_from = timeout_from.unwrap_or(BUILTIN_ORIGIN);
        Err(ConfigError::new(
            connect_from,
            "upstream.connect_timeout",
            format!(
                "{} is longer than upstream.timeout ({}, from {timeout_from}); a connect cannot outlast the request it belongs to",
                format_duration(u.connect_timeout),
                format_duration(u.timeout)
            ),
        ))
    }

    pub(super) fn check(&self, origin: &str) -> Result<(), ConfigError> {
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
        if sm.max_line < 256 || sm.max_line > 64 << 20 {
            return fail(
                "sampling.max_line",
                "must be 256B-64MiB (a line is held whole up to it)".into(),
            );
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
        if s.memento_proxy_max_bytes == 0 {
            return fail(
                "server.memento_proxy_max_bytes",
                "must be at least 1 byte (a memento's body is never passed on cut short)".into(),
            );
        }
        if !(1..=super::sections::MAX_PAGE_SIZE).contains(&s.page_size) {
            return fail(
                "server.page_size",
                format!(
                    "must be from 1 to {} mementos (each page is rendered per request)",
                    super::sections::MAX_PAGE_SIZE
                ),
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
        // The timeout before the connect timeout: an unset connect timeout follows it, so a zero
        // timeout must be blamed on the key the user wrote.
        for (key, d) in [
            ("upstream.timeout", u.timeout),
            ("upstream.deadline", u.deadline),
            ("upstream.connect_timeout", u.connect_timeout),
        ] {
            if d.is_zero() {
                return fail(key, "must be greater than 0".into());
            }
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
        if !u.contact.is_empty() {
            if let Err(r) = super::contact::check(&u.contact) {
                return fail("upstream.contact", r);
            }
        }
        if u.failures_before_dormant > 0 && u.dormant_for.is_zero() {
            return fail(
                "upstream.dormant_for",
                "must be greater than 0 (set failures_before_dormant = 0 to disable dormancy)"
                    .into(),
            );
        }
        let c = &self.cache;
        if c.path.trim().is_empty() && c.policy != PolicyKind::None {
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
        if c.ttl_max.is_zero() {
            return fail(
                "cache.ttl_max",
                "must be greater than 0s (use ttl_mode = \"fixed\" with ttl = \"0s\" to ask on every request)".into(),
            );
        }
        if c.ttl_max > MAX_TTL {
            return fail(
                "cache.ttl_max",
                format!("must be at most {} (a century)", format_duration(MAX_TTL)),
            );
        }
        if c.ttl_min > c.ttl_max {
            return fail(
                "cache.ttl_min",
                format!(
                    "{} is longer than cache.ttl_max ({}): the adaptive TTL lies between them",
                    format_duration(c.ttl_min),
                    format_duration(c.ttl_max)
                ),
            );
        }
        if !(c.ttl_budget.is_finite() && c.ttl_budget > 0.0) {
            return fail(
                "cache.ttl_budget",
                "must be a number greater than 0 (expected memento-days missed per refetch)".into(),
            );
        }
        if c.redaction_confirmations == 0 {
            return fail(
                "cache.redaction_confirmations",
                "must be at least 1 (a memento missing once is not a redaction)".into(),
            );
        }
        let r = &self.routing;
        if !(1..=super::MAX_ROUTING_KEYS).contains(&r.max_keys) {
            return fail(
                "routing.max_keys",
                format!("must be from 1 to {}", super::MAX_ROUTING_KEYS),
            );
        }
        let most = tmproxy_core::routing::Tally::AGE_AT;
        if !(1..=most).contains(&r.min_evidence) {
            return fail(
                "routing.min_evidence",
                format!(
                    "must be from 1 to {most} (none is skipped on no evidence; past {most} a \
                     tally is halved, so more could never be reached)"
                ),
            );
        }
        if !(1..=most).contains(&r.max_per_client) {
            return fail(
                "routing.max_per_client",
                format!("must be from 1 to {most} (a tally is halved past {most})"),
            );
        }
        for (key, v) in [
            ("routing.min_share", r.min_share),
            ("routing.explore", r.explore),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return fail(key, "must be a share from 0 to 1".into());
            }
        }
        if self.admin.token.chars().any(char::is_control) {
            return fail("admin.token", "must be free of control characters".into());
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, a) in self.archives.iter().enumerate() {
            let key = |field: &str| format!("archives[{i}].{field}");
            if let Err(r) = check_id(&a.id) {
                return fail(&key("id"), r);
            }
            if let Some(first) = seen.insert(&a.id, i) {
                return fail(
                    &key("id"),
                    format!("duplicate id {:?} (also archives[{first}])", a.id),
                );
            }
            // Each URL was checked as it was read; which of the two listings an archive needs
            // is its kind's to say.
            let (listing, other) = match a.kind {
                ArchiveKind::Timemap | ArchiveKind::Aggregator => {
                    (("timemap", &a.timemap), ("cdx", &a.cdx))
                }
                ArchiveKind::Cdx => (("cdx", &a.cdx), ("timemap", &a.timemap)),
            };
            if listing.1.is_none() {
                return fail(&key(listing.0), missing_url());
            }
            if other.1.is_some() {
                return fail(
                    &key(other.0),
                    format!("is not used by kind = {:?}: remove it", kind_name(a.kind)),
                );
            }
            match a.kind {
                // A template given was checked as the file was read; none is no template.
                ArchiveKind::Cdx if a.replay.is_none() => {
                    return fail(&key("replay"), MISSING_REPLAY.into());
                }
                ArchiveKind::Cdx => {}
                ArchiveKind::Timemap | ArchiveKind::Aggregator
                    if a.replay.is_some() || a.dialect != CdxDialect::Auto =>
                {
                    let field = if a.replay.is_none() {
                        "dialect"
                    } else {
                        "replay"
                    };
                    return fail(
                        &key(field),
                        "is only for kind = \"cdx\" archives: remove it".into(),
                    );
                }
                ArchiveKind::Timemap | ArchiveKind::Aggregator => {}
            }
            if a.timeout.is_some_and(|t| t.is_zero()) {
                return fail(&key("timeout"), "must be greater than 0".into());
            }
            if !(1..=super::MAX_CONCURRENCY).contains(&a.max_concurrency) {
                return fail(
                    &key("max_concurrency"),
                    format!("must be from 1 to {}", super::MAX_CONCURRENCY),
                );
            }
            // Slower than one request in 1000 s is a disabled archive by another name.
            if !(a.rate == 0.0 || (a.rate.is_finite() && a.rate >= MIN_RATE)) {
                return fail(
                    &key("rate"),
                    format!(
                        "must be 0 (unlimited) or a number of requests per second of at least {MIN_RATE}"
                    ),
                );
            }
        }
        Ok(())
    }
}

/// The longest `[cache] ttl_max`: a century, well inside what the clock's durations hold.
const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 86_400);

/// The slowest `[[archives]] rate` other than 0 (unlimited): one request every 1000 s.
const MIN_RATE: f64 = 0.001;

/// Why a `kind = "cdx"` archive without a replay template is refused: what the template
/// check says of an empty one.
const MISSING_REPLAY: &str = "\"\" must contain {timestamp} and {url}, once each";

/// Why an archive without the listing URL its kind needs is refused: what the URL check says of
/// an empty one.
fn missing_url() -> String {
    HttpUrl::parse("").err().unwrap_or_default()
}

/// `kind` as the file spells it.
fn kind_name(kind: ArchiveKind) -> &'static str {
    match kind {
        ArchiveKind::Timemap => "timemap",
        ArchiveKind::Cdx => "cdx",
        ArchiveKind::Aggregator => "aggregator",
    }
}

/// An archive id: logs, metrics and `TMPROXY_ARCHIVES` name archives by it.
pub(super) fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("must not be empty".into());
    }
    if !id
        .bytes()
        .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
    {
        return Err(format!(
            "{id:?} may only contain a-z, 0-9, '.', '_' and '-'"
        ));
    }
    if id == "all" {
        return Err("\"all\" is reserved: `Prefer: archives=all` means every archive".into());
    }
    Ok(())
}
