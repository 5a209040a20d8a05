//! The series format: one observation of one URI-R's TimeMap per line, as JSON, read and written
//! one line at a time so a series of any size streams.
//!
//! ```text
//! {"uri_r": "http://a.example/", "day": 0, "status": "ok", "mementos": [["ia", "20120430120000", "http://ia/…"]]}
//! ```
//!
//! `status` is the observer's, not an archive's: `failed` means the observer could not look that
//! day (its outage), so [`LiveReader`] substitutes the previous day's TimeMap, as the paper did.
//! An archive that is absent from an `ok` line was not observed answering that day.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, BufRead, Write};
use tmproxy_core::timemap::datetime::{format_14digit, parse_14digit};

/// Whether the observer saw the TimeMap that day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObsStatus {
    Ok,
    Failed,
}

/// One line of a series: `(archive, YYYYMMDDhhmmss, URI-M)` per memento, as the observer saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub uri_r: String,
    pub day: u32,
    pub status: ObsStatus,
    #[serde(default)]
    pub mementos: Vec<(String, String, String)>,
}

/// One memento of a live TimeMap, its datetime parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveMemento {
    pub archive: String,
    pub datetime: DateTime<Utc>,
    pub uri_m: String,
}

/// L(r, t): the TimeMap the replay takes as live for one URI-R on one day, failures resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDay {
    /// The line it came from, for errors further down.
    pub line: usize,
    pub uri_r: String,
    pub day: u32,
    /// True when the observer failed that day and this is the previous day's TimeMap.
    pub carried: bool,
    pub mementos: Vec<LiveMemento>,
}

/// A series that cannot be read, with the line (1-based) at fault; line 0 = not tied to a line.
#[derive(Debug)]
pub struct SeriesError {
    pub line: usize,
    pub message: String,
}

impl SeriesError {
    fn at(line: usize, message: impl Into<String>) -> SeriesError {
        SeriesError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for SeriesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for SeriesError {}

/// Reads observations line by line; blank lines are skipped (a trailing newline is not an error).
pub struct SeriesReader<R> {
    input: R,
    line: usize,
    buf: String,
}

impl<R: BufRead> SeriesReader<R> {
    pub fn new(input: R) -> Self {
        SeriesReader {
            input,
            line: 0,
            buf: String::new(),
        }
    }
}

impl<R: BufRead> Iterator for SeriesReader<R> {
    /// The observation and its 1-based line number.
    type Item = Result<(usize, Observation), SeriesError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(SeriesError::at(self.line, format!("read: {e}")))),
            }
            let text = self.buf.trim();
            if text.is_empty() {
                continue;
            }
            return Some(
                serde_json::from_str::<Observation>(text)
                    .map(|o| (self.line, o))
                    .map_err(|e| SeriesError::at(self.line, format!("not an observation: {e}"))),
            );
        }
    }
}

/// Writes observations one per line.
pub struct SeriesWriter<W> {
    out: W,
}

impl<W: Write> SeriesWriter<W> {
    pub fn new(out: W) -> Self {
        SeriesWriter { out }
    }

    pub fn write(&mut self, obs: &Observation) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, obs)?;
        self.out.write_all(b"\n")
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Turns observations into live days: checks the order the replay relies on (sorted by `uri_r`,
/// then days 0, 1, 2, … without gaps, so one URI-R's state is all it keeps) and replaces a failed
/// day by the day before (an empty TimeMap on a failed first day). [`LiveReader`] runs it over
/// a file; a generator can run it over observations it makes, without JSON in between.
#[derive(Default)]
pub struct LiveResolver {
    /// The previous URI-R, its last day and its last TimeMap: all the memory a series costs.
    prev: Option<(String, u32, Vec<LiveMemento>)>,
}

impl LiveResolver {
    pub fn new() -> Self {
        LiveResolver::default()
    }

    /// The live day of `obs`, read from line `line` (0 when it did not come from a file).
    pub fn resolve(&mut self, line: usize, obs: Observation) -> Result<LiveDay, SeriesError> {
        let expected_day = match &self.prev {
            Some((uri_r, day, _)) if *uri_r == obs.uri_r => day.checked_add(1),
            Some((uri_r, _, _)) if obs.uri_r < *uri_r => {
                return Err(SeriesError::at(
                    line,
                    format!(
                        "series not sorted by uri_r then day: `{}` after `{uri_r}` \
                         (sort it, e.g. `sort -s -t'\"' -k4,4`, or regenerate it)",
                        obs.uri_r
                    ),
                ));
            }
            _ => Some(0),
        };
        if Some(obs.day) != expected_day {
            return Err(SeriesError::at(
                line,
                format!(
                    "series not sorted by uri_r then day: `{}` day {} where day {} was expected \
                     (each URI-R needs days 0, 1, 2, … in order, without gaps or repeats)",
                    obs.uri_r,
                    obs.day,
                    expected_day.map_or_else(|| "?".to_string(), |d| d.to_string())
                ),
            ));
        }
        let (mementos, carried) = match obs.status {
            ObsStatus::Ok => (parse_mementos(line, &obs.mementos)?, false),
            ObsStatus::Failed => {
                let previous = match &mut self.prev {
                    Some((uri_r, _, tm)) if *uri_r == obs.uri_r => std::mem::take(tm),
                    _ => Vec::new(),
                };
                (previous, true)
            }
        };
        self.prev = Some((obs.uri_r.clone(), obs.day, mementos.clone()));
        Ok(LiveDay {
            line,
            uri_r: obs.uri_r,
            day: obs.day,
            carried,
            mementos,
        })
    }
}

/// Reads a series file as live days ([`LiveResolver`] over [`SeriesReader`]).
pub struct LiveReader<R> {
    reader: SeriesReader<R>,
    resolver: LiveResolver,
}

impl<R: BufRead> LiveReader<R> {
    pub fn new(input: R) -> Self {
        LiveReader {
            reader: SeriesReader::new(input),
            resolver: LiveResolver::new(),
        }
    }
}

impl<R: BufRead> Iterator for LiveReader<R> {
    type Item = Result<LiveDay, SeriesError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (line, obs) = match self.reader.next()? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        Some(self.resolver.resolve(line, obs))
    }
}

/// Collects consecutive live days into one URI-R's days at a time (a series is sorted by URI-R),
/// so a consumer can work URI-R by URI-R with memory for one URI-R only.
#[derive(Default)]
pub struct UriGroups {
    current: Vec<LiveDay>,
}

impl UriGroups {
    pub fn new() -> Self {
        UriGroups::default()
    }

    /// Adds a day; returns the previous URI-R's days when this day starts a new URI-R.
    pub fn push(&mut self, day: LiveDay) -> Option<Vec<LiveDay>> {
        let done = match self.current.last() {
            Some(last) if last.uri_r != day.uri_r => Some(std::mem::take(&mut self.current)),
            _ => None,
        };
        self.current.push(day);
        done
    }

    /// The last URI-R's days, if any.
    pub fn finish(self) -> Option<Vec<LiveDay>> {
        (!self.current.is_empty()).then_some(self.current)
    }
}

fn parse_mementos(
    line: usize,
    raw: &[(String, String, String)],
) -> Result<Vec<LiveMemento>, SeriesError> {
    raw.iter()
        .map(|(archive, ts, uri_m)| {
            // Exactly 14 digits: a shorter timestamp would silently mean midnight or January.
            let datetime = (ts.len() == 14)
                .then(|| parse_14digit(ts))
                .flatten()
                .ok_or_else(|| {
                    SeriesError::at(
                        line,
                        format!("memento datetime `{ts}` is not YYYYMMDDhhmmss"),
                    )
                })?;
            Ok(LiveMemento {
                archive: archive.clone(),
                datetime,
                uri_m: uri_m.clone(),
            })
        })
        .collect()
}

/// The series form of a memento.
pub fn memento_triple(
    archive: &str,
    datetime: DateTime<Utc>,
    uri_m: &str,
) -> (String, String, String) {
    (
        archive.to_string(),
        format_14digit(datetime),
        uri_m.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(uri_r: &str, day: u32, status: ObsStatus, n: usize) -> Observation {
        Observation {
            uri_r: uri_r.to_string(),
            day,
            status,
            mementos: (0..n)
                .map(|k| {
                    (
                        "ia".to_string(),
                        format!("2001010100{k:02}00"),
                        format!("http://ia/{k}"),
                    )
                })
                .collect(),
        }
    }

    fn write_all(list: &[Observation]) -> Vec<u8> {
        let mut w = SeriesWriter::new(Vec::new());
        for o in list {
            w.write(o).expect("write to a Vec");
        }
        w.into_inner()
    }

    fn live(bytes: &[u8]) -> Result<Vec<LiveDay>, SeriesError> {
        LiveReader::new(bytes).collect()
    }

    #[test]
    fn observations_round_trip_one_per_line() {
        let list = vec![
            obs("http://a/", 0, ObsStatus::Ok, 2),
            obs("http://a/", 1, ObsStatus::Failed, 0),
        ];
        let bytes = write_all(&list);
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 2);
        let back: Vec<Observation> = SeriesReader::new(&bytes[..])
            .map(|r| r.expect("readable").1)
            .collect();
        assert_eq!(back, list);
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(text.contains(r#""status":"failed""#), "{text}");
        assert!(
            text.contains(r#"["ia","20010101000000","http://ia/0"]"#),
            "{text}"
        );
    }

    #[test]
    fn a_malformed_line_is_named_by_its_number() {
        let mut bytes = write_all(&[obs("http://a/", 0, ObsStatus::Ok, 1)]);
        bytes.extend_from_slice(b"\n{\"uri_r\": \"http://a/\", \"day\": 1,\n");
        let err = live(&bytes).expect_err("line 3 is broken");
        assert_eq!(err.line, 3);
        assert!(err.to_string().starts_with("line 3: "), "{err}");
    }

    #[test]
    fn a_bad_datetime_is_named_by_its_line() {
        let mut o = obs("http://a/", 0, ObsStatus::Ok, 1);
        o.mementos[0].1 = "2001".to_string();
        let err = live(&write_all(&[o])).expect_err("short timestamp");
        assert_eq!(err.line, 1);
        assert!(err.message.contains("YYYYMMDDhhmmss"), "{err}");
    }

    #[test]
    fn a_failed_day_repeats_the_previous_timemap_and_a_failed_first_day_is_empty() {
        let bytes = write_all(&[
            obs("http://a/", 0, ObsStatus::Failed, 0),
            obs("http://a/", 1, ObsStatus::Ok, 3),
            obs("http://a/", 2, ObsStatus::Failed, 0),
            obs("http://a/", 3, ObsStatus::Failed, 0),
            obs("http://b/", 0, ObsStatus::Failed, 0),
        ]);
        let days = live(&bytes).expect("valid");
        let sizes: Vec<(bool, usize)> =
            days.iter().map(|d| (d.carried, d.mementos.len())).collect();
        assert_eq!(
            sizes,
            [(true, 0), (false, 3), (true, 3), (true, 3), (true, 0)]
        );
    }

    #[test]
    fn unsorted_series_are_refused_with_the_reason() {
        let back = write_all(&[
            obs("http://b/", 0, ObsStatus::Ok, 1),
            obs("http://a/", 0, ObsStatus::Ok, 1),
        ]);
        let err = live(&back).expect_err("a before b");
        assert_eq!(err.line, 2);
        assert!(err.message.contains("not sorted by uri_r"), "{err}");
        let gap = write_all(&[
            obs("http://a/", 0, ObsStatus::Ok, 1),
            obs("http://a/", 2, ObsStatus::Ok, 1),
        ]);
        let err = live(&gap).expect_err("day 1 missing");
        assert!(err.message.contains("day 1 was expected"), "{err}");
        let late = write_all(&[obs("http://a/", 1, ObsStatus::Ok, 1)]);
        assert!(live(&late).is_err(), "a URI-R starts on day 0");
    }
}
