//! Test support: a log written to memory, to read what a layer logged.

use std::sync::{Arc, Mutex};

/// The lines a subscriber made with [`CapturedLog::subscriber`] wrote.
#[derive(Clone, Default)]
pub(crate) struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    /// A plain-text subscriber at `filter` (e.g. `info`, `tower_http=debug`) writing here; set
    /// it with `tracing::subscriber::set_default` on a current-thread runtime.
    pub(crate) fn subscriber(&self, filter: &str) -> impl tracing::Subscriber + Send + Sync {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish()
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        let bytes = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
