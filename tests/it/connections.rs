//! Connections a client opens and then holds without asking anything: an h2c flood past the
//! open-file limit, idle HTTP/1 and HTTP/2 connections, more than `max_connections`, more
//! HTTP/2 streams than the bound, and a dead HTTP/2 peer. Service must go on through each.
//!
//! HTTP/2 is spoken by hand over a raw socket, so each test decides exactly which frames are
//! sent and which are answered (a real client would answer the server's PINGs for us).

use crate::support::{
    admin_stats, client, config_for, start_proxy, start_proxy_with_admin_listener,
};
use crate::support::{Proxy, ServeProcess};
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const ACK: u8 = 1;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
const REFUSED_STREAM: u32 = 7;

/// One HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("small frame");
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// An HPACK string literal, not Huffman-coded.
fn hpack_string(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len();
    if n < 127 {
        out.push(n as u8);
    } else {
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    out.extend(s.as_bytes());
}

/// HEADERS (END_STREAM, END_HEADERS) of `GET path` on `stream`.
fn get(stream: u32, path: &str) -> Vec<u8> {
    // :method GET and :scheme http from the static table; :path (4) and :authority (1) as
    // literals without indexing, so the frames stand alone.
    let mut block = vec![0x82, 0x86, 0x04];
    hpack_string(&mut block, path);
    block.push(0x01);
    hpack_string(&mut block, "localhost");
    frame(HEADERS, 0x1 | 0x4, stream, &block)
}

/// The h2c preface and an empty SETTINGS frame: the start of every HTTP/2 connection.
fn h2_start() -> Vec<u8> {
    let mut start = PREFACE.to_vec();
    start.extend(frame(SETTINGS, 0, 0, &[]));
    start
}

/// The next frame: kind, flags, stream, payload. None at the end of the connection.
async fn read_frame(s: &mut TcpStream) -> Option<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).await.ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).await.ok()?;
    Some((head[3], head[4], stream, payload))
}

/// Reads (and drops) whatever comes until the server closes the connection, at most `bound`:
/// whether it closed.
async fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    let mut sink = [0u8; 4096];
    let read_to_end = async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(bound, read_to_end).await.is_ok()
}

/// A client that opens a new connection for each request.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client")
}

/// GETs `url` on fresh connections until it answers, for at most `bound`: the answer.
async fn answered_within(url: &str, bound: Duration) -> reqwest::Response {
    let started = Instant::now();
    loop {
        match fresh_client().get(url).send().await {
            Ok(r) => return r,
            Err(e) => assert!(
                started.elapsed() < bound,
                "{url} unanswered for {bound:?}: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of one series in a Prometheus text.
fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

async fn metrics_of(base: &str) -> String {
    let r = answered_within(&format!("{base}/metrics"), Duration::from_secs(20)).await;
    r.text().await.expect("metrics")
}

const OPEN: &str = "tmproxy_connections_open{listener=\"public\"}";
const REFUSED: &str = "tmproxy_connections_refused_total{listener=\"public\"}";

async fn one_memento_archive(delay: Duration) -> SimulatedArchive {
    let mut spec = TimeMapSpec::of(&["20010101000000"]);
    spec.delay = delay;
    SimulatedArchive::start(Behaviour::TimeMap(spec))
        .await
        .expect("archive")
}

/// h2c connections that send the preface and an empty SETTINGS frame, then nothing, against
/// the real binary under a 256-descriptor limit: `max_connections` is fitted under it (128), so
/// the flood meets the cap, never the descriptor limit; each is closed after
/// `header_read_timeout` (3 s here) or sooner to make room, and /healthz and a cache hit are
/// answered during the flood and after it.
#[tokio::test]
async fn an_h2c_flood_past_the_fd_limit_is_closed_and_service_goes_on() {
    let a = one_memento_archive(Duration::ZERO).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("a", &a)]);
    config.server.header_read_timeout = Duration::from_secs(3);
    config.cache.path = dir.path().join("cache").display().to_string();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml::to_string(&config).expect("toml")).expect("config");
    let server = ServeProcess::start_with_fd_limit(&file, 256);
    let base = server.base.clone();
    let log = server.log();
    assert!(log.contains("max_connections=128"), "{log}");
    let timemap = format!("{base}/timemap/link/http://example.com/");
    let first = answered_within(&timemap, Duration::from_secs(20)).await;
    assert_eq!(first.headers()["x-cache"], "MISS");

    let addr = base.trim_start_matches("http://").to_string();
    let mut flood = Vec::new();
    while flood.len() < 400 {
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        s.write_all(&h2_start()).await.expect("preface");
        flood.push(s);
    }
    let healthz = answered_within(&format!("{base}/healthz"), Duration::from_secs(20)).await;
    assert_eq!(healthz.status(), 200);
    let hit = answered_within(&timemap, Duration::from_secs(20)).await;
    assert_eq!(hit.headers()["x-cache"], "HIT");

    // Every flood connection is closed by the server (the 30 s bound is only "no hang").
    let started = Instant::now();
    for (i, s) in flood.iter_mut().enumerate() {
        let left = Duration::from_secs(30).saturating_sub(started.elapsed());
        assert!(
            closed_within(s, left).await,
            "flood connection {i} still open after 30 s:\n{}",
            server.log()
        );
    }
    drop(flood);
    let healthz = answered_within(&format!("{base}/healthz"), Duration::from_secs(20)).await;
    assert_eq!(healthz.status(), 200);
    let hit = answered_within(&timemap, Duration::from_secs(20)).await;
    assert_eq!(hit.headers()["x-cache"], "HIT");
    let log = server.log();
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// `GET path` on a kept-alive HTTP/1.1 connection: the response head (lowercased), its body
/// read to its end (Content-Length or chunked). Bounded at 10 s: only "no hang".
async fn http1_get(s: &mut TcpStream, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    s.write_all(request.as_bytes()).await.expect("request");
    let read = async {
        let mut got = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = s.read(&mut buf).await.expect("read");
            assert!(
                n > 0,
                "closed mid-answer: {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
            let Some(end) = text.find("\r\n\r\n") else {
                continue;
            };
            let head = text[..end].to_string();
            let body = got.len() - end - 4;
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            let done = match length {
                Some(length) => body >= length,
                None => text.ends_with("\r\n0\r\n\r\n"),
            };
            if done {
                return head;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("an answer within 10 s")
}

/// The attack at its full size: 1,100 h2c connections that send the preface and SETTINGS, then
/// nothing, against the real binary under 1,024 descriptors (`prlimit --nofile=1024:1024`,
/// here `ulimit -n`). `max_connections` is fitted to 768, and past it the connection idle the
/// longest (one that never asked, first) makes room: during the flood /healthz on a new
/// connection, and a cache hit on a client's connection opened before it, answer within 1 s.
/// Before, accepting stopped at the descriptor limit: /healthz took up to 23 s and a cache hit
/// on a new connection 10.2 s.
#[tokio::test]
async fn during_an_h2c_flood_of_1100_under_1024_fds_healthz_and_a_hit_answer_within_a_second() {
    let a = one_memento_archive(Duration::ZERO).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("a", &a)]);
    config.cache.path = dir.path().join("cache").display().to_string();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml::to_string(&config).expect("toml")).expect("config");
    let server = ServeProcess::start_with_fd_limit(&file, 1024);
    let log = server.log();
    assert!(log.contains("max_connections=768"), "{log}");
    let base = server.base.clone();
    let addr = base.trim_start_matches("http://").to_string();
    let timemap = "/timemap/link/http://example.com/";
    let mut kept = TcpStream::connect(&addr).await.expect("connect");
    assert!(http1_get(&mut kept, timemap)
        .await
        .contains("x-cache: miss"));

    let mut flood = Vec::with_capacity(1_100);
    for _ in 0..1_100 {
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        s.write_all(&h2_start()).await.expect("preface");
        flood.push(s);
    }
    let mut took = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let r = fresh_client()
            .get(format!("{base}/healthz"))
            .send()
            .await
            .expect("/healthz during the flood");
        assert_eq!(r.status(), 200);
        let healthz = started.elapsed();
        let started = Instant::now();
        let head = http1_get(&mut kept, timemap).await;
        let hit = started.elapsed();
        assert!(head.contains("x-cache: hit"), "{head}");
        took.push((healthz, hit));
    }
    eprintln!("during the flood, (/healthz on a new connection, hit on an open one): {took:?}");
    for (healthz, hit) in &took {
        assert!(*healthz < Duration::from_secs(1), "{took:?}");
        assert!(*hit < Duration::from_secs(1), "{took:?}");
    }
    let text = metrics_of(&base).await;
    assert!(metric(&text, OPEN) <= 768 + 4, "{text}");
    let evicted = metric(
        &text,
        "tmproxy_connections_evicted_total{listener=\"public\"}",
    );
    assert!(evicted >= 1_100 - 768, "{text}");
    let log = server.log();
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    drop(flood);
}

/// Out of descriptors anyway (the limit lowered under the running server with `prlimit
/// --pid`, below what `max_connections` was fitted to): accepting backs off, says so once, and
/// closes the oldest idle connection for the descriptor, so /healthz on a new connection is
/// still answered during a flood of silent connections.
#[tokio::test]
async fn out_of_descriptors_accepting_backs_off_and_makes_room() {
    let a = one_memento_archive(Duration::ZERO).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("a", &a)]);
    config.cache.path = dir.path().join("cache").display().to_string();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml::to_string(&config).expect("toml")).expect("config");
    let server = ServeProcess::start_with_fd_limit(&file, 1024);
    let base = server.base.clone();
    let lowered = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", server.pid()))
        .arg("--nofile=200:200")
        .status()
        .expect("prlimit runs");
    assert!(lowered.success());
    let addr = base.trim_start_matches("http://").to_string();
    let mut flood = Vec::new();
    for _ in 0..400 {
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        s.write_all(&h2_start()).await.expect("preface");
        flood.push(s);
    }
    let healthz = answered_within(&format!("{base}/healthz"), Duration::from_secs(10)).await;
    assert_eq!(healthz.status(), 200);
    let log = server.log();
    let said = log
        .matches("out of file descriptors: closing the oldest idle connection")
        .count();
    assert!(said >= 1, "{log}");
    assert!(!log.contains("panicked"), "{log}");
    drop(flood);
}

/// A proxy whose idle connections are closed after 1 s (and request heads allowed 30 s, so
/// only idle_timeout can close them within the tests' bounds).
async fn idle_proxy(archive: &SimulatedArchive) -> Proxy {
    let mut config = config_for(&[("a", archive)]);
    config.server.idle_timeout = Duration::from_secs(1);
    config.server.header_read_timeout = Duration::from_secs(30);
    config.upstream.timeout = Duration::from_secs(10);
    config.upstream.deadline = Duration::from_secs(10);
    start_proxy(config).await
}

/// A kept-alive HTTP/1 connection and an HTTP/2 connection (whose client answers SETTINGS and
/// PINGs, as a live one does) are closed once they have had no request for `idle_timeout`;
/// HTTP/2 is told first with GOAWAY. Without it they stay open until header_read_timeout
/// (HTTP/1, 30 s here) or for ever (HTTP/2): the 15 s bound fails.
#[tokio::test]
async fn idle_http1_and_http2_connections_are_closed_after_idle_timeout() {
    let a = one_memento_archive(Duration::ZERO).await;
    let proxy = idle_proxy(&a).await;
    let addr = proxy.base.trim_start_matches("http://").to_string();

    let mut h1 = TcpStream::connect(&addr).await.expect("connect");
    h1.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    let mut answer = [0u8; 12];
    h1.read_exact(&mut answer).await.expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200");

    let mut h2 = TcpStream::connect(&addr).await.expect("connect");
    let mut hello = h2_start();
    hello.extend(get(1, "/healthz"));
    h2.write_all(&hello).await.expect("request");
    let h2_side = async {
        let (mut answered, mut go_away) = (false, false);
        while let Some((kind, flags, stream, payload)) = read_frame(&mut h2).await {
            match kind {
                SETTINGS if flags & ACK == 0 => {
                    let _ = h2.write_all(&frame(SETTINGS, ACK, 0, &[])).await;
                }
                PING if flags & ACK == 0 => {
                    let _ = h2.write_all(&frame(PING, ACK, 0, &payload)).await;
                }
                HEADERS if stream == 1 => answered = true,
                GOAWAY => go_away = true,
                _ => {}
            }
        }
        (answered, go_away)
    };
    let (h2_closed, h1_closed) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(15), h2_side),
        closed_within(&mut h1, Duration::from_secs(15))
    );
    assert!(
        h1_closed,
        "an idle HTTP/1 connection is still open after 15 s"
    );
    let (answered, go_away) =
        h2_closed.expect("an idle HTTP/2 connection is still open after 15 s");
    assert!(answered, "no answer on the HTTP/2 connection");
    assert!(go_away, "the HTTP/2 connection was closed without GOAWAY");
}

/// idle_timeout counts only time with no request in flight: requests that wait 4 s on a slow
/// archive (four times idle_timeout), over HTTP/1 and HTTP/2, are answered in full.
#[tokio::test]
async fn a_slow_request_in_flight_is_not_cut_by_idle_timeout() {
    let a = one_memento_archive(Duration::from_secs(4)).await;
    let proxy = idle_proxy(&a).await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let (one, two) = tokio::join!(
        client()
            .get(format!("{}/timemap/link/http://example.com/h1", proxy.base))
            .send(),
        h2.get(format!("{}/timemap/link/http://example.com/h2", proxy.base))
            .send(),
    );
    for (name, answer) in [("HTTP/1", one), ("HTTP/2", two)] {
        let answer = answer.unwrap_or_else(|e| panic!("{name}: the slow request was cut: {e}"));
        assert_eq!(answer.status(), 200, "{name}");
        let body = answer.text().await.expect("body");
        assert!(body.contains("20010101000000"), "{name}: {body}");
    }
}

/// With `max_connections = 20` and 20 connections each waiting on a slow archive, the 21st is
/// closed at once, unanswered, and counted; the admin listener has its own cap, so /metrics
/// still answers there. Once the 20 are answered and idle, a new connection is served in the
/// place of the one idle the longest, which is closed and counted. "At once" is bounded by
/// 5 s, half the header timeout that would close it otherwise.
#[tokio::test]
async fn past_max_connections_an_idle_one_makes_room_and_with_none_idle_a_new_one_is_refused() {
    let a = one_memento_archive(Duration::from_secs(4)).await;
    let mut config = config_for(&[("a", &a)]);
    // All 20 requests must be at the archive at once, past its default of 8 turns.
    config.archives[0].max_concurrency = 20;
    config.server.max_connections = 20;
    config.admin.token = "conn-token".into();
    config.server.header_read_timeout = Duration::from_secs(10);
    let proxy = start_proxy_with_admin_listener(config).await;
    let admin = proxy.admin_base.clone().expect("admin listener");
    let addr = proxy.base.trim_start_matches("http://").to_string();
    let mut busy = Vec::new();
    for i in 0..20 {
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        let ask = format!("GET /timemap/link/http://example.com/{i} HTTP/1.1\r\nHost: x\r\n\r\n");
        s.write_all(ask.as_bytes()).await.expect("request");
        busy.push(s);
    }
    // Every request has reached the archive, so each connection has one in flight.
    let started = Instant::now();
    while a.requests() < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "20 never asked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut extra = TcpStream::connect(&addr).await.expect("connect");
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), extra.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the connection past the cap was held open");
    assert!(
        answer.is_empty(),
        "answered past the cap: {:?}",
        String::from_utf8_lossy(&answer)
    );
    let text = metrics_of(&admin).await;
    assert_eq!(metric(&text, REFUSED), 1, "{text}");
    assert_eq!(metric(&text, OPEN), 20, "{text}");
    let stats = admin_stats(&admin, "conn-token").await;
    assert_eq!(stats["connections"]["public"]["refused"], 1, "{stats}");
    assert_eq!(stats["connections"]["public"]["open"], 20, "{stats}");

    // Each is answered in full and stays open, idle.
    for (i, s) in busy.iter_mut().enumerate() {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf))
            .await
            .expect("answered")
            .expect("read");
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{i}");
    }
    let r = answered_within(&format!("{}/healthz", proxy.base), Duration::from_secs(10)).await;
    assert_eq!(r.status(), 200);
    let stats = admin_stats(&admin, "conn-token").await;
    assert_eq!(stats["connections"]["public"]["evicted"], 1, "{stats}");
    assert_eq!(stats["connections"]["public"]["refused"], 1, "{stats}");
    let closed = futures::future::join_all(
        busy.iter_mut()
            .map(|s| closed_within(s, Duration::from_secs(2))),
    )
    .await;
    assert_eq!(closed.iter().filter(|c| **c).count(), 1, "{closed:?}");
}

/// The server's SETTINGS announce at most `H2_MAX_STREAMS` concurrent streams, and a stream
/// past them (all waiting on a slow archive) is refused with RST_STREAM(REFUSED_STREAM) while
/// the others are answered.
#[tokio::test]
async fn http2_concurrent_streams_per_connection_are_bounded() {
    let max = tmproxy::serve::H2_MAX_STREAMS;
    let a = one_memento_archive(Duration::from_secs(3)).await;
    let proxy = idle_proxy(&a).await;
    let mut s = TcpStream::connect(proxy.base.trim_start_matches("http://"))
        .await
        .expect("connect");
    s.write_all(&h2_start()).await.expect("preface");
    let (kind, _, _, settings) = tokio::time::timeout(Duration::from_secs(10), read_frame(&mut s))
        .await
        .expect("SETTINGS in time")
        .expect("SETTINGS");
    assert_eq!(kind, SETTINGS);
    let announced = settings
        .chunks(6)
        .find(|p| u16::from_be_bytes([p[0], p[1]]) == SETTINGS_MAX_CONCURRENT_STREAMS)
        .map(|p| u32::from_be_bytes([p[2], p[3], p[4], p[5]]));
    assert_eq!(announced, Some(max));

    let mut burst = frame(SETTINGS, ACK, 0, &[]);
    let streams: Vec<u32> = (0..=max).map(|i| 1 + 2 * i).collect();
    for id in &streams {
        burst.extend(get(*id, "/timemap/link/http://example.com/"));
    }
    s.write_all(&burst).await.expect("streams");
    let (mut refused, mut answered) = (Vec::new(), 0u32);
    let read = async {
        while let Some((kind, flags, stream, payload)) = read_frame(&mut s).await {
            match kind {
                RST_STREAM if payload.len() == 4 => {
                    let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                    refused.push((stream, code));
                }
                // Each answer ends with a DATA frame flagged END_STREAM.
                DATA if flags & 0x1 != 0 => answered += 1,
                PING if flags & ACK == 0 => {
                    let _ = s.write_all(&frame(PING, ACK, 0, &payload)).await;
                }
                _ => {}
            }
            if answered == max {
                break;
            }
        }
    };
    let done = tokio::time::timeout(Duration::from_secs(30), read).await;
    assert!(
        done.is_ok(),
        "not all {max} streams answered: {answered}, refused {refused:?}"
    );
    assert_eq!(refused, vec![(streams[max as usize], REFUSED_STREAM)]);
}

/// A peer that opens a stream on a slow request and then goes silent (answers no PING) is cut
/// off by HTTP/2 keep-alive pings (every 500 ms, 1 s to answer, here), although its request is
/// in flight and so idle_timeout does not apply. Without the pings it holds the connection
/// until the archive answers (20 s); the bound is 10 s.
#[tokio::test]
async fn a_dead_http2_peer_is_cut_off_by_keep_alive_pings() {
    let a = one_memento_archive(Duration::from_secs(20)).await;
    let mut config = config_for(&[("a", &a)]);
    config.upstream.timeout = Duration::from_secs(30);
    config.upstream.deadline = Duration::from_secs(30);
    let dir = tempfile::tempdir().expect("temp dir");
    config.cache.path = dir.path().join("cache").display().to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (state, router) = tmproxy::app::build(&config, Some(format!("http://{addr}")))
        .await
        .expect("app builds");
    let mut options = tmproxy::app::ServeOptions::from_config(&config, &state);
    options.h2_ping_interval = Duration::from_millis(500);
    options.h2_ping_timeout = Duration::from_secs(1);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(tmproxy::app::serve_with(
        listener,
        router,
        async move {
            let _ = stopped.await;
        },
        options,
    ));
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let mut hello = h2_start();
    hello.extend(frame(SETTINGS, ACK, 0, &[]));
    hello.extend(get(1, "/timemap/link/http://example.com/"));
    s.write_all(&hello).await.expect("request");
    // Reads (so the server's writes never block) but answers nothing.
    assert!(
        closed_within(&mut s, Duration::from_secs(10)).await,
        "a silent HTTP/2 peer still holds its connection after 10 s"
    );
    let started = Instant::now();
    while state.connections.public.open() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still counted open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), task).await;
}
