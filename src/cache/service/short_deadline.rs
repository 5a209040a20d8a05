//! A request whose own deadline (`?timeout=`, `Prefer: wait=`) is shorter than `[upstream]
//! deadline`: it joins, or starts, the shared refresh, which runs to the server's deadline and
//! stores what that gives through the policy, and is answered by its own deadline from what has
//! come by then. What a client's deadline cut is never stored for the others, and the archives
//! are asked once, not once per impatient client.

use super::refresh::Begun;
use super::{CacheStatus, CachedTimeMap, Served, ServedView, TimeMapCache};
use crate::cache::policy::Action;
use crate::cache::store::Store;
use crate::timemap::serialize::TimeMapFormat;
use crate::uri_r::UriR;
use std::sync::Arc;
use std::time::Duration;

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// The shared refresh's answer when it comes within `deadline` of the request's arrival;
    /// else the stored entry, STALE, or with none stored, the archives that have answered so
    /// far and the others cut by the client's deadline: a MISS whose action is `not_stored`
    /// (the shared refresh stores its own result when it ends).
    pub(super) async fn within(
        self: &Arc<Self>,
        key: &str,
        uri_r: &UriR,
        begun: Begun<V>,
        render: Option<TimeMapFormat>,
        deadline: Duration,
    ) -> Option<Served<V>> {
        let due = begun.at + deadline;
        let cached = begun.cached.clone();
        let flight = self.flight(key, uri_r, begun, render);
        if let Ok(served) = tokio::time::timeout_at(due, flight.refresh.clone()).await {
            return served;
        }
        let settled = flight.progress.borrow().clone();
        if settled.done {
            // Every archive has answered and the entry is being decided and written: it is the
            // answer, and it comes by the server's deadline + 250 ms at the latest.
            return flight.refresh.await;
        }
        if let Some(c) = cached {
            self.stats.count_stale();
            return Some(Served::stored(
                &c,
                self.context.as_ref(),
                CacheStatus::Stale,
            ));
        }
        let fetch = settled.cut_short(
            uri_r.as_str(),
            &self.archives.ids(),
            deadline,
            self.clock.now(),
        );
        let mut served = Served::fresh(&fetch, self.context.as_ref(), CacheStatus::Miss);
        served.action = Some(Action::NotStored);
        Some(served)
    }
}
