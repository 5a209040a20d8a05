//! A `kind = "cdx"` archive's replay template (`https://host/coll/{timestamp}/{url}`) and the
//! mementos it makes of CDX rows. The template is the operator's and is checked once, at
//! config load; the rows are the archive's and hostile: a row whose timestamp is not a date or
//! whose URL is not http(s) is skipped and counted, and the URL is escaped as every served URI
//! is, so it can neither move the URI-M to another host nor break out of a link or a header.
//! An archive's `raw` template is written and checked the same way ([`crate::raw_memento`]).

use super::rows::CdxRow;
use crate::timemap::datetime::parse_14digit;
use crate::timemap::model::LinkMemento;
use crate::uri_text::{escape_uri, is_servable_uri_m};

const TIMESTAMP: &str = "{timestamp}";
const URL: &str = "{url}";

/// A checked replay template: text with one `{timestamp}` and one `{url}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Timestamp,
    Url,
}

/// The template as it was written (its parts joined back), so a config holding it reads back
/// the same.
impl std::fmt::Display for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(t) => f.write_str(t)?,
                Part::Timestamp => f.write_str(TIMESTAMP)?,
                Part::Url => f.write_str(URL)?,
            }
        }
        Ok(())
    }
}

impl Replay {
    /// Checks `template`: an absolute http(s) URL whose scheme, host and port come before any
    /// placeholder (so no row can choose the host), with `{timestamp}` and `{url}` once each and
    /// no other `{…}`, and nothing a link or header could not hold raw.
    pub fn parse(template: &str) -> Result<Replay, String> {
        let bad = |why: &str| Err(format!("{template:?} {why}"));
        if escape_uri(template) != template {
            return bad("holds a space, a control character, a quote, < or >, or non-ASCII text");
        }
        for p in [TIMESTAMP, URL] {
            if template.matches(p).count() != 1 {
                return bad("must contain {timestamp} and {url}, once each");
            }
        }
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let next = [(TIMESTAMP, Part::Timestamp), (URL, Part::Url)]
                .into_iter()
                .filter_map(|(p, part)| rest.find(p).map(|at| (at, p.len(), part)))
                .min_by_key(|(at, _, _)| *at);
            match next {
                Some((at, len, part)) => {
                    if at > 0 {
                        parts.push(Part::Text(rest[..at].to_string()));
                    }
                    parts.push(part);
                    rest = &rest[at + len..];
                }
                None => {
                    parts.push(Part::Text(rest.to_string()));
                    rest = "";
                }
            }
        }
        if parts
            .iter()
            .any(|p| matches!(p, Part::Text(t) if t.contains(['{', '}'])))
        {
            return bad("has a placeholder other than {timestamp} and {url}");
        }
        let Some(Part::Text(head)) = parts.first() else {
            return bad("must start with http:// or https:// and a host, before any placeholder");
        };
        let head_url = url::Url::parse(head)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        // The authority must be closed by a `/` (or `?`) before the first placeholder, or a URL
        // like `evil.example/` put right after `http://host` would become part of the host.
        let authority_closed = head
            .split_once("://")
            .is_some_and(|(_, after)| after.contains(['/', '?']));
        match head_url {
            Some(_) if authority_closed => Ok(Replay { parts }),
            _ => bad("must start with http:// or https://, a host and a /, before any placeholder"),
        }
    }

    /// The fixed text before the first placeholder: scheme, host and the start of the path.
    pub fn prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Text(t)) => t,
            _ => "",
        }
    }

    /// The URI-M for a capture at `timestamp` (digits only, checked by the caller) of `url`,
    /// escaped as every served URI is.
    pub fn uri_m(&self, timestamp: &str, url: &str) -> String {
        let url = escape_uri(url);
        let mut out = String::with_capacity(64 + url.len());
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Timestamp => out.push_str(timestamp),
                Part::Url => out.push_str(&url),
            }
        }
        out
    }

    /// The memento of one CDX row, or None when the row cannot be one: a timestamp that is not
    /// a 4 to 14 digit date, or a URL that is not absolute http(s) with a host.
    pub fn memento(&self, row: &CdxRow) -> Option<LinkMemento> {
        let datetime = parse_14digit(&row.timestamp)?;
        if !is_servable_uri_m(&row.original) || url::Url::parse(&row.original).is_err() {
            return None;
        }
        let uri_m = self.uri_m(&row.timestamp, &row.original);
        is_servable_uri_m(&uri_m).then_some(LinkMemento {
            uri_m: uri_m.into(),
            datetime,
        })
    }

    /// The mementos of `rows`, in their order, and how many rows could not be one. Every
    /// capture is listed whatever its HTTP status (redirects, revisits, errors), as pywb's own
    /// TimeMap lists every row of its index.
    pub fn mementos(&self, rows: &[CdxRow]) -> (Vec<LinkMemento>, usize) {
        let mut out = Vec::with_capacity(rows.len());
        let mut skipped = 0;
        for row in rows {
            match self.memento(row) {
                Some(m) => out.push(m),
                None => skipped += 1,
            }
        }
        (out, skipped)
    }
}
