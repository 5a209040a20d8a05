//! `/timemap/{link,json,cdxj}/{URI-R}` and `/timemap/{URI-R}`: the aggregated TimeMap.

use super::{
    cache_headers, check_found, encoding, raw_after, read_lookup, serve_lookup, SharedState,
};
use crate::error::AppError;
use crate::timemap::serialize::TimeMapFormat;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// Splits `link/http://…` into its format and the rest; a bare `/timemap/http://…` is link format.
pub fn split_format(raw: &str) -> Result<(TimeMapFormat, &str), AppError> {
    let (first, rest) = raw.split_once('/').unwrap_or((raw, ""));
    if let Some(format) = TimeMapFormat::from_segment(first) {
        return Ok((format, rest));
    }
    // `/timemap/xml/http://…`: a format segment we don't know, followed by a URI-R.
    let looks_like_format = !first.is_empty()
        && first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !first.contains('.');
    if looks_like_format && !rest.is_empty() {
        return Err(AppError::UnknownFormat(first.to_string()));
    }
    Ok((TimeMapFormat::LINK, raw))
}

pub async fn timemap(
    State(state): State<SharedState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (format, raw) = split_format(raw_after(&uri, "/timemap/"))?;
    let lookup = read_lookup(&state, raw, &headers)?;
    let served = serve_lookup(&state, &lookup, Some(format)).await?;
    // Content headers are built once per cached view; only the cache's own are per request.
    let mut h = served.view.content_headers();
    cache_headers(&mut h, &served, state.clock.now());
    if let Err(e) = check_found(&served.view.aggregate) {
        // A cached 404 (or a 502 with nothing cached) still says where it came from.
        let mut response = e.into_response();
        response.headers_mut().extend(h);
        return Ok(response);
    }
    // Rendered once per cached entry and format; a hit only clones the bytes.
    let rendered = served.view.rendered(format);
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(v) = rendered.link_header {
        h.insert(header::LINK, v);
    }
    // Coded once per cached entry, format and coding, off the runtime's threads when it is
    // big and not coded yet.
    let coded = match encoding::negotiate(&headers) {
        None => None,
        Some(c) if served.view.has_coded(format, c) || rendered.body.len() < 256 * 1024 => {
            served.view.coded(format, c).map(|b| (c, b))
        }
        Some(c) => {
            let view = served.view.clone();
            tokio::task::spawn_blocking(move || view.coded(format, c))
                .await
                .ok()
                .flatten()
                .map(|b| (c, b))
        }
    };
    // Each coding is its own representation: its own strong ETag (RFC 9110 §8.8.3).
    let etag = match &coded {
        Some((c, _)) => format!("{}-{}\"", rendered.etag.trim_end_matches('"'), c.token()),
        None => rendered.etag.clone(),
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    // Any coding of the same content is current: the client has it, in whichever coding.
    if if_none_match(&headers, &rendered.etag) {
        return Ok((StatusCode::NOT_MODIFIED, h).into_response());
    }
    let body = match coded {
        Some((c, body)) => {
            h.insert(
                header::CONTENT_ENCODING,
                HeaderValue::from_static(c.token()),
            );
            body
        }
        None => rendered.body,
    };
    Ok((StatusCode::OK, h, body).into_response())
}

/// True when `If-None-Match` lists `etag` in any coding (`"…"`, `"…-br"`, weak or not), or
/// `*`.
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    let bare = etag.trim_matches('"');
    let same = |t: &str| {
        let t = t.strip_prefix("W/").unwrap_or(t).trim_matches('"');
        t == bare
            || t.strip_prefix(bare)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|c| encoding::Coding::ALL.iter().any(|k| k.token() == c))
    };
    headers.get_all(header::IF_NONE_MATCH).iter().any(|v| {
        v.to_str()
            .is_ok_and(|list| list.split(',').map(str::trim).any(|t| t == "*" || same(t)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_segment_or_bare_uri_r() {
        assert_eq!(
            split_format("json/http://a.b/")
                .map(|(f, r)| (f, r.to_string()))
                .ok(),
            Some((TimeMapFormat::JSON, "http://a.b/".into()))
        );
        assert_eq!(
            split_format("http://a.b/")
                .map(|(f, r)| (f, r.to_string()))
                .ok(),
            Some((TimeMapFormat::LINK, "http://a.b/".into()))
        );
        assert_eq!(
            split_format("example.com/x")
                .map(|(f, r)| (f, r.to_string()))
                .ok(),
            Some((TimeMapFormat::LINK, "example.com/x".into()))
        );
        assert!(
            matches!(split_format("xml/http://a.b/"), Err(AppError::UnknownFormat(f)) if f == "xml")
        );
        assert!(matches!(
            split_format("http%3A%2F%2Fa.b%2F"),
            Ok((TimeMapFormat::LINK, _))
        ));
    }

    #[test]
    fn if_none_match_lists_and_star() {
        let mut h = HeaderMap::new();
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"a\", \"b\""),
        );
        assert!(if_none_match(&h, "\"b\""));
        assert!(!if_none_match(&h, "\"c\""));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(if_none_match(&h, "\"c\""));
        // Another coding's tag of the same body matches; a longer hash does not.
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("W/\"b-gzip\", \"c0-br\""),
        );
        assert!(if_none_match(&h, "\"b\""));
        assert!(!if_none_match(&h, "\"c\""));
        assert!(!if_none_match(&h, "\"b-\""));
    }
}
