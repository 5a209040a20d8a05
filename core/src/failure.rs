//! Why an archive's HTTP request failed, in the few kinds an operator acts on (dns, connect,
//! tls, timeout, an HTTP status, malformed, a refused redirect…), and the one reading of an HTTP
//! status and of a transport error that every caller shares: the fan-out (`src/upstream`) and
//! the CDX sampler read a status the same way, so an archive's 429 or 503 means one thing.
//!
//! Pure: the edge holding the error (the HTTP client's, with its chain of causes) reads its
//! signs off it ([`TransportSigns`]); which kind they make is decided here.

use crate::timemap::answer::ArchiveStatus;
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
    /// Its turn (`max_concurrency`, `rate`) did not come within its time limit, or waiting for
    /// it left the archive less than its whole timeout: our own queue, not the archive's doing,
    /// so never a step towards dormancy. Reported as a `timeout`.
    Queued,
    /// Anything else the HTTP client reports.
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
            FailureKind::Queued => "queued",
            FailureKind::Other => "error",
        };
        f.write_str(text)
    }
}

impl FailureKind {
    /// The status an answer that failed so reports: a timeout (the archive's, or our queue's)
    /// and a malformed body have their own, every other failure is an `error`.
    pub fn status(self) -> ArchiveStatus {
        match self {
            FailureKind::Timeout | FailureKind::Queued => ArchiveStatus::Timeout,
            FailureKind::Malformed => ArchiveStatus::Malformed,
            _ => ArchiveStatus::Error,
        }
    }

    /// A 4xx (400, 414, 451, 429…): the archive refused what was asked. What is asked comes
    /// from a client, so any client can provoke one: it says nothing about whether the archive
    /// is up. So does a 508 Loop Detected: an aggregator refusing to ask us on our own behalf
    /// (aggregators configured to ask each other), which is the configuration, not an outage.
    pub fn refused_request(self) -> bool {
        matches!(self, FailureKind::HttpStatus(code) if (400..500).contains(&code) || code == 508)
    }

    /// A 429: asked too often. Asking again at once, or another way, only adds to it.
    pub fn throttled(self) -> bool {
        self == FailureKind::HttpStatus(429)
    }

    /// A 5xx: the archive's own trouble, which may pass.
    pub fn server_error(self) -> bool {
        matches!(self, FailureKind::HttpStatus(code) if (500..600).contains(&code))
    }
}

/// What an HTTP status says about an archive's answer, before any body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx: the body is the answer.
    Success,
    /// 404: nothing held for what was asked (an answer, not a failure).
    NotFound,
    /// 410: nothing held any more. A TimeMap archive means "none" by it as by a 404; a CDX API
    /// has no such answer.
    Gone,
    /// Anything else: a failure of kind [`FailureKind::HttpStatus`].
    Failed(FailureKind),
}

/// The one reading of an HTTP status.
pub fn of_status(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        404 => StatusClass::NotFound,
        410 => StatusClass::Gone,
        code => StatusClass::Failed(FailureKind::HttpStatus(code)),
    }
}

/// What a transport error (no HTTP answer read whole) says of itself, as the edge holding it
/// reads it: from its chain of causes (our resolver's refusals, a TLS error) and its own flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportSigns {
    /// Our resolver refused the address a name led to (a private one, on an archive's say-so).
    pub address_refused: bool,
    /// The name did not resolve.
    pub name_unresolved: bool,
    /// A TLS error is among the causes.
    pub tls: bool,
    pub timeout: bool,
    pub connect: bool,
    /// The body broke off or could not be decoded.
    pub body: bool,
}

/// The kind a transport error is. The causes we recognise come first (a refused address or an
/// unresolved name is reported as a connect error too, and a TLS failure as a connect error
/// or a timeout), then the flags, most telling first.
pub fn of_transport(signs: TransportSigns) -> FailureKind {
    if signs.address_refused {
        FailureKind::RefusedRedirect
    } else if signs.name_unresolved {
        FailureKind::Dns
    } else if signs.tls {
        FailureKind::Tls
    } else if signs.timeout {
        FailureKind::Timeout
    } else if signs.connect {
        FailureKind::Connect
    } else if signs.body {
        FailureKind::Body
    } else {
        FailureKind::Other
    }
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
    fn statuses_are_read_once() {
        assert_eq!(of_status(200), StatusClass::Success);
        assert_eq!(of_status(206), StatusClass::Success);
        assert_eq!(of_status(404), StatusClass::NotFound);
        assert_eq!(of_status(410), StatusClass::Gone);
        for code in [301, 400, 403, 429, 451, 500, 503] {
            assert_eq!(
                of_status(code),
                StatusClass::Failed(FailureKind::HttpStatus(code))
            );
        }
        let kind = |code| FailureKind::HttpStatus(code);
        assert!(kind(429).refused_request() && kind(429).throttled());
        assert!(kind(451).refused_request() && !kind(451).throttled());
        assert!(kind(503).server_error() && !kind(503).refused_request());
        assert!(!kind(301).server_error() && !kind(301).refused_request());
        assert_eq!(FailureKind::Timeout.status(), ArchiveStatus::Timeout);
        assert_eq!(FailureKind::Queued.status(), ArchiveStatus::Timeout);
        assert_eq!(FailureKind::Malformed.status(), ArchiveStatus::Malformed);
        assert_eq!(kind(500).status(), ArchiveStatus::Error);
    }

    #[test]
    fn a_transport_error_is_its_most_telling_sign() {
        let signs = TransportSigns {
            name_unresolved: true,
            connect: true,
            ..TransportSigns::default()
        };
        assert_eq!(of_transport(signs), FailureKind::Dns);
        let signs = TransportSigns {
            tls: true,
            timeout: true,
            ..TransportSigns::default()
        };
        assert_eq!(of_transport(signs), FailureKind::Tls);
        let signs = TransportSigns {
            timeout: true,
            connect: true,
            ..TransportSigns::default()
        };
        assert_eq!(of_transport(signs), FailureKind::Timeout);
        assert_eq!(of_transport(TransportSigns::default()), FailureKind::Other);
    }
}
