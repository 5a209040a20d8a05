//! What the TimeMap routes share: the URI-R and the client's choices read from a request, the
//! lookup through the cache, and the cache's headers on the answer.

use super::headers::{
    ACCEPT_DATETIME, PREFER, PREFERENCE_APPLIED, X_CACHE, X_CACHE_ACTION, X_CACHE_CASE,
};
use super::state::AppState;
use super::{choices, client, rate};
use crate::cache::service::{CacheStatus, Request, Served};
use crate::error::AppError;
use crate::timemap::aggregate::{Aggregate, Verdict};
use crate::timemap::datetime::parse_rfc1123;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use crate::uri_r::{split_archives_param, split_timeout_param, UriR, MAX_URI_LEN};
use crate::view::View;
use axum::http::{header, HeaderMap, HeaderValue, Uri};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// The raw text after `prefix` in the request target (path and query, not decoded): the URI-R
/// keeps its own query string and encoding.
pub fn raw_after<'a>(uri: &'a Uri, prefix: &str) -> &'a str {
    let target = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("");
    target.strip_prefix(prefix).unwrap_or("")
}

/// A URI-R and what the client chose about its answer.
pub struct TimeMapRequest {
    pub uri_r: Arc<UriR>,
    /// The time the client lets us spend on it (None: the configured deadline).
    pub deadline: Option<Duration>,
    /// The archives it wants asked, when not every enabled one (`archives=`, `Prefer:
    /// archives=`): such an answer is never stored.
    pub archives: Option<Vec<String>>,
    /// `Prefer: archives=all`: every archive asked, whatever routing would skip.
    pub ask_all: bool,
    pub directives: choices::CacheDirectives,
}

/// Reads the URI-R and the client's choices: its wait limit (`?timeout=5s` or `Prefer:
/// wait=5`), its archives (`?archives=ia,pt` or `Prefer: archives="ia pt"`) and its
/// `Cache-Control`.
pub fn read_lookup(
    state: &AppState,
    raw: &str,
    headers: &HeaderMap,
) -> Result<TimeMapRequest, AppError> {
    if raw.len() > MAX_URI_LEN {
        return Err(crate::uri_r::UriRError::TooLong(raw.len()).into());
    }
    // Only a query can hold a parameter of ours (or a typo of one): nearly every request has
    // none, and is read without a copy or a list.
    let (raw, param, timeout) = match raw.contains('?') {
        true => split_query(state, raw)?,
        false => (Cow::Borrowed(raw), None, None),
    };
    let mut prefer_ids = choices::ids_in_prefer(headers);
    // `all` is no archive's id (config validation reserves it): every archive, unrouted.
    let ask_all = prefer_ids.as_deref().is_some_and(choices::is_every_archive);
    if ask_all {
        prefer_ids = None;
    }
    // Nearly every request chooses nothing: no lists are built for it.
    let archives = match (&param, &prefer_ids) {
        (None, None) => None,
        _ => {
            let enabled: Vec<&str> = state.upstream.archives().iter().map(|a| &*a.id).collect();
            let configured: Vec<&str> = state.archive_list.iter().map(|a| a.id.as_str()).collect();
            let param_ids = param.as_deref().map(choices::ids_in_param);
            choices::chosen_archives(
                &enabled,
                &configured,
                param_ids.as_deref(),
                prefer_ids.as_deref(),
            )?
        }
    };
    let mut deadline: Option<Duration> = None;
    if let Some(t) = timeout {
        let asked = crate::config::parse_duration(&t).map_err(|_| {
            AppError::BadParameter(format!(
                "timeout {t:?} is not a duration like \"5s\" or \"500ms\""
            ))
        })?;
        deadline = Some(asked);
    }
    if let Some(wait) = prefer_wait(headers)? {
        deadline = Some(deadline.map_or(wait, |d| d.min(wait)));
    }
    // No time at all cannot be served: say so rather than answer 504 without asking anyone.
    if deadline.is_some_and(|d| d.is_zero()) {
        return Err(AppError::BadParameter(
            "a timeout of 0 leaves no time to ask the archives: ask for more (e.g. ?timeout=5s or Prefer: wait=5)".into(),
        ));
    }
    // Only a deadline shorter than the configured one changes anything.
    let deadline = deadline.filter(|d| *d < state.upstream.deadline());
    // Shared, not copied: a parsed URI-R carries its keys, and a hit should not clone them.
    let uri_r = state
        .uri_rs
        .get_or_try(&raw, |raw| UriR::parse(raw).map(Arc::new))?;
    // Into the request's log line (`log::RequestLog`): the URI-R as parsed, Debug-escaped.
    tracing::Span::current().record("uri_r", tracing::field::debug(uri_r.as_str()));
    Ok(TimeMapRequest {
        uri_r,
        deadline,
        archives,
        ask_all,
        directives: choices::cache_directives(headers),
    })
}

/// A URI-R with our parameters taken off its query: its text, `archives=`, `timeout=`.
type Split<'a> = (Cow<'a, str>, Option<String>, Option<String>);

/// The URI-R with our parameters (`archives=`, `timeout=`) taken off its query, and their
/// values; an error for a parameter that looks meant for us but is not one of ours.
fn split_query<'a>(state: &AppState, raw: &'a str) -> Result<Split<'a>, AppError> {
    // Ours only when every id in it is an archive we know; else it is the URI-R's parameter.
    let known = |id: &str| state.archive_list.iter().any(|a| a.id == id);
    let (raw, param) =
        split_archives_param(raw, |v| choices::ids_in_param(v).into_iter().all(known));
    let (raw, timeout) = split_timeout_param(&raw, |v| crate::config::parse_duration(v).is_ok());
    if raw.contains('?') {
        let configured: Vec<&str> = state.archive_list.iter().map(|a| a.id.as_str()).collect();
        if let Some(typo) = choices::meant_for_us(&raw, &configured) {
            return Err(typo);
        }
    }
    Ok((Cow::Owned(raw), param, timeout))
}

/// RFC 7240 `Prefer: wait=N` (seconds): the unambiguous way to ask for a shorter deadline.
fn prefer_wait(headers: &HeaderMap) -> Result<Option<Duration>, AppError> {
    for value in headers.get_all(PREFER) {
        let Ok(text) = value.to_str() else { continue };
        for pref in text.split(',') {
            let pref = pref.trim();
            if let Some(v) = pref.strip_prefix("wait=") {
                let secs: u64 = v.trim().parse().map_err(|_| {
                    AppError::BadParameter(format!(
                        "Prefer: wait={v:?} is not a whole number of seconds"
                    ))
                })?;
                return Ok(Some(Duration::from_secs(secs)));
            }
        }
    }
    Ok(None)
}

/// The datetime a TimeGate should aim at: `Accept-Datetime`, or now when absent.
pub fn accept_datetime(
    headers: &HeaderMap,
    now: MementoDatetime,
) -> Result<MementoDatetime, AppError> {
    match headers.get(ACCEPT_DATETIME) {
        None => Ok(now),
        Some(v) => {
            let text = String::from_utf8_lossy(v.as_bytes()).into_owned();
            parse_rfc1123(&text).ok_or(AppError::BadAcceptDatetime(text))
        }
    }
}

/// Looks the URI-R up through the cache, honouring the client's deadline, archives and
/// `Cache-Control`; `render` is the TimeMap format the answer will be rendered in, if it is one.
/// The one error is `only-if-cached` with nothing (fitting) cached: a 504.
pub async fn serve_lookup(
    state: &AppState,
    lookup: &TimeMapRequest,
    render: Option<TimeMapFormat>,
) -> Result<Served<View>, AppError> {
    let d = lookup.directives;
    let uri_r = &lookup.uri_r;
    let only = lookup.archives.as_deref();
    if d.only_if_cached {
        // no-cache asks for a check with the archives, which only-if-cached forbids.
        let cached = match d.no_cache {
            true => None,
            false => state.cache.cached_only(uri_r, only, d.max_stale).await,
        };
        return cached.ok_or(AppError::NotInCache);
    }
    let req = Request {
        deadline: lookup.deadline,
        no_cache: d.no_cache,
        force: false,
        render,
        ask_all: lookup.ask_all,
        // Counted as the rate limiter counts it: an IPv6 host holds a whole /64.
        client: client::current().map(rate::client_key),
    };
    Ok(match only {
        Some(only) => state.cache.lookup_only(uri_r, req, only).await,
        None => state.cache.lookup(uri_r, req).await,
    })
}

/// The error for an aggregate without mementos, or Ok when there are some.
pub fn check_found(agg: &Aggregate) -> Result<(), AppError> {
    match agg.verdict() {
        Verdict::Found { .. } => Ok(()),
        Verdict::NotArchived { .. } => Err(AppError::NotArchived(Box::new(agg.clone()))),
        Verdict::Unavailable { timed_out } => Err(AppError::Upstream {
            timed_out,
            aggregate: Box::new(agg.clone()),
        }),
    }
}

/// `X-Cache` and its companions, `Age`, `Cache-Control` (`Last-Modified` is a content header).
pub fn cache_headers(h: &mut HeaderMap, served: &Served<View>, now: MementoDatetime) {
    if let Some(case) = served.case {
        h.insert(X_CACHE_CASE, HeaderValue::from(u16::from(case.number())));
    }
    if let Some(action) = served.action {
        h.insert(X_CACHE_ACTION, HeaderValue::from_static(action.as_str()));
    }
    if served.all_asked {
        h.insert(
            PREFERENCE_APPLIED,
            HeaderValue::from_static(choices::EVERY_ARCHIVE_APPLIED),
        );
    }
    let stale = served.status == CacheStatus::Stale;
    let status = HeaderValue::from_static(served.status.as_str());
    let (age, cache_control) = freshness(served.checked_at, served.fresh_until, stale, now);
    h.insert(X_CACHE, status);
    h.insert(header::AGE, age);
    h.insert(header::CACHE_CONTROL, cache_control);
}

/// `Age` and `Cache-Control` of an answer last checked at `checked_at`, fresh until
/// `fresh_until` (None: for good) unless served `stale`.
pub fn freshness_headers(
    h: &mut HeaderMap,
    checked_at: MementoDatetime,
    fresh_until: Option<MementoDatetime>,
    stale: bool,
    now: MementoDatetime,
) {
    let (age, cache_control) = freshness(checked_at, fresh_until, stale, now);
    h.insert(header::AGE, age);
    h.insert(header::CACHE_CONTROL, cache_control);
}

/// The values of `Age` and `Cache-Control` ([`freshness_headers`]).
fn freshness(
    checked_at: MementoDatetime,
    fresh_until: Option<MementoDatetime>,
    stale: bool,
    now: MementoDatetime,
) -> (HeaderValue, HeaderValue) {
    // Whole seconds apart, by their timestamps: a `TimeDelta` between two datetimes converts
    // both dates again, on every answer.
    let now = now.timestamp();
    let age = now.saturating_sub(checked_at.timestamp()).max(0);
    let max_age = match fresh_until {
        // Fresh for good (policy forever): a year is HTTP's customary "forever".
        None => 31_536_000,
        // Expired and served anyway: nothing to promise about freshness.
        Some(_) if stale => 0,
        Some(until) => until.timestamp().saturating_sub(now).max(0),
    };
    (
        HeaderValue::from(age),
        max_age_value(max_age.unsigned_abs()),
    )
}

/// `max-age={seconds}`, its digits written on the stack (the header value is the one
/// allocation; `format_args!` was most of what a hit spent on it).
fn max_age_value(seconds: u64) -> HeaderValue {
    const PREFIX: &[u8] = b"max-age=";
    let mut text = [0u8; PREFIX.len() + 20];
    text[..PREFIX.len()].copy_from_slice(PREFIX);
    let digits = seconds.checked_ilog10().map_or(1, |l| l as usize + 1);
    let mut n = seconds;
    for slot in text[PREFIX.len()..PREFIX.len() + digits].iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
    HeaderValue::from_bytes(&text[..PREFIX.len() + digits])
        .unwrap_or_else(|_| HeaderValue::from_static("max-age=0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_written_as_format_writes_it() {
        for s in [0, 1, 9, 10, 99, 100, 1_296_000, 31_536_000, u64::MAX] {
            let v = max_age_value(s);
            assert_eq!(v.to_str().ok(), Some(format!("max-age={s}").as_str()));
        }
    }
}
