//! `X-Content-Type-Options: nosniff` on every answer: each route of docs/api.md's Routes table,
//! the admin API and `/metrics`, the web pages and their assets, redirects, a preflight, a 404
//! and a 400. No browser may read a TimeMap or an echoed URI-R as a page or a script.

use crate::support::{config_for, start_proxy};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const U: &str = "http://example.com/";

#[tokio::test]
async fn every_answer_says_nosniff() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = "sniff-token".into();
    let proxy = start_proxy(config).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    // The stylesheet's name carries its hash: read from the page that links it.
    let home = client.get(&proxy.base).send().await.expect("/");
    let home = home.text().await.expect("page");
    let at = home.find("/ui/assets/").expect("an asset linked");
    let asset = home[at..].split('"').next().expect("its URL").to_string();
    let routes: Vec<(String, Option<u16>)> = vec![
        (format!("/timemap/link/{U}"), Some(200)),
        (format!("/timemap/json/{U}"), Some(200)),
        (format!("/timemap/cdxj/{U}"), Some(200)),
        (format!("/timemap/{U}"), Some(200)),
        (format!("/timemap/link/1/{U}"), Some(200)),
        (format!("/timegate/{U}"), Some(302)),
        (format!("/memento/2003/{U}"), Some(302)),
        (format!("/memento/json/2003/{U}"), Some(200)),
        (format!("/memento/proxy/2003/{U}"), None),
        (format!("/api/json/2003/{U}"), Some(200)),
        (format!("/api/cdxj/2003/{U}"), Some(200)),
        ("/healthz".into(), Some(200)),
        ("/archives".into(), Some(200)),
        ("/about".into(), Some(200)),
        ("/".into(), Some(200)),
        (format!("/ui/{U}"), Some(200)),
        (format!("/ui?url={U}"), Some(303)),
        ("/ui/admin".into(), Some(200)),
        (asset, Some(200)),
        ("/metrics".into(), Some(200)),
        ("/admin/stats".into(), Some(401)),
        ("/nowhere".into(), Some(404)),
        ("/timemap/link/javascript:alert(1)".into(), Some(400)),
    ];
    for (path, want) in &routes {
        let r = client
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect(path);
        if let Some(want) = want {
            assert_eq!(r.status().as_u16(), *want, "{path}");
        }
        assert_eq!(
            r.headers()
                .get("x-content-type-options")
                .map(|v| v.as_bytes()),
            Some(&b"nosniff"[..]),
            "{path}: {:?}",
            r.headers()
        );
    }
    let special = [
        client
            .get(format!("{}/admin/stats", proxy.base))
            .bearer_auth("sniff-token"),
        client
            .get(format!("{}/timegate/{U}", proxy.base))
            .header("accept-datetime", "not a date"),
        client
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/timemap/link/{U}", proxy.base),
            )
            .header("origin", "https://client.test")
            .header("access-control-request-method", "GET"),
        client.head(format!("{}/timemap/link/{U}", proxy.base)),
    ];
    for (i, req) in special.into_iter().enumerate() {
        let r = req.send().await.expect("request");
        assert!(r.status().as_u16() < 500, "{i}: {}", r.status());
        assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{i}");
    }
}
