//! Fake Memento archives on loopback for tests, well-behaved, slow, broken or hostile on
//! purpose: raw TCP, so a test gets what a real network gives (a reset mid-body, a hang after
//! the headers, a huge body, a gzip bomb). The library's `tmproxy demo` has a small archive of
//! its own; the TimeMaps both send come from [`tmproxy::demo::archive::timemap_body`]. Each
//! counts what a polite client must keep low: requests, how many were in flight at once, when
//! each came and the `User-Agent` it named.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
pub use tmproxy::demo::archive::{timemap_body, uri_m, Target, TimeMapSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How a simulated archive answers a TimeMap request (`GET /timemap/link/{URI-R}`).
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// A link-format TimeMap of `captures` (14-digit timestamps) for any URI-R.
    TimeMap(TimeMapSpec),
    /// This status with this body (a 404 HTML page, a 500…).
    Status(u16, String),
    /// 200 with exactly this body (malformed entries, garbage, HTML…).
    Body(String),
    /// Sends the headers and part of the body, then resets the connection.
    ResetMidBody,
    /// Sends the headers, then nothing, ever.
    HangAfterHeaders,
    /// Accepts the connection and never answers.
    HangBeforeHeaders,
    /// 200 with a body of this many bytes of valid-looking entries.
    Oversized(usize),
    /// 307 to the same TimeMap under `/moved/`, as pywb does; `/moved/` serves the TimeMap.
    Redirect(TimeMapSpec),
    /// 302 to itself, forever.
    RedirectLoop,
    /// 200 and a valid TimeMap sent one byte per this interval.
    Trickle(Duration),
    /// 200 with `Content-Encoding: gzip` (never asked for): this many zero bytes compressed to a
    /// few kilobytes, which a client that inflated it would hold whole.
    GzipBomb(usize),
    /// 200 `application/link-format` whose body is binary garbage, invalid UTF-8 included.
    Garbage,
    /// 429 with `Retry-After` of this many seconds.
    TooManyRequests(u64),
    /// This status with `Retry-After: <this value>` verbatim (an HTTP date, garbage…).
    AskToWait(u16, String),
    /// 307 to the same URL on https, at this same port, which speaks only plain HTTP: the
    /// TLS handshake fails, as it does for an archive that moved to https behind a broken port.
    MovedToHttps,
}

/// A running simulated archive. Dropping it stops it.
pub struct SimulatedArchive {
    pub addr: std::net::SocketAddr,
    counts: Arc<Counts>,
    behaviour: Arc<RwLock<Arc<Behaviour>>>,
    task: JoinHandle<()>,
}

/// One request as the archive saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When its head had arrived.
    pub at: Instant,
    pub path: String,
    /// Its `User-Agent`, empty when it sent none.
    pub user_agent: String,
    /// Its `Accept`, empty when it sent none.
    pub accept: String,
}

/// What an archive counts, shared by its connections.
#[derive(Default)]
struct Counts {
    requests: AtomicUsize,
    /// Body bytes of `Oversized` the network took from it (written without error).
    body_bytes_sent: AtomicUsize,
    /// Requests read and not yet answered whole, now and at most.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
}

/// A request's place among those in flight, given up when it is answered (or dropped).
struct InFlight<'a>(&'a Counts);

impl<'a> InFlight<'a> {
    fn new(counts: &'a Counts) -> InFlight<'a> {
        let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counts.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(counts)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SimulatedArchive {
    /// Binds 127.0.0.1:0 and serves `behaviour` until dropped.
    pub async fn start(behaviour: Behaviour) -> std::io::Result<SimulatedArchive> {
        SimulatedArchive::start_on(([127, 0, 0, 1], 0).into(), behaviour).await
    }

    /// Binds `addr` (a loopback address) and serves `behaviour` until dropped.
    pub async fn start_on(
        addr: std::net::SocketAddr,
        behaviour: Behaviour,
    ) -> std::io::Result<SimulatedArchive> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let counting = counts.clone();
        let behaviour = Arc::new(RwLock::new(Arc::new(behaviour)));
        let current = behaviour.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                // Each connection answers with the behaviour in force when it arrived.
                let now = current
                    .read()
                    .map(|b| b.clone())
                    .unwrap_or_else(|p| p.into_inner().clone());
                let counts = counting.clone();
                tokio::spawn(async move {
                    let _ = handle(stream, addr, &now, &counts).await;
                });
            }
        });
        Ok(SimulatedArchive {
            addr,
            counts,
            behaviour,
            task,
        })
    }

    /// The prefix to configure as `[[archives]] timemap`.
    pub fn timemap_prefix(&self) -> String {
        format!("http://{}/timemap/link/", self.addr)
    }

    pub fn timegate_prefix(&self) -> String {
        format!("http://{}/timegate/", self.addr)
    }

    /// The URI-M this archive gives a capture.
    pub fn uri_m(&self, timestamp: &str, uri_r: &str) -> String {
        uri_m(self.addr, timestamp, uri_r)
    }

    /// Changes how it answers from the next connection on (an archive that starts failing, or
    /// gains captures, between two simulated days).
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        let mut b = self.behaviour.write().unwrap_or_else(|p| p.into_inner());
        *b = Arc::new(behaviour);
    }

    /// How many HTTP requests it has received.
    pub fn requests(&self) -> usize {
        self.counts.requests.load(Ordering::SeqCst)
    }

    /// How many bytes of an `Oversized` body the client let it send: what the client read, plus
    /// what the sockets' buffers hold. A client that stops at its cap keeps this far below the
    /// body's size.
    pub fn body_bytes_sent(&self) -> usize {
        self.counts.body_bytes_sent.load(Ordering::SeqCst)
    }

    /// The most requests it was answering at once: from a request's head read until its
    /// answer is sent (a TimeMap's: once its delay is over and it starts to send it).
    pub fn max_in_flight(&self) -> usize {
        self.counts.max_in_flight.load(Ordering::SeqCst)
    }

    /// Every request it has received, in the order their heads arrived.
    pub fn seen(&self) -> Vec<Seen> {
        self.counts
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for SimulatedArchive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request head and answers it; one request per connection (`Connection: close`).
async fn handle(
    mut stream: TcpStream,
    addr: std::net::SocketAddr,
    behaviour: &Behaviour,
    counts: &Counts,
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.first() == Some(&0x16) {
            // A TLS ClientHello (after `MovedToHttps`): answer in plain HTTP, as a port that
            // does not speak TLS does, so the handshake fails at once instead of timing out.
            stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await?;
            return Ok(());
        }
    }
    let at = Instant::now();
    let in_flight = InFlight::new(counts);
    counts.requests.fetch_add(1, Ordering::SeqCst);
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let header = |wanted: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case(wanted))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let (user_agent, accept) = (header("user-agent"), header("accept"));
    counts
        .seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Seen {
            at,
            path: path.clone(),
            user_agent,
            accept,
        });
    let sent_bytes = &counts.body_bytes_sent;

    let Target { page, uri_r, moved } = Target::of(&path);

    match behaviour {
        Behaviour::TimeMap(spec) => {
            tokio::time::sleep(spec.delay).await;
            // Answered from here: the client may take its next turn as soon as it has read
            // this, before this task gets round to counting the request done.
            drop(in_flight);
            let body = timemap_body(addr, spec, &uri_r, page);
            respond(&mut stream, 200, "application/link-format", body.as_bytes()).await
        }
        Behaviour::Redirect(spec) => {
            if moved {
                let body = timemap_body(addr, spec, &uri_r, 1);
                respond(&mut stream, 200, "application/link-format", body.as_bytes()).await
            } else {
                let head = format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: /moved/{uri_r}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                stream.write_all(head.as_bytes()).await
            }
        }
        Behaviour::RedirectLoop => {
            let head = format!("HTTP/1.1 302 Found\r\nLocation: {path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            stream.write_all(head.as_bytes()).await
        }
        Behaviour::Status(code, body) => {
            respond(&mut stream, *code, "text/html", body.as_bytes()).await
        }
        Behaviour::Body(body) => {
            respond(&mut stream, 200, "application/link-format", body.as_bytes()).await
        }
        Behaviour::ResetMidBody => {
            let spec = TimeMapSpec::of(&["20000101000000", "20010101000000", "20020101000000"]);
            let body = timemap_body(addr, &spec, &uri_r, 1);
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len() + 1000);
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body.as_bytes()[..body.len() / 2]).await?;
            stream.flush().await?;
            // Linger 0 makes the close an RST, as a crashed server or middlebox would.
            stream.set_zero_linger()?;
            drop(stream);
            Ok(())
        }
        Behaviour::HangAfterHeaders => {
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Length: 100000\r\n\r\n<").await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        Behaviour::HangBeforeHeaders => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        Behaviour::Trickle(every) => {
            let spec = TimeMapSpec::of(&["20000101000000", "20010101000000"]);
            let body = timemap_body(addr, &spec, &uri_r, 1);
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await?;
            for b in body.as_bytes() {
                stream.write_all(&[*b]).await?;
                stream.flush().await?;
                tokio::time::sleep(*every).await;
            }
            Ok(())
        }
        Behaviour::GzipBomb(size) => {
            // Compressing is CPU work: off the async threads, which also serve the proxy in tests.
            let size = *size;
            let body = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
                use std::io::Write as _;
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                let zeros = vec![0u8; 1 << 20];
                let mut left = size;
                while left > 0 {
                    let n = left.min(zeros.len());
                    gz.write_all(&zeros[..n])?;
                    left -= n;
                }
                gz.finish()
            })
            .await
            .map_err(std::io::Error::other)??;
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
            stream.flush().await
        }
        Behaviour::Garbage => {
            let mut body: Vec<u8> = (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect();
            body.extend_from_slice(b"<\xff\xfe>; rel=\"memento\"; datetime=\"\xc3\x28\"\n");
            respond(&mut stream, 200, "application/link-format", &body).await
        }
        Behaviour::TooManyRequests(after) => {
            let head = format!("HTTP/1.1 429 Too Many Requests\r\nRetry-After: {after}\r\nContent-Length: 9\r\nConnection: close\r\n\r\nslow down");
            stream.write_all(head.as_bytes()).await
        }
        Behaviour::AskToWait(code, after) => {
            let head = format!("HTTP/1.1 {code} Wait\r\nRetry-After: {after}\r\nContent-Length: 9\r\nConnection: close\r\n\r\nslow down");
            stream.write_all(head.as_bytes()).await
        }
        Behaviour::Oversized(size) => {
            let line = format!(
                "<{}>; rel=\"memento\"; datetime=\"Sat, 01 Jan 2000 00:00:00 GMT\",\n",
                uri_m(addr, "20000101000000", &uri_r)
            );
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nConnection: close\r\n\r\n".to_string();
            stream.write_all(head.as_bytes()).await?;
            // No Content-Length: the client must enforce its cap while reading.
            let mut sent = 0;
            while sent < *size {
                stream.write_all(line.as_bytes()).await?;
                sent += line.len();
                sent_bytes.fetch_add(line.len(), Ordering::SeqCst);
            }
            Ok(())
        }
        Behaviour::MovedToHttps => {
            let head = format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: https://{addr}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            stream.write_all(head.as_bytes()).await
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    code: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let head = format!("HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}
