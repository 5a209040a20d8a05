//! A CDX API client for the two dialects the pipeline meets, with a concurrency bound, a rate
//! limit and retries, and an answer for every URL (nothing is silently dropped):
//! - the Internet Archive's: `output=json` is an array of arrays whose first row is the header
//!   (`urlkey timestamp original mimetype statuscode digest length`); `showNumPages=true`
//!   answers a bare number;
//! - pywb's: `output=json` is one JSON object per line (`urlkey timestamp url mime status
//!   digest …`); `showNumPages=true` answers `{"pages": n, …}`.
//!
//! 429, 5xx, timeouts and connection failures are retried with exponential backoff, honouring
//! `Retry-After`; a 403 whose body says "Blocked Site Error" is `Blocked`; an empty answer is
//! `NotArchived`. Parsing and the retry decision are pure; the HTTP is the thin edge. The
//! dialects' parsing is [`tmproxy_core::cdx`], shared with the upstream's `kind = "cdx"` archives.

use std::sync::Arc;
use std::time::Duration;
pub use tmproxy_core::cdx::{
    detect_dialect, parse_num_pages, parse_rows, CdxRow, Dialect, ParseError,
};
use tmproxy_core::cdx::{paging_in, Pager, COUNT_QUERY};
use tmproxy_core::failure::{of_status, StatusClass};
use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

/// What to do with one HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerHandling {
    Ok,
    /// Try again after this long (Retry-After) or after the backoff.
    Retry(Option<Duration>),
    Blocked,
    /// A failure retrying will not fix (another 4xx).
    Fatal(String),
}

/// The retry decision for a status, its Retry-After header (seconds) and body.
pub fn answer_handling(status: u16, retry_after: Option<&str>, body: &str) -> AnswerHandling {
    let after = retry_after
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    // The status read as the fan-out reads it (tmproxy_core::failure); the retry policy is ours.
    match of_status(status) {
        StatusClass::Success => AnswerHandling::Ok,
        // pywb answers 404 for "no captures" on some versions: that is an empty answer.
        StatusClass::NotFound => AnswerHandling::Ok,
        StatusClass::Failed(_) if status == 403 && body.contains("Blocked Site Error") => {
            AnswerHandling::Blocked
        }
        StatusClass::Failed(kind) if kind.throttled() || kind.server_error() => {
            AnswerHandling::Retry(after)
        }
        StatusClass::Gone | StatusClass::Failed(_) => AnswerHandling::Fatal(format!(
            "HTTP {status}: {}",
            tmproxy_core::uri_text::clip(body.trim())
        )),
    }
}

/// Sampling's HTTP clients follow no redirect: a job admitted for a URL under `[sampling]
/// allowed_urls` must not be sent by that server to one outside it (an internal address, say).
/// A 3xx is an answer like any other non-2xx: the operator gives the final URL.
pub fn no_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::none()
}

/// The backoff before attempt `attempt` (1-based retries): base·2^(attempt−1), capped.
pub fn backoff(base: Duration, attempt: u32, cap: Duration) -> Duration {
    base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(cap)
}

/// The client's knobs.
#[derive(Debug, Clone)]
pub struct CdxSettings {
    /// The CDX endpoint (`https://web.archive.org/cdx/search/cdx`, `http://host/coll/cdx`).
    pub endpoint: String,
    pub dialect: Dialect,
    pub concurrency: usize,
    /// Requests per second (0 = unlimited).
    pub rate_limit: f64,
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub user_agent: String,
}

impl CdxSettings {
    pub fn new(endpoint: &str, dialect: Dialect) -> CdxSettings {
        CdxSettings {
            endpoint: endpoint.to_string(),
            dialect,
            concurrency: 4,
            rate_limit: 0.0,
            timeout: Duration::from_secs(30),
            max_retries: 5,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(60),
            user_agent: "tmproxy-sampling/0.1".to_string(),
        }
    }
}

/// A URL's first capture, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum FirstCapture {
    Found {
        timestamp: String,
        mime: String,
        status: String,
    },
    NotArchived,
    Blocked,
    /// Retries exhausted or a fatal answer: recorded in the error log with this reason.
    Failed {
        reason: String,
    },
}

/// One retry the client made: the attempt it follows (1-based), the HTTP status that caused it
/// (none for a timeout or a connection failure), why, and how long it waited. The stages log
/// each one to `retries.ndjson`, so transient failures that later succeeded are not invisible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNote {
    pub attempt: u32,
    pub status: Option<u16>,
    pub reason: String,
    pub wait: Duration,
}

/// Where a caller hears of retries (nowhere, for [`CdxClient::first_capture`]).
pub type OnRetry<'a> = &'a (dyn Fn(RetryNote) + Send + Sync);

fn no_note(_: RetryNote) {}

/// What a fetch ended as, before parsing.
enum Fetched {
    Body(String),
    Blocked,
    Failed(String),
}

/// Counts of what the client did (for the job's progress and the log of non-200 answers).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CdxStats {
    pub requests: u64,
    pub retries: u64,
    pub blocked: u64,
    pub failed: u64,
}

/// The client: share it (`Arc`) across tasks; the concurrency bound and rate limit are global.
pub struct CdxClient {
    http: reqwest::Client,
    settings: CdxSettings,
    permits: Semaphore,
    /// The earliest instant the next request may start (the rate limit).
    next_slot: Mutex<Instant>,
    stats: std::sync::Mutex<CdxStats>,
}

impl CdxClient {
    pub fn new(settings: CdxSettings) -> Result<Arc<CdxClient>, String> {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .user_agent(settings.user_agent.clone())
            .redirect(no_redirects())
            .build()
            .map_err(|e| format!("CDX client: {e}"))?;
        Ok(Arc::new(CdxClient {
            http,
            permits: Semaphore::new(settings.concurrency.max(1)),
            settings,
            next_slot: Mutex::new(Instant::now()),
            stats: std::sync::Mutex::new(CdxStats::default()),
        }))
    }

    pub fn stats(&self) -> CdxStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn count(&self, f: impl FnOnce(&mut CdxStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }

    async fn wait_for_slot(&self) {
        if self.settings.rate_limit <= 0.0 {
            return;
        }
        let gap = Duration::from_secs_f64(1.0 / self.settings.rate_limit);
        let at = {
            let mut next = self.next_slot.lock().await;
            let now = Instant::now();
            let at = (*next).max(now);
            *next = at + gap;
            at
        };
        tokio::time::sleep_until(at).await;
    }

    /// GET with the query, retried as [`answer_handling`] says; each retry told to `on_retry`.
    async fn fetch(&self, query: &[(&str, String)], on_retry: OnRetry<'_>) -> Fetched {
        let mut attempt = 0;
        loop {
            let mut status_seen = None;
            let answer = {
                let _permit = self.permits.acquire().await;
                self.wait_for_slot().await;
                self.count(|s| s.requests += 1);
                let sent = self
                    .http
                    .get(&self.settings.endpoint)
                    .query(query)
                    .send()
                    .await;
                match sent {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        status_seen = Some(status);
                        let retry_after = r
                            .headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string);
                        match r.text().await {
                            Ok(body) => {
                                let v = answer_handling(status, retry_after.as_deref(), &body);
                                (v, if status == 404 { String::new() } else { body })
                            }
                            Err(e) => (
                                AnswerHandling::Retry(None),
                                format!("reading the body: {e}"),
                            ),
                        }
                    }
                    Err(e) => (AnswerHandling::Retry(None), transport_reason(e)),
                }
            };
            match answer {
                (AnswerHandling::Ok, body) => return Fetched::Body(body),
                (AnswerHandling::Blocked, _) => {
                    self.count(|s| s.blocked += 1);
                    return Fetched::Blocked;
                }
                (AnswerHandling::Fatal(why), _) => {
                    self.count(|s| s.failed += 1);
                    return Fetched::Failed(why);
                }
                (AnswerHandling::Retry(after), why) => {
                    attempt += 1;
                    if attempt > self.settings.max_retries {
                        self.count(|s| s.failed += 1);
                        let why = if why.is_empty() {
                            "retryable answer".into()
                        } else {
                            why
                        };
                        return Fetched::Failed(format!(
                            "gave up after {} retries: {}",
                            self.settings.max_retries,
                            tmproxy_core::uri_text::clip(why.trim())
                        ));
                    }
                    self.count(|s| s.retries += 1);
                    let wait = after
                        .unwrap_or_else(|| {
                            backoff(
                                self.settings.backoff_base,
                                attempt,
                                self.settings.backoff_cap,
                            )
                        })
                        .min(self.settings.backoff_cap);
                    let reason = match status_seen {
                        Some(s) if why.trim().is_empty() => format!("HTTP {s}"),
                        Some(s) => {
                            format!("HTTP {s}: {}", tmproxy_core::uri_text::clip(why.trim()))
                        }
                        None => tmproxy_core::uri_text::clip(why.trim()),
                    };
                    on_retry(RetryNote {
                        attempt,
                        status: status_seen,
                        reason,
                        wait,
                    });
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// The earliest capture of `url` (exact match, `limit=1`).
    pub async fn first_capture(&self, url: &str) -> FirstCapture {
        self.first_capture_noting(url, &no_note).await
    }

    /// [`CdxClient::first_capture`], each retry told to `on_retry`.
    pub async fn first_capture_noting(&self, url: &str, on_retry: OnRetry<'_>) -> FirstCapture {
        let query = [
            ("url", url.to_string()),
            ("limit", "1".to_string()),
            ("output", "json".to_string()),
        ];
        match self.fetch(&query, on_retry).await {
            Fetched::Blocked => FirstCapture::Blocked,
            Fetched::Failed(reason) => FirstCapture::Failed { reason },
            Fetched::Body(body) => match parse_rows(self.settings.dialect, &body) {
                Ok(rows) => match rows.into_iter().next() {
                    Some(r) => FirstCapture::Found {
                        timestamp: r.timestamp,
                        mime: r.mime,
                        status: r.status,
                    },
                    None => FirstCapture::NotArchived,
                },
                Err(e) => {
                    self.count(|s| s.failed += 1);
                    FirstCapture::Failed { reason: e.0 }
                }
            },
        }
    }

    /// Every capture of `url`: `showNumPages=true`, then pages 0..n−1, in order (the core's
    /// [`Pager`], shared with the server's CDX archives). pywb answers `showNumPages` only over a
    /// ZipNum index; over a plain one it sends the captures instead, and then the index is one
    /// unpaged answer.
    pub async fn timemap(&self, url: &str) -> Result<Vec<CdxRow>, String> {
        self.timemap_noting(url, &no_note).await
    }

    /// [`CdxClient::timemap`], each retry told to `on_retry`.
    pub async fn timemap_noting(
        &self,
        url: &str,
        on_retry: OnRetry<'_>,
    ) -> Result<Vec<CdxRow>, String> {
        let (count, yes) = COUNT_QUERY;
        let paging = match self
            .fetch(
                &[("url", url.to_string()), (count, yes.to_string())],
                on_retry,
            )
            .await
        {
            Fetched::Body(b) => paging_in(self.settings.dialect, &b).map_err(|e| e.0)?,
            Fetched::Blocked => return Err("blocked".into()),
            Fetched::Failed(why) => return Err(why),
        };
        let mut rows = Vec::new();
        // Every page: a sample's TimeMap is whole or an error.
        for (page, query) in Pager::new(paging, u64::MAX).enumerate() {
            let mut params = vec![("url", url.to_string())];
            params.extend(query.params());
            match self.fetch(&params, on_retry).await {
                Fetched::Body(b) => {
                    rows.extend(parse_rows(self.settings.dialect, &b).map_err(|e| e.0)?)
                }
                Fetched::Blocked => return Err(format!("page {page}: blocked")),
                Fetched::Failed(why) => return Err(format!("page {page}: {why}")),
            }
        }
        Ok(rows)
    }
}

/// Tells the endpoint's dialect from the shape of its answers: an `output=json` lookup of
/// `probe_url` (an array of arrays is IA's, objects are pywb's), else, when that is empty (the
/// probe is not archived), a `showNumPages=true` query (IA answers a bare number, pywb over a
/// ZipNum index `{"pages": …}`).
pub async fn detect(endpoint: &str, probe_url: &str) -> Result<Dialect, String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(no_redirects())
        .build()
        .map_err(|e| format!("CDX client: {e}"))?;
    let ask = |query: Vec<(&'static str, String)>| {
        let http = http.clone();
        async move {
            let r = http
                .get(endpoint)
                .query(&query)
                .send()
                .await
                .map_err(|e| format!("{endpoint}: {e}"))?;
            r.text().await.map_err(|e| format!("{endpoint}: {e}"))
        }
    };
    let body = ask(vec![
        ("url", probe_url.to_string()),
        ("limit", "1".to_string()),
        ("output", "json".to_string()),
    ])
    .await?;
    if let Some(d) = detect_dialect(&body) {
        return Ok(d);
    }
    let pages = ask(vec![
        ("url", probe_url.to_string()),
        (COUNT_QUERY.0, COUNT_QUERY.1.to_string()),
    ])
    .await?;
    let t = pages.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Dialect::Ia);
    }
    if t.starts_with('{') && t.contains("\"pages\"") {
        return Ok(Dialect::Pywb);
    }
    Err(format!(
        "{endpoint}: cannot tell the dialect from `{}`; set it",
        tmproxy_core::uri_text::clip(body.trim())
    ))
}

/// Why a request failed before any answer, whole and without its URL (each record names its URL
/// already, and a long one cut the reason before its cause): reqwest's own words, then the
/// innermost cause, e.g. `error sending request: dns error: failed to lookup address
/// information: Name or service not known`.
fn transport_reason(e: reqwest::Error) -> String {
    let mut root: Option<String> = None;
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        root = Some(s.to_string());
        source = s.source();
    }
    let outer = e.without_url().to_string();
    match root {
        Some(root) if !outer.contains(&root) => format!("{outer}: {root}"),
        _ => outer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_decision() {
        assert_eq!(answer_handling(200, None, ""), AnswerHandling::Ok);
        assert_eq!(
            answer_handling(429, Some("3"), ""),
            AnswerHandling::Retry(Some(Duration::from_secs(3)))
        );
        assert_eq!(answer_handling(503, None, ""), AnswerHandling::Retry(None));
        assert_eq!(
            answer_handling(403, None, "<h1>Blocked Site Error</h1>"),
            AnswerHandling::Blocked
        );
        assert!(matches!(
            answer_handling(400, None, "bad url"),
            AnswerHandling::Fatal(_)
        ));
        let b = Duration::from_millis(100);
        assert_eq!(backoff(b, 1, Duration::from_secs(5)), b);
        assert_eq!(backoff(b, 3, Duration::from_secs(5)), b * 4);
        assert_eq!(
            backoff(b, 30, Duration::from_secs(5)),
            Duration::from_secs(5)
        );
    }

    #[tokio::test]
    async fn a_request_that_never_got_an_answer_says_why_whole_without_its_url() {
        // A port nothing listens on: refused at once, on loopback.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let url = format!(
            "http://127.0.0.1:{port}/cdx/search/cdx?url={}",
            "x".repeat(200)
        );
        let e = reqwest::Client::new()
            .get(&url)
            .send()
            .await
            .expect_err("nothing listens there");
        let why = transport_reason(e);
        assert!(!why.contains("xxxx"), "{why}");
        assert!(why.to_ascii_lowercase().contains("refused"), "{why}");
    }
}
