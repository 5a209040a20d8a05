//! The `tmproxy` binary itself: `timemap`, `serve` (start, refuse a bad config or a link-less
//! listen address, stop on SIGTERM), `health`.

use crate::support::{client, ServeProcess};
use std::io::Write;
use std::process::Command;
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const BIN: &str = env!("CARGO_BIN_EXE_tmproxy");

/// A config file naming the archives, with its cache in a temp dir (returned to keep it alive).
fn config_file(
    archives: &[(&str, &SimulatedArchive)],
) -> (tempfile::NamedTempFile, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(
        f,
        "[upstream]\ndeadline = \"5s\"\n\n[cache]\npath = {:?}\n",
        dir.path().join("cache").display().to_string()
    )
    .expect("write");
    for (id, a) in archives {
        writeln!(
            f,
            "[[archives]]\nid = \"{id}\"\nname = \"{id}\"\ntimemap = \"{}\"\ntimegate = \"{}\"\n",
            a.timemap_prefix(),
            a.timegate_prefix()
        )
        .expect("write");
    }
    (f, dir)
}

/// Runs the binary off the async runtime, with no inherited TMPROXY_* settings.
async fn run(args: Vec<String>) -> std::process::Output {
    run_with_env(args, &[]).await
}

/// As [`run`], with these environment variables set.
async fn run_with_env(args: Vec<String>, env: &[(&str, &str)]) -> std::process::Output {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(&args)
            .env_remove("TMPROXY_CONFIG")
            .env("RUST_LOG", "warn")
            .envs(env)
            .output()
            .expect("tmproxy runs")
    })
    .await
    .expect("join")
}

#[tokio::test]
async fn timemap_subcommand_prints_the_aggregate() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive");
    let (cfg, _cache) = config_file(&[("a", &a)]);
    let path = cfg.path().display().to_string();
    let out = run(vec![
        "timemap".into(),
        "http://example.com/".into(),
        "--format".into(),
        "cdxj".into(),
        "--config".into(),
        path.clone(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("!context"), "{text}");
    assert_eq!(
        text.lines().filter(|l| !l.starts_with('!')).count(),
        2,
        "{text}"
    );

    let out = run(vec![
        "timemap".into(),
        "http://example.com/".into(),
        "--config".into(),
        path,
    ])
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "<{}>; rel=\"first memento\"",
            a.uri_m("20010101000000", "http://example.com/")
        )),
        "{text}"
    );
}

#[tokio::test]
async fn timemap_subcommand_exits_1_when_nothing_is_found() {
    let a = SimulatedArchive::start(Behaviour::Status(404, String::new()))
        .await
        .expect("archive");
    let (cfg, _cache) = config_file(&[("a", &a)]);
    let out = run(vec![
        "timemap".into(),
        "http://example.com/".into(),
        "--config".into(),
        cfg.path().display().to_string(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("no memento of http://example.com/ in any archive"));
}

#[tokio::test]
async fn a_bad_config_is_refused_with_file_key_and_reason() {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(f, "[upstream]\ntimeout = \"10x\"").expect("write");
    let path = f.path().display().to_string();
    let out = run(vec![
        "serve".into(),
        "--config".into(),
        path.clone(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&path)
            && err.contains("upstream.timeout")
            && err.contains("\"10x\" is not a duration"),
        "{err}"
    );
}

#[tokio::test]
async fn serve_answers_and_stops_on_sigterm() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let (cfg, _cache) = config_file(&[("a", &a)]);
    let mut server = ServeProcess::start_with(
        cfg.path(),
        &["--sim-clock"],
        &[("TMPROXY_ADMIN_TOKEN", "cli-token")],
    );
    let base = server.base.clone();
    let resp = client()
        .get(format!("{base}/timemap/link/http://example.com/"))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    // --sim-clock: the admin API sets the clock the cache reads.
    let set = client()
        .put(format!("{base}/admin/clock"))
        .bearer_auth("cli-token")
        .body(r#"{"now": "2012-05-01T00:00:00Z"}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(set.status(), 200);
    let read = client()
        .get(format!("{base}/admin/clock"))
        .bearer_auth("cli-token")
        .send()
        .await
        .expect("request");
    assert_eq!(
        read.text().await.expect("body"),
        "{\"now\":\"2012-05-01T00:00:00Z\"}\n"
    );
    let bad = client()
        .put(format!("{base}/admin/clock"))
        .bearer_auth("cli-token")
        .body(r#"{"now": "yesterday"}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(bad.status(), 400);
    server.term();
    let status = server.exit_within(Duration::from_secs(60)).await;
    assert!(
        status.success(),
        "graceful shutdown exits 0, got {status:?}"
    );
}

/// A config that only shortens `[upstream] timeout` (in the file, or by its variable) starts: the
/// connect timeout it never set follows the timeout instead of refusing the start.
#[tokio::test]
async fn serve_starts_with_only_a_short_timeout_in_the_file_or_the_env() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache").display().to_string();
    let with_timeout = dir.path().join("timeout.toml");
    std::fs::write(
        &with_timeout,
        format!("[upstream]\ntimeout = \"1s\"\n\n[cache]\npath = {cache:?}\n\n[[archives]]\nid = \"a\"\ntimemap = \"http://127.0.0.1:9/tm/\"\ntimegate = \"http://127.0.0.1:9/tg/\"\n"),
    )
    .expect("write");
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, format!("[cache]\npath = {cache:?}\n")).expect("write");
    for (config, env) in [
        (&with_timeout, &[][..]),
        (&plain, &[("TMPROXY_UPSTREAM_TIMEOUT", "1s")][..]),
    ] {
        // start_with panics unless the server says where it listens, i.e. it started.
        let mut server = ServeProcess::start_with(config, &[], env);
        let resp = client()
            .get(format!("{}/healthz", server.base))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), 200, "{}", server.log());
        server.term();
        assert!(server.exit_within(Duration::from_secs(60)).await.success());
    }
    // Both set, the connect timeout the longer: refused, naming the variable and the file.
    let file = with_timeout.display().to_string();
    let out = run_with_env(
        vec![
            "serve".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--config".into(),
            file.clone(),
        ],
        &[("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "2s")],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config env TMPROXY_UPSTREAM_CONNECT_TIMEOUT: upstream.connect_timeout: 2s")
            && err.contains(&format!("upstream.timeout (1s, from {file})")),
        "{err}"
    );
}

/// `tmproxy health`: 0 and the body against a running server (by --url, and by the listen
/// address of a config, as a container's HEALTHCHECK runs it); 1 and a one-line reason against
/// a port nothing listens on.
#[tokio::test]
async fn health_exits_0_on_a_running_server_and_1_on_a_closed_port() {
    let (cfg, _cache) = config_file(&[]);
    let mut server = ServeProcess::start(cfg.path());
    let base = server.base.clone();
    let out = run(vec!["health".into(), "--url".into(), base.clone()]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");

    // No --url: the address `serve` would listen on with this config.
    let port = base.rsplit(':').next().expect("port").to_string();
    let mut listening = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(listening, "[server]\nlisten = \"127.0.0.1:{port}\"").expect("write");
    let config = listening.path().display().to_string();
    let out = run(vec!["health".into(), "--config".into(), config]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.term();
    assert!(server.exit_within(Duration::from_secs(60)).await.success());

    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let out = run(vec!["health".into(), "--url".into(), url.clone()]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("tmproxy: unhealthy: GET {url}/healthz: ")),
        "{err}"
    );
}

/// An unspecified listen address with no public URL would write `http://0.0.0.0:…` into every
/// link: `serve` refuses to start and names the setting that fixes it.
#[tokio::test]
async fn serve_refuses_an_unspecified_address_without_a_public_url() {
    let (cfg, _cache) = config_file(&[]);
    let config = cfg.path().display().to_string();
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let args = vec![
            "serve".into(),
            "--config".into(),
            config.clone(),
            "--listen".into(),
            listen.into(),
        ];
        let out = run(args).await;
        assert_eq!(out.status.code(), Some(1), "{listen}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("TMPROXY_PUBLIC_URL") && err.contains("[server] public_url"),
            "{err}"
        );
    }
}

/// `--listen 127.0.0.1:0` logs the port it was given, not `:0`; a port in use stops the start
/// with the reason and what to do about it.
#[tokio::test]
async fn serve_logs_the_address_it_bound_and_a_taken_port_says_what_to_do() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let (cfg, _cache) = config_file(&[("a", &a)]);
    let mut server = ServeProcess::start_with(cfg.path(), &[], &[]);
    let port = server
        .base
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let log = server.log();
    let serving = log
        .lines()
        .find(|l| l.contains("tmproxy serving"))
        .expect("a serving line");
    assert!(
        serving.contains(&format!("listen=127.0.0.1:{port}")) && port != "0",
        "{serving}"
    );
    // The same port again, while the first server holds it.
    let out = run(vec![
        "serve".into(),
        "--config".into(),
        cfg.path().display().to_string(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
    ])
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}"))
            && err.contains("--listen 127.0.0.1:0"),
        "{err}"
    );
    server.term();
    server.exit_within(Duration::from_secs(60)).await;
}

#[tokio::test]
async fn a_misspelt_variable_stops_the_start_naming_the_one_meant() {
    let (cfg, _cache) = config_file(&[]);
    let path = cfg.path().display().to_string();
    let out = run_with_env(
        vec!["serve".into(), "--config".into(), path],
        &[("TMPROXY_LISTN", "127.0.0.1:0")],
    )
    .await;
    assert!(!out.status.success(), "served despite an unknown variable");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("env TMPROXY_LISTN") && err.contains("did you mean TMPROXY_LISTEN?"),
        "{err}"
    );
}
