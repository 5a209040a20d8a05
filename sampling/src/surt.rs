//! SURT keys (Sort-friendly URI Reordering Transform, as the Wayback index writes them) to URLs
//! and back to a host key, with the fixes `docs/sampling.md` asks for.
//!
//! Our own code rather than a crate: the only Rust `surt` crates we found implement IA's
//! canonicalizer (URL → SURT) and none the reverse, and the behaviours the pipeline depends on
//! are exactly where IA's library falls short: a `:port` must survive (`com,example:8080)/` →
//! `https://example.com:8080/`, which the published NYPW script breaks), and `www\d*.` must only
//! be stripped when the host keeps at least two dots (IA strips it always, so `www1355544.com`
//! and `www3288.com` both collapse to `com)/`). Pure functions over `&str`.

/// A SURT key split into its parts: host labels in URL order, optional port, path (with query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurtParts<'a> {
    /// `com,example,www` → `www.example.com`.
    pub host: String,
    pub port: Option<&'a str>,
    /// From the `/` after `)`; `/` when the key has nothing after `)`.
    pub path: &'a str,
}

/// Why a SURT key is not a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidSurt {
    /// No `)` closes the host part.
    NoClosingParen,
    /// Nothing before `)` (`https:///?dn=…`).
    NoHost,
    /// A `*` in the host (`https://*/robots.txt`).
    WildcardHost,
    /// A character no host may hold (space, `/`, `?`, `#`, `@`, control).
    BadHostChar,
    /// A port that is not 1–65535.
    BadPort,
    /// Host characters that pass the checks above but make no host a URL can have: a `:` left
    /// of the port, `%`, `[`, `|`, an invalid IDN (`xn--имер`), `1.2.3.4.5`, …
    NotAHost,
    /// A control character (CR, LF, NUL…) in the path or query: the URL parser would drop it
    /// silently, and a line-based output (NDJSON, CDX) would be cut by it.
    ControlInPath,
}

impl InvalidSurt {
    pub fn reason(self) -> &'static str {
        match self {
            InvalidSurt::NoClosingParen => "SURT without ')'",
            InvalidSurt::NoHost => "no host",
            InvalidSurt::WildcardHost => "'*' in the host",
            InvalidSurt::BadHostChar => "invalid character in the host",
            InvalidSurt::BadPort => "invalid port",
            InvalidSurt::NotAHost => "not a valid host name",
            InvalidSurt::ControlInPath => "control character in the path",
        }
    }
}

/// Splits a SURT key (`com,example:8080)/a?b`); a scheme prefix (`http://(`) is tolerated.
pub fn parse(key: &str) -> Result<SurtParts<'_>, InvalidSurt> {
    let key = key
        .strip_prefix("http://(")
        .or_else(|| key.strip_prefix("https://("))
        .unwrap_or(key);
    let close = key.find(')').ok_or(InvalidSurt::NoClosingParen)?;
    let (host_part, rest) = (&key[..close], &key[close + 1..]);
    let (labels, port) = match host_part.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host_part, None),
    };
    if let Some(p) = port {
        // Digits only: `u32::from_str` also takes a leading `+`, which no URL port may have.
        let digits = p.bytes().all(|b| b.is_ascii_digit());
        match p.parse::<u32>() {
            Ok(n) if digits && (1..=65_535).contains(&n) => {}
            _ => return Err(InvalidSurt::BadPort),
        }
    }
    let labels = labels.trim_end_matches(',');
    if labels.is_empty() {
        return Err(InvalidSurt::NoHost);
    }
    if labels.contains('*') {
        return Err(InvalidSurt::WildcardHost);
    }
    if labels
        .bytes()
        .any(|b| b <= b' ' || matches!(b, b'/' | b'?' | b'#' | b'@' | b'\\'))
    {
        return Err(InvalidSurt::BadHostChar);
    }
    let mut host = String::with_capacity(labels.len());
    for (i, label) in labels.rsplit(',').enumerate() {
        if label.is_empty() {
            return Err(InvalidSurt::NoHost);
        }
        if i > 0 {
            host.push('.');
        }
        host.push_str(label);
    }
    // What the URL parser will make of the host, so that every key we turn into a URL gives one
    // that parses (IDNA, forbidden code points, IPv4 forms). Only the verdict is used: the URL
    // keeps the host as the key spells it.
    if url::Host::parse(&host).is_err() {
        return Err(InvalidSurt::NotAHost);
    }
    if rest.chars().any(char::is_control) {
        return Err(InvalidSurt::ControlInPath);
    }
    let path = if rest.is_empty() { "/" } else { rest };
    Ok(SurtParts { host, port, path })
}

/// The URL a SURT key stands for (`https`, as the NYPW method writes them).
pub fn to_url(key: &str) -> Result<String, InvalidSurt> {
    let p = parse(key)?;
    let mut url = String::with_capacity(p.host.len() + p.path.len() + 16);
    url.push_str("https://");
    url.push_str(&p.host);
    if let Some(port) = p.port {
        url.push(':');
        url.push_str(port);
    }
    if !p.path.starts_with('/') {
        url.push('/');
    }
    url.push_str(p.path);
    Ok(url)
}

/// How a key spells its host part around the labels: the scheme prefix it carries (`http://(`,
/// `https://(` or none) and the commas after its last label. Within one spelling a URL's host
/// and port come from one host part only; across spellings two can give the same URL
/// (`com,example)/` and `com,example,)/`, or `http://(…` and `https://(…`), and sort apart.
/// An IPv4 host has no labels to reverse and says nothing about the commas (`None`): the
/// `surt` tools write `http://(127.0.0.1)/` beside `http://(com,example,)/` in one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    pub prefix: &'static str,
    pub trailing_commas: Option<usize>,
}

/// The spelling of a key `parse` accepts (of any key: it reads only the host part's edges).
pub fn spelling(key: &str) -> Spelling {
    let (prefix, rest) = ["http://(", "https://("]
        .iter()
        .find_map(|p| key.strip_prefix(p).map(|r| (*p, r)))
        .unwrap_or(("", key));
    let host_part = rest.split(')').next().unwrap_or("");
    // As `parse` splits it: the port is after the last ':'.
    let labels = host_part.rsplit_once(':').map_or(host_part, |(h, _)| h);
    let bare = labels.trim_end_matches(',');
    let ip = bare.parse::<std::net::Ipv4Addr>().is_ok();
    Spelling {
        prefix,
        trailing_commas: (!ip).then_some(labels.len() - bare.len()),
    }
}

// The `www` rule and host keys are shared with the cache's canonical key.
pub use tmproxy_core::surt::{host_key, ia_strip_www, strip_www};

/// The host of a URL (lower-cased, without port or user info), if it has one.
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host_port,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// A SURT key whose host part IA's `www\d*.` rule collapsed from a different host: the
/// `original` URL's host, keyed by IA's rule, differs from what our rule keeps. Returns the
/// host the key lost (e.g. `www1355544.com` behind `com)/`).
pub fn www_collision(key_host: &str, original_host: &str) -> Option<String> {
    let ours = strip_www(original_host);
    let ia = ia_strip_www(original_host);
    (ours != ia && key_host == ia).then(|| original_host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_https_urls_with_path_query_and_port() {
        assert_eq!(
            to_url("com,example)/a/b?c=1").as_deref(),
            Ok("https://example.com/a/b?c=1")
        );
        assert_eq!(
            to_url("com,example:8080)/").as_deref(),
            Ok("https://example.com:8080/")
        );
        assert_eq!(
            to_url("ar,com,notiche)/index.php?limitstart=42").as_deref(),
            Ok("https://notiche.com.ar/index.php?limitstart=42")
        );
        assert_eq!(
            to_url("com,example)").as_deref(),
            Ok("https://example.com/")
        );
        // An IP address stays in order: its labels are reversed like any other.
        assert_eq!(
            to_url("0,81,127,174)/t/87/73/25/1-320x240.jpg").as_deref(),
            Ok("https://174.127.81.0/t/87/73/25/1-320x240.jpg")
        );
    }

    #[test]
    fn the_papers_invalid_urls_are_refused_with_a_reason() {
        // Table 2: https:///?dn=renunciationguide.com&flrdr=yes&nxte=css and https://*/robots.txt
        assert_eq!(
            to_url(")/?dn=renunciationguide.com&flrdr=yes&nxte=css"),
            Err(InvalidSurt::NoHost)
        );
        assert_eq!(to_url("*)/robots.txt"), Err(InvalidSurt::WildcardHost));
        assert_eq!(to_url("com,example/a"), Err(InvalidSurt::NoClosingParen));
        assert_eq!(to_url("com,example:99999)/"), Err(InvalidSurt::BadPort));
        assert_eq!(to_url("com,,example)/"), Err(InvalidSurt::NoHost));
        assert_eq!(to_url("com,exa mple)/"), Err(InvalidSurt::BadHostChar));
    }

    #[test]
    fn a_spelling_is_the_prefix_and_the_commas_after_the_last_label() {
        let sp = |k| {
            let s = spelling(k);
            (s.prefix, s.trailing_commas)
        };
        assert_eq!(sp("com,example)/a"), ("", Some(0)));
        assert_eq!(sp("com,example:8080)/a,b"), ("", Some(0)));
        assert_eq!(sp("com,example,)/"), ("", Some(1)));
        assert_eq!(sp("http://(com,example,:8080)/"), ("http://(", Some(1)));
        assert_eq!(sp("https://(com,example,,)/"), ("https://(", Some(2)));
        assert_eq!(sp("http://(127.0.0.1)/"), ("http://(", None));
        assert_eq!(sp("127.0.0.1,:8080)/"), ("", None));
    }

    #[test]
    fn a_signed_port_is_refused() {
        // Found by the `surt` fuzz target: `+808` parsed as port 808 and gave
        // `https://example.so:+808/`, which is not a URL.
        assert_eq!(to_url("so,example:+808)/"), Err(InvalidSurt::BadPort));
        assert_eq!(to_url("com,example:-1)/"), Err(InvalidSurt::BadPort));
        assert_eq!(
            to_url("com,example:0808)/").as_deref(),
            Ok("https://example.com:0808/")
        );
    }

    #[test]
    fn hosts_no_url_parser_accepts_are_refused() {
        // Found by the `surt` fuzz target: each gave a "URL" that `url::Url::parse` refuses.
        for key in [
            "\u{fffd})",
            "xn--p1ai,xn--\u{438}\u{43c}\u{435}\u{440})/",
            "com,a:b:80)/",
            "com,ex%zzample)/",
            "com,ex|ample)/",
            "5,4,3,2,1)/",
        ] {
            assert_eq!(to_url(key), Err(InvalidSurt::NotAHost), "{key:?}");
        }
        // Found by the cdx_line fuzz target: a CR inside a key reached the sampled URL, where
        // `url` drops it but a line-based output file would break the line.
        for key in [
            "com,example)/a\rb",
            "com,example)/a\nb?q=1",
            "com,example)/\u{0}",
        ] {
            assert_eq!(to_url(key), Err(InvalidSurt::ControlInPath), "{key:?}");
        }
        // Internationalised and IP hosts that are valid stay as they are.
        assert_eq!(
            to_url("xn--p1ai,xn--e1afmkfd)/").as_deref(),
            Ok("https://xn--e1afmkfd.xn--p1ai/")
        );
        assert_eq!(
            to_url("\u{440}\u{444},\u{43f}\u{440}\u{438}\u{43c}\u{435}\u{440})/").as_deref(),
            Ok("https://\u{43f}\u{440}\u{438}\u{43c}\u{435}\u{440}.\u{440}\u{444}/")
        );
    }

    #[test]
    fn www_is_stripped_only_when_two_dots_remain() {
        assert_eq!(strip_www("www.example.com"), "example.com");
        assert_eq!(strip_www("www2.example.com"), "example.com");
        assert_eq!(strip_www("www1355544.com"), "www1355544.com");
        assert_eq!(strip_www("www3288.com"), "www3288.com");
        assert_eq!(strip_www("wwwhat.example.com"), "wwwhat.example.com");
        // IA's rule collapses them all to the bare TLD.
        assert_eq!(host_key("www1355544.com"), "com");
        assert_eq!(host_key("www3288.com"), "com");
        assert_eq!(host_key("www.example.com"), "com,example");
    }

    #[test]
    fn a_collision_names_the_host_the_key_lost() {
        assert_eq!(
            www_collision("com", "www1355544.com").as_deref(),
            Some("www1355544.com")
        );
        assert_eq!(www_collision("example.com", "www.example.com"), None);
        assert_eq!(
            url_host("https://User@WWW3288.com:80/x?y"),
            Some("www3288.com".into())
        );
    }
}
