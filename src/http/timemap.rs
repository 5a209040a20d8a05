//! `/timemap/{link,json,cdxj}/{URI-R}` and `/timemap/{URI-R}`: the aggregated TimeMap, and
//! `/timemap/{link,json,cdxj}/{N}/{URI-R}`: its page N (RFC 7089 §4.3).

use super::{
    answer, cache_headers, check_found, raw_after, read_lookup, serve_lookup, SharedState, X_CACHE,
};
use crate::encoding::{self, if_none_match, Coding};
use crate::error::AppError;
use crate::timemap::serialize::TimeMapFormat;
use crate::view::{Pieces, Rendered, View, MAX_CODED};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{self as http, header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

mod from_renderings;

/// Splits `link/http://…` into its format and the rest; a bare `/timemap/http://…` is link format.
pub fn split_format(raw: &str) -> Result<(TimeMapFormat, &str), AppError> {
    let (first, rest) = split_at_slash(raw).unwrap_or((raw, ""));
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

/// After a format segment, a segment of only ASCII digits followed by `/` is a page number:
/// `link/2/http://…` is page 2. A scheme-less URI-R whose host is only digits (`link/2/x`)
/// reads as a page: such a host is an IPv4 number (`2` is 0.0.0.2), never a public site; a
/// host with a dot (`123.com/`) is not all digits. Returns the digits (for the error) and the
/// page number, `usize::MAX` when they overflow it (then past the end, a 404, not an overflow).
pub fn split_page(rest: &str) -> (Option<(&str, usize)>, &str) {
    match split_at_slash(rest) {
        Some((digits, uri_r))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (Some((digits, digits.parse().unwrap_or(usize::MAX))), uri_r)
        }
        _ => (None, rest),
    }
}

/// `text` before and after its first `/`: a plain byte loop, where `split_once`'s searcher
/// cost a cache hit more than the few bytes it looks at.
fn split_at_slash(text: &str) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == b'/')?;
    // A `/` is one byte, never inside a character: both ends are boundaries.
    Some((text.get(..at)?, text.get(at + 1..)?))
}

pub async fn timemap(State(state): State<SharedState>, req: Request) -> Result<Response, AppError> {
    // The request's own parts, moved: axum's `HeaderMap` extractor would clone every header
    // of every hit.
    let (
        http::request::Parts {
            method,
            uri,
            headers,
            ..
        },
        _,
    ) = req.into_parts();
    let path = raw_after(&uri, "/timemap/");
    let (format, raw) = split_format(path)?;
    // Only after a format segment that was written (`raw` is then shorter than the path).
    let (page, raw) = match raw.len() < path.len() {
        true => split_page(raw),
        false => (None, raw),
    };
    if page.is_some_and(|(_, n)| n == 0) {
        return Err(AppError::BadParameter(
            "TimeMap pages are numbered from 1: /timemap/{format}/1/{URI-R} is the first".into(),
        ));
    }
    let lookup = read_lookup(&state, raw, &headers)?;
    // A huge entry's whole TimeMap: streamed from its rendering on disk when it has one. Its
    // future is boxed (begun only on a server holding a huge entry), as every sub-future an
    // ordinary hit does not need: not part of the future each request moves and keeps.
    if let (None, Some(tier)) = (page, from_renderings::tier(&state)) {
        let head_only = method == Method::HEAD;
        let answer = from_renderings::answer(&state, tier, &lookup, format, &headers, head_only);
        if let Some(r) = Box::pin(answer).await {
            return Ok(r);
        }
    }
    // A page never needs the whole body: no rendering it beside the store.
    let whole = page.is_none().then_some(format);
    let served = serve_lookup(&state, &lookup, whole).await?;
    let now = state.clock.now();
    if let Err(e) = check_found(&served.view.aggregate) {
        // A cached 404 (or a 502 with nothing cached) still says where it came from.
        let mut h = served.view.content_headers();
        cache_headers(&mut h, &served, now);
        let mut response = e.into_response();
        response.headers_mut().extend(h);
        return Ok(response);
    }
    let rendered = match page {
        // Rendered once per cached entry and format; a hit only clones the bytes.
        None => served.view.rendered(format),
        Some((asked, number)) => match served.view.page(number) {
            // A page is rendered per request from the shared TimeMap: only its mementos.
            Ok(page) => served.view.rendered_page(format, &page),
            Err(_) => {
                let pages = served.view.pages();
                let e = AppError::NoSuchPage {
                    asked: asked.to_owned(),
                    pages: pages.count(),
                    page_size: pages.size,
                };
                let mut h = served.view.content_headers();
                cache_headers(&mut h, &served, now);
                let mut response = e.into_response();
                response.headers_mut().extend(h);
                return Ok(response);
            }
        },
    };
    // The whole TimeMap is coded once per cached entry, format and coding; a page, rendered
    // per request, is coded per request. Off the runtime's threads when big and not coded yet.
    let small = rendered.body.len() < 256 * 1024;
    let coding = encoding::negotiate(&headers);
    let coded = match (coding, page) {
        (None, _) => None,
        (Some(c), Some(_)) if small => coded_page(c, &rendered.body),
        (Some(c), Some(_)) => {
            let body = rendered.body.clone();
            tokio::task::spawn_blocking(move || coded_page(c, &body))
                .await
                .ok()
                .flatten()
        }
        (Some(c), None) if small || served.view.codes_at_once(format, c) => {
            served.view.coded(format, c)
        }
        (Some(c), None) => {
            let view = served.view.clone();
            tokio::task::spawn_blocking(move || view.coded(format, c))
                .await
                .ok()
                .flatten()
        }
    };
    let coded = coding.zip(coded);
    // A whole TimeMap too big to code in memory, for a client that takes a coding: coded on
    // the way (the fastest coding it takes as gladly), never sent plain.
    let favoured = [Coding::Zstd, Coding::Br, Coding::Gzip];
    let on_the_way = match (&coded, page) {
        (None, None) if rendered.body.len() > MAX_CODED => {
            encoding::negotiate_favouring(&headers, &favoured)
        }
        _ => None,
    };
    let sent_coding = coded.as_ref().map(|(c, _)| *c).or(on_the_way);
    // The whole TimeMap's head, as stored or in a stored coding, is made once per cached entry
    // ([`View::head`]); a page's, or one coded on the way, is put together per request.
    let mut h = match (page, on_the_way) {
        // Not coded on the way: the coding sent is the stored one, if any.
        (None, None) => served.view.head(format, sent_coding, || {
            whole_head(&served.view, format, &rendered, sent_coding)
        }),
        _ => {
            let mut h = served.view.content_headers();
            content_type_and_link(&mut h, format, &rendered);
            // One coded on the way is weak (its bytes are not the stored renderings').
            let etag = match (&coded, on_the_way) {
                (Some((c, _)), _) => c.etag(&rendered.etag),
                (None, Some(c)) => encoding::weak_etag(c, &rendered.etag),
                (None, None) => rendered.etag_header.clone(),
            };
            tag_and_coding(&mut h, etag, sent_coding);
            h
        }
    };
    cache_headers(&mut h, &served, now);
    // Any coding of the same content is current: the client has it, in whichever coding.
    if if_none_match(&headers, &rendered.etag) {
        // A 304 has no body to be coded.
        h.remove(header::CONTENT_ENCODING);
        return Ok(answer(StatusCode::NOT_MODIFIED, h, Body::empty()));
    }
    let body = match (coded, on_the_way) {
        (Some((_, body)), _) => Body::from(body),
        (None, Some(c)) => {
            Box::pin(encoding::coded_on_the_way(
                c,
                rendered.body.iter().cloned().collect(),
            ))
            .await
        }
        (None, None) => Body::from(rendered.body),
    };
    Ok(answer(StatusCode::OK, h, body))
}

/// The head of an answer with the whole TimeMap in `format` and `coding`: its content headers,
/// its type, `Vary`, `Link`, its ETag (each coding is its own representation, with its own
/// strong ETag: RFC 9110 §8.8.3) and coding; and, with the values any answer carries, the
/// headers set per answer: the cache's, CORS's and the request log's.
fn whole_head(
    view: &View,
    format: TimeMapFormat,
    rendered: &Rendered,
    coding: Option<Coding>,
) -> HeaderMap {
    // Its index table sized for every header an answer ends with (`View::content_headers`).
    let mut h = view.content_headers();
    content_type_and_link(&mut h, format, rendered);
    let etag = match coding {
        Some(c) => c.etag(&rendered.etag),
        None => rendered.etag_header.clone(),
    };
    tag_and_coding(&mut h, etag, coding);
    super::cors::put_readable(&mut h);
    super::log::put_per_answer(&mut h);
    // The cache's, written over per answer.
    h.insert(X_CACHE, HeaderValue::from_static("-"));
    h.insert(header::AGE, HeaderValue::from_static("0"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h
}

/// The representation's `ETag`, when it has one, and its `Content-Encoding`, when coded.
fn tag_and_coding(h: &mut HeaderMap, etag: Option<HeaderValue>, coding: Option<Coding>) {
    if let Some(v) = etag {
        h.insert(header::ETAG, v);
    }
    if let Some(c) = coding {
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(c.token()),
        );
    }
}

/// `Content-Type`, `Vary` and, when it has one, the rendering's `Link`.
fn content_type_and_link(h: &mut HeaderMap, format: TimeMapFormat, rendered: &Rendered) {
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(v) = &rendered.link_header {
        h.insert(header::LINK, v.clone());
    }
}

/// A page's body in `coding` (a page is rendered, and so coded, per request).
fn coded_page(coding: encoding::Coding, body: &Pieces) -> Option<Pieces> {
    let coded = coding.encode(&body.contiguous()).ok()?;
    Some(Pieces::one(Bytes::from(coded)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

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
    fn a_page_is_a_digits_only_segment_before_a_slash() {
        assert_eq!(split_page("2/http://a.b/"), (Some(("2", 2)), "http://a.b/"));
        assert_eq!(split_page("2/example.com"), (Some(("2", 2)), "example.com"));
        // Hosts with digits are URI-Rs: a dot, a letter or no slash after the digits.
        assert_eq!(split_page("123.com/x"), (None, "123.com/x"));
        assert_eq!(split_page("2a/x"), (None, "2a/x"));
        assert_eq!(split_page("2"), (None, "2"));
        assert_eq!(split_page("/x"), (None, "/x"));
        assert_eq!(split_page("0/x"), (Some(("0", 0)), "x"));
        // Too large for any page: past the end, never an overflow.
        let huge = "99999999999999999999999999999/x";
        assert_eq!(split_page(huge).0.map(|p| p.1), Some(usize::MAX));
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
