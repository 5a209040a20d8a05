//! One memento's bytes for `/memento/proxy`: fetched only from an enabled archive's own hosts,
//! with that archive's client (its resolver's address rules), hop rules for every redirect, its
//! timeout, and a byte cap charged to the same budget as TimeMap bodies.

use super::budget::Held;
use super::failure::FailureKind;
use super::fetch::{get_within, read_capped, ArchiveFetch};
use super::Upstream;
use crate::timemap::model::ArchiveId;
use crate::uri_r::clip;
use url::Url;

/// A memento as its archive answered it: the status (2xx or 4xx), the content type and
/// encoding it declared, and the whole body, still charged to the budget while it is held.
pub struct MementoBytes {
    pub archive: ArchiveId,
    pub http_status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub body: Vec<u8>,
    pub held: Held,
}

/// Why a memento was not fetched or not served: a reason naming the URI-M, and whether it was
/// the archive's time running out (a 504 rather than a 502).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MementoFailure {
    pub reason: String,
    pub timed_out: bool,
}

impl MementoFailure {
    fn new(reason: String) -> MementoFailure {
        MementoFailure {
            reason,
            timed_out: false,
        }
    }
}

/// Fetches `uri_m` (listed by the archive `listed_by`), at most `max_bytes` of body. Redirects
/// are followed only within that archive's hop rules; a 5xx, a redirect we may not follow, or a
/// body over the cap is a failure, never a truncated answer.
pub async fn fetch_memento(
    upstream: &Upstream,
    uri_m: &str,
    listed_by: &str,
    max_bytes: u64,
) -> Result<MementoBytes, MementoFailure> {
    let url = Url::parse(uri_m)
        .map_err(|_| MementoFailure::new(format!("the memento {:?} is not a URL", clip(uri_m))))?;
    let Some((archive, route)) = upstream.route_for(&url, listed_by) else {
        return Err(MementoFailure::new(format!(
            "not fetched: {} is not on an enabled archive's hosts",
            clip(uri_m)
        )));
    };
    let budget = upstream.shared_budget();
    let fetch = async {
        let resp = get_within(route, url.as_str(), "*/*").await?;
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
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let content_encoding = header(reqwest::header::CONTENT_ENCODING);
        let limit = "[server] memento_proxy_max_bytes";
        let (body, held) = read_capped(resp, max_bytes, limit, budget).await?;
        Ok(MementoBytes {
            archive: archive.id.clone(),
            http_status: code.as_u16(),
            content_type,
            content_encoding,
            body,
            held,
        })
    };
    let failed = |fetch: ArchiveFetch| MementoFailure {
        reason: format!(
            "{} from {}: {}",
            clip(uri_m),
            archive.id,
            fetch.answer.detail.as_deref().unwrap_or("failed")
        ),
        timed_out: fetch.failure == Some(FailureKind::Timeout),
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
        }),
    }
}
