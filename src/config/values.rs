//! The textual values of the file and the environment alike: durations, sizes, listen addresses
//! and URLs, read and (for durations and sizes) written back the same way.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

pub(super) fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.trim().parse().map_err(|_| {
        format!("{s:?} is not an IP:port address (e.g. \"127.0.0.1:7089\", \"[::]:7089\")")
    })
}

/// An IP:port, or blank for none (`[admin] listen`).
pub(super) fn parse_opt_listen(s: &str) -> Result<Option<SocketAddr>, String> {
    if s.trim().is_empty() {
        Ok(None)
    } else {
        parse_listen(s).map(Some)
    }
}

/// An address (`10.0.0.1`, `::1`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`).
pub(super) fn parse_net(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| {
            format!("{s:?} is not an address or a CIDR range (e.g. \"10.0.0.7\" or \"10.0.0.0/8\")")
        })
}

pub(super) fn normalize_public_url(s: &str) -> String {
    s.trim().trim_end_matches('/').to_owned()
}

/// Whether `s` is an absolute http(s) URL, for a value kept as text (`public_url`).
pub(super) fn check_http_url(s: &str) -> Result<(), String> {
    super::http_url::HttpUrl::parse(s).map(|_| ())
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
