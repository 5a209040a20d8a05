//! What Memento clients written for other aggregators rely on ([compat]): no prefix query is
//! ever sent to an archive in a URI-R's name.

use crate::support::{archive_config, client, config_for, serve_fake, start_proxy};
use axum::extract::Request;
use std::sync::{Arc, Mutex};

/// A trailing `*` would make a pywb or Wayback archive run a prefix query (every URL starting
/// so): refused with a 400 and no archive asked, on every route; `%2A` reaches the archive as
/// `%2A`.
#[tokio::test]
async fn a_trailing_star_is_refused_and_an_encoded_one_is_sent_encoded() {
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = asked.clone();
    let app = axum::Router::new().fallback(move |req: Request| {
        let seen = seen.clone();
        async move {
            let target = req.uri().path_and_query().map(|p| p.as_str().to_owned());
            seen.lock().expect("lock").push(target.unwrap_or_default());
            (
                [("content-type", "application/link-format")],
                "<http://example.com/a*>; rel=\"original\"\n",
            )
        }
    });
    let (addr, _task) = serve_fake(app).await;
    let mut config = config_for(&[]);
    config.archives.push(archive_config(
        "pywb",
        &format!("http://{addr}/timemap/link/"),
        &format!("http://{addr}/timegate/"),
    ));
    let proxy = start_proxy(config).await;
    for path in [
        "/timemap/link/http://example.com/*",
        "/timemap/json/example.com/*",
        "/timegate/http://example.com/*",
        "/memento/2015/http://example.com/*",
        "/api/json/2015/http://example.com/*",
        "/ui/http://example.com/*",
    ] {
        let r = client()
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 400, "{path}");
        let body = r.text().await.expect("body");
        assert!(body.contains("prefix query"), "{path}: {body}");
    }
    assert!(
        asked.lock().expect("lock").is_empty(),
        "an archive was asked"
    );
    for path in [
        "/timemap/link/http://example.com/a%2A",
        "/timemap/link/http%3A%2F%2Fexample.com%2Fb%2A",
    ] {
        let r = client()
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("GET");
        assert!(r.status().as_u16() < 500, "{path}: {}", r.status());
    }
    let asked = asked.lock().expect("lock").clone();
    assert_eq!(
        asked,
        [
            "/timemap/link/http://example.com/a%2A",
            "/timemap/link/http://example.com/b%2A"
        ]
    );
    proxy.stop().await;
}

/// A TimeMap answer carries RFC 7089's `Link` header as archives' do: the original (so a client
/// asking a TimeMap URL for its original gets the URI-R, not the TimeMap), our TimeGate, and
/// this TimeMap as `self` with the span of its mementos, in each format's own type.
#[tokio::test]
async fn a_timemap_answer_links_its_original_timegate_and_self() {
    use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20150615120000",
    ])))
    .await
    .expect("archive");
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    for (format, content_type) in [
        ("link", "application/link-format"),
        ("json", "application/json"),
        ("cdxj", "application/cdxj+ors"),
    ] {
        let url = format!("{}/timemap/{format}/http://example.com/a b", proxy.base);
        let r = client().get(&url).send().await.expect("GET");
        assert_eq!(r.status(), 200, "{format}");
        let link = r.headers()["link"].to_str().expect("ascii").to_owned();
        let base = &proxy.base;
        for part in [
            "<http://example.com/a%20b>; rel=\"original\"".to_string(),
            format!("<{base}/timegate/http://example.com/a%20b>; rel=\"timegate\""),
            format!(
                "<{base}/timemap/{format}/http://example.com/a%20b>; rel=\"self\"; type=\"{content_type}\"; \
                 from=\"Mon, 01 Jan 2001 00:00:00 GMT\"; until=\"Mon, 15 Jun 2015 12:00:00 GMT\""
            ),
        ] {
            assert!(link.contains(&part), "{format}: {part} in {link}");
        }
    }
    proxy.stop().await;
}
