//! The application/link-format tokenizer for upstream TimeMaps (RFC 7089 §5 in RFC 6690 syntax).
//!
//! One forward pass over the bytes, no backtracking: every scan starts where the previous one
//! stopped, so the work is linear in the body whatever it contains. Archives send folded lines,
//! unquoted or single-quoted values, missing commas and plain garbage; the parser keeps every
//! well-formed link, counts what it had to leave out in [`LinkTimeMap::skipped`], and never
//! panics. It does not sort or deduplicate: it reports the document as it is, the merge decides.

use super::datetime::parse_rfc1123;
use super::model::{LinkMemento, LinkTimeMap, MementoDatetime, PageLink};
use crate::uri_text::{escape_uri, has_control, is_http_with_host, is_servable_uri_m};
use std::borrow::Cow;
use std::sync::Arc;
use url::Url;

/// Parses one link-format document; relative URIs are resolved against `base` (the URI-T).
///
/// A memento (a link whose `rel` contains `memento`) needs a `datetime` in RFC 1123 form, and a
/// URI that is absolute http(s) once resolved and holds no control character, or it is skipped.
/// Every URI kept is escaped as [`escape_uri`] does. `original`, `timegate` and `self` keep the first link of each kind; `timemap` links
/// other than this document itself (not `self`, not `base`, not the `self` URI) become `pages`.
/// Absolute URIs are copied as they are; only relative and scheme-relative ones go through `url`.
pub fn parse_link_format(body: &str, base: &str) -> LinkTimeMap {
    Parser {
        src: body,
        pos: 0,
        base,
        base_url: None,
        out: LinkTimeMap::default(),
        attempt_counted: false,
    }
    .run()
}

// The relation types we act on; the rest (`first`, `last`, `prev`, …) only qualify them.
const REL_MEMENTO: u8 = 1;
const REL_ORIGINAL: u8 = 1 << 1;
const REL_TIMEGATE: u8 = 1 << 2;
const REL_SELF: u8 = 1 << 3;
const REL_TIMEMAP: u8 = 1 << 4;

/// A parameter value, borrowed from the body: no allocation per parameter.
#[derive(Clone, Copy)]
struct Value<'a> {
    /// Between the quotes, or the whole unquoted token.
    raw: &'a str,
    /// Whether `raw` holds a backslash quoted-pair, which [`Value::text`] then undoes.
    escaped: bool,
}

impl<'a> Value<'a> {
    fn text(self) -> Cow<'a, str> {
        if !self.escaped {
            return Cow::Borrowed(self.raw);
        }
        // Only values that really contain `\` pay for a copy; real TimeMaps almost never do.
        let mut out = String::with_capacity(self.raw.len());
        let mut chars = self.raw.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                out.extend(chars.next());
            } else {
                out.push(c);
            }
        }
        Cow::Owned(out)
    }
}

/// The parameters of one link that matter to us; the first occurrence of each wins (RFC 8288).
#[derive(Default)]
struct Params<'a> {
    rel: Option<Value<'a>>,
    datetime: Option<Value<'a>>,
    from: Option<Value<'a>>,
    until: Option<Value<'a>>,
    /// `type`: a `timemap` link of another media type (JSON, CDXJ) is an alternate, not a page.
    media_type: Option<Value<'a>>,
    /// A syntax error inside the link (an unterminated quote): the link is not used.
    broken: bool,
}

struct Parser<'a> {
    src: &'a str,
    /// Byte offset of the next unread byte; always `<= src.len()`.
    pos: usize,
    base: &'a str,
    /// Parsed on the first relative URI only: most TimeMaps never need it.
    base_url: Option<Option<Url>>,
    out: LinkTimeMap,
    /// Whether the entry being read has already added to `skipped`, so that a broken link and
    /// the junk after it count once, not twice.
    attempt_counted: bool,
}

// Byte classes for the scans below. One table lookup per byte, no branching on several
// candidates and no closure: fast in release, and bearable in debug builds, where the tests
// parse a million entries.
const WS: u8 = 1;
const NAME_END: u8 = 1 << 1;
const TOKEN_END: u8 = 1 << 2;
const LINK_START: u8 = 1 << 3;

const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = WS | NAME_END;
    t[b'\t' as usize] = WS | NAME_END;
    t[0x0c] = WS | NAME_END;
    t[b'\r' as usize] = WS | NAME_END | TOKEN_END;
    t[b'\n' as usize] = WS | NAME_END | TOKEN_END;
    t[b'<' as usize] = NAME_END | TOKEN_END | LINK_START;
    t[b'=' as usize] = NAME_END;
    t[b';' as usize] = NAME_END | TOKEN_END;
    t[b',' as usize] = NAME_END | TOKEN_END;
    t[b'"' as usize] = NAME_END;
    t[b'\'' as usize] = NAME_END;
    t
};

/// The first index at or after `i` whose byte is `a`, `b` or a line end (`\n`, `\r`), or
/// `bytes.len()`: where a URI (`>`, or a `<` showing the `>` is missing) or a quoted value (its
/// quote, or a `\`) ends. These are the long scans, a URI-M and a datetime per memento:
/// memchr's vector search, where a byte at a time was most of a small miss's parse.
fn scan_to_or_line_end(bytes: &[u8], i: usize, a: u8, b: u8) -> usize {
    let Some(rest) = bytes.get(i..) else {
        return bytes.len();
    };
    let found = memchr::memchr3(a, b, b'\n', rest).unwrap_or(rest.len());
    // A CR before it ends the line too (documents with CRLF line ends). This reads the bytes
    // just scanned once more, no further: the parse stays linear in the body.
    let found = memchr::memchr(b'\r', &rest[..found]).unwrap_or(found);
    i + found
}

/// The first index at or after `i` whose byte is in one of the `stop` classes, or `bytes.len()`.
#[inline]
fn scan_to(bytes: &[u8], mut i: usize, stop: u8) -> usize {
    // `i < len` guards the indexing; a `u8` always indexes a 256-entry table.
    while i < bytes.len() && CLASSES[bytes[i] as usize] & stop == 0 {
        i += 1;
    }
    i
}

/// The first index at or after `i` whose byte is not in `skip`, or `bytes.len()`.
#[inline]
fn scan_past(bytes: &[u8], mut i: usize, skip: u8) -> usize {
    while i < bytes.len() && CLASSES[bytes[i] as usize] & skip != 0 {
        i += 1;
    }
    i
}

impl<'a> Parser<'a> {
    fn run(mut self) -> LinkTimeMap {
        loop {
            self.skip_separators();
            match self.peek() {
                None => break,
                Some(b'<') => self.link(),
                Some(_) => self.garbage(),
            }
        }
        // Done at the end because `self` often comes after the `timemap` links it excludes.
        let out = &mut self.out;
        let (base, self_uri) = (self.base, &out.self_uri);
        out.pages
            .retain(|page| page.uri != base && self_uri.as_deref() != Some(page.uri.as_str()));
        self.out
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    /// `src[from..to]`, or `""` if that is not a valid slice. Callers only cut at ASCII
    /// delimiters, so the fallback never triggers; it is there so that a mistake cannot panic.
    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.src.get(from..to).unwrap_or("")
    }

    /// Moves to the next byte in one of the `stop` classes, or the end.
    fn advance_to(&mut self, stop: u8) {
        self.pos = scan_to(self.src.as_bytes(), self.pos, stop);
    }

    fn skip_ws(&mut self) {
        self.pos = scan_past(self.src.as_bytes(), self.pos, WS);
    }

    /// Whitespace and commas between entries. A comma ends an entry, so what follows is a new
    /// attempt that may be counted again.
    fn skip_separators(&mut self) {
        loop {
            self.skip_ws();
            if self.peek() != Some(b',') {
                return;
            }
            self.pos += 1;
            self.attempt_counted = false;
        }
    }

    /// Counts the current entry attempt as skipped.
    fn fail(&mut self) {
        self.out.skipped += 1;
        self.attempt_counted = true;
    }

    /// Text where an entry should start. It all goes, up to the next `<`, as one skipped entry
    /// (none if it trails a link that was already counted).
    fn garbage(&mut self) {
        if !self.attempt_counted {
            self.fail();
        }
        self.advance_to(LINK_START);
    }

    /// One `<URI-Reference> *(";" link-param)`, starting at its `<`.
    fn link(&mut self) {
        let start = self.pos + 1;
        self.pos = start;
        // A URI never holds `<` or a line end: meeting one first means the `>` is missing, and
        // stopping there (rather than searching on for a `>`) keeps the next entry intact.
        self.pos = scan_to_or_line_end(self.src.as_bytes(), self.pos, b'>', b'<');
        if self.peek() != Some(b'>') {
            self.fail();
            return;
        }
        let uri = self.slice(start, self.pos).trim();
        self.pos += 1;

        let mut params = Params::default();
        loop {
            self.skip_ws();
            if self.peek() != Some(b';') {
                // `,` ends the link; `<` starts the next one although the comma is missing; the
                // end of input ends everything; anything else is junk for `garbage` to count.
                break;
            }
            self.pos += 1;
            self.param(&mut params);
        }
        self.finish(uri, params);
    }

    /// One `name [= value]`, just after its `;`. Whitespace (line ends included, for folded
    /// entries) is allowed around the name and the `=`.
    fn param(&mut self, params: &mut Params<'a>) {
        self.skip_ws();
        let start = self.pos;
        self.advance_to(NAME_END);
        let name = self.slice(start, self.pos);
        self.skip_ws();
        if self.peek() != Some(b'=') {
            // A parameter without a value (RFC 6690 allows it); nothing we use.
            return;
        }
        self.pos += 1;
        self.skip_ws();
        let value = match self.peek() {
            Some(quote @ (b'"' | b'\'')) => match self.quoted(quote) {
                Some(value) => value,
                None => {
                    params.broken = true;
                    return;
                }
            },
            _ => self.token(),
        };
        let slot = if name.eq_ignore_ascii_case("rel") {
            &mut params.rel
        } else if name.eq_ignore_ascii_case("datetime") {
            &mut params.datetime
        } else if name.eq_ignore_ascii_case("from") {
            &mut params.from
        } else if name.eq_ignore_ascii_case("until") {
            &mut params.until
        } else if name.eq_ignore_ascii_case("type") {
            &mut params.media_type
        } else {
            // `license`, `collection`, `title`, …: read past, not kept.
            return;
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }

    /// An unquoted value. Archives send `rel=memento` and even `rel=first memento`, so spaces are
    /// kept; it ends where a parameter, a link or a line ends.
    fn token(&mut self) -> Value<'a> {
        let start = self.pos;
        self.advance_to(TOKEN_END);
        Value {
            raw: self.slice(start, self.pos).trim_end(),
            escaped: false,
        }
    }

    /// A value in `"…"` or `'…'`, starting at the opening quote; `,`, `;` and `<` inside are data.
    /// `None` if the closing quote is missing. The search gives up at a line end: entries are
    /// one per line (or folded between parameters), so a quote still open there was never
    /// closed, and carrying on to the next quote would swallow the following entries.
    fn quoted(&mut self, quote: u8) -> Option<Value<'a>> {
        let start = self.pos + 1;
        let bytes = self.src.as_bytes();
        let mut i = start;
        let mut escaped = false;
        loop {
            i = scan_to_or_line_end(bytes, i, quote, b'\\');
            match bytes.get(i) {
                Some(b'\\') => {
                    escaped = true;
                    // Skip the escaped byte, unless it is a line end (still unterminated) or the
                    // end. Landing inside a multi-byte char is harmless: we only cut at ASCII.
                    i += match bytes.get(i + 1) {
                        Some(b'\r' | b'\n') | None => 1,
                        Some(_) => 2,
                    };
                }
                Some(&b) if b == quote => {
                    self.pos = i + 1;
                    return Some(Value {
                        raw: self.slice(start, i),
                        escaped,
                    });
                }
                _ => {
                    // A line end, left for the caller, which goes on with the next line; or the end.
                    self.pos = i;
                    return None;
                }
            }
        }
    }

    /// Files one complete link under what its `rel` says, or counts it as skipped.
    fn finish(&mut self, uri: &'a str, params: Params<'a>) {
        if params.broken {
            return self.fail();
        }
        // No `rel` at all is not a link we can understand (it is also what HTML tags look like).
        let Some(rel) = params.rel else {
            return self.fail();
        };
        let mut rels = 0;
        for kind in rel.text().split_ascii_whitespace() {
            rels |= if kind.eq_ignore_ascii_case("memento") {
                REL_MEMENTO
            } else if kind.eq_ignore_ascii_case("original") {
                REL_ORIGINAL
            } else if kind.eq_ignore_ascii_case("timegate") {
                REL_TIMEGATE
            } else if kind.eq_ignore_ascii_case("self") {
                REL_SELF
            } else if kind.eq_ignore_ascii_case("timemap") {
                REL_TIMEMAP
            } else {
                0
            };
        }
        if rels == 0 {
            // A relation we have no use for (`alternate`, `describedby`, …) is not an error.
            self.attempt_counted = false;
            return;
        }
        let datetime = if rels & REL_MEMENTO != 0 {
            match params.datetime.and_then(value_datetime) {
                Some(dt) => Some(dt),
                None => return self.fail(),
            }
        } else {
            None
        };
        // A URI-M becomes a `Location`: one with a control character (checked before resolving,
        // which would silently drop tabs and line ends) or that is not absolute http(s) once
        // resolved (`javascript:`, `data:`) is an entry we cannot use.
        if datetime.is_some() && has_control(uri) {
            return self.fail();
        }
        let Some(uri) = self.resolve(uri) else {
            return self.fail();
        };
        // Text resolved from a relative reference is new: all of it is checked. An absolute URI
        // is the text just checked for control characters: only its shape is left.
        let servable = match &uri {
            Cow::Borrowed(same) => is_http_with_host(same),
            Cow::Owned(resolved) => is_servable_uri_m(resolved),
        };
        if datetime.is_some() && !servable {
            return self.fail();
        }
        // Kept escaped (`"`, space, non-ASCII percent-encoded; a no-op for almost every URI), so
        // what is cached is already a URL that one link and one header value hold.
        let uri = match escape_uri(&uri) {
            Cow::Borrowed(_) => uri,
            Cow::Owned(escaped) => Cow::Owned(escaped),
        };
        self.attempt_counted = false;

        let out = &mut self.out;
        if rels & REL_ORIGINAL != 0 && out.original.is_none() {
            out.original = Some(uri.to_string());
        }
        if rels & REL_TIMEGATE != 0 && out.timegate.is_none() {
            out.timegate = Some(uri.to_string());
        }
        if rels & REL_SELF != 0 {
            if out.self_uri.is_none() {
                out.self_uri = Some(uri.to_string());
            }
        } else if rels & REL_TIMEMAP != 0 && is_link_format(params.media_type) {
            out.pages.push(PageLink {
                uri: uri.to_string(),
                from: params.from.and_then(value_datetime),
                until: params.until.and_then(value_datetime),
            });
        }
        // The one allocation per memento: an absolute URI-M is borrowed from the body until
        // here, and the shared string made here is the one the entry and the answer keep.
        if let Some(datetime) = datetime {
            out.mementos.push(LinkMemento {
                uri_m: Arc::from(&*uri),
                datetime,
            });
        }
    }

    /// The absolute form of `uri`. Absolute URIs are borrowed untouched (the fast path: no `Url`
    /// parsing, no allocation); relative and scheme-relative ones are joined to the URI-T.
    fn resolve<'u>(&mut self, uri: &'u str) -> Option<Cow<'u, str>> {
        if has_scheme(uri) {
            return Some(Cow::Borrowed(uri));
        }
        let base = self.base;
        let base_url = self.base_url.get_or_insert_with(|| Url::parse(base).ok());
        base_url
            .as_ref()?
            .join(uri)
            .ok()
            .map(|u| Cow::Owned(String::from(u)))
    }
}

fn value_datetime(value: Value<'_>) -> Option<MementoDatetime> {
    parse_rfc1123(&value.text())
}

/// Whether `uri` starts with a scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`), i.e.
/// is absolute. Only looks at the scheme's few bytes.
fn has_scheme(uri: &str) -> bool {
    let mut bytes = uri.bytes();
    if !bytes.next().is_some_and(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    for b in bytes {
        if b == b':' {
            return true;
        }
        if !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) {
            return false;
        }
    }
    false
}

/// An untyped `timemap` link, or one typed as link format, can be another page of this TimeMap;
/// Time Travel and tmproxy also list JSON and CDXJ alternates, which are not.
fn is_link_format(media_type: Option<Value<'_>>) -> bool {
    media_type.is_none_or(|t| {
        t.text()
            .trim()
            .eq_ignore_ascii_case("application/link-format")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::datetime::format_rfc1123;

    const URI_T: &str = "http://arxiv.example.net/timemap/http://a.example.org";

    /// The example of RFC 7089 §5.1.1, as given.
    const RFC_EXAMPLE: &str = r#"<http://a.example.org>;rel="original",
<http://arxiv.example.net/timemap/http://a.example.org>
  ; rel="self";type="application/link-format"
  ; from="Tue, 20 Jun 2000 18:02:59 GMT"
  ; until="Wed, 09 Apr 2008 20:30:51 GMT",
<http://arxiv.example.net/timegate/http://a.example.org>
  ; rel="timegate",
<http://arxiv.example.net/web/20000620180259/http://a.example.org>
  ; rel="first memento";datetime="Tue, 20 Jun 2000 18:02:59 GMT"
  ; license="http://creativecommons.org/publicdomain/zero/1.0/",
<http://arxiv.example.net/web/20091027204954/http://a.example.org>
   ; rel="last memento";datetime="Tue, 27 Oct 2009 20:49:54 GMT"
   ; license="http://creativecommons.org/publicdomain/zero/1.0/",
<http://arxiv.example.net/web/20000621011731/http://a.example.org>
  ; rel="memento";datetime="Wed, 21 Jun 2000 01:17:31 GMT"
  ; license="http://creativecommons.org/publicdomain/zero/1.0/"
"#;

    /// What pywb sends: one link per line.
    const PYWB_EXAMPLE: &str = concat!(
        "<http://example.com/>; rel=\"original\",\n",
        "<http://127.0.0.1:8080/coll/http://example.com/>; rel=\"timegate\",\n",
        "<http://127.0.0.1:8080/coll/timemap/link/http://example.com/>; rel=\"self\"; ",
        "type=\"application/link-format\"; from=\"Wed, 01 Jan 2020 00:00:00 GMT\",\n",
        "<http://127.0.0.1:8080/coll/20200101000000mp_/http://example.com/>; rel=\"memento\"; ",
        "datetime=\"Wed, 01 Jan 2020 00:00:00 GMT\"; collection=\"coll\",\n",
        "<http://127.0.0.1:8080/coll/20210304050607mp_/http://example.com/>; rel=\"memento\"; ",
        "datetime=\"Thu, 04 Mar 2021 05:06:07 GMT\"; collection=\"coll\"\n",
    );

    fn dt(s: &str) -> MementoDatetime {
        parse_rfc1123(s).expect("test datetime")
    }

    fn memento(uri_m: &str, datetime: &str) -> LinkMemento {
        LinkMemento {
            uri_m: uri_m.into(),
            datetime: dt(datetime),
        }
    }

    fn uris(tm: &LinkTimeMap) -> Vec<&str> {
        tm.mementos.iter().map(|m| &*m.uri_m).collect()
    }

    #[test]
    fn parses_the_rfc_7089_example() {
        let tm = parse_link_format(RFC_EXAMPLE, URI_T);
        assert_eq!(tm.original.as_deref(), Some("http://a.example.org"));
        assert_eq!(tm.self_uri.as_deref(), Some(URI_T));
        assert_eq!(
            tm.timegate.as_deref(),
            Some("http://arxiv.example.net/timegate/http://a.example.org")
        );
        assert_eq!(
            tm.mementos,
            vec![
                memento(
                    "http://arxiv.example.net/web/20000620180259/http://a.example.org",
                    "Tue, 20 Jun 2000 18:02:59 GMT"
                ),
                memento(
                    "http://arxiv.example.net/web/20091027204954/http://a.example.org",
                    "Tue, 27 Oct 2009 20:49:54 GMT"
                ),
                memento(
                    "http://arxiv.example.net/web/20000621011731/http://a.example.org",
                    "Wed, 21 Jun 2000 01:17:31 GMT"
                ),
            ]
        );
        assert!(tm.pages.is_empty(), "self is not another page");
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn parses_pywb_output() {
        let tm = parse_link_format(PYWB_EXAMPLE, "http://127.0.0.1:8080/coll/timemap/link/x");
        assert_eq!(tm.original.as_deref(), Some("http://example.com/"));
        assert_eq!(
            uris(&tm),
            [
                "http://127.0.0.1:8080/coll/20200101000000mp_/http://example.com/",
                "http://127.0.0.1:8080/coll/20210304050607mp_/http://example.com/",
            ]
        );
        assert_eq!(tm.mementos[1].datetime, dt("Thu, 04 Mar 2021 05:06:07 GMT"));
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn folded_entries_with_crlf_and_space_before_comma() {
        let doc = "<http://a/>\r\n ; rel=\"original\" ,\r\n<http://m/1>\r\n\t; rel=\"memento\"\r\n  \
                   ; datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\" ,\r\n<http://m/2>\r\n;rel=\"memento\"\r\n\
                   ;datetime=\"Wed, 21 Jun 2000 01:17:31 GMT\"\r\n";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(tm.original.as_deref(), Some("http://a/"));
        assert_eq!(uris(&tm), ["http://m/1", "http://m/2"]);
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn unquoted_values() {
        let doc = "<http://m/1>;rel=memento;datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\",\n\
                   <http://m/2>; rel=first memento ; datetime=\"Wed, 21 Jun 2000 01:17:31 GMT\"\n";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1", "http://m/2"]);
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn single_quoted_values() {
        let doc = "<http://m/1>;rel='memento';datetime='Tue, 20 Jun 2000 18:02:59 GMT';title='its; it, is',\
                   <http://o/>;rel='original'";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(
            tm.mementos,
            [memento("http://m/1", "Tue, 20 Jun 2000 18:02:59 GMT")]
        );
        assert_eq!(tm.original.as_deref(), Some("http://o/"));
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn parameters_in_any_order_and_whitespace_around_equals() {
        let doc = "<http://m/1>; datetime = \"Tue, 20 Jun 2000 18:02:59 GMT\" ; license=\"x\"; rel =\n\
                   \"memento\",\n<http://m/2>;type=\"text/html\";datetime\t=\t'Wed, 21 Jun 2000 01:17:31 GMT';rel= memento";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(
            tm.mementos,
            [
                memento("http://m/1", "Tue, 20 Jun 2000 18:02:59 GMT"),
                memento("http://m/2", "Wed, 21 Jun 2000 01:17:31 GMT"),
            ]
        );
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn parameter_names_are_case_insensitive() {
        let doc = "<http://m/1>; REL=\"Memento\"; DateTime=\"Tue, 20 Jun 2000 18:02:59 GMT\",\
                   <http://o/>; Rel=\"ORIGINAL\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1"]);
        assert_eq!(tm.original.as_deref(), Some("http://o/"));
    }

    #[test]
    fn comma_and_semicolon_inside_uri_are_data() {
        let doc = "<http://m/web/2000/http://a.org/x,y;z=1?q=a,b>;rel=\"memento\";\
                   datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\",<http://m/2;v>;rel=\"memento\";\
                   datetime=\"Wed, 21 Jun 2000 01:17:31 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(
            uris(&tm),
            [
                "http://m/web/2000/http://a.org/x,y;z=1?q=a,b",
                "http://m/2;v"
            ]
        );
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn comma_and_semicolon_inside_quoted_values_are_data() {
        let doc = "<http://m/1>;title=\"a, b; c=<d>\";rel=\"memento\";datetime=\"Tue, 20 Jun 2000 18:02:59 GMT\",\
                   <http://m/2>;title='x,y;z';rel=\"memento\";datetime=\"Wed, 21 Jun 2000 01:17:31 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1", "http://m/2"]);
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn backslash_escapes_in_quoted_values() {
        let doc = r#"<http://m/1>;title="say \"hi\", ok";rel="\memento";datetime="Tue, 20 Jun 2000 18:02:59 GMT""#;
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1"]);
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn relative_uris_resolve_against_the_uri_t() {
        let doc = "</web/20010101000000/http://a.org/>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <20020101000000/x>;rel=\"memento\";datetime=\"Tue, 01 Jan 2002 00:00:00 GMT\",\
                   </timegate/http://a.org/>;rel=\"timegate\"";
        let tm = parse_link_format(doc, "https://arch.example/timemap/link/http://a.org/");
        assert_eq!(
            uris(&tm),
            [
                "https://arch.example/web/20010101000000/http://a.org/",
                "https://arch.example/timemap/link/http://a.org/20020101000000/x",
            ]
        );
        assert_eq!(
            tm.timegate.as_deref(),
            Some("https://arch.example/timegate/http://a.org/")
        );
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn scheme_relative_uris_take_the_uri_t_scheme() {
        let doc = "<//archive.org/wayback/2001/http://a.org/>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(
            doc,
            "https://web.archive.org/web/timemap/link/http://a.org/",
        );
        assert_eq!(
            uris(&tm),
            ["https://archive.org/wayback/2001/http://a.org/"]
        );
    }

    #[test]
    fn relative_uri_with_unusable_base_is_skipped() {
        let doc = "</web/1>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <http://m/2>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, "not a uri");
        assert_eq!(uris(&tm), ["http://m/2"]);
        assert_eq!(tm.skipped, 1);
    }

    #[test]
    fn absolute_uris_are_kept_verbatim() {
        // No normalisation: the fast path copies what the archive sent.
        let doc = "<HTTP://Example.ORG/a/../b>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["HTTP://Example.ORG/a/../b"]);
    }

    #[test]
    fn hostile_uri_ms_are_skipped_and_odd_ones_escaped() {
        let d = "datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let doc = format!(
            "<javascript:alert(1)>;rel=memento;{d},<data:text/html,x>;rel=memento;{d},\
             <JAVASCRIPT://a.org/%0aalert(1)>;rel=memento;{d},<ftp://a.org/x>;rel=memento;{d},\
             <http://a.org/nul\0x>;rel=memento;{d},<http://a.org/tab\tx>;rel=memento;{d},\
             <http://a.org/del\x7fx>;rel=memento;{d},<http:///nohost>;rel=memento;{d},\
             </web/2001/http://a.org/>;rel=memento;{d},<http://a.org/sp ace\"q é>;rel=memento;{d}"
        );
        let tm = parse_link_format(&doc, URI_T);
        assert_eq!(
            uris(&tm),
            [
                "http://arxiv.example.net/web/2001/http://a.org/",
                "http://a.org/sp%20ace%22q%20%C3%A9",
            ]
        );
        assert_eq!(tm.skipped, 8);
    }

    #[test]
    fn combined_relations_in_any_order_and_case() {
        let d = "datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let doc = format!(
            "<http://m/1>;rel=\"first memento\";{d},<http://m/2>;rel=\"memento first\";{d},\
             <http://m/3>;rel=\"prev first memento\";{d},<http://m/4>;rel=\"first last memento\";{d},\
             <http://m/5>;rel=\"LAST  Memento\";{d},<http://m/6>;rel=\" next\tmemento \";{d},\
             <http://m/7>;rel=\"first last\";{d}"
        );
        let tm = parse_link_format(&doc, URI_T);
        assert_eq!(
            uris(&tm),
            [
                "http://m/1",
                "http://m/2",
                "http://m/3",
                "http://m/4",
                "http://m/5",
                "http://m/6"
            ]
        );
        assert_eq!(tm.skipped, 0, "`first last` alone is a relation we ignore");
    }

    #[test]
    fn original_timegate_and_self_timemap_combined() {
        let doc = "<http://a.org/>;rel=\"timegate original\",<http://t/tm/1>;rel=\"timemap SELF\"";
        let tm = parse_link_format(doc, "http://t/tm/other");
        assert_eq!(tm.original.as_deref(), Some("http://a.org/"));
        assert_eq!(tm.timegate.as_deref(), Some("http://a.org/"));
        assert_eq!(tm.self_uri.as_deref(), Some("http://t/tm/1"));
        assert!(tm.pages.is_empty());
        assert!(tm.mementos.is_empty());
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn first_of_each_singleton_wins() {
        let doc = "<http://a/1>;rel=original,<http://a/2>;rel=original,<http://t/1>;rel=self,<http://t/2>;rel=self";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(tm.original.as_deref(), Some("http://a/1"));
        assert_eq!(tm.self_uri.as_deref(), Some("http://t/1"));
    }

    #[test]
    fn timemap_links_become_pages_except_self_and_base() {
        let doc = "<http://t/tm/2>;rel=\"timemap\";from=\"Mon, 01 Jan 2001 00:00:00 GMT\";\
                   until=\"Tue, 01 Jan 2002 00:00:00 GMT\";type=\"application/link-format\",\
                   <http://t/tm/1>;rel=\"timemap\",\
                   <http://t/tm/base>;rel=\"timemap\",\
                   <http://t/index>;rel=\"timemap\";from=\"not a date\",\
                   <http://t/tm/1>;rel=\"self\";from=\"Mon, 01 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, "http://t/tm/base");
        assert_eq!(
            tm.pages,
            [
                PageLink {
                    uri: "http://t/tm/2".into(),
                    from: Some(dt("Mon, 01 Jan 2001 00:00:00 GMT")),
                    until: Some(dt("Tue, 01 Jan 2002 00:00:00 GMT")),
                },
                PageLink {
                    uri: "http://t/index".into(),
                    from: None,
                    until: None,
                },
            ]
        );
        assert_eq!(tm.self_uri.as_deref(), Some("http://t/tm/1"));
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn extra_attributes_are_ignored() {
        let doc = "<http://m/1>;rel=\"memento\";license=\"http://cc/0\";collection=coll;title=\"A, B\";\
                   type=\"text/html\";hreflang=en;anchor=\"#x\";empty;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <http://other/>;rel=\"alternate\";type=\"text/html\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1"]);
        assert_eq!(tm.skipped, 0, "an unknown relation is ignored, not skipped");
    }

    #[test]
    fn unsorted_entries_keep_document_order_with_self_last() {
        let doc = "<http://m/3>;rel=memento;datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\",\
                   <http://m/1>;rel=memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\",\
                   <http://a/>;rel=original,<http://t/self>;rel=\"self\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/3", "http://m/1", "http://m/2"]);
        assert_eq!(tm.self_uri.as_deref(), Some("http://t/self"));
        assert_eq!(tm.original.as_deref(), Some("http://a/"));
    }

    #[test]
    fn duplicates_are_reported_not_removed() {
        let line = "<http://m/1>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n";
        let doc = format!(
            "<http://m/1>;rel=\"first memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n{line}{line}"
        );
        let tm = parse_link_format(&doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1"; 3]);
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn missing_comma_between_entries() {
        let doc = "<http://m/1>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"\n\
                   <http://m/2>;rel=\"memento\";datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\"<http://m/3>;rel=memento;\
                   datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\"<http://a/>;rel=original";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1", "http://m/2", "http://m/3"]);
        assert_eq!(tm.original.as_deref(), Some("http://a/"));
        assert_eq!(tm.skipped, 0);
    }

    #[test]
    fn date_only_precision() {
        let doc = "<http://m/1>;rel=\"memento\";datetime=\"Sat, 01 Jan 2005 00:00:00 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(
            format_rfc1123(tm.mementos[0].datetime),
            "Sat, 01 Jan 2005 00:00:00 GMT"
        );
    }

    #[test]
    fn memento_without_valid_datetime_is_skipped_and_counted() {
        let doc = "<http://m/1>;rel=\"memento\",\
                   <http://m/2>;rel=\"memento\";datetime=\"2001-01-01T00:00:00Z\",\
                   <http://m/3>;rel=\"memento\";datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <http://m/4>;rel=\"memento\";datetime=\"\",\
                   <http://m/5>;rel=\"memento\";datetime=\"Mon, 31 Feb 2001 00:00:00 GMT\",\
                   <http://m/6>;rel=\"memento\";datetime,\
                   <http://m/7>;rel=\"memento\";datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/3", "http://m/7"]);
        assert_eq!(tm.skipped, 5);
    }

    #[test]
    fn garbage_between_entries_is_one_skip_per_run() {
        let doc = "<http://m/1>;rel=memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
                   this is not, a link; at=all\n\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\" trailing junk,\n\
                   <http://m/3>;rel=memento;datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\"\n";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/1", "http://m/2", "http://m/3"]);
        assert_eq!(tm.skipped, 2);
    }

    #[test]
    fn junk_inside_a_link_skips_that_link_once() {
        // The link ends at the junk, without a datetime: one skip for the link and its junk.
        let doc = "<http://m/1>;rel=\"memento\" junk; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/2"]);
        assert_eq!(tm.skipped, 1);
    }

    #[test]
    fn unterminated_angle_bracket() {
        let doc = "<http://m/1;rel=memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\",\
                   <http://m/3 <http://m/4>;rel=memento;datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\",\
                   <http://m/5";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/2", "http://m/4"]);
        assert_eq!(tm.skipped, 3);
    }

    #[test]
    fn unterminated_quote() {
        let doc = "<http://m/1>;rel=\"memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\n\
                   <http://m/3>;rel=memento;datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\",\n\
                   <http://m/4>;rel=memento;datetime='Thu, 04 Jan 2001 00:00:00 GMT";
        let tm = parse_link_format(doc, URI_T);
        // m/1 pairs its quotes wrongly: rel is `memento;datetime=` (not a memento, so ignored)
        // and the date after it is junk. m/2 and m/4 never close their quote.
        assert_eq!(uris(&tm), ["http://m/3"]);
        assert_eq!(tm.skipped, 3);
    }

    #[test]
    fn a_bare_cr_ends_a_line_for_an_open_quote_and_a_missing_angle() {
        // Old Mac line ends: a quote or `<` left open at a CR must not swallow the next entry.
        let doc = "<http://m/1>;rel=memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\r\
                   <http://m/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\",\r\
                   <http://m/3;rel=memento;datetime=\"Wed, 03 Jan 2001 00:00:00 GMT\",\r\
                   <http://m/4>;rel=memento;datetime=\"Thu, 04 Jan 2001 00:00:00 GMT\"";
        let tm = parse_link_format(doc, URI_T);
        assert_eq!(uris(&tm), ["http://m/2", "http://m/4"]);
        assert_eq!(tm.skipped, 2);
    }

    #[test]
    fn stray_bytes() {
        let doc = "\u{feff}\u{0}<http://m/1>;rel=memento;datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\
                   \u{1}\u{7f}é日本>>;;==\"\",\n\
                   <http://m/é/2>;rel=memento;datetime=\"Tue, 02 Jan 2001 00:00:00 GMT\";title=\"日本\"";
        let tm = parse_link_format(doc, URI_T);
        // Non-ASCII in a URI-M is kept percent-encoded (UTF-8), the same URL.
        assert_eq!(uris(&tm), ["http://m/1", "http://m/%C3%A9/2"]);
        assert_eq!(tm.skipped, 2);
    }

    #[test]
    fn empty_and_blank_input() {
        for doc in ["", " ", "\r\n\r\n", ",,, ,\n"] {
            let tm = parse_link_format(doc, URI_T);
            assert_eq!(tm, LinkTimeMap::default(), "{doc:?}");
        }
    }

    #[test]
    fn html_body_gives_no_mementos() {
        let doc = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\
                   <body><p>Sorry, no <a href=\"/web/\">captures</a>; try again.</p></body></html>\n";
        let tm = parse_link_format(doc, URI_T);
        assert!(tm.mementos.is_empty());
        assert!(tm.original.is_none() && tm.pages.is_empty());
        assert!(
            tm.skipped > 0,
            "an HTML error page must not look like an empty TimeMap"
        );
    }

    #[test]
    fn document_without_mementos() {
        let doc =
            "<http://a.org/>;rel=\"original\",\n<http://t/tg/http://a.org/>;rel=\"timegate\",\n\
                   <http://t/tm/http://a.org/>;rel=\"self\";type=\"application/link-format\"\n";
        let tm = parse_link_format(doc, "http://t/tm/http://a.org/");
        assert!(tm.mementos.is_empty());
        assert_eq!(tm.original.as_deref(), Some("http://a.org/"));
        assert_eq!(tm.skipped, 0);
    }

    /// A deterministic xorshift64 generator: reproducible "random" inputs without a crate.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const PIECES: &[&str] = &[
        "<",
        ">",
        ";",
        ",",
        "\"",
        "'",
        "=",
        "\\",
        " ",
        "\t",
        "\r\n",
        "\n",
        "rel",
        "REL",
        "memento",
        "first memento",
        "datetime",
        "Tue, 20 Jun 2000 18:02:59 GMT",
        "http://a.example/",
        "/web/",
        "//host/",
        "x",
        "é",
        "日本",
        "\u{0}",
        "timemap",
        "self",
        "from",
        "until",
        "original",
        "timegate",
        "\"memento\"",
        "<http://m/1>",
    ];

    #[test]
    fn random_and_mutated_inputs_never_panic() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let bases = ["http://t.example/tm/x", "", "::", "//x"];
        let check = |doc: &str, base: &str| {
            let tm = parse_link_format(doc, base);
            // Every memento and every skip needs at least one byte of its own.
            assert!(tm.mementos.len() <= doc.matches('<').count(), "{doc:?}");
            assert!(tm.skipped <= doc.len(), "{doc:?}");
        };
        for round in 0..4000 {
            let mut doc = String::new();
            for _ in 0..rng.below(60) {
                doc.push_str(PIECES[rng.below(PIECES.len())]);
            }
            check(&doc, bases[round % bases.len()]);
        }
        for seed_doc in [RFC_EXAMPLE, PYWB_EXAMPLE] {
            for _ in 0..2000 {
                let mut doc = seed_doc.to_owned();
                for _ in 0..1 + rng.below(8) {
                    let mut at = rng.below(doc.len() + 1);
                    while !doc.is_char_boundary(at) {
                        at -= 1;
                    }
                    match rng.below(3) {
                        0 => doc.insert_str(at, PIECES[rng.below(PIECES.len())]),
                        1 if at < doc.len() => {
                            doc.remove(at);
                        }
                        _ => doc.insert(at, char::from(rng.below(128) as u8)),
                    }
                }
                check(&doc, URI_T);
            }
        }
    }

    #[test]
    fn every_truncation_keeps_a_prefix_of_the_mementos() {
        let crlf = RFC_EXAMPLE.replace('\n', "\r\n");
        let with_utf8 = PYWB_EXAMPLE.replace("example.com", "exämple.日本");
        for doc in [RFC_EXAMPLE, PYWB_EXAMPLE, &crlf, &with_utf8] {
            let full = parse_link_format(doc, URI_T);
            assert_eq!(full.skipped, 0);
            for cut in (0..=doc.len()).filter(|&i| doc.is_char_boundary(i)) {
                let tm = parse_link_format(&doc[..cut], URI_T);
                assert!(
                    full.mementos.starts_with(&tm.mementos),
                    "cut at {cut}: {:?}",
                    &doc[..cut]
                );
                // Only the entry that was cut can be lost.
                assert!(tm.skipped <= 1, "cut at {cut}: {:?}", &doc[..cut]);
            }
        }
    }

    /// Appends `n` as two digits; the million-entry test builds its document this way because
    /// formatting through chrono a million times is slow in debug builds.
    fn push2(out: &mut String, n: u32) {
        out.push(char::from(b'0' + (n / 10 % 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    }

    #[test]
    fn a_million_entries() {
        const N: u32 = 1_000_000;
        const WEEKDAYS: [&str; 7] = ["Sat", "Sun", "Mon", "Tue", "Wed", "Thu", "Fri"];
        let mut doc = String::with_capacity(N as usize * 90);
        doc.push_str("<http://a.example/>;rel=\"original\",\n");
        for i in 0..N {
            // One memento a second from Sat, 01 Jan 2000 00:00:00: 1e6 s is under 12 days.
            let (day, rest) = (i / 86_400, i % 86_400);
            doc.push_str("<http://w.example/web/");
            doc.push_str(&i.to_string());
            doc.push_str("/x>;rel=\"memento\";datetime=\"");
            doc.push_str(WEEKDAYS[(day % 7) as usize]);
            doc.push_str(", ");
            push2(&mut doc, day + 1);
            doc.push_str(" Jan 2000 ");
            push2(&mut doc, rest / 3600);
            doc.push(':');
            push2(&mut doc, rest / 60 % 60);
            doc.push(':');
            push2(&mut doc, rest % 60);
            doc.push_str(" GMT\",\n");
        }
        let tm = parse_link_format(&doc, URI_T);
        assert_eq!(tm.mementos.len(), N as usize);
        assert_eq!(tm.skipped, 0);
        let first = tm.mementos.first().expect("first");
        let last = tm.mementos.last().expect("last");
        assert_eq!(&*first.uri_m, "http://w.example/web/0/x");
        assert_eq!(first.datetime, dt("Sat, 01 Jan 2000 00:00:00 GMT"));
        assert_eq!(&*last.uri_m, "http://w.example/web/999999/x");
        assert_eq!(last.datetime, dt("Wed, 12 Jan 2000 13:46:39 GMT"));
    }

    #[test]
    fn typed_timemap_alternates_are_not_pages() {
        let doc = "<http://a.test/tm/link/x>; rel=\"timemap\"; type=\"application/link-format\",\n\
                   <http://a.test/tm/json/x>; rel=\"timemap\"; type=\"application/json\",\n\
                   <http://a.test/tm/cdxj/x>; rel=timemap; type=application/cdxj+ors,\n\
                   <http://a.test/tm/page2/x>; rel=\"timemap\"";
        let tm = parse_link_format(doc, "http://a.test/tm/link/y");
        let pages: Vec<&str> = tm.pages.iter().map(|p| p.uri.as_str()).collect();
        assert_eq!(
            pages,
            ["http://a.test/tm/link/x", "http://a.test/tm/page2/x"]
        );
        assert_eq!(tm.skipped, 0);
    }
}
