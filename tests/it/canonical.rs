//! One entry per URL however spelled: the cache key is the URI-R's canonical
//! (SURT) form, so spellings share one entry and one fan-out, while every answer names the URI-R
//! as its own client spelled it. Against the real app, a fake archive that records what it is
//! asked, and sled on disk across restarts.

use crate::support::{archive_config, client, config_for, serve_fake, start_proxy, Proxy};
use axum::extract::Request;
use std::sync::{Arc, Mutex};
use tmproxy::config::Config;

const TOKEN: &str = "canonical-admin-token";

/// A fake archive answering every TimeMap with two mementos of the URI-R it was asked, recording
/// each request target it receives.
struct Recorder {
    asked: Arc<Mutex<Vec<String>>>,
    prefix: String,
    _task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    async fn start() -> Recorder {
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = asked.clone();
        let app = axum::Router::new().fallback(move |req: Request| {
            let seen = seen.clone();
            async move {
                let target = req.uri().path_and_query().map_or("", |p| p.as_str());
                seen.lock().expect("lock").push(target.to_owned());
                let uri_r = target.strip_prefix("/timemap/link/").unwrap_or("");
                let body = format!(
                    "<{uri_r}>; rel=\"original\",\n\
                     <http://archive.test/20010101000000/{uri_r}>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
                     <http://archive.test/20150101000000/{uri_r}>; rel=\"memento\"; datetime=\"Thu, 01 Jan 2015 00:00:00 GMT\"\n"
                );
                ([("content-type", "application/link-format")], body)
            }
        });
        let (addr, task) = serve_fake(app).await;
        Recorder {
            asked,
            prefix: format!("http://{addr}/timemap/link/"),
            _task: task,
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }

    fn config(&self, canonical: bool) -> Config {
        let mut config = config_for(&[]);
        config.archives.push(archive_config(
            "rec",
            &self.prefix,
            &self.prefix.replace("/timemap/link/", "/"),
        ));
        config.cache.canonical = canonical;
        config.admin.token = TOKEN.to_owned();
        config
    }
}

/// GET a TimeMap: (status, X-Cache, Link header, body).
async fn timemap(proxy: &Proxy, format: &str, spelling: &str) -> (u16, String, String, String) {
    let r = client()
        .get(format!("{}/timemap/{format}/{spelling}", proxy.base))
        .send()
        .await
        .expect("GET");
    let h = |n: &str| {
        r.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (status, x_cache, link) = (r.status().as_u16(), h("x-cache"), h("link"));
    (status, x_cache, link, r.text().await.expect("body"))
}

/// Three spellings of one URL, and the URI-R each names once parsed (a bare host gets `http://`).
const SPELLINGS: [(&str, &str); 3] = [
    ("example.com", "http://example.com"),
    ("http://example.com/", "http://example.com/"),
    ("https://www.example.com/", "https://www.example.com/"),
];

#[tokio::test]
async fn three_spellings_share_one_fan_out_and_each_answer_names_its_own_uri_r() {
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(true)).await;
    for (i, (spelling, uri_r)) in SPELLINGS.iter().enumerate() {
        let (status, x_cache, link, body) = timemap(&proxy, "link", spelling).await;
        assert_eq!(status, 200, "{spelling}: {body}");
        assert_eq!(x_cache, if i == 0 { "MISS" } else { "HIT" }, "{spelling}");
        assert!(
            body.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{spelling}: {body}"
        );
        assert!(
            body.contains(&format!(
                "{}/timemap/link/{uri_r}>; rel=\"self\"",
                proxy.base
            )),
            "{spelling}: {body}"
        );
        assert!(
            link.starts_with(&format!(
                "<{uri_r}>; rel=\"original\", <{}/timegate/{uri_r}>",
                proxy.base
            )),
            "{spelling}: {link}"
        );
        // Served again in another format, still under its own name.
        let (_, _, _, json) = timemap(&proxy, "json", spelling).await;
        let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        assert_eq!(json["original_uri"], *uri_r, "{spelling}");
        assert_eq!(json["mementos"]["list"].as_array().map(Vec::len), Some(2));
    }
    // One fan-out, with the first asker's spelling.
    assert_eq!(archive.asked(), ["/timemap/link/http://example.com"]);

    // The TimeGate and /api/json name it as asked too.
    for (spelling, uri_r) in SPELLINGS {
        let r = client()
            .get(format!("{}/timegate/{spelling}", proxy.base))
            .header("accept-datetime", "Sat, 01 Jan 2000 00:00:00 GMT")
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status(), 302, "{spelling}");
        let link = r.headers()["link"].to_str().expect("ascii").to_owned();
        assert!(
            link.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{link}"
        );
        let (status, api) =
            crate::support::get_json(&format!("{}/api/json/2010/{spelling}", proxy.base)).await;
        assert_eq!(status, 200);
        assert_eq!(api["original_uri"], uri_r);
        assert_eq!(
            api["timegate_uri"],
            format!("{}/timegate/{uri_r}", proxy.base)
        );
    }
    assert_eq!(archive.asked().len(), 1, "{:?}", archive.asked());
    proxy.stop().await;
}

#[tokio::test]
async fn spellings_asked_at_once_join_one_fan_out() {
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(true)).await;
    let answers = futures::future::join_all(
        SPELLINGS
            .iter()
            .map(|(spelling, _)| timemap(&proxy, "link", spelling)),
    )
    .await;
    for ((_, uri_r), (status, _, link, body)) in SPELLINGS.iter().zip(answers) {
        assert_eq!(status, 200);
        assert!(
            body.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{body}"
        );
        assert!(
            link.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{link}"
        );
    }
    assert_eq!(archive.asked().len(), 1, "{:?}", archive.asked());
    proxy.stop().await;
}

#[tokio::test]
async fn canonical_false_keeps_one_entry_and_fan_out_per_spelling() {
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(false)).await;
    for (spelling, uri_r) in SPELLINGS {
        let (status, x_cache, _, body) = timemap(&proxy, "link", spelling).await;
        assert_eq!((status, x_cache.as_str()), (200, "MISS"), "{spelling}");
        assert!(body.starts_with(&format!("<{uri_r}>; rel=\"original\"")));
        let (_, x_cache, _, _) = timemap(&proxy, "link", spelling).await;
        assert_eq!(x_cache, "HIT");
    }
    assert_eq!(
        archive.asked(),
        SPELLINGS.map(|(_, uri_r)| format!("/timemap/link/{uri_r}"))
    );
    // The admin API finds an entry only under its own spelling.
    let (status, _) = admin(&proxy, reqwest::Method::GET, "https://www.example.com/").await;
    assert_eq!(status, 200);
    let (status, _) = admin(&proxy, reqwest::Method::GET, "https://example.com/").await;
    assert_eq!(status, 404);
    proxy.stop().await;
}

/// What SURT would merge but can be another resource is not merged: the path's case, a host
/// whose labels a `,` could forge, a `www` label that is the name itself.
#[tokio::test]
async fn different_resources_keep_their_own_entries() {
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(true)).await;
    let spellings = [
        "http://example.com/A",
        "http://example.com/a",
        "http://y.x.com/",
        "http://x,y.com/",
        "http://www3288.com/",
        "http://www1355544.com/",
        "http://example.com/a?sid=1",
    ];
    for spelling in spellings {
        let (status, x_cache, _, _) = timemap(&proxy, "link", spelling).await;
        assert_eq!((status, x_cache.as_str()), (200, "MISS"), "{spelling}");
    }
    assert_eq!(archive.asked().len(), spellings.len());
    // Query order is only order.
    let (_, x_cache, _, body) = timemap(&proxy, "link", "http://example.com/q?b=2&a=1").await;
    assert_eq!(x_cache, "MISS");
    let (_, x_cache, _, again) = timemap(&proxy, "link", "http://EXAMPLE.com/q?a=1&b=2").await;
    assert_eq!(x_cache, "HIT");
    assert!(body.starts_with("<http://example.com/q?b=2&a=1>"), "{body}");
    assert!(
        again.starts_with("<http://EXAMPLE.com/q?a=1&b=2>"),
        "{again}"
    );
    proxy.stop().await;
}

async fn admin(proxy: &Proxy, method: reqwest::Method, uri_r: &str) -> (u16, serde_json::Value) {
    let r = client()
        .request(method, format!("{}/admin/cache/{uri_r}", proxy.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("admin request");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or_default())
}

#[tokio::test]
async fn the_admin_api_finds_and_purges_the_entry_under_any_spelling() {
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(true)).await;
    timemap(&proxy, "link", "http://example.com/").await;
    let (status, entry) = admin(&proxy, reqwest::Method::GET, "https://www.example.com").await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["uri_r"], "http://example.com/", "the stored spelling");
    assert_eq!(entry["key"], "com,example)/");
    assert_eq!(entry["mementos"], 2);
    // A forced refresh under another spelling refreshes the same entry, asking with its own.
    let (status, refreshed) = admin(&proxy, reqwest::Method::POST, "example.com:80").await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(refreshed["entry"]["uri_r"], "http://example.com/");
    assert_eq!(
        archive.asked(),
        [
            "/timemap/link/http://example.com/",
            "/timemap/link/http://example.com/"
        ]
    );
    let (status, _) = admin(
        &proxy,
        reqwest::Method::DELETE,
        "https://WWW.example.com:443/",
    )
    .await;
    assert_eq!(status, 204);
    for (spelling, _) in SPELLINGS {
        let (status, _) = admin(&proxy, reqwest::Method::GET, spelling).await;
        assert_eq!(status, 404, "{spelling}");
    }
    let (_, x_cache, _, _) = timemap(&proxy, "link", "https://www.example.com/").await;
    assert_eq!(x_cache, "MISS");
    assert_eq!(archive.asked().len(), 3);
    proxy.stop().await;
}

#[tokio::test]
async fn after_a_restart_the_entry_on_disk_is_found_under_any_spelling() {
    let archive = Recorder::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = archive.config(true);
    config.cache.path = dir.path().join("cache").display().to_string();
    let proxy = start_proxy(config.clone()).await;
    let (_, x_cache, _, _) = timemap(&proxy, "link", "https://www.example.com/").await;
    assert_eq!(x_cache, "MISS");
    proxy.stop().await;

    let proxy = start_proxy(config).await;
    for (spelling, uri_r) in SPELLINGS {
        let (status, x_cache, _, body) = timemap(&proxy, "link", spelling).await;
        assert_eq!((status, x_cache.as_str()), (200, "HIT"), "{spelling}");
        assert!(
            body.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{body}"
        );
    }
    assert_eq!(archive.asked(), ["/timemap/link/https://www.example.com/"]);
    proxy.stop().await;
}

/// Entries written under exact keys (`canonical = false`, or before canonical keys) are moved to
/// the canonical key when asked with their own spelling; a value under an exact key that is not
/// that URI-R's entry is left alone and never served.
#[tokio::test]
async fn entries_under_exact_keys_are_moved_when_asked_so_spelled() {
    let archive = Recorder::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache").display().to_string();
    let mut exact = archive.config(false);
    exact.cache.path = path.clone();
    let proxy = start_proxy(exact).await;
    timemap(&proxy, "link", "http://example.com/").await;
    timemap(&proxy, "link", "http://example.org/").await;
    // An odd value under an exact key: another URI-R's entry.
    proxy
        .store_entry("http://example.net/", foreign_entry("http://evil.example/"))
        .await;
    proxy.stop().await;
    assert_eq!(archive.asked().len(), 2);

    let mut canonical = archive.config(true);
    canonical.cache.path = path;
    let proxy = start_proxy(canonical).await;
    // Another spelling first: the old entry is not found under it.
    let (_, x_cache, _, _) = timemap(&proxy, "link", "https://example.org/").await;
    assert_eq!(x_cache, "MISS");
    // Its own spelling moves it; every spelling then finds it.
    for (spelling, _) in [SPELLINGS[1], SPELLINGS[0], SPELLINGS[2]] {
        let (status, x_cache, _, _) = timemap(&proxy, "link", spelling).await;
        assert_eq!((status, x_cache.as_str()), (200, "HIT"), "{spelling}");
    }
    let (_, x_cache, _, body) = timemap(&proxy, "link", "http://example.net/").await;
    assert_eq!(x_cache, "MISS");
    assert!(body.starts_with("<http://example.net/>"), "{body}");
    assert_eq!(archive.asked().len(), 4, "{:?}", archive.asked());
    proxy.stop().await;
}

/// A fresh-for-good entry of `uri_r` with one memento, as a store could hold it.
fn foreign_entry(uri_r: &str) -> tmproxy::cache::entry::Entry {
    use tmproxy::cache::entry::{Entry, ENTRY_FORMAT_VERSION};
    use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, ListedMemento};
    let at = tmproxy::timemap::datetime::parse_14digit("20240101000000").expect("timestamp");
    Entry {
        version: ENTRY_FORMAT_VERSION,
        uri_r: uri_r.to_owned(),
        contributions: vec![Contribution {
            archive: "rec".to_owned(),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: at,
            mementos: vec![ListedMemento {
                uri_m: "http://evil.example/2001/".into(),
                datetime: at,
                absent: None,
            }],
            last_error: None,
            listing: Default::default(),
        }],
        fetched_at: at,
        checked_at: at,
        fresh_until: None,
        loose: 1,
        strict: 1,
        archives: 1,
        history: Default::default(),
    }
}

/// pywb keys its index by SURT itself: asked once with the first spelling, its TimeMap serves
/// every other spelling from the cache, each named as asked, with pywb's mementos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_pywb_one_fan_out_serves_every_spelling() {
    use crate::pywb::{Capture, PywbArchive};
    let captures = vec![
        Capture::new("http://example.com/", "20200101120000", "<html>a</html>"),
        Capture::new("http://example.com/", "20210615083000", "<html>b</html>"),
    ];
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("coll", &captures))
        .await
        .expect("pywb starts");
    let mut config = Config::default();
    config.upstream.deadline = std::time::Duration::from_secs(10);
    config.upstream.timeout = std::time::Duration::from_secs(10);
    config.archives = vec![archive_config(
        "pywb",
        &pywb.timemap_prefix(),
        &pywb.timegate_prefix(),
    )];
    let proxy = start_proxy(config).await;
    let first = "https://www.example.com/";
    for (spelling, uri_r) in [(first, first), SPELLINGS[0], SPELLINGS[1]] {
        let (status, x_cache, link, body) = timemap(&proxy, "json", spelling).await;
        assert_eq!(status, 200, "{spelling}: {body}");
        assert_eq!(x_cache, if spelling == first { "MISS" } else { "HIT" });
        let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(json["original_uri"], uri_r);
        assert!(
            link.starts_with(&format!("<{uri_r}>; rel=\"original\"")),
            "{link}"
        );
        let uris = crate::support::memento_uris(&json);
        assert_eq!(uris.len(), 2, "{json}");
        assert!(
            uris.iter().all(|u| u.starts_with(&pywb.base_url())),
            "{uris:?}"
        );
    }
    proxy.stop().await;
}

/// Another spelling's coded bodies are its own head and tail joined around the stored spelling's
/// list coded once; decoded by other implementations than ours (curl's Google brotli, zstd and
/// zlib libraries), each is the spelling's plain body, in every format and coding.
#[tokio::test]
async fn another_spellings_coded_bodies_decode_with_curls_decoders_to_its_plain_body() {
    let Ok(version) = std::process::Command::new("curl").arg("-V").output() else {
        return crate::support::skip("curl is not installed (scripts/test.sh installs it)");
    };
    let features = String::from_utf8_lossy(&version.stdout).to_ascii_lowercase();
    for lib in ["brotli/", "zstd/", "zlib/"] {
        if !features.contains(lib) {
            return crate::support::skip(&format!("this curl decodes no {lib}"));
        }
    }
    let archive = Recorder::start().await;
    let proxy = start_proxy(archive.config(true)).await;
    let (status, ..) = timemap(&proxy, "link", "http://example.com/").await;
    assert_eq!(status, 200);
    for format in ["link", "json", "cdxj"] {
        for (i, coding) in ["br", "zstd", "gzip"].into_iter().enumerate() {
            // The stored spelling's coded body first, then spellings it has never served.
            let url = |s: &str| format!("{}/timemap/{format}/{s}", proxy.base);
            let _ = curl(&url("http://example.com/"), coding).await;
            // Another spelling than the stored one: its body in this format and coding is joined.
            let spelling = [
                "http://EXAMPLE.com/",
                "http://example.com:80/",
                "http://Example.Com/",
            ][i];
            {
                let (encoding, decoded) = curl(&url(spelling), coding).await;
                let (status, _, _, plain) = timemap(&proxy, format, spelling).await;
                assert_eq!(status, 200, "{format} {spelling}");
                assert_eq!(encoding, coding, "{format} {spelling}");
                assert!(
                    decoded == plain,
                    "{format} {coding} {spelling}: {decoded:?} != {plain:?}"
                );
            }
        }
    }
    proxy.stop().await;
}

/// curl's answer to `url` asked with `Accept-Encoding: coding`: its `Content-Encoding` and the
/// body as curl decoded it.
async fn curl(url: &str, coding: &str) -> (String, String) {
    let out = tokio::process::Command::new("curl")
        .args(["-s", "--compressed", "-D", "-", "-H"])
        .arg(format!("Accept-Encoding: {coding}"))
        .arg(url)
        .output()
        .await
        .expect("curl runs");
    assert!(out.status.success(), "curl {url}: {:?}", out.status);
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let encoding = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-encoding:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    (encoding, body.to_owned())
}
