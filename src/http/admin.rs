//! `/admin/*`: inspect, purge and refresh cache entries, read the counters, set the simulated
//! clock. Every route wants `Authorization: Bearer <[admin] token>`, checked once for all of them
//! (and the sampling routes) by [`require_admin`] in `crate::http`'s admin group. `/metrics` is
//! public, as Prometheus scrapes it, and holds only counts.

use super::json::JsonBody;
use super::{raw_after, SharedState};
use crate::cache::entry::Entry;
use crate::cache::service::Request;
use crate::cache::store::Store;
use crate::error::AppError;
use crate::timemap::datetime::format_rfc3339;
use crate::uri_r::UriR;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

/// The most bytes an admin request body may carry (413 beyond): a job spec, a feed request or a
/// clock setting is a few hundred bytes.
pub const MAX_ADMIN_BODY: usize = 64 * 1024;

/// Reads an admin request body, refusing it at [`MAX_ADMIN_BODY`] without reading further.
pub(super) async fn read_body(body: axum::body::Body) -> Result<axum::body::Bytes, AppError> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| AppError::BadParameter(format!("cannot read the request body: {e}")))?;
        if buf.len() + chunk.len() > MAX_ADMIN_BODY {
            return Err(AppError::BodyTooLarge(MAX_ADMIN_BODY));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.into())
}

/// The routes that want the token (the caller puts [`require_admin`] on them). The clock routes
/// are among them only with `--sim-clock` (`simulated_clock`); see [`open_routes`].
pub fn routes(simulated_clock: bool) -> Router<SharedState> {
    let routes = Router::new()
        .route(
            "/admin/cache/{*rest}",
            get(inspect).delete(purge).post(refresh),
        )
        .route("/admin/stats", get(stats));
    if simulated_clock {
        routes.route("/admin/clock", get(get_clock).put(set_clock))
    } else {
        routes
    }
}

/// The routes anyone may ask: `/metrics`, and without `--sim-clock` the clock routes, which do
/// not exist then: GET and PUT are our 404 before any token is looked at (so no one can move
/// real time, and a client without the token learns nothing new), other methods our 405.
pub fn open_routes(simulated_clock: bool) -> Router<SharedState> {
    let routes = Router::new().route("/metrics", get(metrics));
    if simulated_clock {
        routes
    } else {
        routes.route("/admin/clock", get(no_clock).put(no_clock))
    }
}

/// `GET /metrics`: the registry (`crate::metrics`) in the Prometheus text format.
async fn metrics(State(state): State<SharedState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        state.metrics.render(),
    )
        .into_response()
}

async fn no_clock() -> AppError {
    AppError::NoSuchRoute
}

/// The admin group's route layer: the request goes on to its handler only with the configured
/// token (401 without it or with another, 403 while no token is configured).
pub async fn require_admin(
    State(state): State<SharedState>,
    req: axum::extract::Request,
    next: Next,
) -> Result<Response, AppError> {
    authorize(&state, req.headers())?;
    Ok(next.run(req).await)
}

/// Admits the request when it carries the configured token.
fn authorize(state: &SharedState, headers: &HeaderMap) -> Result<(), AppError> {
    if state.admin_token.is_empty() {
        return Err(AppError::AdminDisabled);
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.trim().as_bytes(), state.admin_token.as_bytes()) {
        Ok(())
    } else {
        Err(AppError::Unauthorized)
    }
}

/// Compares without an early exit, so the time taken says nothing about where they differ
/// (only, unavoidably, something about the length).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

fn uri_r_of(uri: &Uri) -> Result<UriR, AppError> {
    Ok(UriR::parse(raw_after(uri, "/admin/cache/"))?)
}

/// The entry as an admin reads it: counts first, then each archive's part and the history.
fn describe(entry: &Entry, fresh: bool) -> serde_json::Value {
    let per_archive: Vec<serde_json::Value> = entry
        .contributions
        .iter()
        .map(|c| {
            json!({
                "archive": c.archive,
                "status": c.answer.status,
                "http_status": c.answer.http_status,
                "mementos": c.mementos.len(),
                "absent": c.mementos.iter().filter(|m| m.absent.is_some()).count(),
                "fetched_at": format_rfc3339(c.fetched_at),
                "last_error": c.last_error.as_ref().map(|e| json!({
                    "at": format_rfc3339(e.at),
                    "status": e.status,
                    "http_status": e.http_status,
                    "detail": e.detail,
                })),
            })
        })
        .collect();
    json!({
        "uri_r": entry.uri_r,
        "version": entry.version,
        "mementos": entry.loose,
        "strict": entry.strict,
        "archives": entry.archives,
        "fetched_at": format_rfc3339(entry.fetched_at),
        "checked_at": format_rfc3339(entry.checked_at),
        "fresh_until": entry.fresh_until.map(format_rfc3339),
        "fresh": fresh,
        "per_archive": per_archive,
        "history": entry.history,
    })
}

async fn inspect(State(state): State<SharedState>, uri: Uri) -> Result<Response, AppError> {
    let uri_r = uri_r_of(&uri)?;
    let Some(cached) = state.cache.entry(&uri_r).await else {
        return Err(AppError::NotCached(uri_r.into_string()));
    };
    let fresh = matches!(
        state
            .cache
            .policy()
            .freshness(Some(&cached.entry), state.clock.now()),
        crate::cache::policy::Freshness::Fresh
    );
    let mut described = describe(&cached.entry, fresh);
    // The TTL the entry is judged by now (adaptive: its own, within the current bounds).
    let ttl = state
        .cache
        .policy()
        .effective_ttl(cached.entry.checked_at, cached.entry.fresh_until);
    described["ttl_seconds"] = json!(ttl.map(|d| d.num_seconds()));
    // What the entry is stored under: every spelling of the URI-R with this key finds it.
    described["key"] = json!(state.cache.key_of(&uri_r));
    Ok(JsonBody(described).into_response())
}

async fn purge(State(state): State<SharedState>, uri: Uri) -> Result<Response, AppError> {
    let uri_r = uri_r_of(&uri)?;
    match state.cache.purge(&uri_r).await {
        Ok(true) => Ok(StatusCode::NO_CONTENT.into_response()),
        Ok(false) => Err(AppError::NotCached(uri_r.into_string())),
        Err(e) => Err(AppError::Internal(format!("purge {uri_r}: {e}"))),
    }
}

/// Refreshes through the policy (a worse TimeMap still does not replace a better one).
async fn refresh(State(state): State<SharedState>, uri: Uri) -> Result<Response, AppError> {
    let uri_r = uri_r_of(&uri)?;
    let served = state
        .cache
        .lookup(
            &uri_r,
            Request {
                force: true,
                ..Request::default()
            },
        )
        .await;
    let entry = state.cache.entry(&uri_r).await;
    Ok(JsonBody(json!({
        "uri_r": uri_r.as_str(),
        "x_cache": served.status.as_str(),
        "case": served.case.map(|c| c.number()),
        "action": served.action.map(|a| a.as_str()),
        "archives": served.view.aggregate.outcomes,
        "entry": entry.map(|c| describe(&c.entry, true)),
    }))
    .into_response())
}

async fn stats(State(state): State<SharedState>) -> Result<Response, AppError> {
    let snapshot = state.cache.stats_snapshot();
    if let Some(store) = state.cache.store() {
        // moka evicts in the background; settle it so the reported bytes are the bound's.
        store.hot().run_pending_tasks().await;
    }
    let tiers = state
        .cache
        .store()
        .map(|s| (s.hot().stats(), s.persistent().stats()));
    Ok(JsonBody(json!({
        "policy": state.cache.policy().kind.as_str(),
        "match": state.cache.policy().matching.as_str(),
        "hits": snapshot.hits,
        "misses": snapshot.misses,
        "stale": snapshot.stale,
        "fan_outs": snapshot.fan_outs,
        "refreshes": snapshot.decisions,
        "fetches_per_archive": snapshot.fetches_per_archive,
        "upstream": {
            "buffered_bytes": state.upstream.budget().buffered(),
            "buffered_bytes_high_water": state.upstream.budget().high_water(),
            "max_buffered": state.upstream.budget().limit(),
        },
        "tiers": tiers.map(|(hot, persistent)| json!({
            "hot": {"bytes": hot.bytes, "entries": hot.entries},
            "persistent": {
                "bytes": persistent.bytes,
                "entries": persistent.entries,
                "unreadable": persistent.unreadable,
                "writes_failed": persistent.writes_failed,
                "lost": persistent.lost,
                "moved_aside": persistent.moved_aside,
                "degraded": state.cache.store().and_then(|s| s.persistent().degraded()),
            },
        })),
        "connections": state.connections.json(state.admin_separate),
    }))
    .into_response())
}

#[derive(Deserialize)]
struct ClockBody {
    now: String,
}

/// Routed only with `--sim-clock` ([`routes`]).
async fn get_clock(State(state): State<SharedState>) -> Response {
    JsonBody(json!({"now": format_rfc3339(state.clock.now())})).into_response()
}

async fn set_clock(
    State(state): State<SharedState>,
    body: axum::body::Body,
) -> Result<Response, AppError> {
    // Routed only with `--sim-clock`; this is where the handle comes from.
    let Some(sim) = &state.sim_clock else {
        return Err(AppError::NoSuchRoute);
    };
    let body = read_body(body).await?;
    let parsed: ClockBody = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadParameter(format!(
            "body must be {{\"now\": \"2012-05-01T00:00:00Z\"}}: {e}"
        ))
    })?;
    let now = chrono::DateTime::parse_from_rfc3339(&parsed.now)
        .map_err(|_| {
            AppError::BadParameter(format!(
                "now {:?} is not RFC 3339 like \"2012-05-01T00:00:00Z\"",
                parsed.now
            ))
        })?
        .with_timezone(&chrono::Utc);
    sim.set(now);
    Ok(JsonBody(json!({"now": format_rfc3339(state.clock.now())})).into_response())
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"s3cret", b"s3cre"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }
}
