//! Wiring: config → cache, archives and clock → router, and serving it until shutdown.

use crate::cache::observe::ObservationLog;
use crate::cache::policy::{Adaptive, Policy, TtlMode};
use crate::cache::service::{Settings, TimeMapCache};
use crate::cache::store;
use crate::clock::{Clock, SimClock, SystemClock};
use crate::config::Config;
use crate::http::{AppState, SharedState};
use crate::upstream::resolve::{system_lookup, HostLookup};
use crate::upstream::Upstream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

pub use crate::serve::{serve, serve_both, serve_with, ServeOptions};

/// Threads for blocking work (every sled put and its fsync, large parses, file I/O). tokio's
/// default of 512 let a burst of cache writes spread over hundreds of threads, and mimalloc keeps
/// memory per thread: the server's RSS grew with the entries written (hundreds of MiB under the
/// load run) although each tier stayed within its bound. Puts wait on the disk's fsync anyway,
/// so more threads than this buy nothing (BENCHMARKS.md, "Memory under many misses": threads).
pub const MAX_BLOCKING_THREADS: usize = 8;

/// Which clock the server reads: the machine's, or one the admin API sets (`--sim-clock`).
pub enum ClockChoice {
    System,
    Simulated(Arc<SimClock>),
}

/// Builds the state and router for `config`. `public_url` overrides the configured one (used when
/// the listen address is only known after binding, e.g. port 0).
pub async fn build(
    config: &Config,
    public_url: Option<String>,
) -> Result<(SharedState, crate::http::Front), String> {
    build_with_clock(config, public_url, ClockChoice::System).await
}

/// The cache policy the config names (validated there, so a failure here is a bug we report).
pub fn policy_of(config: &Config) -> Result<Policy, String> {
    let c = &config.cache;
    Ok(Policy {
        kind: c.policy,
        matching: c.matching,
        ttl: Some(
            chrono::Duration::from_std(c.ttl).map_err(|_| "cache.ttl: too long".to_string())?,
        ),
        ttl_mode: match c.ttl_mode {
            crate::config::TtlModeName::Fixed => TtlMode::Fixed,
            crate::config::TtlModeName::Adaptive => TtlMode::Adaptive(Adaptive {
                min: chrono::Duration::from_std(c.ttl_min)
                    .map_err(|_| "cache.ttl_min: too long".to_string())?,
                max: chrono::Duration::from_std(c.ttl_max)
                    .map_err(|_| "cache.ttl_max: too long".to_string())?,
                budget: c.ttl_budget,
            }),
        },
        redaction_confirmations: c.redaction_confirmations,
        redaction_grace: chrono::Duration::from_std(c.redaction_grace)
            .map_err(|_| "cache.redaction_grace: too long".to_string())?,
        stale_if_error: c.stale_if_error,
        stale_while_revalidate: chrono::Duration::from_std(c.stale_while_revalidate)
            .map_err(|_| "cache.stale_while_revalidate: too long".to_string())?,
        credits: Arc::new(crate::upstream::registry::credits(config)),
    })
}

/// [`build`] on the clock of your choice. With `[admin] listen` set the router leaves out the
/// admin routes: serve [`crate::http::admin_router`] of the same state on that listener.
pub async fn build_with_clock(
    config: &Config,
    public_url: Option<String>,
    clock: ClockChoice,
) -> Result<(SharedState, crate::http::Front), String> {
    build_with_lookup(config, public_url, clock, system_lookup()).await
}

/// [`build_with_clock`] resolving archive host names with `lookup` (tests: a fixed map).
pub async fn build_with_lookup(
    config: &Config,
    public_url: Option<String>,
    clock: ClockChoice,
    lookup: HostLookup,
) -> Result<(SharedState, crate::http::Front), String> {
    let (clock, sim_clock): (Arc<dyn Clock>, Option<Arc<SimClock>>) = match clock {
        ClockChoice::System => (Arc::new(SystemClock), None),
        ClockChoice::Simulated(sim) => (sim.clone(), Some(sim)),
    };
    let public_url = public_url.unwrap_or_else(|| config.public_url());
    if let Some(why) = crate::upstream::via::archive_at_own_url(config, &public_url) {
        return Err(why);
    }
    // Read before the fan-out exists, so it can be handed to it; the file is read off the
    // async threads.
    let routing = {
        let config = config.clone();
        Arc::new(
            tokio::task::spawn_blocking(move || crate::routing::Routing::open(&config))
                .await
                .map_err(|e| format!("routing profiles: cannot read them: {e}"))?,
        )
    };
    crate::routing::Routing::spawn_saver(Arc::downgrade(&routing));
    let upstream = Arc::new(
        Upstream::new(config, &public_url, clock.clone(), lookup)
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?,
    );
    let policy = policy_of(config)?;
    let store = if !policy.caches() {
        None
    } else {
        Some(
            store::open(
                Path::new(&config.cache.path),
                config.cache.hot_capacity,
                config.cache.write_timeout,
                config.cache.persistent_cache,
            )
            .map_err(|e| format!("cache.path: {e}"))?,
        )
    };
    // Huge entries' renderings, beside sled: the store tells them of every change to a key.
    let view_context = crate::view::ViewContext {
        public_url: public_url.clone(),
        page_size: config.server.page_size,
        // The policy's: what is counted and what is served credit an aggregator's alike.
        credits: policy.credits.clone(),
    };
    let renderings = match (&store, config.cache.renderings_capacity) {
        (Some(_), capacity) if capacity > 0 => Some(
            store::renderings::Renderings::open(
                Path::new(&config.cache.path),
                capacity,
                view_context.clone(),
            )
            .map_err(|e| format!("cache.path: cannot prepare its renderings directory: {e}"))?,
        ),
        _ => None,
    };
    if let Some(renderings) = &renderings {
        // A fan-out reading a huge body waits while a huge entry's renderings are written: two
        // huge TimeMaps are never built and held for writing at once.
        upstream.budget().yield_to(renderings.runs());
    }
    let store = match &renderings {
        Some(renderings) => store
            .map(|s| s.with_overflow(Arc::new(store::renderings::Overflowing(renderings.clone())))),
        None => store,
    };
    let store = match &config.cache.shared {
        Some(address) => store
            .map(|s| {
                store::SharedTier::new(address)
                    .map(|shared| s.with_shared(shared))
                    .map_err(|e| format!("cache.shared: {e}"))
            })
            .transpose()?,
        None => store,
    };
    let observe = if config.observe.log.is_empty() {
        None
    } else {
        Some(
            ObservationLog::open(Path::new(&config.observe.log))
                .await
                .map_err(|e| format!("observe.log: cannot open {}: {e}", config.observe.log))?,
        )
    };
    let settings = Settings {
        min_refresh_interval: config.cache.min_refresh_interval,
        canonical: config.cache.canonical,
        full_refresh: config.cache.full_refresh,
    };
    // With a shared tier, replicas claim each fan-out there, so the archives are asked once.
    let fan_out_lock: Arc<dyn store::FanOutLock> = match store.as_ref().and_then(|s| s.shared()) {
        Some(shared) => Arc::new(shared.clone()),
        None => Arc::new(store::Alone),
    };
    let cache = Arc::new(
        TimeMapCache::new(
            policy,
            settings,
            store,
            upstream.clone(),
            clock.clone(),
            view_context,
            observe,
        )
        .with_router(routing.clone())
        .with_fan_out_lock(fan_out_lock),
    );
    // One subscriber per server: other replicas' stores and purges evict this one's local
    // copies. Weak, so it ends with the cache instead of keeping the sled lock alive.
    if let Some(shared) = cache.store().and_then(|s| s.shared()) {
        shared.spawn_invalidations(Arc::downgrade(&cache));
    }
    // Sampling jobs live in the data directory (by default beside the cache: `data/cache` →
    // `data/sampling/jobs`), so one directory holds everything a restart must find.
    let jobs_dir = config.data_dir().join("sampling").join("jobs");
    // Weak: the jobs must not keep the cache (and its sled lock) alive after the server stops.
    let feed_cache = Arc::downgrade(&cache);
    let fetcher: tmproxy_sampling::jobs::Fetcher = Arc::new(move |uri_r: String, force: bool| {
        let cache = feed_cache.clone();
        Box::pin(async move {
            // The URI-R check every client request passes (length, scheme, control characters,
            // dot segments resolved): a sampled URL is text from an index, and one a client
            // could not ask about is not fetched either.
            let uri_r = match crate::uri_r::UriR::parse(&uri_r) {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!(reason = %e, "sampled URL refused as a URI-R: not fetched");
                    return false;
                }
            };
            let Some(cache) = cache.upgrade() else {
                return true;
            };
            let req = crate::cache::service::Request {
                force,
                ..Default::default()
            };
            let _ = cache.lookup(&uri_r, req).await;
            true
        })
    });
    let jobs = match tmproxy_sampling::jobs::Jobs::open(
        &jobs_dir,
        sampling_bounds(&config.sampling),
        Some(fetcher),
        clock.clone(),
        !config.observe.log.is_empty(),
    ) {
        Ok(j) => Some(j),
        Err(e) => {
            tracing::error!(error = %e, "sampling jobs unavailable");
            None
        }
    };
    let connections = Arc::new(crate::metrics::connections::Connections::new(
        config.server.max_connections,
    ));
    let admin_separate = config.admin.listen.is_some();
    let metrics = Arc::new(crate::metrics::Metrics::new(crate::metrics::Scraped {
        cache: cache.clone(),
        upstream: upstream.clone(),
        connections: connections.clone(),
        admin_separate,
    }));
    let state = Arc::new(AppState {
        renderings,
        upstream,
        cache,
        public_url,
        clock,
        sim_clock,
        admin_token: config.admin.token.clone(),
        jobs,
        max_header_bytes: usize::try_from(config.server.max_header_bytes).unwrap_or(usize::MAX),
        rate_limiter: crate::http::rate::Rate::configured(&config.server).map(|rate| {
            Arc::new(crate::http::rate::Limiter::new(
                rate,
                crate::http::rate::MAX_CLIENTS,
            ))
        }),
        admin_separate,
        connections,
        metrics,
        archive_list: config.archives.clone(),
        compat: config.server.compat,
        memento_proxy_max_bytes: config.server.memento_proxy_max_bytes,
        uri_rs: crate::memo::Memo::new(crate::memo::URI_R_SLOTS),
        routing,
    });
    let public = crate::http::front(state.clone());
    Ok((state, public))
}

/// The public URL for a listener: the configured one, or `http://{bound address}`.
pub fn public_url_for(config: &Config, listener: &TcpListener) -> Option<String> {
    if config.server.public_url.is_empty() {
        listener.local_addr().ok().map(|a| format!("http://{a}"))
    } else {
        None
    }
}

/// Resolves on SIGTERM or ctrl-c.
pub async fn shutdown_signal() {
    StopSignals::install().next().await;
    tracing::info!("shutting down: finishing requests in flight");
}

/// SIGTERM and ctrl-c, listened to for the life of the server. Once tokio listens for a signal
/// its default action (ending the process) is gone for good, so the listeners stay installed
/// after the first signal: a second one must still be heard, to cut a slow shutdown short.
pub struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Starts listening (a listener that cannot be installed is logged and never fires).
    pub fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let listen = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::error!(signal = name, error = %e, "cannot listen for the signal");
                    None
                }
            };
            StopSignals {
                term: listen(SignalKind::terminate(), "SIGTERM"),
                interrupt: listen(SignalKind::interrupt(), "SIGINT"),
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The next SIGTERM or ctrl-c.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn one(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = one(&mut self.term) => {},
                _ = one(&mut self.interrupt) => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// After the requests in flight: how long the jobs and the refreshes nobody waits for get to
/// reach a checkpoint or store their result.
pub const SETTLE_WITHIN: Duration = Duration::from_secs(5);
/// How long the last flush of the cache store may take before the process exits anyway (sled
/// recovers from an interrupted flush as from a kill -9).
pub const FLUSH_WITHIN: Duration = Duration::from_secs(2);

/// `[sampling]` as the sampling crate takes it: the file's section stays the server's (read and
/// validated in `config/`), the jobs get its values.
pub(crate) fn sampling_bounds(c: &crate::config::SamplingConfig) -> tmproxy_sampling::jobs::Bounds {
    use tmproxy_sampling::reading::ReadLimits;
    tmproxy_sampling::jobs::Bounds {
        input_dir: c.input_dir.clone(),
        allowed_urls: c.allowed_urls.iter().map(|u| u.url().clone()).collect(),
        concurrency: c.concurrency,
        rate_limit: c.rate_limit,
        limits: tmproxy_sampling::engine::Limits {
            read: ReadLimits {
                max_line: usize::try_from(c.max_line).unwrap_or(usize::MAX),
                max_input_bytes: c.max_input_bytes,
                max_gzip_ratio: c.max_gzip_ratio,
            },
            max_memory: c.max_memory,
        },
    }
}

/// What a stopping server does once it no longer answers: sampling jobs stop at a checkpoint
/// (staying `running` on disk, so the next start resumes them) and the refreshes that run on
/// without a client (a client that hung up, stale-while-revalidate, a feed) get to store their
/// result, both for at most `settle` (zero after a second signal); then the cache store is
/// flushed. Every put was already flushed before its answer went out, so nothing a client was
/// told about depends on this; it only keeps the work in progress.
pub async fn wind_down(state: &AppState, settle: Duration) {
    let jobs = async {
        if let Some(jobs) = &state.jobs {
            if !jobs.stop_all_and_wait(settle).await {
                tracing::warn!(within = ?settle, "sampling jobs still busy: left to resume from their checkpoint");
            }
        }
    };
    let refreshes = async {
        let started = tokio::time::Instant::now();
        loop {
            let left = state.cache.refreshes_in_flight();
            if left == 0 {
                break;
            }
            if started.elapsed() >= settle {
                tracing::warn!(refreshes = left, within = ?settle, "refreshes still running: dropped");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::join!(jobs, refreshes);
    // What the fan-outs taught since the last periodic save.
    let routing = state.routing.clone();
    match tokio::task::spawn_blocking(move || routing.save()).await {
        Ok(Ok(true)) => tracing::info!("routing profiles saved"),
        Ok(Ok(false)) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "cannot save the routing profiles"),
        Err(e) => tracing::error!(error = %e, "cannot save the routing profiles"),
    }
    match tokio::time::timeout(FLUSH_WITHIN, state.cache.flush()).await {
        Ok(Ok(())) => tracing::info!("cache store flushed"),
        Ok(Err(e)) => tracing::error!(error = %e, "cannot flush the cache store"),
        Err(_) => tracing::error!(within = ?FLUSH_WITHIN, "the cache store's flush did not finish"),
    }
}

#[cfg(test)]
mod tests {
    /// The `[sampling]` defaults are the sampling crate's own (a job the server runs and one
    /// `tmproxy sample` runs without `--config` get the same limits).
    #[test]
    fn the_config_defaults_are_the_sampling_crates() {
        let c = crate::config::SamplingConfig::default();
        assert_eq!(
            super::sampling_bounds(&c),
            tmproxy_sampling::jobs::Bounds::default()
        );
    }
}
