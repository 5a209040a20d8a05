//! The routes' guards on the real app: CORS exactly as docs/api.md says, the header and admin body
//! limits, 405 with a reason, `[admin] listen` on its own listener, `[server] rate_limit` per
//! client, no admin token in the logs of the real binary even at trace level, and every admin
//! route refusing a request without the token.

use crate::support::{
    client, config_for, start_proxy, start_proxy_with_admin_listener, ServeProcess,
};
use std::collections::BTreeSet;
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const URI_R: &str = "http://example.com/";
const API_DOC: &str = include_str!("../../docs/api.md");

async fn archive() -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive")
}

/// docs/api.md's CORS list: the backquoted text after "exposing" in the **CORS.** paragraph.
fn documented_exposed_headers() -> BTreeSet<String> {
    let para = API_DOC
        .split("**CORS.**")
        .nth(1)
        .expect("docs/api.md has a **CORS.** paragraph");
    let after = para.split("exposing `").nth(1).expect("an exposing list");
    let list = after.split('`').next().expect("closing backquote");
    list.split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

fn one_line_reason(text: &str) -> bool {
    !text.trim().is_empty() && text.trim_end().lines().count() == 1
}

#[tokio::test]
async fn cors_is_exactly_as_the_api_doc_says_and_options_asks_no_archive() {
    let a = archive().await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    for path in [
        format!("/timegate/{URI_R}"),
        format!("/timemap/json/{URI_R}"),
        format!("/memento/2003/{URI_R}"),
        format!("/api/json/2003/{URI_R}"),
    ] {
        let resp = client()
            .request(reqwest::Method::OPTIONS, format!("{}{path}", proxy.base))
            .header("Origin", "https://client.test")
            .header("Access-Control-Request-Method", "GET")
            .header(
                "Access-Control-Request-Headers",
                "accept-datetime, prefer, if-none-match, cache-control",
            )
            .send()
            .await
            .expect("preflight");
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        let h = resp.headers();
        assert_eq!(h["access-control-allow-origin"], "*", "{path}");
        let methods = h["access-control-allow-methods"]
            .to_str()
            .expect("ascii")
            .to_ascii_uppercase();
        assert!(
            methods.contains("GET") && methods.contains("HEAD"),
            "{methods}"
        );
        let allowed = h["access-control-allow-headers"]
            .to_str()
            .expect("ascii")
            .to_ascii_lowercase();
        for want in [
            "accept-datetime",
            "prefer",
            "if-none-match",
            "cache-control",
        ] {
            assert!(allowed.contains(want), "{want} in {allowed}");
        }
    }
    assert_eq!(a.requests(), 0, "a preflight never reaches an archive");

    let want = documented_exposed_headers();
    assert!(
        want.contains("x-cache"),
        "docs/api.md lists X-Cache: {want:?}"
    );
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .header("Origin", "https://client.test")
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
    let exposed: BTreeSet<String> = resp.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ascii")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    assert_eq!(exposed, want, "code and docs/api.md agree");
    // The same for every origin: only the content's own Vary, none for the CORS request
    // headers (which would split a shared cache's copies per origin for nothing).
    let vary: Vec<&str> = resp
        .headers()
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(vary, ["accept-encoding"], "{vary:?}");
}

#[tokio::test]
async fn headers_over_max_header_bytes_are_431_with_a_reason() {
    let a = archive().await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .header("X-Padding", "p".repeat(20 * 1024))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 431);
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
    let text = resp.text().await.expect("body");
    assert!(one_line_reason(&text), "{text:?}");
    assert!(text.contains("16384-byte limit"), "{text}");
    // Just under the limit is served.
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .header("X-Padding", "p".repeat(15 * 1024))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(a.requests(), 1, "the refused request asked no archive");
}

#[tokio::test]
async fn more_headers_than_hyper_parses_is_a_bare_431_from_hyper() {
    let proxy = start_proxy(tmproxy::config::Config {
        archives: vec![],
        ..Default::default()
    })
    .await;
    let addr = proxy.base.trim_start_matches("http://").to_string();
    let mut head = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..150 {
        head.push_str(&format!("X-H{i}: v\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut s = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    s.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut answer))
        .await
        .expect("hyper answers")
        .expect("read");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
}

#[tokio::test]
async fn admin_bodies_over_64_kib_are_413_with_a_reason() {
    let mut config = config_for(&[]);
    config.admin.token = "body-token".into();
    let proxy = start_proxy(config).await;
    let url = format!("{}/admin/sampling/jobs", proxy.base);
    let big = format!(r#"{{"input": "{}"}}"#, "x".repeat(70 * 1024));
    let resp = client()
        .post(&url)
        .bearer_auth("body-token")
        .body(big)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 413);
    let text = resp.text().await.expect("body");
    assert!(one_line_reason(&text), "{text:?}");
    assert!(text.contains("65536-byte limit"), "{text}");
    // Under the limit it is read: a bad spec is a 400 naming its field.
    let resp = client()
        .post(&url)
        .bearer_auth("body-token")
        .body(r#"{"input": "x", "cdx_api": "https://web.archive.org/cdx/search/cdx", "colour": 1}"#)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 400);
    assert!(resp.text().await.expect("body").contains("colour"));
}

#[tokio::test]
async fn a_method_a_route_does_not_answer_is_405_with_a_reason() {
    let a = archive().await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    for (method, path) in [
        (reqwest::Method::POST, format!("/timemap/link/{URI_R}")),
        (reqwest::Method::DELETE, format!("/timegate/{URI_R}")),
        (reqwest::Method::PUT, "/healthz".to_string()),
        (reqwest::Method::PATCH, "/admin/stats".to_string()),
    ] {
        let resp = client()
            .request(method.clone(), format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status().as_u16(), 405, "{method} {path}");
        let text = resp.text().await.expect("body");
        assert!(one_line_reason(&text), "{method} {path}: {text:?}");
    }
    assert_eq!(a.requests(), 0);
}

#[tokio::test]
async fn admin_listen_moves_the_admin_api_and_metrics_off_the_public_listener() {
    let a = archive().await;
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = "split-token".into();
    let proxy = start_proxy_with_admin_listener(config).await;
    let public = proxy.base.clone();
    let admin = proxy.admin_base.clone().expect("admin listener");
    let get = |url: String| async move {
        let r = client()
            .get(url)
            .bearer_auth("split-token")
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.text().await.expect("body"))
    };
    // The public listener: Memento routes and /healthz; no admin, no metrics.
    assert_eq!(get(format!("{public}/timemap/link/{URI_R}")).await.0, 200);
    assert_eq!(get(format!("{public}/healthz")).await.0, 200);
    for path in [
        "/admin/stats",
        "/admin/cache/http://example.com/",
        "/admin/sampling/jobs",
        "/metrics",
    ] {
        let (status, text) = get(format!("{public}{path}")).await;
        assert_eq!(status, 404, "{path} on the public listener");
        assert!(text.contains("no such endpoint"), "{path}: {text}");
    }
    // The admin listener: admin, metrics and /healthz; no Memento routes.
    let (status, text) = get(format!("{admin}/admin/stats")).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"misses\":1"), "{text}");
    assert_eq!(
        get(format!("{admin}/admin/cache/{URI_R}")).await.0,
        200,
        "the entry the public listener cached"
    );
    assert_eq!(get(format!("{admin}/metrics")).await.0, 200);
    assert_eq!(get(format!("{admin}/healthz")).await.0, 200);
    assert_eq!(get(format!("{admin}/timemap/link/{URI_R}")).await.0, 404);
    // The token is still needed there.
    let r = client()
        .get(format!("{admin}/admin/stats"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 401);
    // One shutdown stops both.
    proxy.stop().await;
    for base in [&public, &admin] {
        let addr = base.trim_start_matches("http://");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "{base} closed"
        );
    }
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after_per_client() {
    let a = archive().await;
    let mut config = config_for(&[("a", &a)]);
    // One token per 100 s, two at once: the third request in a row is refused however slow
    // the machine is.
    config.server.rate_limit = 0.01;
    config.server.rate_burst = 2;
    config.admin.token = "rate-token".into();
    let proxy = start_proxy(config).await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    for _ in 0..2 {
        let r = client().get(&url).send().await.expect("request");
        assert_eq!(r.status().as_u16(), 200);
    }
    let r = client().get(&url).send().await.expect("request");
    assert_eq!(r.status().as_u16(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("Retry-After in seconds");
    assert!((1..=100).contains(&retry), "{retry}");
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    let text = r.text().await.expect("body");
    assert!(one_line_reason(&text), "{text:?}");
    assert!(text.contains("retry after"), "{text}");
    // Other routes of the same client are not limited.
    let r = client()
        .get(format!("{}/healthz", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let r = client()
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://client.test")
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await
        .expect("request");
    assert!(r.status().is_success());
    let r = client()
        .get(format!("{}/admin/stats", proxy.base))
        .bearer_auth("rate-token")
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    // Another client address has its own bucket (Linux answers on all of 127/8).
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    // Linux routes all of 127/8 to lo, so this can always be sent: a failure is a failure.
    let r = other
        .get(&url)
        .send()
        .await
        .expect("a request from 127.0.0.2");
    assert_eq!(r.status().as_u16(), 200, "127.0.0.2 is not limited");
}

#[tokio::test]
async fn the_admin_token_never_reaches_the_logs_even_at_trace() {
    const RIGHT: &str = "tok-RIGHT-9f3c1a7e55d2";
    const WRONG: &str = "tok-WRONG-4b8e2d0c91aa";
    let a = archive().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[cache]\npath = {:?}\n\n[[archives]]\nid = \"a\"\ntimemap = \"{}\"\ntimegate = \"{}\"\n",
            dir.path().join("cache").display().to_string(),
            a.timemap_prefix(),
            a.timegate_prefix()
        ),
    )
    .expect("write config");
    let mut server = ServeProcess::start_with(
        &cfg,
        &[],
        &[
            ("TMPROXY_ADMIN_TOKEN", RIGHT),
            // The binary's own wiring of [admin] listen, proven on the way.
            ("TMPROXY_ADMIN_LISTEN", "127.0.0.1:0"),
            ("RUST_LOG", "trace"),
        ],
    );
    let public = server.base.clone();
    let base = format!(
        "http://{}",
        server
            .logged("admin_listen=")
            .expect("serve said where the admin API listens")
    );
    let r = client()
        .get(format!("{public}/admin/stats"))
        .bearer_auth(RIGHT)
        .send()
        .await
        .expect("request");
    assert_eq!(
        r.status().as_u16(),
        404,
        "no admin API on the public listener"
    );
    let r = client()
        .get(format!("{public}/timemap/link/{URI_R}"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let mut statuses = Vec::new();
    for token in [RIGHT, WRONG] {
        for (method, path) in [
            (reqwest::Method::GET, "/admin/stats".to_string()),
            (reqwest::Method::POST, format!("/admin/cache/{URI_R}")),
            (reqwest::Method::GET, format!("/admin/cache/{URI_R}")),
            (reqwest::Method::POST, "/admin/sampling/jobs".to_string()),
        ] {
            let r = client()
                .request(method, format!("{base}{path}"))
                .bearer_auth(token)
                .body(format!(r#"{{"input": "{token}"}}"#))
                .send()
                .await
                .expect("request");
            statuses.push(r.status().as_u16());
        }
    }
    assert_eq!(statuses, [200, 200, 200, 400, 401, 401, 401, 401]);
    server.term();
    let exit = server.exit_within(Duration::from_secs(60)).await;
    assert!(exit.success(), "both listeners stop gracefully: {exit:?}");
    let logs = server.log();
    let out = server.stdout();
    assert!(
        logs.contains("TRACE") && logs.lines().count() > 20,
        "trace logging was on: {logs}"
    );
    for secret in [RIGHT, WRONG] {
        assert!(!logs.contains(secret), "{secret} in stderr");
        assert!(!out.contains(secret), "{secret} in stdout");
    }
}

/// Found by the property tests: `/admin/sampling/jobs/%80` was axum's own 400 ("Invalid URL:
/// Invalid UTF-8 in `id`"), not a reason from error.rs.
#[tokio::test]
async fn a_job_id_that_is_not_utf8_is_our_400() {
    let mut config = config_for(&[]);
    config.admin.token = "id-token".into();
    let proxy = start_proxy(config).await;
    for path in [
        "/admin/sampling/jobs/%80",
        "/admin/sampling/jobs/%FF/sample",
        "/admin/sampling/jobs/%C0%AF/feed",
    ] {
        let method = if path.ends_with("feed") {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        };
        let resp = client()
            .request(method, format!("{}{path}", proxy.base))
            .bearer_auth("id-token")
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status().as_u16(), 400, "{path}");
        assert_eq!(
            resp.headers()["content-type"],
            "text/plain; charset=utf-8",
            "{path}"
        );
        let text = resp.text().await.expect("body");
        assert!(text.starts_with("400 job id:"), "{path}: {text}");
        assert!(one_line_reason(&text), "{path}: {text:?}");
    }
}

/// Found by the property tests: a client's short `?timeout` cut archives off, and each cut
/// counted as the archive's failure, so five impatient requests made every archive dormant for
/// everyone (502 for the next five minutes). The archive here answers within the server's
/// deadline, after the client's.
#[tokio::test]
async fn a_client_short_timeout_does_not_make_archives_dormant() {
    let a = archive().await;
    let slow = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec {
        delay: Duration::from_secs(3),
        ..TimeMapSpec::of(&["20010101000000"])
    }))
    .await
    .expect("archive");
    let mut config = config_for(&[("a", &a), ("slow", &slow)]);
    config.upstream.failures_before_dormant = 2;
    let proxy = start_proxy(config).await;
    for i in 0..4 {
        let (status, json) = crate::support::get_json(&format!(
            "{}/timemap/json/http://example.com/{i}?timeout=2s",
            proxy.base
        ))
        .await;
        assert_eq!(status, 200, "{json}");
        let slow = crate::support::outcome(&json, "slow");
        assert_eq!(slow["status"], "timeout", "request {i}: {slow}");
        assert!(!slow.to_string().contains("dormant"), "request {i}: {slow}");
    }
}

/// Found by the property tests: `?timeout=0s` or `Prefer: wait=0` left no time at all and was
/// answered 504 without asking anyone; it is the client's mistake, a 400 with a reason.
#[tokio::test]
async fn a_zero_timeout_is_a_400() {
    let a = archive().await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    for (query, prefer) in [("?timeout=0s", None), ("", Some("wait=0"))] {
        let mut req = client().get(format!("{}/timemap/link/{URI_R}{query}", proxy.base));
        if let Some(p) = prefer {
            req = req.header("Prefer", p);
        }
        let resp = req.send().await.expect("request");
        assert_eq!(resp.status().as_u16(), 400, "{query} {prefer:?}");
        let text = resp.text().await.expect("body");
        assert!(
            one_line_reason(&text) && text.contains("timeout of 0"),
            "{text}"
        );
    }
    assert_eq!(a.requests(), 0);
}

/// A client that opens a connection and never finishes its request head (or sends nothing) is
/// cut off after `[server] header_read_timeout`, instead of holding the connection for ever
/// (axum::serve ran hyper without a timer, which disables that timeout). The 20 s bound is
/// only "no hang"; the configured timeout is half a second.
#[tokio::test]
async fn a_client_that_never_finishes_its_request_head_is_cut_off() {
    let config = tmproxy::config::Config {
        archives: vec![],
        ..Default::default()
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config;
    config.cache.path = dir.path().join("cache").display().to_string();
    config.server.header_read_timeout = Duration::from_millis(500);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_state, router) = tmproxy::app::build(&config, Some(format!("http://{addr}")))
        .await
        .expect("app builds");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(tmproxy::app::serve_with(
        listener,
        router,
        async move {
            let _ = stopped.await;
        },
        tmproxy::app::ServeOptions::from_config(&config, &_state),
    ));
    for sent in [&b""[..], b"GET /healthz HTTP/1.1\r\nHost: x\r\n"] {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(sent).await.expect("write");
        let mut answer = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut answer)).await;
        assert!(
            closed.is_ok(),
            "the server still holds a connection that sent {:?}",
            String::from_utf8_lossy(sent)
        );
    }
    // A complete request on a connection still works.
    let r = client()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    let _ = stop.send(());
    task.await.expect("join").expect("serve ends cleanly");
}

/// Every admin route, as `admin::routes` (with `--sim-clock`) and `sampling::routes` list them:
/// the method, the path, and a body that would pass with the token.
fn admin_routes() -> Vec<(reqwest::Method, String, &'static str)> {
    use reqwest::Method;
    let cache = format!("/admin/cache/{URI_R}");
    let clock = r#"{"now": "2012-05-01T00:00:00Z"}"#;
    let spec = r#"{"input": "x", "cdx_api": "https://web.archive.org/cdx/search/cdx"}"#;
    vec![
        (Method::GET, cache.clone(), ""),
        (Method::HEAD, cache.clone(), ""),
        (Method::POST, cache.clone(), ""),
        (Method::DELETE, cache, ""),
        (Method::GET, "/admin/stats".into(), ""),
        (Method::HEAD, "/admin/stats".into(), ""),
        (Method::GET, "/admin/clock".into(), ""),
        (Method::PUT, "/admin/clock".into(), clock),
        (Method::GET, "/admin/sampling/jobs".into(), ""),
        (Method::POST, "/admin/sampling/jobs".into(), spec),
        (Method::GET, "/admin/sampling/jobs/x".into(), ""),
        (Method::DELETE, "/admin/sampling/jobs/x".into(), ""),
        (Method::GET, "/admin/sampling/jobs/x/sample".into(), ""),
        (Method::GET, "/admin/sampling/jobs/x/funnel".into(), ""),
        (Method::POST, "/admin/sampling/jobs/x/feed".into(), "{}"),
        (
            Method::GET,
            "/admin/sampling/jobs/x/files/report.md".into(),
            "",
        ),
        (
            Method::GET,
            "/admin/sampling/jobs/x/timemaps/index.ndjson".into(),
            "",
        ),
    ]
}

/// (status, WWW-Authenticate, body) of one request, with `authorization` as given.
async fn ask(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: &'static str,
    authorization: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut req = client().request(method, format!("{base}{path}")).body(body);
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, challenge, r.text().await.expect("body"))
}

/// The admin routes are authorised by one route layer: this walks every one of them, on the
/// public listener (with `--sim-clock`, so the clock routes exist) and on `[admin] listen`, and
/// checks each refuses a request without the token or with a wrong one before doing anything,
/// that each is there with the token (so the list cannot go stale), and that a server without a
/// token refuses them all with 403. Paths and methods no route has stay 404 and 405 for anyone.
#[tokio::test]
async fn every_admin_route_refuses_a_missing_or_wrong_token() {
    const TOKEN: &str = "walk-token";
    let a = archive().await;
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = TOKEN.into();
    let simulated =
        tmproxy::app::ClockChoice::Simulated(std::sync::Arc::new(tmproxy::clock::SimClock::new(
            chrono::DateTime::from_timestamp(1_335_830_400, 0).expect("valid"),
        )));
    let public = crate::support::start_proxy_with(config.clone(), simulated).await;
    let split = start_proxy_with_admin_listener(config.clone()).await;
    let split_admin = split.admin_base.clone().expect("admin listener");
    let wrong = [
        None,
        Some("Bearer walk-tokeN".to_string()),
        Some("Bearer walk-toke".to_string()),
        Some("Bearer walk-token-and-more".to_string()),
        Some(format!("Basic {TOKEN}")),
        Some(TOKEN.to_string()),
        Some("Bearer ".to_string()),
    ];
    for base in [&public.base, &split_admin] {
        for (method, path, body) in admin_routes() {
            if base == &split_admin && path == "/admin/clock" {
                continue; // no --sim-clock there: checked below
            }
            for auth in &wrong {
                let (status, challenge, text) =
                    ask(base, method.clone(), &path, body, auth.as_deref()).await;
                assert_eq!(status, 401, "{method} {path} with {auth:?}: {text}");
                assert_eq!(challenge.as_deref(), Some("Bearer"), "{method} {path}");
                if method != reqwest::Method::HEAD {
                    assert!(text.starts_with("401 admin API"), "{method} {path}: {text}");
                    assert!(one_line_reason(&text), "{method} {path}: {text:?}");
                }
            }
            let right = format!("Bearer {TOKEN}");
            let (status, _, text) = ask(base, method.clone(), &path, body, Some(&right)).await;
            assert!(
                ![401, 403, 405].contains(&status) && !text.contains("no such endpoint"),
                "{method} {path} with the token: {status} {text}"
            );
        }
    }
    // Nothing was done for a refused request: the archive was asked only by the refreshes
    // (POST /admin/cache/…) made with the token, once per listener.
    assert_eq!(a.requests(), 2);

    // Without --sim-clock the clock routes do not exist, token or not; other methods are 405.
    for auth in [None, Some("Bearer wrong"), Some("Bearer walk-token")] {
        for (method, want) in [
            (reqwest::Method::GET, 404),
            (reqwest::Method::PUT, 404),
            (reqwest::Method::POST, 405),
        ] {
            let (status, _, text) =
                ask(&split_admin, method.clone(), "/admin/clock", "", auth).await;
            assert_eq!(status, want, "{method} /admin/clock with {auth:?}: {text}");
        }
    }
    // Without the token, a path no route has is still 404, a method a route lacks still 405,
    // and /metrics is open.
    for base in [&public.base, &split_admin] {
        for (method, path, want) in [
            (reqwest::Method::GET, "/admin/nowhere", 404),
            (reqwest::Method::GET, "/admin/sampling/jobs/x/nowhere", 404),
            (reqwest::Method::GET, "/admin/cache", 404),
            (reqwest::Method::PATCH, "/admin/stats", 405),
            (reqwest::Method::POST, "/admin/stats", 405),
            (
                reqwest::Method::PUT,
                "/admin/cache/http://example.com/",
                405,
            ),
            (reqwest::Method::DELETE, "/admin/sampling/jobs", 405),
            (reqwest::Method::POST, "/admin/sampling/jobs/x/sample", 405),
            (reqwest::Method::GET, "/admin/sampling/jobs/x/feed", 405),
            (reqwest::Method::GET, "/metrics", 200),
        ] {
            let (status, _, text) = ask(base, method.clone(), path, "", None).await;
            assert_eq!(status, want, "{method} {path} without the token: {text}");
        }
        // The token is checked before the job id is read.
        let (status, _, _) = ask(
            base,
            reqwest::Method::GET,
            "/admin/sampling/jobs/%80",
            "",
            None,
        )
        .await;
        assert_eq!(status, 401, "a job id that is not UTF-8, without the token");
    }

    // No token configured: every admin route is 403, whatever the request carries.
    let open_proxy = start_proxy(config_for(&[("a", &a)])).await;
    for (method, path, body) in admin_routes() {
        if path == "/admin/clock" {
            continue;
        }
        for auth in [None, Some("Bearer walk-token"), Some("Bearer ")] {
            let (status, challenge, text) =
                ask(&open_proxy.base, method.clone(), &path, body, auth).await;
            assert_eq!(status, 403, "{method} {path} with {auth:?}: {text}");
            assert_eq!(challenge, None, "{method} {path}");
        }
    }
}
