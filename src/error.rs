//! The one place where failures become HTTP statuses: client mistakes are 4xx with a one-line
//! reason, upstream trouble is 502/504 naming each archive, our own faults are a logged 500.

use crate::timemap::aggregate::{Aggregate, ArchiveOutcome};
use crate::timemap::datetime::RFC1123_EXAMPLE;
use crate::upstream::memento::MementoFailure;
use crate::uri_r::{clip, UriRError};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;
use tmproxy_sampling::jobs::{JobError, JobState};

/// Everything a request can end in other than its normal answer.
#[derive(Debug)]
pub enum AppError {
    UriR(UriRError),
    /// `Accept-Datetime` that is not RFC 1123 (RFC 7089 §4.5.3).
    BadAcceptDatetime(String),
    /// A `/memento/` or `/api/json/` path datetime that is not 4 to 14 digits.
    BadPathDatetime(String),
    UnknownFormat(String),
    /// A query or header value of ours (`timeout`, `Prefer: wait`) that makes no sense.
    BadParameter(String),
    /// Every archive that answered has no memento.
    NotArchived(Box<Aggregate>),
    /// No archive gave a usable answer.
    Upstream {
        timed_out: bool,
        aggregate: Box<Aggregate>,
    },
    NoSuchRoute,
    /// A TimeMap page past the last one: the page asked for (its digits, clipped), how many
    /// pages there are and how many mementos a page holds.
    NoSuchPage {
        asked: String,
        pages: usize,
        page_size: usize,
    },
    /// Admin route without the right bearer token.
    Unauthorized,
    /// Admin route while no token is configured.
    AdminDisabled,
    /// Admin lookup of a URI-R that has no cache entry.
    NotCached(String),
    /// `Cache-Control: only-if-cached` and nothing fitting is cached (RFC 9111 §5.2.1.7: 504).
    NotInCache,
    /// A sampling job request the jobs refuse (`/admin/sampling/jobs…`): the sampling crate's
    /// own error, given its status and message here like every other failure.
    Sampling(JobError),
    /// A request body (admin, sampling) over the limit, in bytes.
    BodyTooLarge(usize),
    /// Request headers whose names and values add up to more than the limit: (size, limit).
    HeadersTooLarge(usize, usize),
    /// A method the route does not answer (e.g. `POST /timemap/…`).
    MethodNotAllowed,
    /// This client sent more than `[server] rate_limit` allows; it may retry after this many
    /// seconds. Carries the configured rate and burst for the reason line.
    RateLimited {
        retry_after: u64,
        rate: f64,
        burst: u32,
    },
    /// `/memento/proxy`: the closest memento could not be fetched or served (its host is no
    /// enabled archive's, a redirect off the archive's hosts, over the byte cap, an archive
    /// 5xx, its timeout).
    MementoProxy(MementoFailure),
    /// A request whose `Via` names this tmproxy or an aggregator it asks: answering it would
    /// go round a loop of aggregators (`upstream::via`).
    LoopDetected(String),
    /// A bug or an exhausted resource on our side; details go to the log, not the client.
    Internal(String),
}

/// A URI-R that cannot be served (too long, not http(s), …): its 400 or 414.
impl From<UriRError> for AppError {
    fn from(e: UriRError) -> Self {
        AppError::UriR(e)
    }
}

/// A refused sampling job request: its status and message are [`AppError::status`]'s and
/// [`AppError::reason`]'s (`JobError::Io` is ours: a logged 500 like [`AppError::Internal`]).
impl From<JobError> for AppError {
    fn from(e: JobError) -> Self {
        AppError::Sampling(e)
    }
}

impl AppError {
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::UriR(UriRError::TooLong(_)) => StatusCode::URI_TOO_LONG,
            AppError::UriR(_)
            | AppError::BadAcceptDatetime(_)
            | AppError::BadPathDatetime(_)
            | AppError::UnknownFormat(_)
            | AppError::BadParameter(_)
            | AppError::Sampling(JobError::BadSpec(_)) => StatusCode::BAD_REQUEST,
            AppError::NotArchived(_)
            | AppError::NoSuchRoute
            | AppError::NoSuchPage { .. }
            | AppError::NotCached(_)
            | AppError::Sampling(
                JobError::NoSuchJob(_)
                | JobError::NoSuchFile(_)
                | JobError::FileMissing { .. }
                | JobError::FileRefused(_),
            ) => StatusCode::NOT_FOUND,
            AppError::Sampling(JobError::NotDone { .. } | JobError::FeedRunning { .. }) => {
                StatusCode::CONFLICT
            }
            AppError::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::HeadersTooLarge(..) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::Sampling(JobError::Unavailable) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::AdminDisabled => StatusCode::FORBIDDEN,
            AppError::Upstream {
                timed_out: true, ..
            }
            | AppError::NotInCache => StatusCode::GATEWAY_TIMEOUT,
            AppError::Upstream {
                timed_out: false, ..
            } => StatusCode::BAD_GATEWAY,
            AppError::MementoProxy(f) if f.timed_out => StatusCode::GATEWAY_TIMEOUT,
            // Our budget, or the archive asked us to wait: both pass, so a retry may do.
            AppError::MementoProxy(f) if f.over_budget || f.retry_after.is_some() => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::MementoProxy(_) => StatusCode::BAD_GATEWAY,
            AppError::LoopDetected(_) => StatusCode::LOOP_DETECTED,
            AppError::Internal(_)
            | AppError::Sampling(JobError::Io(_) | JobError::FileDamaged { .. }) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The one-line reason shown to the client.
    pub fn reason(&self) -> String {
        match self {
            AppError::UriR(e) => e.to_string(),
            AppError::BadAcceptDatetime(v) => format!(
                "malformed Accept-Datetime: {:?}, expected RFC 1123 like {RFC1123_EXAMPLE:?}",
                clip(v)
            ),
            AppError::BadPathDatetime(v) => format!(
                "malformed datetime {:?} in path, expected YYYY[MM[DD[hh[mm[ss]]]]] like \"20070531203500\"",
                clip(v)
            ),
            AppError::MementoProxy(f) => format!("memento not proxied: {}", f.reason),
            AppError::LoopDetected(why) => format!("loop detected: {why}"),
            AppError::UnknownFormat(v) => {
                format!("unknown TimeMap format {:?}: use link, json or cdxj", clip(v))
            }
            AppError::BadParameter(v) => v.clone(),
            AppError::NotArchived(agg) => {
                let answered = agg.outcomes.iter().filter(|o| o.answer.status.answered()).count();
                let missing: Vec<&str> = agg.missing().map(|o| o.id.as_str()).collect();
                let mut text = if missing.is_empty() {
                    format!("no memento of {} in any of the {answered} archives", agg.uri_r)
                } else {
                    format!(
                        "no memento of {} in the {answered} archives that answered; no answer from: {}",
                        agg.uri_r,
                        missing.join(", ")
                    )
                };
                for why in SKIP_DETAILS {
                    let skipped: Vec<&str> = agg
                        .skipped()
                        .filter(|o| skip_detail(o) == why)
                        .map(|o| o.id.as_str())
                        .collect();
                    if !skipped.is_empty() {
                        text.push_str(&format!("; not asked ({why}): {}", skipped.join(", ")));
                    }
                }
                text
            }
            AppError::Upstream { timed_out, aggregate } => {
                if aggregate.outcomes.is_empty() {
                    "no archive is enabled in the configuration".to_string()
                } else if *timed_out {
                    format!("no archive answered within the deadline for {}", aggregate.uri_r)
                } else if crate::upstream::failure::none_reached(&aggregate.outcomes) {
                    format!(
                        "no archive could be reached for {}: every name failed to resolve or every connection failed, so this machine may be offline (`tmproxy demo` runs without a network); each archive's failure follows",
                        aggregate.uri_r
                    )
                } else {
                    format!("no archive gave a usable answer for {}", aggregate.uri_r)
                }
            }
            AppError::NoSuchRoute => "no such endpoint: try /timemap/link/{URI-R}, /timegate/{URI-R}, /memento/{DATETIME}/{URI-R}, /memento/{link|json|cdxj|proxy}/{DATETIME}/{URI-R} or /api/json/{DATETIME}/{URI-R}".to_string(),
            AppError::NoSuchPage { asked, pages, page_size } => format!(
                "no page {} of this TimeMap: it has {pages} page{} of up to {page_size} mementos, numbered from 1",
                clip(asked),
                if *pages == 1 { "" } else { "s" }
            ),
            AppError::Internal(_) | AppError::Sampling(JobError::Io(_)) => {
                "internal error".to_string()
            }
            AppError::Unauthorized => "admin API: send Authorization: Bearer <token>".to_string(),
            AppError::AdminDisabled => "admin API disabled: set [admin] token in the config or TMPROXY_ADMIN_TOKEN".to_string(),
            AppError::NotCached(u) => format!("no cache entry for {u}"),
            AppError::NotInCache => "not in the cache, and Cache-Control: only-if-cached forbids asking the archives (an expired entry is served only within max-stale; no-cache with it can never be served)".to_string(),
            AppError::Sampling(JobError::BadSpec(why)) => {
                format!("bad sampling job: {}", clip(why))
            }
            AppError::Sampling(JobError::NoSuchJob(id)) => format!("no sampling job {}", clip(id)),
            AppError::Sampling(JobError::NotDone { id, state }) => {
                format!("sampling job {} is {}, not done", clip(id), state.name())
            }
            AppError::Sampling(JobError::FeedRunning { id, feed }) => format!(
                "sampling job {} is already being fed ({} of {} URI-Rs warmed); a second \
                 feed is not started (see GET /admin/sampling/jobs/{}/feed)",
                clip(id),
                feed.warmed,
                feed.uri_rs,
                clip(id)
            ),
            AppError::Sampling(JobError::NoSuchFile(name)) => format!(
                "no job file {:?}: files/ serves {}; timemaps/ serves NNNNNN.ndjson, index.ndjson and hydration.json",
                clip(name),
                tmproxy_sampling::job_files::FILES.join(", ")
            ),
            AppError::Sampling(JobError::FileMissing { id, file, state }) => {
                let why = if matches!(state, JobState::Queued | JobState::Running) {
                    "not written yet"
                } else {
                    "not written by this run (a run that stopped before it, or a version of tmproxy that does not write it; TimeMaps only with collect_timemaps)"
                };
                format!(
                    "sampling job {} is {}: {file} is {why}",
                    clip(id),
                    state.name()
                )
            }
            AppError::Sampling(JobError::FileDamaged { file, why }) => {
                format!("job file {file} is damaged: {}", clip(why))
            }
            AppError::Sampling(JobError::FileRefused(why)) => {
                format!("job file refused: {why} (the API serves regular files only, no symlinks)")
            }
            AppError::Sampling(JobError::Unavailable) => {
                "sampling jobs are unavailable: the jobs directory could not be opened (see the log)"
                    .to_string()
            }
            AppError::BodyTooLarge(limit) => {
                format!("request body over the {limit}-byte limit")
            }
            AppError::HeadersTooLarge(size, limit) => format!(
                "request headers of {size} bytes are over the {limit}-byte limit ([server] max_header_bytes)"
            ),
            AppError::MethodNotAllowed => {
                "method not allowed on this route (the Memento routes answer GET and HEAD)".to_string()
            }
            AppError::RateLimited {
                retry_after,
                rate,
                burst,
            } => format!(
                "too many requests from your address: at most {rate} per second (bursts of {burst}); retry after {retry_after} s"
            ),
        }
    }
}

/// `X-Memento-Archives: ia=ok;n=12;dup=0, arquivo=timeout;n=0;dup=0`: each archive's outcome in
/// one header, so a client reading only headers can still tell what is missing. `n` counts the
/// served mementos credited to it, `dup` those it listed that are served as another archive's
/// (the same URI-M, credited where it is listed first). An archive whose few mementos came from a fallback says so:
/// `ia=error;n=2;dup=0;fallback=timegate`; one not asked says why:
/// `pt=skipped;n=0;dup=0;detail=routing`, `ia=skipped;n=0;dup=0;detail=retry-after`.
pub fn archives_header(agg: &Aggregate) -> Option<HeaderValue> {
    let text = agg
        .outcomes
        .iter()
        // The configured archives; those credited with an aggregator's mementos are in its n.
        .filter(|o| o.via.is_none())
        .map(|o| {
            let status = o.answer.status.as_str();
            let mut part = format!("{}={status};n={};dup={}", o.id, o.mementos, o.duplicates);
            if let Some(f) = o.answer.fallback {
                part.push_str(";fallback=");
                part.push_str(f.as_str());
            }
            // Only a skip's detail: it is ours (`routing`, `retry-after`), where a failure's
            // quotes an archive.
            if o.answer.status.skipped() {
                part.push_str(";detail=");
                part.push_str(skip_detail(o));
            }
            part
        })
        .collect::<Vec<_>>()
        .join(", ");
    HeaderValue::from_str(&text).ok()
}

/// Why an archive was not asked, each as a skip's detail says it.
const SKIP_DETAILS: [&str; 2] = [
    tmproxy_core::routing::decide::DETAIL,
    tmproxy_core::retry_after::DETAIL,
];

/// A skipped archive's reason, one of [`SKIP_DETAILS`]: a stored entry's skip predates any other
/// reason (and nothing else is ever written into a header here), so anything else is routing's.
fn skip_detail(o: &ArchiveOutcome) -> &'static str {
    let detail = o.answer.detail.as_deref().unwrap_or("");
    SKIP_DETAILS
        .into_iter()
        .find(|d| *d == detail)
        .unwrap_or(tmproxy_core::routing::decide::DETAIL)
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        // The detail is for the log only: it rides in the response's extensions to
        // the log layer (`crate::http::log`), which knows the request it answers and takes it out.
        let detail = match &self {
            AppError::Internal(detail) | AppError::Sampling(JobError::Io(detail)) => {
                Some(InternalDetail(detail.clone()))
            }
            _ => None,
        };
        let reason = self.reason();
        let mut body = format!("{} {reason}\n", status.as_u16());
        let aggregate = match &self {
            AppError::NotArchived(agg) | AppError::Upstream { aggregate: agg, .. } => Some(agg),
            _ => None,
        };
        let unauthorized = matches!(self, AppError::Unauthorized);
        let retry_after = match &self {
            AppError::RateLimited { retry_after, .. } => Some(*retry_after),
            AppError::MementoProxy(f) => f.retry_after,
            _ => None,
        };
        let mut response = if let Some(agg) = aggregate {
            // Per-archive lines after the reason: what each archive said, for humans with curl.
            for o in &agg.outcomes {
                body.push_str(&format!(
                    "{}: {}{}{}\n",
                    o.id,
                    o.answer.status.as_str(),
                    o.answer
                        .http_status
                        .map(|s| format!(" (HTTP {s})"))
                        .unwrap_or_default(),
                    o.answer
                        .detail
                        .as_deref()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                ));
            }
            let mut r = (status, body).into_response();
            if let Some(v) = archives_header(agg) {
                r.headers_mut().insert("x-memento-archives", v);
            }
            r
        } else {
            (status, body).into_response()
        };
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if unauthorized {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(detail) = detail {
            response.extensions_mut().insert(detail);
        }
        // The same error as a JSON route writes it, for [`in_route_format`] to swap in.
        let archives = aggregate.map_or(&[][..], |agg| &agg.outcomes[..]);
        let json = JsonError {
            error: &reason,
            archives,
        };
        // (Not `http::json`, which maps its own failure here: a newline ends it all the same.)
        if let Ok(mut body) = tmproxy_core::json_text::to_vec(&json) {
            body.push(b'\n');
            response
                .extensions_mut()
                .insert(JsonForm(Bytes::from(body)));
        }
        response
    }
}

/// How a route writes its errors: the JSON routes (`/timemap/json/…`, `/memento/json/…`,
/// `/api/json/…`) in JSON, so a client that parses every answer as JSON can read why; every
/// other route (link format, CDXJ, redirects, the proxy) as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorFormat {
    Text,
    Json,
}

/// The path prefixes whose answers are JSON (MemGator's and Time Travel's JSON routes).
const JSON_ROUTES: &[&str] = &["/timemap/json/", "/memento/json/", "/api/json/"];

impl ErrorFormat {
    /// The error format of the route at `path` (as routed: not decoded). `/api/json` without
    /// its slash is the same route's mistake.
    pub fn of_path(path: &str) -> ErrorFormat {
        let json = JSON_ROUTES
            .iter()
            .any(|r| path.starts_with(r) || path == r.trim_end_matches('/'));
        if json {
            ErrorFormat::Json
        } else {
            ErrorFormat::Text
        }
    }
}

/// `{"error": "<reason>", "archives": [<each archive's outcome, where the error has them>]}`.
#[derive(Serialize)]
struct JsonError<'a> {
    error: &'a str,
    archives: &'a [ArchiveOutcome],
}

/// An error's JSON body, carried by every error response until [`in_route_format`] uses it or
/// drops it: rendered where the error is known, whichever layer or route answered.
#[derive(Clone)]
struct JsonForm(Bytes);

/// `response` as the route at `format` writes errors: an error of ours on a JSON route gets its
/// JSON body (status and every other header kept); anything else passes unchanged. The JSON form
/// never leaves the server either way.
pub fn in_route_format(mut response: Response, format: ErrorFormat) -> Response {
    let Some(JsonForm(body)) = response.extensions_mut().remove::<JsonForm>() else {
        return response;
    };
    if format == ErrorFormat::Text {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// What an [`AppError::Internal`] was, on its way from `into_response` to the log. Only
/// [`take_internal_detail`] reads it, and the log layer takes it out, so extensions never reach
/// the client.
#[derive(Clone)]
struct InternalDetail(String);

/// The detail of an internal error this response answers, taken out of it (the log layer,
/// `crate::http::log`, logs it with the request's method and path, which `into_response`
/// cannot know).
pub fn take_internal_detail(response: &mut Response) -> Option<String> {
    let InternalDetail(detail) = response.extensions_mut().remove::<InternalDetail>()?;
    Some(detail)
}
