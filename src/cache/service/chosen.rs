//! Answers that leave the stored entry as it is: a client's own choice of archives
//! (`archives=`, `Prefer: archives=`) and `Cache-Control: only-if-cached`.

use super::{CacheStatus, CachedTimeMap, Request, Served, ServedView, TimeMapCache};
use crate::cache::entry::Entry;
use crate::cache::fan_out::{progress, Ask};
use crate::cache::policy::{Action, Freshness};
use crate::cache::store::Store;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::credit::Credits;
use crate::timemap::model::MementoDatetime;
use crate::uri_r::UriR;
use std::sync::Arc;
use std::time::Duration;

/// Whether `only-if-cached` may answer from an entry in this state, and as what: a fresh one
/// is a HIT; one past its freshness (stale-while-revalidate window included, since nothing
/// will revalidate it) only when the client's `max-stale` covers how long it has been
/// expired, as STALE. `None`: answer 504.
pub fn cached_answer(
    freshness: Freshness,
    fresh_until: Option<MementoDatetime>,
    now: MementoDatetime,
    max_stale: Option<Duration>,
) -> Option<CacheStatus> {
    match freshness {
        Freshness::Miss => None,
        Freshness::Fresh => Some(CacheStatus::Hit),
        Freshness::Stale | Freshness::Expired => {
            let expired_for = (now - fresh_until?).to_std().unwrap_or_default();
            (expired_for <= max_stale?).then_some(CacheStatus::Stale)
        }
    }
}

/// The part of `entry` that the archives in `only` contributed, in the entry's order, naming
/// `uri_r` (the client's spelling); None when one of them has no contribution in it (the entry
/// cannot tell what that archive holds).
pub fn restricted(
    entry: &Entry,
    uri_r: &str,
    only: &[String],
    credits: &Credits,
) -> Option<Aggregate> {
    if !only
        .iter()
        .all(|id| entry.contributions.iter().any(|c| &c.archive == id))
    {
        return None;
    }
    let chosen: Vec<_> = entry
        .contributions
        .iter()
        .filter(|c| only.contains(&c.archive))
        .cloned()
        .collect();
    Some(Aggregate::of(uri_r, entry.fetched_at, &chosen, credits))
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// `only-if-cached`: the stored entry (restricted to `only` when given), or None; never
    /// asks an archive and never changes the entry.
    pub async fn cached_only(
        &self,
        uri_r: &UriR,
        only: Option<&[String]>,
        max_stale: Option<Duration>,
    ) -> Option<Served<V>> {
        // Any spelling of the URI-R (canonical keys), named as the client spelled it.
        let cached = self.entry(uri_r).await?;
        let uri_r = uri_r.as_str();
        let now = self.clock.now();
        let freshness = self.policy.freshness(Some(&cached.entry), now);
        let status = cached_answer(freshness, cached.entry.fresh_until, now, max_stale)?;
        let served = match only {
            None => Served::stored_as(&cached, uri_r, self.context.as_ref(), status),
            Some(only) => self.restricted_answer(&cached, uri_r, only, status)?,
        };
        self.stats.count_served(status);
        Some(served)
    }

    /// The answer from the archives in `only` alone: the stored entry's part when it is fresh
    /// and holds each of them, else a fan-out to just those archives. Neither is stored: a
    /// client's choice never replaces the entry every other client is served.
    pub async fn lookup_only(
        self: &Arc<Self>,
        uri_r: &UriR,
        req: Request,
        only: &[String],
    ) -> Served<V> {
        let arrived = tokio::time::Instant::now();
        if !req.no_cache && !req.force {
            if let Some(cached) = self.entry(uri_r).await {
                let now = self.clock.now();
                let fresh = matches!(
                    self.policy.freshness(Some(&cached.entry), now),
                    Freshness::Fresh
                );
                if let Some(served) = fresh
                    .then(|| {
                        self.restricted_answer(&cached, uri_r.as_str(), only, CacheStatus::Hit)
                    })
                    .flatten()
                {
                    self.stats.count_served(CacheStatus::Hit);
                    return served;
                }
            }
        }
        let deadline = req.deadline.unwrap_or(self.archives.deadline());
        let unwatched = progress();
        let fetch = self
            .archives
            .fetch(uri_r, deadline, arrived, Ask::Only(only), None, &unwatched)
            .await;
        // A client's own choice is not routed, but what the archives answered still teaches.
        if let Some(router) = &self.router {
            router.observe(&fetch, uri_r, req.client);
        }
        self.stats.count_fan_out();
        self.stats.count_served(CacheStatus::Miss);
        let mut served = Served::fresh(&fetch, self.context.as_ref(), CacheStatus::Miss);
        served.action = Some(Action::NotStored);
        served
    }

    fn restricted_answer(
        &self,
        cached: &CachedTimeMap<V>,
        uri_r: &str,
        only: &[String],
        status: CacheStatus,
    ) -> Option<Served<V>> {
        let aggregate = restricted(
            &cached.entry,
            uri_r,
            only,
            V::credits(self.context.as_ref()),
        )?;
        let view = Arc::new(V::build(aggregate, self.context.as_ref()));
        Some(Served::with_view(cached, view, status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::datetime::parse_14digit;

    fn at(ts: &str) -> MementoDatetime {
        parse_14digit(ts).expect("timestamp")
    }

    #[test]
    fn a_restricted_entry_holds_only_the_chosen_archives_and_needs_each() {
        use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution};
        use crate::timemap::LinkMemento;
        let contribution = |id: &str, ts: &str| {
            let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
            let m = LinkMemento {
                uri_m: format!("http://{id}/{ts}").into(),
                datetime: at(ts),
            };
            Contribution::listed(id, answer, at("20240101"), vec![m])
        };
        let mut entry: Entry = serde_json::from_value(serde_json::json!({
            "version": crate::cache::entry::ENTRY_FORMAT_VERSION,
            "uri_r": "http://e.com/", "contributions": [],
            "fetched_at": "2024-01-01T00:00:00Z", "checked_at": "2024-01-01T00:00:00Z",
            "fresh_until": null, "loose": 0, "strict": 0, "archives": 0, "history": []
        }))
        .expect("entry");
        entry.contributions = vec![contribution("ia", "2001"), contribution("pt", "2002")];
        let agg =
            restricted(&entry, "e.com", &["pt".to_string()], Credits::none()).expect("pt is in it");
        assert_eq!(agg.outcomes.len(), 1);
        assert_eq!(agg.uri_r, "e.com", "named as the client spelled it");
        assert_eq!(&*agg.timemap.mementos[0].uri_m, "http://pt/2002");
        assert!(restricted(
            &entry,
            "e.com",
            &["pt".to_string(), "uk".to_string()],
            Credits::none()
        )
        .is_none());
    }

    #[test]
    fn only_if_cached_serves_fresh_and_covered_stale_entries_only() {
        let until = Some(at("20240110"));
        let now = at("20240111");
        let day = Duration::from_secs(86_400);
        assert_eq!(cached_answer(Freshness::Miss, None, now, Some(day)), None);
        assert_eq!(
            cached_answer(Freshness::Fresh, until, now, None),
            Some(CacheStatus::Hit)
        );
        for expired in [Freshness::Stale, Freshness::Expired] {
            assert_eq!(cached_answer(expired, until, now, None), None);
            assert_eq!(
                cached_answer(expired, until, now, Some(day)),
                Some(CacheStatus::Stale)
            );
            assert_eq!(cached_answer(expired, until, now, Some(day / 2)), None);
        }
    }
}
