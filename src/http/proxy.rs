//! `/memento/proxy/{DATETIME}/{URI-R}`: the closest memento's own bytes, readable by any page
//! (CORS), as MemGator serves them. The URI-M is an archive's word, so it is fetched only from
//! the archive that listed it, under its configured prefixes (`upstream::memento`), and what
//! comes back is archive content on our origin: it is served so that it can never run as our
//! page, script or stylesheet. A HEAD asks the archive for the head only; a coded body is passed
//! on coded only to a client accepting that coding, and inflated for any other. The archive's
//! raw form of the memento is asked first (the capture as archived, not its replay page), and
//! `X-Memento-Raw` says whether that or the listed URI-M is served.

use super::SharedState;
use crate::error::AppError;
use crate::timemap::datetime::format_rfc1123;
use crate::timemap::serialize::{SelfLinks, TimeMapFormat};
use crate::upstream::memento::{fetch_memento, Asked};
use crate::uri_text::escape_uri;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;

/// `true` when the answer is the memento's raw form, `false` when the URI-M as listed.
const X_MEMENTO_RAW: HeaderName = HeaderName::from_static("x-memento-raw");

/// Archive HTML served from our origin runs nothing and reaches nothing: `sandbox` gives it an
/// opaque origin with scripts, forms and plugins off, and `default-src 'none'` loads nothing.
const CSP: &str = "sandbox; default-src 'none'";

/// Types a browser would run as script, style or a transform when one of our pages (or a page
/// anywhere, as our origin) includes the URL: served as `text/plain`, which `nosniff` then keeps
/// from running. The bytes are unchanged.
const ACTIVE_TYPES: &[&str] = &[
    "javascript",
    "ecmascript",
    "jscript",
    "livescript",
    "text/css",
    "wasm",
    "xsl",
];

/// The `Content-Type` we send for an archive's: its own when it is a plain `type/subtype`
/// (parameters kept), `text/plain` for active types, `application/octet-stream` when missing or
/// unreadable.
fn served_type(archive_type: Option<&str>) -> HeaderValue {
    let Some(t) = archive_type else {
        return HeaderValue::from_static("application/octet-stream");
    };
    let essence = t
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let plain = essence
        .split_once('/')
        .is_some_and(|(a, b)| token(a) && token(b));
    if !plain {
        return HeaderValue::from_static("application/octet-stream");
    }
    if ACTIVE_TYPES.iter().any(|a| essence.contains(a)) {
        return HeaderValue::from_static("text/plain");
    }
    HeaderValue::from_str(t).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

pub async fn proxy(
    state: &SharedState,
    method: &Method,
    raw: &str,
    headers: &HeaderMap,
) -> Result<Response, AppError> {
    let (served, c) = super::timegate::closest_served(state, raw, headers).await?;
    let agg = &served.view.aggregate;
    let m = &agg.timemap.mementos[c.closest];
    let max = state.memento_proxy_max_bytes;
    let accepts = |token: &str| crate::encoding::accepts(headers, token);
    let asked = Asked {
        head: method == Method::HEAD,
        accepts: &accepts,
    };
    let got = fetch_memento(&state.upstream, &m.uri_m, &m.archive, max, asked)
        .await
        .map_err(AppError::MementoProxy)?;

    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        served_type(got.content_type.as_deref()),
    );
    // A coding the archive applied uninvited (we ask for none), passed on only to a client
    // that accepts it (otherwise the body was inflated for it).
    if let Some(coding) = got.content_encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    // Whether this answer's body is coded depends on the client's Accept-Encoding.
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        X_MEMENTO_RAW,
        HeaderValue::from_static(if got.raw { "true" } else { "false" }),
    );
    if let Ok(v) = HeaderValue::from_str(&format_rfc1123(m.datetime)) {
        h.insert("memento-datetime", v);
    }
    let links = SelfLinks::new(&state.public_url, &agg.uri_r);
    let link = format!(
        "<{}>; rel=\"original\", <{}>; rel=\"memento\"; datetime=\"{}\", <{}>; rel=\"timegate\", <{}>; rel=\"timemap\"; type=\"{}\"",
        links.uri_r,
        escape_uri(&m.uri_m),
        format_rfc1123(m.datetime),
        links.timegate(),
        links.timemap(TimeMapFormat::LINK),
        TimeMapFormat::LINK.content_type()
    );
    if let Ok(v) = HeaderValue::from_str(&link) {
        h.insert(header::LINK, v);
    }
    let status = StatusCode::from_u16(got.http_status).unwrap_or(StatusCode::OK);
    let body = match got.body {
        Some(body) => Body::new(body),
        None => Body::empty(),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = h;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_types_are_served_as_text_and_odd_ones_as_bytes() {
        let t = |v: Option<&str>| served_type(v).to_str().expect("ascii").to_owned();
        assert_eq!(
            t(Some("text/html; charset=utf-8")),
            "text/html; charset=utf-8"
        );
        assert_eq!(t(Some("image/png")), "image/png");
        for active in [
            "application/javascript",
            "text/JavaScript; charset=utf-8",
            "application/x-ecmascript",
            "text/css",
            "application/wasm",
            "text/xsl",
        ] {
            assert_eq!(t(Some(active)), "text/plain", "{active}");
        }
        for odd in [
            None,
            Some(""),
            Some("html"),
            Some("text/ht ml"),
            Some("a/b/c"),
        ] {
            assert_eq!(t(odd), "application/octet-stream", "{odd:?}");
        }
    }
}
