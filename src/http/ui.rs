//! The web pages: `/` (a search box and the archives' state), `/ui/{URI-R}` (the aggregated
//! TimeMap as a timeline, each archive's answer, the mementos by year) and `/ui/admin` (the cache
//! statistics and sampling jobs, fetched by the page's script with the token typed in).
//! The pages are built and rendered in `crate::web` (askama); here are their routes and
//! headers. The stylesheet and script are in the binary, nothing is loaded from anywhere else,
//! and every page carries a strict Content-Security-Policy.

use super::gate::GateLayer;
use super::{cache_headers, check_found, raw_after, read_lookup, serve_lookup, SharedState};
use crate::error::AppError;
use crate::uri_r::UriR;
use crate::uri_text::escape_uri;
use crate::web::{assets, pages};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// Only this server's own stylesheet, script and (the admin page's) API; no inline script or
/// style, no framing, no form posting elsewhere. A memento link is a plain navigation, which
/// the policy does not restrict.
const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The public listener's pages. `/ui/{URI-R}` can fan out, so it goes behind the rate limit
/// like the Memento routes; the others only read what the server holds.
pub fn routes(state: &SharedState) -> Router<SharedState> {
    let lookup = Router::new().route("/ui/{*rest}", get(timemap_page));
    let lookup = match &state.rate_limiter {
        Some(limiter) => lookup.route_layer(GateLayer(limiter.clone())),
        None => lookup,
    };
    Router::new()
        .route("/", get(home))
        .route("/ui", get(search))
        .route("/ui/admin", get(admin_public))
        .route("/ui/assets/{name}", get(asset))
        .route("/favicon.ico", get(favicon))
        .merge(lookup)
}

/// The admin listener's page (`[admin] listen`): the admin page where its API is, so its
/// script's requests stay same-origin (the admin listener sends no CORS headers).
pub fn admin_routes() -> Router<SharedState> {
    Router::new()
        .route("/ui/admin", get(admin_here))
        .route("/ui/assets/{name}", get(asset))
}

/// The headers every page and asset carries.
fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

/// A rendered page with `status` and the headers in `h`; a template that fails to render is our
/// own fault, a logged 500.
fn page(status: StatusCode, template: &impl Template, mut h: HeaderMap) -> Response {
    let body = match template.render() {
        Ok(body) => body,
        Err(e) => return AppError::Internal(format!("rendering a page: {e}")).into_response(),
    };
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    security_headers(&mut h);
    (status, h, body).into_response()
}

/// `GET /ui/assets/{name}`: an embedded file by its hashed name; any other name is our 404.
/// The name changes with the content, so the content under a name never does: kept a year.
async fn asset(Path(name): Path<String>) -> Result<Response, AppError> {
    let found = assets::named(&name).ok_or(AppError::NoSuchRoute)?;
    Ok(embedded(found, "public, max-age=31536000, immutable"))
}

/// `GET /favicon.ico`: the site icon, for clients that ask there before reading the page's
/// `<link rel="icon">` (the same SVG; a name that never changes, so kept a day, not a year).
async fn favicon() -> Response {
    embedded(&assets::ICON, "public, max-age=86400")
}

/// An embedded file's answer: its type, how long it may be kept, the pages' security headers.
fn embedded(asset: &'static assets::Asset, cache_control: &'static str) -> Response {
    let mut response = asset.body.into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    security_headers(h);
    response
}

/// An error as a page: the status and reason `error.rs` gives it, with what was `asked` kept in
/// its search box.
fn error_page(state: &SharedState, e: AppError, asked: &str) -> Response {
    let mut p = pages::error(&e);
    p.layout.admin_link = !state.admin_separate;
    p.asked = asked.to_owned();
    page(e.status(), &p, HeaderMap::new())
}

/// Pages that change with the server's state are never cached by the browser.
fn no_store() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h
}

async fn home(State(state): State<SharedState>) -> Response {
    let reports = super::archives::current(&state);
    let mut p = pages::home(&reports);
    p.layout.admin_link = !state.admin_separate;
    page(StatusCode::OK, &p, no_store())
}

/// `GET /ui?url=…`: the search form's target. A form cannot put the URL in the path, so this
/// reads it from the query and sends the browser to `/ui/{URI-R}` (303), the URI-R parsed as
/// every route parses it and escaped for the path. Without a URL, back to the search box.
async fn search(State(state): State<SharedState>, uri: Uri) -> Response {
    let asked = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "url")
            .map(|(_, v)| v.into_owned())
    });
    let Some(asked) = asked.filter(|u| !u.trim().is_empty()) else {
        return see_other("/");
    };
    match UriR::parse(&asked) {
        Ok(uri_r) => see_other(&format!("/ui/{}", escape_uri(uri_r.as_str()))),
        Err(e) => error_page(&state, e.into(), &asked),
    }
}

fn see_other(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => AppError::Internal(format!("unsendable location {location:?}")).into_response(),
    }
}

/// `GET /ui/{URI-R}`: read and looked up exactly as `/timemap/…` does (the same cache entry),
/// answered with the status the TimeMap would have: 200, or 404/502/504 with the page saying why.
async fn timemap_page(State(state): State<SharedState>, uri: Uri, headers: HeaderMap) -> Response {
    let lookup = match read_lookup(&state, raw_after(&uri, "/ui/"), &headers) {
        Ok(lookup) => lookup,
        Err(e) => return error_page(&state, e, raw_after(&uri, "/ui/")),
    };
    let served = match serve_lookup(&state, &lookup, None).await {
        Ok(served) => served,
        Err(e) => return error_page(&state, e, lookup.uri_r.as_str()),
    };
    let agg = &served.view.aggregate;
    let (status, problem) = match check_found(agg) {
        Ok(()) => (StatusCode::OK, None),
        Err(e) => (e.status(), Some(e.reason())),
    };
    let mut h = served.view.content_headers();
    cache_headers(&mut h, &served, state.clock.now());
    let mut p = pages::timemap(agg, served.status, problem);
    p.layout.admin_link = !state.admin_separate;
    page(status, &p, h)
}

async fn admin_public(State(state): State<SharedState>) -> Response {
    page(
        StatusCode::OK,
        &pages::admin(state.admin_separate),
        no_store(),
    )
}

async fn admin_here() -> Response {
    page(StatusCode::OK, &pages::admin(false), no_store())
}
