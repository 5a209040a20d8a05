//! `/timegate/{URI-R}` (RFC 7089 pattern 2.1) and `/memento/{DATETIME}/{URI-R}`: redirects to the
//! memento closest to a datetime, chosen from the aggregate so prev/next span every archive.

use super::{accept_datetime, check_found, raw_after, read_lookup, serve_lookup, SharedState};
use crate::cache::service::Served;
use crate::error::{archives_header, AppError};
use crate::timemap::aggregate::Aggregate;
use crate::timemap::datetime::{format_rfc1123, parse_14digit};
use crate::timemap::merge::{closest, Closest};
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::{SelfLinks, TimeMapFormat};
use crate::uri_r::clip;
use crate::uri_text::{escape_uri, is_servable_uri_m};
use crate::view::View;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

pub async fn timegate(
    State(state): State<SharedState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let target = accept_datetime(&headers, state.clock.now())?;
    let lookup = read_lookup(&state, raw_after(&uri, "/timegate/"), &headers)?;
    let served = serve_lookup(&state, &lookup, None).await?;
    let agg = &served.view.aggregate;
    check_found(agg)?;
    Ok(redirect(&state.public_url, agg, target, true))
}

pub async fn memento(
    State(state): State<SharedState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (target, raw) = split_path_datetime(raw_after(&uri, "/memento/"))?;
    let lookup = read_lookup(&state, raw, &headers)?;
    let served = serve_lookup(&state, &lookup, None).await?;
    let agg = &served.view.aggregate;
    check_found(agg)?;
    Ok(redirect(&state.public_url, agg, target, false))
}

/// Splits `20070531203500/http://…` into the padded datetime and the URI-R text.
pub fn split_path_datetime(raw: &str) -> Result<(MementoDatetime, &str), AppError> {
    let (dt, rest) = raw.split_once('/').unwrap_or((raw, ""));
    let target = parse_14digit(dt).ok_or_else(|| AppError::BadPathDatetime(dt.to_string()))?;
    Ok((target, rest))
}

/// The answer for `{DATETIME}/{URI-R}` and the memento closest to that datetime in it, or the
/// error it makes (nothing found, no archive answered…).
pub(super) async fn closest_served(
    state: &SharedState,
    raw: &str,
    headers: &HeaderMap,
) -> Result<(Served<View>, Closest), AppError> {
    let (target, raw) = split_path_datetime(raw)?;
    let lookup = read_lookup(state, raw, headers)?;
    let served = serve_lookup(state, &lookup, None).await?;
    check_found(&served.view.aggregate)?;
    // check_found guarantees a non-empty TimeMap; an empty one would be a bug upstream of here.
    match closest(&served.view.aggregate.timemap, target) {
        Some(c) => Ok((served, c)),
        None => Err(AppError::Internal("closest on an empty TimeMap".into())),
    }
}

/// The 302 to the closest memento, with the Link header of RFC 7089 §4.1.
fn redirect(
    public_url: &str,
    agg: &Aggregate,
    target: MementoDatetime,
    negotiated: bool,
) -> Response {
    // Room for every header the answer ends with, the layers' included: none grows the map.
    let mut h = HeaderMap::with_capacity(24);
    // check_found guarantees a non-empty TimeMap; an empty one would be a bug upstream of here.
    let Some(c) = closest(&agg.timemap, target) else {
        return AppError::Internal("redirect on an empty TimeMap".into()).into_response();
    };
    // Parsing already drops every URI-M that is not http(s) (and serving drops them from old
    // cache entries); this is the last word, so a `javascript:` Location can never be sent. The
    // escaped form is visible ASCII, so the header value always builds: never a 302 without one.
    let uri_m = &agg.timemap.mementos[c.closest].uri_m;
    if !is_servable_uri_m(uri_m) {
        return AppError::Internal(format!("unservable URI-M {:?} chosen", clip(uri_m)))
            .into_response();
    }
    let location = escape_uri(uri_m);
    match HeaderValue::from_str(&location) {
        Ok(v) => h.insert(header::LOCATION, v),
        Err(_) => {
            return AppError::Internal(format!("URI-M {:?} is no header value", clip(uri_m)))
                .into_response()
        }
    };
    if negotiated {
        h.insert(header::VARY, HeaderValue::from_static("accept-datetime"));
    }
    if let Ok(v) = HeaderValue::from_str(&link_header(public_url, agg, &c)) {
        h.insert(header::LINK, v);
    }
    if let Some(v) = archives_header(agg) {
        h.insert("x-memento-archives", v);
    }
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    let body = format!("302 Found: {location}\n");
    super::answer(StatusCode::FOUND, h, body)
}

/// `Link:` with original, timemap, and first/prev/memento/next/last (relations of one memento
/// joined, e.g. `first memento` when the closest is the first). Every URI is escaped
/// ([`escape_uri`]), so each is one link and the value is always a valid header.
pub fn link_header(public_url: &str, agg: &Aggregate, c: &Closest) -> String {
    let links = SelfLinks::new(public_url, &agg.uri_r);
    let ms = &agg.timemap.mementos;
    let mut parts = vec![format!("<{}>; rel=\"original\"", escape_uri(&agg.uri_r))];
    let (Some(first), Some(last)) = (ms.first(), ms.last()) else {
        return parts.join(", ");
    };
    parts.push(format!(
        "<{}>; rel=\"timemap\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\"",
        links.timemap(TimeMapFormat::LINK),
        format_rfc1123(first.datetime),
        format_rfc1123(last.datetime)
    ));
    parts.push(format!(
        "<{}>; rel=\"timemap\"; type=\"application/json\"",
        links.timemap(TimeMapFormat::JSON)
    ));
    // (index, relation words) in time order; one link per distinct memento.
    let mut rels: Vec<(usize, Vec<&str>)> = Vec::with_capacity(5);
    let mut add = |i: usize, word: &'static str| match rels.iter_mut().find(|(j, _)| *j == i) {
        Some((_, words)) => words.push(word),
        None => rels.push((i, vec![word])),
    };
    add(c.first, "first");
    if let Some(p) = c.prev {
        add(p, "prev");
    }
    add(c.closest, "");
    if let Some(n) = c.next {
        add(n, "next");
    }
    add(c.last, "last");
    rels.sort_by_key(|(i, _)| *i);
    for (i, words) in rels {
        let words: Vec<&str> = words.into_iter().filter(|w| !w.is_empty()).collect();
        let rel = if words.is_empty() {
            "memento".to_string()
        } else {
            format!("{} memento", words.join(" "))
        };
        parts.push(format!(
            "<{}>; rel=\"{rel}\"; datetime=\"{}\"",
            escape_uri(&ms[i].uri_m),
            format_rfc1123(ms[i].datetime)
        ));
    }
    parts.join(", ")
}
