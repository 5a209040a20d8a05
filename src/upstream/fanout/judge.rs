//! Whether an archive is asked at all (dormant, skipped by routing, or held by its own
//! `Retry-After`), and what an asked archive's answer does to its health: a failure of its own
//! counts towards dormancy, a `Retry-After` holds it, and what is ours (the budget, our queue, a
//! client's deadline) does neither.

use super::Upstream;
use crate::timemap::answer::ArchiveAnswer;
use crate::upstream::failure::FailureKind;
use crate::upstream::fetch::ArchiveFetch;
use crate::upstream::ledger::{SkipReason, Turn};
use crate::upstream::registry::{Health, Transition};
use chrono::{DateTime, Utc};
use std::time::Duration;
use tmproxy_core::retry_after::{RetryAfter, DETAIL as RETRY_AFTER};
use tmproxy_core::routing::decide::DETAIL as ROUTING;
use tmproxy_core::routing::Route;

impl Upstream {
    pub(super) fn health_of(&self, i: usize) -> Health {
        // A poisoned lock only means another request panicked mid-update; the data is plain.
        self.health[i]
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Archive `i`'s answer when it is not asked in this fan-out at `now`, counted as a skip:
    /// dormant (an `error`), routed away or holding us off (each `skipped`). None: ask it.
    pub(super) fn not_asked(
        &self,
        i: usize,
        routes: &[Route],
        now: DateTime<Utc>,
    ) -> Option<ArchiveFetch> {
        let health = self.health_of(i);
        if health.is_dormant(now) {
            let until = health
                .dormant_until
                .map(|t| t.to_rfc3339())
                .unwrap_or_default();
            self.ledgers[i].record_skip(SkipReason::Dormant, now);
            return Some(ArchiveFetch::failed(
                FailureKind::Dormant,
                None,
                format!(
                    "dormant after {} consecutive failures; asked again after {until}",
                    health.consecutive_failures
                ),
            ));
        }
        if let Some(Route::Skip(skip)) = routes.get(i) {
            // Why, for an operator following one URI-R (per archive per miss: DEBUG).
            let id = &self.archives[i].id;
            tracing::debug!(archive = %id, reason = %skip.explain(), "archive skipped by routing");
            self.ledgers[i].record_skip(SkipReason::Routing, now);
            return Some(ArchiveFetch::answered(ArchiveAnswer::skipped(ROUTING)));
        }
        if health.held_until(now).is_some() {
            self.ledgers[i].record_skip(SkipReason::RetryAfter, now);
            return Some(ArchiveFetch::answered(ArchiveAnswer::skipped(RETRY_AFTER)));
        }
        None
    }

    /// Until when archive `i` asked us to wait, while that is ahead.
    pub(crate) fn held_until(&self, i: usize) -> Option<DateTime<Utc>> {
        self.health_of(i).held_until(self.clock.now())
    }

    /// Holds archive `i` as its `Retry-After` asks, capped at `max_retry_after`; until when,
    /// or None when there is nothing to wait for (a time past, or Retry-After not honoured).
    pub(crate) fn hold(&self, i: usize, asked: RetryAfter) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        let until = asked.until(now, self.max_retry_after)?;
        let mut h = self.health[i].lock().unwrap_or_else(|p| p.into_inner());
        h.hold(until);
        let held = h.retry_after_until;
        drop(h);
        let (id, until_text) = (&self.archives[i].id, until.to_rfc3339());
        tracing::info!(archive = %id, until = %until_text, "archive asked us to wait: not asked until then");
        held
    }

    /// An asked archive's turn is over: it is counted (`elapsed`: its own time, not our
    /// queue's), a failure is logged, a `Retry-After` holds it, and (when `blame`: the
    /// archive's own doing, not our budget, our queue, a client's short deadline or a 4xx to
    /// what a client asked) its health takes the answer, which may put it to sleep or wake it.
    /// An unblamed answer neither sleeps nor wakes it: a client must not be able to keep a
    /// failing archive awake either. An archive asking us to wait is not blamed: it said when
    /// to come back.
    pub(super) fn settle(
        &self,
        i: usize,
        fetch: &mut ArchiveFetch,
        elapsed: Duration,
        blame: bool,
    ) {
        let now = self.clock.now();
        let id = &self.archives[i].id;
        let status = fetch.answer.status;
        self.ledgers[i].record(Turn::Asked(status), Some(elapsed), now);
        let elapsed_ms = elapsed.as_millis() as u64;
        let held = fetch.retry_after.and_then(|asked| self.hold(i, asked));
        if let Some(until) = held {
            let note = format!("asked us to wait until {}", until.to_rfc3339());
            fetch.answer.detail = Some(match fetch.answer.detail.take() {
                Some(d) => format!("{d}; {note}"),
                None => note,
            });
        }
        if let Some(kind) = fetch.failure_kind() {
            // Debug-formatted: the detail quotes what the archive sent, escaped on one line.
            let detail = fetch.answer.detail.as_deref().unwrap_or("");
            if (blame && held.is_none()) || fetch.unreached() {
                tracing::warn!(archive = %id, %kind, elapsed_ms, ?detail, "archive failed");
            } else {
                tracing::debug!(archive = %id, %kind, elapsed_ms, ?detail, "archive cut off, refused the request or asked us to wait");
            }
        }
        if !blame || held.is_some() {
            return;
        }
        // A TimeGate that stood in for a failed listing shows the archive is up: it is not put
        // to sleep while it gives mementos that way.
        self.judge(i, status.answered() || fetch.answer.fallback.is_some());
    }

    /// The archive's health takes one answer (`alive`) or failure, which may put it to sleep
    /// or wake it; each is said once in the log.
    pub(super) fn judge(&self, i: usize, alive: bool) {
        let (now, id) = (self.clock.now(), &self.archives[i].id);
        let transition = {
            let mut h = self.health[i].lock().unwrap_or_else(|p| p.into_inner());
            let (threshold, span) = (self.failures_before_dormant, self.dormant_for);
            h.record(alive, now, threshold, span)
        };
        match transition {
            Transition::Slept { until } => {
                let until = until.map(|t| t.to_rfc3339()).unwrap_or_default();
                let failures = self.failures_before_dormant;
                tracing::warn!(archive = %id, failures, %until, "archive dormant: not asked until then");
            }
            Transition::Woke => tracing::info!(archive = %id, "archive back: answered again"),
            Transition::None => {}
        }
    }
}
