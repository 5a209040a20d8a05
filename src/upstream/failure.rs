//! A transport error from the archives' client read at the edge: its signs for the core's one
//! classification ([`tmproxy_core::failure`]), and the root cause to report rather than
//! hyper's outermost "client error (Connect)".

use super::resolve::{AddressRefused, NameNotResolved};
use super::transport::SendFailure;
use crate::uri_r::clip;
use std::error::Error as StdError;
pub use tmproxy_core::failure::FailureKind;
use tmproxy_core::failure::{of_transport, TransportSigns};

/// Whether no archive of a fan-out could be reached at all: every one asked (those skipped or
/// dormant aside, at least one) failed because its name did not resolve or no connection could
/// be made, as [`classify`]'s details say. What a machine without a network sees.
pub fn none_reached(outcomes: &[tmproxy_core::timemap::aggregate::ArchiveOutcome]) -> bool {
    let prefixes = [FailureKind::Dns, FailureKind::Connect].map(|k| format!("{k}: "));
    let dormant = format!("{}", FailureKind::Dormant);
    let mut asked = outcomes
        .iter()
        .filter(|o| o.answer.status != tmproxy_core::timemap::answer::ArchiveStatus::Skipped)
        .filter(|o| {
            !o.answer
                .detail
                .as_deref()
                .unwrap_or("")
                .starts_with(&dormant)
        })
        .peekable();
    asked.peek().is_some()
        && asked.all(|o| {
            let detail = o.answer.detail.as_deref().unwrap_or("");
            prefixes.iter().any(|p| detail.starts_with(p.as_str()))
        })
}

/// Where a request failed: sending it and waiting for the answer's head, or reading its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Send,
    Body,
}

/// The kind of a failed request and the detail to report: the kind first, then what failed and
/// the innermost cause, e.g. `dns: failed to resolve web.archive.org: …`. The chain holds no
/// secret of ours (archive URLs are configured, not confidential), and the text is clipped.
pub fn classify(e: &(dyn StdError + 'static), stage: Stage) -> (FailureKind, String) {
    let refused = find_in_chain::<AddressRefused>(e);
    let dns = find_in_chain::<NameNotResolved>(e);
    let tls = find_in_chain::<rustls::Error>(e);
    let connect = e
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .is_some_and(|e| e.is_connect());
    let kind = of_transport(TransportSigns {
        address_refused: refused.is_some(),
        name_unresolved: dns.is_some(),
        tls: tls.is_some(),
        // The connector's connect timeout: an io error of kind TimedOut in the chain.
        timeout: timed_out(e),
        connect,
        body: stage == Stage::Body,
    });
    // A cause we recognise says it all; otherwise what failed, then the innermost cause.
    let (what, recognised) = match (kind, refused, dns, tls) {
        (FailureKind::RefusedRedirect, Some(r), ..) => return (kind, clip(&r.to_string())),
        (FailureKind::Dns, _, Some(d), _) => ("dns", Some(d.to_string())),
        (FailureKind::Tls, _, _, Some(t)) => ("tls", Some(t.to_string())),
        (FailureKind::Timeout, ..) => ("timed out", None),
        (FailureKind::Connect, ..) => ("connection failed", None),
        (FailureKind::Body, ..) => ("connection broke while reading the body", None),
        _ => ("request failed", None),
    };
    if let Some(cause) = recognised {
        return (kind, format!("{what}: {}", clip(&cause)));
    }
    let root = clip(&root_cause(e).to_string());
    let detail = if root == e.to_string() {
        format!("{kind}: {what}")
    } else {
        format!("{kind}: {what}: {root}")
    };
    (kind, detail)
}

/// A request that could not be sent or got no answer: its kind and the detail to report.
pub fn classify_send(e: &SendFailure) -> (FailureKind, String) {
    match e {
        SendFailure::Send(e) => classify(e, Stage::Send),
        // Ours, before anything was sent: no transport sign to read.
        other => (FailureKind::Other, other.to_string()),
    }
}

/// `e` and the errors under it, outermost first.
fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&err| next_in_chain(err))
}

/// The innermost error of a chain: what really went wrong.
fn root_cause<'a>(e: &'a (dyn StdError + 'static)) -> &'a (dyn StdError + 'static) {
    chain(e).last().unwrap_or(e)
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

/// Whether an io error of the chain timed out.
fn timed_out(e: &(dyn StdError + 'static)) -> bool {
    chain(e).any(|err| {
        err.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    })
}

/// The first error of type `T` in a chain.
pub fn find_in_chain<'a, T: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    chain(e).find_map(|err| err.downcast_ref::<T>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_and_the_stage_say_the_kind() {
        use std::io::{Error, ErrorKind};
        // The connector's timeout, wrapped as hyper wraps it.
        let timeout = Error::other(Error::new(ErrorKind::TimedOut, "connect timeout"));
        assert_eq!(classify(&timeout, Stage::Send).0, FailureKind::Timeout);
        let reset = Error::new(ErrorKind::ConnectionReset, "reset by peer");
        assert_eq!(classify(&reset, Stage::Body).0, FailureKind::Body);
        assert_eq!(classify(&reset, Stage::Send).0, FailureKind::Other);
        let unresolved = Error::other(NameNotResolved {
            name: "web.archive.test".into(),
            cause: "no such host".into(),
        });
        let (kind, detail) = classify(&unresolved, Stage::Send);
        assert_eq!(kind, FailureKind::Dns);
        assert_eq!(
            detail,
            "dns: failed to resolve web.archive.test: no such host"
        );
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
