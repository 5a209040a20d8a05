//! Trace files for `memsim route --trace`: one JSON object per line, in request order,
//! `{"uri_r": "...", "holdings": {"ARCHIVE_ID": MEMENTO_COUNT, ...}, "client": "ADDRESS"}`
//! (`client` optional: the address whose request it was, for `[routing] max_per_client`; a line
//! without one is bounded by no client, as the server's own refreshes are). An archive not listed
//! holds nothing for that URI-R; the archives are those named anywhere in the trace, in the
//! order first named (an id named twice on a line is refused). Other fields are ignored; blank
//! lines are skipped.
//!
//! The input is hostile: a line is read at most [`MAX_LINE`] bytes at a time, and a bad line
//! (too long, not UTF-8, not such an object, a count that is not a whole number up to 2^32 − 1,
//! an id too long or too many archives) refuses the whole trace, naming its line number: a
//! replay of part of a stream would report numbers for a stream nobody gave.

use super::{Archive, Holdings, Request, Stream, Uri};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use tmproxy_core::routing::UriKeys;

/// The longest line read (1 MiB): a URI-R and a few hundred archives fit many times over.
pub const MAX_LINE: usize = 1 << 20;
/// The longest URI-R taken (the server's own bound on a URI-R is far below).
pub const MAX_URI: usize = 64 * 1024;
/// The longest archive id taken.
pub const MAX_ID: usize = 256;
/// The most archives a trace may name (a profile interns archives as u16).
pub const MAX_ARCHIVES: usize = 4096;

#[derive(Deserialize)]
struct Line {
    uri_r: String,
    holdings: Named,
    #[serde(default)]
    client: Option<std::net::IpAddr>,
}

/// A JSON object's `(name, count)` pairs in the order written (a map would sort them, and the
/// archives' order is the order first named), a name given twice refused.
struct Named(Vec<(String, u32)>);

impl<'de> Deserialize<'de> for Named {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Named, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Named;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of archive ids to memento counts")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut m: M) -> Result<Named, M::Error> {
                let mut out: Vec<(String, u32)> = Vec::new();
                while let Some((id, n)) = m.next_entry::<String, u32>()? {
                    if out.iter().any(|(seen, _)| *seen == id) {
                        return Err(serde::de::Error::custom(format!(
                            "archive {id:?} named twice"
                        )));
                    }
                    if out.len() >= MAX_ARCHIVES {
                        return Err(serde::de::Error::custom(
                            "more archives than a trace may name",
                        ));
                    }
                    out.push((id, n));
                }
                Ok(Named(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Why a trace was refused.
#[derive(Debug)]
pub enum TraceError {
    Io(std::io::Error),
    /// A bad line: its number (from 1) and why.
    Line(u64, String),
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Io(e) => write!(f, "{e}"),
            TraceError::Line(n, why) => write!(f, "line {n}: {why}"),
        }
    }
}

/// Reads a trace. `always` names the archives never skipped (ids not in the trace are left
/// out: they are returned so the caller can say so).
pub fn read<R: BufRead>(
    mut input: R,
    always: &[String],
) -> Result<(Stream, Vec<String>), TraceError> {
    let mut stream = Stream::default();
    let mut archive_ix: HashMap<String, u16> = HashMap::new();
    let mut uri_ix: HashMap<String, u32> = HashMap::new();
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        n += 1;
        let read = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(TraceError::Io)?;
        if read == 0 {
            break;
        }
        if buf.len() > MAX_LINE {
            return Err(TraceError::Line(n, format!("longer than {MAX_LINE} bytes")));
        }
        let text =
            std::str::from_utf8(&buf).map_err(|_| TraceError::Line(n, "not UTF-8".to_string()))?;
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(text).map_err(|e| {
            TraceError::Line(
                n,
                format!(
                    "expected {{\"uri_r\": \"...\", \"holdings\": {{\"ARCHIVE_ID\": COUNT}}, \
                     \"client\": \"ADDRESS\" (optional)}}: {e}"
                ),
            )
        })?;
        if line.uri_r.is_empty() || line.uri_r.len() > MAX_URI {
            return Err(TraceError::Line(
                n,
                format!("uri_r must be 1 to {MAX_URI} bytes"),
            ));
        }
        let mut held: Holdings = Vec::new();
        for (id, count) in line.holdings.0 {
            if id.is_empty() || id.len() > MAX_ID || id.chars().any(char::is_control) {
                return Err(TraceError::Line(
                    n,
                    format!("an archive id must be 1 to {MAX_ID} bytes without control characters"),
                ));
            }
            let next = archive_ix.len();
            let a = match archive_ix.get(&id) {
                Some(&a) => a,
                None if next < MAX_ARCHIVES => {
                    stream.archives.push(Archive {
                        always: always.contains(&id),
                        id: id.clone(),
                        latency_ms: None,
                    });
                    archive_ix.insert(id, next as u16);
                    next as u16
                }
                None => {
                    return Err(TraceError::Line(
                        n,
                        format!("more than {MAX_ARCHIVES} archives"),
                    ))
                }
            };
            if count > 0 {
                held.push((a, count));
            }
        }
        held.sort_unstable();
        let next = stream.uris.len() as u32;
        let uri = *uri_ix.entry(line.uri_r.clone()).or_insert_with(|| {
            stream.uris.push(Uri {
                keys: UriKeys::of_uri(&line.uri_r),
                uri_r: line.uri_r,
            });
            next
        });
        stream.holdings.push(held);
        stream.requests.push(Request {
            uri,
            holdings: (stream.holdings.len() - 1) as u32,
            client: line.client,
        });
    }
    let unknown = always
        .iter()
        .filter(|a| !archive_ix.contains_key(*a))
        .cloned()
        .collect();
    Ok((stream, unknown))
}

/// Writes `requests` of `stream` as a trace (every archive of the stream named on the first
/// line, with 0 where it holds nothing, so a replay knows the same archives in the same order).
pub fn write<W: Write>(stream: &Stream, requests: &[Request], mut out: W) -> std::io::Result<()> {
    let json = |s: &str| serde_json::to_string(s).map_err(std::io::Error::other);
    for (i, r) in requests.iter().enumerate() {
        let mut counts = vec![0u32; stream.archives.len()];
        for &(a, c) in &stream.holdings[r.holdings as usize] {
            counts[usize::from(a)] = c;
        }
        // Written by hand, not through a map: the archives in the stream's order.
        let mut pairs = Vec::new();
        for (a, &c) in stream.archives.iter().zip(&counts) {
            if i == 0 || c > 0 {
                pairs.push(format!("{}: {c}", json(&a.id)?));
            }
        }
        let uri = json(&stream.uris[r.uri as usize].uri_r)?;
        let client = match r.client {
            Some(ip) => format!(", \"client\": \"{ip}\""),
            None => String::new(),
        };
        writeln!(
            out,
            "{{\"uri_r\": {uri}, \"holdings\": {{{}}}{client}}}",
            pairs.join(", ")
        )?;
    }
    out.flush()
}
