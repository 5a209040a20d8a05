//! Routing on the real app: with `mode = "learned"` a miss asks only
//! the archives whose profiles say they may hold the URI-R, a skipped archive is told as
//! `skipped`/`routing` (archives[], X-Memento-Archives, /metrics, /archives), `no-cache` with
//! `Prefer: archives=all` asks every one, exploration finds an archive that starts holding a
//! domain, profiles survive a restart of the binary, and a skip never shrinks a cached entry.

use crate::support::{
    archive_config, client, get_json, metric_value, outcome, start_proxy, ServeProcess,
};
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::config::{Config, RoutingMode};

/// A fake archive: counts the TimeMaps it is asked for, and lists `n` mementos for a URI-R
/// containing one of its `holds` substrings (404 for any other).
#[derive(Clone, Default)]
struct Fake {
    /// Its id, in its URI-Ms: each archive's are its own.
    id: String,
    asked: Arc<AtomicUsize>,
    holds: Arc<Mutex<Vec<(String, usize)>>>,
}

impl Fake {
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }

    /// From now on it lists `n` mementos for URI-Rs containing `part`.
    fn hold(&self, part: &str, n: usize) {
        let mut holds = self.holds.lock().expect("holds");
        holds.retain(|(p, _)| p != part);
        holds.push((part.to_string(), n));
    }
}

async fn timemap(State(fake): State<Fake>, uri: Uri) -> Response {
    fake.asked.fetch_add(1, Ordering::SeqCst);
    let target = uri.path_and_query().map_or("", |pq| pq.as_str());
    let Some(uri_r) = target.strip_prefix("/timemap/link/") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let held = {
        let holds = fake.holds.lock().expect("holds");
        holds
            .iter()
            .find(|(p, _)| uri_r.contains(p.as_str()))
            .map(|(_, n)| *n)
    };
    let Some(n) = held.filter(|n| *n > 0) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let id = &fake.id;
    let mut body = format!("<{uri_r}>; rel=\"original\"");
    for year in 2001..2001 + n {
        body.push_str(&format!(
            ",\n<http://{id}.archive.test/web/{year}0101000000/{uri_r}>; rel=\"memento\"; datetime=\"Mon, 01 Jan {year} 00:00:00 GMT\""
        ));
    }
    ([("content-type", "application/link-format")], body).into_response()
}

/// Fake archives `ia`, `pt` and `uk`, each on its own 127.0.0.1:0.
struct Archives {
    fakes: Vec<(
        &'static str,
        Fake,
        std::net::SocketAddr,
        tokio::task::JoinHandle<()>,
    )>,
}

impl Archives {
    async fn start() -> Archives {
        let mut fakes = Vec::new();
        for id in ["ia", "pt", "uk"] {
            let fake = Fake {
                id: id.to_string(),
                ..Fake::default()
            };
            let app = axum::Router::new()
                .fallback(timemap)
                .with_state(fake.clone());
            let (addr, task) = crate::support::serve_fake(app).await;
            fakes.push((id, fake, addr, task));
        }
        Archives { fakes }
    }

    fn get(&self, id: &str) -> &Fake {
        &self.fakes.iter().find(|f| f.0 == id).expect("a fake").1
    }

    /// The TOML `[[archives]]` naming them (for the binary).
    fn toml(&self) -> String {
        self.fakes
            .iter()
            .map(|(id, _, addr, _)| {
                format!("[[archives]]\nid = \"{id}\"\ntimemap = \"http://{addr}/timemap/link/\"\ntimegate = \"http://{addr}/timegate/\"\n\n")
            })
            .collect()
    }

    /// A config naming them, routing `mode`, deciding on 3 observations, never exploring.
    fn config(&self, mode: RoutingMode) -> Config {
        let mut config = Config::default();
        config.upstream.deadline = Duration::from_secs(5);
        config.upstream.timeout = Duration::from_secs(5);
        config.archives = self
            .fakes
            .iter()
            .map(|(id, _, addr, _)| {
                archive_config(
                    id,
                    &format!("http://{addr}/timemap/link/"),
                    &format!("http://{addr}/timegate/"),
                )
            })
            .collect();
        config.routing.mode = mode;
        config.routing.min_evidence = 3;
        config.routing.explore = 0.0;
        config
    }
}

impl Drop for Archives {
    fn drop(&mut self) {
        for f in &self.fakes {
            f.3.abort();
        }
    }
}

/// The JSON TimeMap of `uri_r` and its X-Memento-Archives.
async fn timemap_json(base: &str, uri_r: &str) -> (serde_json::Value, String) {
    let resp = client()
        .get(format!("{base}/timemap/json/{uri_r}"))
        .send()
        .await
        .expect("timemap");
    assert_eq!(resp.status(), 200, "{uri_r}");
    let header = header_text(&resp, "x-memento-archives");
    let json = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    (json, header)
}

fn header_text(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stops an in-process proxy as `tmproxy serve` stops: wound down, its profiles saved.
async fn stop_saving(proxy: crate::support::Proxy) {
    if let Some(state) = &proxy.state {
        tmproxy::app::wind_down(state, Duration::from_secs(5)).await;
    }
    proxy.stop().await;
}

const SKIPPED_UK: &str = r#"tmproxy_archive_requests_skipped_total{archive="uk",reason="routing"}"#;

/// pt and ia hold `.onlypt.org`, uk holds nothing.
fn only_pt_holds(archives: &Archives) {
    archives.get("ia").hold(".onlypt.org", 1);
    archives.get("pt").hold(".onlypt.org", 2);
}

#[tokio::test]
async fn a_domain_one_archive_holds_stops_being_asked_of_the_others_after_min_evidence() {
    let archives = Archives::start().await;
    only_pt_holds(&archives);
    let proxy = start_proxy(archives.config(RoutingMode::Learned)).await;
    for i in 0..6 {
        let uri_r = format!("http://www.onlypt.org/page{i}");
        let (json, header) = timemap_json(&proxy.base, &uri_r).await;
        let uk = outcome(&json, "uk");
        if i < 3 {
            assert_eq!(uk["status"], "not_found", "miss {i}: still learning");
            assert!(header.contains("uk=not_found;n=0;dup=0"), "{header}");
        } else {
            assert_eq!(uk["status"], "skipped", "miss {i}: {json}");
            assert_eq!(uk["detail"], "routing");
            assert!(
                header.contains("uk=skipped;n=0;dup=0;detail=routing"),
                "{header}"
            );
        }
        // pt holds the domain and ia is always asked.
        assert_eq!(outcome(&json, "pt")["status"], "ok");
        assert_eq!(outcome(&json, "ia")["status"], "ok");
        assert_eq!(json["mementos"]["list"].as_array().map(Vec::len), Some(3));
    }
    assert_eq!(archives.get("uk").asked(), 3, "asked only while learning");
    assert_eq!(archives.get("pt").asked(), 6);
    assert_eq!(archives.get("ia").asked(), 6);
    assert_eq!(metric_value(&proxy.base, SKIPPED_UK).await, Some(3.0));
    let pt_skips = r#"tmproxy_archive_requests_skipped_total{archive="pt",reason="routing"}"#;
    assert_eq!(metric_value(&proxy.base, pt_skips).await, Some(0.0));

    let (status, reports) = get_json(&format!("{}/archives", proxy.base)).await;
    assert_eq!(status, 200);
    let uk = reports
        .as_array()
        .and_then(|r| r.iter().find(|a| a["id"] == "uk"))
        .expect("uk reported");
    assert_eq!(uk["routing"]["skipped"], 3);
    assert_eq!(uk["routing"]["skip_share"], 0.5, "3 skips over 6 misses");
    // host, registrable domain and TLD, each with uk's tally.
    assert_eq!(uk["routing"]["profile_keys"], 3, "{uk}");
    // A domain nobody has seen yet asks uk again: the skip is by what was learned.
    archives.get("ia").hold("elsewhere", 1);
    let (json, _) = timemap_json(&proxy.base, "http://elsewhere.example.net/").await;
    assert_eq!(outcome(&json, "uk")["status"], "not_found");
    assert_eq!(archives.get("uk").asked(), 4);
}

#[tokio::test]
async fn no_cache_with_prefer_archives_all_asks_every_archive() {
    let archives = Archives::start().await;
    only_pt_holds(&archives);
    let proxy = start_proxy(archives.config(RoutingMode::Learned)).await;
    for i in 0..3 {
        timemap_json(&proxy.base, &format!("http://www.onlypt.org/learn{i}")).await;
    }
    assert_eq!(archives.get("uk").asked(), 3);
    // The cached page, refreshed at the client's word, asking uk although its profile says no.
    let url = format!("{}/timemap/json/http://www.onlypt.org/learn0", proxy.base);
    let resp = client()
        .get(&url)
        .header("cache-control", "no-cache")
        .header("prefer", "archives=all")
        .send()
        .await
        .expect("timemap");
    assert_eq!(resp.status(), 200);
    assert_eq!(header_text(&resp, "x-cache"), "REFRESH");
    assert_eq!(header_text(&resp, "preference-applied"), "archives=all");
    assert!(header_text(&resp, "vary").to_lowercase().contains("prefer"));
    assert!(header_text(&resp, "x-memento-archives").contains("uk=not_found"));
    assert_eq!(archives.get("uk").asked(), 4, "asked, whatever its profile");
    // Quoted and on a miss too; without the preference the next miss skips uk again.
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://www.onlypt.org/new",
            proxy.base
        ))
        .header("prefer", "archives=\"all\"")
        .send()
        .await
        .expect("timemap");
    assert_eq!(header_text(&resp, "preference-applied"), "archives=all");
    assert_eq!(archives.get("uk").asked(), 5);
    let (json, _) = timemap_json(&proxy.base, "http://www.onlypt.org/newer").await;
    assert_eq!(outcome(&json, "uk")["status"], "skipped");
    assert_eq!(archives.get("uk").asked(), 5);
    // A HIT asked nobody: nothing was applied.
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://www.onlypt.org/newer",
            proxy.base
        ))
        .header("prefer", "archives=all")
        .send()
        .await
        .expect("timemap");
    assert_eq!(header_text(&resp, "x-cache"), "HIT");
    assert_eq!(header_text(&resp, "preference-applied"), "");
    // `all` among archive ids is not the preference: an unknown archive, refused.
    let resp = client()
        .get(format!(
            "{}/timemap/json/http://www.onlypt.org/x",
            proxy.base
        ))
        .header("prefer", "archives=\"all ia\"")
        .send()
        .await
        .expect("timemap");
    assert_eq!(resp.status(), 400);
}

#[tokio::test]
async fn mode_all_never_skips_but_still_learns() {
    let archives = Archives::start().await;
    only_pt_holds(&archives);
    let proxy = start_proxy(archives.config(RoutingMode::All)).await;
    for i in 0..6 {
        let (json, header) =
            timemap_json(&proxy.base, &format!("http://www.onlypt.org/p{i}")).await;
        assert_eq!(outcome(&json, "uk")["status"], "not_found");
        assert!(!header.contains("skipped"), "{header}");
    }
    assert_eq!(archives.get("uk").asked(), 6);
    assert_eq!(metric_value(&proxy.base, SKIPPED_UK).await, Some(0.0));
    let (_, reports) = get_json(&format!("{}/archives", proxy.base)).await;
    let uk = reports
        .as_array()
        .and_then(|r| r.iter().find(|a| a["id"] == "uk"))
        .expect("uk reported");
    assert_eq!(uk["routing"]["skip_share"], 0.0);
    assert_eq!(
        uk["routing"]["profile_keys"], 3,
        "learned all the same: {uk}"
    );
}

#[tokio::test]
async fn exploration_rediscovers_an_archive_that_starts_holding_a_domain() {
    let archives = Archives::start().await;
    only_pt_holds(&archives);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = archives.config(RoutingMode::Learned);
    config.cache.path = dir.path().join("cache").display().to_string();

    // Learned: uk holds nothing there, so it is skipped.
    let proxy = start_proxy(config.clone()).await;
    for i in 0..4 {
        timemap_json(&proxy.base, &format!("http://www.onlypt.org/a{i}")).await;
    }
    assert_eq!(archives.get("uk").asked(), 3);
    stop_saving(proxy).await;

    // uk starts holding the domain. Never exploring, nothing would ever tell.
    archives.get("uk").hold(".onlypt.org", 1);
    let proxy = start_proxy(config.clone()).await;
    let (json, _) = timemap_json(&proxy.base, "http://www.onlypt.org/b0").await;
    assert_eq!(outcome(&json, "uk")["status"], "skipped");
    stop_saving(proxy).await;

    // Every miss explores for a while: uk answers, and its profile turns.
    config.routing.explore = 1.0;
    let proxy = start_proxy(config.clone()).await;
    for i in 0..4 {
        let (json, _) = timemap_json(&proxy.base, &format!("http://www.onlypt.org/c{i}")).await;
        assert_eq!(outcome(&json, "uk")["status"], "ok", "explored miss {i}");
    }
    stop_saving(proxy).await;

    // Back to no exploration: uk is asked again, and lists what it now holds.
    config.routing.explore = 0.0;
    let proxy = start_proxy(config).await;
    let before = archives.get("uk").asked();
    let (json, header) = timemap_json(&proxy.base, "http://www.onlypt.org/d0").await;
    assert_eq!(outcome(&json, "uk")["status"], "ok", "{header}");
    assert_eq!(archives.get("uk").asked(), before + 1);
    stop_saving(proxy).await;
}

#[tokio::test]
async fn profiles_learned_by_the_binary_survive_a_restart_and_keep_skipping() {
    let archives = Archives::start().await;
    only_pt_holds(&archives);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    {
        let mut f = std::fs::File::create(&config).expect("config");
        let cache = dir.path().join("data").join("cache");
        write!(
            f,
            "[cache]\npath = {:?}\n\n[routing]\nmode = \"learned\"\nmin_evidence = 3\nexplore = 0.0\n\n{}",
            cache.display().to_string(),
            archives.toml()
        )
        .expect("write");
    }
    let mut serve = ServeProcess::start(&config);
    for i in 0..3 {
        timemap_json(&serve.base, &format!("http://www.onlypt.org/r{i}")).await;
    }
    assert_eq!(archives.get("uk").asked(), 3);
    serve.term();
    let status = serve.exit_within(Duration::from_secs(20)).await;
    assert!(status.success(), "{}", serve.log());
    assert!(
        serve.log().contains("routing profiles saved"),
        "{}",
        serve.log()
    );

    let serve = ServeProcess::start(&config);
    assert!(
        serve.log().contains("routing profiles restored"),
        "{}",
        serve.log()
    );
    let (json, header) = timemap_json(&serve.base, "http://www.onlypt.org/after").await;
    assert_eq!(outcome(&json, "uk")["status"], "skipped", "{header}");
    assert_eq!(archives.get("uk").asked(), 3, "not asked after the restart");
}

#[tokio::test]
async fn a_skipped_archive_never_replaces_or_shrinks_a_cached_entry() {
    for policy in ["conditional", "merge"] {
        let archives = Archives::start().await;
        // uk holds this one page of the domain, and nothing else there.
        archives.get("ia").hold(".mixed.org", 1);
        archives.get("uk").hold("www.mixed.org/kept", 2);
        let mut config = archives.config(RoutingMode::Learned);
        config.cache.policy = policy.parse().expect("a policy");
        config.routing.min_share = 0.5;
        let proxy = start_proxy(config).await;
        let kept = "http://www.mixed.org/kept";
        let (json, _) = timemap_json(&proxy.base, kept).await;
        assert_eq!(outcome(&json, "uk")["mementos"], 2, "{policy}");
        // Three pages uk does not hold: 1 of 4 URI-Rs, under min_share, so uk is skipped.
        for i in 0..3 {
            timemap_json(&proxy.base, &format!("http://www.mixed.org/other{i}")).await;
        }
        let (json, _) = timemap_json(&proxy.base, "http://www.mixed.org/other3").await;
        assert_eq!(outcome(&json, "uk")["status"], "skipped", "{policy}");

        // The cached page refreshed with uk skipped, while ia gained a memento: without uk's
        // part kept this would be case 4 (conditional replaces) or case 6.
        archives.get("ia").hold(".mixed.org", 2);
        let asked = archives.get("uk").asked();
        let resp = client()
            .get(format!("{}/timemap/json/{kept}", proxy.base))
            .header("cache-control", "no-cache")
            .send()
            .await
            .expect("refresh");
        assert_eq!(header_text(&resp, "x-cache"), "REFRESH", "{policy}");
        assert_eq!(header_text(&resp, "x-cache-case"), "2", "{policy}");
        let json: serde_json::Value =
            serde_json::from_str(&resp.text().await.expect("body")).expect("json");
        assert_eq!(
            archives.get("uk").asked(),
            asked,
            "{policy}: uk was not asked"
        );
        let uk = outcome(&json, "uk");
        assert_eq!(uk["mementos"], 2, "{policy}: uk's mementos kept: {json}");
        assert_eq!(uk["status"], "ok", "{policy}");
        assert_eq!(uk["last_error"]["status"], "skipped", "{policy}");
        assert_eq!(uk["last_error"]["detail"], "routing", "{policy}");
        assert_eq!(
            json["mementos"]["list"].as_array().map(Vec::len),
            Some(4),
            "{policy}: ia's two and uk's two"
        );
        proxy.stop().await;
    }
}
