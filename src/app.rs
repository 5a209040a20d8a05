//! Wiring: config → shared state → router, and serving it on a listener until shutdown.

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::http::{router, AppState, SharedState};
use crate::upstream::Upstream;
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Builds the state and router for `config`. `public_url` overrides the configured one (used when
/// the listen address is only known after binding, e.g. port 0).
pub fn build(config: &Config, public_url: Option<String>) -> Result<(SharedState, Router), String> {
    build_with_clock(config, public_url, Arc::new(SystemClock))
}

pub fn build_with_clock(
    config: &Config,
    public_url: Option<String>,
    clock: Arc<dyn Clock>,
) -> Result<(SharedState, Router), String> {
    let upstream = Upstream::new(config, clock.clone())
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let state = Arc::new(AppState {
        upstream,
        public_url: public_url.unwrap_or_else(|| config.public_url()),
        clock,
    });
    Ok((state.clone(), router(state)))
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
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
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
