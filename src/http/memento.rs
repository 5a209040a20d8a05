//! MemGator's routes: `/memento/{link|json|cdxj}/{DATETIME}/{URI-R}` (the closest memento and
//! its neighbours described in that format), `/memento/proxy/{DATETIME}/{URI-R}` (its bytes),
//! and `/api/{link|json|cdxj|proxy}/…` as aliases, `/api/json` answering as `[server] compat`
//! says. `/memento/{DATETIME}/{URI-R}` (a datetime, not a format word) stays the redirect.

use super::timegate::closest_served;
use super::{cache_headers, raw_after, SharedState};
use crate::config::Compat;
use crate::error::AppError;
use crate::timemap::serialize::{render_closest, SelfLinks, TimeMapFormat};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// What a `/memento/{word}/…` or `/api/{word}/…` path asks for.
enum Ask {
    Describe(TimeMapFormat),
    Proxy,
}

/// The format word before the datetime, and the rest after its slash; None when the first
/// segment is not one of MemGator's words (or nothing follows it).
fn split_word(raw: &str) -> Option<(Ask, &str)> {
    let (word, rest) = raw.split_once('/')?;
    let ask = match word {
        "proxy" => Ask::Proxy,
        _ => Ask::Describe(TimeMapFormat::from_segment(word)?),
    };
    Some((ask, rest))
}

/// `/memento/{*rest}`: a format word or `proxy` first is MemGator's description or proxy; a
/// datetime first is the redirect (a format word is never a datetime: that is all digits).
pub async fn memento(
    State(state): State<SharedState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let raw = raw_after(&uri, "/memento/");
    match split_word(raw) {
        Some((ask, rest)) => answer(&state, &method, ask, rest, &headers).await,
        None => {
            // A word that is neither a datetime nor one of MemGator's (`/memento/xml/…`):
            // say which words there are rather than call it a malformed datetime.
            let first = raw.split('/').next().unwrap_or("");
            if first.bytes().any(|b| b.is_ascii_alphabetic()) {
                return Err(AppError::BadParameter(format!(
                    "{:?} after /memento/ is neither a datetime (YYYY[MM[DD[hh[mm[ss]]]]]) nor one of link, json, cdxj, proxy",
                    crate::uri_r::clip(first)
                )));
            }
            super::timegate::memento(State(state), uri, headers).await
        }
    }
}

/// `/api/{*rest}`: `/api/json/…` is Time Travel's answer unless `[server] compat = "memgator"`;
/// `/api/{link|cdxj|proxy}/…` are MemGator's aliases of `/memento/…`. Anything else is no route.
pub async fn api(
    State(state): State<SharedState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Some((ask, rest)) = split_word(raw_after(&uri, "/api/")) else {
        return Err(AppError::NoSuchRoute);
    };
    if matches!(ask, Ask::Describe(f) if f == TimeMapFormat::JSON)
        && state.compat == Compat::TimeTravel
    {
        return super::api::api_json(State(state), uri, headers)
            .await
            .map(IntoResponse::into_response);
    }
    answer(&state, &method, ask, rest, &headers).await
}

async fn answer(
    state: &SharedState,
    method: &Method,
    ask: Ask,
    raw: &str,
    headers: &HeaderMap,
) -> Result<Response, AppError> {
    match ask {
        Ask::Describe(format) => describe(state, format, raw, headers).await,
        Ask::Proxy => super::proxy::proxy(state, method, raw, headers).await,
    }
}

/// The closest memento to the path's datetime, with first, prev, next and last, in `format`.
async fn describe(
    state: &SharedState,
    format: TimeMapFormat,
    raw: &str,
    headers: &HeaderMap,
) -> Result<Response, AppError> {
    let (served, c) = closest_served(state, raw, headers).await?;
    let agg = &served.view.aggregate;
    let links = SelfLinks::new(&state.public_url, &agg.uri_r);
    let body = render_closest(format, agg, &links, &c);
    let mut h = served.view.content_headers();
    cache_headers(&mut h, &served, state.clock.now());
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    Ok((StatusCode::OK, h, body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_words_are_told_from_datetimes() {
        for (raw, want) in [
            ("json/2015/http://e.com/", Some("json")),
            ("link/2015/http://e.com/", Some("link")),
            ("cdxj/2015/http://e.com/", Some("cdxj")),
            ("proxy/2015/http://e.com/", Some("proxy")),
            ("2015/http://e.com/", None),
            ("json", None),
            ("xml/2015/http://e.com/", None),
            ("JSON/2015/http://e.com/", None),
        ] {
            let got = split_word(raw).map(|(ask, rest)| {
                assert_eq!(rest, &raw[raw.find('/').map_or(0, |i| i + 1)..]);
                match ask {
                    Ask::Proxy => "proxy",
                    Ask::Describe(f) => f.segment(),
                }
            });
            assert_eq!(got, want, "{raw}");
        }
    }
}
