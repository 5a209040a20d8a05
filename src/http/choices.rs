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
    for value in headers.get_all(super::headers::PREFER) {
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

/// A `?archives=` or `?timeout=` left in the URI-R's query (its value not ours as it stands)
/// that was nonetheless meant for us: a typo of ours, not the URL's own parameter. `archives=`
/// is meant for us when every id in it is a plain word and one is an archive's id or a near
/// spelling of one (`alpha,nosuch`, `arquvio`); `timeout=` when its value starts with a digit
/// and is a plain word (`5`, `10sec`). Such a request is refused with a 400 that says what we
/// take and how to send the text to the archive instead (the URI-R percent-encoded whole, its
/// `?` as `%3F`), rather than made
/// a new fan-out and a new cache entry for a URL nobody meant.
pub fn meant_for_us(raw: &str, ids: &[&str]) -> Option<AppError> {
    let query = &raw[raw.find('?')? + 1..];
    let plain = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    // A URI-R sent percent-encoded whole has no `?` of ours to split: all of it is the URL's.
    let send_instead = |pair: &str| {
        let encoded =
            percent_encoding::utf8_percent_encode(raw, percent_encoding::NON_ALPHANUMERIC);
        format!(
            "to send {} to the archive as part of the URL, percent-encode the whole URI-R (its ? \
             as %3F): {}",
            crate::uri_r::clip(pair),
            crate::uri_r::clip(&encoded.to_string())
        )
    };
    for pair in query.split('&') {
        if let Some(value) = pair.strip_prefix("archives=") {
            let named = ids_in_param(value);
            let ours = !named.is_empty()
                && named.iter().all(|w| plain(w))
                && named.iter().any(|w| nearest(w, ids).is_some());
            if !ours {
                continue;
            }
            let unknown: Vec<&str> = named.into_iter().filter(|w| !ids.contains(w)).collect();
            let hint = match unknown.iter().find_map(|w| nearest(w, ids).map(|n| (w, n))) {
                Some((w, n)) => format!(" (\"{}\": did you mean \"{n}\"?)", crate::uri_r::clip(w)),
                _ => String::new(),
            };
            return Some(AppError::BadParameter(format!(
                "archives={}: {} not one of ours{hint}; the archives are: {}; {}",
                crate::uri_r::clip(value),
                match unknown.as_slice() {
                    [one] => format!("\"{}\" is", crate::uri_r::clip(one)),
                    many => format!("{} are", crate::uri_r::clip(&many.join(", "))),
                },
                ids.join(", "),
                send_instead(pair)
            )));
        }
        if let Some(value) = pair.strip_prefix("timeout=") {
            if plain(value) && value.starts_with(|c: char| c.is_ascii_digit()) {
                return Some(AppError::BadParameter(format!(
                    "timeout {:?} is not a duration like \"5s\" or \"500ms\"; {}",
                    crate::uri_r::clip(value),
                    send_instead(pair)
                )));
            }
        }
    }
    None
}

/// The archive id `word` is or nearly is, if any: the same in another case, or a few edits
/// away (a swap of two letters is one): none for an id of one or two letters (any such word is
/// one edit from it), one up to five letters, two beyond.
fn nearest<'a>(word: &str, ids: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    ids.iter()
        .map(|id| (strsim::osa_distance(&lower, &id.to_ascii_lowercase()), *id))
        .filter(|(d, id)| {
            *d <= match id.len() {
                0..=2 => 0,
                3..=5 => 1,
                _ => 2,
            }
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, id)| id)
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

    #[test]
    fn a_parameter_meant_for_us_is_told_apart_from_the_urls_own() {
        let ids = ["ia", "arquivo", "archive.today", "a"];
        let refused = |raw: &str| match meant_for_us(raw, &ids) {
            Some(AppError::BadParameter(why)) => Some(why),
            other => other.map(|e| format!("{e:?}")),
        };
        for raw in [
            "http://e.com/?archives=ia,nosuch",
            "http://e.com/?archives=arquvio",
            "http://e.com/?archives=IA",
            "http://e.com/?q=1&archives=archive.todya",
            "http://e.com/?timeout=5",
            "http://e.com/?timeout=10sec",
        ] {
            let why = refused(raw).unwrap_or_else(|| panic!("{raw}: not refused"));
            assert!(why.contains("%3F"), "{why}");
        }
        assert!(refused("http://e.com/?archives=arquvio")
            .is_some_and(|w| w.contains("did you mean \"arquivo\"")));
        for raw in [
            "http://e.com/",
            "http://e.com/?archives=2",
            "http://e.com/?archives=b",
            "http://e.com/?archives=<script>,ia",
            "http://e.com/?archives=",
            "http://e.com/?timeout=soon",
            "http://e.com/?timeout=5%20s",
            "http://e.com/?xarchives=ia,nosuch",
        ] {
            assert!(refused(raw).is_none(), "{raw}: {:?}", refused(raw));
        }
    }
}
