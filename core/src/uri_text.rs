//! Pure text work on URIs that come from outside and go back out: dot segments, link-safe
//! escaping, and which URI-Ms may ever be served.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use std::borrow::Cow;

/// What may never appear raw in a URI we write: controls (C0 and DEL), space, `"`, `<` and `>`.
/// Non-ASCII is always encoded by `utf8_percent_encode`. `%` is not in the set, so escaping is
/// idempotent: an escaped URI (or one an archive percent-encoded) passes through unchanged.
const NOT_RAW_IN_LINKS: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'<').add(b'>');

/// `uri` as one link-format `<URI>` can hold it, and as a header value accepts it: the bytes of
/// `NOT_RAW_IN_LINKS` and non-ASCII percent-encoded (UTF-8), everything else as it was. A `>`
/// or `"` can then never end the URI early, so one URI is always one link. Borrows when there is
/// nothing to escape, which is almost always.
pub fn escape_uri(uri: &str) -> Cow<'_, str> {
    // Every URI of every answer passes here: the common case in one tight pass over the bytes,
    // the encoder's iterator only when something is to be escaped.
    if uri.bytes().fold(true, |raw, b| raw & raw_in_links(b)) {
        return Cow::Borrowed(uri);
    }
    utf8_percent_encode(uri, NOT_RAW_IN_LINKS).into()
}

/// Whether `b` stays as it is in a link: printable ASCII but for space, `"`, `<` and `>` (the
/// complement of [`NOT_RAW_IN_LINKS`] and non-ASCII).
fn raw_in_links(b: u8) -> bool {
    (0x21..0x7f).contains(&b) && !matches!(b, b'"' | b'<' | b'>')
}

/// Whether `s` holds a control character: C0, DEL, or (in non-ASCII text) C1.
pub fn has_control(s: &str) -> bool {
    // One pass without an early exit (which the compiler vectorises) for what may be one: a C0
    // byte, DEL or any non-ASCII byte; only then the chars, for C1. It runs on every URI-M.
    let suspect = s
        .bytes()
        .fold(false, |acc, b| acc | !(0x20..0x7f).contains(&b));
    suspect && s.chars().any(char::is_control)
}

/// Whether `uri_m` may be served (as a `Location`, a link, a JSON `uri`): an absolute `http://` or
/// `https://` URL with a non-empty host and no control character. `javascript:`, `data:`,
/// relative and host-less URIs are not. Cheap (no URL parse): it runs on every memento read.
pub fn is_servable_uri_m(uri_m: &str) -> bool {
    !has_control(uri_m) && is_http_with_host(uri_m)
}

/// [`is_servable_uri_m`] less its control-character check, for text already checked for
/// control characters: an absolute `http://` or `https://` URL with a non-empty host.
pub fn is_http_with_host(uri_m: &str) -> bool {
    let b = uri_m.as_bytes();
    let Some(rest) = http_prefix_len(b).and_then(|n| b.get(n..)) else {
        return false;
    };
    // One pass over the authority, noting where its host begins (after the last `@`): this
    // runs on every memento parsed and merged, where three searches cost more than the check.
    // WHATWG ends the authority at `\` too, for http(s).
    let mut host_start = 0;
    let mut end = rest.len();
    for (i, &c) in rest.iter().enumerate() {
        let class = AUTHORITY[c as usize];
        if class & (ENDS_AUTHORITY | BACKSLASH) != 0 {
            end = i;
            break;
        }
        if c == b'@' {
            host_start = i + 1;
        }
    }
    let host_port = &rest[host_start.min(end)..end];
    // The host ends at the port's `:`, or (an IPv6 literal) just after its `]`.
    match host_port.first() {
        None | Some(b':') => false,
        Some(b'[') => host_port.contains(&b']'),
        Some(_) => true,
    }
}

/// What a byte in an authority is, one table lookup a byte, for the scans of every URI-M
/// ([`is_http_with_host`], `identity::memento_key`): flags, as the two readings differ on `\`.
pub const AUTHORITY: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'/' as usize] = ENDS_AUTHORITY;
    t[b'?' as usize] = ENDS_AUTHORITY;
    t[b'#' as usize] = ENDS_AUTHORITY;
    t[b'\\' as usize] = BACKSLASH;
    t[b'@' as usize] = NOT_PLAIN_HOST;
    t[b':' as usize] = NOT_PLAIN_HOST;
    t[b'[' as usize] = NOT_PLAIN_HOST;
    let mut c = b'A';
    while c <= b'Z' {
        t[c as usize] = NOT_PLAIN_HOST;
        c += 1;
    }
    t
};
/// `/`, `?` or `#`: the authority ends.
pub const ENDS_AUTHORITY: u8 = 1;
/// `\`, which WHATWG reads as `/` in http(s) URLs.
pub const BACKSLASH: u8 = 2;
/// Userinfo's `@`, a port's `:`, an IPv6 literal's `[`, or upper case: the authority is not a
/// plain lower-case host.
pub const NOT_PLAIN_HOST: u8 = 4;

/// The length of `b`'s `http://` or `https://`, in any case; None when it has neither.
fn http_prefix_len(b: &[u8]) -> Option<usize> {
    let head: [u8; 4] = b.get(..4)?.try_into().ok()?;
    // Setting bit 0x20 lower-cases a letter, and only `H`/`h` become `h` (and so on): exact.
    if u32::from_le_bytes(head) | 0x2020_2020 != u32::from_le_bytes(*b"http") {
        return None;
    }
    match b.get(4..8)? {
        [b':', b'/', b'/', _] => Some(7),
        [s, b':', b'/', b'/'] if s | 0x20 == b's' => Some(8),
        _ => None,
    }
}

/// `s` without `prefix`, matched ignoring ASCII case; None when `s` does not start with it.
pub fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Whether `s` starts with `prefix`, ignoring ASCII case.
pub fn starts_with_ci(s: &str, prefix: &str) -> bool {
    strip_prefix_ci(s, prefix).is_some()
}

/// 1 for a `.` segment, 2 for `..`, 0 otherwise. `%2e` (any case) counts as a dot: RFC 3986
/// §6.2.2.2 makes it the same unreserved character, and the WHATWG parser behind `url` treats
/// `%2e%2e`, `.%2e` and `%2E.` as `..` when it parses the URL we send.
fn dot_segment(seg: &str) -> u8 {
    let mut rest = seg;
    let mut dots = 0u8;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
        } else if let Some(r) = strip_prefix_ci(rest, "%2e") {
            rest = r;
        } else {
            return 0;
        }
        dots += 1;
        if dots > 2 {
            return 0;
        }
    }
    dots
}

/// RFC 3986 §5.2.4 remove_dot_segments, with `%2e` read as `.` (see `dot_segment`). A `..`
/// above the root is dropped, so the result never climbs: `/a/../../b` is `/b`.
pub fn remove_dot_segments(path: &str) -> String {
    let absolute = path.starts_with('/');
    let body = if absolute { &path[1..] } else { path };
    let segments: Vec<&str> = body.split('/').collect();
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    let n = segments.len();
    for (i, seg) in segments.into_iter().enumerate() {
        let last = i + 1 == n;
        match dot_segment(seg) {
            0 => out.push(seg),
            dots => {
                if dots == 2 {
                    out.pop();
                }
                // `/a/..` and `/a/.` end in a directory: keep the trailing slash.
                if last {
                    out.push("");
                }
            }
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// An absolute http(s) URI-R with its path made plain: `\` in the path read as `/` (as the WHATWG
/// parser does for http(s)), then its dot segments removed. The scheme, authority, query and
/// every other byte stay as given. Idempotent; a URI without `://` is returned unchanged.
pub fn resolve_uri_r_path(uri: &str) -> Cow<'_, str> {
    let Some((path_start, path_end)) = path_span(uri) else {
        return Cow::Borrowed(uri);
    };
    let path = &uri[path_start..path_end];
    let plain = path.replace('\\', "/");
    let resolved = remove_dot_segments(&plain);
    if resolved == path {
        return Cow::Borrowed(uri);
    }
    Cow::Owned(format!(
        "{}{resolved}{}",
        &uri[..path_start],
        &uri[path_end..]
    ))
}

/// Where the path of an absolute URI (`scheme://authority/path?query#fragment`) starts and
/// ends, `\` counting as `/`; None without `://`.
fn path_span(uri: &str) -> Option<(usize, usize)> {
    let after = uri.find("://")? + 3;
    let rest = &uri[after..];
    let start = after + rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let tail = &uri[start..];
    Some((start, start + tail.find(['?', '#']).unwrap_or(tail.len())))
}

/// [`encoded_dot_segment`] in the path of the absolute URI `uri`.
pub fn encoded_dot_segment_in(uri: &str) -> Option<&str> {
    let (start, end) = path_span(uri)?;
    encoded_dot_segment(&uri[start..end])
}

/// The first piece of `path` that a front end decoding `%2F` and `%5C` as separators, or
/// dropping `;` path parameters (Tomcat), would read as a `.` or `..` segment: `..%2f`,
/// `%2e%2e%5c`, `..;x`, `.;`. Plain dot segments are [`remove_dot_segments`]'s; these survive
/// it, because to `url`, `http` and RFC 3986 an encoded slash is data and `..;` is not `..`,
/// while nginx, IIS or Tomcat in front of an archive resolve them and climb out of its prefix.
/// Meant for a path already through [`remove_dot_segments`]: a plain `..` is reported too.
pub fn encoded_dot_segment(path: &str) -> Option<&str> {
    let bytes = path.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i <= bytes.len() {
        let sep = match bytes.get(i) {
            None => Some(0),
            Some(b'/' | b'\\') => Some(1),
            Some(b'%') => path
                .get(i..i + 3)
                .filter(|e| e.eq_ignore_ascii_case("%2f") || e.eq_ignore_ascii_case("%5c"))
                .map(|_| 3),
            _ => None,
        };
        let Some(len) = sep else {
            i += 1;
            continue;
        };
        let piece = &path[start..i];
        // A `;` parameter is dropped by the servers that read one, whatever it holds.
        let name = piece.split(';').next().unwrap_or(piece);
        if dot_segment(name) > 0 {
            return Some(piece);
        }
        if len == 0 {
            break;
        }
        i += len;
        start = i;
    }
    None
}

/// A value from outside cut for an error line, so a reason stays one short line even for a
/// hostile 8 KiB input (on a character boundary, marked with `…` when cut).
pub fn clip(s: &str) -> String {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`is_servable_uri_m`] as `str::find` and `split` read it: what its byte loops must
    /// answer, on any text.
    fn servable_by_find(uri_m: &str) -> bool {
        if has_control(uri_m) {
            return false;
        }
        let Some(rest) =
            strip_prefix_ci(uri_m, "http://").or_else(|| strip_prefix_ci(uri_m, "https://"))
        else {
            return false;
        };
        let authority = &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())];
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if host_port.starts_with('[') {
            &host_port[..host_port.find(']').map_or(0, |i| i + 1)]
        } else {
            host_port.split(':').next().unwrap_or("")
        };
        !host.is_empty()
    }

    proptest::proptest! {
        #![proptest_config(crate::prop_tests::config())]

        #[test]
        fn servable_by_byte_loops_is_servable_by_str_find(
            uri_m in "(HTtp|https?|HtTpS|httpx|htt|ftp)?(://)?[aB@:\\[\\]]{0,8}[/?#\\\\a@:.é\t]{0,8}",
        ) {
            proptest::prop_assert_eq!(is_servable_uri_m(&uri_m), servable_by_find(&uri_m));
        }
    }

    #[test]
    fn a_control_is_c0_del_or_c1_and_nothing_else() {
        for b in 0u8..0x80 {
            let s = format!("http://a.test/{}", b as char);
            assert_eq!(has_control(&s), b < 0x20 || b == 0x7f, "{b:#x}");
        }
        assert!(has_control("http://a.test/\u{85}"), "C1 NEL");
        assert!(has_control("http://a.test/\u{9f}"));
        assert!(!has_control("http://a.test/é\u{a0}日本"));
        assert!(!has_control(""));
    }

    #[test]
    fn the_fast_path_escapes_exactly_what_the_encoder_does() {
        // Every byte alone and between others, and every char class of non-ASCII text.
        let mut cases: Vec<String> = (0u8..0x80)
            .map(|b| format!("http://a.test/x{}y", b as char))
            .collect();
        cases.extend(
            [
                "http://a.test/é",
                "http://a.test/\u{85}",
                "http://a.test/%20ok",
                "",
            ]
            .map(String::from),
        );
        for case in &cases {
            let slow: Cow<str> = utf8_percent_encode(case, NOT_RAW_IN_LINKS).into();
            assert_eq!(escape_uri(case), slow, "{case:?}");
        }
        assert!(matches!(
            escape_uri("http://a.test/plain?q=1#f"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn rfc_3986_examples() {
        // RFC 3986 §5.2.4 and §5.4 (the paths of the normal and abnormal examples).
        assert_eq!(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
        assert_eq!(remove_dot_segments("mid/content=5/../6"), "mid/6");
        assert_eq!(remove_dot_segments("/b/c/./g"), "/b/c/g");
        assert_eq!(remove_dot_segments("/b/c/."), "/b/c/");
        assert_eq!(remove_dot_segments("/b/c/.."), "/b/");
        assert_eq!(remove_dot_segments("/b/c/../.."), "/");
        assert_eq!(remove_dot_segments("/../g"), "/g");
        assert_eq!(remove_dot_segments("/../../../g"), "/g");
        assert_eq!(remove_dot_segments("/b/c/g."), "/b/c/g.");
        assert_eq!(remove_dot_segments("/b/c/..g"), "/b/c/..g");
        assert_eq!(remove_dot_segments("/b/c/.../g"), "/b/c/.../g");
        assert_eq!(remove_dot_segments("/a//b/../c"), "/a//c");
        assert_eq!(remove_dot_segments("/"), "/");
        assert_eq!(remove_dot_segments(""), "");
    }

    #[test]
    fn percent_encoded_dots_are_dots() {
        for climb in ["%2e%2e", "%2E%2e", ".%2e", "%2E.", "%2e."] {
            assert_eq!(
                remove_dot_segments(&format!("/a/b/{climb}/{climb}/{climb}/c")),
                "/c",
                "{climb}"
            );
        }
        assert_eq!(remove_dot_segments("/a/%2e/b"), "/a/b");
        // Not dot segments: a third dot, an encoded slash, other escapes.
        assert_eq!(remove_dot_segments("/a/%2e%2e%2e/b"), "/a/%2e%2e%2e/b");
        assert_eq!(remove_dot_segments("/a/..%2f/b"), "/a/..%2f/b");
        assert_eq!(remove_dot_segments("/a/%2f../b"), "/a/%2f../b");
    }

    #[test]
    fn dots_behind_encoded_separators_or_parameters_are_found() {
        for bad in [
            "/..%2f..%2f..%2fcanary/x1",
            "/a/..%2F..%2Fcanary",
            "/%2e%2e%2fcanary",
            "/%2E%2e%2Fcanary",
            "/..%5ccanary",
            "/a%5C..%5Ccanary",
            "/..;/canary",
            "/a/..;x/canary",
            "/%2e%2e;x/canary",
            "/.;/canary",
            "/a/b%2f..",
            "/a%2f.%2fb",
        ] {
            assert!(encoded_dot_segment(bad).is_some(), "{bad}");
        }
        for fine in [
            "/",
            "",
            "/a/b/c",
            "/a/...%2fb",
            "/a/..b%2fc",
            "/a;b/c",
            "/a%2fb",
            "/%2e%2e%2e/x",
            "/a/.well-known/x",
        ] {
            assert_eq!(encoded_dot_segment(fine), None, "{fine}");
        }
        assert_eq!(encoded_dot_segment("/x/..%2fy"), Some(".."));
        assert_eq!(encoded_dot_segment("/x/%2e%2e;p/y"), Some("%2e%2e;p"));
    }

    #[test]
    fn uri_r_paths_are_resolved_and_backslashes_are_slashes() {
        assert_eq!(
            resolve_uri_r_path("http://e.com/../../../../../canary/x"),
            "http://e.com/canary/x"
        );
        assert_eq!(
            resolve_uri_r_path("http://e.com/a/%2e%2e/%2E%2e/%2e./canary?q=/../x"),
            "http://e.com/canary?q=/../x"
        );
        assert_eq!(
            resolve_uri_r_path("http://e.com\\..\\..\\canary\\x"),
            "http://e.com/canary/x"
        );
        assert_eq!(
            resolve_uri_r_path("HTTP://User@E.com:81/a/./b/..#f"),
            "HTTP://User@E.com:81/a/#f"
        );
        // Nothing to do: borrowed, byte for byte.
        for same in [
            "http://e.com",
            "http://e.com?x=..",
            "https://e.com/a/b?c=../d",
        ] {
            assert!(matches!(resolve_uri_r_path(same), Cow::Borrowed(s) if s == same));
        }
        let once = resolve_uri_r_path("http://e.com/a/../..\\b/./").into_owned();
        assert_eq!(once, "http://e.com/b/");
        assert_eq!(resolve_uri_r_path(&once), once);
    }

    #[test]
    fn escaping_keeps_one_uri_one_link() {
        assert_eq!(
            escape_uri("http://e.com/inj>; rel=\"memento\", <https://evil.example/phish"),
            "http://e.com/inj%3E;%20rel=%22memento%22,%20%3Chttps://evil.example/phish"
        );
        assert_eq!(
            escape_uri("http://e.com/a\r\n\0\tb\x7f"),
            "http://e.com/a%0D%0A%00%09b%7F"
        );
        assert_eq!(
            escape_uri("http://例え.jp/é"),
            "http://%E4%BE%8B%E3%81%88.jp/%C3%A9"
        );
        let plain = "https://web.archive.org/web/2001/http://a.org/?x=%3E&y=a,b;c";
        assert!(matches!(escape_uri(plain), Cow::Borrowed(s) if s == plain));
        let once = escape_uri("http://e.com/<\"> é").into_owned();
        assert_eq!(escape_uri(&once), once, "idempotent");
    }

    #[test]
    fn only_absolute_http_uri_ms_with_a_host_are_servable() {
        for good in [
            "http://a.org/x",
            "HTTPS://a.org",
            "https://u:p@a.org:8080/x?y#z",
            "http://[::1]:80/",
            "http://a.org/x y\"",
            "http://例え.jp/",
        ] {
            assert!(is_servable_uri_m(good), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript://a.org/%0aalert(1)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://a.org/",
            "/web/2001/http://a.org/",
            "//a.org/x",
            "http://",
            "http:///x",
            "http://@/x",
            "http://:80/",
            "http:a.org",
            "http://a.org/\0",
            "http://a.org/\r\nx",
            "http://a.org/\tx",
            "http://a.org/\u{85}",
            "",
        ] {
            assert!(!is_servable_uri_m(bad), "{bad:?}");
        }
    }
}
