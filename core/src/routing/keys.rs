//! The keys a URI-R is profiled under: its host, its registrable domain (by the Public Suffix
//! List) and its top-level domain, from the most specific to the least.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// How specific a key is. Ordered from the most specific, the order a decision looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Host,
    Domain,
    Tld,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Host, Level::Domain, Level::Tld];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Host => "host",
            Level::Domain => "domain",
            Level::Tld => "tld",
        }
    }
}

/// One key: a level and its name (`host example.co.uk`, `domain example.co.uk`, `tld uk`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Key {
    pub level: Level,
    pub name: Box<str>,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.level.as_str(), self.name)
    }
}

/// The longest host name DNS allows; anything longer is not a host we can learn about.
const MAX_HOST: usize = 253;

/// A URI-R's keys, most specific first; a level it has no key at is left out.
///
/// - host: lower-cased, without port, trailing dot or a leading `www`/`wwwN` label (when two
///   dots remain, as [`crate::surt::strip_www`]), so `https://WWW.Example.com.:8080/` and the
///   SURT `com,example)/` of an archive's index meet under `host example.com`;
/// - registrable domain: the PSL's "public suffix + one label" (`example.co.uk`); none for a
///   host that is itself a public suffix (`co.uk`, `github.io`) or has a single label;
/// - TLD: the last label (`uk`), what national archives collect by; none for a single label.
///
/// An IP address host has only its host key (the address, IPv6 in brackets): an address has no
/// domain, and its first octet says nothing about who holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriKeys {
    keys: Vec<Key>,
}

impl UriKeys {
    /// The keys of an http(s) URI-R; none for what has no host (or is not http(s)).
    pub fn of_uri(uri_r: &str) -> UriKeys {
        match url::Url::parse(uri_r) {
            Ok(url) => UriKeys::of_url(&url),
            Err(_) => UriKeys::default(),
        }
    }

    /// [`UriKeys::of_uri`] of a URL already parsed (a URI-R parsed once carries its keys).
    pub fn of_url(url: &url::Url) -> UriKeys {
        if !matches!(url.scheme(), "http" | "https") {
            return UriKeys::default();
        }
        match url.host() {
            Some(url::Host::Domain(d)) => UriKeys::of_host(d),
            Some(url::Host::Ipv4(ip)) => UriKeys::of_ip(&ip.to_string()),
            Some(url::Host::Ipv6(ip)) => UriKeys::of_ip(&format!("[{ip}]")),
            None => UriKeys::default(),
        }
    }

    /// The keys of a host name as it appears in a URL (already IDNA-encoded: `xn--…` labels);
    /// a port, a trailing dot and upper case are dropped here. IP literals are recognised.
    pub fn of_host(host: &str) -> UriKeys {
        let host = strip_port(host.trim());
        let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        if host.is_empty() || host.len() > MAX_HOST || !host.bytes().all(host_byte) {
            return UriKeys::default();
        }
        if let Some(ip) = ip_literal(&host) {
            return UriKeys::of_ip(&ip);
        }
        if host.split('.').any(str::is_empty) {
            return UriKeys::default();
        }
        let host = crate::surt::strip_www(&host);
        let mut keys = vec![key(Level::Host, host)];
        if let Some(domain) = psl::domain_str(host) {
            keys.push(key(Level::Domain, domain));
        }
        if let Some((_, tld)) = host.rsplit_once('.') {
            keys.push(key(Level::Tld, tld));
        }
        UriKeys { keys }
    }

    fn of_ip(ip: &str) -> UriKeys {
        UriKeys {
            keys: vec![key(Level::Host, ip)],
        }
    }

    /// The keys, most specific first.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    pub fn get(&self, level: Level) -> Option<&Key> {
        self.keys.iter().find(|k| k.level == level)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Keeps only the keys `keep` says yes to (in order, each asked once).
    pub fn retain(&mut self, keep: impl FnMut(&Key) -> bool) {
        self.keys.retain(keep);
    }
}

fn key(level: Level, name: &str) -> Key {
    Key {
        level,
        name: name.into(),
    }
}

/// Bytes a host in a parsed URL or a SURT can hold (IDNA has made every label ASCII); the
/// brackets and colons of an IPv6 literal included.
fn host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
}

/// `host:port` → `host`; an IPv6 literal keeps its colons (`[::1]:80` → `[::1]`).
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// The canonical text of an IPv4 address or bracketed IPv6 literal, else None.
fn ip_literal(host: &str) -> Option<String> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().ok().map(|ip| format!("[{ip}]"));
    }
    if let Ok(ip) = host.parse::<Ipv6Addr>() {
        return Some(format!("[{ip}]"));
    }
    host.parse::<Ipv4Addr>().ok().map(|ip| ip.to_string())
}

/// The host of a SURT key (`com,example,www:8080)/path` → `www.example.com:8080`), or None when
/// the key has no `)`. IA's SURTs leave IP addresses unreversed (`192.168.1.1)/`), so a host
/// part with dots and no comma is taken as written.
pub fn surt_host(surt: &str) -> Option<String> {
    let (host, _) = surt.split_once(')')?;
    let host = host
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    if host.is_empty() {
        return None;
    }
    if !host.contains(',') {
        return Some(host.to_owned());
    }
    let (names, port) = match host.split_once(':') {
        Some((names, port)) => (names, Some(port)),
        None => (host, None),
    };
    let mut out: Vec<&str> = names.split(',').filter(|l| !l.is_empty()).collect();
    out.reverse();
    let mut joined = out.join(".");
    if let Some(port) = port {
        joined.push(':');
        joined.push_str(port);
    }
    Some(joined)
}
