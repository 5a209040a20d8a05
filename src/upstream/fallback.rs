//! One archive's turn in a fan-out: its listing (TimeMap or CDX API) and, when that failed in a
//! way its TimeGate may not share, its TimeGate once, for at least the memento it picks and the
//! first/last/prev/next its `Link` header names. Such an answer keeps the listing's failure as
//! its status (the archive stays partial: a few mementos, not its TimeMap) and says
//! `fallback = timegate`.
//!
//! The TimeGate is asked without `Accept-Datetime` (its latest memento) and its redirect is not
//! followed: only its headers are read, never its body. Its `Location` and `Link` URIs are the
//! archive's word: each must be http(s) on the archive's hosts (or `redirect_hosts`), at most
//! [`MAX_LINK_BYTES`] of `Link` and [`MAX_LINK_MEMENTOS`] mementos are taken, and the
//! `Location` is listed only when something dates it (its entry in `Link`, or a
//! `Memento-Datetime`).

use super::budget::Budget;
use super::cdx::fetch_cdx;
use super::failure::{classify_send, FailureKind};
use super::fetch::{
    fetch_archive, parse_url, retry_after_of, ArchiveFetch, ArchiveLink, FetchLimits,
};
use super::guard::HopRules;
use super::registry::Archive;
use super::turns::{Standing, Turn};
use crate::timemap::answer::Fallback;
use crate::timemap::datetime::parse_rfc1123;
use crate::timemap::model::{LinkMemento, MementoDatetime};
use crate::timemap::parse::parse_link_format;
use crate::uri_r::clip;
use crate::uri_text::{escape_uri, is_servable_uri_m};
use std::sync::Arc;
use std::time::Duration;
use tmproxy_core::retry_after::RetryAfter;
use tmproxy_core::timemap::incremental::Since;
use tmproxy_core::timemap::refresh::Refresh;
use tokio::time::{timeout_at, Instant};
use url::Url;

/// The most `Link` header text read from a TimeGate (IA's is about a kilobyte).
pub const MAX_LINK_BYTES: usize = 64 * 1024;

/// The most mementos taken from a TimeGate's `Link` header.
pub const MAX_LINK_MEMENTOS: usize = 16;

/// Whether a listing that failed so may leave the TimeGate working: an error status (not 429,
/// which asks us to slow down), a body that is not a listing or is too large, a body that broke,
/// a redirect loop. Not a timeout (the archive's `timeout` is spent), not a host that cannot be
/// reached, not a refused hop (the archive sent us somewhere it must not), not our own budget.
pub fn worth_a_fallback(kind: FailureKind) -> bool {
    match kind {
        FailureKind::HttpStatus(_) => !kind.throttled(),
        FailureKind::Malformed
        | FailureKind::TooLarge
        | FailureKind::Body
        | FailureKind::Redirects => true,
        _ => false,
    }
}

/// Asks `archive` for `uri_r` in one turn of its own ([`super::turns`]), waited for until its
/// `timeout` (or `by`, the fan-out's deadline) and then given its whole `timeout`: its listing,
/// then, if that failed in a way [`worth_a_fallback`] and the archive did not ask us to wait,
/// its TimeGate in the time left. Also how long it waited for its turn (not the archive's time).
/// `since`: what a refresh may skip ([`list`]).
#[allow(clippy::too_many_arguments)]
pub async fn ask_archive(
    link: &ArchiveLink,
    archive: &Archive,
    uri_r: &str,
    limits: &FetchLimits,
    budget: &Arc<Budget>,
    by: Instant,
    standing: &Standing,
    since: Option<&Since>,
) -> (ArchiveFetch, Duration) {
    let latest = (Instant::now() + archive.timeout).min(by);
    let turn = match link.turns.take(latest, archive.timeout, standing).await {
        Ok(turn) => turn,
        Err(late) => return (ArchiveFetch::late(late), Duration::ZERO),
    };
    let until = turn.until;
    let timed_out = |turn: &Turn| {
        let secs = archive.timeout.as_secs_f64();
        if turn.waited_inside() {
            // Its own time was spent partly in our queue: not all its doing.
            let why = format!(
                "no answer within its timeout ({secs}s), part of it spent waiting for its turn"
            );
            ArchiveFetch::failed(FailureKind::Queued, None, why)
        } else {
            let why = format!("no answer within its timeout ({secs}s)");
            ArchiveFetch::failed(FailureKind::Timeout, None, why)
        }
    };
    let listing = list(link, &turn, archive, uri_r, limits, budget, since);
    let listed = match timeout_at(until, listing).await {
        Ok(listed) => listed,
        Err(_) => return (timed_out(&turn), turn.waited()),
    };
    let asks_to_wait = listed.retry_after.is_some();
    if asks_to_wait || !listed.failure_kind().is_some_and(worth_a_fallback) {
        return (listed, turn.waited());
    }
    let mut retry_after = None;
    let gate = match timeout_at(until, ask_timegate(link, &turn, archive, uri_r)).await {
        Ok(Ok(gate)) => Ok(gate),
        Ok(Err(failed)) => {
            retry_after = failed.retry_after;
            Err(failed.why)
        }
        Err(_) => Err(timed_out(&turn).answer.detail.unwrap_or_default()),
    };
    let mut fetch = with_fallback(listed, gate);
    fetch.retry_after = retry_after;
    (fetch, turn.waited())
}

/// What an archive lists for `uri_r`: its TimeMap, or for a `kind = "cdx"` archive its CDX
/// API's captures. With `since`, first only what may be new: an answer that does not list the
/// newest stored memento again ([`Since::trusts`]) is not trusted, and the whole listing is
/// read at once, in the same turn (the bytes of both counted).
async fn list(
    link: &ArchiveLink,
    turn: &Turn<'_>,
    archive: &Archive,
    uri_r: &str,
    limits: &FetchLimits,
    budget: &Arc<Budget>,
    since: Option<&Since>,
) -> ArchiveFetch {
    let read = |since| async move {
        match &archive.cdx {
            Some(source) => fetch_cdx(link, turn, source, uri_r, limits, budget, since).await,
            None => fetch_archive(link, turn, archive, uri_r, limits, budget, since).await,
        }
    };
    let Some(since) = since else {
        return read(None).await;
    };
    let incremental = read(Some(since)).await;
    let trusted = match incremental.read.listing.refresh {
        Refresh::NotModified => true,
        // Nothing learnt either way: the archive failed, and is not asked twice.
        _ if incremental.failure.is_some() => true,
        Refresh::Incremental => since.trusts(&incremental.mementos),
        // Nothing to skip after all (a single page without validators): read whole already.
        Refresh::Full => true,
    };
    if trusted {
        return incremental;
    }
    let spent = incremental.read.bytes;
    drop(incremental);
    let mut full = read(None).await;
    full.read.bytes += spent;
    full
}

/// The failed listing with what the TimeGate gave (its mementos, a note), or why it gave
/// nothing. Its status stays the listing's.
pub fn with_fallback(mut listed: ArchiveFetch, gate: Result<Gate, String>) -> ArchiveFetch {
    let note = match gate {
        Ok(gate) if !gate.mementos.is_empty() => {
            let mut note = format!(
                "TimeGate fallback (HTTP {}): {} mementos",
                gate.http_status,
                gate.mementos.len()
            );
            for n in &gate.notes {
                note.push_str("; ");
                note.push_str(n);
            }
            listed.mementos = gate.mementos;
            listed.answer.fallback = Some(Fallback::Timegate);
            note
        }
        Ok(gate) => {
            let why = if gate.notes.is_empty() {
                "no dated memento".to_string()
            } else {
                gate.notes.join("; ")
            };
            format!(
                "TimeGate fallback (HTTP {}) gave nothing: {why}",
                gate.http_status
            )
        }
        Err(why) => format!("TimeGate fallback failed: {why}"),
    };
    listed.answer.detail = Some(match listed.answer.detail.take() {
        Some(d) => format!("{d}; {note}"),
        None => note,
    });
    listed
}

/// What a TimeGate's headers gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    pub http_status: u16,
    pub mementos: Vec<LinkMemento>,
    /// What was left out and why.
    pub notes: Vec<String>,
}

/// Why a TimeGate gave nothing, and whether it asked us to wait.
struct GateFailed {
    why: String,
    retry_after: Option<RetryAfter>,
}

impl From<String> for GateFailed {
    fn from(why: String) -> GateFailed {
        GateFailed {
            why,
            retry_after: None,
        }
    }
}

/// One GET of the archive's TimeGate for `uri_r`, its headers read, its body never.
async fn ask_timegate(
    link: &ArchiveLink,
    turn: &Turn<'_>,
    archive: &Archive,
    uri_r: &str,
) -> Result<Gate, GateFailed> {
    let url = archive.timegate_for(uri_r)?;
    link.hops.check(&url)?;
    turn.pace().await.map_err(|late| late.0)?;
    let resp = link
        .clients
        .get()
        .send(http::Method::GET, &url, &[])
        .await
        .map_err(|e| classify_send(&e).1)?;
    let http_status = resp.status().as_u16();
    if !(resp.status().is_success() || resp.status().is_redirection()) {
        return Err(GateFailed {
            why: format!("HTTP {http_status}"),
            retry_after: retry_after_of(&resp),
        });
    }
    let h = resp.headers();
    let text = |name: http::header::HeaderName| {
        h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let mut link_header = String::new();
    let mut notes = Vec::new();
    for v in h.get_all(http::header::LINK) {
        let v = String::from_utf8_lossy(v.as_bytes());
        if link_header.len() + v.len() + 2 > MAX_LINK_BYTES {
            notes.push(format!(
                "Link header over {MAX_LINK_BYTES} bytes: the rest ignored"
            ));
            break;
        }
        if !link_header.is_empty() {
            link_header.push_str(", ");
        }
        link_header.push_str(&v);
    }
    let location = text(http::header::LOCATION).or_else(|| text(http::header::CONTENT_LOCATION));
    let dated = text(http::header::HeaderName::from_static("memento-datetime"))
        .and_then(|d| parse_rfc1123(d.as_str()));
    // The body is never read: dropping the answer closes its connection.
    drop(resp);
    // An aggregator's TimeGate names mementos on other archives' hosts: listed, never fetched
    // here, so any public host will do.
    let public = HopRules::public();
    let rules = if archive.aggregator {
        &public
    } else {
        &link.hops
    };
    let mut gate = timegate_mementos(&url, location.as_deref(), &link_header, dated, rules);
    gate.http_status = http_status;
    notes.append(&mut gate.notes);
    gate.notes = notes;
    Ok(gate)
}

/// The mementos a TimeGate's headers give, pure: the dated mementos of `link` (relative URIs
/// resolved against `base`), then `location` when `link` or `dated` dates it. Every URI must be
/// servable and allowed by `hops`; the others are named in the notes (clipped).
pub fn timegate_mementos(
    base: &Url,
    location: Option<&str>,
    link: &str,
    dated: Option<MementoDatetime>,
    hops: &HopRules,
) -> Gate {
    let mut notes = Vec::new();
    let allowed = |uri: &str, notes: &mut Vec<String>| -> bool {
        let checked = parse_url(uri).and_then(|u| hops.check(&u));
        match checked {
            Ok(()) if is_servable_uri_m(uri) => true,
            Ok(()) => {
                notes.push(format!("{} refused: not servable", clip(uri)));
                false
            }
            Err(why) => {
                notes.push(format!("ignored {why}"));
                false
            }
        }
    };
    let parsed = parse_link_format(link, base.as_str());
    if parsed.mementos.len() > MAX_LINK_MEMENTOS {
        notes.push(format!(
            "Link header named {} mementos: the first {MAX_LINK_MEMENTOS} taken",
            parsed.mementos.len()
        ));
    }
    let mut mementos: Vec<LinkMemento> = Vec::new();
    for m in parsed.mementos.into_iter().take(MAX_LINK_MEMENTOS) {
        if !mementos.iter().any(|k| k.uri_m == m.uri_m) && allowed(&m.uri_m, &mut notes) {
            mementos.push(m);
        }
    }
    if let Some(loc) = location {
        match base.join(loc) {
            Ok(u) => {
                let uri = escape_uri(u.as_str()).into_owned();
                if !mementos.iter().any(|m| *m.uri_m == *uri) && allowed(&uri, &mut notes) {
                    match dated {
                        Some(datetime) => mementos.push(LinkMemento {
                            uri_m: uri.into(),
                            datetime,
                        }),
                        None => notes.push(format!(
                            "its Location {} is not dated by its Link header: not listed",
                            clip(&uri)
                        )),
                    }
                }
            }
            Err(_) => notes.push(format!("its Location {} is not a URL", clip(loc))),
        }
    }
    Gate {
        http_status: 0,
        mementos,
        notes,
    }
}

#[cfg(test)]
mod tests;
