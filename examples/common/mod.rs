//! What the process benchmarks (`miss_burst`, `big_bodies`) share: SYNTHETIC captures, the
//! config for a release `tmproxy serve` in front of simulated archives, starting it, its RSS.

#![allow(dead_code)] // each example uses its own part

use std::path::Path;
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::SimulatedArchive;

/// The server's VmRSS in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// `n` distinct SYNTHETIC capture timestamps for archive `k`, `step` apart from 1999-01-01 and
/// `k` hours later than archive 0's, so archives never share a datetime.
pub fn captures(n: usize, k: usize, step: chrono::Duration) -> Vec<String> {
    let start = chrono::DateTime::from_timestamp(915_148_800, 0).unwrap_or_default();
    (0..n)
        .map(|i| {
            (start + step * (i as i32) + chrono::Duration::hours(k as i64))
                .format("%Y%m%d%H%M%S")
                .to_string()
        })
        .collect()
}

/// The config text: `lines` by section (e.g. `("upstream", "deadline = \"10s\"")`), then
/// `--set section.key=value` lines, then one `[[archives]]` per simulated archive.
pub fn config_text(
    lines: &[(&str, String)],
    set: &[String],
    archives: &[SimulatedArchive],
) -> String {
    let mut sections: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (section, line) in lines {
        sections
            .entry((*section).to_string())
            .or_default()
            .push(line.clone());
    }
    for s in set {
        if let Some((key, value)) = s.split_once('=') {
            if let Some((section, key)) = key.split_once('.') {
                sections
                    .entry(section.to_string())
                    .or_default()
                    .push(format!("{key} = {value}"));
            }
        }
    }
    let mut text = String::new();
    for (section, lines) in sections {
        text.push_str(&format!("[{section}]\n{}\n\n", lines.join("\n")));
    }
    for (i, a) in archives.iter().enumerate() {
        text.push_str(&format!(
            "[[archives]]\nid = \"sim{i}\"\nname = \"simulated {i}\"\ntimemap = {:?}\ntimegate = {:?}\n\n",
            a.timemap_prefix(),
            a.timegate_prefix()
        ));
    }
    text
}

/// A running `tmproxy serve` child (killed when dropped) and where it listens.
pub struct Server {
    pub child: tokio::process::Child,
    pub pid: u32,
    pub base: String,
}

/// Writes `config` into `dir`, starts `binary serve` on a free loopback port with it, and waits
/// (up to 30 s) until /healthz answers.
pub async fn start_server(binary: &Path, dir: &Path, config: &str) -> Result<Server, String> {
    let file = dir.join("tmproxy.toml");
    std::fs::write(&file, config).map_err(|e| format!("cannot write the config: {e}"))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    // Absolute: a relative program path would be looked up from the child's working directory.
    let binary = std::fs::canonicalize(binary)
        .map_err(|e| format!("no server binary at {}: {e}", binary.display()))?;
    let mut child = tokio::process::Command::new(&binary)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&file)
        .env_remove("TMPROXY_CONFIG")
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::inherit())
        .current_dir(dir)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let ready = Instant::now();
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        if ready.elapsed() > Duration::from_secs(30) {
            let _ = child.kill().await;
            return Err("the server never answered /healthz".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = child.id().unwrap_or(0);
    Ok(Server { child, pid, base })
}
