//! Test support: the proxy on 127.0.0.1:0 in front of simulated archives, and a plain client.

use std::time::Duration;
use tmproxy::config::{ArchiveConfig, Config};
use tmproxy::demo::archive::SimulatedArchive;
use tokio::sync::oneshot;

/// A running proxy; dropping it shuts it down.
pub struct Proxy {
    pub base: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
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
        timemap: timemap.to_string(),
        timegate: timegate.to_string(),
        timeout: None,
        enabled: true,
    }
}

/// Starts the proxy for `config` on 127.0.0.1:0.
pub async fn start_proxy(mut config: Config) -> Proxy {
    config.server.listen = "127.0.0.1:0".parse().expect("addr");
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let (_state, router) = tmproxy::app::build(&config, Some(base.clone())).expect("app builds");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(tmproxy::app::serve(listener, router, async move {
        let _ = stopped.await;
    }));
    Proxy {
        base,
        stop: Some(stop),
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

/// GET and the parsed JSON body.
pub async fn get_json(url: &str) -> (u16, serde_json::Value) {
    let resp = client().get(url).send().await.expect("request");
    let status = resp.status().as_u16();
    let body = resp.text().await.expect("body");
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    (status, json)
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
