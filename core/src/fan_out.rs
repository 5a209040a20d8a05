//! The words the cache and the upstream share about a fan-out: which archives it asks
//! ([`Ask`]), and what its archives have answered so far ([`Settled`]), published as each one
//! settles: a request whose own deadline is shorter than `[upstream] deadline` is answered from
//! the shared fan-out when its deadline comes, while that fan-out runs on to the server's
//! deadline for the entry every client is served. The channel it is published on is the
//! server's (`cache::fan_out::Progress`).

use crate::routing::Decision;
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, Fetch};
use crate::timemap::incremental::Since;
use crate::timemap::model::MementoDatetime;
use std::sync::Arc;
use std::time::Duration;

/// Which archives a fan-out asks.
#[derive(Debug, Clone, Copy)]
pub enum Ask<'a> {
    /// Every enabled (awake) archive.
    All,
    /// Only these ids (a client's `archives=`): the others are not in the fetch at all.
    Only(&'a [String]),
    /// As routing decided, one route per enabled archive in configured order: an archive it
    /// skips is in the fetch as `skipped` with detail `routing`, and is not asked.
    Routed(&'a Decision),
}

/// What a refresh already holds for its URI-R: each archive's stored contribution, so an
/// archive may be asked only for what is new ([`crate::timemap::incremental`]), and how long a
/// full listing lasts (`[cache] full_refresh`).
#[derive(Debug, Clone, Copy)]
pub struct Prior<'a> {
    pub contributions: &'a [Contribution],
    pub full_refresh: chrono::Duration,
}

impl<'a> Prior<'a> {
    /// `archive`'s stored contribution.
    pub fn of(&self, archive: &str) -> Option<&'a Contribution> {
        self.contributions.iter().find(|c| c.archive == archive)
    }

    /// What a refresh of `archive` at `now` may skip; None: ask in full.
    pub fn since(&self, archive: &str, now: MementoDatetime) -> Option<Since> {
        Since::of(self.of(archive)?, now, self.full_refresh)
    }
}

/// One fan-out's answers so far. Contributions are shared, not copied: publishing one costs a
/// reference count whether anybody watches or not.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    /// When the fan-out began (its fetch's `at`); None until it has.
    pub at: Option<MementoDatetime>,
    /// Every enabled archive, in configured order, each with its contribution once settled
    /// (one the fan-out does not ask, for a client's `archives=`, never is).
    pub archives: Vec<(Arc<str>, Option<Arc<Contribution>>)>,
    /// The fan-out is over and its contributions were taken for the policy: what it stores
    /// comes next, and is the answer to wait for.
    pub done: bool,
}

impl Settled {
    /// The fetch as seen by a client whose own `deadline` came first: what has settled, and
    /// every other archive (each of `ids` when the fan-out has not begun) as a timeout cut by
    /// that deadline. Pure: `now` dates a fetch that has not begun.
    pub fn cut_short(
        &self,
        uri_r: &str,
        ids: &[&str],
        deadline: Duration,
        now: MementoDatetime,
    ) -> Fetch {
        let at = self.at.unwrap_or(now);
        let cut = |id: &str| {
            let detail = format!(
                "no answer within the request deadline ({}s) the client asked for; still asked for the shared entry",
                deadline.as_secs_f64()
            );
            let answer = ArchiveAnswer::failed(ArchiveStatus::Timeout, None, Some(detail));
            Contribution::listed(id, answer, at, Vec::new())
        };
        let archives = match self.at {
            None => ids.iter().map(|id| cut(id)).collect(),
            Some(_) => self
                .archives
                .iter()
                .map(|(id, settled)| match settled {
                    Some(c) => Contribution::clone(c),
                    None => cut(id),
                })
                .collect(),
        };
        Fetch {
            uri_r: uri_r.to_owned(),
            at,
            archives,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(id: &str, at: MementoDatetime) -> Arc<Contribution> {
        let answer = ArchiveAnswer::failed(ArchiveStatus::Empty, Some(200), None);
        Arc::new(Contribution::listed(id, answer, at, Vec::new()))
    }

    #[test]
    fn what_has_not_settled_is_cut_by_the_clients_deadline() {
        let at = chrono::DateTime::UNIX_EPOCH;
        let settled = Settled {
            at: Some(at),
            archives: vec![("a".into(), Some(ok("a", at))), ("b".into(), None)],
            done: false,
        };
        let fetch = settled.cut_short("http://x.org/", &["a", "b"], Duration::from_secs(1), at);
        let status: Vec<_> = fetch.archives.iter().map(|c| c.answer.status).collect();
        assert_eq!(status, [ArchiveStatus::Empty, ArchiveStatus::Timeout]);
        let detail = fetch.archives[1].answer.detail.as_deref().unwrap_or("");
        assert!(
            detail.contains("request deadline (1s) the client"),
            "{detail}"
        );
    }

    #[test]
    fn before_the_fan_out_begins_every_archive_is_cut() {
        let now = chrono::DateTime::UNIX_EPOCH;
        let fetch =
            Settled::default().cut_short("http://x.org/", &["a", "b"], Duration::from_secs(2), now);
        assert_eq!(fetch.archives.len(), 2);
        assert!(fetch
            .archives
            .iter()
            .all(|c| c.answer.status == ArchiveStatus::Timeout));
        assert_eq!(fetch.at, now);
    }
}
