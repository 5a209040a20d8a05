//! The subcommands behind the thin binary: serve, check a server's health, print one TimeMap,
//! run the demo, sample, import an archive profile.

use crate::app;
use crate::config::Config;
use crate::demo;
use crate::serve::threads::ConnectionThreads;
use crate::serve::ServeOptions;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::serialize::{render, SelfLinks, TimeMapFormat};
use crate::upstream::Upstream;
use crate::uri_r::UriR;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;

mod sample;
pub use sample::sample;

fn load(path: Option<&Path>) -> Result<Config, String> {
    let (config, source) = Config::load(path).map_err(|e| e.to_string())?;
    tracing::info!(%source, "configuration loaded");
    Ok(config)
}

/// Why `addr` could not be listened on (`what` names the setting, if not the main listener),
/// with what to do when the port is taken: another free one is a flag away.
fn cannot_listen(addr: SocketAddr, what: &str, e: &std::io::Error) -> String {
    let hint = match e.kind() {
        std::io::ErrorKind::AddrInUse if what.is_empty() => format!(
            " (another process listens there: stop it, or pick another port, e.g. --listen {}:0 \
             for any free one)",
            addr.ip()
        ),
        std::io::ErrorKind::AddrInUse => {
            " (another process listens there: stop it, or set another port)".to_string()
        }
        std::io::ErrorKind::PermissionDenied if addr.port() < 1024 => {
            " (ports below 1024 need privileges: use a higher one)".to_string()
        }
        _ => String::new(),
    };
    format!("cannot listen on {addr}{what}: {e}{hint}")
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
    config.check_links_reachable()?;
    // Before anything opens descriptors: the limit raised, the cap fitted under it.
    config.server.max_connections =
        crate::serve::descriptors::fit_max_connections(config.server.max_connections);
    let listener = TcpListener::bind(config.server.listen)
        .await
        .map_err(|e| cannot_listen(config.server.listen, "", &e))?;
    // What was bound, not what was asked: `--listen 127.0.0.1:0` logs the port it got.
    let bound = listener.local_addr().unwrap_or(config.server.listen);
    let public_url = app::public_url_for(&config, &listener);
    let clock = if sim_clock {
        tracing::warn!("simulated clock: time stands still until PUT /admin/clock moves it");
        app::ClockChoice::Simulated(Arc::new(crate::clock::SimClock::new(
            crate::clock::Clock::now(&crate::clock::SystemClock),
        )))
    } else {
        app::ClockChoice::System
    };
    // Bound before anything else starts, so a taken admin port stops the start with a reason.
    let admin_listener = match config.admin.listen {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .map_err(|e| cannot_listen(addr, " ([admin] listen)", &e))?,
        ),
        None => None,
    };
    let (state, public) = app::build_with_clock(&config, public_url, clock).await?;
    let enabled = state.upstream.archives().len();
    if let Some(l) = &admin_listener {
        let admin = l
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        tracing::info!(admin_listen = %admin, "admin API and /metrics on their own listener");
    }
    tracing::info!(listen = %bound, public_url = %state.public_url, archives = enabled, "tmproxy serving");
    // Shutdown, bounded at every step (see DRAIN_SLACK): stop accepting and stop the jobs, let
    // the requests in flight finish, then `app::wind_down` (jobs at their checkpoint, lone
    // refreshes stored, the store flushed). A second SIGTERM or ctrl-c skips whatever waiting is
    // left. A kill -9 at any point loses no answer already sent (each put is flushed first).
    let mut signals = app::StopSignals::install();
    let (begin, begun) = tokio::sync::oneshot::channel::<()>();
    let admin = admin_listener.map(|l| (l, crate::http::admin_router(state.clone())));
    // Held until the end: the tasks requests left on these threads (a refresh being stored)
    // are what `wind_down` waits for.
    let threads = ConnectionThreads::for_this_runtime(app::MAX_BLOCKING_THREADS, RUNTIME_SHUTDOWN)
        .map_err(|e| format!("cannot start the connection threads: {e}"))?;
    let server = app::serve_both(
        (listener, public),
        admin,
        async move {
            let _ = begun.await;
        },
        ServeOptions {
            threads: Some(threads.clone()),
            ..app::ServeOptions::from_config(&config, &state)
        },
    );
    tokio::pin!(server);
    let drain = config.upstream.deadline + DRAIN_SLACK;
    let mut hurried = false;
    let served = tokio::select! {
        served = &mut server => served,
        () = signals.next() => {
            tracing::info!(within = ?drain, "shutting down: finishing requests in flight (a second SIGTERM or ctrl-c stops waiting)");
            let _ = begin.send(());
            // Jobs answer no client: they head for their checkpoint now, alongside the drain.
            if let Some(jobs) = &state.jobs {
                jobs.stop_all();
            }
            tokio::select! {
                served = &mut server => served,
                () = signals.next() => {
                    tracing::warn!("second signal: not waiting for the requests in flight");
                    hurried = true;
                    Ok(())
                }
                () = tokio::time::sleep(drain) => {
                    tracing::warn!(within = ?drain, "requests still in flight: closing them");
                    Ok(())
                }
            }
        }
    };
    let settle = if hurried {
        std::time::Duration::ZERO
    } else {
        app::SETTLE_WITHIN
    };
    tokio::select! {
        () = app::wind_down(&state, settle) => {},
        () = signals.next(), if !hurried => {
            tracing::warn!("second signal: flushing and stopping now");
            app::wind_down(&state, std::time::Duration::ZERO).await;
        }
    }
    drop(threads);
    tracing::info!("stopped");
    served.map_err(|e| format!("server stopped: {e}"))
}

/// How much longer than the upstream deadline requests in flight get after SIGTERM: a request
/// ends by its deadline, plus the time to store and send the answer. Whole shutdown, from the
/// first signal: at most `deadline + DRAIN_SLACK + app::SETTLE_WITHIN + app::FLUSH_WITHIN +
/// RUNTIME_SHUTDOWN` (13 s beyond the deadline: 28 s with the default 15 s one); after a
/// second signal, at most `app::FLUSH_WITHIN + RUNTIME_SHUTDOWN` (3 s).
pub const DRAIN_SLACK: std::time::Duration = std::time::Duration::from_secs(5);

/// How long `main` lets tasks still running (a connection cut short, a job past its wait)
/// unwind once `serve` returns, before the process exits without them.
pub const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(1);

/// How long `tmproxy health` waits for the whole answer: a container's HEALTHCHECK must not hang.
pub const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `tmproxy health [--url URL]`: GET `{url}/healthz`; Ok (printing its body) on 200, otherwise
/// the one-line reason. Without `--url`, this host's listener as `serve` would bind it from the
/// same config and environment.
pub async fn health(url: Option<&str>, config_path: Option<&Path>) -> Result<(), String> {
    let base = match url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => Config::load(config_path)
            .map_err(|e| e.to_string())?
            .0
            .local_url(),
    };
    let target = format!("{base}/healthz");
    // No proxy: HTTP_PROXY in a container's environment must not reroute a loopback check.
    let client = reqwest::Client::builder()
        .timeout(HEALTH_TIMEOUT)
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let resp = client
        .get(&target)
        .send()
        .await
        .map_err(|e| format!("unhealthy: GET {target}: {}", one_line(&e)))?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    // One line on stderr, whatever answered: its first line, cut short.
    let body: String = text
        .trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    if status != reqwest::StatusCode::OK {
        return Err(format!("unhealthy: GET {target}: {status} {body}"));
    }
    println!("{body}");
    Ok(())
}

/// An error's causes on one line: reqwest's own message only repeats the URL, and hides the
/// cause ("Connection refused") in its sources.
fn one_line(e: &dyn std::error::Error) -> String {
    let top = e.source().unwrap_or(e);
    let mut text = top.to_string();
    let mut source = top.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.replace('\n', " ")
}

/// `tmproxy timemap URI-R`: one aggregate to stdout; exit 1 with a reason when nothing was found.
pub async fn timemap(
    uri_r: &str,
    format: TimeMapFormat,
    config_path: Option<&Path>,
) -> Result<(), String> {
    let config = load(config_path)?;
    let uri_r = UriR::parse(uri_r).map_err(|e| e.to_string())?;
    let upstream = Upstream::new(
        &config,
        &config.public_url(),
        Arc::new(crate::clock::SystemClock),
        crate::upstream::resolve::system_lookup(),
    )
    .map_err(|e| e.to_string())?;
    let fetch = upstream
        .fetch(uri_r.as_str(), config.upstream.deadline)
        .await;
    let credits = crate::upstream::registry::credits(&config);
    let agg = Aggregate::of(&fetch.uri_r, fetch.at, &fetch.archives, &credits);
    for o in &agg.outcomes {
        tracing::info!(archive = %o.id, status = o.answer.status.as_str(), mementos = o.mementos, detail = o.answer.detail.as_deref().unwrap_or(""), "archive answered");
    }
    if agg.timemap.is_empty() && crate::upstream::failure::none_reached(&agg.outcomes) {
        return Err(format!(
            "no archive could be reached for {uri_r}: every name failed to resolve or every connection failed, so this machine may be offline (`tmproxy demo` runs without a network)"
        ));
    }
    if agg.timemap.is_empty() {
        let failed: Vec<String> = agg
            .missing()
            .map(|o| format!("{} ({})", o.id, o.answer.status.as_str()))
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
    let token = demo::random_token().map_err(|e| format!("cannot make an admin token: {e}"))?;
    let mut config = demo::demo_config(&archives, listen, &token);
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| cannot_listen(listen, "", &e))?;
    // The bound port (for :0), and never 0.0.0.0 in a link: local_url puts loopback there.
    config.server.listen = listener.local_addr().map_err(|e| e.to_string())?;
    let base = config.local_url();
    let (state, router) = app::build(&config, Some(base.clone())).await?;
    println!(
        "tmproxy demo: {} simulated archives on loopback, the proxy on {base}",
        archives.len()
    );
    for (id, a) in &archives {
        println!("  archive {id:<7} {}", a.timemap_prefix());
    }
    println!("  admin token {token} (new each run)");
    println!(
        "\nTry (alpha, beta and gamma overlap; slow misses the 3 s deadline; broken answers 500):"
    );
    for line in demo::curl_lines(&base, &token) {
        println!("  {line}");
    }
    println!("\nctrl-c to stop.");
    let _ = std::io::stdout().flush();
    let options = app::ServeOptions::from_config(&config, &state);
    let served = app::serve_with(listener, router, app::shutdown_signal(), options)
        .await
        .map_err(|e| format!("server stopped: {e}"));
    drop(state);
    let _ = std::fs::remove_dir_all(demo::demo_cache_dir());
    served
}

/// `tmproxy routing import ARCHIVE FILE [--config PATH] [--format auto|cdx|mementomap]`: adds
/// the file's holdings to ARCHIVE's profile in the config's data directory and says what it read.
pub async fn routing_import(
    archive: &str,
    file: &Path,
    config_path: Option<&Path>,
    format: &str,
) -> Result<(), String> {
    use tmproxy_core::routing::Format;
    let config = load(config_path)?;
    let format = match format {
        "cdx" => Some(Format::Cdx),
        "mementomap" => Some(Format::MementoMap),
        _ => None,
    };
    let (archive, file) = (archive.to_owned(), file.to_path_buf());
    // Reading a large index is blocking work.
    let imported = tokio::task::spawn_blocking(move || {
        crate::routing::import::import_file(&config, &archive, &file, format)
            .map(|done| done.summary(&archive, &file))
    })
    .await
    .map_err(|e| format!("the import stopped: {e}"))??;
    println!("{imported}");
    Ok(())
}
