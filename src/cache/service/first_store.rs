//! A URI-R's first answer: served from the fetch's TimeMap, merged once for it, while the fetch
//! becomes the entry and is written beside it, so a TimeMap of millions of mementos is answered by the deadline + 1 s
//! instead of after seconds of storing.

use super::{CacheStatus, CachedTimeMap, Served, ServedView, TimeMapCache};
use crate::cache::policy::Action;
use crate::cache::store::Store;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use std::sync::Arc;
use std::time::Duration;

/// How long past the fan-out's deadline a first answer may wait for its entry to be stored:
/// enough for an ordinary entry when an archive held the fan-out to its deadline (so the answer
/// does not say `not_stored` for a store of milliseconds), and short enough that the deadline
/// + 1 s holds with the answer still to render.
pub(super) const ANSWER_AFTER_DEADLINE: Duration = Duration::from_millis(250);

/// Mementos from which a TimeMap's entry is built and its answer rendered on the blocking pool
/// rather than in place (about 10 ms of work at this size in a release build).
pub(super) const BIG_TIMEMAP: usize = 20_000;

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// A URI-R's first answer (nothing cached): every policy stores the fetch as it is, so the
    /// answer is the fetch's merged TimeMap, served without waiting for the entry to be built
    /// and written. That work (seconds for millions of mementos) goes on in a task of its
    /// own; the answer waits for it until `answer_by` (the deadline + 250 ms) to say `stored`,
    /// and after that says `not_stored`, the write still landing later.
    pub(super) async fn first_store(
        self: &Arc<Self>,
        key: &str,
        fetch: Fetch,
        now: MementoDatetime,
        answer_by: tokio::time::Instant,
        render: Option<TimeMapFormat>,
    ) -> Served<V> {
        self.stats.count_miss();
        // The one merge of this miss: the view's TimeMap, which the entry will keep too (its
        // bodies render on demand).
        let context = self.context.as_ref();
        let aggregate = Aggregate::of(&fetch.uri_r, fetch.at, &fetch.archives, V::credits(context));
        let view = Arc::new(V::build(aggregate, self.context.as_ref()));
        // Rendered beside the store, not after it: for millions of mementos each takes seconds.
        // A small one renders in the handler as any answer does.
        let big = view.aggregate().timemap.len() >= BIG_TIMEMAP;
        let rendering = render.filter(|_| big).map(|format| {
            let view = view.clone();
            tokio::task::spawn_blocking(move || view.prepare(format))
        });
        // What the entry will say: an adaptive TTL reads the fetch's datetimes, as `decide` will.
        let datetimes = fetch
            .archives
            .iter()
            .flat_map(|c| c.mementos.iter().map(|m| m.datetime));
        let fresh_until = self
            .policy
            .fresh_until_for(datetimes, &Default::default(), now);
        let settle = {
            let (this, key, view) = (self.clone(), key.to_string(), view.clone());
            // Until the entry is stored, a request gets this answer: nothing durable yet.
            let meanwhile = Served {
                view: view.clone(),
                status: CacheStatus::Miss,
                case: None,
                action: Some(Action::NotStored),
                all_asked: false,
                checked_at: now,
                fresh_until,
            };
            self.settling
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.clone(), meanwhile);
            tokio::spawn(async move {
                let stored = this.store_first(&key, fetch, view, now).await;
                drop(this.unsettle(&key, CacheStatus::Miss));
                stored
            })
        };
        let reported = match tokio::time::timeout_at(answer_by, settle).await {
            Ok(Ok(action)) => action,
            // The task panicked, or is still at work: nothing durable can be claimed.
            Ok(Err(_)) | Err(_) => Action::NotStored,
        };
        if let Some(rendering) = rendering {
            let _ = rendering.await;
        }
        Served {
            view,
            status: CacheStatus::Miss,
            case: None,
            action: Some(reported),
            all_asked: false,
            checked_at: now,
            fresh_until,
        }
    }

    /// Makes a first fetch the entry, stores it with the view already built, and says what the
    /// policy did, or `not_stored` when the write failed.
    async fn store_first(
        &self,
        key: &str,
        fetch: Fetch,
        view: Arc<V>,
        now: MementoDatetime,
    ) -> Action {
        let Some(store) = &self.store else {
            return Action::NotStored;
        };
        let policy = self.policy.clone();
        let big = fetch.len() >= BIG_TIMEMAP;
        // The fetch moves into the entry: its mementos are not copied again.
        let build = move || (policy.decide_first(fetch, now), view);
        // Milliseconds for an ordinary TimeMap, run in place; seconds for a huge one, which
        // must not hold a runtime thread.
        let (decision, view) = if !big {
            build()
        } else {
            match tokio::task::spawn_blocking(build).await {
                Ok(built) => built,
                Err(_) => return Action::NotStored,
            }
        };
        let (mut case, mut reported) = (decision.case(), decision.action());
        if let Some(entry) = decision.into_entry() {
            let value = Arc::new(CachedTimeMap::with_view(entry, view));
            // If-absent: another replica's first store or refresh that landed meanwhile is
            // decided against, not overwritten.
            match self
                .write_decided(store, key, value.clone(), None, None, now)
                .await
            {
                Ok(written) => {
                    if let Some((c, a)) = written.redecided {
                        (case, reported) = (c, a);
                    }
                }
                Err(e) => {
                    tracing::error!(uri_r = %value.entry.uri_r, error = %e, "cannot store a TimeMap");
                    reported = Action::NotStored;
                }
            }
        }
        self.stats.count_decision(case, reported);
        reported
    }

    /// Takes out the answer a first store (MISS) or a refresh (STALE) left for `key` once it
    /// is over, not one the other kind left; the lock stays held for whatever must change with it.
    pub(super) fn unsettle(
        &self,
        key: &str,
        left: CacheStatus,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Served<V>>> {
        let mut settling = self.settling.lock().unwrap_or_else(|p| p.into_inner());
        if settling.get(key).is_some_and(|s| s.status == left) {
            settling.remove(key);
        }
        settling
    }

    /// The answer for a key whose first store or refresh is still being written: the one its
    /// own request got (MISS `not_stored` from the fetch, or the stored entry STALE).
    pub(super) fn settling_answer(&self, key: &str) -> Option<Served<V>> {
        let served = self
            .settling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)?
            .clone();
        if served.status == CacheStatus::Stale {
            self.stats.count_stale();
        }
        Some(served)
    }
}
