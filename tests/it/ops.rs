//! What an operator sees: the log line per request and per failing archive, dormancy in the log,
//! `/metrics`, `/archives` and `/about`, on the real binary against archives that fail in
//! different ways.

use crate::support::{archive_config, client, config_for, ServeProcess};
use std::time::Duration;
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

/// A port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Writes `config` (with its cache in `dir`) where the binary reads it.
fn write(config: &mut Config, dir: &tempfile::TempDir) -> std::path::PathBuf {
    config.cache.path = dir.path().join("cache").display().to_string();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml::to_string(&config).expect("toml")).expect("config");
    file
}

async fn get_text(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = client().get(url).send().await.expect("request");
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.text().await.expect("body"))
}

/// The value of the one series `series` (name and labels as written) in a metrics text.
fn series(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Waits (at most 10 s, for a loaded machine) until the log holds `part`: the log is written
/// by a thread of its own.
async fn logged(server: &ServeProcess, part: &str) -> String {
    for _ in 0..500 {
        let log = server.log();
        if log.contains(part) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no {part:?} in the log:\n{}", server.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_metrics_and_archives_say_which_archive_fails_and_why() {
    let good = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let five = SimulatedArchive::start(Behaviour::Status(503, "busy".into()))
        .await
        .expect("archive");
    let slow = SimulatedArchive::start(Behaviour::HangBeforeHeaders)
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("good", &good), ("five", &five), ("slow", &slow)]);
    let refused = format!("http://127.0.0.1:{}", closed_port());
    config.archives.push(archive_config(
        "refused",
        &format!("{refused}/timemap/link/"),
        &format!("{refused}/timegate/"),
    ));
    config.archives[2].timeout = Some(Duration::from_millis(500));
    config.upstream.failures_before_dormant = 2;
    config.upstream.dormant_for = Duration::from_secs(3600);
    let file = write(&mut config, &dir);
    let server = ServeProcess::start(&file);
    let base = server.base.clone();

    let mut ids = Vec::new();
    for page in ["a", "b", "c"] {
        let url = format!("{base}/timemap/link/http://example.com/{page}");
        let (status, headers, _) = get_text(&url).await;
        assert_eq!(status, 200);
        ids.push(headers["x-request-id"].to_str().expect("ascii").to_owned());
    }
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "{ids:?}");

    // One INFO line per request, in the span that names it.
    let log = logged(&server, &format!("id={}", ids[2])).await;
    let answered: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("answered") && l.contains("route=\"timemap\""))
        .collect();
    assert_eq!(answered.len(), 3, "{log}");
    for (line, id) in answered.iter().zip(&ids) {
        for part in [
            " INFO ",
            &format!("id={id}"),
            "method=GET",
            "status=200",
            "cache=\"MISS\"",
            "ms=",
        ] {
            assert!(line.contains(part), "{part} in {line}");
        }
    }
    assert!(
        answered[0].contains("uri_r=\"http://example.com/a\""),
        "{}",
        answered[0]
    );
    // Each failing archive is a WARN with its kind and the root cause, twice, then it sleeps.
    for (archive, kind) in [
        ("five", "kind=http status 503"),
        ("slow", "kind=timeout"),
        ("refused", "kind=connect"),
    ] {
        let failed: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(&format!("archive={archive} ")) && l.contains("archive failed"))
            .collect();
        assert_eq!(failed.len(), 2, "{archive}:\n{log}");
        assert!(
            failed
                .iter()
                .all(|l| l.contains(" WARN ") && l.contains(kind)),
            "{failed:?}"
        );
        let slept = log
            .lines()
            .filter(|l| l.contains(&format!("archive={archive} ")) && l.contains("archive dormant"))
            .count();
        assert_eq!(slept, 1, "{archive}:\n{log}");
    }
    assert!(
        log.contains("Connection refused"),
        "the root cause is kept:\n{log}"
    );
    assert!(!log.contains("archive=good "), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "no colour codes in a log that is not a terminal"
    );

    let (status, headers, metrics) = get_text(&format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("text/plain"));
    for (name, want) in [
        (
            "tmproxy_http_requests_total{route=\"timemap\",status=\"200\"}",
            3.0,
        ),
        (
            "tmproxy_http_request_duration_seconds_count{route=\"timemap\"}",
            3.0,
        ),
        (
            "tmproxy_archive_requests_total{archive=\"good\",outcome=\"ok\"}",
            3.0,
        ),
        (
            "tmproxy_archive_requests_total{archive=\"five\",outcome=\"error\"}",
            2.0,
        ),
        (
            "tmproxy_archive_requests_total{archive=\"five\",outcome=\"skipped\"}",
            1.0,
        ),
        (
            "tmproxy_archive_requests_total{archive=\"slow\",outcome=\"timeout\"}",
            2.0,
        ),
        (
            "tmproxy_archive_duration_seconds_count{archive=\"good\"}",
            3.0,
        ),
        (
            "tmproxy_archive_duration_seconds_count{archive=\"refused\"}",
            2.0,
        ),
        ("tmproxy_archive_dormant{archive=\"five\"}", 1.0),
        ("tmproxy_archive_dormant{archive=\"good\"}", 0.0),
        ("tmproxy_cache_requests_total{result=\"miss\"}", 3.0),
        ("tmproxy_cache_misses_total", 3.0),
        ("tmproxy_archive_fetches_total{archive=\"good\"}", 3.0),
    ] {
        assert_eq!(series(&metrics, name), Some(want), "{name} in\n{metrics}");
    }
    // Every series the Grafana dashboard in docs/ queries is one this server exports.
    let dashboard = include_str!("../../docs/grafana-dashboard.json");
    let mut queried: Vec<&str> = dashboard
        .match_indices("tmproxy_")
        .map(|(at, _)| {
            let rest = &dashboard[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    queried.sort_unstable();
    queried.dedup();
    assert!(queried.len() > 10, "{queried:?}");
    for name in queried {
        let exported = metrics.lines().any(|l| {
            l.starts_with(name) && matches!(l.as_bytes().get(name.len()), Some(b'{' | b' '))
        });
        assert!(
            exported || name == "tmproxy_",
            "{name} is not in /metrics:\n{metrics}"
        );
    }
    // The slow archive's turns took about its timeout, and no more than the deadline.
    let slow_seconds = series(
        &metrics,
        "tmproxy_archive_duration_seconds_sum{archive=\"slow\"}",
    );
    assert!(
        slow_seconds.is_some_and(|s| (0.9..10.0).contains(&s)),
        "{slow_seconds:?}"
    );

    let (status, headers, body) = get_text(&format!("{base}/archives")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert!(body.ends_with('\n'));
    let list: serde_json::Value = serde_json::from_str(&body).expect("json");
    let by_id = |id: &str| {
        list.as_array()
            .and_then(|a| a.iter().find(|x| x["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {list}"))
    };
    let five = by_id("five");
    assert_eq!(five["state"], "dormant", "{five}");
    assert!(
        five["dormant_until"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{five}"
    );
    assert_eq!(five["last_outcome"], "skipped");
    assert_eq!(
        (
            five["counts"]["error"].as_u64(),
            five["counts"]["skipped"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let good = by_id("good");
    assert_eq!(
        (good["state"].as_str(), good["enabled"].as_bool()),
        (Some("active"), Some(true))
    );
    assert_eq!(good["last_outcome"], "ok");
    assert!(
        good["latency_ms"]["p50"].as_u64().is_some() && good["last_at"].is_string(),
        "{good}"
    );
    assert_eq!(good["name"], "test archive good");

    let (status, headers, about) = get_text(&format!("{base}/about")).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .expect("ascii")
        .starts_with("text/plain"));
    assert!(about.contains("## Upstream Archives"), "{about}");
    assert!(
        about.contains("[test archive five](five) - (DORMANT)"),
        "{about}"
    );
    assert!(
        about.contains(&format!("TimeMap:  {base}/timemap/")),
        "{about}"
    );
    // Every route, as MemGator's /about lists its own: the memento formats and proxy too.
    for route in [
        "/timemap/{FORMAT}/{N}/{URI-R}",
        "/timegate/{URI-R}",
        "/memento/{DATETIME}/{URI-R}",
        "/memento/{FORMAT}/{DATETIME}/{URI-R}",
        "/memento/proxy/{DATETIME}/{URI-R}",
        "/api/{FORMAT}/{DATETIME}/{URI-R}",
        "/archives",
        "/healthz",
        "/admin/",
        "/metrics",
    ] {
        assert!(
            about.contains(&format!("{base}{route}")),
            "{route}: {about}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_back_from_dormancy_is_logged_once() {
    let flaky = SimulatedArchive::start(Behaviour::Status(500, String::new()))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("flaky", &flaky)]);
    config.upstream.failures_before_dormant = 1;
    // The clock the health is judged by counts whole seconds.
    config.upstream.dormant_for = Duration::from_secs(1);
    let file = write(&mut config, &dir);
    let server = ServeProcess::start(&file);
    let url = |p: &str| format!("{}/timemap/link/http://example.com/{p}", server.base);
    assert_eq!(get_text(&url("1")).await.0, 502);
    logged(&server, "archive dormant").await;
    flaky.set_behaviour(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, _, body) = get_text(&url("2")).await;
    assert_eq!(status, 200, "{body}\n{}", server.log());
    let log = logged(&server, "archive back").await;
    let back: Vec<&str> = log.lines().filter(|l| l.contains("archive back")).collect();
    assert_eq!(back.len(), 1, "{log}");
    assert!(
        back[0].contains(" INFO ") && back[0].contains("archive=flaky"),
        "{log}"
    );
    assert_eq!(get_text(&url("3")).await.0, 200);
    let log = logged(&server, "uri_r=\"http://example.com/3\"").await;
    assert_eq!(log.matches("archive back").count(), 1, "{log}");
}

/// `[log] format = "json"`: every line one JSON object, the failure's fields its keys.
#[tokio::test]
async fn the_json_log_is_one_object_per_line() {
    let five = SimulatedArchive::start(Behaviour::Status(503, String::new()))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config_for(&[("five", &five)]);
    let file = write(&mut config, &dir);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tmproxy"))
            .args(["timemap", "http://example.com/", "--config"])
            .arg(&file)
            .env_remove("TMPROXY_CONFIG")
            .env("TMPROXY_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .output()
            .expect("tmproxy runs")
    })
    .await
    .expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let objects: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for line in stderr.lines() {
        assert!(
            line.starts_with('{') || line.starts_with("tmproxy: "),
            "{line}"
        );
    }
    let failed = objects
        .iter()
        .find(|o| o["message"] == "archive failed")
        .unwrap_or_else(|| panic!("no failure in\n{stderr}"));
    assert_eq!(failed["level"], "WARN");
    assert_eq!(failed["archive"], "five");
    assert_eq!(failed["kind"], "http status 503");
}

/// A name that does not resolve is a `dns` failure naming the host, not "client error (Connect)".
#[tokio::test]
async fn an_archive_whose_name_does_not_resolve_is_a_dns_failure() {
    let good = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("good", &good)]);
    config.archives.push(archive_config(
        "nowhere",
        "http://nowhere.test/timemap/link/",
        "http://nowhere.test/timegate/",
    ));
    let lookup = tmproxy::upstream::resolve::fixed_lookup(std::collections::HashMap::new());
    let proxy =
        crate::support::start_proxy_resolving(config, tmproxy::app::ClockChoice::System, lookup)
            .await;
    let (status, v) =
        crate::support::get_json(&format!("{}/timemap/json/http://example.com/", proxy.base)).await;
    assert_eq!(status, 200);
    let detail = crate::support::outcome(&v, "nowhere")["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        detail.starts_with("dns: failed to resolve nowhere.test"),
        "{detail}"
    );
    proxy.stop().await;
}

/// With no network every archive fails to resolve at once: the 502 says that first, and no
/// archive is made dormant for what the network did. An archive that fails alone beside one
/// that answers is still its own fault, and `/archives` counts its failures as its dormancy
/// message does.
#[tokio::test]
async fn offline_every_archive_unreached_is_the_network_not_the_archives() {
    let lookup = || tmproxy::upstream::resolve::fixed_lookup(std::collections::HashMap::new());
    let nowhere = |id: &str| {
        archive_config(
            id,
            &format!("http://{id}.test/timemap/link/"),
            &format!("http://{id}.test/timegate/"),
        )
    };
    let mut config = config_for(&[]);
    config.archives = ["one", "two", "three"].map(nowhere).to_vec();
    config.upstream.failures_before_dormant = 2;
    let proxy =
        crate::support::start_proxy_resolving(config, tmproxy::app::ClockChoice::System, lookup())
            .await;
    for i in 0..4 {
        let (status, _, body) = get_text(&format!(
            "{}/timemap/link/http://example.com/{i}",
            proxy.base
        ))
        .await;
        assert_eq!(status, 502, "{body}");
        assert!(body.contains("no archive could be reached"), "{body}");
        assert!(body.contains("offline"), "{body}");
    }
    let (_, archives) = crate::support::get_json(&format!("{}/archives", proxy.base)).await;
    for a in archives.as_array().expect("a list") {
        assert_eq!(a["state"], "active", "{a}");
        assert_eq!(a["consecutive_failures"], 0, "{a}");
    }
    proxy.stop().await;

    // One archive answering, one never reached: that one is at fault, and sleeps.
    let good = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let mut config = config_for(&[("good", &good)]);
    config.archives.push(nowhere("gone"));
    config.upstream.failures_before_dormant = 2;
    let proxy =
        crate::support::start_proxy_resolving(config, tmproxy::app::ClockChoice::System, lookup())
            .await;
    for i in 0..3 {
        let url = format!("{}/timemap/json/http://example.com/{i}", proxy.base);
        let (status, _) = crate::support::get_json(&url).await;
        assert_eq!(status, 200);
    }
    let (_, archives) = crate::support::get_json(&format!("{}/archives", proxy.base)).await;
    let gone = archives
        .as_array()
        .and_then(|all| all.iter().find(|a| a["id"] == "gone"))
        .expect("the unreachable archive listed");
    assert_eq!(gone["state"], "dormant", "{gone}");
    assert_eq!(gone["consecutive_failures"], 2, "{gone}");
    let (_, v) =
        crate::support::get_json(&format!("{}/timemap/json/http://example.com/9", proxy.base))
            .await;
    let detail = crate::support::outcome(&v, "gone")["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        detail.starts_with("dormant after 2 consecutive failures"),
        "{detail}"
    );
    proxy.stop().await;
}
