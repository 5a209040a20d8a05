//! One memento's bytes for `/memento/proxy`: fetched only from the archive that listed it and
//! only under its configured prefixes (or its `redirect_hosts`), with that archive's client (its
//! resolver's address rules), its hop rules for every redirect, its timeout, and a byte cap on
//! what is passed on, inflated size included. Its raw form (`core::raw_memento`: the capture as
//! archived, not the replay page) is asked first under the same rules, and the listed URI-M
//! only when that is not a 2xx. The body streams (`Streamed`); what it may hold is charged to
//! the same budget as TimeMap bodies. The fetch takes one of that archive's turns, as a fan-out
//! does, held until the head and first bytes are read: not while the rest streams to a client
//! that may never read it. An archive holding us off (`Retry-After`) is not asked.

mod body;

use super::failure::FailureKind;
use super::fetch::{retry_after_of, send_within, ArchiveFetch, ArchiveLink};
use super::registry::Archive;
use super::streamed::Streamed;
use super::turns::{Standing, Turn};
use super::Upstream;
use crate::timemap::model::ArchiveId;
use crate::uri_r::clip;
use body::{coded_body, coding_of, stream_identity, too_large};
use http::header::{ACCEPT, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use std::time::{Duration, Instant};
use tmproxy_core::raw_memento::raw_uri_m;
use url::Url;

/// A memento as its archive answered it: the status (2xx or 4xx), the content type it declared,
/// the coding the body is served in (None: identity), the body (None for a HEAD), and whether
/// it is the raw form's answer (`X-Memento-Raw`) or the listed URI-M's.
pub struct MementoBytes {
    pub archive: ArchiveId,
    pub http_status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<&'static str>,
    pub body: Option<Streamed>,
    pub raw: bool,
}

/// What the client asked: a HEAD (nothing but the head is fetched), and which content codings
/// it accepts (`Accept-Encoding`).
pub struct Asked<'a> {
    pub head: bool,
    pub accepts: &'a (dyn Fn(&str) -> bool + Sync),
}

/// Why a memento was not fetched or not served: a reason naming the URI-M, whether it was the
/// archive's time (or its turn) running out (a 504 rather than a 502), whether it was our own
/// memory budget (a 503: not the archive's fault, and worth a retry), and in how many seconds
/// the archive asked us to come back (a 503 with that `Retry-After`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MementoFailure {
    pub reason: String,
    pub timed_out: bool,
    pub over_budget: bool,
    pub retry_after: Option<u64>,
}

impl MementoFailure {
    fn new(reason: String) -> MementoFailure {
        MementoFailure {
            reason,
            timed_out: false,
            over_budget: false,
            retry_after: None,
        }
    }
}

/// Whole seconds from `now` to `until`, at least 1: what a `Retry-After` says.
fn seconds_until(until: chrono::DateTime<chrono::Utc>, now: chrono::DateTime<chrono::Utc>) -> u64 {
    let ms = until.signed_duration_since(now).num_milliseconds().max(0) as u64;
    ms.div_ceil(1000).max(1)
}

/// Fetches the memento `uri_m` listed by the archive `listed_by`, at most `max_bytes` of body
/// once inflated: its raw form first, where the archive has one (within half the archive's
/// timeout, so the listed URI-M keeps the rest of it), then the listed URI-M unless the raw
/// form answered a 2xx. Redirects are followed only within that archive's memento rules; for
/// the listed URI-M, a 5xx, a redirect we may not follow, a body over the cap or a coding we
/// cannot check is a failure, and a 4xx is its answer.
pub async fn fetch_memento(
    upstream: &Upstream,
    uri_m: &str,
    listed_by: &str,
    max_bytes: u64,
    asked: Asked<'_>,
) -> Result<MementoBytes, MementoFailure> {
    let url = Url::parse(uri_m)
        .map_err(|_| MementoFailure::new(format!("the memento {:?} is not a URL", clip(uri_m))))?;
    let (i, archive, link) = upstream
        .link_for(&url, listed_by)
        .map_err(|why| MementoFailure::new(format!("not fetched: {why}")))?;
    if let Some(until) = upstream.held_until(i) {
        return Err(MementoFailure {
            retry_after: Some(seconds_until(until, upstream.now())),
            ..MementoFailure::new(format!(
                "{} from {}: the archive asked us to wait until {}: not asked",
                clip(uri_m),
                archive.id,
                until.to_rfc3339()
            ))
        });
    }
    // One turn for the raw form and the listed URI-M both: one client's memento at a time.
    let standing = Standing::default();
    let latest = tokio::time::Instant::now() + archive.timeout;
    let turn = match link.turns.take(latest, archive.timeout, &standing).await {
        Ok(turn) => turn,
        Err(late) => {
            return Err(MementoFailure {
                timed_out: true,
                ..MementoFailure::new(format!("{} from {}: {}", clip(uri_m), archive.id, late.0))
            })
        }
    };
    let started = Instant::now();
    let ask = |url: Url, form: Form, limit: Duration| Ask {
        upstream,
        i,
        archive,
        link,
        turn: &turn,
        url,
        form,
        limit,
        max_bytes,
        asked: &asked,
    };
    let raw = raw_uri_m(uri_m, &archive.raw);
    if raw.as_deref() == Some(uri_m) {
        // The listed URI-M is its own raw form (`…id_/`): asked once, as listed.
        return ask(url, Form::ListedRaw, archive.timeout).run().await;
    }
    let mut raw_failure = None;
    if let Some(raw) = raw {
        let tried = match allowed(upstream, &raw, listed_by) {
            Ok(raw_url) => ask(raw_url, Form::Raw, archive.timeout / 2).run().await,
            Err(refused) => Err(refused),
        };
        match tried {
            Ok(bytes) => return Ok(bytes),
            // Our own memory, not the archive: the listed URI-M would not fit either. An
            // archive that asked us to wait is not asked again now.
            Err(f) if f.over_budget || f.retry_after.is_some() => return Err(f),
            Err(f) => {
                tracing::debug!(
                    archive = %archive.id,
                    reason = %f.reason,
                    "raw form not served, asking the listed URI-M"
                );
                raw_failure = Some(f.reason);
            }
        }
    }
    let left = archive.timeout.saturating_sub(started.elapsed());
    ask(url, Form::Listed, left).run().await.map_err(|mut f| {
        if let Some(raw) = raw_failure {
            f.reason = format!("{} (its raw form, asked first: {raw})", f.reason);
        }
        f
    })
}

/// `raw` as a URL the listing archive's memento rules allow (its prefixes, its
/// `redirect_hosts`), or why not: then it is not asked.
fn allowed(upstream: &Upstream, raw: &str, listed_by: &str) -> Result<Url, MementoFailure> {
    let url = Url::parse(raw)
        .map_err(|_| MementoFailure::new(format!("{:?} is not a URL", clip(raw))))?;
    upstream
        .link_for(&url, listed_by)
        .map_err(|why| MementoFailure::new(format!("{} not fetched: {why}", clip(raw))))?;
    Ok(url)
}

/// Which URL is asked, and so which answers are served: the listed URI-M's 2xx and 4xx (a 4xx
/// is the archive's word on it), the raw form's 2xx only (anything else falls back to the
/// listed URI-M).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Listed,
    /// The listed URI-M, which is its own raw form.
    ListedRaw,
    Raw,
}

/// One URL asked of the archive that listed the memento (the `i`th), within `limit` and its
/// turn.
struct Ask<'a> {
    upstream: &'a Upstream,
    i: usize,
    archive: &'a Archive,
    link: &'a ArchiveLink,
    turn: &'a Turn<'a>,
    url: Url,
    form: Form,
    limit: Duration,
    max_bytes: u64,
    asked: &'a Asked<'a>,
}

impl Ask<'_> {
    async fn run(self) -> Result<MementoBytes, MementoFailure> {
        let (archive, max_bytes) = (self.archive, self.max_bytes);
        let budget = self.upstream.shared_budget();
        let head = self.asked.head;
        let fetch = async {
            let method = if head {
                http::Method::HEAD
            } else {
                http::Method::GET
            };
            let headers = [(ACCEPT, "*/*")];
            let (client, rules) = (self.link.clients.get(), &self.link.mementos);
            let resp =
                send_within(client, rules, self.turn, method, self.url.clone(), &headers).await?;
            let code = resp.status();
            if let Some(wait) = retry_after_of(&resp) {
                if let Some(until) = self.upstream.hold(self.i, wait) {
                    let mut held = ArchiveFetch::failed(
                        FailureKind::HttpStatus(code.as_u16()),
                        Some(code.as_u16()),
                        format!(
                            "HTTP {}; asked us to wait until {}",
                            code.as_u16(),
                            until.to_rfc3339()
                        ),
                    );
                    held.retry_after = Some(wait);
                    return Err(held);
                }
            }
            if code.is_redirection() {
                // A 304 (never asked for) or a redirect without a Location: not the memento.
                return Err(ArchiveFetch::failed(
                    FailureKind::Redirects,
                    Some(code.as_u16()),
                    format!("HTTP {} without a redirect we can follow", code.as_u16()),
                ));
            }
            let served = code.is_success() || (code.is_client_error() && self.form != Form::Raw);
            if !served {
                return Err(ArchiveFetch::failed(
                    FailureKind::HttpStatus(code.as_u16()),
                    Some(code.as_u16()),
                    format!("HTTP {}", code.as_u16()),
                ));
            }
            let header = |name: http::header::HeaderName| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let content_type = header(CONTENT_TYPE);
            let codec = coding_of(header(CONTENT_ENCODING).as_deref(), code.as_u16())?;
            let announced = header(CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
            let mut got = MementoBytes {
                archive: archive.id.clone(),
                http_status: code.as_u16(),
                content_type,
                content_encoding: None,
                body: None,
                raw: self.form != Form::Listed,
            };
            match codec {
                None => {
                    if let Some(len) = announced.filter(|len| *len > max_bytes) {
                        return Err(too_large(code.as_u16(), len, max_bytes));
                    }
                    if !head {
                        let body = stream_identity(resp, announced, max_bytes, budget).await?;
                        got.body = Some(body);
                    }
                }
                Some((codec, token)) => {
                    let passed_on = (self.asked.accepts)(token);
                    got.content_encoding = passed_on.then_some(token);
                    if !head {
                        let body = coded_body(resp, codec, passed_on, max_bytes, budget).await?;
                        got.body = Some(body);
                    }
                }
            }
            Ok(got)
        };
        let url = clip(self.url.as_str());
        let (upstream, i) = (self.upstream, self.i);
        let limit = tokio::time::Instant::now() + self.limit;
        match tokio::time::timeout_at(limit.min(self.turn.until), fetch).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(fetch)) => Err(MementoFailure {
                reason: format!(
                    "{url} from {}: {}",
                    archive.id,
                    fetch.answer.detail.as_deref().unwrap_or("failed")
                ),
                timed_out: fetch.failure == Some(FailureKind::Timeout) || fetch.queued(),
                over_budget: fetch.over_budget(),
                retry_after: fetch
                    .retry_after
                    .and_then(|_| upstream.held_until(i))
                    .map(|until| seconds_until(until, upstream.now())),
            }),
            Err(_) => Err(MementoFailure {
                reason: format!(
                    "{url} from {}: no answer within {}its timeout ({}s)",
                    archive.id,
                    match self.form {
                        Form::Raw => format!("{}s, half ", self.limit.as_secs_f64()),
                        _ => String::new(),
                    },
                    archive.timeout.as_secs_f64()
                ),
                timed_out: true,
                over_budget: false,
                retry_after: None,
            }),
        }
    }
}
