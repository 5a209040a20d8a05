//! What makes two listed mementos one: equal URI-Ms, once scheme and host case and a default
//! port are set aside. Nothing else: two different URI-Ms at the same second are two mementos,
//! within one archive's TimeMap and across archives alike (docs/api.md, "Distinct
//! mementos").
//!
//! Why not the datetime: archives with one-second datetimes list distinct captures at one
//! second (an aggregator's TimeMap does so whenever two archives captured the same second), and
//! a client following the TimeMap must reach every one of them. Why these normalisations and no
//! more: they name the same resource by RFC 3986 §6.2.2–6.2.3, while path, query and percent
//! spellings are the archive's own and may address different captures.

use crate::uri_text::{AUTHORITY, ENDS_AUTHORITY, NOT_PLAIN_HOST};
use rustc_hash::FxBuildHasher;
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// The form of `uri_m` two mementos are compared by: scheme and host lower-cased, `:80` after
/// an http host and `:443` after an https one dropped. Borrowed when `uri_m` is already so
/// (nearly always), so comparing costs no allocation.
pub fn memento_key(uri_m: &str) -> Cow<'_, str> {
    if is_own_key(uri_m) {
        return Cow::Borrowed(uri_m);
    }
    key_by_parts(uri_m)
}

/// Whether `uri_m` is its own key at a glance, as nearly every URI-M an archive lists is: an
/// `http://` or `https://` whose authority has no upper case and no `@`, `:` or `[` (no
/// userinfo, no port, no IPv6 literal). One pass over the authority, where taking it apart
/// into [`Parts`] makes several (every memento of every listing and merge is keyed).
fn is_own_key(uri_m: &str) -> bool {
    let b = uri_m.as_bytes();
    let authority = match b.strip_prefix(b"http://") {
        Some(rest) => rest,
        None => match b.strip_prefix(b"https://") {
            Some(rest) => rest,
            None => return false,
        },
    };
    // A table lookup a byte: a `match` on nine candidates was most of a key's cost.
    for &c in authority {
        let class = AUTHORITY[c as usize];
        if class & ENDS_AUTHORITY != 0 {
            return true;
        }
        if class & NOT_PLAIN_HOST != 0 {
            return false;
        }
    }
    true
}

/// [`memento_key`] by taking `uri_m` apart: for any text.
fn key_by_parts(uri_m: &str) -> Cow<'_, str> {
    let Some(p) = Parts::of(uri_m) else {
        return Cow::Borrowed(uri_m);
    };
    let lower = |s: &str| !s.bytes().any(|b| b.is_ascii_uppercase());
    if !p.default_port && lower(p.scheme) && lower(p.host) {
        return Cow::Borrowed(uri_m);
    }
    let mut key = String::with_capacity(uri_m.len());
    key.push_str(&p.scheme.to_ascii_lowercase());
    key.push_str("://");
    key.push_str(&p.authority[..p.host_start]);
    key.push_str(&p.host.to_ascii_lowercase());
    if let (Some(port), false) = (p.port, p.default_port) {
        key.push(':');
        key.push_str(port);
    }
    key.push_str(&uri_m[p.authority_end..]);
    Cow::Owned(key)
}

/// The site a URI-M is on, as [`memento_key`] compares it: the lower-case host, with its port
/// unless that is the scheme's default. None without a `scheme://host`.
pub fn site(uri_m: &str) -> Option<Cow<'_, str>> {
    let p = Parts::of(uri_m)?;
    if p.host.is_empty() {
        return None;
    }
    let host = if p.host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(p.host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(p.host)
    };
    Some(match p.port {
        Some(port) if !p.default_port => Cow::Owned(format!("{host}:{port}")),
        _ => host,
    })
}

/// A URI-M's pieces the comparison reads.
struct Parts<'a> {
    scheme: &'a str,
    authority: &'a str,
    authority_end: usize,
    host_start: usize,
    host: &'a str,
    port: Option<&'a str>,
    default_port: bool,
}

impl<'a> Parts<'a> {
    /// By byte loops, not `str::find`: URI-M authorities are a few dozen bytes, and the
    /// searchers' set-up cost more than the search on every memento of every merge.
    fn of(uri_m: &'a str) -> Option<Parts<'a>> {
        let b = uri_m.as_bytes();
        // The first `://`, as `find("://")` would have it.
        let colon = (0..b.len().saturating_sub(2)).find(|&i| &b[i..i + 3] == b"://")?;
        let scheme = &uri_m[..colon];
        let after = colon + 3;
        let authority_end = b[after..]
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#'))
            .map_or(b.len(), |i| after + i);
        let authority = &uri_m[after..authority_end];
        let a = authority.as_bytes();
        // Userinfo is the archive's own spelling; only what follows it is the host.
        let host_start = a.iter().rposition(|&c| c == b'@').map_or(0, |i| i + 1);
        let host_port = &a[host_start..];
        // A bracketed IPv6 literal holds colons of its own: the port follows its `]`.
        let port_at = match host_port.iter().rposition(|&c| c == b']') {
            Some(close) => host_port[close..]
                .iter()
                .position(|&c| c == b':')
                .map(|i| close + i),
            None => host_port.iter().rposition(|&c| c == b':'),
        };
        let host_port = &authority[host_start..];
        // The positions found are of ASCII bytes: char boundaries.
        let (host, port) = match port_at {
            Some(i) => (&host_port[..i], Some(&host_port[i + 1..])),
            None => (host_port, None),
        };
        let default_port = match port {
            Some(p) if scheme.eq_ignore_ascii_case("http") => p == "80",
            Some(p) if scheme.eq_ignore_ascii_case("https") => p == "443",
            _ => false,
        };
        Some(Parts {
            scheme,
            authority,
            authority_end,
            host_start,
            host,
            port,
            default_port,
        })
    }
}

/// Whether each of `uri_ms` is the first of its memento (by [`memento_key`]): the flags to keep.
pub fn first_of_each<'a>(uri_ms: impl Iterator<Item = &'a str> + Clone) -> Vec<bool> {
    firsts(uri_ms).into_iter().map(|f| f.is_none()).collect()
}

/// For each of `uri_ms`, None when it is the first of its memento (by [`memento_key`]), else
/// the position of that first. In 16 bytes a URI-M: their keys' 64-bit hashes are sorted with
/// their positions, and only positions whose hash repeats (the same memento listed twice, or a
/// collision) have their keys put in a map. A map of every key would cost its strings again.
pub fn firsts<'a>(uri_ms: impl Iterator<Item = &'a str> + Clone) -> Vec<Option<u32>> {
    firsts_by(uri_ms, |key| FxBuildHasher.hash_one(key))
}

/// [`firsts`] with the keys hashed by `hash`.
fn firsts_by<'a>(
    uri_ms: impl Iterator<Item = &'a str> + Clone,
    hash: impl Fn(&str) -> u64,
) -> Vec<Option<u32>> {
    let mut hashed: Vec<(u64, u32)> = uri_ms
        .clone()
        .enumerate()
        .map(|(i, u)| (hash(&memento_key(u)), i as u32))
        .collect();
    let mut first = vec![None; hashed.len()];
    hashed.sort_unstable();
    if !hashed.windows(2).any(|w| w[0].0 == w[1].0) {
        return first;
    }
    let all: Vec<&str> = uri_ms.collect();
    // Keyed SipHash within a run: URI-Ms come from archives, and keys forged to share an
    // FxHash must not make the comparison quadratic.
    let mut seen: HashMap<Cow<str>, u32> = HashMap::new();
    for run in hashed.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
        seen.clear();
        // Positions ascend within a run: the earliest of a memento is met first.
        for &(_, at) in run {
            match seen.entry(memento_key(all[at as usize])) {
                Entry::Occupied(e) => first[at as usize] = Some(*e.get()),
                Entry::Vacant(e) => {
                    e.insert(at);
                }
            }
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_and_host_case_and_a_default_port_are_set_aside() {
        let same = [
            (
                "http://web.archive.org/web/1/x",
                "HTTP://Web.Archive.org:80/web/1/x",
            ),
            ("https://a.example/p", "https://A.EXAMPLE:443/p"),
            ("http://[::1]/p", "http://[::1]:80/p"),
            ("http://u@h.example/p", "http://u@H.example:80/p"),
        ];
        for (a, b) in same {
            assert_eq!(memento_key(a), memento_key(b), "{a} and {b}");
        }
        let different = [
            ("http://h.example/Path", "http://h.example/path"),
            ("http://h.example:8080/p", "http://h.example/p"),
            ("https://h.example:80/p", "https://h.example/p"),
            ("http://h.example/p", "https://h.example/p"),
            ("http://U@h.example/p", "http://u@h.example/p"),
            ("http://h.example/p?a=1", "http://h.example/p?A=1"),
        ];
        for (a, b) in different {
            assert_ne!(memento_key(a), memento_key(b), "{a} and {b}");
        }
        assert!(matches!(
            memento_key("http://h.example/P"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(memento_key("not a url"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_first_of_each_memento_is_kept_wherever_the_repeats_are() {
        let uris = [
            "http://ia.example/web/19990125093238/http://a.com/",
            "http://bibalex.example:80/web/19990125093238/http://a.com/",
            "http://IA.example:80/web/19990125093238/http://a.com/",
            "http://ia.example/web/20000101000000/http://a.com/",
            "http://bibalex.example/web/19990125093238/http://a.com/",
            "http://ia.example/web/19990125093238/http://a.com/",
        ];
        let keep = first_of_each(uris.iter().copied());
        assert_eq!(keep, [true, true, false, true, false, false]);
        assert!(first_of_each(std::iter::empty()).is_empty());
        assert_eq!(first_of_each(["x"].into_iter()), [true]);
    }

    /// Scheme, authority, its end, the host's start in it, host and port.
    type Pieces<'a> = (&'a str, &'a str, usize, usize, &'a str, Option<&'a str>);

    /// The pieces as `str::find` takes them apart: what the byte loops of `Parts::of` must
    /// find, on any text.
    fn parts_by_find(uri_m: &str) -> Option<Pieces<'_>> {
        let colon = uri_m.find("://")?;
        let after = colon + 3;
        let authority_end = uri_m[after..]
            .find(['/', '?', '#'])
            .map_or(uri_m.len(), |i| after + i);
        let authority = &uri_m[after..authority_end];
        let host_start = authority.rfind('@').map_or(0, |i| i + 1);
        let host_port = &authority[host_start..];
        let port_at = match host_port.rfind(']') {
            Some(close) => host_port[close..].find(':').map(|i| close + i),
            None => host_port.rfind(':'),
        };
        let (host, port) = match port_at {
            Some(i) => (&host_port[..i], Some(&host_port[i + 1..])),
            None => (host_port, None),
        };
        Some((
            &uri_m[..colon],
            authority,
            authority_end,
            host_start,
            host,
            port,
        ))
    }

    proptest::proptest! {
        #![proptest_config(crate::prop_tests::config())]

        #[test]
        fn the_byte_loops_find_what_str_find_finds(
            uri_m in "(https?|[a-z:/]{0,3})(://)?[aB:/@\\[\\]?#8.é]{0,20}",
        ) {
            let got = Parts::of(&uri_m)
                .map(|p| (p.scheme, p.authority, p.authority_end, p.host_start, p.host, p.port));
            proptest::prop_assert_eq!(got, parts_by_find(&uri_m));
        }

        #[test]
        fn a_uri_m_taken_as_its_own_key_is_its_key_by_parts(
            uri_m in "(https?|HTTP|[a-z:/]{0,3})(://)?[aB:/@\\[\\]?#8.é]{0,20}",
        ) {
            if is_own_key(&uri_m) {
                let by_parts = key_by_parts(&uri_m);
                proptest::prop_assert!(matches!(by_parts, Cow::Borrowed(_)));
                proptest::prop_assert_eq!(by_parts, uri_m.as_str());
            }
        }
    }

    #[test]
    fn keys_whose_hashes_collide_are_compared_as_strings() {
        let uris = [
            "http://h/1",
            "http://h/2",
            "HTTP://h/1",
            "http://h/3",
            "http://h/2",
        ];
        let got = firsts_by(uris.iter().copied(), |_| 7);
        assert_eq!(got, [None, None, Some(0), None, Some(1)]);
    }
}
