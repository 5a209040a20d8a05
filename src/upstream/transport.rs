//! The HTTP client archives are asked through: hyper's pooled client, connecting through the
//! archive's guarded resolver, with rustls and the webpki roots, HTTP/1.1 or HTTP/2 as the
//! archive's TLS offers.
//!
//! Why hyper's client and not reqwest: reqwest parses every request's URL twice more (its
//! redirect layer runs with redirects off, and the response's `url()`), merges default headers
//! and clones its connector per request: about an eighth of the CPU an aggregated miss of
//! three archives takes (BENCHMARKS.md, "Misses against MemGator"). What reqwest did for us is
//! here: no proxy (straight to the archive: a proxy would resolve names past the address check),
//! no redirects followed (`fetch::send_within` follows them hop by hop), a connect timeout, TCP
//! keepalive, a `User-Agent` and `Via` on every request, idle connections kept 90 s.

use super::resolve::GuardedResolver;
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, USER_AGENT, VIA};
use http::{Method, Request};
use http_body_util::{BodyExt, Empty};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;
use url::Url;

/// An archive's answer, its body not read yet.
pub type Response = http::Response<hyper::body::Incoming>;

/// Why a request got no answer: hyper's error, whose chain `failure::classify` reads.
pub type SendError = hyper_util::client::legacy::Error;

/// Why a body could not be read whole.
pub type BodyError = hyper::Error;

/// A body still arriving, read a piece at a time.
pub type BodyStream = futures::stream::BoxStream<'static, Result<Bytes, BodyError>>;

/// One archive's client over one connection pool.
#[derive(Clone)]
pub struct ArchiveClient {
    client: Client<HttpsConnector<HttpConnector<GuardedResolver>>, Empty<Bytes>>,
    user_agent: HeaderValue,
    via: HeaderValue,
}

impl ArchiveClient {
    /// A client connecting through `resolver`, giving up on a connection after
    /// `connect_timeout`, with `tls` ([`tls_config`]) for https.
    pub fn new(
        connect_timeout: Duration,
        user_agent: &str,
        via: &HeaderValue,
        resolver: GuardedResolver,
        tls: rustls::ClientConfig,
    ) -> Result<ArchiveClient, BuildError> {
        let mut http = HttpConnector::new_with_resolver(resolver);
        // https URLs go through rustls below; the TCP connector must let them pass.
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        // A pooled connection to an archive that went away unannounced is found dead by the
        // kernel, not by the next request's wait: keepalive probes from 15 s idle, every 15 s,
        // three of them; unacknowledged data gives up after 30 s (reqwest's settings).
        http.set_keepalive(Some(Duration::from_secs(15)));
        http.set_keepalive_interval(Some(Duration::from_secs(15)));
        http.set_keepalive_retries(Some(3));
        #[cfg(target_os = "linux")]
        http.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(https);
        Ok(ArchiveClient {
            client,
            user_agent: HeaderValue::from_str(user_agent).map_err(|_| BuildError::UserAgent)?,
            via: via.clone(),
        })
    }

    /// `method` of `url` with `headers` (and our `User-Agent` and `Via`): the answer, its body
    /// unread. The URL is the checked one, sent as it is.
    pub async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(HeaderName, &str)],
    ) -> Result<Response, SendFailure> {
        let mut request = Request::new(Empty::new());
        *request.method_mut() = method;
        *request.uri_mut() = url
            .as_str()
            .parse()
            .map_err(|_| SendFailure::Url(url.to_string()))?;
        let h = request.headers_mut();
        h.insert(USER_AGENT, self.user_agent.clone());
        h.insert(VIA, self.via.clone());
        // What reqwest sent when a request named no type; archives answer it as they always did.
        h.insert(ACCEPT, HeaderValue::from_static("*/*"));
        for (name, value) in headers {
            let value =
                HeaderValue::from_str(value).map_err(|_| SendFailure::Header(name.clone()))?;
            h.insert(name.clone(), value);
        }
        self.client
            .request(request)
            .await
            .map_err(SendFailure::Send)
    }
}

/// The TLS settings of the archives' clients: ring, the webpki roots, no client certificate.
/// Made once per archive and copied into each of its clients (a copy shares the roots).
pub fn tls_config() -> Result<rustls::ClientConfig, BuildError> {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the user agent is not a header value")]
    UserAgent,
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
}

/// A request that could not be sent or got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendFailure {
    /// Our checked URL that `http` would not take as a URI (never for a URL `url` accepted
    /// and serialised; kept as an error, not a panic).
    #[error("the URL {0} could not be sent")]
    Url(String),
    /// A header value that cannot be sent (from a stored validator that is no header value).
    #[error("the {0} header could not be sent")]
    Header(HeaderName),
    #[error(transparent)]
    Send(SendError),
}

/// The length the answer announced, if any.
pub fn content_length(resp: &Response) -> Option<u64> {
    http_body::Body::size_hint(resp.body()).exact()
}

/// The next piece of the body: None at its end (trailers are skipped).
pub async fn chunk(resp: &mut Response) -> Result<Option<Bytes>, BodyError> {
    loop {
        match resp.body_mut().frame().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(e),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::resolve::{fixed_lookup, GuardedResolver};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves one connection on 127.0.0.1 with 204s, sending each request head read down
    /// `heads`.
    async fn recording_server() -> (Url, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!(
            "http://{}/timemap/link/x",
            listener.local_addr().expect("addr")
        );
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head: Vec<u8> = buf.drain(..end + 4).collect();
                    let _ = tx.send(String::from_utf8_lossy(&head).to_lowercase());
                    let answer = b"HTTP/1.1 204 No Content\r\n\r\n";
                    if stream.write_all(answer).await.is_err() {
                        return;
                    }
                }
            }
        });
        (Url::parse(&url).expect("url"), rx)
    }

    #[tokio::test]
    async fn every_request_names_us_and_accepts_anything_unless_it_says_what() {
        let (url, mut heads) = recording_server().await;
        let via = HeaderValue::from_static("1.1 tmproxy.test (tmproxy)");
        let resolver = GuardedResolver::new(fixed_lookup(Default::default()), Vec::new());
        let tls = tls_config().expect("tls");
        let client = ArchiveClient::new(
            Duration::from_secs(5),
            "tmproxy-test/1",
            &via,
            resolver,
            tls,
        )
        .expect("client");
        let plain = client.send(Method::GET, &url, &[]).await.expect("answer");
        assert_eq!(plain.status(), 204);
        let head = heads.recv().await.expect("head");
        assert!(
            head.starts_with("get /timemap/link/x http/1.1\r\n"),
            "{head}"
        );
        for line in [
            "user-agent: tmproxy-test/1",
            "via: 1.1 tmproxy.test (tmproxy)",
            "accept: */*",
            &format!("host: {}", url.authority()),
        ] {
            assert!(
                head.contains(&format!("\r\n{line}\r\n")),
                "{line} in {head}"
            );
        }
        // On the same pooled connection: the caller's `Accept` replaces the default.
        let link = [(http::header::ACCEPT, "application/link-format")];
        let asked = client.send(Method::GET, &url, &link).await.expect("answer");
        assert_eq!(asked.status(), 204);
        let head = heads
            .recv()
            .await
            .expect("second head on the same connection");
        assert!(
            head.contains("\r\naccept: application/link-format\r\n"),
            "{head}"
        );
        assert_eq!(head.matches("accept:").count(), 1, "{head}");
    }
}
