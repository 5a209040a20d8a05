//! The recordings on loopback: each recorded TimeMap served whole by a fake archive, tmproxy in
//! front of them with no name resolution at all, and what tmproxy then answers.

use crate::support::{
    archive_config, client, config_for, serve_fake, start_proxy_resolving, Proxy,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tmproxy::config::Config;

/// `tests/fixtures/real/`.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real")
}

/// The bytes of one recording; a missing or unreadable file fails the test that needs it (a
/// corpus moved away must not turn the checks into silent passes).
pub fn fixture(file: &str) -> Vec<u8> {
    let path = corpus_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A recording as text: it must be UTF-8 (checked here, so a lossy decoding can never hide a
/// byte the archive sent).
pub fn fixture_text(file: &str) -> String {
    String::from_utf8(fixture(file)).unwrap_or_else(|e| panic!("{file} is not UTF-8: {e}"))
}

/// A fake archive answering every request with `body` as `application/link-format`, whatever
/// URI-R is asked: it stands for the archive that answered the recording.
pub async fn recorded_archive(body: Vec<u8>) -> SocketAddr {
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/link-format")], body) }
    });
    serve_fake(app).await.0
}

/// A config naming these fake archives, ids `a`, `b`, … in this order.
pub fn config(archives: &[SocketAddr]) -> Config {
    let mut config = config_for(&[]);
    // Large recordings (CBS Sports' 955 kB) parse in a debug build on a loaded machine.
    config.upstream.timeout = std::time::Duration::from_secs(30);
    config.upstream.deadline = std::time::Duration::from_secs(30);
    for (i, addr) in archives.iter().enumerate() {
        let id = char::from(b'a' + u8::try_from(i).expect("few archives")).to_string();
        config.archives.push(archive_config(
            &id,
            &format!("http://{addr}/timemap/link/"),
            &format!("http://{addr}/timegate/"),
        ));
    }
    config
}

/// tmproxy for `config`, resolving no host name: the recordings name real archives (in `self`,
/// `timegate` and paging links) and tmproxy must not reach any of them from a test; the fakes
/// are addressed by IP.
pub async fn proxy(config: Config) -> Proxy {
    let no_names = tmproxy::upstream::resolve::fixed_lookup(std::collections::HashMap::new());
    start_proxy_resolving(config, tmproxy::app::ClockChoice::System, no_names).await
}

/// What `/timemap/link/{uri_r}` answered: status, `X-Memento-Count`, body.
pub async fn timemap(proxy: &Proxy, uri_r: &str) -> (u16, Option<String>, String) {
    let resp = client()
        .get(format!("{}/timemap/link/{uri_r}", proxy.base))
        .send()
        .await
        .expect("GET /timemap/link");
    let status = resp.status().as_u16();
    let count = resp
        .headers()
        .get("x-memento-count")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, count, resp.text().await.expect("body"))
}

/// Where `/timegate/{uri_r}` sent a client asking for `accept` (an HTTP-date): the status and
/// the `Location`.
pub async fn timegate(proxy: &Proxy, uri_r: &str, accept: &str) -> (u16, Option<String>) {
    let resp = client()
        .get(format!("{}/timegate/{uri_r}", proxy.base))
        .header("accept-datetime", accept)
        .send()
        .await
        .expect("GET /timegate");
    let location = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (resp.status().as_u16(), location)
}
