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

    /// Makes [`CapturedLog::subscriber`] at `filter` this thread's default until the result is
    /// dropped. Tests that capture a log take turns: tracing caches whether a callsite is on
    /// across every subscriber alive, and one test's `warn` subscriber registering a callsite
    /// while another test's `info` one is being set up could leave that callsite off for both.
    pub(crate) async fn install(&self, filter: &str) -> Installed {
        static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let turn = TURN.lock().await;
        let default = tracing::subscriber::set_default(self.subscriber(filter));
        tracing::callsite::rebuild_interest_cache();
        Installed {
            _default: default,
            _turn: turn,
        }
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        let bytes = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A captured log in force (see [`CapturedLog::install`]).
pub(crate) struct Installed {
    _default: tracing::subscriber::DefaultGuard,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}
