//! The public listener takes `GET` and `HEAD` on `/timemap/…` past the router, through the
//! TimeMap route's own layers (`http::Front`): every answer must be the one the router gives.
//! One state, two listeners: the server as it runs, and the router alone.

use crate::support::{client, config_for, start_proxy, Proxy};
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

/// The router alone on its own listener, over `proxy`'s state; stopped when dropped.
async fn router_beside(proxy: &Proxy) -> (String, tokio::task::JoinHandle<()>) {
    let state = proxy.state.clone().expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let router = tmproxy::http::router(state);
    let task = tokio::spawn(async move {
        let _ = tmproxy::app::serve(listener, router, std::future::pending()).await;
    });
    (base, task)
}

/// One request, as a method, a path and headers.
struct Ask {
    method: reqwest::Method,
    path: String,
    headers: Vec<(&'static str, String)>,
}

fn ask(method: &str, path: &str, headers: &[(&'static str, &str)]) -> Ask {
    Ask {
        method: method.parse().expect("method"),
        path: path.to_owned(),
        headers: headers.iter().map(|(n, v)| (*n, v.to_string())).collect(),
    }
}

/// Status, headers (less those that differ between any two answers: the request's id, the
/// date, the age; `max-age`'s seconds are kept apart, see [`Answer`]) and body of `ask` at
/// `base`.
async fn answer(base: &str, ask: &Ask) -> Answer {
    let mut req = client().request(ask.method.clone(), format!("{base}{}", ask.path));
    for (name, value) in &ask.headers {
        req = req.header(*name, value);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let mut max_age = None;
    let mut headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter(|(n, _)| !matches!(n.as_str(), "x-request-id" | "date" | "age"))
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            match value.strip_prefix("max-age=") {
                Some(seconds) if n == "cache-control" => {
                    max_age = Some(seconds.parse::<i64>().expect("max-age seconds"));
                    (n.to_string(), "max-age=…".to_owned())
                }
                _ => (n.to_string(), value),
            }
        })
        .collect();
    headers.sort();
    let body = resp.bytes().await.expect("body").to_vec();
    (status, headers, body, max_age)
}

/// Status, headers, body, and `Cache-Control: max-age`'s seconds. Those count down with the
/// wall clock, so two answers a moment apart may be a second or two apart there.
type Answer = (u16, Vec<(String, String)>, Vec<u8>, Option<i64>);

/// Asks each of `asks` of the router, then of the server, and compares; once more of the
/// server before, so that what it stores (a URI-R never asked yet) is stored for both.
async fn same_answers(server: &str, router: &str, asks: &[Ask]) {
    for ask in asks {
        let _ = answer(server, ask).await;
        let expected = answer(router, ask).await;
        let got = answer(server, ask).await;
        let what = format!("{} {} {:?}", ask.method, ask.path, ask.headers);
        assert_eq!(got.0, expected.0, "status of {what}");
        assert_eq!(got.1, expected.1, "headers of {what}");
        assert_eq!(got.2, expected.2, "body of {what}");
        match (got.3, expected.3) {
            (Some(got), Some(expected)) => assert!(
                (expected - 2..=expected).contains(&got),
                "max-age of {what}: {got} after the router's {expected}"
            ),
            (got, expected) => assert_eq!(got, expected, "max-age of {what}"),
        }
    }
}

#[tokio::test]
async fn timemap_answers_past_the_router_are_the_routers() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
        "20090101000000",
    ])))
    .await
    .expect("archive");
    let mut config = config_for(&[("a", &archive)]);
    config.server.page_size = 2;
    let proxy = start_proxy(config).await;
    let (router, task) = router_beside(&proxy).await;
    let base = proxy.base.clone();
    // Stored first, so that both are asked a hit.
    let _ = answer(&base, &ask("GET", &format!("/timemap/link/{URI_R}"), &[])).await;
    let etag = client()
        .get(format!("{base}/timemap/link/{URI_R}"))
        .send()
        .await
        .expect("GET")
        .headers()["etag"]
        .to_str()
        .expect("etag")
        .to_owned();
    let loop_via = format!("1.1 {} (tmproxy)", base.trim_start_matches("http://"));
    let big = "x".repeat(Config::default().server.max_header_bytes as usize + 1);
    let mut asks = Vec::new();
    for format in ["link/", "json/", "cdxj/", ""] {
        asks.push(ask("GET", &format!("/timemap/{format}{URI_R}"), &[]));
        asks.push(ask("HEAD", &format!("/timemap/{format}{URI_R}"), &[]));
    }
    for coding in ["gzip", "br", "zstd", "gzip, deflate, br, zstd", "identity"] {
        let path = format!("/timemap/link/{URI_R}");
        asks.push(ask("GET", &path, &[("accept-encoding", coding)]));
    }
    let link = format!("/timemap/link/{URI_R}");
    let json = format!("/timemap/json/{URI_R}");
    asks.extend([
        ask("GET", &format!("/timemap/link/1/{URI_R}"), &[]),
        ask("GET", &format!("/timemap/json/2/{URI_R}"), &[]),
        ask("GET", &format!("/timemap/link/9/{URI_R}"), &[]),
        ask("GET", &format!("/timemap/link/0/{URI_R}"), &[]),
        ask("GET", &format!("/timemap/xml/{URI_R}"), &[]),
        ask("GET", "/timemap/link/javascript:alert(1)", &[]),
        ask("GET", "/timemap/", &[]),
        ask("GET", "/timemap/link/", &[]),
        ask("GET", "/timemap//http://example.com/", &[]),
        ask("GET", "/timemap/link/%2e%2e/admin", &[]),
        ask("GET", "/timemap/json/javascript:alert(1)", &[]),
        ask("GET", &link, &[("if-none-match", &etag)]),
        ask("HEAD", &link, &[("if-none-match", &etag)]),
        ask("GET", &link, &[("origin", "https://example.org")]),
        ask("GET", &link, &[("prefer", "archives=\"a\"")]),
        ask("GET", &format!("{link}?archives=a"), &[]),
        ask("GET", &link, &[("cache-control", "max-stale=60")]),
        ask(
            "GET",
            "/timemap/link/http://not-cached.example/",
            &[("cache-control", "only-if-cached")],
        ),
        ask(
            "GET",
            "/timemap/json/http://not-cached.example/",
            &[("cache-control", "only-if-cached")],
        ),
        ask("GET", &link, &[("via", &loop_via)]),
        ask("GET", &json, &[("via", &loop_via)]),
        ask("GET", &link, &[("x-big", &big)]),
        ask("GET", &link, &[("x-request-id", "a-balancers-id")]),
        ask("POST", &link, &[]),
        ask(
            "OPTIONS",
            &link,
            &[("access-control-request-method", "GET")],
        ),
    ]);
    same_answers(&base, &router, &asks).await;
    task.abort();
    proxy.stop().await;
}

#[tokio::test]
async fn the_rate_limit_refuses_past_the_router_as_through_it() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &archive)]);
    // One request, then none for 100 s: the second of each pair is refused.
    config.server.rate_limit = 0.01;
    config.server.rate_burst = 1;
    let proxy = start_proxy(config).await;
    let (router, task) = router_beside(&proxy).await;
    let asked = ask("GET", &format!("/timemap/link/{URI_R}"), &[]);
    assert_eq!(answer(&proxy.base, &asked).await.0, 200);
    // The bucket is the client's, whichever listener it asks: both refuse now.
    let by_router = answer(&router, &asked).await;
    let refused = answer(&proxy.base, &asked).await;
    assert_eq!(refused.0, 429);
    assert_eq!(refused, by_router);
    task.abort();
    proxy.stop().await;
}
