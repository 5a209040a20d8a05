//! Wiring: config → cache, archives and clock → router, and serving it until shutdown.

use crate::cache::observe::ObservationLog;
use crate::cache::policy::{Match, Policy, PolicyKind};
use crate::cache::service::{Settings, TimeMapCache};
use crate::cache::store;
use crate::clock::{Clock, SimClock, SystemClock};
use crate::config::Config;
use crate::http::{admin_router, router, AppState, SharedState};
use crate::upstream::Upstream;
use axum::Router;
use futures::FutureExt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;

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
) -> Result<(SharedState, Router), String> {
    build_with_clock(config, public_url, ClockChoice::System).await
}

/// The cache policy the config names (validated there, so a failure here is a bug we report).
pub fn policy_of(config: &Config) -> Result<Policy, String> {
    let c = &config.cache;
    Ok(Policy {
        kind: c
            .policy
            .parse::<PolicyKind>()
            .map_err(|e| format!("cache.policy: {e}"))?,
        matching: c
            .matching
            .parse::<Match>()
            .map_err(|e| format!("cache.match: {e}"))?,
        ttl: Some(
            chrono::Duration::from_std(c.ttl).map_err(|_| "cache.ttl: too long".to_string())?,
        ),
        redaction_confirmations: c.redaction_confirmations,
        redaction_grace: chrono::Duration::from_std(c.redaction_grace)
            .map_err(|_| "cache.redaction_grace: too long".to_string())?,
    })
}

/// [`build`] on the clock of your choice. With `[admin] listen` set the router leaves out the
/// admin routes: [`build_routers`] gives both.
pub async fn build_with_clock(
    config: &Config,
    public_url: Option<String>,
    clock: ClockChoice,
) -> Result<(SharedState, Router), String> {
    let built = build_routers(config, public_url, clock).await?;
    Ok((built.state, built.public))
}

/// What [`build_routers`] makes: the state, the public router, and the admin router when
/// `[admin] listen` gives the admin API a listener of its own.
pub struct Built {
    pub state: SharedState,
    pub public: Router,
    pub admin: Option<Router>,
}

/// The state and a router per listener.
pub async fn build_routers(
    config: &Config,
    public_url: Option<String>,
    clock: ClockChoice,
) -> Result<Built, String> {
    let (clock, sim_clock): (Arc<dyn Clock>, Option<Arc<SimClock>>) = match clock {
        ClockChoice::System => (Arc::new(SystemClock), None),
        ClockChoice::Simulated(sim) => (sim.clone(), Some(sim)),
    };
    let public_url = public_url.unwrap_or_else(|| config.public_url());
    let upstream = Arc::new(
        Upstream::new(config, clock.clone())
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?,
    );
    let policy = policy_of(config)?;
    let store = if policy.kind == PolicyKind::None {
        None
    } else {
        Some(
            store::open(Path::new(&config.cache.path), config.cache.hot_capacity)
                .map_err(|e| format!("cache.path: {e}"))?,
        )
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
        stale_if_error: config.cache.stale_if_error,
        stale_while_revalidate: config.cache.stale_while_revalidate,
        min_refresh_interval: config.cache.min_refresh_interval,
    };
    let cache = Arc::new(TimeMapCache::new(
        policy,
        settings,
        store,
        upstream.clone(),
        clock.clone(),
        public_url.clone(),
        observe,
    ));
    // Sampling jobs live beside the cache (`data/cache` → `data/sampling/jobs`), so one data
    // directory holds everything a restart must find.
    let jobs_dir = Path::new(&config.cache.path)
        .parent()
        .unwrap_or(Path::new(""))
        .join("sampling")
        .join("jobs");
    // Weak: the jobs must not keep the cache (and its sled lock) alive after the server stops.
    let feed_cache = Arc::downgrade(&cache);
    let fetcher: crate::sampling::jobs::Fetcher = Arc::new(move |uri_r: String, force: bool| {
        let cache = feed_cache.clone();
        Box::pin(async move {
            let Some(cache) = cache.upgrade() else {
                return;
            };
            let req = crate::cache::service::Request {
                force,
                ..Default::default()
            };
            let _ = cache.lookup(&uri_r, req).await;
        })
    });
    let jobs = match crate::sampling::jobs::Jobs::open(
        &jobs_dir,
        config.sampling.clone(),
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
    let state = Arc::new(AppState {
        upstream,
        cache,
        public_url,
        clock,
        sim_clock,
        admin_token: config.admin.token.clone(),
        jobs,
        max_header_bytes: usize::try_from(config.server.max_header_bytes).unwrap_or(usize::MAX),
        rate_limiter: crate::http::rate::Rate::new(
            config.server.rate_limit,
            config.server.rate_burst,
        )
        .map(|rate| {
            Arc::new(crate::http::rate::Limiter::new(
                rate,
                crate::http::rate::MAX_CLIENTS,
            ))
        }),
        admin_separate: config.admin.listen.is_some(),
    });
    let admin = state.admin_separate.then(|| admin_router(state.clone()));
    Ok(Built {
        public: router(state.clone()),
        admin,
        state,
    })
}

/// The public URL for a listener: the configured one, or `http://{bound address}`.
pub fn public_url_for(config: &Config, listener: &TcpListener) -> Option<String> {
    if config.server.public_url.is_empty() {
        listener.local_addr().ok().map(|a| format!("http://{a}"))
    } else {
        None
    }
}

/// Serves `router` on `listener` until `shutdown` resolves; requests in flight then finish.
/// Each request knows its peer's address (`ConnectInfo`), which the rate limit keys on.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Serves the public router and, when given, the admin router on its own listener, until
/// `shutdown` resolves; both then finish their requests in flight. If one listener fails the
/// other is stopped too (a half-up server is harder to notice than a stopped one).
pub async fn serve_both(
    public: (TcpListener, Router),
    admin: Option<(TcpListener, Router)>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let shutdown = shutdown.boxed().shared();
    let Some((admin_listener, admin_router)) = admin else {
        return serve(public.0, public.1, shutdown).await;
    };
    let public = serve(public.0, public.1, shutdown.clone());
    let admin = serve(admin_listener, admin_router, shutdown);
    tokio::try_join!(public, admin).map(|_| ())
}

/// Resolves on SIGTERM or ctrl-c.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
