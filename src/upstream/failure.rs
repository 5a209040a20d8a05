//! Why an archive failed, in the few kinds an operator acts on (dns, connect, tls, timeout, an
//! HTTP status, malformed, a refused redirect…), each with the root cause of a transport error
//! rather than reqwest's outermost "client error (Connect)".

use super::resolve::{AddressRefused, NameNotResolved};
use crate::uri_r::clip;
use std::error::Error as StdError;
use std::fmt;

/// The kind of an archive's failure, as logged (`kind=`) and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Its host name did not resolve.
    Dns,
    /// No TCP connection (refused, reset, unreachable).
    Connect,
    /// The TLS handshake failed (a bad certificate, plain HTTP on an https port…).
    Tls,
    /// No (complete) answer within its timeout or the request's deadline.
    Timeout,
    /// It answered with an HTTP status that is neither success nor "not found".
    HttpStatus(u16),
    /// It answered 2xx with nothing readable as a TimeMap.
    Malformed,
    /// It sent us (a redirect, a page link, a name that resolves to a private address) where its
    /// rules do not allow: never followed.
    RefusedRedirect,
    /// More redirects than we follow, or one whose `Location` cannot be read.
    Redirects,
    /// A body over `max_body`.
    TooLarge,
    /// Our own `max_buffered` ran out: not the archive's fault.
    Budget,
    /// The connection broke while the body was read.
    Body,
    /// Dormant after repeated failures: skipped, not asked.
    Dormant,
    /// Anything else reqwest reports.
    Other,
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            FailureKind::Dns => "dns",
            FailureKind::Connect => "connect",
            FailureKind::Tls => "tls",
            FailureKind::Timeout => "timeout",
            FailureKind::HttpStatus(code) => return write!(f, "http status {code}"),
            FailureKind::Malformed => "malformed",
            FailureKind::RefusedRedirect => "refused redirect",
            FailureKind::Redirects => "redirects",
            FailureKind::TooLarge => "too large",
            FailureKind::Budget => "memory budget",
            FailureKind::Body => "body",
            FailureKind::Dormant => "dormant",
            FailureKind::Other => "error",
        };
        f.write_str(text)
    }
}

/// The kind of a failed request and the detail to report: the kind first, then what failed and
/// the innermost cause, e.g. `dns: failed to resolve web.archive.org: …`. The chain holds no
/// secret of ours (archive URLs are configured, not confidential), and the text is clipped.
pub fn classify(e: &reqwest::Error) -> (FailureKind, String) {
    let root = clip(&root_cause(e).to_string());
    let (kind, what) = if let Some(refused) = find_in_chain::<AddressRefused>(e) {
        return (FailureKind::RefusedRedirect, clip(&refused.to_string()));
    } else if let Some(dns) = find_in_chain::<NameNotResolved>(e) {
        return (FailureKind::Dns, format!("dns: {}", clip(&dns.to_string())));
    } else if let Some(tls) = find_in_chain::<rustls::Error>(e) {
        return (FailureKind::Tls, format!("tls: {}", clip(&tls.to_string())));
    } else if e.is_timeout() {
        (FailureKind::Timeout, "timed out")
    } else if e.is_connect() {
        (FailureKind::Connect, "connection failed")
    } else if e.is_body() || e.is_decode() {
        (FailureKind::Body, "connection broke while reading the body")
    } else {
        (FailureKind::Other, "request failed")
    };
    let detail = if root == e.to_string() {
        format!("{kind}: {what}")
    } else {
        format!("{kind}: {what}: {root}")
    };
    (kind, detail)
}

/// The innermost error of a chain: what really went wrong.
fn root_cause<'a>(e: &'a (dyn StdError + 'static)) -> &'a (dyn StdError + 'static) {
    let mut cur = e;
    while let Some(next) = next_in_chain(cur) {
        cur = next;
    }
    cur
}

/// The error under `err`. An `io::Error` wrapping another is looked inside: its own `source()`
/// skips the error it wraps (it returns that error's source), and hyper wraps rustls's error in
/// two of them.
fn next_in_chain<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    match err
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        Some(inner) => Some(inner),
        None => err.source(),
    }
}

/// The first error of type `T` in a chain.
pub fn find_in_chain<'a, T: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut cur: Option<&'a (dyn StdError + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(found) = err.downcast_ref::<T>() {
            return Some(found);
        }
        cur = next_in_chain(err);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_as_an_operator_says_them() {
        assert_eq!(FailureKind::HttpStatus(503).to_string(), "http status 503");
        assert_eq!(FailureKind::RefusedRedirect.to_string(), "refused redirect");
        assert_eq!(FailureKind::Dns.to_string(), "dns");
    }

    #[test]
    fn an_error_wrapped_in_io_error_is_found() {
        let inner = NameNotResolved {
            name: "web.archive.org".into(),
            cause: "no such host".into(),
        };
        // Twice wrapped, as hyper wraps rustls's error.
        let io = std::io::Error::other(std::io::Error::other(inner.clone()));
        assert_eq!(find_in_chain::<NameNotResolved>(&io), Some(&inner));
        assert_eq!(root_cause(&io).to_string(), inner.to_string());
        assert!(find_in_chain::<AddressRefused>(&io).is_none());
    }
}
