//! What the cache service is asked ([`Request`], with its [`Settings`]) and what it answers
//! ([`Served`]).

use crate::cache::cached::{CachedTimeMap, ServedView};
use crate::cache::policy::{Action, ChangeCase};
use crate::cache::status::CacheStatus;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::answer::Fetch;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use std::sync::Arc;
use std::time::Duration;

/// An answer for the routes: what to serve and the facts its headers need.
#[derive(Debug)]
pub struct Served<V> {
    pub view: Arc<V>,
    pub status: CacheStatus,
    /// On REFRESH: the Table 1 case and what the policy did.
    pub case: Option<ChangeCase>,
    pub action: Option<Action>,
    /// Answered from a fan-out that asked every archive because the request said `Prefer:
    /// archives=all` (its `Preference-Applied`).
    pub all_asked: bool,
    /// When the archives were last asked, and until when the answer is fresh (when the content
    /// was fetched is the view's `aggregate.fetched_at`).
    pub checked_at: MementoDatetime,
    pub fresh_until: Option<MementoDatetime>,
}

impl<V> Clone for Served<V> {
    fn clone(&self) -> Self {
        Served {
            view: self.view.clone(),
            ..*self
        }
    }
}

impl<V: ServedView> Served<V> {
    pub(super) fn stored(
        cached: &CachedTimeMap<V>,
        context: &V::Context,
        status: CacheStatus,
    ) -> Served<V> {
        Self::stored_as(cached, &cached.entry.uri_r, context, status)
    }

    /// The stored entry, its view naming `uri_r` (the spelling the client asked).
    pub(super) fn stored_as(
        cached: &CachedTimeMap<V>,
        uri_r: &str,
        context: &V::Context,
        status: CacheStatus,
    ) -> Served<V> {
        Self::with_view(cached, cached.view_for(uri_r, context), status)
    }

    /// The stored entry's freshness, served through `view` (its own, another spelling's, or a
    /// part of it a client chose).
    pub(super) fn with_view(
        cached: &CachedTimeMap<V>,
        view: Arc<V>,
        status: CacheStatus,
    ) -> Served<V> {
        Served {
            view,
            status,
            case: None,
            action: None,
            all_asked: false,
            checked_at: cached.entry.checked_at,
            fresh_until: cached.entry.fresh_until,
        }
    }

    /// A fetch served as it is (policy `none`, an outage): merged here, where it is served.
    pub(super) fn fresh(fetch: &Fetch, context: &V::Context, status: CacheStatus) -> Served<V> {
        let aggregate = Aggregate::of(&fetch.uri_r, fetch.at, &fetch.archives, V::credits(context));
        let at = aggregate.fetched_at;
        Served {
            view: Arc::new(V::build(aggregate, context)),
            status,
            case: None,
            action: None,
            all_asked: false,
            checked_at: at,
            fresh_until: Some(at),
        }
    }
}

/// What a caller asks of the cache for one URI-R.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    /// The client's own deadline when shorter than the configured one: such a request joins
    /// (or starts) the shared refresh, which runs to `[upstream] deadline` and stores what it
    /// gets, and is answered, unstored, from what has come by its own deadline if that is first.
    pub deadline: Option<Duration>,
    /// `Cache-Control: no-cache`: refresh now, at most once per `min_refresh_interval`.
    pub no_cache: bool,
    /// The admin's explicit refresh: always refreshes.
    pub force: bool,
    /// The format the answer will be rendered in, if the caller knows: a first answer renders
    /// it while its entry is being stored, instead of after.
    pub render: Option<TimeMapFormat>,
    /// `Prefer: archives=all`: any fan-out this request makes asks every archive, whatever
    /// routing would skip (such fan-outs are shared only with requests that asked the same).
    pub ask_all: bool,
    /// The client's address (an IPv6 /64), when a client asked: what a fan-out it starts
    /// teaches routing is bounded per client. None: the server's own (admin, sampling feed).
    pub client: Option<std::net::IpAddr>,
}

/// Cache settings the service applies (the policy itself is pure and separate, stale rules
/// included).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The least time between two refreshes a client's `no-cache` may force for one URI-R.
    pub min_refresh_interval: Duration,
    /// `[cache] canonical`: entries keyed by the URI-R's canonical form
    /// ([`tmproxy_core::surt::canonical_key`]), so its spellings share one; else by its exact text.
    pub canonical: bool,
    /// `[cache] full_refresh`: how long a full listing lasts before a refresh asks in full
    /// again; zero = always in full.
    pub full_refresh: Duration,
}
