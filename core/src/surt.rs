//! SURT (Sort-friendly URI Reordering Transform) rules shared by the cache and the sampling
//! pipeline: the `www` rule and host keys (sampling reads the Wayback index's keys with them),
//! and [`canonical_key`], the cache's key for a URI-R, so equivalent spellings of one URL share
//! one entry and one fan-out.
//!
//! The canonical key follows the Internet Archive's SURT canonicalization only where it cannot
//! merge two different resources: IA also lower-cases the path and query, strips session ids
//! and empty or trailing-slash paths, and strips user info; we keep all of those, so a key
//! never stands for more than IA's would.

use std::fmt::Write;

/// The host with a leading `www`, `www2`, `www1355544`… label removed, but only when at least
/// two dots remain in the host before stripping, so a name that *is* `wwwN.tld` keeps its label
/// (the fix proposed upstream for IA's surt library).
pub fn strip_www(host: &str) -> &str {
    let lower_starts_www = host.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("www"));
    if !lower_starts_www || host.bytes().filter(|&b| b == b'.').count() < 2 {
        return host;
    }
    let after = &host[3..];
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    match after[digits..].strip_prefix('.') {
        Some(rest) => rest,
        None => host,
    }
}

/// The host as IA's surt library keys it: `www\d*.` stripped whatever remains. Used only to
/// detect the collisions that rule causes.
pub fn ia_strip_www(host: &str) -> &str {
    let lower_starts_www = host.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("www"));
    if !lower_starts_www {
        return host;
    }
    let after = &host[3..];
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    after[digits..].strip_prefix('.').unwrap_or(host)
}

/// The SURT host key of a host under IA's rule: reversed labels joined by `,`.
pub fn host_key(host: &str) -> String {
    let h = ia_strip_www(host);
    h.rsplit('.').collect::<Vec<_>>().join(",")
}

/// The cache key of an http(s) URI-R: its SURT form (`com,example:8080)/a?b=1&c=2`), under which
/// every spelling of the same URL meets:
///
/// - the scheme is dropped (`http` and `https` are one entry, as in IA's index);
/// - the host is lower-cased (IDNA to punycode, IPv4 forms normalized, by the WHATWG parser),
///   loses a leading `www`, `www2`… label when two dots remain ([`strip_www`]: `www3288.com`
///   stays itself, where IA's rule would make it `com`), and has its labels reversed;
/// - the scheme's default port is dropped, another port kept;
/// - an empty path is `/`; dot segments are resolved; a percent-escape of an unreserved
///   character is decoded (`%7E` is `~`) and other escapes are upper-cased (RFC 3986 §6.2.2);
/// - the query's parameters are sorted (by name, then value, as IA's `alphaReorderQuery`) and an
///   empty query is dropped; no parameter is removed and no case changed;
/// - the fragment is dropped.
///
/// The path's case, a trailing slash, user info and every query parameter are kept as written:
/// they can name a different resource. `None` for what has no such key (not http(s), no host,
/// user info): the cache then keys it by its exact text, which no SURT key can equal (a key never
/// holds `://` before its `)`).
pub fn canonical_key(uri_r: &str) -> Option<String> {
    canonical_key_of(&url::Url::parse(uri_r).ok()?)
}

/// [`canonical_key`] of a URL already parsed (a URI-R parsed once carries its key).
pub fn canonical_key_of(url: &url::Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https")
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    let mut key = String::with_capacity(url.as_str().len() + 8);
    match url.host()? {
        url::Host::Domain(domain) => {
            let host = strip_www(domain);
            for (i, label) in host.rsplit('.').enumerate() {
                if i > 0 {
                    key.push(',');
                }
                // A character a URL host may hold but a SURT key uses as syntax (`,`, `)`…) is
                // escaped, so `x,y.com` and `y.x.com` never share a key.
                for b in label.bytes() {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') {
                        key.push(char::from(b.to_ascii_lowercase()));
                    } else {
                        let _ = write!(key, "%{b:02X}");
                    }
                }
            }
        }
        url::Host::Ipv4(ip) => {
            let o = ip.octets();
            let _ = write!(key, "{},{},{},{}", o[3], o[2], o[1], o[0]);
        }
        url::Host::Ipv6(ip) => {
            let _ = write!(key, "[{ip}]");
        }
    }
    if let Some(port) = url.port() {
        let _ = write!(key, ":{port}");
    }
    key.push(')');
    normalize_escapes(url.path(), &mut key);
    let params = sorted_query(url.query().unwrap_or(""));
    if !params.is_empty() {
        key.push('?');
        key.push_str(&params.join("&"));
    }
    Some(key)
}

/// The query's parameters, escapes normalized, in IA's order: by name, then by value, a name
/// without `=` first. Normalized before sorting, so two spellings sort alike.
fn sorted_query(query: &str) -> Vec<String> {
    if query.is_empty() {
        return Vec::new();
    }
    let mut params: Vec<String> = query
        .split('&')
        .map(|p| {
            let mut n = String::with_capacity(p.len());
            normalize_escapes(p, &mut n);
            n
        })
        .collect();
    params.sort_by(|a, b| split_param(a).cmp(&split_param(b)));
    params
}

fn split_param(param: &str) -> (&str, Option<&str>) {
    match param.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (param, None),
    }
}

/// Appends `text` with each `%XX` of an unreserved character decoded and every other escape's
/// hex digits upper-cased (RFC 3986 §6.2.2.1–2): spellings of the same octets, nothing more.
fn normalize_escapes(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let octet = (h * 16 + l) as u8;
                if octet.is_ascii_alphanumeric() || matches!(octet, b'-' | b'.' | b'_' | b'~') {
                    out.push(char::from(octet));
                } else {
                    let _ = write!(out, "%{octet:02X}");
                }
                i += 3;
                continue;
            }
        }
        // Whole characters: the slice boundaries above are ASCII, so this stays on them.
        let next = text[i + 1..].find('%').map_or(text.len(), |j| i + 1 + j);
        out.push_str(&text[i..next]);
        i = next;
    }
}

#[cfg(test)]
mod tests;
