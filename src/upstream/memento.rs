//! One memento's bytes for `/memento/proxy`: fetched only from the archive that listed it and
//! only under its configured prefixes (or its `redirect_hosts`), with that archive's client (its
//! resolver's address rules), its hop rules for every redirect, its timeout, and a byte cap on
//! what is passed on, inflated size included. The body streams ([`Streamed`]); what it may hold
//! is charged to the same budget as TimeMap bodies.

mod body;

use super::failure::FailureKind;
use super::fetch::{send_within, ArchiveFetch};
use super::streamed::Streamed;
use super::Upstream;
use crate::timemap::model::ArchiveId;
use crate::uri_r::clip;
use body::{coded_body, coding_of, stream_identity, too_large};
use reqwest::header::{ACCEPT, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use url::Url;

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
/// archive's time running out (a 504 rather than a 502), and whether it was our own memory
/// budget (a 503: not the archive's fault, and worth a retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MementoFailure {
    pub reason: String,
    pub timed_out: bool,
    pub over_budget: bool,
}

impl MementoFailure {
    fn new(reason: String) -> MementoFailure {
        MementoFailure {
            reason,
            timed_out: false,
            over_budget: false,
        }
    }
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
    let (archive, link) = upstream
        .link_for(&url, listed_by)
        .map_err(|why| MementoFailure::new(format!("not fetched: {why}")))?;
    let budget = upstream.shared_budget();
    let fetch = async {
        let method = if asked.head {
            reqwest::Method::HEAD
        } else {
            reqwest::Method::GET
        };
        let headers = [(ACCEPT, "*/*")];
        let resp =
            send_within(&link.client, &link.mementos, method, url.as_str(), &headers).await?;
        let code = resp.status();
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
        timed_out: fetch.failure == Some(FailureKind::Timeout),
        over_budget: fetch.over_budget(),
    };
    match tokio::time::timeout(archive.timeout, fetch).await {
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
        }),
    }
}
