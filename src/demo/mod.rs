//! `tmproxy demo`: simulated archives on loopback and the proxy in front of them, for a machine
//! without internet (and for a newcomer's first five minutes).

pub mod archive;

use crate::config::{ArchiveConfig, Config};
use archive::{DemoAnswer, DemoArchive, TimeMapSpec};
use std::time::Duration;

/// The simulated archives the demo runs: overlapping captures, a duplicate, newest-first order,
/// a paged TimeMap, one archive slower than the deadline and one that fails.
pub async fn start_archives() -> std::io::Result<Vec<(&'static str, DemoArchive)>> {
    let alpha = TimeMapSpec {
        duplicate_first: true,
        ..TimeMapSpec::of(&[
            "19990125103000",
            "20010305120000",
            "20050101000000",
            "20120615083000",
        ])
    };
    let beta = TimeMapSpec {
        newest_first: true,
        ..TimeMapSpec::of(&[
            "20010305120000",
            "20080808080808",
            "20150101000000",
            "20230402101010",
        ])
    };
    let gamma = TimeMapSpec {
        page_size: Some(2),
        ..TimeMapSpec::of(&[
            "20030303030303",
            "20090909090909",
            "20160606060606",
            "20200202020202",
            "20240101000000",
        ])
    };
    let slow = TimeMapSpec {
        delay: Duration::from_secs(30),
        ..TimeMapSpec::of(&["20100101000000"])
    };
    Ok(vec![
        (
            "alpha",
            DemoArchive::start(DemoAnswer::TimeMap(alpha)).await?,
        ),
        ("beta", DemoArchive::start(DemoAnswer::TimeMap(beta)).await?),
        (
            "gamma",
            DemoArchive::start(DemoAnswer::TimeMap(gamma)).await?,
        ),
        ("slow", DemoArchive::start(DemoAnswer::TimeMap(slow)).await?),
        (
            "broken",
            DemoArchive::start(DemoAnswer::Status(500, "<html>oops</html>".into())).await?,
        ),
    ])
}

/// A config that points at the simulated archives, with a short deadline so `slow` times out,
/// and `admin_token` guarding the admin API.
pub fn demo_config(
    archives: &[(&'static str, DemoArchive)],
    listen: std::net::SocketAddr,
    admin_token: &str,
) -> Config {
    let mut config = Config::default();
    config.server.listen = listen;
    config.admin.token = admin_token.to_owned();
    config.upstream.deadline = Duration::from_secs(3);
    config.upstream.timeout = Duration::from_secs(3);
    config.upstream.connect_timeout = Duration::from_secs(1);
    // The demo's data lives and dies with it, never in the user's working directory: the cache
    // in `cache/` of its own directory, which is then the data directory (routing profiles,
    // sampling jobs) rather than the temp dir itself.
    config.cache.path = demo_cache_dir().join("cache").display().to_string();
    config.archives = archives
        .iter()
        .map(|(id, a)| ArchiveConfig {
            id: id.to_string(),
            name: format!("Simulated archive {id}"),
            timemap: Some(a.timemap_prefix().parse().expect("an http URL")),
            timegate: a.timegate_prefix().parse().expect("an http URL"),
            timeout: None,
            enabled: true,
            redirect_hosts: Vec::new(),
            ..ArchiveConfig::timemap_default()
        })
        .collect();
    config
}

/// A per-process directory under the system's temp dir for the demo's data (its cache and
/// what lives beside it), removed when the demo stops.
pub fn demo_cache_dir() -> std::path::PathBuf {
    demo_cache_dir_of(std::process::id())
}

/// The demo cache directory of the demo process `pid`.
pub fn demo_cache_dir_of(pid: u32) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tmproxy-demo-{pid}"))
}

/// A fresh admin token: 16 bytes from the OS's generator, hex-encoded. The demo prints it, so
/// it is new each run rather than a fixed word anyone could guess.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The lines the demo prints: commands a newcomer can paste. The admin ones carry the token; the
/// `?timeout=` one asks for a URI-R nothing has cached yet, with less time than `slow` takes, so
/// its answer is partial (`X-Memento-Partial: slow, broken`).
pub fn curl_lines(base: &str, admin_token: &str) -> Vec<String> {
    let uri = "http://example.com/";
    let auth = format!("-H \"Authorization: Bearer {admin_token}\"");
    vec![
        format!("curl -s {base}/timemap/link/{uri}"),
        format!("curl -s {base}/timemap/json/{uri}"),
        format!("curl -s {base}/timemap/cdxj/{uri}"),
        format!(
            "curl -si -H 'Accept-Datetime: Thu, 31 May 2007 20:35:00 GMT' {base}/timegate/{uri}"
        ),
        format!("curl -si {base}/memento/2007/{uri}"),
        format!("curl -s {base}/api/json/20070531/{uri}"),
        format!("curl -si '{base}/timemap/link/http://example.org/?timeout=1s'"),
        format!("curl -s {auth} {base}/admin/cache/{uri}"),
        format!("curl -s {auth} {base}/admin/stats"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        assert_eq!(hex(&[0, 0x0f, 0xa0, 0xff]), "000fa0ff");
        let (a, b) = (
            random_token().expect("urandom"),
            random_token().expect("urandom"),
        );
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }
}
