//! What every route is handed: the server's shared state, and the cache type the routes read.

use super::rate::Limiter;
use crate::cache::service::{CachedTimeMap, TimeMapCache};
use crate::cache::store::renderings::Renderings;
use crate::cache::store::Tiered;
use crate::clock::{Clock, SimClock};
use crate::metrics::connections::Connections;
use crate::metrics::Metrics;
use crate::upstream::Upstream;
use crate::uri_r::UriR;
use crate::view::View;
use std::sync::Arc;

/// What every handler shares: the archives, the cache in front of them, our public base URL,
/// the clock (and, with `--sim-clock`, the handle that sets it), the admin token.
pub struct AppState {
    pub upstream: Arc<Upstream>,
    pub cache: Arc<Cache>,
    pub public_url: String,
    pub clock: Arc<dyn Clock>,
    pub sim_clock: Option<Arc<SimClock>>,
    pub admin_token: String,
    /// Sampling jobs; None when the jobs directory could not be opened (the routes say 503).
    pub jobs: Option<Arc<tmproxy_sampling::jobs::Jobs>>,
    /// `[server] max_header_bytes`: more header bytes than this is a 431.
    pub max_header_bytes: usize,
    /// `[server] rate_limit`: the per-client buckets of the Memento routes; None = off.
    pub rate_limiter: Option<Arc<Limiter>>,
    /// `[admin] listen` is set: `/admin/*` and `/metrics` live on their own listener
    /// ([`admin_router`](super::admin_router)) and [`router`](fn@super::router) leaves them out.
    pub admin_separate: bool,
    /// Connections open and refused per listener, counted by the serve loop (`crate::serve`).
    pub connections: Arc<Connections>,
    /// `/metrics`: requests counted as they are answered, the rest read at each scrape.
    pub metrics: Arc<Metrics>,
    /// Every configured archive, enabled or not, in configured order (`/archives`, `/about`).
    pub archive_list: Vec<crate::config::ArchiveConfig>,
    /// `[server] compat`: whose shape `/api/json` answers in.
    pub compat: crate::config::Compat,
    /// `[server] memento_proxy_max_bytes`: the most body bytes `/memento/proxy` passes on.
    pub memento_proxy_max_bytes: u64,
    /// Huge entries' renderings on disk, streamed on a hit (the store's renderings tier); None
    /// with no store or `[cache] renderings_capacity = 0`.
    pub renderings: Option<Arc<Renderings<View>>>,
    /// The URI-Rs parsed lately, by the text after the route: a hit parses its URI-R once.
    pub uri_rs: crate::memo::Memo<Arc<UriR>>,
    /// Archive profiles and the routing decision, saved in the data directory.
    pub routing: Arc<crate::routing::Routing>,
}

pub type SharedState = Arc<AppState>;

/// The cache as the routes use it: entries in the tiered store (memory over disk), each with the
/// [`View`] the routes serve it from.
pub type Cache = TimeMapCache<Tiered<CachedTimeMap<View>>, View>;
