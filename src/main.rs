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
    about = "A Memento aggregator: one TimeMap from many web archives"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy.
    Serve {
        /// Config file (else $TMPROXY_CONFIG, else ./config.toml, else built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Address to listen on (overrides [server] listen).
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Run on a simulated clock (starting now) that PUT /admin/clock sets: for simulations.
        #[arg(long)]
        sim_clock: bool,
    },
    /// Print one aggregated TimeMap and exit (1 when no archive has a memento).
    Timemap {
        /// The URL whose mementos to list.
        uri_r: String,
        /// The TimeMap format.
        #[arg(long, default_value = "link", value_parser = format_parser())]
        format: TimeMapFormat,
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
        #[arg(long)]
        out: PathBuf,
    },
    /// Start simulated archives on loopback and the proxy in front of them; prints curl commands.
    Demo {
        #[arg(long, default_value = "127.0.0.1:7089")]
        listen: SocketAddr,
    },
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
/// against 187 MiB with it, and no slower on hits: BENCHMARKS.md, [hardening-2] memory).
fn purge_freed_memory_at_once() {
    // SAFETY: sets a process-wide integer option; takes no pointers.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// The log format the command's config asks for (`[log] format`, `TMPROXY_LOG_FORMAT`). A
/// config that cannot be read is reported by the command itself; the log is text meanwhile.
fn log_format(command: &Command) -> tmproxy::config::LogFormat {
    let path = match command {
        Command::Serve { config, .. } | Command::Timemap { config, .. } => config.as_deref(),
        Command::Sample { .. } | Command::Demo { .. } => None,
    };
    tmproxy::config::Config::load(path)
        .map(|(config, _)| config.log.format)
        .unwrap_or_default()
}

fn main() -> ExitCode {
    purge_freed_memory_at_once();
    let cli = Cli::parse();
    // Held to the end: dropping it writes out the log lines still queued.
    let _log = tmproxy::logs::init(log_format(&cli.command));
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
            Command::Timemap {
                uri_r,
                format,
                config,
            } => tmproxy::cli::timemap(&uri_r, format, config.as_deref()).await,
            Command::Demo { listen } => tmproxy::cli::demo(listen).await,
            Command::Sample { spec, out } => tmproxy::cli::sample(&spec, &out).await,
        }
    });
    // Dropping a runtime waits for its blocking tasks however long they take: bounded instead.
    runtime.shutdown_timeout(tmproxy::cli::RUNTIME_SHUTDOWN);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tmproxy: {message}");
            ExitCode::FAILURE
        }
    }
}
