//! JSON as every answer of ours writes it: serde_json's compact form, with U+0085 (NEL), U+2028
//! (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR) escaped as `\uXXXX` too. serde_json
//! escapes only U+0000-U+001F (so `\n`, `\r`, U+000B, U+000C already); these three it leaves
//! raw, and a reader splitting on every line separator (CDXJ's line per record, JavaScript
//! before ES2019) would see a URI-R holding one end its line, and its rest forge the next.

use serde::Serialize;
use std::io;

/// serde_json's compact formatter, escaping the line separators it leaves raw.
#[derive(Debug, Clone, Copy, Default)]
pub struct LineSafe;

/// The characters escaped here beyond serde_json's own.
fn escaped(c: char) -> Option<&'static [u8]> {
    match c {
        '\u{85}' => Some(b"\\u0085"),
        '\u{2028}' => Some(b"\\u2028"),
        '\u{2029}' => Some(b"\\u2029"),
        _ => None,
    }
}

impl serde_json::ser::Formatter for LineSafe {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // ASCII holds none of them: the common case is one write, as serde_json's own.
        if fragment.is_ascii() {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if let Some(escape) = escaped(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                writer.write_all(escape)?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// `value` as line-safe compact JSON into `writer`.
pub fn to_writer<W: io::Write, T: ?Sized + Serialize>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        writer, LineSafe,
    ))
}

/// `value` as line-safe compact JSON.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// `value` as line-safe compact JSON text.
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    // serde_json writes UTF-8 only, and the escapes are ASCII.
    String::from_utf8(to_vec(value)?).map_err(serde::ser::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_separator_is_escaped_and_the_text_reads_back() {
        let hostile = "a\u{2028}b\u{2029}c\u{85}d\ne\rf\u{b}g\u{c}h é \u{2027}";
        let json = to_string(hostile).expect("json");
        for raw in [
            '\u{2028}', '\u{2029}', '\u{85}', '\n', '\r', '\u{b}', '\u{c}',
        ] {
            assert!(!json.contains(raw), "{raw:?} raw in {json}");
        }
        assert!(json.contains("\\u2028") && json.contains("\\u2029") && json.contains("\\u0085"));
        // Other non-ASCII stays as it was.
        assert!(json.contains('é') && json.contains('\u{2027}'));
        let back: String = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(back, hostile);
        assert_eq!(to_string("plain").expect("json"), "\"plain\"");
    }
}
