//! A huge entry's whole TimeMap answered from its head and rendering files (the store's
//! renderings tier, `cache::store::renderings`): the same headers as an ordinary hit, the body
//! streamed from disk.

use crate::cache::store::renderings::{self, Renderings};
use crate::encoding::{self, if_none_match, Coding};
use crate::http::{freshness_headers, AppState, TimeMapRequest};
use crate::timemap::serialize::TimeMapFormat;
use crate::view::View;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// The renderings tier when [`answer`] may have one: the server holds a huge entry's head.
/// Most servers hold none; then no key is made and nothing is looked up.
pub(super) fn tier(state: &AppState) -> Option<&Arc<Renderings<View>>> {
    state.renderings.as_ref().filter(|s| s.any_head())
}

/// The answer from `lookup`'s head, or None: no head (not huge, its files not written yet, or
/// dropped), another spelling of the URI-R, no longer fresh, a choice only the entry can serve
/// (chosen archives, `no-cache`), or its file is gone. Then the request goes the ordinary way.
pub(super) async fn answer(
    state: &AppState,
    tier: &Arc<Renderings<View>>,
    lookup: &TimeMapRequest,
    format: TimeMapFormat,
    headers: &HeaderMap,
    head_only: bool,
) -> Option<Response> {
    if lookup.archives.is_some() || lookup.directives.no_cache {
        return None;
    }
    let key = state.cache.key_of(&lookup.uri_r);
    let uri_r = lookup.uri_r.as_str();
    // None while the renderings are being written: the entry is then served from memory.
    let head = tier.head(&key)?;
    // The bodies name the URI-R as stored; another spelling's are made from the entry.
    if head.uri_r != uri_r || !state.cache.head_is_fresh(head.checked_at, head.fresh_until) {
        return None;
    }
    let rendering = head.formats.get(format.index())?;
    let mut h = rendering.headers.content.clone();
    h.insert(crate::http::X_CACHE, HeaderValue::from_static("HIT"));
    let now = state.clock.now();
    freshness_headers(&mut h, head.checked_at, head.fresh_until, false, now);
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(v) = &rendering.headers.link {
        h.insert(header::LINK, v.clone());
    }
    // Every coding is on disk: among those the client takes most gladly, the smallest file
    // as they usually come out (zstd 3, br 1, gzip fast: 1.9, 3.3, 6.7 MB of 122 MB).
    let coding = encoding::negotiate_favouring(headers, &[Coding::Zstd, Coding::Br, Coding::Gzip]);
    let etag = match coding {
        Some(c) => c.etag(&rendering.etag),
        None => HeaderValue::from_str(&rendering.etag).ok(),
    };
    if let Some(v) = etag {
        h.insert(header::ETAG, v);
    }
    if if_none_match(headers, &rendering.etag) {
        state.cache.count_head_hit();
        return Some(crate::http::answer(
            StatusCode::NOT_MODIFIED,
            h,
            Body::empty(),
        ));
    }
    let file = match coding {
        Some(Coding::Zstd) => &rendering.zstd,
        Some(Coding::Gzip) => &rendering.gzip,
        Some(Coding::Br) => &rendering.br,
        None => &rendering.plain,
    };
    if let Some(c) = coding {
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(c.token()),
        );
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.len));
    if head_only {
        state.cache.count_head_hit();
        return Some(crate::http::answer(StatusCode::OK, h, Body::empty()));
    }
    let body = renderings::body(tier.clone(), key, head.rev, file.clone()).await?;
    state.cache.count_head_hit();
    Some(crate::http::answer(
        StatusCode::OK,
        h,
        Body::from_stream(body),
    ))
}
