//! The real binary's memory under `/memento/proxy` abuse, read from `/proc/<pid>/status`: 200
//! clients that ask for a 12 MiB memento and never read keep it within `max_buffered` plus a
//! margin over its idle RSS (the budget gauge never past `max_buffered`, those past it a 503),
//! and a 1 GiB gzip bomb is a 502 that leaves no trace in it.

use crate::memento_proxy::gzip_bomb;
use crate::support::{archive_config, client, config_for, metric_value, ServeProcess};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmproxy_testkit::load::rss_kib;
use tmproxy_testkit::mementos::{Listing, MementoArchive, MementoBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: u64 = 1024 * 1024;
const MAX_BUFFERED: u64 = 32 * MIB;
/// What the process may hold over its idle RSS besides `max_buffered`: sockets' and pools'
/// own buffers, the connections' tasks, allocator slack.
const MARGIN: u64 = 128 * MIB;
/// The memento: larger than anything the kernel buffers for one loopback connection (the
/// server's send buffer grows to `tcp_wmem`'s 4 MiB, the stalled client's receive buffer is
/// pinned small), so a client that does not read leaves the answer unfinished, holding its
/// charge. A body the kernel could swallow whole ends the answer and hands the charge back.
const MEMENTO: u64 = 12 * MIB;
/// The stalled clients' receive buffer: set before connecting, so autotuning leaves it there.
const STALLED_RCVBUF: u32 = 16 * 1024;

fn rss(pid: u32) -> u64 {
    rss_kib(pid).expect("VmRSS of the server") * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_proxy_clients_and_a_gzip_bomb_stay_within_the_budget() {
    let listing: Listing =
        Arc::new(|addr, uri_r| vec![format!("http://{addr}/arch/web/20010101000000/{uri_r}")]);
    let big = MementoArchive::start(listing.clone(), MementoBody::plain(MEMENTO as usize))
        .await
        .expect("archive");
    let bomb = MementoArchive::start(listing, MementoBody::coded(gzip_bomb(1 << 30), "gzip"))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[]);
    config.archives = [("big", &big), ("bomb", &bomb)]
        .iter()
        .map(|(id, a)| archive_config(id, &a.url("/arch/timemap/link/"), &a.url("/arch/timegate/")))
        .collect();
    config.upstream.max_buffered = MAX_BUFFERED;
    config.server.memento_proxy_max_bytes = 2 * MEMENTO;
    // What is measured is what stalled answers hold, not how fast a loaded machine serves 200
    // of them: a fetch given up at the default 10 s would hand its bytes back mid-watch.
    config.upstream.timeout = Duration::from_secs(60);
    config.upstream.deadline = Duration::from_secs(90);
    config.cache.path = dir.path().join("cache").display().to_string();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml::to_string(&config).expect("toml")).expect("config");
    let server = ServeProcess::start(&file);
    let base = server.base.clone();
    let pid = server.pid();

    // Warm: one memento read whole, so the idle figure includes what any answer needs.
    let warm = client()
        .get(format!(
            "{base}/memento/proxy/2001/http://warm.example/p?archives=big"
        ))
        .send()
        .await
        .expect("warm");
    assert_eq!(warm.status(), 200);
    assert_eq!(warm.bytes().await.expect("body").len() as u64, MEMENTO);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = rss(pid);

    let addr = base.trim_start_matches("http://").to_string();
    let mut stalled = Vec::new();
    for i in 0..200 {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .set_recv_buffer_size(STALLED_RCVBUF)
            .expect("SO_RCVBUF");
        let mut s = socket
            .connect(addr.parse().expect("server address"))
            .await
            .expect("connect");
        let req = format!(
            "GET /memento/proxy/2001/http://st{i}.com/p?archives=big HTTP/1.1\r\nHost: {addr}\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.expect("send");
        stalled.push(s);
    }
    let (mut peak, mut gauge_peak) = (idle, 0.0f64);
    // Watched 6 s at least, and on a loaded machine (the whole suite at once) until the proxy's
    // half of the budget has filled, up to 30 s: how soon 200 requests reach the archive is
    // the machine's, what they may hold is the server's.
    let (started, half) = (Instant::now(), (MAX_BUFFERED / 2) as f64);
    while started.elapsed() < Duration::from_secs(6)
        || (gauge_peak < half && started.elapsed() < Duration::from_secs(30))
    {
        peak = peak.max(rss(pid));
        let gauge = metric_value(&base, "tmproxy_upstream_buffered_bytes").await;
        gauge_peak = gauge_peak.max(gauge.unwrap_or(0.0));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let bound = idle + MAX_BUFFERED + MARGIN;
    println!(
        "idle {} MiB, peak {} MiB with 200 stalled clients, gauge peak {} MiB",
        idle / MIB,
        peak / MIB,
        gauge_peak / MIB as f64
    );
    assert!(peak < bound, "RSS {peak} over {bound} (idle {idle})");
    assert!(gauge_peak <= MAX_BUFFERED as f64, "gauge {gauge_peak}");
    // The proxy's half of the budget, full.
    assert!(
        gauge_peak >= 12.0 * MIB as f64,
        "the stalled answers hold {gauge_peak}"
    );
    // The answers' heads, read only now: those that found the budget full were refused with a
    // 503 saying so; the others were being served.
    let (mut refused, mut served) = (0, 0);
    for s in &mut stalled {
        let mut head = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut head))
            .await
            .expect("a head within 5 s")
            .expect("read");
        let text = String::from_utf8_lossy(&head[..n]);
        if text.starts_with("HTTP/1.1 503") {
            assert!(text.contains("memory budget"), "{text}");
            refused += 1;
        } else if text.starts_with("HTTP/1.1 200") {
            served += 1;
        } else {
            panic!("unexpected answer: {text}");
        }
    }
    println!("{served} stalled clients served, {refused} refused with a 503");
    assert!(
        refused > 0 && served > 0,
        "{served} served, {refused} refused"
    );

    drop(stalled);
    // The bomb: a 502, and the process does not grow by what it inflates to.
    let before = rss(pid);
    let r = client()
        .get(format!(
            "{base}/memento/proxy/2001/http://bomb.example/?archives=bomb"
        ))
        .send()
        .await
        .expect("bomb");
    let status = r.status().as_u16();
    let body = r.text().await.expect("body");
    // Freed stalled answers may still be going when the bomb arrives: then a 503, try again.
    let (status, body) = if status == 503 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let r = client()
            .get(format!(
                "{base}/memento/proxy/2001/http://bomb2.example/?archives=bomb"
            ))
            .send()
            .await
            .expect("bomb");
        (r.status().as_u16(), r.text().await.expect("body"))
    } else {
        (status, body)
    };
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("inflates past"), "{body}");
    let after = rss(pid);
    assert!(
        after < before.max(idle) + MAX_BUFFERED + MARGIN,
        "RSS {after} after the bomb (before {before})"
    );
}
