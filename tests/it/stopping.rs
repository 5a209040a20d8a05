//! SIGTERM closes idle connections end to end (docs/operating.md, Stopping, step 1): a real
//! HTTP/2 client connection (the `h2` crate, h2c over TCP) is told GOAWAY with NO_ERROR and then
//! closed, an idle HTTP/1 keep-alive connection is closed, and the real binary exits 0, all long
//! before the idle and header timeouts could have closed them.

use crate::support::ServeProcess;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// The server's timeouts in this test: no connection is closed by them while it runs.
const TIMEOUTS: &str = "120s";
/// How long the connections may take to close after SIGTERM: far under [`TIMEOUTS`], far over
/// the 2 s an HTTP/2 close may take, on two busy cores.
const CLOSE_BOUND: Duration = Duration::from_secs(30);

/// A TCP stream that keeps a copy of every byte read from it, for the frames the `h2` client
/// does not show (it reports a graceful GOAWAY and a bare close alike).
struct Tapped {
    stream: TcpStream,
    read: Arc<Mutex<Vec<u8>>>,
}

impl AsyncRead for Tapped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let fresh = buf.filled()[before..].to_vec();
        self.read.lock().expect("tap").extend_from_slice(&fresh);
        polled
    }
}

impl AsyncWrite for Tapped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The error codes of the GOAWAY frames in `bytes`, the frames a server sends (no preface).
fn go_away_codes(bytes: &[u8]) -> Vec<u32> {
    const GOAWAY: u8 = 7;
    let mut codes = Vec::new();
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + 9) {
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let Some(payload) = bytes.get(at + 9..at + 9 + len) else {
            break;
        };
        if header[3] == GOAWAY && payload.len() >= 8 {
            codes.push(u32::from_be_bytes([
                payload[4], payload[5], payload[6], payload[7],
            ]));
        }
        at += 9 + len;
    }
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_sends_goaway_and_closes_idle_connections() {
    tokio::time::timeout(Duration::from_secs(120), sigterm_closes_idle())
        .await
        .expect("the test hung");
}

async fn sigterm_closes_idle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nheader_read_timeout = {TIMEOUTS:?}\nidle_timeout = {TIMEOUTS:?}\n\n\
             [cache]\npath = {:?}\n",
            dir.path().join("cache").display().to_string()
        ),
    )
    .expect("config");
    let mut server = ServeProcess::start(&config);
    let addr = server
        .base
        .strip_prefix("http://")
        .expect("an http base")
        .to_string();

    // HTTP/2 by prior knowledge, one request answered, then idle.
    let read = Arc::new(Mutex::new(Vec::new()));
    let tapped = Tapped {
        stream: TcpStream::connect(&addr).await.expect("connect"),
        read: Arc::clone(&read),
    };
    let (h2, connection) = h2::client::handshake(tapped).await.expect("h2 handshake");
    let connection = tokio::spawn(connection);
    let mut h2 = h2.ready().await.expect("h2 ready");
    let request = http::Request::get(format!("http://{addr}/healthz"))
        .body(())
        .expect("request");
    let (answer, _) = h2.send_request(request, true).expect("send");
    let answer = answer.await.expect("an HTTP/2 answer");
    assert_eq!(answer.status(), 200);
    let mut body = answer.into_body();
    while let Some(chunk) = body.data().await {
        chunk.expect("body");
    }

    // HTTP/1.1 keep-alive, one request answered, then idle.
    let mut h1 = TcpStream::connect(&addr).await.expect("connect");
    h1.write_all(b"GET /healthz HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .expect("request");
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.ends_with(b"ok\n") {
        let n = h1.read(&mut buf).await.expect("an HTTP/1 answer");
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    assert!(go_away_codes(&read.lock().expect("tap")).is_empty());

    let signalled = Instant::now();
    server.term();
    let h2_closed = tokio::time::timeout(CLOSE_BOUND, connection)
        .await
        .expect("the idle HTTP/2 connection was not closed after SIGTERM")
        .expect("the connection task");
    assert!(h2_closed.is_ok(), "{h2_closed:?}");
    // hyper's graceful close is two GOAWAYs (any stream, then the last one taken), both
    // NO_ERROR.
    let codes = go_away_codes(&read.lock().expect("tap"));
    assert!(
        !codes.is_empty() && codes.iter().all(|&c| c == 0),
        "the HTTP/2 connection was closed without a GOAWAY (NO_ERROR): {codes:?}"
    );
    let h1_read = tokio::time::timeout(CLOSE_BOUND, h1.read(&mut buf))
        .await
        .expect("the idle HTTP/1 connection was not closed after SIGTERM");
    assert!(matches!(h1_read, Ok(0) | Err(_)), "{h1_read:?}");
    let status = server.exit_within(CLOSE_BOUND).await;
    assert!(status.success(), "{status}:\n{}", server.log());
    eprintln!("closed and exited {:?} after SIGTERM", signalled.elapsed());
}
