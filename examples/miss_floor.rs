//! The floor under tmproxy's aggregated misses: plain hyper, one single-threaded runtime per
//! thread (as `tmproxy serve`'s connection threads), asking every archive URL given for each
//! request, over a hyper client per thread with pooled keep-alive connections, and answering
//! with what they sent. No router, no layers, no cache, no fan-out bookkeeping, no log.
//! `benches/vs_memgator.sh` runs it with FLOOR=1 to tell how much of a miss's CPU any
//! aggregator on hyper pays (the four loopback exchanges and hyper's own work) and how much is
//! tmproxy's.
//!
//!   miss_floor PORT MODE URL...
//!
//! MODE `bytes` answers with the archives' bodies one after the other (no parse at all); MODE
//! `core` runs them through tmproxy's core as a miss does (each body parsed as link format,
//! its mementos listed, the aggregate merged and rendered in link format): what parsing,
//! merging and rendering add to the transport. MODE `reqwest` is `core` with the archives asked
//! through reqwest (a client per thread, redirects off, no proxy, as tmproxy builds its own)
//! instead of hyper's client: what reqwest's layers add.

#[path = "floor/threads.rs"]
mod threads;

use axum::body::Body;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use std::process::ExitCode;
use std::sync::Arc;
use tmproxy_core::timemap::aggregate::Aggregate;
use tmproxy_core::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution};
use tmproxy_core::timemap::credit::Credits;
use tmproxy_core::timemap::parse::parse_link_format;
use tmproxy_core::timemap::serialize::{render, SelfLinks, TimeMapFormat};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Bytes,
    Core,
    Reqwest,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let port = args.get(1).and_then(|p| p.parse::<u16>().ok());
    let mode = match args.get(2).map(String::as_str) {
        Some("bytes") => Some(Mode::Bytes),
        Some("core") => Some(Mode::Core),
        Some("reqwest") => Some(Mode::Reqwest),
        _ => None,
    };
    let urls: Vec<http::Uri> = args.iter().skip(3).filter_map(|u| u.parse().ok()).collect();
    let (Some(port), Some(mode)) = (port, mode) else {
        eprintln!("usage: miss_floor PORT bytes|core|reqwest URL...");
        return ExitCode::from(2);
    };
    if urls.is_empty() || urls.len() != args.len() - 3 {
        eprintln!("miss_floor: one or more archive URLs, each absolute http://");
        return ExitCode::from(2);
    }
    let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let urls = Arc::new(urls);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads::serve_on_threads(&listener, threads, move |l| serve(l, urls.clone(), mode));
    ExitCode::SUCCESS
}

/// Accepts on this thread's copy of the listener and serves each connection on this thread,
/// asking the archives through this thread's own client.
async fn serve(
    listener: tokio::net::TcpListener,
    urls: Arc<Vec<http::Uri>>,
    mode: Mode,
) -> std::io::Result<()> {
    let client: Client<HttpConnector, http_body_util::Empty<Bytes>> =
        Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let reqwest = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(std::io::Error::other)?;
    loop {
        let (stream, _) = listener.accept().await?;
        let (client, reqwest, urls) = (client.clone(), reqwest.clone(), urls.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |_req| {
                let (client, reqwest, urls) = (client.clone(), reqwest.clone(), urls.clone());
                async move {
                    let bodies = match mode {
                        Mode::Reqwest => ask_reqwest(&reqwest, &urls).await,
                        _ => ask(&client, &urls).await,
                    };
                    let body = aggregate(bodies, mode);
                    let mut answer = http::Response::new(Body::from(body));
                    answer.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/link-format"),
                    );
                    Ok::<_, std::convert::Infallible>(answer)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

/// Every archive asked at once through hyper's client: each one's URL and body.
async fn ask<'u>(
    client: &Client<HttpConnector, http_body_util::Empty<Bytes>>,
    urls: &'u [http::Uri],
) -> Vec<(&'u http::Uri, Bytes)> {
    let asks = urls.iter().map(|u| async move {
        let answer = client.get(u.clone()).await.ok()?;
        let bytes = answer.into_body().collect().await.ok()?.to_bytes();
        Some((u, bytes))
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// [`ask`] through reqwest.
async fn ask_reqwest<'u>(
    client: &reqwest::Client,
    urls: &'u [http::Uri],
) -> Vec<(&'u http::Uri, Bytes)> {
    let asks = urls.iter().map(|u| async move {
        let answer = client.get(u.to_string()).send().await.ok()?;
        Some((u, answer.bytes().await.ok()?))
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The archives' bodies as they are, or through the core.
fn aggregate(bodies: Vec<(&http::Uri, Bytes)>, mode: Mode) -> Vec<u8> {
    if mode == Mode::Bytes {
        return bodies.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    }
    let now = chrono::Utc::now();
    let contributions: Vec<Contribution> = bodies
        .iter()
        .map(|(u, b)| {
            let text = String::from_utf8_lossy(b);
            let listed = parse_link_format(&text, &u.to_string());
            let answer = ArchiveAnswer {
                status: ArchiveStatus::Ok,
                http_status: Some(200),
                detail: None,
                skipped: listed.skipped,
                pages: 1,
                elapsed_ms: 0,
                fallback: None,
            };
            Contribution::listed(&u.to_string(), answer, now, listed.mementos)
        })
        .collect();
    let uri_r = "http://example.com/";
    let agg = Aggregate::of(uri_r, now, &contributions, &Credits::default());
    render(
        TimeMapFormat::LINK,
        &agg,
        &SelfLinks::new("http://127.0.0.1", uri_r),
    )
}
