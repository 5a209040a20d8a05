//! Test support: the proxy on 127.0.0.1:0 in front of simulated archives (in process, or the
//! real binary as a child process), and a plain client.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmproxy::config::{ArchiveConfig, Config};
use tmproxy_testkit::archive::SimulatedArchive;
use tokio::sync::oneshot;

/// A prerequisite of the running test is missing (a tool, a privilege, a kernel feature). Without
/// `TMPROXY_TEST_ALLOW_SKIP=1` this fails the test with `reason`, so a suite can never pass by
/// skipping what it did not test. With it, the skip is printed and appended as one line to
/// `$TMPROXY_TEST_SKIP_LOG` (scripts/test.sh lists them at the end of the run), and the caller
/// returns at once.
pub fn skip(reason: &str) {
    // libtest names each test's thread after the test; the body of a #[tokio::test] runs on it.
    let test = std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_string();
    if std::env::var_os("TMPROXY_TEST_ALLOW_SKIP").is_none_or(|v| v != "1") {
        panic!("{test} cannot run: {reason} (TMPROXY_TEST_ALLOW_SKIP=1 lets it be skipped)");
    }
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(path) = std::env::var_os("TMPROXY_TEST_SKIP_LOG") {
        use std::io::Write;
        // One write of one line on an O_APPEND file: tests skipping at once never interleave.
        let line = format!("{test}: {}\n", reason.replace('\n', " "));
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!(
                "cannot record the skip in {}: {e}",
                Path::new(&path).display()
            );
        }
    }
}

/// A running proxy; dropping it shuts it down.
pub struct Proxy {
    pub base: String,
    /// The admin listener's base URL, when the proxy was started with one
    /// ([`start_proxy_with_admin_listener`]).
    pub admin_base: Option<String>,
    pub state: Option<tmproxy::http::SharedState>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The cache directory, when the test did not choose one; removed with the proxy.
    _cache_dir: Option<tempfile::TempDir>,
}

impl Proxy {
    /// Shuts the server down and waits until it has released everything (the sled lock among
    /// them), so a test can start another proxy on the same cache directory.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(state) = self.state.take() {
            // Wait out the last background tasks holding the cache (a refresh finishing).
            for _ in 0..100 {
                if std::sync::Arc::strong_count(&state) == 1
                    && std::sync::Arc::strong_count(&state.cache) == 1
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

impl Proxy {
    /// Puts `entry` under `key` in the proxy's own store, as if a fan-out had stored it: for
    /// entries no archive would send (hostile URI-Ms, an old format).
    pub async fn store_entry(&self, key: &str, entry: tmproxy::cache::entry::Entry) {
        use tmproxy::cache::store::Store;
        let store = self
            .state
            .as_ref()
            .and_then(|s| s.cache.store())
            .expect("a store");
        let value = tmproxy::cache::service::CachedTimeMap::<tmproxy::http::view::View>::new(entry);
        store
            .put(key, std::sync::Arc::new(value))
            .await
            .expect("put");
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A URI-R as a request hands it to the cache: parsed once, with its keys.
pub fn uri_r(text: &str) -> tmproxy::uri_r::UriR {
    tmproxy::uri_r::UriR::parse(text).expect("a URI-R")
}

/// A config naming these archives (ids in this order), with test-sized timeouts.
pub fn config_for(archives: &[(&str, &SimulatedArchive)]) -> Config {
    let mut config = Config::default();
    config.upstream.connect_timeout = Duration::from_secs(2);
    config.upstream.timeout = Duration::from_secs(5);
    config.upstream.deadline = Duration::from_secs(5);
    config.archives = archives
        .iter()
        .map(|(id, a)| archive_config(id, &a.timemap_prefix(), &a.timegate_prefix()))
        .collect();
    config
}

pub fn archive_config(id: &str, timemap: &str, timegate: &str) -> ArchiveConfig {
    ArchiveConfig {
        id: id.to_string(),
        name: format!("test archive {id}"),
        // "" for an archive listed otherwise (`kind = "cdx"`).
        timemap: (!timemap.is_empty()).then(|| timemap.parse().expect("an http URL")),
        timegate: timegate.parse().expect("an http URL"),
        timeout: None,
        enabled: true,
        redirect_hosts: Vec::new(),
        ..ArchiveConfig::timemap_default()
    }
}

/// How the in-process proxies serve: as `tmproxy serve` does, each public connection on one of
/// two connection threads with runtimes of their own (not on the test's runtime).
fn serving(config: &Config, state: &tmproxy::http::AppState) -> tmproxy::app::ServeOptions {
    let threads = tmproxy::serve::threads::ConnectionThreads::start(2, 4, Duration::from_secs(1))
        .expect("connection threads start");
    tmproxy::app::ServeOptions {
        threads: Some(threads),
        ..tmproxy::app::ServeOptions::from_config(config, state)
    }
}

/// Starts the proxy for `config` on 127.0.0.1:0 with the system clock.
pub async fn start_proxy(config: Config) -> Proxy {
    start_proxy_with(config, tmproxy::app::ClockChoice::System).await
}

/// A fresh temporary cache directory for a config still naming the default cache path, so tests
/// never share a cache; None when the test chose its own.
fn own_cache_dir(config: &mut Config) -> Option<tempfile::TempDir> {
    if config.cache.path != Config::default().cache.path {
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    config.cache.path = dir.path().join("cache").display().to_string();
    Some(dir)
}

/// Starts the proxy for `config` on 127.0.0.1:0. A config still naming the default cache path
/// gets a fresh temporary directory instead, so tests never share a cache.
pub async fn start_proxy_with(config: Config, clock: tmproxy::app::ClockChoice) -> Proxy {
    start_proxy_resolving(config, clock, tmproxy::upstream::resolve::system_lookup()).await
}

/// [`start_proxy_with`] resolving archive host names with `lookup` (e.g. a
/// [`tmproxy::upstream::resolve::fixed_lookup`]: there is no DNS here).
pub async fn start_proxy_resolving(
    mut config: Config,
    clock: tmproxy::app::ClockChoice,
    lookup: tmproxy::upstream::resolve::HostLookup,
) -> Proxy {
    config.server.listen = "127.0.0.1:0".parse().expect("addr");
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .expect("bind 127.0.0.1:0");
    start_proxy_on(listener, config, clock, lookup).await
}

/// Starts the proxy for `config` on `listener`, bound already (so that two proxies can be
/// configured with each other's address before either starts).
pub async fn start_proxy_on(
    listener: tokio::net::TcpListener,
    mut config: Config,
    clock: tmproxy::app::ClockChoice,
    lookup: tmproxy::upstream::resolve::HostLookup,
) -> Proxy {
    config.server.listen = listener.local_addr().expect("local addr");
    let cache_dir = own_cache_dir(&mut config);
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let (state, router) =
        tmproxy::app::build_with_lookup(&config, Some(base.clone()), clock, lookup)
            .await
            .expect("app builds");
    let (stop, stopped) = oneshot::channel::<()>();
    let options = serving(&config, &state);
    let task = tokio::spawn(tmproxy::app::serve_with(
        listener,
        router,
        async move {
            let _ = stopped.await;
        },
        options,
    ));
    Proxy {
        base,
        admin_base: None,
        state: Some(state),
        stop: Some(stop),
        task: Some(task),
        _cache_dir: cache_dir,
    }
}

/// Starts the proxy for `config` with `[admin] listen` on a second 127.0.0.1:0 listener: the
/// public routes on `base`, `/admin/*` and `/metrics` on `admin_base`, one shutdown for both.
pub async fn start_proxy_with_admin_listener(mut config: Config) -> Proxy {
    config.server.listen = "127.0.0.1:0".parse().expect("addr");
    config.admin.listen = Some("127.0.0.1:0".parse().expect("addr"));
    let cache_dir = own_cache_dir(&mut config);
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .expect("bind 127.0.0.1:0");
    let admin_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let admin_base = format!(
        "http://{}",
        admin_listener.local_addr().expect("local addr")
    );
    let (state, public) = tmproxy::app::build_with_clock(
        &config,
        Some(base.clone()),
        tmproxy::app::ClockChoice::System,
    )
    .await
    .expect("app builds");
    let admin_router = tmproxy::http::admin_router(state.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(tmproxy::app::serve_both(
        (listener, public),
        Some((admin_listener, admin_router)),
        async move {
            let _ = stopped.await;
        },
        serving(&config, &state),
    ));
    Proxy {
        base,
        admin_base: Some(admin_base),
        state: Some(state),
        stop: Some(stop),
        task: Some(task),
        _cache_dir: cache_dir,
    }
}

/// A client that does not follow redirects (we assert on them).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The value of the series `series` (its name and labels exactly) in `base`'s /metrics.
pub async fn metric_value(base: &str, series: &str) -> Option<f64> {
    let text = client()
        .get(format!("{base}/metrics"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// GET and the parsed JSON body.
pub async fn get_json(url: &str) -> (u16, serde_json::Value) {
    let resp = client().get(url).send().await.expect("request");
    let status = resp.status().as_u16();
    let body = resp.text().await.expect("body");
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    (status, json)
}

/// `/admin/stats` of the proxy at `base`, with the admin `token`.
pub async fn admin_stats(base: &str, token: &str) -> serde_json::Value {
    let r = client()
        .get(format!("{base}/admin/stats"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("stats");
    assert_eq!(r.status(), 200);
    serde_json::from_str(&r.text().await.expect("body")).expect("stats JSON")
}

/// The `archives[]` entry for `id` in a JSON TimeMap.
pub fn outcome<'a>(json: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    json["archives"]
        .as_array()
        .and_then(|a| a.iter().find(|o| o["id"] == id))
        .unwrap_or_else(|| panic!("no outcome for {id} in {json}"))
}

/// The URIs of `mementos.list` in order.
pub fn memento_uris(json: &serde_json::Value) -> Vec<String> {
    json["mementos"]["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|m| m["uri"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Kills the child if the test ends early, so a failed assertion leaves no server behind.
pub struct ChildGuard(pub Option<std::process::Child>);

impl ChildGuard {
    pub fn get(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("child present")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Serves a fake (a CDX API, a redirector…) on 127.0.0.1:0 until its task is aborted.
pub async fn serve_fake(app: axum::Router) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

/// One run of the real `tmproxy serve` on 127.0.0.1:0; its output is kept to explain a failure
/// and for assertions on it. Dropping it kills the process.
pub struct ServeProcess {
    child: ChildGuard,
    /// The public base URL, from the "public_url=" log line.
    pub base: String,
    /// stderr, a line each (the logs).
    log: Arc<Mutex<Vec<String>>>,
    /// stdout, whole.
    out: Arc<Mutex<String>>,
    /// How many of the two streams are closed and read to the end.
    streams_ended: Arc<AtomicUsize>,
}

impl ServeProcess {
    /// `tmproxy serve --listen 127.0.0.1:0 --config <config>`, logging at info.
    pub fn start(config: &Path) -> ServeProcess {
        Self::start_with(config, &[], &[])
    }

    /// As [`ServeProcess::start`], with more arguments to `serve` and environment variables
    /// (which may override `RUST_LOG`).
    pub fn start_with(config: &Path, args: &[&str], env: &[(&str, &str)]) -> ServeProcess {
        Self::launch(
            Command::new(env!("CARGO_BIN_EXE_tmproxy")),
            config,
            args,
            env,
        )
    }

    /// As [`ServeProcess::start`], with at most `nofile` open files (soft and hard limit): `sh`
    /// lowers the limit and execs the binary, so the PID is still the server's.
    pub fn start_with_fd_limit(config: &Path, nofile: u32) -> ServeProcess {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_tmproxy"));
        Self::launch(sh, config, &[], &[])
    }

    /// As [`ServeProcess::start`], running as this uid and gid (the suite runs as root; std
    /// also drops root's supplementary groups when it switches).
    pub fn start_as(config: &Path, uid: u32, gid: u32) -> ServeProcess {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_tmproxy"));
        command.uid(uid).gid(gid);
        Self::launch(command, config, &[], &[])
    }

    /// As [`ServeProcess::start_with`], the binary run by `runner` (a program and its arguments,
    /// e.g. `fiu-run -x`), which must exec it so that the PID is still the server's.
    pub fn start_under(runner: &[&str], config: &Path, env: &[(&str, &str)]) -> ServeProcess {
        let (program, args) = runner.split_first().expect("a runner program");
        let mut command = Command::new(program);
        command.args(args).arg(env!("CARGO_BIN_EXE_tmproxy"));
        Self::launch(command, config, &[], env)
    }

    /// Starts `command` (the binary, or what execs it) with `serve` and these arguments.
    fn launch(
        mut command: Command,
        config: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> ServeProcess {
        command
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .env_remove("TMPROXY_CONFIG")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = ChildGuard(Some(command.spawn().expect("serve starts")));
        let stderr = child.get().stderr.take().expect("stderr");
        let mut stdout = child.get().stdout.take().expect("stdout");
        let log = Arc::new(Mutex::new(Vec::new()));
        let out = Arc::new(Mutex::new(String::new()));
        let streams_ended = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let (log, ended) = (Arc::clone(&log), Arc::clone(&streams_ended));
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let base = value_after(&line, "public_url=");
                    // Kept before the base is told, so every earlier line is in the log.
                    log.lock().expect("log").push(line);
                    if let Some(base) = base {
                        let _ = tx.send(base);
                    }
                }
                ended.fetch_add(1, Ordering::SeqCst);
            });
        }
        {
            let (out, ended) = (Arc::clone(&out), Arc::clone(&streams_ended));
            std::thread::spawn(move || {
                let mut all = String::new();
                let _ = stdout.read_to_string(&mut all);
                *out.lock().expect("stdout") = all;
                ended.fetch_add(1, Ordering::SeqCst);
            });
        }
        let base = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(base) => base,
            Err(_) => panic!(
                "serve never said where it listens:\n{}",
                log.lock().expect("log").join("\n")
            ),
        };
        ServeProcess {
            child,
            base,
            log,
            out,
            streams_ended,
        }
    }

    /// The process id, for reading /proc.
    pub fn pid(&self) -> u32 {
        self.child.0.as_ref().map_or(0, std::process::Child::id)
    }

    /// stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }

    /// stdout; whole once [`ServeProcess::exit_within`] has returned.
    pub fn stdout(&self) -> String {
        self.out.lock().expect("stdout").clone()
    }

    /// The first value logged as `key` (e.g. "admin_listen="), up to the next space.
    pub fn logged(&self, key: &str) -> Option<String> {
        let log = self.log.lock().expect("log");
        log.iter().find_map(|line| value_after(line, key))
    }

    /// Whether the process has not exited yet.
    pub fn is_running(&mut self) -> bool {
        self.child.get().try_wait().expect("try_wait").is_none()
    }

    /// SIGTERM by PID, via kill(1): the process we started, nothing else.
    pub fn term(&mut self) {
        let pid = self.child.get().id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
    }

    /// SIGKILL (what `Child::kill` sends), then reaped.
    pub fn kill9(mut self) {
        let child = self.child.get();
        child.kill().expect("SIGKILL");
        let _ = child.wait();
    }

    /// Waits at most `bound` for the process to exit; its status.
    pub async fn exit_within(&mut self, bound: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.get().try_wait().expect("try_wait") {
                // Its last words, read to the end, for the assertions on the output.
                for _ in 0..200 {
                    if self.streams_ended.load(Ordering::SeqCst) == 2 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                return status;
            }
            assert!(
                started.elapsed() < bound,
                "still running {bound:?} after the signal:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// In a log line, what follows `key` up to the next space.
fn value_after(line: &str, key: &str) -> Option<String> {
    let at = line.find(key)? + key.len();
    line[at..].split_whitespace().next().map(str::to_string)
}
