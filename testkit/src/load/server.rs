//! The `tmproxy serve` child process of a load run: its config written to a temporary
//! directory, started, waited for, asked for its stats, and stopped by its PID.

use super::client::plain_client;
use super::options::Options;
use crate::archive::SimulatedArchive;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tmproxy::config::{ArchiveConfig, Config};

/// The `tmproxy serve` child process and its temporary directory (config, cache, log).
pub(super) struct Server {
    pub(super) child: tokio::process::Child,
    pub(super) pid: u32,
    pub(super) base: String,
    pub(super) token: String,
    pub(super) dir: PathBuf,
}

impl Server {
    pub(super) async fn start(
        opts: &Options,
        archives: &[SimulatedArchive],
    ) -> Result<Server, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir =
            std::env::temp_dir().join(format!("tmproxy-load-{}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        match Server::spawn(opts, archives, &dir, nanos).await {
            Ok(server) => Ok(server),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    async fn spawn(
        opts: &Options,
        archives: &[SimulatedArchive],
        dir: &Path,
        nanos: u32,
    ) -> Result<Server, String> {
        // A free loopback port: bound, read, released, then handed to the server. Another
        // process could take it in between; the health check below would then fail clearly.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        let listen: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        let token = format!("load-{}-{nanos:x}", std::process::id());
        let mut config = Config::default();
        config.server.listen = listen;
        // 200 connections from one address are the point: no per-client rate limit.
        config.server.rate_limit = 0.0;
        config.cache.path = dir.join("cache").display().to_string();
        config.cache.hot_capacity = opts.hot_capacity;
        config.cache.policy = opts
            .cache_policy
            .parse()
            .map_err(|e| format!("cache policy: {e}"))?;
        config.admin.token = token.clone();
        config.sampling.input_dir = dir.join("sampling").display().to_string();
        config.archives = archives
            .iter()
            .enumerate()
            .map(|(i, a)| ArchiveConfig {
                id: format!("sim{i}"),
                name: format!("simulated archive {i}"),
                timemap: Some(a.timemap_prefix().parse().expect("an http URL")),
                timegate: a.timegate_prefix().parse().expect("an http URL"),
                timeout: None,
                enabled: true,
                redirect_hosts: Vec::new(),
                // The simulated archives are ours and the load measures the proxy: no bound
                // of politeness in the way (at most 1024 of our requests at once each).
                max_concurrency: tmproxy::config::MAX_CONCURRENCY,
                ..ArchiveConfig::timemap_default()
            })
            .collect();
        let text = toml::to_string(&config).map_err(|e| format!("cannot write the config: {e}"))?;
        let config_path = dir.join("tmproxy.toml");
        std::fs::write(&config_path, text)
            .map_err(|e| format!("cannot write {}: {e}", config_path.display()))?;
        let log_path = dir.join("tmproxy.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let log2 = log
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        // Absolute, because the child runs in `dir`, where a relative path would not resolve.
        let bin = std::fs::canonicalize(&opts.server_bin)
            .map_err(|e| format!("cannot find {}: {e}", opts.server_bin.display()))?;
        let mut command = tokio::process::Command::new(&bin);
        // The config file is the whole truth: no TMPROXY_* override from this environment.
        command.env_remove("TMPROXY_CONFIG");
        for (var, _) in tmproxy::config::ENV_OVERRIDES {
            command.env_remove(var);
        }
        let child = command
            .arg("serve")
            .arg("--config")
            .arg(&config_path)
            .arg("--listen")
            .arg(listen.to_string())
            .env("RUST_LOG", "warn")
            // The working directory holds no config.toml the server could pick up instead.
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Should this task be dropped mid-run, the server goes with it.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", opts.server_bin.display()))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let base = format!("http://{listen}");
        let mut server = Server {
            child,
            pid,
            base,
            token,
            dir: dir.to_path_buf(),
        };
        if let Err(e) = server.wait_ready().await {
            let _ = server.child.kill().await;
            return Err(format!("{e}\n--- server log ---\n{}", server.log_tail()));
        }
        Ok(server)
    }

    /// Polls `/healthz` for up to 30 s (sled opens its files first).
    async fn wait_ready(&mut self) -> Result<(), String> {
        let client = plain_client(1)?;
        let url = format!("{}/healthz", self.base);
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the server exited during start-up ({status})"));
            }
            if let Ok(r) = client.get(&url).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err("the server did not answer /healthz within 30 s".into())
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("tmproxy.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Kills the server by its PID, waits for it, removes the directory.
    pub(super) async fn stop(mut self) -> Result<(), String> {
        let killed = self.child.kill().await;
        let _ = std::fs::remove_dir_all(&self.dir);
        killed.map_err(|e| format!("cannot stop the server (pid {}): {e}", self.pid))
    }
}

/// `/admin/stats` at the end of the run (hits, misses, fan-outs, the tiers' bytes and entries);
/// an error is recorded in its place rather than failing a run that has measured everything.
pub(super) async fn admin_stats(server: &Server) -> serde_json::Value {
    let fetched = async {
        let client = plain_client(1)?;
        let resp = client
            .get(format!("{}/admin/stats", server.base))
            .bearer_auth(&server.token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice::<serde_json::Value>(&body).map_err(|e| e.to_string())
    };
    match fetched.await {
        Ok(v) => v,
        Err(e) => serde_json::json!({ "error": e }),
    }
}
