//! The HTTP client a load run talks to the server with.

use std::time::Duration;

/// A client holding at most `idle` idle connections, never following redirects (a TimeGate's 302
/// is the answer) and ignoring any proxy settings of the environment (loopback only).
pub(super) fn plain_client(idle: usize) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .http1_only()
        .no_proxy()
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(idle)
        .pool_idle_timeout(None)
        // Well past the server's own 15 s deadline: a request this slow is an error, not a wait.
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}
