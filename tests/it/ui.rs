//! The web pages in a real browser: the system's headless Chromium (Debian's `chromium`), driven
//! over the DevTools protocol, loads each page from the proxy on 127.0.0.1:0, reads the DOM after
//! the scripts ran, types and clicks where a person would, and saves a screenshot under
//! `target/ui-screenshots/`. Without `chromium` on PATH these tests fail, saying how to get it
//! (`scripts/test.sh` installs it).

use crate::support::{
    client, config_for, get_json, memento_uris, start_proxy, start_proxy_with_admin_listener,
};
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tmproxy::cache::entry::{Entry, ENTRY_FORMAT_VERSION};
use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, ListedMemento};
use tmproxy::timemap::datetime::parse_14digit;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "ui-admin-token";

/// `chromium` on PATH, or a failure that says what to install.
fn chromium() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("chromium"))
                .find(|c| c.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "the UI tests need Chromium, and `chromium` is not on PATH: install it \
                 (Debian: apt-get install --no-install-recommends chromium fonts-dejavu-core), \
                 or run scripts/test.sh, which does"
            )
        })
}

fn launch() -> Browser {
    launch_sized(1280, 1600)
}

/// A browser whose window is `width` × `height` CSS pixels.
fn launch_sized(width: u32, height: u32) -> Browser {
    let args: Vec<&OsStr> = ["--disable-gpu", "--hide-scrollbars", "--no-sandbox"]
        .iter()
        .map(OsStr::new)
        .collect();
    let options = LaunchOptions::default_builder()
        .path(Some(chromium()))
        .headless(true)
        .sandbox(false)
        .window_size(Some((width, height)))
        // The connection is dropped after this long without an event; a loaded machine can be slow.
        .idle_browser_timeout(Duration::from_secs(300))
        .args(args)
        .build()
        .expect("launch options");
    Browser::new(options).expect("Chromium starts")
}

/// Runs `f` with a fresh browser on a blocking thread (the DevTools client blocks), the proxy
/// still serving on the runtime; a failed assertion inside fails the test with its message.
async fn in_browser<T: Send + 'static>(f: impl FnOnce(&Browser) -> T + Send + 'static) -> T {
    let run = tokio::task::spawn_blocking(move || {
        let browser = launch();
        f(&browser)
    });
    match run.await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

fn open(browser: &Browser, url: &str) -> Arc<Tab> {
    let tab = browser.new_tab().expect("a tab");
    tab.set_default_timeout(Duration::from_secs(60));
    tab.navigate_to(url)
        .and_then(|t| t.wait_until_navigated())
        .unwrap_or_else(|e| panic!("loading {url}: {e}"));
    tab
}

/// `url` in a tab whose viewport is exactly `width` CSS pixels (a window cannot be made that
/// narrow: Chromium keeps windows at least 500 px wide).
fn open_at(browser: &Browser, url: &str, width: u32) -> Arc<Tab> {
    use headless_chrome::protocol::cdp::Emulation::SetDeviceMetricsOverride;
    let tab = browser.new_tab().expect("a tab");
    tab.set_default_timeout(Duration::from_secs(60));
    tab.call_method(SetDeviceMetricsOverride {
        width,
        height: 900,
        device_scale_factor: 1.0,
        mobile: false,
        scale: None,
        screen_width: None,
        screen_height: None,
        position_x: None,
        position_y: None,
        dont_set_visible_size: None,
        screen_orientation: None,
        viewport: None,
        display_feature: None,
        device_posture: None,
    })
    .expect("a viewport that wide");
    tab.navigate_to(url)
        .and_then(|t| t.wait_until_navigated())
        .unwrap_or_else(|e| panic!("loading {url}: {e}"));
    tab
}

/// The value of a JavaScript expression, evaluated in the page, as JSON.
fn js(tab: &Tab, expr: &str) -> Value {
    let wrapped = format!("JSON.stringify((() => {{ return {expr}; }})())");
    let result = tab
        .evaluate(&wrapped, false)
        .unwrap_or_else(|e| panic!("evaluating {expr}: {e}"));
    let text = result
        .value
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{expr} gave nothing"));
    serde_json::from_str(&text).expect("JSON from the page")
}

fn screenshot(tab: &Tab, name: &str) {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("ui-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("a screenshot");
    std::fs::write(dir.join(name), png).expect("screenshot written");
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timemap_page_draws_a_bar_per_year_and_links_every_memento() {
    let a_captures = [
        "20010101000000",
        "20030505120000",
        "20031111000000",
        "20100101000000",
    ];
    let b_captures = ["20030606000000", "20050101000000", "20100202000000"];
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&a_captures)))
        .await
        .expect("archive a");
    let b = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&b_captures)))
        .await
        .expect("archive b");
    let none = SimulatedArchive::start(Behaviour::Status(404, "no".into()))
        .await
        .expect("archive none");
    let broken = SimulatedArchive::start(Behaviour::Status(500, "down".into()))
        .await
        .expect("archive broken");
    let proxy = start_proxy(config_for(&[
        ("a", &a),
        ("b", &b),
        ("none", &none),
        ("broken", &broken),
    ]))
    .await;
    let base = proxy.base.clone();

    let r = client()
        .get(format!("{base}/ui/http://example.com/"))
        .send()
        .await
        .expect("page");
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .expect("CSP");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    let (_, tm) = get_json(&format!("{base}/timemap/json/http://example.com/")).await;
    let uris = memento_uris(&tm);
    assert_eq!(uris.len(), a_captures.len() + b_captures.len());
    let years: BTreeSet<String> = a_captures
        .iter()
        .chain(&b_captures)
        .map(|ts| ts[..4].to_string())
        .collect();

    let page = in_browser(move |browser| {
        let tab = open(browser, &format!("{base}/ui/http://example.com/"));
        screenshot(&tab, "timemap.png");
        let page = js(
            &tab,
            r#"{
              years: [...document.querySelectorAll('svg g.year')].map(g => g.dataset.year),
              segments: [...document.querySelectorAll('svg g.year rect')].map(r => r.querySelector('title').textContent),
              svg: document.querySelector('svg[role=img]').getAttribute('aria-label'),
              links: [...document.querySelectorAll('a.memento')].map(a => a.getAttribute('href')),
              headings: [...document.querySelectorAll('h3')].map(h => h.id),
              outcomes: [...document.querySelectorAll('tr.outcome')].map(r => [r.dataset.archive, r.dataset.status]),
              timemaps: ['link', 'json', 'cdxj'].map(f => document.getElementById('link-timemap-' + f).href),
              timegate: document.getElementById('link-timegate').href,
              h1: document.querySelectorAll('h1').length,
              lang: document.documentElement.lang,
              unlabelled: [...document.querySelectorAll('input')].filter(i => !document.querySelector('label[for="' + i.id + '"]')).length
            }"#,
        );
        // The search box on the home page, by keyboard: type, Enter, and the timeline is there.
        let home = open(browser, &format!("{base}/"));
        let archives = js(
            &home,
            "[...document.querySelectorAll('tr.archive')].map(r => [r.dataset.id, r.querySelector('.state').textContent])",
        );
        screenshot(&home, "home.png");
        home.wait_for_element("#url")
            .and_then(|e| e.click().map(|_| ()))
            .expect("the search box");
        home.type_str("example.com/")
            .and_then(|t| t.press_key("Enter"))
            .expect("typing");
        home.wait_for_element("#uri-r").expect("the timeline page");
        let searched = js(
            &home,
            "[location.pathname, document.getElementById('uri-r').textContent]",
        );
        json!({"page": page, "archives": archives, "searched": searched})
    })
    .await;

    let p = &page["page"];
    assert_eq!(strings(&p["years"]), years.into_iter().collect::<Vec<_>>());
    assert_eq!(strings(&p["headings"]).len(), strings(&p["years"]).len());
    // 2003 and 2010 have mementos from both archives: a segment each.
    assert_eq!(strings(&p["segments"]).len(), 6, "{p}");
    assert!(strings(&p["segments"]).contains(&"2003: 2 mementos in a".to_string()));
    assert!(
        p["svg"]
            .as_str()
            .is_some_and(|s| s.contains("7 mementos in 4 years")),
        "{p}"
    );
    assert_eq!(
        strings(&p["links"]).into_iter().collect::<BTreeSet<_>>(),
        uris.iter().cloned().collect::<BTreeSet<_>>()
    );
    assert_eq!(strings(&p["links"]).len(), uris.len());
    assert_eq!(
        p["outcomes"],
        json!([
            ["a", "ok"],
            ["b", "ok"],
            ["none", "not_found"],
            ["broken", "error"]
        ])
    );
    let base = &proxy.base;
    assert_eq!(
        strings(&p["timemaps"]),
        ["link", "json", "cdxj"].map(|f| format!("{base}/timemap/{f}/http://example.com/"))
    );
    assert_eq!(
        p["timegate"],
        format!("{base}/timegate/http://example.com/")
    );
    assert_eq!(
        (p["h1"].as_u64(), p["lang"].as_str()),
        (Some(1), Some("en"))
    );
    assert_eq!(p["unlabelled"], 0);
    assert_eq!(
        page["archives"],
        json!([
            ["a", "active"],
            ["b", "active"],
            ["none", "active"],
            ["broken", "active"]
        ])
    );
    assert_eq!(
        page["searched"],
        json!(["/ui/http://example.com/", "http://example.com/"])
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_r_no_archive_holds_is_a_404_page_that_says_so() {
    let none = SimulatedArchive::start(Behaviour::Status(404, "no".into()))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("none", &none)])).await;
    let r = client()
        .get(format!("{}/ui/http://nothing.example/", proxy.base))
        .send()
        .await
        .expect("page");
    assert_eq!(r.status(), 404);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    let base = proxy.base.clone();
    let page = in_browser(move |browser| {
        let tab = open(browser, &format!("{base}/ui/http://nothing.example/"));
        js(
            &tab,
            "[document.getElementById('problem').textContent, document.querySelectorAll('svg g.year').length, document.querySelector('tr.outcome').dataset.status, !!document.getElementById('link-timegate')]",
        )
    })
    .await;
    // No memento, so no TimeGate link that could only fail.
    assert_eq!(page[3], false, "{page}");
    assert!(
        page[0]
            .as_str()
            .is_some_and(|t| t.contains("no memento of http://nothing.example/")),
        "{page}"
    );
    assert_eq!(
        (page[1].as_u64(), page[2].as_str()),
        (Some(0), Some("not_found"))
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_box_refuses_what_is_not_a_web_address_and_the_lookup_is_rate_limited() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.server.rate_limit = 0.01;
    config.server.rate_burst = 1;
    let proxy = start_proxy(config).await;
    let base = &proxy.base;
    let get = |path: &str| client().get(format!("{base}{path}")).send();
    let r = get("/ui?url=javascript%3Aalert(1)").await.expect("search");
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    let body = r.text().await.expect("body");
    assert!(body.contains("<h1>400 Bad Request</h1>"), "{body}");
    // What was typed stays in the box, to be corrected (escaped, as every value on a page).
    assert!(
        body.contains(r#"value="javascript:alert(1)""#),
        "the search box lost what was typed: {body}"
    );
    let r = get("/ui?url=").await.expect("empty search");
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/");
    let r = get("/ui?url=example.com%2Fa%20b%3Fq%3D%22x%22")
        .await
        .expect("search");
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"],
        "/ui/http://example.com/a%20b?q=%22x%22"
    );
    // The lookup can fan out, so it is limited like /timemap; the other pages are not.
    assert_eq!(
        get("/ui/http://example.com/").await.expect("page").status(),
        200
    );
    assert_eq!(
        get("/ui/http://example.com/").await.expect("page").status(),
        429
    );
    for path in ["/", "/ui/admin", "/ui?url=example.com"] {
        let status = get(path).await.expect("page").status().as_u16();
        assert!([200, 303].contains(&status), "{path}: {status}");
    }
    proxy.stop().await;
}

/// A cached entry whose every outside value is crafted: the URI-R, an archive id, a detail, URI-Ms.
fn hostile_entry(uri_r: &str) -> Entry {
    let at = |ts: &str| parse_14digit(ts).expect("timestamp");
    let memento = |uri_m: &str, ts: &str| ListedMemento {
        uri_m: uri_m.into(),
        datetime: at(ts),
        absent: None,
    };
    Entry {
        version: ENTRY_FORMAT_VERSION,
        uri_r: uri_r.to_string(),
        contributions: vec![
            Contribution {
                archive: "<b>evil</b>".to_string(),
                answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
                fetched_at: at("20240101"),
                mementos: vec![
                    memento(
                        "http://evil.test/\"><script>window.pwned=1</script>",
                        "2001",
                    ),
                    memento("javascript:window.pwned=2", "2002"),
                    memento(
                        "http://evil.test/x' onfocus='window.pwned=3' autofocus='",
                        "2003",
                    ),
                    memento(
                        "http://evil.test/<img src=x onerror=window.pwned=4>",
                        "2004",
                    ),
                ],
                last_error: None,
                listing: Default::default(),
            },
            Contribution {
                archive: "<i>worse</i>".to_string(),
                answer: ArchiveAnswer::failed(
                    ArchiveStatus::Error,
                    Some(500),
                    Some("<img src=x onerror=window.pwned=5><b>bold</b>".to_string()),
                ),
                fetched_at: at("20240101"),
                mementos: Vec::new(),
                last_error: None,
                listing: Default::default(),
            },
        ],
        fetched_at: chrono::Utc::now(),
        checked_at: chrono::Utc::now(),
        fresh_until: None,
        loose: 4,
        strict: 4,
        archives: 2,
        history: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_uris_ids_and_details_inject_nothing() {
    let quiet = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[])))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("quiet", &quiet)])).await;
    // The URI-R percent-encoded as a whole, as a link may carry it: decoded, it holds markup.
    let encoded = "http%3A%2F%2Fe.com%2F%22%3E%3Cscript%3Ewindow.pwned%3D6%3C%2Fscript%3E";
    let uri_r = tmproxy::uri_r::UriR::parse(encoded).expect("a URI-R");
    assert!(uri_r.as_str().contains("<script>"));
    proxy
        .store_entry(uri_r.as_str(), hostile_entry(uri_r.as_str()))
        .await;
    let url = format!("{}/ui/{encoded}", proxy.base);
    let r = client().get(&url).send().await.expect("page");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-cache"], "HIT");

    let dom = in_browser(move |browser| {
        let tab = open(browser, &url);
        screenshot(&tab, "hostile.png");
        js(
            &tab,
            r#"{
              pwned: typeof window.pwned,
              scripts: document.querySelectorAll('script').length,
              injected: document.querySelectorAll('main b, main i, main img, [onfocus], [onerror], [autofocus]').length,
              hrefs: [...document.querySelectorAll('a[href]')].map(a => a.protocol),
              links: document.querySelectorAll('a.memento').length,
              texts: document.querySelectorAll('.memento-text').length,
              h1: document.getElementById('uri-r').textContent,
              ids: [...document.querySelectorAll('tr.outcome th')].map(t => t.textContent),
              detail: document.querySelector('tr.outcome[data-status=error] td.detail').textContent,
              legend: [...document.querySelectorAll('.legend li')].map(l => l.textContent.trim())
            }"#,
        )
    })
    .await;
    assert_eq!(dom["pwned"], "undefined", "{dom}");
    assert_eq!(
        (dom["scripts"].as_u64(), dom["injected"].as_u64()),
        (Some(0), Some(0)),
        "{dom}"
    );
    assert!(
        strings(&dom["hrefs"])
            .iter()
            .all(|p| p == "http:" || p == "https:"),
        "{dom}"
    );
    // The javascript: URI-M never reaches the page (the aggregate drops it); the rest are links.
    assert_eq!(
        (dom["links"].as_u64(), dom["texts"].as_u64()),
        (Some(3), Some(0)),
        "{dom}"
    );
    assert_eq!(dom["h1"], uri_r.as_str());
    assert_eq!(dom["ids"], json!(["<b>evil</b>", "<i>worse</i>"]));
    assert_eq!(
        dom["detail"],
        "<img src=x onerror=window.pwned=5><b>bold</b>"
    );
    assert_eq!(dom["legend"], json!(["<b>evil</b>: 3"]));
    proxy.stop().await;
}

/// Types `token` into the admin page's field and submits with the button.
fn submit_token(tab: &Tab, token: &str) {
    tab.wait_for_element("#token")
        .and_then(|e| e.click().map(|_| ()))
        .expect("the token field");
    tab.type_str(token).expect("typing");
    tab.wait_for_element("#load")
        .and_then(|e| e.click().map(|_| ()))
        .expect("the button");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_page_shows_stats_and_jobs_with_the_token_and_why_not_without() {
    let (cdx, _fake, cdx_task) = crate::sampling_job::fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    crate::sampling_job::index_file(&inputs);
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = TOKEN.into();
    config.cache.path = dir.path().join("data/cache").display().to_string();
    config.sampling.input_dir = inputs.display().to_string();
    config.sampling.allowed_urls = vec![cdx.parse().expect("an http URL")];
    config.sampling.rate_limit = 0.0;
    let proxy = start_proxy(config).await;
    let base = proxy.base.clone();
    // One lookup for the counters, one job for the list.
    let r = client()
        .get(format!("{base}/timemap/link/http://example.com/"))
        .send()
        .await
        .expect("lookup");
    assert_eq!(r.status(), 200);
    let r = client()
        .post(format!("{base}/admin/sampling/jobs"))
        .bearer_auth(TOKEN)
        .body(json!({"input": "index.txt", "cdx_api": cdx}).to_string())
        .send()
        .await
        .expect("POST");
    assert_eq!(r.status(), 201);
    let job: Value = serde_json::from_str(&r.text().await.expect("body")).expect("JSON");
    let job_id = job["id"].as_str().expect("an id").to_string();

    let seen = in_browser(move |browser| {
        let tab = open(browser, &format!("{base}/ui/admin"));
        submit_token(&tab, "not-the-token");
        tab.wait_for_element("#message.error").expect("an error shown");
        let wrong = js(&tab, "[document.getElementById('message').textContent, document.querySelectorAll('#stats table').length]");

        let tab = open(browser, &format!("{base}/ui/admin"));
        submit_token(&tab, TOKEN);
        tab.wait_for_element("#jobs tr.job").expect("the jobs listed");
        let right = js(
            &tab,
            r#"{
              stats: Object.fromEntries([...document.querySelectorAll('#stats table.stats tr')].map(r => [r.querySelector('th').textContent, r.querySelector('td').textContent])),
              jobs: [...document.querySelectorAll('#jobs tr.job')].map(r => [r.querySelector('th').textContent, r.dataset.state]),
              progress: document.querySelectorAll('#jobs progress[aria-label]').length,
              url: location.href,
              headings: [...document.querySelectorAll('h1, h2, h3')].map(h => h.tagName)
            }"#,
        );
        screenshot(&tab, "admin.png");
        json!({"wrong": wrong, "right": right})
    })
    .await;

    let wrong = &seen["wrong"];
    assert!(
        wrong[0].as_str().is_some_and(|m| m.contains("401")),
        "{wrong}"
    );
    assert_eq!(wrong[1], 0);
    let right = &seen["right"];
    assert_eq!(right["stats"]["misses"], "1", "{right}");
    assert_eq!(right["stats"]["policy"], "conditional", "{right}");
    assert!(right["stats"]["hot.entries"].is_string(), "{right}");
    let jobs = right["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0][0], job_id.as_str());
    assert_eq!(right["progress"], 1);
    assert!(!right["url"].as_str().unwrap_or(TOKEN).contains(TOKEN));
    let headings = strings(&right["headings"]);
    assert_eq!(headings.iter().filter(|h| *h == "H1").count(), 1);
    assert_eq!(headings[..3], ["H1", "H2", "H3"]);
    proxy.stop().await;
    cdx_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_admin_listener_the_admin_page_lives_there() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("a", &a)]);
    config.admin.token = TOKEN.into();
    let proxy = start_proxy_with_admin_listener(config).await;
    let base = proxy.base.clone();
    let admin_base = proxy.admin_base.clone().expect("an admin listener");
    let seen = in_browser(move |browser| {
        let public = open(browser, &format!("{base}/ui/admin"));
        let public = js(
            &public,
            "[!!document.getElementById('elsewhere'), !!document.getElementById('token'), document.querySelectorAll('script').length]",
        );
        let tab = open(browser, &format!("{admin_base}/ui/admin"));
        submit_token(&tab, TOKEN);
        tab.wait_for_element("#stats table.stats").expect("the stats");
        let stats = js(&tab, "document.querySelectorAll('#stats table.stats tr').length");
        // The header links to the admin page only where the admin API is.
        let links = "document.querySelectorAll('nav a[href=\"/ui/admin\"]').length";
        let admin_links_here = js(&tab, links);
        let home = open(browser, &format!("{base}/"));
        let admin_links_public = js(&home, links);
        let error = open(browser, &format!("{base}/ui?url=mailto:x"));
        let admin_links_error = js(&error, links);
        json!({"public": public, "stats": stats, "links": [admin_links_public, admin_links_error, admin_links_here]})
    })
    .await;
    assert_eq!(seen["public"], json!([true, false, 0]));
    assert!(seen["stats"].as_u64().unwrap_or(0) > 3, "{seen}");
    assert_eq!(seen["links"], json!([0, 0, 1]), "{seen}");
    proxy.stop().await;
}

/// The home page's HTML, fetched plainly (no browser).
async fn home_page(base: &str) -> String {
    client()
        .get(format!("{base}/"))
        .send()
        .await
        .expect("home")
        .text()
        .await
        .expect("body")
}

#[tokio::test]
async fn the_header_links_to_the_admin_page_where_the_admin_api_is() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let home = home_page(&proxy.base).await;
    assert!(
        home.contains("<a href=\"/ui/admin\">Administration</a>"),
        "{home}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn every_page_has_an_icon_and_favicon_ico_answers() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let home = home_page(&proxy.base).await;
    let icon = home
        .split(r#"<link rel="icon" href=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no icon link in {home}"))
        .to_owned();
    for path in [icon.as_str(), "/favicon.ico"] {
        let r = client()
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("icon");
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["content-type"], "image/svg+xml", "{path}");
        let body = r.text().await.expect("body");
        assert!(body.starts_with("<svg"), "{path}: {body}");
    }
    proxy.stop().await;
}

/// The page at a desktop's width and a phone's: a time axis with every year of the span in its
/// place (the gap years labelled, the bars spaced by their years), the chart filling its box at
/// 1280 px, and nothing wider than the window at 400 px (the chart scrolls inside its box, each
/// archive's row stacks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_has_a_time_axis_fills_1280_px_and_fits_400_px() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20030101000000",
        "20100101000000",
    ])))
    .await
    .expect("archive a");
    let b = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20050101000000"])))
        .await
        .expect("archive b");
    let broken = SimulatedArchive::start(Behaviour::Status(
        500,
        "a long reason that goes on and on without a single space to break it at".repeat(3),
    ))
    .await
    .expect("archive broken");
    let proxy = start_proxy(config_for(&[("a", &a), ("b", &b), ("broken", &broken)])).await;
    let page = format!("{}/ui/http://example.com/", proxy.base);
    let home = format!("{}/", proxy.base);
    let measure = r#"{
      ticks: [...document.querySelectorAll('svg g.tick')].map(g => Number(g.dataset.year)),
      bars: Object.fromEntries([...document.querySelectorAll('svg g.year')].map(g => [g.dataset.year, Number(g.querySelector('rect').getAttribute('x'))])),
      svg: document.querySelector('svg[role=img]').getBoundingClientRect().width,
      box: (() => { const c = document.querySelector('.chart'); const s = getComputedStyle(c); return c.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); })(),
      page: document.documentElement.scrollWidth,
      window: window.innerWidth,
      rows: [...document.querySelectorAll('tr.outcome')].map(r => r.getBoundingClientRect().right)
    }"#;
    let wide = in_browser_sized(1280, 1000, {
        let page = page.clone();
        move |browser| {
            let tab = open(browser, &page);
            screenshot(&tab, "timemap-1280.png");
            js(&tab, measure)
        }
    })
    .await;
    let (narrow, narrow_home) = in_browser_sized(1280, 1000, move |browser| {
        let tab = open_at(browser, &page, 400);
        screenshot(&tab, "timemap-400.png");
        let narrow = js(&tab, measure);
        let tab = open_at(browser, &home, 400);
        screenshot(&tab, "home-400.png");
        let home = js(
            &tab,
            "{page: document.documentElement.scrollWidth, window: window.innerWidth}",
        );
        (narrow, home)
    })
    .await;
    // The axis: 2001 to 2010, every year labelled, the empty ones too.
    assert_eq!(
        wide["ticks"],
        json!((2001..=2010).collect::<Vec<i32>>()),
        "{wide}"
    );
    let x = |y: &str| {
        wide["bars"][y]
            .as_f64()
            .unwrap_or_else(|| panic!("bar {y}: {wide}"))
    };
    // Years to scale: 2001→2005 is four years' width, 2005→2010 five.
    let ratio = (x("2010") - x("2005")) / (x("2005") - x("2001"));
    assert!((ratio - 1.25).abs() < 0.02, "{ratio}: {wide}");
    let (svg, boxed) = (
        wide["svg"].as_f64().unwrap_or(0.0),
        wide["box"].as_f64().unwrap_or(0.0),
    );
    assert!(
        svg >= 0.95 * boxed && boxed > 900.0,
        "the chart is {svg} px of its {boxed} px box"
    );
    for (what, m) in [
        ("the TimeMap page", &narrow),
        ("the home page", &narrow_home),
    ] {
        assert!(
            m["page"].as_f64() <= m["window"].as_f64(),
            "{what} scrolls sideways at 400 px: {m}"
        );
    }
    let window = narrow["window"].as_f64().unwrap_or(0.0);
    assert_eq!(window, 400.0, "{narrow}");
    let rows = narrow["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{narrow}");
    assert!(
        rows.iter()
            .all(|r| r.as_f64().is_some_and(|r| r <= window + 0.5)),
        "a row is cut at 400 px: {narrow}"
    );
    proxy.stop().await;
}

/// Runs `f` in a fresh browser of this window size, as [`in_browser`] does.
async fn in_browser_sized<T: Send + 'static>(
    width: u32,
    height: u32,
    f: impl FnOnce(&Browser) -> T + Send + 'static,
) -> T {
    let run = tokio::task::spawn_blocking(move || {
        let browser = launch_sized(width, height);
        f(&browser)
    });
    match run.await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
