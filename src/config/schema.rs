//! The whole configuration as one value: its tables, the defaults a missing one takes, and what
//! the rest of the server derives from it (the public URL, an archive's timeout).

use super::archives::{default_archives, ArchiveConfig};
use super::routing::RoutingConfig;
use super::sections::{
    AdminConfig, CacheConfig, LogConfig, ObserveConfig, SamplingConfig, ServerConfig,
    UpstreamConfig,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The whole configuration. Missing tables and keys take the values of [`Config::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub upstream: UpstreamConfig,
    /// When the file has any `[[archives]]` entry, the file's list replaces the built-in one entirely;
    /// merging by id would make it impossible to drop a default archive.
    pub archives: Vec<ArchiveConfig>,
    pub cache: CacheConfig,
    pub admin: AdminConfig,
    pub observe: ObserveConfig,
    pub sampling: SamplingConfig,
    pub log: LogConfig,
    pub routing: RoutingConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: ServerConfig::default(),
            upstream: UpstreamConfig::default(),
            archives: default_archives(),
            cache: CacheConfig::default(),
            admin: AdminConfig::default(),
            observe: ObserveConfig::default(),
            sampling: SamplingConfig::default(),
            log: LogConfig::default(),
            routing: RoutingConfig::default(),
        }
    }
}

impl Config {
    /// The data directory: routing's profiles (`routing/`) and the sampling jobs (`sampling/`)
    /// are kept under it. `[server] data_dir`, or when empty the parent of `[cache] path`
    /// (`data/cache` → `data`), so one directory holds everything a restart must find.
    pub fn data_dir(&self) -> std::path::PathBuf {
        match self.server.data_dir.trim() {
            "" => std::path::Path::new(&self.cache.path)
                .parent()
                .unwrap_or(std::path::Path::new(""))
                .to_path_buf(),
            dir => std::path::PathBuf::from(dir),
        }
    }

    /// The base URL the proxy writes into its links: `public_url`, or `http://{listen}` when empty.
    pub fn public_url(&self) -> String {
        if self.server.public_url.is_empty() {
            format!("http://{}", self.server.listen)
        } else {
            self.server.public_url.trim_end_matches('/').to_owned()
        }
    }

    /// `serve` writes links with the public URL; with no `public_url` that is `http://{listen}`,
    /// and an unspecified listen address (`0.0.0.0`, `::`) would put that address in every link,
    /// which no client can follow. Such a start is refused, naming the settings that fix it.
    pub fn check_links_reachable(&self) -> Result<(), String> {
        let listen = self.server.listen;
        if self.server.public_url.is_empty() && listen.ip().is_unspecified() {
            return Err(format!(
                "listening on {listen} (every interface) but no public URL is set, so links would \
                 say http://{listen}/: set TMPROXY_PUBLIC_URL (or [server] public_url) to the URL \
                 clients reach tmproxy at, e.g. TMPROXY_PUBLIC_URL=http://localhost:{}",
                listen.port()
            ));
        }
        Ok(())
    }

    /// The URL of this host's own listener (`tmproxy health`): `http://{listen}`, with an
    /// unspecified address replaced by the loopback address of its family, where it also answers.
    pub fn local_url(&self) -> String {
        let mut addr = self.server.listen;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        format!("http://{addr}")
    }

    /// The archive's own timeout, else `upstream.timeout`.
    pub fn archive_timeout(&self, a: &ArchiveConfig) -> Duration {
        a.timeout.unwrap_or(self.upstream.timeout)
    }
}
