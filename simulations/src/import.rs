//! Real observations as a series: the proxy's observation log (`[observe] log`, one JSON line per
//! fan-out) and directories of daily link-format TimeMap snapshots, turned into the series format
//! that `replay`, `sweep` and `e2e` read. Pure conversion over parsed records, thin file I/O.
//!
//! Rules, where the observation log's format leaves room:
//! - **Days.** Observation log: whole days since the first line's `at` (floor). Snapshots: the
//!   day folders are numbers (`0`, `1`, …) or dates (`YYYY-MM-DD`), counted from the smallest.
//!   Each URI-R's series starts on the day it was first observed (renumbered to its day 0: a
//!   URI-R first asked for on day 10 has no cache before then, and a replay that began with nine
//!   failed days would cache an empty TimeMap for it) and runs to the last day of the input.
//! - **Several observations of one URI-R on one day:** the last one wins (log order, or file
//!   name order in a snapshot folder).
//! - **Failed days:** a day without an observation of a URI-R after its first, a log line where
//!   no archive answered (every one timeout, error or malformed: the observer learnt nothing),
//!   and a snapshot file that does not parse as a link-format TimeMap. `replay` then carries the
//!   day before, as the paper did.
//! - **Archives** (snapshots): the configured archive whose TimeGate or TimeMap prefix the URI-M
//!   starts with (tmproxy's default list, or the config given), else the URI-M's host.
//! - **The URI-R** of a snapshot is its `rel="original"` link, else the file name
//!   percent-decoded (`http%3A%2F%2Fexample.com%2F` → `http://example.com/`).
//!
//! Memory: the log is in time order and the series in URI-R order, so the whole input is held
//! (as compact memento triples) while it is regrouped; that is the size of the log, not more.

use crate::series::{ObsStatus, Observation, SeriesWriter};
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::Path;
use tmproxy_core::archives::KnownArchive;
use tmproxy_core::observation_log::ObservationLine;
use tmproxy_core::timemap::datetime::format_14digit;
use tmproxy_core::timemap::parse::parse_link_format;

/// What kind of input a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// The series format.
    Series,
    /// The proxy's observation log.
    ObservationLog,
    /// A directory of daily snapshot folders.
    Snapshots,
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::Series => "series",
            InputKind::ObservationLog => "observation log",
            InputKind::Snapshots => "snapshot directory",
        })
    }
}

/// A directory is snapshots; a file whose first non-empty line has an `at` key is an
/// observation log; anything else is read as a series.
pub fn detect(path: &Path) -> io::Result<InputKind> {
    if path.is_dir() {
        return Ok(InputKind::Snapshots);
    }
    let file = std::fs::File::open(path)?;
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Result<serde_json::Value, _> = serde_json::from_str(&line);
        return Ok(match v {
            Ok(v) if v.get("at").is_some() => InputKind::ObservationLog,
            _ => InputKind::Series,
        });
    }
    Ok(InputKind::Series)
}

/// An input that cannot be converted: where, and why.
#[derive(Debug)]
pub struct ImportError(pub String);

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImportError {}

/// A memento as the series lists it: `(archive, YYYYMMDDhhmmss, URI-M)`.
pub type Triple = (String, String, String);

/// One observation before day numbering: when, which URI-R, what was seen (None = failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub uri_r: String,
    pub day: i64,
    pub mementos: Option<Vec<(String, String, String)>>,
}

/// What a conversion produced.
#[derive(Debug, Default)]
pub struct Converted {
    /// In series order (URI-R, then day).
    pub observations: Vec<Observation>,
    pub uri_rs: usize,
    pub days: u32,
    pub failed: usize,
    /// Inputs left out or counted as failed, with why (e.g. unparseable snapshot files).
    pub warnings: Vec<String>,
}

/// Turns observations (any order; later ones win within a URI-R's day) into series order.
pub fn to_series(seen: Vec<Seen>) -> Converted {
    let mut by_uri: BTreeMap<String, BTreeMap<i64, Option<Vec<Triple>>>> = BTreeMap::new();
    let mut last_day = i64::MIN;
    for s in seen {
        last_day = last_day.max(s.day);
        by_uri.entry(s.uri_r).or_default().insert(s.day, s.mementos);
    }
    let mut out = Converted {
        uri_rs: by_uri.len(),
        ..Converted::default()
    };
    for (uri_r, days) in by_uri {
        let Some(&first) = days.keys().next() else {
            continue;
        };
        for d in first..=last_day {
            let mementos = days.get(&d).cloned().flatten();
            let status = if mementos.is_some() {
                ObsStatus::Ok
            } else {
                out.failed += 1;
                ObsStatus::Failed
            };
            out.observations.push(Observation {
                uri_r: uri_r.clone(),
                day: (d - first) as u32,
                status,
                mementos: mementos.unwrap_or_default(),
            });
        }
        out.days = out.days.max((last_day - first + 1) as u32);
    }
    out
}

/// Reads an observation log: days from the first line's `at`.
pub fn read_observation_log<R: BufRead>(input: R) -> Result<Vec<Seen>, ImportError> {
    let mut first: Option<DateTime<Utc>> = None;
    let mut seen = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| ImportError(format!("line {n}: read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        // The server's own line type (tmproxy_core::observation_log), read as it writes it.
        let l: ObservationLine = serde_json::from_str(&line)
            .map_err(|e| ImportError(format!("line {n}: not an observation-log line: {e}")))?;
        let at = DateTime::parse_from_rfc3339(&l.at)
            .map_err(|e| ImportError(format!("line {n}: `at` {:?}: {e}", l.at)))?
            .with_timezone(&Utc);
        let t0 = *first.get_or_insert(at);
        let secs = at.signed_duration_since(t0).num_seconds();
        if secs < 0 {
            return Err(ImportError(format!(
                "line {n}: `at` {} is before the first line's; the log must be in time order",
                l.at
            )));
        }
        let answered = l.archives.iter().any(|a| a.answered());
        let mementos = l
            .mementos
            .into_iter()
            .map(|(a, t, m)| (a.into_owned(), t.into_owned(), m.into_owned()))
            .collect();
        seen.push(Seen {
            uri_r: l.uri_r.into_owned(),
            day: secs.div_euclid(86_400),
            mementos: answered.then_some(mementos),
        });
    }
    Ok(seen)
}

/// The archive a URI-M belongs to: a configured prefix, else its host.
pub fn archive_of(uri_m: &str, archives: &[KnownArchive]) -> String {
    let by_prefix = archives.iter().find(|a| {
        [a.timegate, a.timemap]
            .iter()
            .any(|p| !p.is_empty() && uri_m.starts_with(p))
    });
    if let Some(a) = by_prefix {
        return a.id.to_string();
    }
    url::Url::parse(uri_m)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// One snapshot file's observation: None when it is not a link-format TimeMap with an original
/// (or a file name that names one).
pub fn snapshot_seen(
    body: &str,
    file_name: &str,
    day: i64,
    archives: &[KnownArchive],
) -> Option<Seen> {
    let tm = parse_link_format(body, "");
    let from_name = || {
        let name = percent_encoding::percent_decode_str(file_name).decode_utf8_lossy();
        let name = name
            .strip_suffix(".link")
            .or_else(|| name.strip_suffix(".txt"))
            .unwrap_or(&name)
            .to_string();
        name.contains("://").then_some(name)
    };
    let uri_r = tm.original.clone().or_else(from_name)?;
    // A body that is not empty yet yields no link at all is not a TimeMap: a failed day.
    if tm.original.is_none() && tm.mementos.is_empty() && !body.trim().is_empty() {
        return Some(Seen {
            uri_r,
            day,
            mementos: None,
        });
    }
    let mementos = tm
        .mementos
        .iter()
        .map(|m| {
            (
                archive_of(&m.uri_m, archives),
                format_14digit(m.datetime),
                m.uri_m.to_string(),
            )
        })
        .collect();
    Some(Seen {
        uri_r,
        day,
        mementos: Some(mementos),
    })
}

/// A day folder's number: an integer, or days since 1970-01-01 for a date (rebased later).
fn day_of(name: &str) -> Option<(bool, i64)> {
    if let Ok(n) = name.parse::<i64>() {
        return Some((false, n));
    }
    let d = NaiveDate::parse_from_str(name, "%Y-%m-%d").ok()?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    Some((true, d.signed_duration_since(epoch).num_days()))
}

/// Reads a snapshot directory: `DIR/<day>/<file>` (see the module comment).
pub fn read_snapshots(dir: &Path, archives: &[KnownArchive]) -> Result<Converted, ImportError> {
    let io_err = |p: &Path, e: io::Error| ImportError(format!("{}: {e}", p.display()));
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        if !entry.path().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((dated, day)) = day_of(&name) else {
            return Err(ImportError(format!(
                "{}: day folder `{name}` is neither a number nor YYYY-MM-DD",
                dir.display()
            )));
        };
        folders.push((dated, day, entry.path()));
    }
    if folders.iter().any(|f| f.0) && folders.iter().any(|f| !f.0) {
        return Err(ImportError(format!(
            "{}: day folders mix numbers and dates",
            dir.display()
        )));
    }
    let base = folders.iter().map(|f| f.1).min().unwrap_or(0);
    folders.sort_by_key(|f| f.1);
    let mut seen = Vec::new();
    let mut warnings = Vec::new();
    for (_, day, path) in folders {
        let mut files: Vec<_> = std::fs::read_dir(&path)
            .map_err(|e| io_err(&path, e))?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .collect();
        files.sort_by_key(|e| e.file_name());
        for f in files {
            let p = f.path();
            let name = f.file_name().to_string_lossy().to_string();
            let body = match std::fs::read(&p) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => {
                    warnings.push(format!("{}: {e} (left out)", p.display()));
                    continue;
                }
            };
            match snapshot_seen(&body, &name, day - base, archives) {
                Some(s) => {
                    if s.mementos.is_none() {
                        warnings.push(format!(
                            "{}: not a link-format TimeMap (a failed day)",
                            p.display()
                        ));
                    }
                    seen.push(s);
                }
                None => warnings.push(format!(
                    "{}: no rel=\"original\" link and the file name is not a URI-R (left out)",
                    p.display()
                )),
            }
        }
    }
    let mut c = to_series(seen);
    c.warnings = warnings;
    Ok(c)
}

/// Writes converted observations in the series format.
pub fn write_series<W: Write>(c: &Converted, out: W) -> io::Result<()> {
    let mut w = SeriesWriter::new(out);
    for o in &c.observations {
        w.write(o)?;
    }
    w.into_inner().flush()
}

/// Any input path as series bytes ready for `LiveReader` (a series file is read as it is).
pub fn load(path: &Path) -> Result<(InputKind, Converted), ImportError> {
    let kind = detect(path).map_err(|e| ImportError(format!("{}: {e}", path.display())))?;
    let c = match kind {
        InputKind::Snapshots => read_snapshots(path, tmproxy_core::archives::KNOWN)?,
        InputKind::ObservationLog => {
            let file = std::fs::File::open(path)
                .map_err(|e| ImportError(format!("{}: {e}", path.display())))?;
            let seen = read_observation_log(io::BufReader::new(file))
                .map_err(|e| ImportError(format!("{}: {}", path.display(), e.0)))?;
            to_series(seen)
        }
        InputKind::Series => Converted::default(),
    };
    Ok((kind, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(a: &str, ts: &str) -> (String, String, String) {
        (a.to_string(), ts.to_string(), format!("http://{a}/{ts}"))
    }

    #[test]
    fn log_days_count_from_the_first_at_and_the_last_of_a_day_wins() {
        let log = r#"{"uri_r":"http://b/","at":"2024-01-01T10:00:00Z","archives":[{"id":"ia","status":"ok","mementos":1}],"mementos":[["ia","20200101000000","http://ia/1"]]}
{"uri_r":"http://a/","at":"2024-01-01T12:00:00Z","archives":[{"id":"ia","status":"ok","mementos":1}],"mementos":[["ia","20200101000000","http://ia/1"]]}
{"uri_r":"http://a/","at":"2024-01-02T09:59:59Z","archives":[{"id":"ia","status":"ok","mementos":2}],"mementos":[["ia","20200101000000","http://ia/1"],["ia","20200102000000","http://ia/2"]]}
{"uri_r":"http://b/","at":"2024-01-03T10:00:00Z","archives":[{"id":"ia","status":"timeout","mementos":0}],"mementos":[]}
{"uri_r":"http://a/","at":"2024-01-04T10:00:01Z","archives":[{"id":"ia","status":"not_found","mementos":0}],"mementos":[]}
"#;
        let seen = read_observation_log(log.as_bytes()).expect("valid log");
        // 09:59:59 on Jan 2 is 23:59:59 after the first at: still day 0.
        assert_eq!(
            seen.iter().map(|s| s.day).collect::<Vec<_>>(),
            vec![0, 0, 0, 2, 3]
        );
        let c = to_series(seen);
        assert_eq!((c.uri_rs, c.days), (2, 4));
        let a: Vec<_> = c
            .observations
            .iter()
            .filter(|o| o.uri_r == "http://a/")
            .collect();
        // a: first seen on day 0 (the later of its two day-0 lines wins), nothing on day 1
        // and 2 (failed), an answered 404 on day 3 (ok, empty).
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].mementos.len(), 2);
        assert_eq!(
            a.iter().map(|o| o.status).collect::<Vec<_>>(),
            vec![
                ObsStatus::Ok,
                ObsStatus::Failed,
                ObsStatus::Failed,
                ObsStatus::Ok
            ]
        );
        let b: Vec<_> = c
            .observations
            .iter()
            .filter(|o| o.uri_r == "http://b/")
            .collect();
        // b: day 0 ok, day 1 missing (failed), day 2 only a timeout (failed), day 3 missing.
        assert_eq!(
            b.iter().map(|o| o.status).collect::<Vec<_>>(),
            vec![
                ObsStatus::Ok,
                ObsStatus::Failed,
                ObsStatus::Failed,
                ObsStatus::Failed
            ]
        );
        assert_eq!(c.failed, 5);
    }

    #[test]
    fn a_uri_r_starts_on_its_first_observed_day() {
        let c = to_series(vec![
            Seen {
                uri_r: "http://x/".into(),
                day: 0,
                mementos: Some(vec![m("ia", "20200101000000")]),
            },
            Seen {
                uri_r: "http://y/".into(),
                day: 2,
                mementos: Some(vec![]),
            },
        ]);
        let y: Vec<_> = c
            .observations
            .iter()
            .filter(|o| o.uri_r == "http://y/")
            .collect();
        assert_eq!(y.len(), 1);
        assert_eq!((y[0].day, y[0].status), (0, ObsStatus::Ok));
        assert_eq!(c.observations.len(), 3 + 1);
    }

    #[test]
    fn a_log_out_of_time_order_is_refused_with_its_line() {
        let log = "{\"uri_r\":\"http://a/\",\"at\":\"2024-01-02T00:00:00Z\",\"archives\":[],\"mementos\":[]}\n\
                   {\"uri_r\":\"http://a/\",\"at\":\"2024-01-01T00:00:00Z\",\"archives\":[],\"mementos\":[]}\n";
        let e = read_observation_log(log.as_bytes()).expect_err("out of order");
        assert!(e.0.starts_with("line 2:"), "{e}");
    }

    #[test]
    fn archives_are_found_by_prefix_else_by_host() {
        let archives = tmproxy_core::archives::KNOWN;
        assert_eq!(
            archive_of(
                "https://web.archive.org/web/20200101000000/http://a/",
                archives
            ),
            "ia"
        );
        assert_eq!(
            archive_of(
                "http://archive.example.org/w/20200101000000/http://a/",
                archives
            ),
            "archive.example.org"
        );
    }

    #[test]
    fn snapshots_take_the_original_else_the_file_name_and_flag_garbage() {
        let archives = tmproxy_core::archives::KNOWN;
        let body = "<http://a.example/>; rel=\"original\",\n\
                    <https://web.archive.org/web/20200101000000/http://a.example/>; rel=\"memento\"; datetime=\"Wed, 01 Jan 2020 00:00:00 GMT\"\n";
        let s = snapshot_seen(body, "whatever.link", 3, archives).expect("a TimeMap");
        assert_eq!(s.uri_r, "http://a.example/");
        assert_eq!(
            s.mementos,
            Some(vec![(
                "ia".to_string(),
                "20200101000000".to_string(),
                "https://web.archive.org/web/20200101000000/http://a.example/".to_string()
            )])
        );
        let empty = snapshot_seen("", "http%3A%2F%2Fb.example%2F.link", 0, archives)
            .expect("named by its file");
        assert_eq!(empty.uri_r, "http://b.example/");
        assert_eq!(empty.mementos, Some(vec![]));
        let garbage = snapshot_seen(
            "<html>oops</html>",
            "http%3A%2F%2Fb.example%2F",
            1,
            archives,
        )
        .expect("named by its file");
        assert_eq!(garbage.mementos, None);
        assert!(snapshot_seen("", "notes.txt", 0, archives).is_none());
    }

    #[test]
    fn day_folders_are_numbers_or_dates() {
        assert_eq!(day_of("7"), Some((false, 7)));
        assert_eq!(day_of("1970-01-03"), Some((true, 2)));
        assert_eq!(day_of("monday"), None);
    }
}
