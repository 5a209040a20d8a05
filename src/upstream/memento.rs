//! One memento's bytes for `/memento/proxy`: fetched only from the archive that listed it and
//! only under its configured prefixes (or its `redirect_hosts`), with that archive's client (its
//! resolver's address rules), its hop rules for every redirect, its timeout, and a byte cap on
//! what is passed on, inflated size included. The body streams ([`Streamed`]); what it may hold
//! is charged to the same budget as TimeMap bodies. It takes one of that archive's turns, as a
//! fan-out does, held until its head and first bytes are read: not while the rest streams to a
//! client that may never read it. An archive holding us off (`Retry-After`) is not asked.

use super::decode::{Codec, Inflate};
use super::failure::FailureKind;
use super::fetch::{read_capped, retry_after_of, send_within, ArchiveFetch};
use super::streamed::{Streamed, IN_FLIGHT};
use super::turns::Standing;
use super::Upstream;
use crate::timemap::model::ArchiveId;
use crate::uri_r::clip;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use url::Url;

/// An identity body is read this far before the answer starts: one that ends within it is
/// judged against the cap whole (a 502, not a cut answer); a longer one streams.
const PREFETCH: u64 = 64 * 1024;

/// A memento as its archive answered it: the status (2xx or 4xx), the content type it declared,
/// the coding the body is served in (None: identity), and the body (None for a HEAD).
pub struct MementoBytes {
    pub archive: ArchiveId,
    pub http_status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<&'static str>,
    pub body: Option<Streamed>,
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

/// Fetches `uri_m` (listed by the archive `listed_by`), at most `max_bytes` of body once
/// inflated. Redirects are followed only within that archive's memento rules; a 5xx, a
/// redirect we may not follow, a body over the cap or a coding we cannot check is a failure.
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
    let waiting_for =
        |until: chrono::DateTime<chrono::Utc>| Some(seconds_until(until, upstream.now()));
    if let Some(until) = upstream.held_until(i) {
        return Err(MementoFailure {
            retry_after: waiting_for(until),
            ..MementoFailure::new(format!(
                "{} from {}: the archive asked us to wait until {}: not asked",
                clip(uri_m),
                archive.id,
                until.to_rfc3339()
            ))
        });
    }
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
    let budget = upstream.shared_budget();
    let fetch = async {
        let method = if asked.head {
            reqwest::Method::HEAD
        } else {
            reqwest::Method::GET
        };
        let headers = [(ACCEPT, "*/*")];
        let resp = send_within(
            &link.client,
            &link.mementos,
            &turn,
            method,
            url.as_str(),
            &headers,
        )
        .await?;
        let code = resp.status();
        if let Some(asked) = retry_after_of(&resp) {
            if let Some(until) = upstream.hold(i, asked) {
                let mut held = ArchiveFetch::failed(
                    FailureKind::HttpStatus(code.as_u16()),
                    Some(code.as_u16()),
                    format!(
                        "HTTP {}; asked us to wait until {}",
                        code.as_u16(),
                        until.to_rfc3339()
                    ),
                );
                held.retry_after = Some(asked);
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
        if !(code.is_success() || code.is_client_error()) {
            return Err(ArchiveFetch::failed(
                FailureKind::HttpStatus(code.as_u16()),
                Some(code.as_u16()),
                format!("HTTP {}", code.as_u16()),
            ));
        }
        let header = |name: reqwest::header::HeaderName| {
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
        };
        match codec {
            None => {
                if let Some(len) = announced.filter(|len| *len > max_bytes) {
                    return Err(too_large(code.as_u16(), len, max_bytes));
                }
                if !asked.head {
                    got.body = Some(stream_identity(resp, announced, max_bytes, budget).await?);
                }
            }
            Some((codec, token)) => {
                let passed_on = (asked.accepts)(token);
                got.content_encoding = passed_on.then_some(token);
                if !asked.head {
                    got.body = Some(coded_body(resp, codec, passed_on, max_bytes, budget).await?);
                }
            }
        }
        Ok(got)
    };
    let failed = |fetch: ArchiveFetch| MementoFailure {
        reason: format!(
            "{} from {}: {}",
            clip(uri_m),
            archive.id,
            fetch.answer.detail.as_deref().unwrap_or("failed")
        ),
        timed_out: fetch.failure == Some(FailureKind::Timeout) || fetch.queued(),
        over_budget: fetch.over_budget(),
        retry_after: fetch
            .retry_after
            .and_then(|_| upstream.held_until(i))
            .and_then(waiting_for),
    };
    match tokio::time::timeout_at(turn.until, fetch).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(fetch)) => Err(failed(fetch)),
        Err(_) => Err(MementoFailure {
            reason: format!(
                "{} from {}: no answer within its timeout ({}s)",
                clip(uri_m),
                archive.id,
                archive.timeout.as_secs_f64()
            ),
            timed_out: true,
            over_budget: false,
            retry_after: None,
        }),
    }
}

const LIMIT: &str = "[server] memento_proxy_max_bytes";

fn too_large(status: u16, len: u64, max_bytes: u64) -> ArchiveFetch {
    ArchiveFetch::failed(
        FailureKind::TooLarge,
        Some(status),
        format!("body of {len} bytes is over {LIMIT} ({max_bytes})"),
    )
}

/// The body's coding and its token as we send it, None for identity; a failure for a coding we
/// cannot inflate (and so cannot hold to the cap), or several stacked.
fn coding_of(
    encoding: Option<&str>,
    status: u16,
) -> Result<Option<(Codec, &'static str)>, ArchiveFetch> {
    let Some(encoding) = encoding.map(str::trim).filter(|e| !e.is_empty()) else {
        return Ok(None);
    };
    if encoding.eq_ignore_ascii_case("identity") {
        return Ok(None);
    }
    let token = |c: Codec| match c {
        Codec::Gzip => "gzip",
        Codec::Deflate => "deflate",
        Codec::Br => "br",
        Codec::Zstd => "zstd",
    };
    match Codec::from_token(encoding) {
        Some(c) => Ok(Some((c, token(c)))),
        None => Err(ArchiveFetch::failed(
            FailureKind::Malformed,
            Some(status),
            format!(
                "Content-Encoding {:?} is not one coding tmproxy can inflate (gzip, deflate, br, zstd), so its size cannot be checked",
                clip(encoding)
            ),
        )),
    }
}

/// An identity body: [`IN_FLIGHT`] (or the whole body, when smaller) charged first, the first
/// [`PREFETCH`] bytes read (a body ending there is held to the cap before anything is sent),
/// the rest streamed.
async fn stream_identity(
    resp: reqwest::Response,
    announced: Option<u64>,
    max_bytes: u64,
    budget: &std::sync::Arc<super::budget::Budget>,
) -> Result<Streamed, ArchiveFetch> {
    let status = resp.status().as_u16();
    let mut held = budget.hold();
    let reserve = IN_FLIGHT
        .min(announced.unwrap_or(u64::MAX))
        .min(max_bytes.saturating_add(1));
    held.grow(reserve).map_err(|over| {
        ArchiveFetch::failed(FailureKind::Budget, Some(status), over.to_string())
    })?;
    let mut stream = resp.bytes_stream().boxed();
    let mut first = Vec::new();
    let mut read = 0u64;
    let mut ended = false;
    while read < PREFETCH.min(max_bytes.saturating_add(1)) {
        match stream.next().await {
            Some(Ok(chunk)) => {
                read += chunk.len() as u64;
                first.push(chunk);
            }
            Some(Err(e)) => {
                let (kind, detail) = super::failure::classify(&e);
                return Err(ArchiveFetch::failed(kind, Some(status), detail));
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    if read > max_bytes {
        return Err(ArchiveFetch::failed(
            FailureKind::TooLarge,
            Some(status),
            format!("body over {LIMIT} ({max_bytes} bytes)"),
        ));
    }
    let rest = (!ended).then_some(stream);
    Ok(Streamed::upstream(first, rest, announced, max_bytes, held))
}

/// A coded body: read whole (it is at most the cap), inflated once to hold its inflated size to
/// the cap, then sent coded (`passed_on`) or inflated a frame at a time.
async fn coded_body(
    resp: reqwest::Response,
    codec: Codec,
    passed_on: bool,
    max_bytes: u64,
    budget: &std::sync::Arc<super::budget::Budget>,
) -> Result<Streamed, ArchiveFetch> {
    let status = resp.status().as_u16();
    let (coded, mut held) = read_capped(resp, max_bytes, LIMIT, budget).await?;
    let coded = Bytes::from(coded);
    let over_budget = |over: super::budget::OverBudget| {
        ArchiveFetch::failed(FailureKind::Budget, Some(status), over.to_string())
    };
    // The decoder's window while it counts, and later while it inflates for the client, with
    // what a streamed answer may hold.
    let extra = codec.state_bytes()
        + if passed_on {
            0
        } else {
            IN_FLIGHT.min(max_bytes)
        };
    held.grow(extra).map_err(over_budget)?;
    let malformed = |e: std::io::Error| {
        ArchiveFetch::failed(
            FailureKind::Malformed,
            Some(status),
            format!("the body is not valid in its Content-Encoding: {e}"),
        )
    };
    let inflated = inflated_size(codec, coded.clone(), max_bytes).map_err(malformed)?;
    if inflated > max_bytes {
        return Err(ArchiveFetch::failed(
            FailureKind::TooLarge,
            Some(status),
            format!("body inflates past {LIMIT} ({max_bytes} bytes): a decompression bomb?"),
        ));
    }
    if passed_on {
        return Ok(Streamed::in_memory(coded, held));
    }
    let inflate = Inflate::new(codec, coded).map_err(malformed)?;
    Ok(Streamed::inflating(inflate, max_bytes, held))
}

/// How many bytes `coded` inflates to, counting no further than just past `cap`.
fn inflated_size(codec: Codec, coded: Bytes, cap: u64) -> std::io::Result<u64> {
    let mut inflate = Inflate::new(codec, coded)?;
    let mut total = 0u64;
    while total <= cap {
        match inflate.next_piece(super::streamed::FRAME)? {
            Some(piece) => total += piece.len() as u64,
            None => break,
        }
    }
    Ok(total)
}
