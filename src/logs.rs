//! The process log: text for people or one JSON object per line (`[log] format`), colour only
//! when stderr is a terminal, levels from `RUST_LOG` (default `info`), written by a thread of
//! its own so a slow stderr never holds up a request.

use crate::config::LogFormat;
use std::io::IsTerminal;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Log lines queued for the writer thread at most.
pub const QUEUED_LINES: usize = 16_384;

/// Installs the log for the whole process, at `default_level` unless `RUST_LOG` says otherwise.
/// Keep the guard until the end of `main`: dropping it writes out the lines still queued.
pub fn init(format: LogFormat, default_level: &str) -> WorkerGuard {
    // Lossy: past its queue a line is dropped rather than waited for, since a request must
    // never wait on its log. 16k lines, not the crate's 128k: the queue is allocated whole at
    // start (128k slots measured 5.6 MiB of RSS), and the writer drains it as lines come.
    let (writer, guard) = NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .lossy(true)
        .thread_name("tmproxy-log")
        .finish(std::io::stderr());
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
    guard
}
