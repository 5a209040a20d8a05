//! A memento's raw form: the bytes as the archive captured them. A Wayback-style archive (the
//! Internet Archive's Wayback, pywb, OpenWayback) lists `…/{14 digits}/{URI-R}` or
//! `…/{14 digits}mp_/{URI-R}`, its replay page (links rewritten, a banner added), and serves the
//! capture unmodified at `…/{14 digits}id_/{URI-R}`. `/memento/proxy` asks that form first, made
//! here from the URI-M the archive listed and the archive's `raw` setting ([`RawForm`]).

use crate::cdx::replay::Replay;

/// How an archive's raw form is made from a URI-M it listed (`[[archives]] raw`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RawForm {
    /// `raw = false`: none; the listed URI-M only.
    Off,
    /// `raw = true`, the default: the Wayback segment's modifier, if any, becomes `id_`.
    #[default]
    Id,
    /// `raw = "<template>"`: the template with the Wayback segment's 14 digits as `{timestamp}`
    /// and what follows that segment as `{url}` (the syntax of a CDX archive's `replay`).
    Template(Replay),
}

impl RawForm {
    pub fn is_default(&self) -> bool {
        *self == RawForm::Id
    }
}

/// The raw form of `uri_m`, or None when `form` is off or `uri_m` has no Wayback segment: a
/// path segment of 14 digits, optionally followed by a two-letter modifier and `_` (`mp_`,
/// `im_`, `id_`…), then `/` and the URI-R. Only the first such segment counts, and only before
/// the URI-R the URI-M carries (a segment ending in `:`, its scheme), so a date in the URI-R's
/// own path is never taken for the capture's. The result may equal `uri_m` (already `id_`).
pub fn raw_uri_m(uri_m: &str, form: &RawForm) -> Option<String> {
    if *form == RawForm::Off {
        return None;
    }
    let seg = wayback_segment(uri_m)?;
    let timestamp = &uri_m[seg.start..seg.start + 14];
    match form {
        RawForm::Off => None,
        RawForm::Id => Some(format!(
            "{}{timestamp}id_{}",
            &uri_m[..seg.start],
            &uri_m[seg.end..]
        )),
        RawForm::Template(t) => Some(t.uri_m(timestamp, &uri_m[seg.end + 1..])),
    }
}

/// Where a Wayback segment lies in a URI-M: from `start` to `end`, the `/` after it.
struct Segment {
    start: usize,
    end: usize,
}

fn wayback_segment(uri_m: &str) -> Option<Segment> {
    let after_scheme = uri_m.find("://")? + 3;
    // The path runs from the end of the authority to the query or fragment.
    let path_start = after_scheme + uri_m[after_scheme..].find(['/', '?', '#'])?;
    let path_end = uri_m[path_start..]
        .find(['?', '#'])
        .map_or(uri_m.len(), |i| path_start + i);
    let mut start = path_start + 1;
    while start < path_end {
        let end = uri_m[start..path_end].find('/').map(|i| start + i)?;
        let segment = &uri_m[start..end];
        if segment.ends_with(':') {
            return None;
        }
        if is_wayback_segment(segment) && end + 1 < uri_m.len() {
            return Some(Segment { start, end });
        }
        start = end + 1;
    }
    None
}

/// `{14 digits}` or `{14 digits}[a-z]{2}_`.
fn is_wayback_segment(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = b.len() >= 14 && b[..14].iter().all(u8::is_ascii_digit);
    let modifier = match &b[b.len().min(14)..] {
        [] => true,
        [x, y, b'_'] => x.is_ascii_lowercase() && y.is_ascii_lowercase(),
        _ => false,
    };
    digits && modifier
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(uri_m: &str) -> Option<String> {
        raw_uri_m(uri_m, &RawForm::Id)
    }

    #[test]
    fn the_wayback_segment_becomes_id() {
        let ia = "https://web.archive.org/web/20200101000000/http://example.com/a?b=1";
        assert_eq!(
            id(ia).as_deref(),
            Some("https://web.archive.org/web/20200101000000id_/http://example.com/a?b=1")
        );
        for modifier in ["mp_", "im_", "js_", "cs_", "if_", "fw_", "oe_"] {
            let uri_m = format!("http://127.0.0.1:8080/coll/20200101000000{modifier}/example.com/");
            assert_eq!(
                id(&uri_m).as_deref(),
                Some("http://127.0.0.1:8080/coll/20200101000000id_/example.com/"),
                "{modifier}"
            );
        }
        let already = "https://arquivo.pt/wayback/20200101000000id_/http://example.com/";
        assert_eq!(id(already).as_deref(), Some(already));
    }

    #[test]
    fn only_the_first_segment_before_the_uri_r_counts() {
        assert_eq!(
            id("http://a.example/19990101000000/20200101000000/http://x.example/").as_deref(),
            Some("http://a.example/19990101000000id_/20200101000000/http://x.example/")
        );
        // The date in the URI-R's own path is the page's, not the capture's.
        assert_eq!(
            id("http://a.example/coll/http://x.example/20200101000000/page"),
            None
        );
        // A date in the host or the query is no segment.
        assert_eq!(id("http://20200101000000.example/x/"), None);
        assert_eq!(id("http://a.example/?t=/20200101000000/http://x/"), None);
    }

    #[test]
    fn anything_else_has_no_raw_form() {
        for uri_m in [
            "http://a.example/web/2020010100000/http://x.example/",
            "http://a.example/web/202001010000000/http://x.example/",
            "http://a.example/web/20200101000000MP_/http://x.example/",
            "http://a.example/web/20200101000000mp/http://x.example/",
            "http://a.example/web/20200101000000abc_/http://x.example/",
            "http://a.example/web/2020010100000x/http://x.example/",
            // No URI-R after the segment.
            "http://a.example/web/20200101000000/",
            "http://a.example/web/20200101000000",
            "https://perma.cc/ABCD-1234",
            "not a url",
            "",
        ] {
            assert_eq!(id(uri_m), None, "{uri_m}");
        }
        let ia = "https://web.archive.org/web/20200101000000/http://example.com/";
        assert_eq!(raw_uri_m(ia, &RawForm::Off), None);
    }

    #[test]
    fn a_template_takes_the_timestamp_and_what_follows() {
        let t = Replay::parse("https://raw.example/get/{timestamp}/{url}").expect("a template");
        let form = RawForm::Template(t);
        assert_eq!(
            raw_uri_m(
                "https://web.archive.org/web/20200101000000mp_/http://example.com/a?b=1",
                &form
            )
            .as_deref(),
            Some("https://raw.example/get/20200101000000/http://example.com/a?b=1")
        );
        assert_eq!(raw_uri_m("https://perma.cc/ABCD-1234", &form), None);
    }
}
