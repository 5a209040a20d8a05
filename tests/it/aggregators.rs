//! Aggregators as archives (`kind = "aggregator"`): a second tmproxy and a fake answering like
//! MemGator, beside direct archives holding some of the same mementos. Each memento is served
//! once and credited to the archive whose host it is on; the aggregator's TimeGate fallback
//! lists mementos on public hosts only; a loop of two tmproxies, and a tmproxy configured on its
//! own public URL, are refused.

use crate::support::{archive_config, client, config_for, get_json, serve_fake, start_proxy};
use crate::support::{start_proxy_on, Proxy};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tmproxy::config::{ArchiveConfig, ArchiveKind, Config};

const URI_R: &str = "http://example.com/";

fn link_timemap(mementos: &[(String, &str)]) -> String {
    let mut body = format!("<{URI_R}>; rel=\"original\"");
    for (uri_m, ts) in mementos {
        let dt = tmproxy_core::timemap::datetime::parse_14digit(ts).expect("timestamp");
        let dt = tmproxy_core::timemap::datetime::format_rfc1123(dt);
        body.push_str(&format!(",\n<{uri_m}>; rel=\"memento\"; datetime=\"{dt}\""));
    }
    body.push('\n');
    body
}

/// A fake archive: its TimeMap is `timemap(own address)` (None: a 500), its TimeGate a 302
/// with `gate_link` as its `Link` header; the `Via` headers it was sent are kept.
struct Fake {
    addr: SocketAddr,
    via: Arc<Mutex<Vec<String>>>,
}

async fn fake(
    timemap: impl Fn(SocketAddr) -> Option<String> + Send + Sync + 'static,
    gate_link: &str,
) -> Fake {
    let via: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = via.clone();
    let gate_link = gate_link.to_string();
    let addr_cell: Arc<std::sync::OnceLock<SocketAddr>> = Arc::default();
    let own = addr_cell.clone();
    let timemap = Arc::new(timemap);
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (seen, own, timemap, gate_link) = (
            seen.clone(),
            own.clone(),
            timemap.clone(),
            gate_link.clone(),
        );
        async move {
            use axum::response::IntoResponse;
            if let Some(v) = req.headers().get("via").and_then(|v| v.to_str().ok()) {
                seen.lock().expect("via").push(v.to_string());
            }
            let addr = *own.get().expect("address known");
            if req.uri().path().starts_with("/timegate/") {
                return (
                    axum::http::StatusCode::FOUND,
                    [
                        ("location", "https://web.archive.org/web/2011/x"),
                        ("link", gate_link.as_str()),
                    ],
                )
                    .into_response();
            }
            match timemap(addr) {
                Some(body) => ([("content-type", "application/link-format")], body).into_response(),
                None => axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            }
        }
    });
    let (addr, _) = serve_fake(app).await;
    addr_cell.set(addr).expect("set once");
    Fake { addr, via }
}

fn archive(id: &str, addr: SocketAddr, kind: ArchiveKind) -> ArchiveConfig {
    ArchiveConfig {
        kind,
        ..archive_config(
            id,
            &format!("http://{addr}/timemap/link/"),
            &format!("http://{addr}/timegate/"),
        )
    }
}

/// The Internet Archive, configured but not asked (no network here): its host still names it.
fn ia_disabled() -> ArchiveConfig {
    ArchiveConfig {
        enabled: false,
        ..archive_config(
            "ia",
            "https://web.archive.org/web/timemap/link/",
            "https://web.archive.org/web/",
        )
    }
}

fn config(archives: Vec<ArchiveConfig>) -> Config {
    let mut config = config_for(&[]);
    config.archives = archives;
    config
}

/// A second tmproxy as an aggregator upstream, beside one of the archives it asks: the shared
/// archive's mementos appear once, credited to it; the other archive's are credited to its host
/// and listed in `archives[]` `via` the aggregator; every archive request names us in `Via`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tmproxy_upstream_adds_what_it_has_and_nothing_twice() {
    let x = fake(
        |a| {
            Some(link_timemap(&[(
                format!("http://{a}/web/20100101000000/{URI_R}"),
                "20100101000000",
            )]))
        },
        "",
    )
    .await;
    let y = fake(
        |a| {
            Some(link_timemap(&[
                (
                    format!("http://{a}/web/20100101000000/{URI_R}"),
                    "20100101000000",
                ),
                (
                    format!("http://{a}/web/20120101000000/{URI_R}"),
                    "20120101000000",
                ),
            ]))
        },
        "",
    )
    .await;
    let upstream = start_proxy(config(vec![
        archive("x", x.addr, ArchiveKind::Timemap),
        archive("y", y.addr, ArchiveKind::Timemap),
    ]))
    .await;
    let up: SocketAddr = upstream
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let proxy = start_proxy(config(vec![
        archive("x", x.addr, ArchiveKind::Timemap),
        archive("up", up, ArchiveKind::Aggregator),
    ]))
    .await;

    let r = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    // x's memento once (the aggregator's copy is its dup), y's two through the aggregator.
    assert_eq!(r.headers()["x-memento-count"], "3");
    assert_eq!(
        r.headers()["x-memento-archives"],
        "x=ok;n=1;dup=0, up=ok;n=2;dup=1"
    );
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let credited: Vec<(String, String)> = json["mementos"]["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|m| {
            (
                m["archive"].as_str().unwrap_or("").to_string(),
                m["uri"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let y_host = y.addr.to_string();
    assert_eq!(
        credited.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>(),
        ["x", y_host.as_str(), y_host.as_str()],
        "{json}"
    );
    let via_rows: Vec<&serde_json::Value> = json["archives"]
        .as_array()
        .expect("archives")
        .iter()
        .filter(|a| a["via"] == "up")
        .collect();
    assert_eq!(via_rows.len(), 1, "{json}");
    assert_eq!(via_rows[0]["id"], y_host.as_str());
    assert_eq!(via_rows[0]["mementos"], 2);
    // Every request to an archive named its sender: the aggregator's own requests to x and y
    // name it, ours to x name us.
    let ours = proxy.base.trim_start_matches("http://");
    let theirs = upstream.base.trim_start_matches("http://");
    let seen = x.via.lock().expect("via").clone();
    assert!(
        seen.iter().any(|v| v == &format!("1.1 {ours} (tmproxy)")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|v| v == &format!("1.1 {theirs} (tmproxy)")),
        "{seen:?}"
    );
    proxy.stop().await;
    upstream.stop().await;
}

/// A fake answering like MemGator: two archives' captures at one second are two mementos,
/// credited to the Internet Archive (configured, on that host) and to Bibliotheca
/// Alexandrina's host; its TimeGate fallback lists public hosts' mementos, never loopback's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memgator_like_upstream_is_credited_per_host_and_its_fallback_lists_public_hosts() {
    let ia = "https://web.archive.org/web/19990125093238/http://www.antifa.com:80/";
    let bibalex = "http://web.archive.bibalex.org:80/web/19990125093238/http://www.antifa.com/";
    let mg = fake(
        move |_| {
            Some(link_timemap(&[
                (bibalex.to_string(), "19990125093238"),
                (ia.to_string(), "19990125093238"),
            ]))
        },
        "",
    )
    .await;
    let proxy = start_proxy(config(vec![
        ia_disabled(),
        archive("mg", mg.addr, ArchiveKind::Aggregator),
    ]))
    .await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let list = json["mementos"]["list"].as_array().expect("list");
    let got: Vec<(&str, &str)> = list
        .iter()
        .map(|m| {
            (
                m["archive"].as_str().unwrap_or(""),
                m["uri"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("web.archive.bibalex.org", bibalex), ("ia", ia)],
        "{json}"
    );
    proxy.stop().await;

    // The listing fails; its TimeGate's Link names mementos on a public host and on loopback.
    let gate_link = "<https://web.archive.org/web/2011/x>; rel=\"memento\"; datetime=\"Sat, 01 Jan 2011 00:00:00 GMT\", \
         <http://127.0.0.1:9/web/2012/x>; rel=\"memento\"; datetime=\"Sun, 01 Jan 2012 00:00:00 GMT\", \
         <http://localhost/web/2013/x>; rel=\"memento\"; datetime=\"Tue, 01 Jan 2013 00:00:00 GMT\"";
    let failing = fake(|_| None, gate_link).await;
    let proxy = start_proxy(config(vec![
        ia_disabled(),
        archive("mg", failing.addr, ArchiveKind::Aggregator),
    ]))
    .await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    let uris: Vec<&str> = json["mementos"]["list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|m| m["uri"].as_str())
        .collect();
    assert_eq!(uris, ["https://web.archive.org/web/2011/x"], "{json}");
    proxy.stop().await;
}

/// Two tmproxies each configured with the other as an aggregator: a request to either is
/// answered with its own archives, the other refusing with a 508 rather than asking back; and
/// that refusal does not make the peer dormant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_of_two_tmproxies_is_refused_with_508() {
    let x = fake(
        |a| {
            Some(link_timemap(&[(
                format!("http://{a}/web/20100101000000/{URI_R}"),
                "20100101000000",
            )]))
        },
        "",
    )
    .await;
    let la = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let lb = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let (a_addr, b_addr) = (la.local_addr().expect("a"), lb.local_addr().expect("b"));
    let start = |listener, peer| {
        let mut c = config(vec![
            archive("x", x.addr, ArchiveKind::Timemap),
            archive("peer", peer, ArchiveKind::Aggregator),
        ]);
        c.upstream.failures_before_dormant = 2;
        start_proxy_on(
            listener,
            c,
            tmproxy::app::ClockChoice::System,
            tmproxy::upstream::resolve::system_lookup(),
        )
    };
    let a: Proxy = start(la, b_addr).await;
    let b: Proxy = start(lb, a_addr).await;
    for i in 0..3 {
        let url = format!("{}/timemap/link/http://example.com/{i}", a.base);
        let r = client().get(&url).send().await.expect("GET");
        assert_eq!(r.status(), 200, "{url}");
        let archives = r.headers()["x-memento-archives"]
            .to_str()
            .expect("ascii")
            .to_string();
        assert!(archives.starts_with("x=ok;n=1"), "{archives}");
        assert!(archives.contains("peer=error"), "{archives}");
    }
    let (_, about) = get_json(&format!("{}/archives", a.base)).await;
    let peer = about
        .as_array()
        .and_then(|l| l.iter().find(|r| r["id"] == "peer"))
        .cloned()
        .unwrap_or_default();
    assert_ne!(
        peer["state"], "dormant",
        "a peer refusing a loop is not down: {peer}"
    );
    // Asked directly with our own Via, each refuses.
    let r = client()
        .get(format!("{}/timemap/link/{URI_R}", b.base))
        .header("via", format!("1.1 {a_addr} (tmproxy)"))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 508);
    assert!(r.text().await.expect("body").contains("loop detected"));
    a.stop().await;
    b.stop().await;
}

/// An archive on our own public URL is refused at start.
#[tokio::test]
async fn an_archive_on_our_own_public_url_is_refused_at_start() {
    let mut c = config(vec![archive(
        "me",
        "127.0.0.1:7089".parse().expect("addr"),
        ArchiveKind::Aggregator,
    )]);
    c.server.public_url = "http://127.0.0.1:7089".into();
    let dir = tempfile::tempdir().expect("temp dir");
    c.cache.path = dir.path().join("cache").display().to_string();
    let err = tmproxy::app::build(&c, None).await.err().expect("refused");
    assert!(err.contains("own public URL"), "{err}");
}
