//! Redirects and `rel="timemap"` pages stay with the archive: never to another port or host than
//! its own (unless listed in `redirect_hosts`), never to a loopback, private or link-local
//! address it is not itself on, judged on the address a name resolves to. Canaries record
//! whether anyone came.

use crate::support::{
    archive_config, config_for, get_json, memento_uris, outcome, serve_fake, start_proxy,
    start_proxy_resolving,
};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tmproxy::config::{Config, RedirectHost};
use tmproxy::upstream::resolve::fixed_lookup;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

async fn timemap_archive(on: SocketAddr) -> SimulatedArchive {
    SimulatedArchive::start_on(on, Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("simulated archive starts")
}

/// A fake archive on 127.0.0.1 that answers every request with `302 Location: to`.
async fn redirector(to: String) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().fallback(move || {
        let to = to.clone();
        async move { (StatusCode::FOUND, [(header::LOCATION, to)]).into_response() }
    });
    serve_fake(app).await
}

/// `good` (a well-behaved archive, so the answer is a 200 with every outcome) plus `id` on
/// `timemap` with these `redirect_hosts`.
fn config_with(good: &SimulatedArchive, id: &str, timemap: &str, hosts: &[String]) -> Config {
    let mut config = config_for(&[("good", good)]);
    let mut a = archive_config(id, timemap, timemap);
    a.redirect_hosts = redirect_hosts(hosts);
    config.archives.push(a);
    config
}

/// `redirect_hosts` entries, read as the config loader reads them.
fn redirect_hosts(hosts: &[String]) -> Vec<RedirectHost> {
    hosts
        .iter()
        .map(|h| RedirectHost::parse(h).expect("a host"))
        .collect()
}

fn detail(json: &serde_json::Value, id: &str) -> String {
    outcome(json, id)["detail"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The archive failed on a refused hop whose detail names `target`, and `canary` was never asked.
fn assert_refused(json: &serde_json::Value, id: &str, target: &str) {
    assert_eq!(outcome(json, id)["status"], "error", "{json}");
    let d = detail(json, id);
    assert!(d.contains(target) && d.contains("refused"), "{d}");
    assert_eq!(outcome(json, "good")["status"], "ok", "{json}");
}

#[tokio::test]
async fn a_redirect_to_another_port_on_loopback_is_refused_and_never_asked() {
    let good = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let canary = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let target = format!("http://{}/timemap/link/{URI_R}", canary.addr);
    let (at, task) = redirector(target.clone()).await;
    let config = config_with(&good, "hostile", &format!("http://{at}/timemap/link/"), &[]);
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_refused(&json, "hostile", &canary.addr.to_string());
    assert_eq!(canary.requests(), 0, "the canary port was never asked");
    task.abort();
}

#[tokio::test]
async fn a_redirect_to_127_0_0_2_is_refused_even_when_listed() {
    let good = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    // Linux routes all of 127.0.0.0/8 to lo: a second loopback host for the test.
    let elsewhere = timemap_archive(([127, 0, 0, 2], 0).into()).await;
    let target = format!("http://{}/timemap/link/{URI_R}", elsewhere.addr);
    let (at, task) = redirector(target).await;
    let prefix = format!("http://{at}/timemap/link/");
    let mut config = config_with(&good, "plain", &prefix, &[]);
    // Listing a loopback host does not make it reachable: only the archive's own host may be one.
    let mut listed = archive_config("listed", &prefix, &prefix);
    listed.redirect_hosts = redirect_hosts(&[elsewhere.addr.to_string()]);
    config.archives.push(listed);
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_refused(&json, "plain", "127.0.0.2");
    assert_refused(&json, "listed", "127.0.0.2");
    assert!(detail(&json, "listed").contains("loopback"), "{json}");
    assert_eq!(elsewhere.requests(), 0, "127.0.0.2 was never asked");
    task.abort();
}

/// No DNS here: a fixed map stands in for it, through the same resolver production uses.
/// `metadata.test` is the cloud metadata address; `sneaky.test` points at the canary on
/// 127.0.0.1, so a connection made before the check would show on its counter.
#[tokio::test]
async fn a_name_resolving_to_a_forbidden_address_is_refused_before_any_connect() {
    let good = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let canary = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let loopback: IpAddr = [127, 0, 0, 1].into();
    let lookup = fixed_lookup(HashMap::from([
        ("archive.test".to_string(), vec![loopback]),
        (
            "metadata.test".to_string(),
            vec!["169.254.169.254".parse().expect("ip")],
        ),
        ("sneaky.test".to_string(), vec![loopback]),
    ]));
    let port = canary.addr.port();
    let (meta_at, meta_task) =
        redirector(format!("http://metadata.test:{port}/latest/meta-data/")).await;
    let (sneaky_at, sneaky_task) =
        redirector(format!("http://sneaky.test:{port}/timemap/link/{URI_R}")).await;
    // Listed, so the host rule lets them through and the address check alone must refuse.
    let mut config = config_with(
        &good,
        "meta",
        &format!("http://{meta_at}/timemap/link/"),
        &[format!("metadata.test:{port}")],
    );
    let sneaky = format!("http://{sneaky_at}/timemap/link/");
    let mut a = archive_config("sneaky", &sneaky, &sneaky);
    a.redirect_hosts = redirect_hosts(&[format!("sneaky.test:{port}")]);
    config.archives.push(a);
    // An archive configured by name on a loopback address is its own host: asked as usual.
    let own = format!("http://archive.test:{}/timemap/link/", good.addr.port());
    config.archives.push(archive_config("own", &own, &own));
    let proxy = start_proxy_resolving(config, tmproxy::app::ClockChoice::System, lookup).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_refused(&json, "meta", "metadata.test");
    let d = detail(&json, "meta");
    assert!(
        d.contains("169.254.169.254") && d.contains("link-local"),
        "{d}"
    );
    assert_refused(&json, "sneaky", "sneaky.test");
    assert!(detail(&json, "sneaky").contains("loopback"), "{json}");
    assert_eq!(
        canary.requests(),
        0,
        "nothing connected to what the names pointed at"
    );
    assert_eq!(outcome(&json, "own")["status"], "ok", "{json}");
    meta_task.abort();
    sneaky_task.abort();
}

/// A `rel="timemap"` page on the archive's own origin, whose URL then redirects off-site.
#[tokio::test]
async fn a_same_origin_page_that_redirects_off_site_is_refused() {
    let good = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let canary = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let target = format!("http://{}/timemap/link/{URI_R}", canary.addr);
    let page_two_asked = Arc::new(AtomicUsize::new(0));
    let asked = page_two_asked.clone();
    let app = axum::Router::new()
        .route(
            "/page2",
            axum::routing::get(move || {
                asked.fetch_add(1, Ordering::SeqCst);
                let target = target.clone();
                async move { (StatusCode::FOUND, [(header::LOCATION, target)]).into_response() }
            }),
        )
        .fallback(|| async {
            let body = format!(
                "<{URI_R}>; rel=\"original\",\n\
                 </page2>; rel=\"timemap\"; type=\"application/link-format\",\n\
                 <http://paged.example/web/20030101000000/{URI_R}>; rel=\"memento\"; datetime=\"Wed, 01 Jan 2003 00:00:00 GMT\"\n"
            );
            ([(header::CONTENT_TYPE, "application/link-format")], body).into_response()
        });
    let (at, task) = serve_fake(app).await;
    let config = config_with(&good, "paged", &format!("http://{at}/timemap/link/"), &[]);
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(
        page_two_asked.load(Ordering::SeqCst),
        1,
        "the page link was followed"
    );
    assert_refused(&json, "paged", &canary.addr.to_string());
    assert_eq!(canary.requests(), 0, "the off-site target was never asked");
    assert!(
        !memento_uris(&json)
            .iter()
            .any(|u| u.contains("paged.example")),
        "nothing from an archive that sent us off-site is served: {json}"
    );
    task.abort();
}

/// When an archive moves, its operator lists the new host and the redirect is followed.
#[tokio::test]
async fn a_move_listed_in_redirect_hosts_is_followed() {
    let good = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let new_home = timemap_archive(([127, 0, 0, 1], 0).into()).await;
    let (at, task) = redirector(format!("http://{}/timemap/link/{URI_R}", new_home.addr)).await;
    let config = config_with(
        &good,
        "moved",
        &format!("http://{at}/timemap/link/"),
        &[new_home.addr.to_string()],
    );
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(outcome(&json, "moved")["status"], "ok", "{json}");
    assert_eq!(new_home.requests(), 1);
    assert!(memento_uris(&json).contains(&new_home.uri_m("20010101000000", URI_R)));
    task.abort();
}

/// pywb answers with a 307 to the same host: still followed (tests/it/pywb.rs and
/// against_pywb.rs do the same against the real pywb).
#[tokio::test]
async fn a_same_host_redirect_is_followed() {
    let moved = SimulatedArchive::start(Behaviour::Redirect(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("starts");
    let proxy = start_proxy(config_for(&[("moved", &moved)])).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(outcome(&json, "moved")["status"], "ok");
    assert_eq!(moved.requests(), 2, "the 307 and the page it points to");
}
