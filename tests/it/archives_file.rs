//! `[upstream] archives_file`: an archive list in the shape of MemGator's
//! `archives.json`, loaded through the real config loader and served by the real app in front
//! of simulated archives and pywb: its entries are the archives, `ignore: true` ones listed but never
//! asked, `[[archives]]` of config.toml after them.

use crate::support::{client, get_json, start_proxy};
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

#[tokio::test]
async fn a_memgator_shaped_list_is_what_the_app_asks() {
    let start = |captures: &'static [&'static str]| async move {
        SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(captures)))
            .await
            .expect("simulated archive")
    };
    let (a, ignored, mine) = (
        start(&["20010101000000"]).await,
        start(&["20020101000000"]).await,
        start(&["20030101000000"]).await,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    // As MemGator writes it, with a field of its own ours does not use.
    let list = format!(
        r#"[
  {{"id": "a.example", "name": "Archive A", "timemap": "{}", "timegate": "{}", "probability": 0.9}},
  {{"id": "gone.example", "name": "Gone (DEFUNCT)", "timemap": "{}", "timegate": "{}", "ignore": true}}
]"#,
        a.timemap_prefix(),
        a.timegate_prefix(),
        ignored.timemap_prefix(),
        ignored.timegate_prefix()
    );
    std::fs::write(dir.path().join("archives.json"), list).expect("write list");
    let toml = format!(
        "[upstream]\narchives_file = \"{}\"\ntimeout = \"5s\"\ndeadline = \"5s\"\n\n\
         [[archives]]\nid = \"mine\"\ntimemap = \"{}\"\ntimegate = \"{}\"\n",
        dir.path().join("archives.json").display(),
        mine.timemap_prefix(),
        mine.timegate_prefix()
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, toml).expect("write config");
    let (mut config, _) = Config::load(Some(&config_path)).expect("config loads");
    config.cache.path = dir.path().join("cache").display().to_string();
    let proxy = start_proxy(config).await;

    let (status, archives) = get_json(&format!("{}/archives", proxy.base)).await;
    assert_eq!(status, 200);
    let listed: Vec<(String, String, bool)> = archives
        .as_array()
        .expect("a list")
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap_or("").to_owned(),
                a["name"].as_str().unwrap_or("").to_owned(),
                a["enabled"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("a.example".into(), "Archive A".into(), true),
            ("gone.example".into(), "Gone (DEFUNCT)".into(), false),
            ("mine".into(), "mine".into(), true),
        ]
    );
    let r = client()
        .get(format!("{}/timemap/link/http://example.com/", proxy.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-memento-count"], "2");
    assert_eq!(
        (a.requests(), ignored.requests(), mine.requests()),
        (1, 0, 1)
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_hostile_list_stops_the_start_naming_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list =
        r#"[{"id": "x", "timemap": "javascript:alert(1)//", "timegate": "https://x.example/"}]"#;
    std::fs::write(dir.path().join("archives.json"), list).expect("write list");
    let config_path = dir.path().join("config.toml");
    std::fs::write(
        &config_path,
        format!(
            "[upstream]\narchives_file = \"{}\"\n",
            dir.path().join("archives.json").display()
        ),
    )
    .expect("write config");
    let e = Config::load(Some(&config_path)).expect_err("refused");
    assert_eq!(e.key, "archives_file[0].timemap");
    assert!(e.to_string().contains("\"x\""), "{e}");
}

/// The same with pywb as the listed archive: a list in MemGator's shape naming a pywb
/// collection's TimeMap and TimeGate is aggregated as the built-in list would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memgator_shaped_list_naming_pywb_is_aggregated() {
    use crate::pywb::{Capture, PywbArchive};
    let caps = vec![
        Capture::new("http://example.com/", "20150101000000", "<html>a</html>"),
        Capture::new("http://example.com/", "20190101000000", "<html>b</html>"),
    ];
    let pywb = tokio::task::spawn_blocking(move || PywbArchive::start("listed", &caps))
        .await
        .expect("pywb starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let list = format!(
        r#"[{{"id": "pywb", "name": "A pywb", "timemap": "{}", "timegate": "{}", "ignore": false}}]"#,
        pywb.timemap_prefix(),
        pywb.timegate_prefix()
    );
    std::fs::write(dir.path().join("archives.json"), list).expect("write list");
    let toml = format!(
        "[upstream]\narchives_file = \"{}\"\n",
        dir.path().join("archives.json").display()
    );
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, toml).expect("write config");
    let (mut config, _) = Config::load(Some(&config_path)).expect("config loads");
    config.cache.path = dir.path().join("cache").display().to_string();
    let proxy = start_proxy(config).await;
    let (status, json) =
        get_json(&format!("{}/timemap/json/http://example.com/", proxy.base)).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(crate::support::memento_uris(&json).len(), 2, "{json}");
    assert_eq!(crate::support::outcome(&json, "pywb")["status"], "ok");
    proxy.stop().await;
}
