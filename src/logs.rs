//! The process log: text for people or one JSON object per line (`[log] format`), colour only
//! when stderr is a terminal, levels from `RUST_LOG` (default `info`), written by a thread of
//! its own so a slow stderr never holds up a request.

mod queue;

use crate::config::LogFormat;
pub use queue::Guard;
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Log lines queued for the writer thread at most.
pub const QUEUED_LINES: usize = 16_384;

/// Installs the log for the whole process, at `default_level` unless `RUST_LOG` says otherwise.
/// Keep the guard until the end of `main`: dropping it writes out the lines still queued.
pub fn init(format: LogFormat, default_level: &str) -> std::io::Result<Guard> {
    // Lossy: past its queue a line is dropped rather than waited for, since a request must
    // never wait on its log. 16k lines: the queue's slots are allocated whole at start (128k
    // measured 5.6 MiB of RSS), and the writer drains it every few milliseconds.
    let (writer, guard) = queue::start(QUEUED_LINES, std::io::stderr(), "tmproxy-log")?;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_level.into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        // Spans flattened into each line: the request id, route and URI-R are fields of it.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
    Ok(guard)
}
