//! The `tmproxy` binary: arguments → config → tracing → app → serve. Nothing else lives here.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};

// The hit path is allocation-heavy (headers, hyper's buffers); mimalloc serves it markedly faster
// than glibc's malloc on two cores (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tmproxy::timemap::serialize::TimeMapFormat;

#[derive(Parser)]
#[command(
    name = "tmproxy",
    version,
    about = "A Memento aggregator: one TimeMap from many web archives",
    after_help = env_help()
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy.
    #[command(after_help = env_help())]
    Serve {
        /// Config file (else $TMPROXY_CONFIG, else ./config.toml, else built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Address to listen on, IP:port (overrides [server] listen and TMPROXY_LISTEN).
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Run on a simulated clock (starting now) that PUT /admin/clock sets: for simulations.
        #[arg(long)]
        sim_clock: bool,
    },
    /// Check a running proxy: GET URL/healthz; exit 0 on 200, else 1 with the reason on stderr
    /// (waits at most 5 s). For container health checks.
    Health {
        /// Base URL of the proxy, e.g. http://127.0.0.1:7089 (default: the address `serve` would
        /// listen on with the same config and environment, an unspecified one as loopback).
        #[arg(long)]
        url: Option<String>,
        /// Config file to read the listen address from when --url is not given (else
        /// $TMPROXY_CONFIG, else ./config.toml, else built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print one aggregated TimeMap and exit (1 when no archive has a memento).
    #[command(after_help = env_help())]
    Timemap {
        /// The URL whose mementos to list.
        uri_r: String,
        /// The TimeMap format.
        #[arg(long, default_value = "link", value_parser = format_parser())]
        format: TimeMapFormat,
        /// Config file naming the archives (else $TMPROXY_CONFIG, else ./config.toml, else
        /// built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Sample URLs from a Wayback index (the NYPW method): writes DIR/sample.ndjson, funnel.json,
    /// report.md (and timemaps/); a second run over the same DIR resumes.
    Sample {
        /// The job spec (TOML): input, cdx_api, dialect, seed, years, concurrency, rate_limit,
        /// popular_domains, downsampling, long_tail_threshold, long_tail_fraction,
        /// collect_timemaps, hydrate_revisits.
        #[arg(long)]
        spec: PathBuf,
        /// Output directory (DIR): created if missing; the checkpoint a second run resumes from.
        #[arg(long)]
        out: PathBuf,
        /// Config file whose `[sampling]` max_line, max_input_bytes, max_gzip_ratio and
        /// max_memory bound the run (else the built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Archive profiles, which `[routing] mode = "learned"` asks archives by.
    Routing {
        #[command(subcommand)]
        command: RoutingCommand,
    },
    /// Start simulated archives on loopback and the proxy in front of them; prints curl commands.
    Demo {
        /// Address for the demo proxy, IP:port (127.0.0.1:0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:7089")]
        listen: SocketAddr,
    },
}

#[derive(Subcommand)]
enum RoutingCommand {
    /// Add an archive's holdings to its profile from its CDX summary (CDXJ or classic CDX
    /// lines, SURT-sorted) or a MementoMap file, plain or gzipped, so a new deployment does not
    /// start blind. Writes the profiles file of the config's data directory; run it while no
    /// server uses that directory (it refuses otherwise).
    Import {
        /// The archive's id, as the config names it.
        archive: String,
        /// The CDX/CDXJ or MementoMap file.
        file: PathBuf,
        /// Config file naming the archives and the data directory (else $TMPROXY_CONFIG, else
        /// ./config.toml, else built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The file's format: told from its first data line unless given.
        #[arg(long, default_value = "auto", value_parser = ["auto", "cdx", "mementomap"])]
        format: String,
    },
}

/// The environment variables, listed under `--help` from the same table `apply_env` documents
/// itself by, so the list cannot drift from the code.
fn env_help() -> String {
    let mut text = String::from("Environment:\n");
    let mut line = |var: &str, what: &str| text.push_str(&format!("  {var:<34} {what}\n"));
    line(
        tmproxy::config::CONFIG_ENV,
        "the config file, when --config is not given",
    );
    for (var, key) in tmproxy::config::ENV_OVERRIDES {
        line(var, &format!("overrides {key}"));
    }
    line(
        "RUST_LOG",
        "log filter (default: info; warn for `timemap`), e.g. tmproxy=debug",
    );
    text
}

/// The formats `--format` takes: every one the server serves, by its path segment.
fn format_parser() -> impl TypedValueParser<Value = TimeMapFormat> {
    PossibleValuesParser::new(TimeMapFormat::all().map(TimeMapFormat::segment)).try_map(|s| {
        TimeMapFormat::from_segment(&s).ok_or_else(|| format!("unknown TimeMap format {s:?}"))
    })
}

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e`, mimalloc.h, v2 and v3 alike;
/// libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Has mimalloc give freed pages back to the OS at once instead of after its delay (1 s in v3):
/// a delayed purge runs only when the freeing thread allocates again, so after a burst of
/// misses memory freed by threads that then went idle, or exited, stayed resident (peak 255 MiB
/// against 187 MiB with it, and no slower on hits: BENCHMARKS.md, "Memory under many misses").
fn purge_freed_memory_at_once() {
    // SAFETY: sets a process-wide integer option; takes no pointers.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// The log format the command's config asks for (`[log] format`, `TMPROXY_LOG_FORMAT`). A
/// config that cannot be read is reported by the command itself; the log is text meanwhile.
fn log_format(command: &Command) -> tmproxy::config::LogFormat {
    let path = match command {
        Command::Serve { config, .. }
        | Command::Timemap { config, .. }
        | Command::Health { config, .. }
        | Command::Routing {
            command: RoutingCommand::Import { config, .. },
        } => config.as_deref(),
        Command::Sample { config, .. } => config.as_deref(),
        Command::Demo { .. } => None,
    };
    tmproxy::config::Config::load(path)
        .map(|(config, _)| config.log.format)
        .unwrap_or_default()
}

fn main() -> ExitCode {
    purge_freed_memory_at_once();
    let cli = Cli::parse();
    // A one-shot command's answer is its output: its log says only what went wrong (warn); a
    // server's log is its record (info).
    let level = match cli.command {
        Command::Timemap { .. } => "warn",
        _ => "info",
    };
    // Held to the end: dropping it writes out the log lines still queued.
    let log = match tmproxy::logs::init(log_format(&cli.command), level) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("tmproxy: cannot start the log's writer thread: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(tmproxy::app::MAX_BLOCKING_THREADS)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tmproxy: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve {
                config,
                listen,
                sim_clock,
            } => tmproxy::cli::serve(config.as_deref(), listen, sim_clock).await,
            Command::Health { url, config } => {
                tmproxy::cli::health(url.as_deref(), config.as_deref()).await
            }
            Command::Timemap {
                uri_r,
                format,
                config,
            } => tmproxy::cli::timemap(&uri_r, format, config.as_deref()).await,
            Command::Demo { listen } => tmproxy::cli::demo(listen).await,
            Command::Sample { spec, out, config } => {
                tmproxy::cli::sample(&spec, &out, config.as_deref()).await
            }
            Command::Routing {
                command:
                    RoutingCommand::Import {
                        archive,
                        file,
                        config,
                        format,
                    },
            } => tmproxy::cli::routing_import(&archive, &file, config.as_deref(), &format).await,
        }
    });
    // Dropping a runtime waits for its blocking tasks however long they take: bounded instead.
    runtime.shutdown_timeout(tmproxy::cli::RUNTIME_SHUTDOWN);
    // The queued log lines first, so a failure's one-line reason is the last thing printed.
    drop(log);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tmproxy: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `--help` describes every option and argument of every subcommand.
    #[test]
    fn every_option_has_help() {
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has no about", sub.get_name());
            for arg in sub.get_arguments() {
                assert!(
                    arg.get_help().is_some(),
                    "{} {} has no help",
                    sub.get_name(),
                    arg.get_id()
                );
            }
        }
        cli.debug_assert();
    }

    /// Every environment variable the config reads is listed under `serve --help`.
    #[test]
    fn serve_help_lists_every_environment_variable() {
        let mut cli = Cli::command();
        let serve = cli.find_subcommand_mut("serve").expect("serve");
        let help = serve.render_long_help().to_string();
        for (var, key) in tmproxy::config::ENV_OVERRIDES {
            assert!(help.contains(&format!("{var} ")), "{var} missing");
            assert!(help.contains(key), "{key} missing");
        }
        assert!(help.contains(tmproxy::config::CONFIG_ENV));
    }
}
