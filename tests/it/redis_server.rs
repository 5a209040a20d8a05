//! A real `redis-server` (Debian's package, installed by scripts/test.sh) on a free loopback
//! port, in a temporary directory, with nothing saved; killed by its PID when dropped. `stop` and
//! `start` again on the same port stage an outage.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting server may take to answer PING before the test gives up.
const START_BOUND: Duration = Duration::from_secs(20);

pub struct RedisServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Arguments past the common ones (a cluster node's).
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers PING.
    pub fn start() -> RedisServer {
        RedisServer::start_with(free_port(), Vec::new())
    }

    fn start_with(port: u16, extra: Vec<String>) -> RedisServer {
        let mut server = RedisServer {
            port,
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
            extra,
        };
        server.restart();
        server
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server (SIGKILL, by PID) and waits for it to be gone: Redis is down.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: nothing was saved) and waits for PING.
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (apt-get install redis-server; scripts/test.sh does)");
        self.child = Some(child);
        let started = Instant::now();
        while self.cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                started.elapsed() < START_BOUND,
                "redis-server on port {} did not answer PING",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes the server (SIGSTOP to the PID this test started): connections stay open and
    /// nothing answers, as with a host that drops packets.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("a running redis-server").id();
        let sent = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill {signal} {pid}");
    }

    /// One `redis-cli` command against this server: its output, trimmed, if it ran.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Sets `key` to raw `bytes` (binary-safe, unlike an argument of redis-cli).
    pub fn set_raw(&self, key: &str, bytes: &[u8]) {
        use std::io::Write;
        let mut child = Command::new("redis-cli")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-x",
                "SET",
                key,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-cli runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(bytes)
            .expect("write to redis-cli");
        assert!(child.wait().expect("redis-cli exits").success());
    }
}

/// A loopback port free now. Bound then released: redis-server binds it at once, and a clash
/// fails loudly at PING. Below 55536, so a cluster node's bus port (+10000) exists too.
fn free_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let bus_free =
            std::net::TcpListener::bind(("127.0.0.1", port.wrapping_add(10_000))).is_ok();
        if port < 55_536 && bus_free {
            return port;
        }
    }
}

/// A three-master Redis Cluster on loopback (`--cluster-enabled yes` ×3 and
/// `redis-cli --cluster create`), ready once every node says `cluster_state:ok`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                let extra = ["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"];
                RedisServer::start_with(free_port(), extra.map(str::to_owned).to_vec())
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(created.success(), "redis-cli --cluster create failed");
        let started = Instant::now();
        for node in &nodes {
            while !node
                .cli(&["CLUSTER", "INFO"])
                .is_some_and(|info| info.contains("cluster_state:ok"))
            {
                assert!(
                    started.elapsed() < START_BOUND,
                    "the cluster never became ok"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        RedisCluster { nodes }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", seeds.join(","))
    }

    /// The keys tmproxy holds across the cluster's nodes.
    pub fn entry_keys(&self) -> Vec<String> {
        self.nodes
            .iter()
            .flat_map(|n| {
                n.cli(&["--raw", "KEYS", "tmproxy:entry:*"])
                    .unwrap_or_default()
                    .lines()
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
