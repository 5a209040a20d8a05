//! The test's own reading of an RFC 6690 link-format document, kept apart from tmproxy_core's
//! parser on purpose: the checks compare tmproxy's answer with what the recording says, and a
//! shared parser would agree with itself whatever the recording says.

use std::collections::HashMap;

/// One memento a document lists: its URI-M as written, its relation types, its datetime in
/// seconds since 1970.
#[derive(Debug, Clone)]
pub struct Listed {
    pub uri: String,
    pub rels: Vec<String>,
    pub at: i64,
}

/// The mementos of a document, in the order listed, and how many links said `memento` but
/// carried no datetime we could read (RFC 7089 requires one: such a link is not a memento).
#[derive(Debug, Default)]
pub struct Reading {
    pub mementos: Vec<Listed>,
    pub undated: usize,
}

/// Splits `text` at its top-level commas: a comma inside `<…>` or inside a quoted string is part
/// of a URI or a value (RFC 6690 §2). A `>` outside `<…>` is just a character (IA's 2017
/// TimeMaps end their `self` link with a stray one).
pub fn split_links(text: &str) -> Vec<&str> {
    let (mut out, mut start) = (Vec::new(), 0);
    let (mut in_uri, mut in_quote, mut escaped) = (false, false, false);
    for (i, c) in text.char_indices() {
        if in_quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_quote = false,
                _ => {}
            }
        } else if in_uri {
            in_uri = c != '>';
        } else {
            match c {
                '<' => in_uri = true,
                '"' => in_quote = true,
                ',' => {
                    out.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    out.push(&text[start..]);
    out
}

/// The `<URI>` of one link and the parameters after it, as (lower-case name, unquoted value).
fn link_parts(link: &str) -> Option<(&str, Vec<(String, String)>)> {
    let open = link.find('<')?;
    let close = open + link[open..].find('>')?;
    let uri = link[open + 1..close].trim();
    let mut params = Vec::new();
    // Parameters are `;`-separated outside quotes; a value may be quoted (with `\` escapes).
    let rest = &link[close + 1..];
    let (mut piece, mut in_quote, mut escaped) = (String::new(), false, false);
    for c in rest.chars().chain(std::iter::once(';')) {
        if in_quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_quote = false,
                _ => {}
            }
            piece.push(c);
        } else if c == ';' {
            if let Some((name, value)) = piece.split_once('=') {
                let value = value.trim();
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .map_or_else(|| value.to_string(), |v| v.replace("\\\"", "\""));
                params.push((name.trim().to_ascii_lowercase(), value));
            }
            piece.clear();
        } else {
            in_quote = c == '"';
            piece.push(c);
        }
    }
    Some((uri, params))
}

/// Every link whose `rel` holds the relation type `memento`, in the order listed.
pub fn read(text: &str) -> Reading {
    let mut reading = Reading::default();
    for link in split_links(text) {
        let Some((uri, params)) = link_parts(link) else {
            continue;
        };
        // The first occurrence of a parameter counts (RFC 8288 §3).
        let param = |name: &str| params.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let rels: Vec<String> = param("rel")
            .map(|r| r.split_whitespace().map(str::to_ascii_lowercase).collect())
            .unwrap_or_default();
        if !rels.iter().any(|r| r == "memento") {
            continue;
        }
        match param("datetime").and_then(|d| seconds(d)) {
            Some(at) => reading.mementos.push(Listed {
                uri: uri.to_string(),
                rels,
                at,
            }),
            None => reading.undated += 1,
        }
    }
    reading
}

/// An HTTP-date (RFC 7231 §7.1.1.1) in seconds since 1970; None if it is not one.
pub fn seconds(date: &str) -> Option<i64> {
    let t = httpdate::parse_http_date(date.trim()).ok()?;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    i64::try_from(secs).ok()
}

/// The HTTP-date of `secs` seconds since 1970.
pub fn http_date(secs: i64) -> String {
    let secs = u64::try_from(secs).expect("a datetime after 1970");
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// What makes two URI-Ms one memento: equal once the scheme and host are lower-cased and a
/// default port (`:80` for http, `:443` for https) is dropped. Nothing else is normalised: two
/// different URI-Ms at the same second are two mementos (IA lists `http://` and `https://`
/// captures of one page at one second; each is a capture of its own).
pub fn memento_key(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_string();
    };
    let scheme = scheme.to_ascii_lowercase();
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut authority = authority.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => "",
    };
    if !default_port.is_empty() && authority.ends_with(default_port) {
        authority.truncate(authority.len() - default_port.len());
    }
    format!("{scheme}://{authority}{tail}")
}

/// One memento once: its key, the first spelling listed, its datetime (the first listed).
#[derive(Debug, Clone)]
pub struct Distinct {
    pub key: String,
    pub uri: String,
    pub at: i64,
}

/// The distinct mementos of `listed`, in the order first listed.
pub fn distinct<'a>(listed: impl IntoIterator<Item = &'a Listed>) -> Vec<Distinct> {
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for m in listed {
        let key = memento_key(&m.uri);
        if seen.insert(key.clone(), ()).is_none() {
            out.push(Distinct {
                key,
                uri: m.uri.clone(),
                at: m.at,
            });
        }
    }
    out
}

/// The datetime closest to `t` among `mementos` (smallest distance, ties to the earlier) and
/// every memento at it (a TimeGate may pick any of them).
pub fn closest(mementos: &[Distinct], t: i64) -> (i64, Vec<&Distinct>) {
    let best = mementos
        .iter()
        .map(|m| m.at)
        .min_by_key(|&at| ((at - t).abs(), at))
        .expect("at least one memento");
    (best, mementos.iter().filter(|m| m.at == best).collect())
}
