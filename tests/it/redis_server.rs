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
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers PING.
    pub fn start() -> RedisServer {
        // Bound then released: redis-server binds it at once; a clash would fail loudly below.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let mut server = RedisServer {
            port,
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
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

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
