//! The public routes: what they read from a request, and the router with CORS and a request span
//! around them.

pub(crate) mod admin;
pub(crate) mod api;
pub(crate) mod archives;
#[cfg(test)]
mod captured_log;
mod choices;
pub mod client;
mod encoding;
mod errors;
pub(crate) mod gate;
pub(crate) mod json;
pub(crate) mod log;
mod memento;
pub(crate) mod metrics;
mod proxy;
pub(crate) mod rate;
pub(crate) mod route;
pub(crate) mod sampling;
pub mod timegate;
pub(crate) mod timemap;
mod trace;
pub(crate) mod ui;
pub mod view;

use crate::cache::service::{CacheStatus, CachedTimeMap, Request, Served, TimeMapCache};
use crate::cache::store::renderings::Renderings;
use crate::cache::store::Tiered;
use crate::clock::{Clock, SimClock};
use crate::error::AppError;
use crate::timemap::aggregate::{Aggregate, Verdict};
use crate::timemap::datetime::parse_rfc1123;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use crate::upstream::Upstream;
use crate::uri_r::{split_archives_param, split_timeout_param, UriR, MAX_URI_LEN};
use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use gate::{Gate, GateLayer};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceBuilder;
use tower_http::cors::{Any, CorsLayer};
use trace::traced;
use view::View;

/// What every handler shares: the archives, the cache in front of them, our public base URL,
/// the clock (and, with `--sim-clock`, the handle that sets it), the admin token.
pub struct AppState {
    pub upstream: Arc<Upstream>,
    pub cache: Arc<Cache>,
    pub public_url: String,
    pub clock: Arc<dyn Clock>,
    pub sim_clock: Option<Arc<SimClock>>,
    pub admin_token: String,
    /// Sampling jobs; None when the jobs directory could not be opened (the routes say 503).
    pub jobs: Option<Arc<tmproxy_sampling::jobs::Jobs>>,
    /// `[server] max_header_bytes`: more header bytes than this is a 431.
    pub max_header_bytes: usize,
    /// `[server] rate_limit`: the per-client buckets of the Memento routes; None = off.
    pub rate_limiter: Option<Arc<rate::Limiter>>,
    /// `[admin] listen` is set: `/admin/*` and `/metrics` live on their own listener
    /// ([`admin_router`]) and [`router`] leaves them out.
    pub admin_separate: bool,
    /// Connections open and refused per listener, counted by the serve loop (`crate::serve`).
    pub connections: Arc<crate::serve::connections::Connections>,
    /// `/metrics`: requests counted as they are answered, the rest read at each scrape.
    pub metrics: Arc<metrics::Metrics>,
    /// Every configured archive, enabled or not, in configured order (`/archives`, `/about`).
    pub archive_list: Vec<crate::config::ArchiveConfig>,
    /// `[server] compat`: whose shape `/api/json` answers in.
    pub compat: crate::config::Compat,
    /// `[server] memento_proxy_max_bytes`: the most body bytes `/memento/proxy` passes on.
    pub memento_proxy_max_bytes: u64,
    /// Huge entries' renderings on disk, streamed on a hit (the store's renderings tier); None
    /// with no store or `[cache] renderings_capacity = 0`.
    pub renderings: Option<Arc<Renderings<View>>>,
    /// The URI-Rs parsed lately, by the text after the route: a hit parses its URI-R once.
    pub uri_rs: crate::memo::Memo<Arc<UriR>>,
    /// Archive profiles and the routing decision, saved in the data directory.
    pub routing: Arc<crate::routing::Routing>,
}

pub type SharedState = Arc<AppState>;

/// The cache as the routes use it: entries in the tiered store (memory over disk), each with the
/// [`View`] the routes serve it from.
pub type Cache = TimeMapCache<Tiered<CachedTimeMap<View>>, View>;

/// Our headers set on every answer, named once: a name given as text is parsed again on each
/// insert, cache hits included.
pub const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
pub const X_CACHE_CASE: HeaderName = HeaderName::from_static("x-cache-case");
pub const X_CACHE_ACTION: HeaderName = HeaderName::from_static("x-cache-action");
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");

/// An answer with these headers, moved in whole: `(status, headers, body).into_response()`
/// copies them one by one into an empty map that grows and rehashes on the way.
pub fn answer(status: StatusCode, headers: HeaderMap, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The headers browsers may read: docs/api.md's CORS list, kept equal to it by a test.
pub const EXPOSED_HEADERS: &[&str] = &[
    "link",
    "location",
    "x-memento-count",
    "memento-datetime",
    "x-memento-archives",
    "etag",
    "x-cache",
    "x-memento-partial",
    "preference-applied",
];

fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD, Method::OPTIONS])
        .allow_headers([
            HeaderName::from_static("accept-datetime"),
            header::ACCEPT,
            header::IF_NONE_MATCH,
            header::CACHE_CONTROL,
            HeaderName::from_static("prefer"),
        ])
        .expose_headers(
            EXPOSED_HEADERS
                .iter()
                .map(|h| HeaderName::from_static(h))
                .collect::<Vec<_>>(),
        )
        .max_age(Duration::from_secs(86400))
        // tower-http adds `Vary: origin, access-control-request-method,
        // access-control-request-headers` by default, for answers that depend on them; every
        // answer here is the same whatever they say (any origin, fixed lists), so none is sent:
        // 80 bytes less on every answer, cache hits included.
        .vary(Vec::<HeaderName>::new())
}

/// The public router: the Memento routes, `/healthz`, the web pages (`/`, `/ui/…`), plus `/admin/*` and `/metrics` unless
/// `[admin] listen` puts them on their own listener. Tests call it directly; `app::serve` puts it
/// on a listener.
pub fn router(state: SharedState) -> Router {
    // Only the routes that can fan out are limited: /healthz must answer a load balancer however
    // busy a client is, and the admin API has its token. One `route_layer` call: each call boxes
    // every route again, and every box is cloned for every request.
    let limit = state.rate_limiter.clone().map(GateLayer);
    let memento = Router::new()
        .route("/timemap/{*rest}", get(timemap::timemap))
        .route("/timegate/{*rest}", get(timegate::timegate))
        .route("/memento/{*rest}", get(memento::memento))
        .route("/api/{*rest}", get(memento::api))
        .route_layer(
            ServiceBuilder::new()
                .option_layer(limit)
                .layer(choices::MarkPreferencesLayer)
                .layer(client::ClientScopeLayer),
        );
    let mut routes = memento
        .route("/healthz", get(healthz))
        .route("/archives", get(archives::archives))
        .route("/about", get(archives::about))
        .merge(ui::routes(&state));
    if !state.admin_separate {
        routes = routes.merge(admin_api(&state));
    }
    // The CORS layer answers every OPTIONS itself, preflight or not, so no route sees one and no
    // archive is asked (MemGator aggregates on OPTIONS and its preflights fail).
    traced(finish(routes, state, Some(cors())))
}

/// The admin listener's router (`[admin] listen`): `/admin/*`, `/metrics`, `/healthz` and the
/// admin page (`/ui/admin`, whose script asks this same origin). No CORS: no other origin's
/// page may read the admin API.
pub fn admin_router(state: SharedState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .merge(admin_api(&state))
        .merge(ui::admin_routes());
    traced(finish(routes, state, None))
}

/// The admin API: every `/admin/*` route (the cache's, the stats, the simulated clock, the
/// sampling jobs) behind one token check, and the open `/metrics`.
fn admin_api(state: &SharedState) -> Router<SharedState> {
    let simulated_clock = state.sim_clock.is_some();
    admin::routes(simulated_clock)
        .merge(sampling::routes())
        // A route layer, not a layer: it runs only for a request a route would answer, so a
        // path no route has stays our 404 for everyone, and a method the route lacks our 405
        // (`finish` sets that fallback after this, replacing the one this layer wrapped). A job
        // id that is not UTF-8 is refused after the token, as the token is checked first.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            admin::require_admin,
        ))
        .merge(admin::open_routes(simulated_clock))
}

/// What every listener's router ends with: our 404 and 405, and around every route, from the
/// outside in, the request log (so every answer is logged), CORS when given, errors in the
/// route's format and the header size limit.
fn finish(routes: Router<SharedState>, state: SharedState, cors: Option<CorsLayer>) -> Router {
    let limit = state.max_header_bytes;
    let log = log::RequestLog::new(state.metrics.clone());
    routes
        .fallback(fallback)
        // After every route is in: axum applies this to the routes present when it is called.
        .method_not_allowed_fallback(method_not_allowed)
        // One `layer` call: each call boxes every route again, and every box is cloned for every
        // request (four calls cost cache hits ~4% of their CPU: BENCHMARKS.md, "Small cache hits against nginx").
        .layer(
            ServiceBuilder::new()
                .layer(log)
                .option_layer(cors)
                // Outside everything that can answer an error: a JSON route's errors are JSON.
                .layer(errors::ErrorFormatLayer)
                .layer(GateLayer(HeaderLimit(limit))),
        )
        .with_state(state)
}

async fn method_not_allowed() -> AppError {
    AppError::MethodNotAllowed
}

/// 431 when the request's header names and values add up to more than this many bytes. hyper
/// already refuses a head over its buffer (~400 KiB) with a bare 431; this says why, and sooner.
#[derive(Clone, Copy)]
struct HeaderLimit(usize);

impl Gate for HeaderLimit {
    fn refuse(&self, req: &HttpRequest) -> Option<Response> {
        let size: usize = req
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        (size > self.0).then(|| AppError::HeadersTooLarge(size, self.0).into_response())
    }
}

/// `200 ok`, or `200 degraded: <reason>` while the persistent tier cannot store or the shared
/// tier cannot be reached: the server still answers (from memory, or its own tiers), so a load
/// balancer should keep it, and an operator should look.
async fn healthz(axum::extract::State(state): axum::extract::State<SharedState>) -> String {
    let store = state.cache.store();
    let persistent = store.and_then(|s| s.persistent().degraded());
    match persistent.or_else(|| store.and_then(|s| s.shared()?.degraded())) {
        Some(reason) => format!("degraded: {reason}\n"),
        None => "ok\n".to_owned(),
    }
}

async fn fallback() -> AppError {
    AppError::NoSuchRoute
}

/// The raw text after `prefix` in the request target (path and query, not decoded): the URI-R
/// keeps its own query string and encoding.
pub fn raw_after<'a>(uri: &'a Uri, prefix: &str) -> &'a str {
    let target = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("");
    target.strip_prefix(prefix).unwrap_or("")
}

/// A URI-R and what the client chose about its answer.
pub struct Lookup {
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
pub fn read_lookup(state: &AppState, raw: &str, headers: &HeaderMap) -> Result<Lookup, AppError> {
    if raw.len() > MAX_URI_LEN {
        return Err(crate::uri_r::UriRError::TooLong(raw.len()).into());
    }
    // Ours only when every id in it is an archive we know; else it is the URI-R's parameter.
    let known = |id: &str| state.archive_list.iter().any(|a| a.id == id);
    let (raw, param) =
        split_archives_param(raw, |v| choices::ids_in_param(v).into_iter().all(known));
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
    let (raw, timeout) = split_timeout_param(&raw, |v| crate::config::parse_duration(v).is_ok());
    // Only a query can hold a typo of ours: nearly every request builds no list for it.
    if raw.contains('?') {
        let configured: Vec<&str> = state.archive_list.iter().map(|a| a.id.as_str()).collect();
        if let Some(typo) = choices::meant_for_us(&raw, &configured) {
            return Err(typo);
        }
    }
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
    Ok(Lookup {
        uri_r,
        deadline,
        archives,
        ask_all,
        directives: choices::cache_directives(headers),
    })
}

/// RFC 7240 `Prefer: wait=N` (seconds): the unambiguous way to ask for a shorter deadline.
fn prefer_wait(headers: &HeaderMap) -> Result<Option<Duration>, AppError> {
    for value in headers.get_all("prefer") {
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
    match headers.get("accept-datetime") {
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
    lookup: &Lookup,
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
    h.insert(X_CACHE, HeaderValue::from_static(served.status.as_str()));
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
    freshness_headers(h, served.checked_at, served.fresh_until, stale, now);
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
    let age = (now - checked_at).num_seconds().max(0);
    h.insert(header::AGE, HeaderValue::from(age));
    let max_age = match fresh_until {
        // Fresh for good (policy forever): a year is HTTP's customary "forever".
        None => 31_536_000,
        // Expired and served anyway: nothing to promise about freshness.
        Some(_) if stale => 0,
        Some(until) => (until - now).num_seconds().max(0),
    };
    if let Ok(v) = HeaderValue::from_str(&format!("max-age={max_age}")) {
        h.insert(header::CACHE_CONTROL, v);
    }
}
