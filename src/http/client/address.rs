//! The client's address: the peer's own, or, when the peer is one of `[server] trusted_proxies`
//! (a load balancer), the address that peer forwards. The connection puts one [`ClientAddr`] on
//! every request (`crate::serve`), and every per-client decision (the rate limit, the request
//! log, routing's per-client bound) reads that one value, so they can never disagree about who
//! asked.

use axum::http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Who asked: what the rate limit counts and the request log writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub IpAddr);

/// The peers whose forwarding headers are believed (`[server] trusted_proxies`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn new(nets: &[IpNet]) -> TrustedProxies {
        TrustedProxies(nets.iter().map(IpNet::trunc).collect())
    }

    /// Whether `ip` is one of them (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client of a request from `peer` with these headers. From an untrusted peer the
    /// headers are the client's own words and are ignored. From a trusted one: walking the
    /// forwarded chain from the right (the hop nearest us), the first address that is not
    /// itself trusted; every hop trusted, the left-most. Only `X-Forwarded-For` is read when
    /// present, else `Forwarded: for=` (RFC 7239): a balancer appends to one of them and passes
    /// the client's copy of the other through untouched. A malformed hop, no header, or text
    /// that is not UTF-8: the peer itself, so nothing a client writes can pick someone else's
    /// address (everything left of the right-most untrusted hop is the client's own text).
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> ClientAddr {
        let peer = peer.to_canonical();
        if self.0.is_empty() || !self.trusts(peer) {
            return ClientAddr(peer);
        }
        let walked = if headers.contains_key(X_FORWARDED_FOR) {
            self.walk(x_forwarded_for(headers))
        } else {
            self.walk(forwarded_for(headers))
        };
        ClientAddr(walked.unwrap_or(peer))
    }

    /// The right-most untrusted hop of `hops` (given right to left, None for a malformed one);
    /// None when a hop before it is malformed or there is none.
    fn walk(&self, hops: impl Iterator<Item = Option<IpAddr>>) -> Option<IpAddr> {
        let mut leftmost = None;
        for hop in hops {
            let ip = hop?.to_canonical();
            if !self.trusts(ip) {
                return Some(ip);
            }
            leftmost = Some(ip);
        }
        leftmost
    }
}

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// `X-Forwarded-For`'s hops, right to left, over every line of it (a later line continues the
/// list).
fn x_forwarded_for(headers: &HeaderMap) -> impl Iterator<Item = Option<IpAddr>> + '_ {
    headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .rev()
        .flat_map(|value| match value.to_str() {
            Ok(text) => text.rsplit(',').map(node_ip).collect::<Vec<_>>(),
            Err(_) => vec![None],
        })
}

/// `Forwarded`'s `for=` per element, right to left; an element without one is malformed.
fn forwarded_for(headers: &HeaderMap) -> impl Iterator<Item = Option<IpAddr>> + '_ {
    headers
        .get_all(axum::http::header::FORWARDED)
        .iter()
        .rev()
        .flat_map(|value| match value.to_str() {
            Ok(text) => split_unquoted(text, ',')
                .into_iter()
                .rev()
                .map(|element| {
                    split_unquoted(element, ';').into_iter().find_map(|pair| {
                        let (name, value) = pair.split_once('=')?;
                        name.trim()
                            .eq_ignore_ascii_case("for")
                            .then(|| node_ip(&unquote(value.trim())?))
                    })?
                })
                .collect::<Vec<_>>(),
            Err(_) => vec![None],
        })
}

/// `text` split at each `sep` outside a quoted string (a quoted `for="[::1]:80"` holds `:`, and
/// a hostile one may hold `,` or `;`).
fn split_unquoted(text: &str, sep: char) -> Vec<&str> {
    let (mut parts, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A token as it is, or a quoted string's content (RFC 7230 quoted-pair unescaped); None for
/// an unterminated quote.
fn unquote(value: &str) -> Option<String> {
    let Some(inner) = value.strip_prefix('"') else {
        return Some(value.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next()? } else { c });
    }
    Some(out)
}

/// One hop's address: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`, `[2001:db8::1]` or
/// `[2001:db8::1]:80`. Anything else (`unknown`, an obfuscated `_name`, garbage) is None.
fn node_ip(node: &str) -> Option<IpAddr> {
    let node = node.trim();
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(socket) = node.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    let bracketed = node.strip_prefix('[')?.strip_suffix(']')?;
    bracketed.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

#[cfg(test)]
mod tests;
