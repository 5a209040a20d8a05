//! `/memento/proxy` asks a memento's raw form first: against fake archives that answer the raw
//! form (`…id_/`, or a template's path) otherwise than the replay page they list and record what
//! they are asked, the raw bytes are served with `X-Memento-Raw: true`; a raw form that fails
//! (404, 500, no answer in time) falls back to the listed URI-M with `X-Memento-Raw: false`;
//! `raw = false` never asks it; a template is followed; a raw form off the archive's prefixes is
//! never asked. Against pywb, `id_` gives the capture's bytes exactly.

use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, config_for, start_proxy};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tmproxy::config::{ArchiveConfig, Config};
use tmproxy_core::cdx::replay::Replay;
use tmproxy_core::raw_memento::RawForm;
use tmproxy_testkit::mementos::{Listing, MementoArchive, MementoBody, Special};

const REPLAY: &str = "<html>the replay page, rewritten, with a banner</html>";
const RAW: &str = "<html>the capture as archived</html>";

fn body(text: &str) -> MementoBody {
    MementoBody {
        bytes: Arc::new(text.as_bytes().to_vec()),
        encoding: None,
    }
}

/// Lists one replay-form memento per URI-R under `/arch/web/`, or its `id_` form for a URI-R
/// naming `listed-raw`.
fn listing() -> Listing {
    Arc::new(|addr, uri_r| {
        let modifier = if uri_r.contains("listed-raw") {
            "id_"
        } else {
            "mp_"
        };
        vec![format!(
            "http://{addr}/arch/web/20010101000000{modifier}/{uri_r}"
        )]
    })
}

/// A fake archive whose replay pages are [`REPLAY`] and whose paths holding a marker are
/// answered as `specials` say.
async fn archive(specials: Vec<(&'static str, Special)>) -> MementoArchive {
    MementoArchive::start_with(listing(), body(REPLAY), specials)
        .await
        .expect("archive starts")
}

/// The archive configured under `/arch/` on the fake, with `tune` applied.
fn config(a: &MementoArchive, tune: impl FnOnce(&mut ArchiveConfig)) -> Config {
    let mut entry = archive_config(
        "a",
        &a.url("/arch/timemap/link/"),
        &a.url("/arch/timegate/"),
    );
    entry.timeout = Some(Duration::from_secs(4));
    tune(&mut entry);
    let mut config = config_for(&[]);
    config.archives = vec![entry];
    config.upstream.failures_before_dormant = 0;
    config
}

fn template(text: &str) -> RawForm {
    RawForm::Template(Replay::parse(text).expect("a template"))
}

/// GETs the proxied memento of `uri_r`: status, `X-Memento-Raw`, the body.
async fn proxied(base: &str, uri_r: &str) -> (u16, String, String) {
    let r = client()
        .get(format!("{base}/memento/proxy/2001/{uri_r}"))
        .send()
        .await
        .expect("GET");
    let status = r.status().as_u16();
    let raw = r
        .headers()
        .get("x-memento-raw")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("absent")
        .to_string();
    (status, raw, r.text().await.expect("body"))
}

fn paths(a: &MementoArchive) -> Vec<String> {
    a.memento_requests().into_iter().map(|(_, p)| p).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_form_is_served_where_the_archive_has_it() {
    let a = archive(vec![
        ("gone", Special::Status(404)),
        ("id_/", Special::Body(body(RAW))),
    ])
    .await;
    let proxy = start_proxy(config(&a, |_| {})).await;
    let uri_r = "http://raw.example/page";
    let r = client()
        .get(format!("{}/memento/proxy/2001/{uri_r}", proxy.base))
        .header("origin", "https://client.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    assert_eq!(h["x-memento-raw"], "true");
    let exposed = h["access-control-expose-headers"].to_str().expect("ascii");
    assert!(exposed.contains("x-memento-raw"), "{exposed}");
    // Every protection still holds, and the Link names the memento as listed.
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["content-security-policy"], "sandbox; default-src 'none'");
    assert_eq!(h["content-type"], "text/html");
    let link = h["link"].to_str().expect("ascii");
    let listed = a.url(&format!("/arch/web/20010101000000mp_/{uri_r}"));
    assert!(
        link.contains(&format!("<{listed}>; rel=\"memento\"")),
        "{link}"
    );
    assert_eq!(r.text().await.expect("body"), RAW);
    assert_eq!(
        paths(&a),
        [format!("/arch/web/20010101000000id_/{uri_r}")],
        "the raw form alone is asked"
    );

    // A HEAD asks the raw form's head.
    let r = client()
        .head(format!("{}/memento/proxy/2001/{uri_r}", proxy.base))
        .send()
        .await
        .expect("HEAD");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-memento-raw"], "true");
    let last = a.memento_requests().pop().expect("asked");
    assert_eq!(
        last,
        (
            "HEAD".into(),
            format!("/arch/web/20010101000000id_/{uri_r}")
        )
    );

    // A URI-M listed in its raw form is asked once, as listed.
    let before = paths(&a).len();
    let (status, raw, text) = proxied(&proxy.base, "http://listed-raw.example/").await;
    assert_eq!((status, raw.as_str(), text.as_str()), (200, "true", RAW));
    assert_eq!(paths(&a).len(), before + 1, "{:?}", paths(&a));
    // Its 404 is its answer, as any listed URI-M's: not asked again.
    let (status, raw, _) = proxied(&proxy.base, "http://listed-raw.example/gone").await;
    assert_eq!((status, raw.as_str()), (404, "true"));
    assert_eq!(paths(&a).len(), before + 2, "{:?}", paths(&a));
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_form_that_fails_falls_back_to_the_listed_uri_m() {
    for (name, special) in [
        ("404", Special::Status(404)),
        ("500", Special::Status(500)),
        ("no answer", Special::Hang),
    ] {
        let a = archive(vec![("id_/", special)]).await;
        let proxy = start_proxy(config(&a, |_| {})).await;
        let uri_r = "http://fails.example/";
        let started = Instant::now();
        let (status, raw, text) = proxied(&proxy.base, uri_r).await;
        let took = started.elapsed();
        assert_eq!(status, 200, "{name}: {text}");
        assert_eq!((raw.as_str(), text.as_str()), ("false", REPLAY), "{name}");
        assert_eq!(
            paths(&a),
            [
                format!("/arch/web/20010101000000id_/{uri_r}"),
                format!("/arch/web/20010101000000mp_/{uri_r}"),
            ],
            "{name}: the raw form, then the listed URI-M"
        );
        // Within the archive's one timeout (4 s): the raw form had half of it.
        assert!(took < Duration::from_secs(4), "{name}: took {took:?}");
        if name == "no answer" {
            assert!(took >= Duration::from_secs(2), "{name}: took {took:?}");
        }
        proxy.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_both_fail_the_answer_names_both() {
    let a = archive(vec![("/arch/web/", Special::Status(503))]).await;
    let proxy = start_proxy(config(&a, |_| {})).await;
    let (status, raw, text) = proxied(&proxy.base, "http://both.example/").await;
    assert_eq!((status, raw.as_str()), (502, "absent"), "{text}");
    assert!(
        text.contains("20010101000000mp_/http://both.example/"),
        "{text}"
    );
    assert!(text.contains("its raw form, asked first"), "{text}");
    assert!(
        text.contains("20010101000000id_/http://both.example/"),
        "{text}"
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_false_asks_the_listed_uri_m_only() {
    let a = archive(vec![("id_/", Special::Body(body(RAW)))]).await;
    let proxy = start_proxy(config(&a, |e| e.raw = RawForm::Off)).await;
    let uri_r = "http://off.example/";
    let (status, raw, text) = proxied(&proxy.base, uri_r).await;
    assert_eq!(
        (status, raw.as_str(), text.as_str()),
        (200, "false", REPLAY)
    );
    assert_eq!(paths(&a), [format!("/arch/web/20010101000000mp_/{uri_r}")]);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_template_is_followed() {
    let a = archive(vec![("/arch/raw/", Special::Body(body(RAW)))]).await;
    let form = template(&a.url("/arch/raw/{timestamp}/{url}"));
    let proxy = start_proxy(config(&a, |e| e.raw = form)).await;
    let uri_r = "http://templated.example/p?q=1";
    let (status, raw, text) = proxied(&proxy.base, uri_r).await;
    assert_eq!((status, raw.as_str(), text.as_str()), (200, "true", RAW));
    assert_eq!(paths(&a), [format!("/arch/raw/20010101000000/{uri_r}")]);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_form_off_the_archives_prefixes_is_never_asked() {
    let bystander = archive(vec![]).await;
    let a = archive(vec![
        ("id_/", Special::Body(body(RAW))),
        ("/canary", Special::Body(body(RAW))),
    ])
    .await;
    let uri_r = "http://off-prefix.example/";
    // A template on another host, and one on the archive's own host outside its prefix.
    for off in [
        bystander.url("/arch/web/{timestamp}id_/{url}"),
        a.url("/canary/{timestamp}/{url}"),
    ] {
        let form = template(&off);
        let proxy = start_proxy(config(&a, |e| e.raw = form)).await;
        let before = paths(&a).len();
        let (status, raw, text) = proxied(&proxy.base, uri_r).await;
        assert_eq!(
            (status, raw.as_str(), text.as_str()),
            (200, "false", REPLAY),
            "{off}"
        );
        assert_eq!(
            paths(&a)[before..],
            [format!("/arch/web/20010101000000mp_/{uri_r}")],
            "{off}"
        );
        proxy.stop().await;
    }
    assert!(
        bystander.requests().is_empty(),
        "{:?}",
        bystander.requests()
    );

    // The `id_` rewrite of an archive whose prefix holds 14 digits lands on that segment,
    // outside the prefix: not asked.
    let listing: Listing = Arc::new(|addr, uri_r| {
        vec![format!(
            "http://{addr}/20000101000000/20010101000000/{uri_r}"
        )]
    });
    let odd = MementoArchive::start_with(
        listing,
        body(REPLAY),
        vec![("id_/", Special::Body(body(RAW)))],
    )
    .await
    .expect("archive starts");
    let mut cfg = config(&odd, |_| {});
    cfg.archives[0] = archive_config(
        "a",
        &odd.url("/20000101000000/timemap/link/"),
        &odd.url("/20000101000000/"),
    );
    let proxy = start_proxy(cfg).await;
    let (status, raw, text) = proxied(&proxy.base, uri_r).await;
    assert_eq!(
        (status, raw.as_str(), text.as_str()),
        (200, "false", REPLAY)
    );
    assert_eq!(
        paths(&odd),
        [format!("/20000101000000/20010101000000/{uri_r}")]
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pywb_serves_the_raw_form_as_captured_and_the_replay_page_on_fallback() {
    let original = concat!(
        "<html><head><title>raw</title></head>",
        "<body><a href=\"/next\">the 2018 capture</a></body></html>"
    );
    let page = "http://example.com/raw";
    let caps = vec![Capture::new(page, "20180101000000", original)];
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("raw", &caps))
        .await
        .expect("pywb starts");
    let entry = |raw: RawForm| {
        let mut config = Config::default();
        config.upstream.deadline = Duration::from_secs(10);
        config.upstream.timeout = Duration::from_secs(10);
        let mut a = archive_config("pywb", &pywb.timemap_prefix(), &pywb.timegate_prefix());
        a.raw = raw;
        config.archives = vec![a];
        config
    };

    // pywb lists `…mp_/`; its `id_` form is the capture's bytes, unmodified.
    let proxy = start_proxy(entry(RawForm::Id)).await;
    let (status, raw, text) = proxied(&proxy.base, page).await;
    assert_eq!((status, raw.as_str()), (200, "true"), "{text}");
    assert_eq!(text, original, "pywb's id_ bytes are the record's");
    proxy.stop().await;

    // A raw form pywb does not hold (a URL never captured, under the collection): 404 there,
    // so the listed replay page is served, rewritten by pywb.
    let missing = template(&format!(
        "{}/raw/{{timestamp}}id_/{{url}}-never-captured",
        pywb.base_url()
    ));
    let proxy = start_proxy(entry(missing)).await;
    let (status, raw, text) = proxied(&proxy.base, page).await;
    assert_eq!((status, raw.as_str()), (200, "false"), "{text}");
    assert!(text.contains("the 2018 capture"), "{text}");
    assert!(
        text.contains("<!-- WB Insert -->"),
        "not pywb's replay page: {text}"
    );
    proxy.stop().await;

    // Off, the replay page as listed.
    let proxy = start_proxy(entry(RawForm::Off)).await;
    let (status, raw, text) = proxied(&proxy.base, page).await;
    assert_eq!((status, raw.as_str()), (200, "false"), "{text}");
    assert!(
        text.contains("<!-- WB Insert -->"),
        "not pywb's replay page: {text}"
    );
    proxy.stop().await;
}
