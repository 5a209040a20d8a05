//! The floor under tmproxy's cache hits: plain hyper, one single-threaded runtime per thread
//! (as `tmproxy serve`'s connection threads), answering every request with one file's bytes and
//! nothing else: no router, no layers, no cache. `benches/hit_vs_nginx.sh` runs it with FLOOR=1
//! to tell how much of the gap to nginx is hyper's and how much is ours.
//!
//!   hyper_floor FILE PORT [THREADS=nproc] [HEAD_FILE]
//!
//! With HEAD_FILE (lines of `name: value`, as `curl -D` writes them; a status line, `date`
//! and `content-length` are skipped, hyper writes its own), every answer carries those headers
//! too: the same head as a tmproxy hit, to tell what its size costs hyper and the kernel. That
//! head is made once and cloned for each answer, the cheapest way to hand it to hyper.

#[path = "floor/threads.rs"]
mod threads;

use axum::body::Body;
use bytes::Bytes;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(port)) = (args.get(1), args.get(2).and_then(|p| p.parse::<u16>().ok()))
    else {
        eprintln!("usage: hyper_floor FILE PORT [THREADS] [HEAD_FILE]");
        return ExitCode::from(2);
    };
    let threads = args
        .get(3)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let head = match args.get(4).map(std::fs::read_to_string) {
        None => std::sync::Arc::default(),
        Some(Ok(text)) => std::sync::Arc::new(head_lines(&text)),
        Some(Err(e)) => {
            eprintln!("head file: {e}");
            return ExitCode::FAILURE;
        }
    };
    let body = match std::fs::read(file) {
        Ok(b) => Bytes::from(b),
        Err(e) => {
            eprintln!("{file}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    threads::serve_on_threads(&listener, threads, move |l| {
        serve(l, body.clone(), head.clone())
    });
    ExitCode::SUCCESS
}

/// Accepts on this thread's copy of the listener and serves each connection on this thread.
async fn serve(listener: tokio::net::TcpListener, body: Bytes, head: Head) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let body = body.clone();
        let head = head.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |_req| {
                let body = body.clone();
                let head = head.clone();
                async move {
                    let mut answer = http::Response::new(Body::from(body));
                    if head.is_empty() {
                        answer.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/link-format"),
                        );
                    } else {
                        // A map made once and cloned: the cheapest way to hand hyper a head.
                        *answer.headers_mut() = (*head).clone();
                    }
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

type Head = std::sync::Arc<http::HeaderMap>;

/// The headers of a `curl -D` dump, less those hyper writes itself.
fn head_lines(text: &str) -> http::HeaderMap {
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .filter_map(|(name, value)| {
            let name = http::HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
            let value = http::HeaderValue::from_str(value.trim()).ok()?;
            let own = [http::header::DATE, http::header::CONTENT_LENGTH];
            (!own.contains(&name)).then_some((name, value))
        })
        .collect()
}
