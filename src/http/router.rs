//! The routers: every route on the public listener and on the admin one, with CORS, the request
//! log, the error format and the header size limit around them, and our 404 and 405.

use super::cors::CorsLayer;
use super::gate::{Gate, GateLayer};
use super::state::SharedState;
use super::trace::traced;
use super::{
    admin, archives, choices, client, errors, log, loops, memento, sampling, timegate, timemap, ui,
};
use crate::error::AppError;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower::ServiceBuilder;

/// The public router: the Memento routes, `/healthz`, the web pages (`/`, `/ui/…`), plus `/admin/*` and `/metrics` unless
/// `[admin] listen` puts them on their own listener. Tests call it directly; the public
/// listener serves it through `front::Front`, which takes the TimeMap route past it.
pub fn router(state: SharedState) -> Router {
    let log = log::RequestLog::new(state.metrics.clone());
    logged_router(state, log)
}

/// [`router`], its requests logged by `log` (its request ids from `log`'s).
pub(super) fn logged_router(state: SharedState, log: log::RequestLog) -> Router {
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
                .layer(GateLayer(loops::RefuseLoops(state.clone())))
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
    traced(finish(routes, state, log, Some(CorsLayer)))
}

/// The admin listener's router (`[admin] listen`): `/admin/*`, `/metrics`, `/healthz` and the
/// admin page (`/ui/admin`, whose script asks this same origin). No CORS: no other origin's
/// page may read the admin API.
pub fn admin_router(state: SharedState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .merge(admin_api(&state))
        .merge(ui::admin_routes());
    let log = log::RequestLog::new(state.metrics.clone());
    traced(finish(routes, state, log, None))
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
fn finish(
    routes: Router<SharedState>,
    state: SharedState,
    log: log::RequestLog,
    cors: Option<CorsLayer>,
) -> Router {
    let limit = state.max_header_bytes;
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
pub struct HeaderLimit(pub(super) usize);

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
