//! Configuration: the `config.toml` schema, its built-in defaults, `TMPROXY_*` environment overrides and validation.
//!
//! Each `[table]` of the file is one struct that derives `Deserialize` with `#[serde(default, deny_unknown_fields)]`
//! and implements `Default`; adding a table means adding that struct (in `sections`) plus one field on [`Config`].
//! Durations and sizes are written as strings ("10s", "128MiB") and converted by field-level deserializers,
//! so a bad value is reported with the key it sits under, recovered from the span toml gives.

mod archives;
pub mod archives_file;
mod diagnostics;
mod env;
mod fields;
mod redirect_host;
mod routing;
mod sections;
mod shared;
mod validate;
mod values;

pub use archives::{ArchiveConfig, ArchiveKind, CdxDialect};
pub use env::ENV_OVERRIDES;
pub use redirect_host::RedirectHost;
pub use routing::{RoutingConfig, RoutingMode, MAX_ROUTING_KEYS};
pub use sections::{
    AdminConfig, CacheConfig, Compat, LogConfig, LogFormat, ObserveConfig, SamplingConfig,
    ServerConfig, UpstreamConfig, CACHE_MATCHES, CACHE_POLICIES,
};
pub use shared::SharedAddress;
pub use values::{format_duration, format_size, parse_duration, parse_size};

use diagnostics::toml_error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File looked for in the working directory when neither `--config` nor `TMPROXY_CONFIG` names one.
pub const DEFAULT_FILE: &str = "config.toml";
/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "TMPROXY_CONFIG";
/// Origin reported when no file was read.
pub const BUILTIN_ORIGIN: &str = "built-in defaults";

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

/// A configuration problem: which source, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {origin}: {key}: {reason}")]
pub struct ConfigError {
    /// The file path, `env TMPROXY_X`, or [`BUILTIN_ORIGIN`].
    pub origin: String,
    /// Dotted key path, `archives[N]` 0-based for array entries; `(file)` when no key applies.
    pub key: String,
    pub reason: String,
}

impl ConfigError {
    fn new(origin: &str, key: &str, reason: impl Into<String>) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: ServerConfig::default(),
            upstream: UpstreamConfig::default(),
            archives: archives::default_archives(),
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
    /// Parses a config file's text; `origin` names it in errors. Does not validate (see [`Config::validate`]).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| toml_error(&e, text, origin))?;
        for a in &mut cfg.archives {
            if a.name.is_empty() {
                a.name = a.id.clone();
            }
        }
        Ok(cfg)
    }

    /// Loads from `explicit` (`--config`), else `$TMPROXY_CONFIG`, else `./config.toml` if present, else the
    /// built-in defaults; then applies env overrides and validates. Returns the config and where it came from.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, String), ConfigError> {
        // Lossy rather than `var().ok()`: a non-UTF-8 value should fail to parse, not be silently ignored.
        let get = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
        Config::load_from(explicit, get, Path::new("."))
    }

    /// [`Config::load`] with the environment and working directory passed in, so tests need not mutate either.
    /// A relative `TMPROXY_CONFIG` is resolved against `cwd`.
    pub fn load_from(
        explicit: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<(Config, String), ConfigError> {
        let path: Option<PathBuf> = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => match get(CONFIG_ENV).filter(|v| !v.trim().is_empty()) {
                Some(p) => Some(cwd.join(p)),
                None => Some(cwd.join(DEFAULT_FILE)).filter(|p| p.is_file()),
            },
        };
        let (mut cfg, origin, text) = match path {
            Some(p) => {
                let origin = p.display().to_string();
                let text = std::fs::read_to_string(&p).map_err(|e| {
                    ConfigError::new(&origin, "(file)", format!("cannot read: {e}"))
                })?;
                (Config::from_toml_str(&text, &origin)?, origin, text)
            }
            None => (Config::default(), BUILTIN_ORIGIN.to_owned(), String::new()),
        };
        // Where each timeout was set, if anywhere (the variable wins over the file, as in
        // apply_env): the error names the key, these name the file or the variable.
        let set_by = |var: &str, key: &str| -> Option<String> {
            if get(var).is_some() {
                Some(format!("env {var}"))
            } else {
                file_sets(&text, "upstream", key).then(|| origin.clone())
            }
        };
        let connect_from = set_by("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "connect_timeout");
        let timeout_from = set_by("TMPROXY_UPSTREAM_TIMEOUT", "timeout");
        // The archives file first: `TMPROXY_ARCHIVES` (applied with the other variables) picks
        // among the archives it lists.
        if let Some(v) = get("TMPROXY_ARCHIVES_FILE") {
            cfg.upstream.archives_file = v;
        }
        cfg.read_archives_file(cwd, &origin, file_lists_archives(&text))?;
        cfg.apply_env(&get)?;
        cfg.settle_connect_timeout(connect_from.as_deref(), timeout_from.as_deref())?;
        cfg.check(&origin)?;
        Ok((cfg, origin))
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

impl Config {
    /// With `upstream.archives_file` set (relative to `cwd`), its list replaces the built-in one;
    /// the `[[archives]]` of the config file, when it has some (`listed`), follow it.
    fn read_archives_file(
        &mut self,
        cwd: &Path,
        origin: &str,
        listed: bool,
    ) -> Result<(), ConfigError> {
        let name = self.upstream.archives_file.trim();
        if name.is_empty() {
            return Ok(());
        }
        let path = cwd.join(name);
        let from_file = archives_file::read(&path)?;
        let from_config = if listed {
            std::mem::take(&mut self.archives)
        } else {
            Vec::new()
        };
        let file_origin = path.display().to_string();
        self.archives = archives_file::combine(from_file, from_config, &file_origin, origin)?;
        Ok(())
    }
}

/// Whether the config file's text has any `[[archives]]` entry.
fn file_lists_archives(text: &str) -> bool {
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("archives"))
}

/// Whether the file's text sets `[table] key` (it has parsed already, so a parse failure is "no").
fn file_sets(text: &str, table: &str, key: &str) -> bool {
    text.parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get(table).and_then(|v| v.get(key)).map(|_| ()))
        .is_some()
}

#[cfg(test)]
mod tests;
