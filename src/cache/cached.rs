//! What the hot tier holds of an entry: the entry, the view the serving layer built of it
//! ([`ServedView`], a trait here so the cache speaks no HTTP), and views of other spellings of
//! its URI-R asked lately. Below the service and the store's tiers alike: the service builds and
//! serves them, and the renderings tier writes a huge one's bodies to disk.

use super::entry::Entry;
use super::store::Cacheable;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::credit::Credits;
use crate::timemap::serialize::TimeMapFormat;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// What the serving layer makes of an aggregate (for the routes: rendered bodies, ETags,
/// headers). The cache builds one per loaded entry, keeps it beside the entry in the hot tier
/// and hands it out, without looking inside: it speaks no HTTP.
pub trait ServedView: Send + Sync + fmt::Debug + Sized + 'static {
    /// What building a view needs besides the aggregate (the routes: the public base URL).
    type Context: Send + Sync + 'static;
    fn build(aggregate: Aggregate, context: &Self::Context) -> Self;
    /// Whose mementos an aggregator's are, for the aggregates built to be served.
    fn credits(context: &Self::Context) -> &Credits;
    fn aggregate(&self) -> &Aggregate;
    /// Does ahead of the answer what serving `format` needs (seconds for millions of
    /// mementos, so a huge entry's is done on the blocking pool, not in the handler).
    fn prepare(&self, format: TimeMapFormat);
    /// Heap a view of `entry` holds once fully prepared: part of the hot tier's weight.
    fn approx_bytes(entry: &Entry) -> usize;
    /// The same content served under another spelling of its URI-R (canonical keys: the answer
    /// names the URI-R as its client asked it). Cheap: nothing is merged or copied but the
    /// archives' outcomes; each format is rendered again on demand.
    fn respell(this: &Arc<Self>, uri_r: &str, context: &Self::Context) -> Self;
}

/// Views of an entry under other spellings of its URI-R kept beside it (the most recent
/// ones): each holds only the bodies it rendered, so this bounds what they add to the entry.
pub const ALIAS_VIEWS: usize = 2;

/// What the hot tier holds: the stored entry, plus its view, built once per load, and the
/// views of other spellings of its URI-R asked lately (at most [`ALIAS_VIEWS`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent, bound = "")]
pub struct CachedTimeMap<V> {
    pub entry: Entry,
    #[serde(skip)]
    view: OnceLock<Arc<V>>,
    #[serde(skip)]
    aliases: Mutex<Vec<Arc<V>>>,
}

impl<V: ServedView> CachedTimeMap<V> {
    pub fn new(entry: Entry) -> CachedTimeMap<V> {
        CachedTimeMap {
            entry,
            view: OnceLock::new(),
            aliases: Mutex::default(),
        }
    }

    /// An entry whose view is already built (from the fetch it was made of).
    pub(super) fn with_view(entry: Entry, view: Arc<V>) -> CachedTimeMap<V> {
        CachedTimeMap {
            entry,
            view: OnceLock::from(view),
            aliases: Mutex::default(),
        }
    }

    /// Whether the view is built already (a huge entry read from disk has none yet).
    pub(super) fn has_view(&self) -> bool {
        self.view.get().is_some()
    }

    /// The view to serve, built from the entry the first time it is needed.
    pub fn view(&self, context: &V::Context) -> Arc<V> {
        self.view
            .get_or_init(|| {
                let aggregate = aggregate_of(&self.entry, V::credits(context));
                Arc::new(V::build(aggregate, context))
            })
            .clone()
    }

    /// The view naming `uri_r`: the entry's own when it is the stored spelling (a hit as fast as
    /// ever), else one respelled from it, kept for the next request so spelled.
    pub fn view_for(&self, uri_r: &str, context: &V::Context) -> Arc<V> {
        let view = self.view(context);
        if view.aggregate().uri_r == uri_r {
            return view;
        }
        let mut aliases = self.aliases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(alias) = aliases.iter().find(|a| a.aggregate().uri_r == uri_r) {
            return alias.clone();
        }
        let alias = Arc::new(V::respell(&view, uri_r, context));
        if aliases.len() >= ALIAS_VIEWS {
            aliases.remove(0);
        }
        aliases.push(alias.clone());
        alias
    }
}

impl<V: ServedView> Cacheable for CachedTimeMap<V> {
    const FORMAT_VERSION: u32 = super::entry::ENTRY_FORMAT_VERSION;

    /// The entry, plus the view built from it.
    fn approx_bytes(&self) -> usize {
        self.entry.approx_bytes() + V::approx_bytes(&self.entry)
    }

    fn revision(&self) -> u64 {
        tmproxy_core::policy::revision(&self.entry)
    }
}

/// The aggregate a stored entry stands for: its TimeMap and each archive's recorded answer.
pub fn aggregate_of(entry: &Entry, credits: &Credits) -> Aggregate {
    Aggregate::of(
        &entry.uri_r,
        entry.fetched_at,
        &entry.contributions,
        credits,
    )
}
