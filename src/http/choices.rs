//! What a client chooses about how it is answered, read from its request: which archives
//! (`archives=` or `Prefer: archives="…"`) and what the cache may do (`Cache-Control`).

use crate::error::AppError;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use futures::future::{BoxFuture, Either, FutureExt};
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service};

/// The `Cache-Control` (and HTTP/1.0 `Pragma`) directives we honour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheDirectives {
    /// `no-cache`: refresh now (bounded by `min_refresh_interval`).
    pub no_cache: bool,
    /// `only-if-cached`: answer from the cache or 504, asking no archive.
    pub only_if_cached: bool,
    /// `max-stale[=N]`: an expired entry may be served if expired no longer than this (no value:
    /// any time). Only `only-if-cached` uses it; otherwise an expired entry is refreshed.
    pub max_stale: Option<Duration>,
}

pub fn cache_directives(headers: &HeaderMap) -> CacheDirectives {
    let mut d = CacheDirectives::default();
    let values = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .chain(headers.get_all(header::PRAGMA).iter());
    for value in values {
        let Ok(text) = value.to_str() else { continue };
        for directive in text.split(',').map(str::trim) {
            let (name, arg) = match directive.split_once('=') {
                Some((n, a)) => (n.trim(), Some(a.trim().trim_matches('"'))),
                None => (directive, None),
            };
            if name.eq_ignore_ascii_case("no-cache") {
                d.no_cache = true;
            } else if name.eq_ignore_ascii_case("only-if-cached") {
                d.only_if_cached = true;
            } else if name.eq_ignore_ascii_case("max-stale") {
                // RFC 9111 §5.2.1.2: no value = any staleness; a value that is not a number of
                // seconds is read as none allowed, the safe side.
                let allowed = match arg {
                    None => Duration::MAX,
                    Some(a) => a.parse().map(Duration::from_secs).unwrap_or_default(),
                };
                d.max_stale = Some(allowed);
            }
        }
    }
    d
}

/// The archive ids in `archives=ia,arquivo` (our query parameter): split on commas, blanks
/// dropped.
pub fn ids_in_param(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The archive ids of `Prefer: archives="ia arquivo"` (space or comma separated), if the
/// client sent that preference.
pub fn ids_in_prefer(headers: &HeaderMap) -> Option<Vec<String>> {
    let mut found: Option<Vec<String>> = None;
    for value in headers.get_all("prefer") {
        let Ok(text) = value.to_str() else { continue };
        for pref in split_preferences(text) {
            let Some((name, v)) = pref.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("archives") {
                let v = v.trim().trim_matches('"');
                let ids = v
                    .split([' ', ','])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                found.get_or_insert_with(Vec::new).extend(ids);
            }
        }
    }
    found
}

/// The value of `Prefer: archives=` that asks every archive, routing or not.
pub const EVERY_ARCHIVE: &str = "all";

/// `Preference-Applied` when a fan-out asked every archive for `Prefer: archives=all`.
pub const EVERY_ARCHIVE_APPLIED: &str = "archives=all";

/// Whether `Prefer: archives=` named [`EVERY_ARCHIVE`] alone (in any case).
pub fn is_every_archive(ids: &[String]) -> bool {
    matches!(ids, [only] if only.eq_ignore_ascii_case(EVERY_ARCHIVE))
}

/// A Prefer value's preferences: split on commas outside double quotes, so
/// `archives="ia, pt", wait=5` is two.
fn split_preferences(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts
}

/// The archives a request is restricted to, checked against the enabled ones (`enabled`, in
/// configured order): each named id must be one, repeated ones count once, and the answer is
/// in configured order. `from_param` and `from_prefer` both restrict: with both, the archives
/// in both. `Ok(None)` when the client chose nothing, or chose every enabled archive (the
/// ordinary, cached answer).
pub fn chosen_archives(
    enabled: &[&str],
    configured: &[&str],
    from_param: Option<&[&str]>,
    from_prefer: Option<&[String]>,
) -> Result<Option<Vec<String>>, AppError> {
    let check = |ids: &mut dyn Iterator<Item = &str>| -> Result<Vec<String>, AppError> {
        let mut chosen = Vec::new();
        for id in ids {
            if !enabled.contains(&id) {
                let why = if configured.contains(&id) {
                    "is disabled"
                } else {
                    "is not one of ours"
                };
                return Err(AppError::BadParameter(format!(
                    "archive {:?} {why}; the archives are: {}",
                    crate::uri_r::clip(id),
                    enabled.join(", ")
                )));
            }
            chosen.push(id.to_string());
        }
        if chosen.is_empty() {
            return Err(AppError::BadParameter(
                "archives names no archive; name at least one, e.g. archives=ia".into(),
            ));
        }
        Ok(chosen)
    };
    let param = from_param
        .map(|ids| check(&mut ids.iter().copied()))
        .transpose()?;
    let prefer = from_prefer
        .map(|ids| check(&mut ids.iter().map(String::as_str)))
        .transpose()?;
    if param.is_none() && prefer.is_none() {
        return Ok(None);
    }
    let wanted = |id: &str| {
        param.as_ref().is_none_or(|p| p.iter().any(|x| x == id))
            && prefer.as_ref().is_none_or(|p| p.iter().any(|x| x == id))
    };
    let chosen: Vec<String> = enabled
        .iter()
        .filter(|id| wanted(id))
        .map(|id| id.to_string())
        .collect();
    if chosen.is_empty() {
        return Err(AppError::BadParameter(
            "archives= and Prefer: archives name no archive in common".into(),
        ));
    }
    Ok((chosen.len() < enabled.len()).then_some(chosen))
}

/// Around the Memento routes: an answer shaped by `Prefer: archives=` says so (RFC 7240
/// `Preference-Applied`, when it is not a 4xx/5xx) and carries `Vary: Prefer`, so a shared
/// cache in front of us never serves one client's choice of archives to another.
///
/// Hand-written rather than `axum::middleware::from_fn`, which clones the inner service and
/// boxes a future and a `Next` for every request: a request without `Prefer: archives=`
/// (nearly all, cache hits included) passes through untouched.
#[derive(Clone, Copy)]
pub struct MarkPreferencesLayer;

impl<S> Layer<S> for MarkPreferencesLayer {
    type Service = MarkPreferences<S>;

    fn layer(&self, inner: S) -> MarkPreferences<S> {
        MarkPreferences { inner }
    }
}

/// A service whose answers say which archives a `Prefer` chose.
#[derive(Clone)]
pub struct MarkPreferences<S> {
    inner: S,
}

impl<S> Service<Request> for MarkPreferences<S>
where
    S: Service<Request, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match ids_in_prefer(req.headers()) {
            None => Either::Left(self.inner.call(req)),
            // Applied only when a fan-out asked every archive: the route says so itself
            // (`cache_headers`); the answer still varies by Prefer.
            Some(ids) if is_every_archive(&ids) => Either::Right(
                self.inner
                    .call(req)
                    .map(|answer| {
                        answer.map(|mut r| {
                            let vary = HeaderValue::from_static("prefer");
                            r.headers_mut().append(header::VARY, vary);
                            r
                        })
                    })
                    .boxed(),
            ),
            Some(ids) => Either::Right(
                self.inner
                    .call(req)
                    .map(move |answer| answer.map(|r| mark_preferences(r, &ids)))
                    .boxed(),
            ),
        }
    }
}

/// `response` to a request that chose the archives `ids` with `Prefer`.
fn mark_preferences(mut resp: Response, ids: &[String]) -> Response {
    resp.headers_mut()
        .append(header::VARY, HeaderValue::from_static("prefer"));
    let status = resp.status();
    // Only a refused request carries ids that are not archive ids ([a-z0-9._-]), so what is
    // echoed is always a header value; a 4xx/5xx applied nothing.
    if !status.is_client_error() && !status.is_server_error() {
        let applied = format!("archives=\"{}\"", ids.join(" "));
        if let Ok(v) = HeaderValue::from_str(&applied) {
            resp.headers_mut().insert(super::PREFERENCE_APPLIED, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn cache_control_directives_are_read_in_any_case_and_header() {
        let d = cache_directives(&headers(&[(
            "cache-control",
            "Only-If-Cached, max-stale=60",
        )]));
        assert!(d.only_if_cached && !d.no_cache);
        assert_eq!(d.max_stale, Some(Duration::from_secs(60)));
        let d = cache_directives(&headers(&[("pragma", "no-cache")]));
        assert!(d.no_cache);
        let d = cache_directives(&headers(&[("cache-control", "max-stale")]));
        assert_eq!(d.max_stale, Some(Duration::MAX));
        let d = cache_directives(&headers(&[("cache-control", "max-stale=soon")]));
        assert_eq!(
            d.max_stale,
            Some(Duration::ZERO),
            "unreadable: no staleness allowed"
        );
        assert_eq!(
            cache_directives(&HeaderMap::new()),
            CacheDirectives::default()
        );
    }

    #[test]
    fn prefer_archives_is_read_beside_other_preferences() {
        let h = headers(&[
            ("prefer", "wait=5, archives=\"ia, pt\""),
            ("prefer", "archives=uk"),
        ]);
        assert_eq!(
            ids_in_prefer(&h),
            Some(vec!["ia".to_string(), "pt".to_string(), "uk".to_string()])
        );
        assert_eq!(ids_in_prefer(&headers(&[("prefer", "wait=5")])), None);
    }

    #[test]
    fn chosen_archives_are_checked_intersected_and_ordered() {
        let enabled = ["ia", "pt", "uk"];
        let configured = ["ia", "pt", "uk", "off"];
        let pick =
            |p: Option<&[&str]>, h: Option<&[String]>| chosen_archives(&enabled, &configured, p, h);
        assert_eq!(pick(None, None).ok(), Some(None));
        assert_eq!(
            pick(Some(&["uk", "ia", "ia"]), None).ok(),
            Some(Some(vec!["ia".to_string(), "uk".to_string()]))
        );
        assert_eq!(
            pick(Some(&["uk", "ia", "pt"]), None).ok(),
            Some(None),
            "all = none chosen"
        );
        let prefer = vec!["pt".to_string(), "uk".to_string()];
        assert_eq!(
            pick(Some(&["ia", "uk"]), Some(&prefer)).ok(),
            Some(Some(vec!["uk".to_string()]))
        );
        for bad in [&["off"][..], &["nope"][..], &[][..]] {
            let e = pick(Some(bad), None).expect_err("refused");
            assert_eq!(e.status(), 400, "{bad:?}");
        }
        let e = pick(Some(&["ia"]), Some(&prefer)).expect_err("nothing in common");
        assert_eq!(e.status(), 400);
    }
}
