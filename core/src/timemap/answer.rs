//! What one archive answered, the one type from the fan-out through the policy to the stored
//! entry and the served view: its [`ArchiveAnswer`] (status and details) and, with its mementos,
//! its [`Contribution`].

use super::identity::first_of_each;
use super::model::{LinkMemento, MementoDatetime};
use super::prefix;
use super::refresh::Listing;
use chrono::{DateTime, Utc};
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// How one archive answered. Serialised in lower case, as clients see it in `archives[]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveStatus {
    /// Answered with at least one memento.
    Ok,
    /// Answered 2xx with a TimeMap that lists no memento.
    Empty,
    /// Answered 404: it holds nothing for this URI-R.
    NotFound,
    /// No (complete) answer before its timeout or the request's deadline.
    Timeout,
    /// Connection failure, non-2xx/404 status, oversized body, redirect loop…
    Error,
    /// Answered 2xx but nothing in the body could be read as a TimeMap.
    Malformed,
    /// Not asked: routing judged from its profile that it holds nothing here (detail
    /// `routing`), or the archive asked us to wait (`Retry-After`, detail `retry-after`).
    /// Neither an answer nor a failure: it teaches the profiles nothing, makes no answer
    /// partial, and never shrinks a cached entry.
    Skipped,
}

impl ArchiveStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveStatus::Ok => "ok",
            ArchiveStatus::Empty => "empty",
            ArchiveStatus::NotFound => "not_found",
            ArchiveStatus::Timeout => "timeout",
            ArchiveStatus::Error => "error",
            ArchiveStatus::Malformed => "malformed",
            ArchiveStatus::Skipped => "skipped",
        }
    }

    /// True when the archive gave a usable answer (even "nothing here"): the aggregate may then
    /// say 404 with confidence. False when we could not learn what the archive holds.
    pub fn answered(self) -> bool {
        matches!(
            self,
            ArchiveStatus::Ok | ArchiveStatus::Empty | ArchiveStatus::NotFound
        )
    }

    /// True when the archive was left out on purpose (routing, or its `Retry-After`), not asked
    /// and failed.
    pub fn skipped(self) -> bool {
        self == ArchiveStatus::Skipped
    }
}

/// What an archive said the last time it was asked, apart from its mementos.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveAnswer {
    pub status: ArchiveStatus,
    /// The last HTTP status it sent, when it sent one.
    pub http_status: Option<u16>,
    /// Why it failed, or what was odd (`skipped 3 unreadable entries`, `connection refused`).
    pub detail: Option<String>,
    /// Entries it sent that could not be read and were left out.
    pub skipped: usize,
    /// TimeMap pages fetched from it (1 unless it pages).
    pub pages: usize,
    pub elapsed_ms: u64,
    /// Set when its listing failed and its mementos came from elsewhere: a few, not its TimeMap.
    pub fallback: Option<Fallback>,
}

/// Where the mementos of an archive whose TimeMap (or CDX API) failed came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Its TimeGate: the memento it chose and the first/last/prev/next its `Link` header named.
    Timegate,
}

impl Fallback {
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Timegate => "timegate",
        }
    }
}

impl ArchiveAnswer {
    /// The answer of an archive not asked on purpose: status `skipped`, its reason as detail
    /// (`routing`, `retry-after`).
    pub fn skipped(reason: &str) -> ArchiveAnswer {
        ArchiveAnswer::failed(ArchiveStatus::Skipped, None, Some(reason.to_owned()))
    }

    /// An answer that is a failure (or a 404), with no page read.
    pub fn failed(
        status: ArchiveStatus,
        http_status: Option<u16>,
        detail: Option<String>,
    ) -> ArchiveAnswer {
        ArchiveAnswer {
            status,
            http_status,
            detail,
            skipped: 0,
            pages: 0,
            elapsed_ms: 0,
            fallback: None,
        }
    }
}

/// A memento as its archive listed it, with its absence record under `merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedMemento {
    pub uri_m: Arc<str>,
    pub datetime: MementoDatetime,
    /// Set while the archive keeps answering without it: still served until the redaction rule
    /// drops it. Boxed because it is rare: inline it made every memento 48 bytes instead of 40,
    /// 8 MB more per million in every entry (BENCHMARKS.md, "A 1,000,000-memento TimeMap"). Stored alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<Box<Absence>>,
}

/// A memento missing from `confirmations` consecutive successful answers of its archive, the
/// first of them at `since`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Absence {
    pub since: DateTime<Utc>,
    pub confirmations: u32,
}

impl From<LinkMemento> for ListedMemento {
    fn from(m: LinkMemento) -> Self {
        ListedMemento {
            uri_m: m.uri_m,
            datetime: m.datetime,
            absent: None,
        }
    }
}

/// One archive's part of a fetch, and of the entry the cache keeps: what it answered and the
/// mementos it listed, oldest first, each once ([`super::identity`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "StoredContribution")]
pub struct Contribution {
    pub archive: String,
    /// Its latest answer (a failed archive keeps its older mementos under `merge`, so the status
    /// may be `timeout` while `mementos` is not empty).
    pub answer: ArchiveAnswer,
    /// When `mementos` were last answered by this archive.
    pub fetched_at: DateTime<Utc>,
    pub mementos: Vec<ListedMemento>,
    /// The archive's latest answer when that was a failure and this older answer is served
    /// anyway (a kept entry): the answer above stays what the served mementos came from, so the
    /// archive is not reported missing, and the failure is still told. None once it answers.
    pub last_error: Option<LastError>,
    /// What the answer its mementos came from lets the next ask skip (incremental refreshes).
    pub listing: Listing,
}

/// A failed ask of an archive whose earlier contribution is still served: when, and what came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastError {
    pub at: DateTime<Utc>,
    pub status: ArchiveStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Contribution {
    /// What an archive listed in a fan-out at `fetched_at`, sorted oldest first with each
    /// memento once (the first spelling of its URI-M listed, [`super::identity`]), as the merge
    /// would keep them: archives repeat a memento as `first memento` and `memento`, and the
    /// cache must not count it twice. Distinct URI-Ms at one datetime all stay.
    pub fn listed(
        archive: &str,
        answer: ArchiveAnswer,
        fetched_at: DateTime<Utc>,
        mut mementos: Vec<LinkMemento>,
    ) -> Contribution {
        // Stable: among equal datetimes the listed order stays, so the first spelling is kept.
        mementos.sort_by_key(|m| m.datetime);
        let keep = first_of_each(mementos.iter().map(|m| &*m.uri_m));
        Contribution {
            archive: archive.to_owned(),
            answer,
            fetched_at,
            mementos: mementos
                .into_iter()
                .zip(keep)
                .filter_map(|(m, keep)| keep.then(|| ListedMemento::from(m)))
                .collect(),
            last_error: None,
            listing: Listing::default(),
        }
    }

    /// This contribution after its archive was asked again at `at` and failed (`failure`,
    /// whose status is not [`ArchiveStatus::answered`]). An earlier usable answer stays the
    /// served one, with the failure as its `last_error`: its mementos are all there, so
    /// calling the archive missing would be false. An earlier failure is simply replaced.
    pub fn after_failure(&self, failure: &ArchiveAnswer, at: DateTime<Utc>) -> Contribution {
        if !self.answer.status.answered() {
            return Contribution {
                answer: failure.clone(),
                last_error: None,
                ..self.clone()
            };
        }
        Contribution {
            last_error: Some(LastError {
                at,
                status: failure.status,
                http_status: failure.http_status,
                detail: failure.detail.clone(),
            }),
            ..self.clone()
        }
    }
}

// The stored layout (entries written before this type existed): status and HTTP status beside
// the mementos, the rest of the answer in `report`. Serialised by hand rather than through
// `#[serde(into)]`, which would clone every memento of a million-memento entry.
impl Serialize for Contribution {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = &self.answer;
        // A binary form (the cache's compact stored form) has its URI-Ms prefix coded.
        let compact = !serializer.is_human_readable();
        // The fields actually written: a binary map states its length before its fields.
        let listing = !self.listing.is_default();
        let fields = 6 + usize::from(self.last_error.is_some()) + usize::from(listing);
        let mut s = serializer.serialize_struct("Contribution", fields)?;
        s.serialize_field("archive", &self.archive)?;
        s.serialize_field("status", &a.status)?;
        s.serialize_field("http_status", &a.http_status)?;
        s.serialize_field("fetched_at", &self.fetched_at)?;
        if compact {
            s.serialize_field("mementos", &PrefixCoded(&self.mementos))?;
        } else {
            s.serialize_field("mementos", &self.mementos)?;
        }
        s.serialize_field(
            "report",
            &StoredReport {
                detail: a.detail.clone(),
                skipped: a.skipped,
                pages: a.pages,
                elapsed_ms: a.elapsed_ms,
                fallback: a.fallback,
            },
        )?;
        match &self.last_error {
            Some(e) => s.serialize_field("last_error", e)?,
            None => s.skip_field("last_error")?,
        }
        match listing {
            true => s.serialize_field("listing", &self.listing)?,
            false => s.skip_field("listing")?,
        }
        s.end()
    }
}

#[derive(Deserialize)]
struct StoredContribution {
    archive: String,
    status: ArchiveStatus,
    http_status: Option<u16>,
    fetched_at: DateTime<Utc>,
    #[serde(deserialize_with = "stored_mementos")]
    mementos: Vec<ListedMemento>,
    #[serde(default)]
    report: StoredReport,
    #[serde(default)]
    last_error: Option<LastError>,
    #[serde(default)]
    listing: Listing,
}

/// The mementos in a binary form: each as (shared, suffix, seconds, nanoseconds, absent), its
/// URI-M coded against the one before (`prefix`) and its datetime as numbers (a few bytes, not
/// a 20-byte string), built element by element so no list is copied.
struct PrefixCoded<'a>(&'a [ListedMemento]);

impl Serialize for PrefixCoded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut prev = "";
        serializer.collect_seq(self.0.iter().map(|m| {
            let (shared, suffix) = prefix::code(prev, &m.uri_m);
            prev = &m.uri_m;
            let (secs, nanos) = (m.datetime.timestamp(), m.datetime.timestamp_subsec_nanos());
            (shared, suffix, secs, nanos, &m.absent)
        }))
    }
}

/// The mementos as JSON stores them, or prefix coded in a binary form.
fn stored_mementos<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ListedMemento>, D::Error> {
    if d.is_human_readable() {
        return Vec::deserialize(d);
    }
    d.deserialize_seq(PrefixCodedVisitor)
}

struct PrefixCodedVisitor;

impl<'de> Visitor<'de> for PrefixCodedVisitor {
    type Value = Vec<ListedMemento>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of prefix-coded mementos")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // A stated length is a hint from the bytes, so it only bounds the first allocation.
        let mut out: Vec<ListedMemento> =
            Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        type Coded = (usize, String, i64, u32, Option<Box<Absence>>);
        while let Some((shared, suffix, secs, nanos, absent)) = seq.next_element::<Coded>()? {
            let datetime: MementoDatetime = DateTime::from_timestamp(secs, nanos)
                .ok_or_else(|| A::Error::custom(format!("no datetime at {secs} s {nanos} ns")))?;
            let prev = out.last().map_or("", |m| &*m.uri_m);
            let uri_m = prefix::expand(prev, shared, &suffix).ok_or_else(|| {
                A::Error::custom(format!("a URI-M shares {shared} bytes of a shorter one"))
            })?;
            out.push(ListedMemento {
                uri_m: uri_m.into(),
                datetime,
                absent,
            });
        }
        Ok(out)
    }
}

#[derive(Default, Serialize, Deserialize)]
struct StoredReport {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(default)]
    skipped: usize,
    #[serde(default)]
    pages: usize,
    #[serde(default)]
    elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fallback: Option<Fallback>,
}

impl From<StoredContribution> for Contribution {
    fn from(s: StoredContribution) -> Contribution {
        Contribution {
            archive: s.archive,
            answer: ArchiveAnswer {
                status: s.status,
                http_status: s.http_status,
                detail: s.report.detail,
                skipped: s.report.skipped,
                pages: s.report.pages,
                elapsed_ms: s.report.elapsed_ms,
                fallback: s.report.fallback,
            },
            fetched_at: s.fetched_at,
            mementos: s.mementos,
            last_error: s.last_error,
            listing: s.listing,
        }
    }
}

/// One fan-out: each archive's contribution, in the configured order, before any policy or merge
/// has a say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// The URI-R asked for: a first store needs it for the entry.
    pub uri_r: String,
    pub at: DateTime<Utc>,
    pub archives: Vec<Contribution>,
}

impl Fetch {
    /// True when at least one archive gave a usable answer: the fetch is a TimeMap (maybe a
    /// worse one), not an outage.
    pub fn answered(&self) -> bool {
        self.archives.iter().any(|a| a.answer.status.answered())
    }

    /// Mementos listed, over every archive.
    pub fn len(&self) -> usize {
        self.archives.iter().map(|a| a.mementos.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What each archive answered, without the mementos: the fetch as an outage would show it.
    pub fn answers(&self) -> Fetch {
        Fetch {
            uri_r: self.uri_r.clone(),
            at: self.at,
            archives: self
                .archives
                .iter()
                .map(|c| Contribution {
                    archive: c.archive.clone(),
                    answer: c.answer.clone(),
                    fetched_at: c.fetched_at,
                    mementos: Vec::new(),
                    last_error: c.last_error.clone(),
                    listing: Listing::default(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::datetime::parse_14digit;

    fn lm(uri: &str, ts: &str) -> LinkMemento {
        LinkMemento {
            uri_m: uri.into(),
            datetime: parse_14digit(ts).expect("test timestamp"),
        }
    }

    #[test]
    fn a_listed_memento_keeps_its_rare_absence_out_of_line() {
        // An entry holds one per memento: 40 bytes is 8 MB less per million than with the
        // absence inline (48). The JSON form is unchanged; the binary form's round trip with
        // absences is src/cache/store/envelope_entry_tests.rs.
        assert_eq!(std::mem::size_of::<ListedMemento>(), 40);
        let absent = ListedMemento {
            uri_m: "http://ia/a".into(),
            datetime: parse_14digit("20010101000000").expect("ts"),
            absent: Some(Box::new(Absence {
                since: parse_14digit("20240101000000").expect("ts"),
                confirmations: 3,
            })),
        };
        let json = serde_json::to_string(&absent).expect("json");
        assert_eq!(
            serde_json::from_str::<ListedMemento>(&json).expect("json back"),
            absent
        );
    }

    #[test]
    fn a_listed_contribution_is_sorted_with_each_memento_once() {
        let at = parse_14digit("20240101000000").expect("ts");
        let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
        let c = Contribution::listed(
            "ia",
            answer,
            at,
            vec![
                lm("http://ia/b", "20050101000000"),
                lm("http://ia/first", "20010101000000"),
                lm("http://ia/again", "20010101000000"),
                lm("http://IA:80/first", "20010101000000"),
            ],
        );
        let got: Vec<&str> = c.mementos.iter().map(|m| &*m.uri_m).collect();
        // One second's two URI-Ms are two mementos; the repeated one is listed once.
        assert_eq!(got, ["http://ia/first", "http://ia/again", "http://ia/b"]);
    }

    #[test]
    fn a_contribution_keeps_the_stored_layout() {
        let at = parse_14digit("20240101000000").expect("ts");
        let mut answer = ArchiveAnswer::failed(ArchiveStatus::Timeout, None, Some("slow".into()));
        answer.pages = 2;
        answer.elapsed_ms = 1500;
        answer.fallback = Some(Fallback::Timegate);
        let c = Contribution {
            archive: "pt".into(),
            answer,
            fetched_at: at,
            mementos: vec![lm("http://pt/1", "20010101000000").into()],
            last_error: None,
            listing: Default::default(),
        };
        let json = serde_json::to_value(&c).expect("serialise");
        assert_eq!(json["status"], "timeout");
        assert_eq!(json["report"]["detail"], "slow");
        assert_eq!(json["report"]["pages"], 2);
        assert_eq!(json["report"]["fallback"], "timegate");
        let back: Contribution = serde_json::from_value(json).expect("deserialise");
        assert_eq!(back, c);
        // An entry written before reports were kept has none: the answer's details are zero.
        let old = r#"{"archive":"ia","status":"ok","http_status":200,
            "fetched_at":"2024-01-01T00:00:00Z","mementos":[]}"#;
        let back: Contribution = serde_json::from_str(old).expect("old layout");
        assert_eq!(back.answer.pages, 0);
        assert_eq!(back.answer.detail, None);
        assert_eq!(back.answer.fallback, None);
    }
}
