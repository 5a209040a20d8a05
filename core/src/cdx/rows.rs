//! Reading a CDX server's answers in either dialect: the rows of an `output=json` answer
//! (strictly or leniently), the page count of a `showNumPages=true` one, and which dialect an
//! answer is in.

use serde_json::Value;

/// Which CDX server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// The Internet Archive's (also wayback-cdx-server).
    Ia,
    /// pywb's.
    Pywb,
}

impl std::str::FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ia" => Ok(Dialect::Ia),
            "pywb" => Ok(Dialect::Pywb),
            other => Err(format!("unknown dialect `{other}`: expected ia or pywb")),
        }
    }
}

/// One CDX row, whichever the dialect.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CdxRow {
    pub urlkey: String,
    pub timestamp: String,
    pub original: String,
    pub mime: String,
    pub status: String,
    pub digest: String,
}

/// An answer that is not a CDX answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

/// Rows of an `output=json` answer. An empty body or `[]` is no rows.
pub fn parse_rows(dialect: Dialect, body: &str) -> Result<Vec<CdxRow>, ParseError> {
    let body = body.trim();
    if body.is_empty() {
        return Ok(Vec::new());
    }
    match dialect {
        Dialect::Ia => {
            let v: Vec<Vec<Value>> = serde_json::from_str(body)
                .map_err(|e| ParseError(format!("not an IA CDX JSON array: {e}")))?;
            let Some((header, rows)) = v.split_first() else {
                return Ok(Vec::new());
            };
            let idx = ia_columns(header);
            let field = |row: &[Value], i: Option<usize>| {
                i.and_then(|i| row.get(i))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if idx[1].is_none() {
                return Err(ParseError("IA CDX header row without `timestamp`".into()));
            }
            Ok(rows
                .iter()
                .map(|r| CdxRow {
                    urlkey: field(r, idx[0]),
                    timestamp: field(r, idx[1]),
                    original: field(r, idx[2]),
                    mime: field(r, idx[3]),
                    status: field(r, idx[4]),
                    digest: field(r, idx[5]),
                })
                .collect())
        }
        Dialect::Pywb => body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l)
                    .map_err(|e| ParseError(format!("not a pywb CDX JSON line: {e}")))?;
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                if v.get("timestamp").is_none() {
                    return Err(ParseError("pywb CDX line without `timestamp`".into()));
                }
                Ok(CdxRow {
                    urlkey: s("urlkey"),
                    timestamp: s("timestamp"),
                    original: s("url"),
                    mime: s("mime"),
                    status: s("status"),
                    digest: s("digest"),
                })
            })
            .collect(),
    }
}

/// The number of pages a `showNumPages=true` answer gives.
pub fn parse_num_pages(dialect: Dialect, body: &str) -> Result<u64, ParseError> {
    let body = body.trim();
    match dialect {
        Dialect::Ia => body.parse::<u64>().map_err(|_| {
            ParseError(format!(
                "IA showNumPages answer is not a number: {body:.60}"
            ))
        }),
        Dialect::Pywb => serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v.get("pages").and_then(Value::as_u64))
            .ok_or_else(|| ParseError(format!("pywb showNumPages answer lacks pages: {body:.60}"))),
    }
}

/// Which dialect an `output=json` answer is in: an array of arrays is IA's, objects are pywb's.
pub fn detect_dialect(body: &str) -> Option<Dialect> {
    let t = body.trim_start();
    if t.starts_with('[') {
        Some(Dialect::Ia)
    } else if t.starts_with('{') {
        Some(Dialect::Pywb)
    } else {
        None
    }
}

/// Rows of an `output=json` answer read leniently: the rows that could be read, and how many
/// could not (a row that is not an array or object, or has no `timestamp`). Only a body that is
/// not the dialect's JSON at all (or an IA answer without a usable header row) is an error.
/// IA's array is walked row by row, so no second copy of a large body is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    pub rows: Vec<CdxRow>,
    pub skipped: usize,
}

pub fn read_rows(dialect: Dialect, body: &str) -> Result<Rows, ParseError> {
    let body = body.trim();
    if body.is_empty() {
        return Ok(Rows::default());
    }
    match dialect {
        Dialect::Ia => {
            let mut de = serde_json::Deserializer::from_str(body);
            let rows = serde::de::Deserializer::deserialize_seq(&mut de, IaRows)
                .map_err(|e| ParseError(format!("not an IA CDX JSON array: {e}")))?;
            de.end()
                .map_err(|e| ParseError(format!("not an IA CDX JSON array: {e}")))?;
            rows
        }
        Dialect::Pywb => {
            let mut out = Rows::default();
            // Lines that were JSON objects at all: none means this is not pywb's JSON (an HTML
            // page, CDXJ text), which is an error rather than a pile of skipped rows.
            let mut objects = 0usize;
            for line in body.lines().filter(|l| !l.trim().is_empty()) {
                match serde_json::from_str::<Value>(line) {
                    Ok(v) if v.is_object() => {
                        objects += 1;
                        match pywb_row(&v) {
                            Some(row) => out.rows.push(row),
                            None => out.skipped += 1,
                        }
                    }
                    _ => out.skipped += 1,
                }
            }
            if objects == 0 {
                return Err(ParseError("not pywb CDX JSON lines".into()));
            }
            Ok(out)
        }
    }
}

/// One pywb JSON line as a row, or None without a string `timestamp`.
/// Where an IA CDX JSON header puts urlkey, timestamp, original, mimetype, statuscode and
/// digest (in that order); None for a column it lacks.
fn ia_columns(header: &[Value]) -> [Option<usize>; 6] {
    [
        "urlkey",
        "timestamp",
        "original",
        "mimetype",
        "statuscode",
        "digest",
    ]
    .map(|name| header.iter().position(|h| h.as_str() == Some(name)))
}

fn pywb_row(v: &Value) -> Option<CdxRow> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    v.get("timestamp")?.as_str()?;
    Some(CdxRow {
        urlkey: s("urlkey"),
        timestamp: s("timestamp"),
        original: s("url"),
        mime: s("mime"),
        status: s("status"),
        digest: s("digest"),
    })
}

/// Walks IA's array: the header row names the columns, each later row is read on its own.
struct IaRows;

impl<'de> serde::de::Visitor<'de> for IaRows {
    type Value = Result<Rows, ParseError>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of arrays (IA CDX JSON)")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Some(header) = seq.next_element::<Vec<Value>>()? else {
            return Ok(Ok(Rows::default()));
        };
        let idx = ia_columns(&header);
        let Some(ts) = idx[1] else {
            // Drain the rest so the document is still checked whole, then refuse it.
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(Err(ParseError(
                "IA CDX header row without `timestamp`".into(),
            )));
        };
        let mut out = Rows::default();
        while let Some(row) = seq.next_element::<Value>()? {
            let Some(cells) = row.as_array() else {
                out.skipped += 1;
                continue;
            };
            let field = |i: Option<usize>| {
                i.and_then(|i| cells.get(i))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if cells.get(ts).and_then(Value::as_str).is_none() {
                out.skipped += 1;
                continue;
            }
            out.rows.push(CdxRow {
                urlkey: field(idx[0]),
                timestamp: field(idx[1]),
                original: field(idx[2]),
                mime: field(idx[3]),
                status: field(idx[4]),
                digest: field(idx[5]),
            });
        }
        Ok(Ok(out))
    }
}
