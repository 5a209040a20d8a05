//! What is served for a URI-R: the merged TimeMap and each archive's outcome, honest about
//! failures. Built once, from a fetch or a stored entry's contributions, where it is served.

use super::answer::{ArchiveAnswer, ArchiveStatus, Contribution, LastError};
use super::credit::Credits;
use super::datetime::format_rfc3339;
use super::merge::merge_with;
use super::model::{MementoDatetime, TimeMap};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::sync::Arc;

/// One archive's part in a served aggregate: its answer and how many of the served mementos
/// are its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveOutcome {
    pub id: String,
    /// Set on the outcome of an archive credited with mementos an aggregator listed: that
    /// aggregator. Its answer is the aggregator's; it was not asked itself.
    pub via: Option<String>,
    pub answer: ArchiveAnswer,
    /// Mementos of the served TimeMap that are this archive's.
    pub mementos: usize,
    /// Mementos it listed that are served as another's, listed by an archive before it.
    pub duplicates: usize,
    /// When the answer above (and the mementos it gave) came.
    pub fetched_at: MementoDatetime,
    /// A later ask that failed while this answer is still served.
    pub last_error: Option<LastError>,
}

/// As clients read it in `archives[]`: `{id, via?, status, http_status, mementos, elapsed_ms,
/// detail?, pages, skipped, fallback?, fetched_at, last_error?}`; `fallback` (`"timegate"`)
/// only when its listing failed and its few mementos came from there (its `status` still says
/// how the listing failed); `last_error` (`{at, status, http_status?, detail?}`) when a later
/// ask failed while this answer is still served.
impl Serialize for ArchiveOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = &self.answer;
        let mut s = serializer.serialize_struct("ArchiveOutcome", 12)?;
        s.serialize_field("id", &self.id)?;
        match &self.via {
            Some(via) => s.serialize_field("via", via)?,
            None => s.skip_field("via")?,
        }
        s.serialize_field("status", &a.status)?;
        s.serialize_field("http_status", &a.http_status)?;
        s.serialize_field("mementos", &self.mementos)?;
        s.serialize_field("elapsed_ms", &a.elapsed_ms)?;
        match &a.detail {
            Some(detail) => s.serialize_field("detail", detail)?,
            None => s.skip_field("detail")?,
        }
        s.serialize_field("pages", &a.pages)?;
        s.serialize_field("skipped", &a.skipped)?;
        match a.fallback {
            Some(f) => s.serialize_field("fallback", f.as_str())?,
            None => s.skip_field("fallback")?,
        }
        s.serialize_field("fetched_at", &format_rfc3339(self.fetched_at))?;
        match &self.last_error {
            Some(e) => s.serialize_field(
                "last_error",
                &LastErrorOut {
                    at: format_rfc3339(e.at),
                    status: e.status,
                    http_status: e.http_status,
                    detail: e.detail.as_deref(),
                },
            )?,
            None => s.skip_field("last_error")?,
        }
        s.end()
    }
}

/// `last_error` as clients read it: the time in the same RFC 3339 form as `fetched_at`.
#[derive(Serialize)]
struct LastErrorOut<'a> {
    at: String,
    status: ArchiveStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

/// The answer to one TimeMap request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    pub uri_r: String,
    /// Shared, so the same TimeMap can be served under another spelling of its URI-R (the
    /// cache's canonical keys) without a copy of its mementos: a clone costs the outcomes only.
    pub timemap: Arc<TimeMap>,
    /// In the configured archive order, then the archives credited with an aggregator's
    /// mementos (`via`).
    pub outcomes: Vec<ArchiveOutcome>,
    pub fetched_at: MementoDatetime,
}

/// What the aggregate means for a client, before any cache has a say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At least one memento; `partial` when some archive could not be asked or read (an archive
    /// routing chose not to ask is not missing: its profile says it holds nothing here; nor is
    /// one that asked us to wait, which says so itself, `skipped` with detail `retry-after`).
    Found { partial: bool },
    /// No memento among the archives that answered; `partial` when others failed, so the
    /// answer is "not in the archives that could be asked" and says which could not.
    NotArchived { partial: bool },
    /// No archive gave a usable answer (or none is enabled): we know nothing.
    /// `timed_out` when every failure was a timeout (→ 504 rather than 502).
    Unavailable { timed_out: bool },
}

impl Aggregate {
    /// The aggregate of `contributions` (a fetch's, or a stored entry's): their mementos merged,
    /// the one place that happens, and each archive's answer with its share of them. A URI-M
    /// that is not http(s) or has a control character is left out: parsing refuses those, but an
    /// entry stored before it did may hold one, and it must never be served (not as a
    /// `Location`, not in a TimeMap).
    /// An aggregator's mementos are credited to the archives whose hosts they are on
    /// (`credits`): each memento's `archive` says so, and each such archive has an outcome of
    /// its own after the configured ones, `via` the aggregator, counting them.
    pub fn of(
        uri_r: &str,
        fetched_at: MementoDatetime,
        contributions: &[Contribution],
        credits: &Credits,
    ) -> Aggregate {
        let merged = merge_with(contributions, credits, crate::uri_text::is_servable_uri_m);
        let mut outcomes: Vec<ArchiveOutcome> = contributions
            .iter()
            .zip(merged.kept.iter().zip(&merged.duplicates))
            .map(|(c, (&kept, &duplicates))| ArchiveOutcome {
                id: c.archive.clone(),
                via: None,
                answer: c.answer.clone(),
                mementos: kept,
                duplicates,
                fetched_at: c.fetched_at,
                last_error: c.last_error.clone(),
            })
            .collect();
        for (rank, per) in &merged.credited {
            let c = &contributions[*rank];
            outcomes.extend(per.iter().map(|(id, n)| ArchiveOutcome {
                id: id.to_string(),
                via: Some(c.archive.clone()),
                answer: c.answer.clone(),
                mementos: *n,
                duplicates: 0,
                fetched_at: c.fetched_at,
                last_error: None,
            }));
        }
        Aggregate {
            uri_r: uri_r.to_owned(),
            timemap: Arc::new(merged.timemap),
            outcomes,
            fetched_at,
        }
    }

    pub fn verdict(&self) -> Verdict {
        let answered = self
            .outcomes
            .iter()
            .filter(|o| o.answer.status.answered())
            .count();
        let partial = self.missing().next().is_some();
        if !self.timemap.is_empty() {
            Verdict::Found { partial }
        } else if answered > 0 {
            Verdict::NotArchived { partial }
        } else {
            Verdict::Unavailable {
                timed_out: self.missing().next().is_some()
                    && self
                        .missing()
                        .all(|o| o.answer.status == ArchiveStatus::Timeout),
            }
        }
    }

    /// The archives whose answer is missing from the aggregate: asked, and failed.
    pub fn missing(&self) -> impl Iterator<Item = &ArchiveOutcome> {
        self.outcomes
            .iter()
            .filter(|o| !o.answer.status.answered() && !o.answer.status.skipped())
    }

    /// The archives not asked on purpose (routing, or their `Retry-After`).
    pub fn skipped(&self) -> impl Iterator<Item = &ArchiveOutcome> {
        self.outcomes.iter().filter(|o| o.answer.status.skipped())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::answer::ListedMemento;
    use crate::timemap::datetime::parse_14digit;

    fn listed(archive: &str, mementos: &[(&str, &str)]) -> Contribution {
        Contribution {
            archive: archive.into(),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: parse_14digit("20261101").expect("ts"),
            mementos: mementos
                .iter()
                .map(|(u, ts)| ListedMemento {
                    uri_m: Arc::from(*u),
                    datetime: parse_14digit(ts).expect("ts"),
                    absent: None,
                })
                .collect(),
            last_error: None,
            listing: Default::default(),
        }
    }

    #[test]
    fn an_aggregators_mementos_are_credited_by_host_and_counted_via_it() {
        let ia = "https://web.archive.org/web/19990125093238/http://a.com/";
        let bibalex = "http://web.archive.bibalex.org:80/web/19990125093238/http://a.com/";
        let later = "https://web.archive.org/web/20000101000000/http://a.com/";
        let contributions = [
            listed("ia", &[(ia, "19990125093238")]),
            // The aggregator lists ia's memento again (spelt with its default port), another
            // archive's at the same second, and one ia did not list.
            listed(
                "mg",
                &[
                    (
                        "https://web.archive.org:443/web/19990125093238/http://a.com/",
                        "19990125093238",
                    ),
                    (bibalex, "19990125093238"),
                    (later, "20000101000000"),
                ],
            ),
        ];
        let credits = Credits::new(["mg"], [("https://web.archive.org/web/", "ia")]);
        let agg = Aggregate::of(
            "http://a.com/",
            contributions[0].fetched_at,
            &contributions,
            &credits,
        );
        let got: Vec<(&str, &str)> = agg
            .timemap
            .mementos
            .iter()
            .map(|m| (&*m.archive, &*m.uri_m))
            .collect();
        assert_eq!(
            got,
            [
                ("ia", ia),
                ("web.archive.bibalex.org", bibalex),
                ("ia", later)
            ]
        );
        let rows: Vec<(&str, Option<&str>, usize, usize)> = agg
            .outcomes
            .iter()
            .map(|o| (&*o.id, o.via.as_deref(), o.mementos, o.duplicates))
            .collect();
        assert_eq!(
            rows,
            [
                ("ia", None, 1, 0),
                ("mg", None, 2, 1),
                ("web.archive.bibalex.org", Some("mg"), 1, 0),
                ("ia", Some("mg"), 1, 0),
            ]
        );
        // Without credits the aggregator's mementos are its own.
        let plain = Aggregate::of(
            "http://a.com/",
            agg.fetched_at,
            &contributions,
            Credits::none(),
        );
        assert!(plain.timemap.mementos[1..]
            .iter()
            .all(|m| &*m.archive == "mg"));
        assert_eq!(plain.outcomes.len(), 2);
    }
}
