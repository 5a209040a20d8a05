//! Writing a decision where other replicas write too: compare-and-set against the entry the
//! policy decided against; when another replica's write landed first, the same fetch is decided
//! again against *that* entry, so a worse TimeMap never replaces a better one across replicas.

use super::{CachedTimeMap, ServedView, TimeMapCache};
use crate::cache::policy::{Action, ChangeCase};
use crate::cache::store::{Cacheable, Observed, PutIf, Store, StoreError, CAS_ATTEMPTS};
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use std::sync::Arc;

/// What a decided write came to.
pub(super) struct Written<V> {
    /// The entry now stored: the one decided, one decided again, or another replica's.
    pub value: Arc<CachedTimeMap<V>>,
    /// When the decision was made again (or given up for the shared entry): its case and
    /// action, which the answer then reports.
    pub redecided: Option<(Option<ChangeCase>, Action)>,
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// Stores `value`, decided on `fetch` against `against` (None: nothing was cached). With a
    /// shared tier, the write lands only if the shared entry is still `against`; else `fetch`
    /// is decided again against the entry found, up to [`CAS_ATTEMPTS`] writes, after which
    /// that entry stands and is installed here. `fetch` None: a first store, whose fetch is
    /// the entry's own contributions.
    pub(super) async fn write_decided(
        &self,
        store: &S,
        key: &str,
        value: Arc<CachedTimeMap<V>>,
        against: Option<&Arc<CachedTimeMap<V>>>,
        fetch: Option<&Fetch>,
        now: MementoDatetime,
    ) -> Result<Written<V>, StoreError> {
        let mut expected = against.map_or(Observed::Absent, |c| Observed::Revision(c.revision()));
        // Only needed once a write lost: then rebuilt from the first store's entry.
        let mut rebuilt = None;
        let first = value.clone();
        let (mut value, mut redecided, mut standing) = (value, None, None);
        for _ in 0..CAS_ATTEMPTS {
            let (current, seen) = match store.put_if(key, value.clone(), expected).await? {
                PutIf::Stored => return Ok(Written { value, redecided }),
                PutIf::Lost { current, seen } => (current, seen),
            };
            expected = seen;
            let fetch = match fetch {
                Some(fetch) => fetch,
                None => rebuilt.get_or_insert_with(|| fetch_of(&first)),
            };
            let decision = self
                .policy
                .decide(current.as_ref().map(|c| &c.entry), fetch, now);
            let (case, action) = (decision.case(), decision.action());
            standing = current;
            match decision.into_entry() {
                Some(entry) => {
                    value = Arc::new(CachedTimeMap::new(entry));
                    redecided = Some((case, action));
                }
                // Cannot happen for an answered fetch under a caching policy; if it did, the
                // shared entry is as good an answer as any.
                None => break,
            }
        }
        // Lost every time: the shared entry stands, here too.
        let Some(standing) = standing else {
            // Nothing readable in its place: ours, locally at least.
            store.install(key, value.clone()).await?;
            return Ok(Written { value, redecided });
        };
        tracing::info!(
            key,
            "another replica's entry stands after {CAS_ATTEMPTS} lost writes"
        );
        store.install(key, standing.clone()).await?;
        Ok(Written {
            value: standing,
            redecided: Some((None, Action::Kept)),
        })
    }
}

/// The fetch a first store's entry was made of: its contributions as the archives gave them.
fn fetch_of<V>(first: &CachedTimeMap<V>) -> Fetch {
    Fetch {
        uri_r: first.entry.uri_r.clone(),
        at: first.entry.fetched_at,
        archives: first.entry.contributions.clone(),
    }
}
