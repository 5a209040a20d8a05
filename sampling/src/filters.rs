//! The URL filters of the offline stages, each a pure predicate: session-id aliases (the IA surt
//! library's patterns), index-file aliases, likely HTML by extension (the paper's Table 3/4
//! heuristics), CDX wildcard URLs, and the MIME/year rules of the first-capture stage.

use regex::RegexSet;
use std::sync::OnceLock;

/// The session-id patterns of IA's surt library (URLRegexTransformer), case-insensitive. IA's
/// form is `^(.*)(?:ID)(?:&(.*))?$`: the id anywhere, then `&` or the end; so are these (and,
/// like IA's, `sid=` also matches inside `visid=`).
const SESSION_ID_PATTERNS: [&str; 5] = [
    r"(?i)jsessionid=[0-9a-z]{32}(?:&|$)",
    r"(?i)phpsessid=[0-9a-z]{32}(?:&|$)",
    r"(?i)sid=[0-9a-z]{32}(?:&|$)",
    r"(?i)aspsessionid[a-z]{8}=[a-z]{24}(?:&|$)",
    r"(?i)cfid=[^&]+&cftoken=[^&]+(?:&|$)",
];

fn session_ids() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    // The patterns are constants: a failure would be a bug caught by the tests below, and an
    // empty set (matching nothing) is the safe fallback.
    SET.get_or_init(|| RegexSet::new(SESSION_ID_PATTERNS).unwrap_or_else(|_| RegexSet::empty()))
}

/// True when the URL carries a session id (an alias of the URL without it).
pub fn has_session_id(url: &str) -> bool {
    // Cheap pre-check: every pattern needs an '='.
    url.contains('=') && session_ids().is_match(url)
}

/// The path of a URL (after the authority, before `?`/`#`), `/` when empty.
pub fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    match rest.find('/') {
        Some(i) => &rest[i..],
        None => "/",
    }
}

/// True for the root URL of a host (`/`, with or without a query).
pub fn is_root(url: &str) -> bool {
    path_of(url) == "/"
}

/// An index-file alias: the last path segment is `index.<letters>` (`index.html`, `index.php`,
/// `INDEX.ASP`) and there is no query (`index.php?limitstart=42` is a page of its own); the
/// host's root URL stands for it.
pub fn is_index_alias(url: &str) -> bool {
    if url.contains('?') {
        return false;
    }
    let path = path_of(url);
    let last = path.rsplit('/').next().unwrap_or("");
    let Some(ext) = last
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("index."))
        .and(last.get(6..))
    else {
        return false;
    };
    !ext.is_empty() && ext.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Which heuristic found a URL likely HTML (the paper measured each one's precision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HtmlHeuristic {
    /// No extension: a trailing slash or a last segment without a dot.
    NoExtension,
    /// `.html`, `.shtml`, `.xhtml`… (`\.[a-z]?html`), `.htm`.
    Html,
    /// `.php`, `.php3`… (`\.php\d?`).
    Php,
    /// `.asp`, `.aspx`, `.cgi`, `.jsp`, `.cfm`, `.pl`, `.do`.
    Script,
}

/// Likely HTML by the path's extension (lower-cased, query ignored); never `robots.txt`.
pub fn likely_html(url: &str) -> Option<HtmlHeuristic> {
    let path = path_of(url);
    let last = path.rsplit('/').next().unwrap_or("");
    if last.eq_ignore_ascii_case("robots.txt") {
        return None;
    }
    let Some((_, ext)) = last.rsplit_once('.') else {
        return Some(HtmlHeuristic::NoExtension);
    };
    let ext = ext.to_ascii_lowercase();
    let e = ext.as_str();
    if e == "htm" || e == "html" || (e.len() == 5 && e.ends_with("html")) {
        return Some(HtmlHeuristic::Html);
    }
    if e == "php" || (e.len() == 4 && e.starts_with("php") && e.as_bytes()[3].is_ascii_digit()) {
        return Some(HtmlHeuristic::Php);
    }
    matches!(e, "asp" | "aspx" | "cgi" | "jsp" | "cfm" | "pl" | "do")
        .then_some(HtmlHeuristic::Script)
}

/// A CDX wildcard query rather than a URL (one listed 140 M mementos).
pub fn is_wildcard(url: &str) -> bool {
    url.ends_with('*')
}

/// The root URL of a URL's host (scheme and authority kept).
pub fn root_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    format!("{scheme}://{authority}/")
}

/// The first-capture stage keeps `text/html` (parameters ignored, any case).
pub fn is_html_mime(mime: &str) -> bool {
    mime.split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html"))
}

/// The year bucket of a first capture: 1996–2000 is one bucket (labelled 2000); before 1996 is
/// refused (a 1979 capture exists), as is a timestamp that is not one.
pub fn year_bucket(timestamp: &str) -> Option<u16> {
    let year: u16 = timestamp.get(..4)?.parse().ok()?;
    match year {
        1996..=2000 => Some(2000),
        y if y > 2000 => Some(y),
        _ => None,
    }
}

/// A bucket's label: `1996-2000` or the year.
pub fn bucket_label(bucket: u16) -> String {
    if bucket == 2000 {
        "1996-2000".to_string()
    } else {
        bucket.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_five_session_id_patterns_match_case_insensitively() {
        let id32 = "0123456789abcdefABCDEF0123456789";
        for url in [
            format!("https://clickbank.com/index.html;jsessionid={id32}"),
            format!("https://a.com/x.php?PHPSESSID={id32}&page=2"),
            format!("https://a.com/x?sid={id32}"),
            "https://a.com/x.asp?ASPSESSIONIDQQGGQGPC=ABCDEFGHIJKLMNOPQRSTUVWX".to_string(),
            "https://a.com/x.cfm?CFID=123456&CFTOKEN=98765432".to_string(),
        ] {
            assert!(has_session_id(&url), "{url}");
        }
        assert!(!has_session_id("https://a.com/x?sid=short"));
        // 33 characters: not IA's 32 followed by `&` or the end.
        assert!(!has_session_id(
            "https://a.com/x?sid=0123456789abcdefABCDEF0123456789x"
        ));
        assert!(!has_session_id("https://a.com/plain"));
    }

    #[test]
    fn index_files_are_aliases_of_the_root() {
        assert!(is_index_alias("https://abc.es/index.asp"));
        assert!(is_index_alias("https://abc.es/index.html"));
        assert!(is_index_alias("https://cnn.com/INDEX.HTM"));
        assert!(!is_index_alias(
            "https://notiche.com.ar/index.php?limitstart=42"
        ));
        assert!(!is_index_alias("https://abc.es/"));
        assert!(!is_index_alias("https://abc.es/myindex.html"));
        assert!(!is_index_alias("https://abc.es/index.php3"));
        assert!(!is_index_alias("https://abc.es/index"));
        assert_eq!(
            root_of("https://abc.es:8080/index.html?x"),
            "https://abc.es:8080/"
        );
    }

    #[test]
    fn likely_html_follows_the_papers_heuristics() {
        use HtmlHeuristic::*;
        assert_eq!(likely_html("https://a.com/"), Some(NoExtension));
        assert_eq!(likely_html("https://a.com/about"), Some(NoExtension));
        assert_eq!(likely_html("https://a.com/a.HTM"), Some(Html));
        assert_eq!(likely_html("https://a.com/a.shtml"), Some(Html));
        assert_eq!(
            likely_html(
                "https://0001ktr.co.kr/bbs/bbs.php3?bbs_mode=list_form&com=bbs&db=freeboard&page_num=16"
            ),
            Some(Php)
        );
        assert_eq!(
            likely_html("https://notiche.com.ar/index.php?limitstart=42"),
            Some(Php)
        );
        assert_eq!(likely_html("https://a.com/x.aspx"), Some(Script));
        assert_eq!(likely_html("https://a.com/x.do"), Some(Script));
        // Table 2's non-HTML rows.
        assert_eq!(
            likely_html("https://brs53.dx.am/scripts/jquery.min.js"),
            None
        );
        assert_eq!(
            likely_html("https://174.127.81.0/t/87/73/25/1-320x240.jpg"),
            None
        );
        assert_eq!(
            likely_html("https://mf.ag/2121_de.gif?exp=24559886473100"),
            None
        );
        assert_eq!(likely_html("https://a.com/robots.txt"), None);
        // The query never decides.
        assert_eq!(likely_html("https://a.com/img.png?x=a.html"), None);
    }

    #[test]
    fn wildcards_mime_and_years() {
        assert!(is_wildcard("https://a.com/search?text=*"));
        assert!(!is_wildcard("https://a.com/a%2A"));
        assert!(is_html_mime("text/html; charset=utf-8"));
        assert!(is_html_mime("TEXT/HTML"));
        assert!(!is_html_mime("application/xhtml+xml"));
        assert_eq!(year_bucket("19970101000000"), Some(2000));
        assert_eq!(year_bucket("20040101"), Some(2004));
        assert_eq!(year_bucket("19790101000000"), None);
        assert_eq!(year_bucket("x"), None);
        assert_eq!(bucket_label(2000), "1996-2000");
    }
}
