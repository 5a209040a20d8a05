//! The subcommands behind the thin binary: serve, print one TimeMap, run the demo.

use crate::app;
use crate::config::Config;
use crate::demo;
use crate::timemap::serialize::{render, SelfLinks, TimeMapFormat};
use crate::upstream::Upstream;
use crate::uri_r::UriR;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;

fn load(path: Option<&Path>) -> Result<Config, String> {
    let (config, source) = Config::load(path).map_err(|e| e.to_string())?;
    tracing::info!(%source, "configuration loaded");
    Ok(config)
}

/// `tmproxy serve`: until SIGTERM or ctrl-c.
pub async fn serve(
    config_path: Option<&Path>,
    listen: Option<SocketAddr>,
    sim_clock: bool,
) -> Result<(), String> {
    let mut config = load(config_path)?;
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    let listener = TcpListener::bind(config.server.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.server.listen))?;
    let public_url = app::public_url_for(&config, &listener);
    let clock = if sim_clock {
        tracing::warn!("simulated clock: time stands still until PUT /admin/clock moves it");
        app::ClockChoice::Simulated(Arc::new(crate::clock::SimClock::new(
            crate::clock::Clock::now(&crate::clock::SystemClock),
        )))
    } else {
        app::ClockChoice::System
    };
    let (state, router) = app::build_with_clock(&config, public_url, clock).await?;
    let enabled = state.upstream.archives().len();
    tracing::info!(listen = %config.server.listen, public_url = %state.public_url, archives = enabled, "tmproxy serving");
    app::serve(listener, router, app::shutdown_signal())
        .await
        .map_err(|e| format!("server stopped: {e}"))
}

/// `tmproxy timemap URI-R`: one aggregate to stdout; exit 1 with a reason when nothing was found.
pub async fn timemap(
    uri_r: &str,
    format: TimeMapFormat,
    config_path: Option<&Path>,
) -> Result<(), String> {
    let config = load(config_path)?;
    let uri_r = UriR::parse(uri_r).map_err(|e| e.to_string())?;
    let upstream =
        Upstream::new(&config, Arc::new(crate::clock::SystemClock)).map_err(|e| e.to_string())?;
    let agg = upstream
        .aggregate(uri_r.as_str(), config.upstream.deadline)
        .await;
    for o in &agg.outcomes {
        tracing::info!(archive = %o.id, status = o.status.as_str(), mementos = o.mementos, detail = o.detail.as_deref().unwrap_or(""), "archive answered");
    }
    if agg.timemap.is_empty() {
        let failed: Vec<String> = agg
            .missing()
            .map(|o| format!("{} ({})", o.id, o.status.as_str()))
            .collect();
        return Err(if failed.is_empty() {
            format!("no memento of {uri_r} in any archive")
        } else {
            format!(
                "no memento of {uri_r}; no answer from: {}",
                failed.join(", ")
            )
        });
    }
    let links = SelfLinks::new(&config.public_url(), uri_r.as_str());
    let body = render(format, &agg, &links);
    let mut out = std::io::stdout().lock();
    out.write_all(&body)
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write the TimeMap: {e}"))
}

/// `tmproxy demo`: simulated archives plus the proxy, until ctrl-c.
pub async fn demo(listen: SocketAddr) -> Result<(), String> {
    let archives = demo::start_archives()
        .await
        .map_err(|e| format!("cannot start the simulated archives: {e}"))?;
    let config = demo::demo_config(&archives, listen);
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e} (try --listen 127.0.0.1:0)"))?;
    let base = listener
        .local_addr()
        .map(|a| format!("http://{a}"))
        .map_err(|e| e.to_string())?;
    let (_state, router) = app::build(&config, Some(base.clone())).await?;
    println!(
        "tmproxy demo: {} simulated archives on loopback, the proxy on {base}",
        archives.len()
    );
    for (id, a) in &archives {
        println!("  archive {id:<7} {}", a.timemap_prefix());
    }
    println!(
        "\nTry (alpha, beta and gamma overlap; slow misses the 3 s deadline; broken answers 500):"
    );
    for line in demo::curl_lines(&base) {
        println!("  {line}");
    }
    println!("\nctrl-c to stop.");
    let _ = std::io::stdout().flush();
    let served = app::serve(listener, router, app::shutdown_signal())
        .await
        .map_err(|e| format!("server stopped: {e}"));
    drop(_state);
    let _ = std::fs::remove_dir_all(&config.cache.path);
    served
}
