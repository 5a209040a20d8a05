//! What Memento clients written for other aggregators rely on: no prefix query is
//! ever sent to an archive in a URI-R's name (against a fake archive and pywb), and a TimeMap
//! answer links its original, as py-memento-client reads it.

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

/// py-memento-client 0.6.1, a client written for Time Travel, run unchanged against us:
/// `get_original_uri` on our TimeMap URL finds the URI-R (not the TimeMap URL itself), on a
/// pywb archive's TimeMap URL the same, and `get_memento_info` through our TimeGate gets the
/// closest memento and the first and last, as pywb's own TimeGate gives them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn py_memento_client_reads_our_timemap_and_timegate_as_pywbs() {
    use crate::pywb::{venv_python, Capture, PywbArchive};
    // The client first asks the original itself (to see whether it is a memento), and 0.6.1
    // crashes when it cannot connect: the live web here is a loopback server.
    let live = axum::Router::new().fallback(|| async { "the live page" });
    let (live, _live_task) = serve_fake(live).await;
    let uri_r = format!("http://{live}/page");
    let uri_r = uri_r.as_str();
    let caps: Vec<Capture> = ["20150101000000", "20180606060606", "20210101000000"]
        .iter()
        .map(|ts| Capture::new(uri_r, ts, "<html>page</html>"))
        .collect::<Vec<_>>();
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("coll", &caps))
        .await
        .expect("pywb starts");
    let mut config = config_for(&[]);
    config.archives.push(archive_config(
        "pywb",
        &pywb.timemap_prefix(),
        &pywb.timegate_prefix(),
    ));
    let proxy = start_proxy(config).await;
    let script = r#"
import json, sys
from memento_client import MementoClient
ours, theirs, timegate, uri_r = sys.argv[1:5]
ours_mc = MementoClient(timegate_uri=timegate, check_native_timegate=False)
info = ours_mc.get_memento_info(uri_r, __import__("datetime").datetime(2018, 6, 1))
print(json.dumps({
    "ours": MementoClient().get_original_uri(ours),
    "theirs": MementoClient().get_original_uri(theirs),
    "closest": info["mementos"]["closest"]["uri"][0],
    "first": info["mementos"]["first"]["uri"][0],
    "last": info["mementos"]["last"]["uri"][0],
}))
"#;
    let ours = format!("{}/timemap/link/{uri_r}", proxy.base);
    let theirs = format!("{}{uri_r}", pywb.timemap_prefix());
    let timegate = format!("{}/timegate/", proxy.base);
    let args = [
        script.to_string(),
        ours,
        theirs,
        timegate,
        uri_r.to_string(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(venv_python())
            .arg("-c")
            .args(args)
            .output()
            .expect("python runs")
    })
    .await
    .expect("joined");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json");
    assert_eq!(got["ours"], uri_r, "{got}");
    assert_eq!(got["theirs"], uri_r, "pywb's TimeMap says the same: {got}");
    let uri_m = |ts: &str| format!("{}/coll/{ts}mp_/{uri_r}", pywb.base_url());
    assert_eq!(got["closest"], uri_m("20180606060606"), "{got}");
    assert_eq!(got["first"], uri_m("20150101000000"), "{got}");
    assert_eq!(got["last"], uri_m("20210101000000"), "{got}");
    proxy.stop().await;
}

/// Against pywb, why a trailing `*` is refused: asked directly, pywb answers it with a prefix
/// search mixing other URLs (here `style.css`); through us it is a 400 and pywb is not asked,
/// and `%2A` reaches pywb as a literal star (nothing archived under it: 404, no style.css).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pywb_would_run_a_prefix_query_that_we_never_send() {
    use crate::pywb::{Capture, PywbArchive};
    let caps = vec![
        Capture::new("http://example.com/", "20150101000000", "<html>home</html>"),
        Capture::new("http://example.com/style.css", "20150101000001", "body{}"),
    ];
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("coll", &caps))
        .await
        .expect("pywb starts");
    let direct = client()
        .get(format!("{}http://example.com/*", pywb.timemap_prefix()))
        .send()
        .await
        .expect("GET pywb");
    let direct = direct.text().await.expect("body");
    assert!(
        direct.contains("style.css"),
        "pywb runs the prefix query: {direct}"
    );

    let mut config = config_for(&[]);
    config.archives.push(archive_config(
        "pywb",
        &pywb.timemap_prefix(),
        &pywb.timegate_prefix(),
    ));
    let proxy = start_proxy(config).await;
    for path in [
        "/timemap/link/http://example.com/*",
        "/timegate/http://example.com/*",
    ] {
        let r = client()
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 400, "{path}");
    }
    let r = client()
        .get(format!(
            "{}/timemap/link/http://example.com/%2A",
            proxy.base
        ))
        .send()
        .await
        .expect("GET");
    let status = r.status();
    let body = r.text().await.expect("body");
    assert_eq!(status, 404, "{body}");
    assert!(!body.contains("style.css"), "{body}");
    proxy.stop().await;
}
