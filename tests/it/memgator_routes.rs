//! MemGator's routes on the real app: `/memento/{link,json,cdxj}/…`
//! describe the closest memento, `/memento/proxy/…` serves its bytes only from an archive's own
//! hosts, `/api/…` are aliases, `[server] compat` picks `/api/json`'s shape, and every error of
//! a JSON route is JSON while link and CDXJ routes keep text. Against fake archives that answer
//! per URI-R, and against pywb.

use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, config_for, serve_fake, start_proxy, Proxy};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tmproxy::config::{Compat, Config};
use tmproxy::timemap::datetime::{format_rfc1123, parse_14digit};

const STAMPS: [&str; 3] = ["20010101000000", "20050101000000", "20090101000000"];
/// What `/memento/proxy` may pass on in these tests.
const CAP: u64 = 2048;

/// A server that counts what it is asked: it must never be asked by the proxy.
async fn bystander() -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let app = axum::Router::new().fallback(move || {
        let seen = seen.clone();
        async move {
            seen.fetch_add(1, Ordering::SeqCst);
            "<html>bystander</html>"
        }
    });
    let (addr, task) = serve_fake(app).await;
    (addr, hits, task)
}

/// The URI-R's word (`http://{word}.test/`) decides what the fake archive does, for its TimeMap
/// (`notfound`, `fail`, `slow`) and for the memento it lists (`page`, `script`, `big`,
/// `bigchunked`, `away`, `hop`, `gone`, `broken`, `elsewhere`).
fn word(uri_r: &str) -> &str {
    uri_r
        .split("//")
        .nth(1)
        .and_then(|h| h.split(".test").next())
        .unwrap_or("")
}

async fn fake_archive(me: Arc<OnceLock<SocketAddr>>, other: SocketAddr, req: Request) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let me = *me.get().expect("address set");
    if let Some(uri_r) = path.strip_prefix("/timemap/link/") {
        let host = match word(uri_r) {
            "notfound" => return (StatusCode::NOT_FOUND, "<html>no</html>").into_response(),
            "fail" => return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
            "slow" => {
                tokio::time::sleep(Duration::from_secs(20)).await;
                return "".into_response();
            }
            "elsewhere" => other,
            _ => me,
        };
        let mut body = format!("<{uri_r}>; rel=\"original\"");
        for ts in STAMPS {
            body.push_str(&format!(
                ",\n<http://{host}/m/{ts}/{uri_r}>; rel=\"memento\"; datetime=\"{}\"",
                format_rfc1123(parse_14digit(ts).expect("ts"))
            ));
        }
        return ([(header::CONTENT_TYPE, "application/link-format")], body).into_response();
    }
    let Some(rest) = path.strip_prefix("/m/") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (ts, uri_r) = rest.split_once('/').unwrap_or((rest, ""));
    match word(uri_r) {
        "script" => (
            [(header::CONTENT_TYPE, "application/javascript")],
            "alert(document.domain)",
        )
            .into_response(),
        "big" => ([(header::CONTENT_TYPE, "text/html")], "x".repeat(4096)).into_response(),
        "bigchunked" => {
            let chunks = (0..8).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 1024]));
            let body = Body::from_stream(futures::stream::iter(chunks));
            ([(header::CONTENT_TYPE, "text/html")], body).into_response()
        }
        "away" => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("http://{other}/m/{ts}/{uri_r}"))],
        )
            .into_response(),
        "hop" => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("/m/{ts}/http://page.test/"))],
        )
            .into_response(),
        "gone" => (StatusCode::NOT_FOUND, "gone from the archive").into_response(),
        "broken" => (StatusCode::SERVICE_UNAVAILABLE, "down").into_response(),
        _ => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::SET_COOKIE, "session=archive"),
            ],
            format!("<html>memento of {uri_r} at {ts}</html>"),
        )
            .into_response(),
    }
}

/// The proxy in front of one fake archive, and the bystander the archive points away to.
struct Rig {
    proxy: Proxy,
    bystander_hits: Arc<AtomicUsize>,
    archive: SocketAddr,
    _tasks: Vec<tokio::task::JoinHandle<()>>,
}

async fn rig(tune: impl FnOnce(&mut Config)) -> Rig {
    let (other, bystander_hits, other_task) = bystander().await;
    let me: Arc<OnceLock<SocketAddr>> = Arc::default();
    let cell = me.clone();
    let app =
        axum::Router::new().fallback(move |req: Request| fake_archive(cell.clone(), other, req));
    let (addr, task) = serve_fake(app).await;
    me.set(addr).expect("set once");
    let mut config = config_for(&[]);
    config.archives.push(archive_config(
        "fake",
        &format!("http://{addr}/timemap/link/"),
        &format!("http://{addr}/timegate/"),
    ));
    // Failures on purpose here must not put the only archive to sleep.
    config.upstream.failures_before_dormant = 0;
    config.server.memento_proxy_max_bytes = CAP;
    tune(&mut config);
    Rig {
        proxy: start_proxy(config).await,
        bystander_hits,
        archive: addr,
        _tasks: vec![other_task, task],
    }
}

async fn get(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = client().get(url).send().await.expect("GET");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.expect("body"))
}

fn content_type(h: &reqwest::header::HeaderMap) -> &str {
    h.get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn memento_formats_describe_the_closest_and_the_redirect_stays() {
    let rig = rig(|_| {}).await;
    let base = &rig.proxy.base;
    let uri_m = |ts: &str| format!("http://{}/m/{ts}/http://page.test/", rig.archive);

    let (status, h, body) = get(&format!("{base}/memento/json/2004/http://page.test/")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type(&h), "application/json");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["original_uri"], "http://page.test/");
    assert_eq!(v["mementos"]["closest"]["uri"], uri_m(STAMPS[1]));
    assert_eq!(v["mementos"]["closest"]["datetime"], "2005-01-01T00:00:00Z");
    assert_eq!(v["mementos"]["prev"]["uri"], uri_m(STAMPS[0]));
    assert_eq!(v["mementos"]["next"]["uri"], uri_m(STAMPS[2]));
    assert_eq!(v["mementos"]["first"]["uri"], uri_m(STAMPS[0]));
    assert_eq!(v["mementos"]["last"]["uri"], uri_m(STAMPS[2]));
    assert_eq!(
        v["timegate_uri"],
        format!("{base}/timegate/http://page.test/")
    );

    let (status, h, body) = get(&format!("{base}/memento/link/2004/http://page.test/")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type(&h), "application/link-format");
    assert!(
        body.starts_with("<http://page.test/>; rel=\"original\""),
        "{body}"
    );
    assert!(
        body.contains(&format!("<{}>; rel=\"memento\"", uri_m(STAMPS[1]))),
        "{body}"
    );
    assert!(body.contains("rel=\"first prev memento\""), "{body}");
    assert!(body.contains("rel=\"last next memento\""), "{body}");

    let (status, h, body) = get(&format!("{base}/memento/cdxj/2004/http://page.test/")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type(&h), "application/cdxj+ors");
    let closest = body
        .lines()
        .find(|l| l.starts_with("20050101000000 "))
        .expect("the closest's line");
    let v: serde_json::Value =
        serde_json::from_str(closest.split_once(' ').expect("key").1).expect("json");
    assert_eq!(v["rel"], "closest memento");

    // The aliases answer the same bytes.
    for f in ["link", "cdxj"] {
        let (_, _, memento) = get(&format!("{base}/memento/{f}/2004/http://page.test/")).await;
        let (status, _, api) = get(&format!("{base}/api/{f}/2004/http://page.test/")).await;
        assert_eq!(status, 200, "{api}");
        assert_eq!(api, memento, "/api/{f}");
    }
    // A datetime first is still the redirect.
    let (status, h, _) = get(&format!("{base}/memento/2004/http://page.test/")).await;
    assert_eq!(status, 302);
    assert_eq!(h["location"], uri_m(STAMPS[1]).as_str());
    // An unknown word is neither a format nor a datetime.
    let (status, _, body) = get(&format!("{base}/memento/xml/2004/http://page.test/")).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("nor one of link, json, cdxj, proxy"),
        "{body}"
    );
    let (status, _, _) = get(&format!("{base}/api/xml/2004/http://page.test/")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn compat_picks_the_shape_of_api_json() {
    let tt = rig(|_| {}).await;
    let (status, _, body) = get(&format!(
        "{}/api/json/2004/http://page.test/",
        tt.proxy.base
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert!(v["mementos"]["closest"]["uri"].is_array(), "{v}");

    let mg = rig(|c| c.server.compat = Compat::MemGator).await;
    let base = &mg.proxy.base;
    let (status, _, api) = get(&format!("{base}/api/json/2004/http://page.test/")).await;
    assert_eq!(status, 200, "{api}");
    let v: serde_json::Value = serde_json::from_str(&api).expect("json");
    assert!(v["mementos"]["closest"]["uri"].is_string(), "{v}");
    let (_, _, memento) = get(&format!("{base}/memento/json/2004/http://page.test/")).await;
    assert_eq!(api, memento);
}

/// Every error class on every JSON route parses as JSON with the right status; the link and
/// CDXJ routes answer the same errors as text.
#[tokio::test]
async fn every_error_on_a_json_route_is_json_and_text_elsewhere() {
    let rig = rig(|_| {}).await;
    let base = &rig.proxy.base;
    let json_routes = ["/timemap/json/", "/memento/json/2004/", "/api/json/2004/"];
    let text_routes = [
        "/timemap/link/",
        "/timemap/cdxj/",
        "/memento/link/2004/",
        "/memento/cdxj/2004/",
        "/api/cdxj/2004/",
    ];
    // (URI-R with query, status, a word of the reason, whether archives[] is filled)
    let cases = [
        ("ftp://page.test/", 400, "http", false),
        ("http://notfound.test/", 404, "no memento", true),
        ("http://fail.test/", 502, "usable", true),
        ("http://slow.test/?timeout=1s", 504, "deadline", true),
    ];
    for (uri_r, status, word, has_archives) in cases {
        for route in json_routes {
            let url = format!("{base}{route}{uri_r}");
            let (got, h, body) = get(&url).await;
            assert_eq!(got, status, "{url}: {body}");
            assert_eq!(content_type(&h), "application/json", "{url}");
            let v: serde_json::Value =
                serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}"));
            let error = v["error"].as_str().expect("error");
            assert!(error.contains(word), "{url}: {error}");
            let archives = v["archives"].as_array().expect("archives");
            assert_eq!(!archives.is_empty(), has_archives, "{url}: {v}");
            if has_archives {
                assert_eq!(archives[0]["id"], "fake", "{v}");
                assert!(h.get("x-memento-archives").is_some(), "{url}");
            }
        }
        for route in text_routes {
            let url = format!("{base}{route}{uri_r}");
            let (got, h, body) = get(&url).await;
            assert_eq!(got, status, "{url}: {body}");
            assert_eq!(content_type(&h), "text/plain; charset=utf-8", "{url}");
            assert!(body.starts_with(&format!("{status} ")), "{url}: {body}");
        }
    }
    // A bad datetime on the routes that have one.
    for route in ["/memento/json/2004x/", "/api/json/20041301/"] {
        let (got, h, body) = get(&format!("{base}{route}http://page.test/")).await;
        assert_eq!(got, 400, "{route}: {body}");
        assert_eq!(content_type(&h), "application/json", "{route}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert!(
            v["error"].as_str().expect("error").contains("datetime"),
            "{v}"
        );
        assert_eq!(v["archives"], serde_json::json!([]));
    }
    let (got, h, _) = get(&format!("{base}/memento/cdxj/2004x/http://page.test/")).await;
    assert_eq!((got, content_type(&h)), (400, "text/plain; charset=utf-8"));
    // 405 and 431 answered before any route: JSON on the JSON routes, text elsewhere.
    let big = "x".repeat(20 * 1024);
    for route in json_routes.iter().chain(&text_routes) {
        let url = format!("{base}{route}http://page.test/");
        let json = json_routes.contains(route);
        let want = if json {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        let r = client().post(&url).send().await.expect("POST");
        assert_eq!(r.status(), 405, "{url}");
        assert_eq!(content_type(r.headers()), want, "{url}");
        let body = r.text().await.expect("body");
        if json {
            let v: serde_json::Value = serde_json::from_str(&body).expect("json");
            assert!(
                v["error"].as_str().expect("error").contains("method"),
                "{v}"
            );
        }
        let r = client()
            .get(&url)
            .header("x-big", &big)
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 431, "{url}");
        assert_eq!(content_type(r.headers()), want, "{url}");
        if json {
            let v: serde_json::Value =
                serde_json::from_str(&r.text().await.expect("body")).expect("json");
            assert_eq!(v["archives"], serde_json::json!([]));
        }
    }
}

#[tokio::test]
async fn the_rate_limits_429_is_json_on_a_json_route() {
    let rig = rig(|c| {
        c.server.rate_limit = 0.01;
        c.server.rate_burst = 1;
    })
    .await;
    let base = &rig.proxy.base;
    let (status, _, _) = get(&format!("{base}/timemap/link/http://page.test/")).await;
    assert_eq!(status, 200);
    for (route, json) in [
        ("/api/json/2004/", true),
        ("/memento/json/2004/", true),
        ("/timemap/json/", true),
        ("/memento/link/2004/", false),
    ] {
        let (status, h, body) = get(&format!("{base}{route}http://page.test/")).await;
        assert_eq!(status, 429, "{route}: {body}");
        assert!(h.get("retry-after").is_some());
        if json {
            assert_eq!(content_type(&h), "application/json", "{route}");
            let v: serde_json::Value = serde_json::from_str(&body).expect("json");
            assert!(
                v["error"].as_str().expect("error").contains("retry after"),
                "{v}"
            );
        } else {
            assert!(body.starts_with("429 "), "{body}");
        }
    }
}

#[tokio::test]
async fn the_proxy_serves_an_archives_bytes_and_nothing_else() {
    let rig = rig(|_| {}).await;
    let base = &rig.proxy.base;
    let proxied = |w: &str| format!("{base}/memento/proxy/2004/http://{w}.test/");

    // The memento's raw form (`id_`), which this archive answers like any other path.
    let (status, h, body) = get(&proxied("page")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        "<html>memento of http://page.test/ at 20050101000000id_</html>"
    );
    assert_eq!(h["x-memento-raw"], "true");
    assert_eq!(content_type(&h), "text/html; charset=utf-8");
    let origins: Vec<_> = h.get_all("access-control-allow-origin").iter().collect();
    assert_eq!(origins, ["*"]);
    assert_eq!(h["memento-datetime"], "Sat, 01 Jan 2005 00:00:00 GMT");
    let link = h["link"].to_str().expect("ascii");
    assert!(
        link.contains("<http://page.test/>; rel=\"original\""),
        "{link}"
    );
    assert!(
        link.contains(&format!(
            "<http://{}/m/20050101000000/http://page.test/>; rel=\"memento\"",
            rig.archive
        )),
        "{link}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h["content-security-policy"]
        .to_str()
        .expect("ascii")
        .starts_with("sandbox"));
    assert!(
        h.get("set-cookie").is_none(),
        "an archive's cookie passed on"
    );
    // The alias, and a redirect within the archive's own host is followed.
    let (status, _, alias) = get(&format!("{base}/api/proxy/2004/http://page.test/")).await;
    assert_eq!((status, alias.as_str()), (200, body.as_str()));
    let (status, _, hop) = get(&proxied("hop")).await;
    assert_eq!((status, hop.as_str()), (200, body.as_str()));

    // Script never comes back as script; an archive's 404 is passed on.
    let (status, h, body) = get(&proxied("script")).await;
    assert_eq!((status, content_type(&h)), (200, "text/plain"));
    assert_eq!(body, "alert(document.domain)");
    let (status, _, body) = get(&proxied("gone")).await;
    assert_eq!((status, body.as_str()), (404, "gone from the archive"));

    // Refused: a URI-M off the archive's hosts, a redirect off them, bodies over the cap
    // (announced or not), an archive 5xx. All 502 with a reason, the bystander never asked.
    for (w, reason) in [
        ("elsewhere", "not under this archive's configured prefixes"),
        ("away", "refused"),
        ("big", "memento_proxy_max_bytes"),
        ("bigchunked", "memento_proxy_max_bytes"),
        ("broken", "HTTP 503"),
    ] {
        let (status, h, body) = get(&proxied(w)).await;
        assert_eq!(status, 502, "{w}: {body}");
        assert_eq!(content_type(&h), "text/plain; charset=utf-8", "{w}");
        assert!(body.starts_with("502 memento not proxied"), "{w}: {body}");
        assert!(body.contains(reason), "{w}: {body}");
    }
    assert_eq!(rig.bystander_hits.load(Ordering::SeqCst), 0);
    // No memento at all: the TimeMap's own errors.
    let (status, _, _) = get(&proxied("notfound")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memgator_routes_against_pywb() {
    let page = "http://example.com/";
    let caps = vec![
        Capture::new(
            page,
            "20150101000000",
            "<html>the 2015 page of example</html>",
        ),
        Capture::new(
            page,
            "20180101000000",
            "<html>the 2018 page of example</html>",
        ),
        Capture::new(
            "http://example.com/big",
            "20180101000000",
            &"z".repeat(8000),
        ),
    ];
    let archive = tokio::task::spawn_blocking(move || PywbArchive::start("mg", &caps))
        .await
        .expect("pywb starts");
    let mut config = Config::default();
    config.upstream.deadline = Duration::from_secs(10);
    config.upstream.timeout = Duration::from_secs(10);
    config.server.memento_proxy_max_bytes = 4096;
    config.archives = vec![archive_config(
        "pywb",
        &archive.timemap_prefix(),
        &archive.timegate_prefix(),
    )];
    let mut memgator = config.clone();
    memgator.server.compat = Compat::MemGator;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;

    // /api/json: Time Travel's lists by default, MemGator's strings when asked.
    let (status, _, body) = get(&format!("{base}/api/json/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        v["mementos"]["closest"]["uri"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    let mg = start_proxy(memgator).await;
    let (status, _, body) = get(&format!("{}/api/json/2017/{page}", mg.base)).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert!(v["mementos"]["closest"]["uri"].is_string(), "{v}");

    let (status, _, body) = get(&format!("{base}/memento/json/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let closest = v["mementos"]["closest"]["uri"].as_str().expect("one uri");
    assert!(closest.starts_with(&archive.base_url()), "{closest}");
    assert!(closest.contains("20180101000000"), "{closest}");
    assert_eq!(v["mementos"]["prev"]["datetime"], "2015-01-01T00:00:00Z");
    assert!(v["mementos"].get("next").is_none(), "{v}");

    let (status, _, body) = get(&format!("{base}/memento/link/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!("<{closest}>; rel=\"last memento\"")),
        "{body}"
    );
    let (status, _, body) = get(&format!("{base}/api/link/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = get(&format!("{base}/memento/cdxj/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"rel\": \"last closest memento\""), "{body}");

    // pywb's real bytes of the 2018 capture (its raw form: tests/it/raw_proxy.rs compares them).
    let (status, h, body) = get(&format!("{base}/memento/proxy/2017/{page}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("the 2018 page of example"), "{body}");
    assert_eq!(h["memento-datetime"], "Mon, 01 Jan 2018 00:00:00 GMT");
    assert_eq!(h["access-control-allow-origin"], "*");
    // A pywb memento over the cap is refused whole.
    let (status, _, body) = get(&format!("{base}/memento/proxy/2018/http://example.com/big")).await;
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("memento_proxy_max_bytes"), "{body}");

    // What pywb does not hold: JSON on the JSON route, text on the link route.
    let (status, h, body) = get(&format!("{base}/memento/json/2017/http://nothing.invalid/")).await;
    assert_eq!(
        (status, content_type(&h)),
        (404, "application/json"),
        "{body}"
    );
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["archives"][0]["id"], "pywb", "{v}");
    let (status, h, _) = get(&format!("{base}/memento/link/2017/http://nothing.invalid/")).await;
    assert_eq!(
        (status, content_type(&h)),
        (404, "text/plain; charset=utf-8")
    );
}
