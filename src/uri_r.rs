//! The URI-R a client asks about, read from the request target as Time Travel and MemGator do.

use crate::uri_text::{
    encoded_dot_segment_in, has_control, resolve_uri_r_path, starts_with_ci, strip_prefix_ci,
};
use std::borrow::Cow;
use std::fmt;
use tmproxy_core::routing::UriKeys;

/// Longest request target we accept (414 beyond): archives refuse far shorter URIs anyway.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// Why a URI-R was refused; each maps to a 4xx in `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UriRError {
    Empty,
    TooLong(usize),
    NotHttp(String),
    Invalid(String),
    /// A control character (CR, LF, NUL, tab, …) in the URI-R once decoded: it could only ever
    /// be an attempt to break the lines and headers the URI-R is written into.
    Control(String),
    /// An unencoded trailing `*`: to pywb and the Wayback CDX server a prefix query (every URL
    /// that starts so), which is not one URL's TimeMap and is heavy on a large archive.
    PrefixQuery(String),
    /// A path piece that is `.` or `..` once `%2F` or `%5C` is read as a separator or a `;`
    /// parameter dropped (`..%2f`, `..;`): a front end before an archive that decodes so would
    /// climb out of the archive's prefix. Refused rather than guessed at: servers disagree on
    /// what those spellings mean.
    EncodedDotSegment(String),
}

impl fmt::Display for UriRError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriRError::Empty => write!(
                f,
                "missing URI-R: append the URL to look up, e.g. /timemap/link/http://example.com/"
            ),
            UriRError::TooLong(n) => {
                write!(f, "URI-R of {n} bytes is over the {MAX_URI_LEN}-byte limit")
            }
            UriRError::NotHttp(s) => write!(
                f,
                "URI-R must be an http:// or https:// URL, got {:?}",
                clip(s)
            ),
            UriRError::Invalid(s) => write!(f, "URI-R is not a valid URL: {:?}", clip(s)),
            UriRError::PrefixQuery(s) => write!(
                f,
                "a trailing * asks archives for a prefix query (every URL starting so), not a TimeMap: {:?}; write %2A for the character itself",
                clip(s)
            ),
            UriRError::EncodedDotSegment(s) => write!(
                f,
                "URI-R path holds a dot segment behind an encoded separator or a ; parameter (%2F, %5C, ..;): {:?}; write the path with plain / or resolve it first",
                clip(s)
            ),
            UriRError::Control(s) => write!(
                f,
                "URI-R holds a control character (CR, LF, NUL, tab…) once decoded: {:?}",
                clip(s)
            ),
        }
    }
}

/// A client-supplied value cut for an error line (the core's, shared with sampling).
pub(crate) use tmproxy_core::uri_text::clip;

/// A validated http(s) URI-R, kept as the client wrote it (archives match on their own
/// canonical forms; rewriting it here would only lose information), except for its path's dot
/// segments and backslashes, which are resolved inside the URI-R: `http://e.com/a/../b` is
/// `http://e.com/b`, so it can never climb out of an archive's prefix once appended to it, and
/// two spellings of one URL share one cache entry.
///
/// Parsed once, it carries what the layers below key it by: the cache its canonical key, routing
/// its host, domain and TLD keys; none of them parses it again. Equal, and hashed, by its text.
#[derive(Debug, Clone)]
pub struct UriR {
    text: String,
    /// [`tmproxy_core::surt::canonical_key`] of the text; None when it has none (user info).
    canonical: Option<String>,
    keys: UriKeys,
}

impl PartialEq for UriR {
    fn eq(&self, other: &UriR) -> bool {
        self.text == other.text
    }
}

impl Eq for UriR {}

impl std::hash::Hash for UriR {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl UriR {
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn into_string(self) -> String {
        self.text
    }

    /// Its canonical key (`[cache] canonical`): every spelling of the URL has the same one.
    /// None for a URI-R that has none, which the cache then keys by its text.
    pub fn canonical_key(&self) -> Option<&str> {
        self.canonical.as_deref()
    }

    /// The keys routing profiles it under: host, registrable domain, TLD.
    pub fn routing_keys(&self) -> &UriKeys {
        &self.keys
    }

    /// Reads a URI-R from the raw text after the route's prefix (path and query, undecoded).
    /// Accepts percent-encoded forms (`http%3A%2F%2F…`), a missing scheme (`example.com`), and
    /// a `//` collapsed to `/` by some intermediary (`http:/example.com`).
    pub fn parse(raw: &str) -> Result<UriR, UriRError> {
        if raw.len() > MAX_URI_LEN {
            return Err(UriRError::TooLong(raw.len()));
        }
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(UriRError::Empty);
        }
        if raw.ends_with('*') {
            return Err(UriRError::PrefixQuery(raw.to_string()));
        }
        let decoded = if starts_with_ci(raw, "http%3a") || starts_with_ci(raw, "https%3a") {
            percent_encoding::percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| UriRError::Invalid(raw.to_string()))?
                .into_owned()
        } else {
            raw.to_string()
        };
        // The fragment is the client's, never part of what archives hold.
        let decoded = match decoded.find('#') {
            Some(i) => decoded[..i].to_string(),
            None => decoded,
        };
        // Checked once decoded: `%0D%0A` in an encoded URI-R is a raw line end from here on.
        if has_control(&decoded) {
            return Err(UriRError::Control(decoded));
        }
        let with_scheme = match decoded.find("://") {
            Some(i)
                if decoded[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
            {
                let scheme = decoded[..i].to_ascii_lowercase();
                if scheme != "http" && scheme != "https" {
                    return Err(UriRError::NotHttp(decoded));
                }
                decoded
            }
            _ => {
                if let Some(rest) = strip_prefix_ci(&decoded, "http:/")
                    .or_else(|| strip_prefix_ci(&decoded, "https:/"))
                {
                    let scheme = if starts_with_ci(&decoded, "https") {
                        "https"
                    } else {
                        "http"
                    };
                    format!("{scheme}://{rest}")
                } else if has_other_scheme(&decoded) {
                    return Err(UriRError::NotHttp(decoded));
                } else {
                    format!("http://{decoded}")
                }
            }
        };
        let parsed =
            url::Url::parse(&with_scheme).map_err(|_| UriRError::Invalid(with_scheme.clone()))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(UriRError::Invalid(with_scheme));
        }
        let mut resolved = resolve_uri_r_path(&with_scheme).into_owned();
        if encoded_dot_segment_in(&resolved).is_some() {
            return Err(UriRError::EncodedDotSegment(resolved));
        }
        // Only a URI-R sent encoded whole can end in `*` by now, and that star was `%2A`: sent
        // as written, so no archive reads it as a prefix query.
        if resolved.ends_with('*') {
            resolved.pop();
            resolved.push_str("%2A");
        }
        // The URL parsed above is the URI-R's unless resolving changed its text (dot segments,
        // backslashes, a trailing star): its keys come from the same parse.
        let parsed = match resolved == with_scheme {
            true => parsed,
            false => {
                url::Url::parse(&resolved).map_err(|_| UriRError::Invalid(resolved.clone()))?
            }
        };
        Ok(UriR {
            canonical: tmproxy_core::surt::canonical_key_of(&parsed),
            keys: UriKeys::of_url(&parsed),
            text: resolved,
        })
    }
}

impl fmt::Display for UriR {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `mailto:x`, `javascript:alert(1)`, `ftp:/x`: a scheme that is not ours. A host with a port
/// (`example.com:8080/`) is not a scheme: what follows its colon is digits.
fn has_other_scheme(s: &str) -> bool {
    match s.find(':') {
        Some(i) if i > 0 => {
            let scheme = &s[..i];
            let after = &s[i + 1..];
            scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && scheme.as_bytes()[0].is_ascii_alphabetic()
                && !after.bytes().next().is_some_and(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// Takes our own `timeout=<duration>` parameter out of a URI-R's query string. The URI-R owns
/// the query (MemGator's convention), so ours is recognised only with a valid duration value
/// (`is_duration`, the config's reading of one); a client whose URI-R really has such a
/// parameter percent-encodes the URI-R, or uses `Prefer: wait=N` instead. Returns the raw text
/// without it, and the value when present.
pub fn split_timeout_param(
    raw: &str,
    is_duration: impl Fn(&str) -> bool,
) -> (String, Option<String>) {
    let (rest, timeout) = split_param(raw, "timeout=", is_duration);
    (rest.into_owned(), timeout)
}

/// Splits our `archives=ia,arquivo` parameter (the archives a client wants asked) off the
/// URI-R's query, when `names_archives` accepts its value: like `timeout`, a value that names
/// no archive of ours is the URI-R's own parameter and stays in it.
pub fn split_archives_param(
    raw: &str,
    names_archives: impl Fn(&str) -> bool,
) -> (Cow<'_, str>, Option<String>) {
    split_param(raw, "archives=", names_archives)
}

/// The URI-R without the `{key}value` pairs of its query that `ours` accepts, and the last such
/// value.
fn split_param<'a>(
    raw: &'a str,
    key: &str,
    ours: impl Fn(&str) -> bool,
) -> (Cow<'a, str>, Option<String>) {
    let Some(q) = raw.find('?') else {
        return (Cow::Borrowed(raw), None);
    };
    let (base, query) = (&raw[..q], &raw[q + 1..]);
    let mut taken = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix(key) {
            Some(v) if ours(v) => {
                taken = Some(v.to_string());
                false
            }
            _ => true,
        })
        .collect();
    if taken.is_none() {
        return (Cow::Borrowed(raw), None);
    }
    let rest = kept.join("&");
    if rest.is_empty() {
        (Cow::Borrowed(base), taken)
    } else {
        (Cow::Owned(format!("{base}?{rest}")), taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_duration(v: &str) -> bool {
        crate::config::parse_duration(v).is_ok()
    }

    fn ok(raw: &str) -> String {
        UriR::parse(raw)
            .map(UriR::into_string)
            .unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    #[test]
    fn a_trailing_star_is_a_prefix_query_and_refused_but_an_encoded_one_stays_encoded() {
        for raw in [
            "http://example.com/*",
            "example.com/a*",
            "http://e.com/?q=a*",
            "http://e.com/ * ",
        ] {
            let err = UriR::parse(raw).expect_err(raw);
            assert!(matches!(err, UriRError::PrefixQuery(_)), "{raw}: {err}");
            assert!(err.to_string().contains("prefix query"), "{err}");
        }
        assert_eq!(ok("http://example.com/a%2A"), "http://example.com/a%2A");
        assert_eq!(ok("http://example.com/a*b"), "http://example.com/a*b");
        // Encoded whole, the star decodes with the rest: it is sent as %2A again.
        assert_eq!(
            ok("http%3A%2F%2Fexample.com%2Fa%2A"),
            "http://example.com/a%2A"
        );
    }

    #[test]
    fn plain_http_and_https_are_kept_as_given() {
        assert_eq!(ok("http://example.com/"), "http://example.com/");
        assert_eq!(
            ok("https://example.com/a?b=c&d=e"),
            "https://example.com/a?b=c&d=e"
        );
        assert_eq!(ok("http://example.com"), "http://example.com");
        assert_eq!(ok("HTTP://Example.com/"), "HTTP://Example.com/");
    }

    #[test]
    fn missing_scheme_gets_http() {
        assert_eq!(ok("example.com"), "http://example.com");
        assert_eq!(ok("example.com:8080/x"), "http://example.com:8080/x");
        assert_eq!(ok("www.example.com/a/b"), "http://www.example.com/a/b");
    }

    #[test]
    fn percent_encoded_uri_r_is_decoded() {
        assert_eq!(
            ok("http%3A%2F%2Fexample.com%2Fa%3Fb%3Dc"),
            "http://example.com/a?b=c"
        );
        assert_eq!(ok("https%3a%2f%2fexample.com%2f"), "https://example.com/");
    }

    #[test]
    fn collapsed_slashes_are_restored() {
        assert_eq!(ok("http:/example.com/"), "http://example.com/");
        assert_eq!(ok("https:/example.com/"), "https://example.com/");
    }

    #[test]
    fn fragment_is_dropped() {
        assert_eq!(ok("http://example.com/#top"), "http://example.com/");
    }

    #[test]
    fn non_http_schemes_are_refused() {
        for raw in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "mailto:a@b.c",
            "gopher://x/",
        ] {
            assert!(
                matches!(UriR::parse(raw), Err(UriRError::NotHttp(_))),
                "{raw}"
            );
        }
    }

    #[test]
    fn empty_invalid_and_long_are_refused() {
        assert_eq!(UriR::parse(""), Err(UriRError::Empty));
        assert_eq!(UriR::parse("   "), Err(UriRError::Empty));
        assert!(matches!(UriR::parse("http://"), Err(UriRError::Invalid(_))));
        assert!(matches!(
            UriR::parse("http://exa mple.com/"),
            Err(UriRError::Invalid(_))
        ));
        let long = format!("http://example.com/{}", "a".repeat(MAX_URI_LEN));
        assert!(matches!(UriR::parse(&long), Err(UriRError::TooLong(_))));
    }

    #[test]
    fn dot_segments_and_backslashes_are_resolved_inside_the_uri_r() {
        assert_eq!(
            ok("http://e.com/../../../../../canary/x"),
            "http://e.com/canary/x"
        );
        assert_eq!(
            ok("http://e.com/a/%2e%2e/%2E%2e/b?c=../d"),
            "http://e.com/b?c=../d"
        );
        assert_eq!(
            ok("http%3A%2F%2Fe.com%2Fa%2F..%2F..%2Fcanary"),
            "http://e.com/canary"
        );
        assert_eq!(ok("e.com/x/.%2e/y"), "http://e.com/y");
        assert_eq!(ok("http://e.com\\..\\..\\canary"), "http://e.com/canary");
    }

    #[test]
    fn dots_behind_encoded_separators_or_parameters_are_refused() {
        for raw in [
            "http://e.com/..%2f..%2f..%2fcanary/x1",
            "http://e.com/a/..%2F/b",
            "http://e.com/%2e%2e%2fcanary",
            "http://e.com/..%5ccanary",
            "http://e.com/..;/canary",
            "http://e.com/%2e%2e;x/canary",
            "e.com/a/.%2E%2Fcanary",
            // Encoded whole: `%252F` is `%2F` once decoded, still an encoded slash.
            "http%3A%2F%2Fe.com%2F..%252F..%252Fcanary",
        ] {
            let e = UriR::parse(raw).expect_err(raw);
            assert!(matches!(e, UriRError::EncodedDotSegment(_)), "{raw}: {e:?}");
            assert!(e.to_string().contains("encoded separator"), "{e}");
        }
        // In the query, or not a dot segment: kept.
        assert_eq!(ok("http://e.com/a?b=..%2f"), "http://e.com/a?b=..%2f");
        assert_eq!(ok("http://e.com/a%2fb;c"), "http://e.com/a%2fb;c");
    }

    #[test]
    fn control_characters_once_decoded_are_refused() {
        for raw in [
            "http%3A%2F%2Fe.com%2Fa%0D%0ASet-Cookie:x",
            "http%3A%2F%2Fe.com%2Fa%00",
            "http%3A%2F%2Fe.com%2Fa%09b",
            "http%3A%2F%2Fe.com%2Fa%7F",
            "http://e.com/a\tb",
        ] {
            let e = UriR::parse(raw).expect_err(raw);
            assert!(matches!(e, UriRError::Control(_)), "{raw}: {e:?}");
            assert!(e.to_string().contains("control character"));
        }
        // Percent-encoded and left so, a control is just text: the URL is valid.
        assert_eq!(ok("http://e.com/a%0D%0Ab"), "http://e.com/a%0D%0Ab");
    }

    #[test]
    fn error_lines_are_short() {
        let e = UriR::parse(&format!("ftp://{}", "é".repeat(2000))).expect_err("refused");
        assert!(e.to_string().len() < 300);
    }

    #[test]
    fn timeout_param_is_ours_only_with_a_duration() {
        assert_eq!(
            split_timeout_param("http://example.com/?timeout=5s", is_duration),
            ("http://example.com/".to_string(), Some("5s".to_string()))
        );
        assert_eq!(
            split_timeout_param("http://example.com/?a=1&timeout=500ms&b=2", is_duration),
            (
                "http://example.com/?a=1&b=2".to_string(),
                Some("500ms".to_string())
            )
        );
        assert_eq!(
            split_timeout_param("http://example.com/?timeout=never", is_duration),
            ("http://example.com/?timeout=never".to_string(), None)
        );
        assert_eq!(
            split_timeout_param("http://example.com/", is_duration),
            ("http://example.com/".to_string(), None)
        );
    }

    #[test]
    fn archives_param_is_ours_only_when_it_names_our_archives() {
        let ours = |v: &str| v.split(',').all(|id| ["ia", "pt"].contains(&id));
        let split_archives_param = |raw, ours| {
            let (rest, archives) = split_archives_param(raw, ours);
            (rest.into_owned(), archives)
        };
        assert_eq!(
            split_archives_param("http://e.com/?a=1&archives=ia,pt", ours),
            ("http://e.com/?a=1".to_string(), Some("ia,pt".to_string()))
        );
        assert_eq!(
            split_archives_param("http://e.com/?archives=x", ours),
            ("http://e.com/?archives=x".to_string(), None)
        );
        assert_eq!(
            split_archives_param("http://e.com/?archives=ia&archives=x", ours),
            (
                "http://e.com/?archives=x".to_string(),
                Some("ia".to_string())
            ),
        );
    }

    #[test]
    fn the_keys_carried_are_those_of_the_text_parsed_again() {
        // Resolving may change the text (dot segments, backslashes, a trailing `%2A`): the keys
        // carried must be the final text's, as a fresh parse of it gives them.
        for raw in [
            "http://WWW.Example.com:80/a/b?z=1&a=2",
            "example.com/a/../b/./c",
            "http://example.com/a\\..\\b",
            "http%3A%2F%2Fexample.com%2Fstar%2A",
            "https://user@example.co.uk/x",
            "http://[::1]:8080/",
            "http:/example.org/collapsed",
        ] {
            let u = UriR::parse(raw).expect(raw);
            let text = u.as_str();
            assert_eq!(
                u.canonical_key(),
                tmproxy_core::surt::canonical_key(text).as_deref(),
                "{raw}"
            );
            assert_eq!(u.routing_keys(), &UriKeys::of_uri(text), "{raw}");
        }
    }
}
