//! Reading the configuration: the file (named by `--config`, `TMPROXY_CONFIG`, or found in the
//! working directory), the archives file it names, the `TMPROXY_*` overrides, then validation.
//! A module apart from the schema the parts are read into: it calls every reader, and none of
//! them calls it back.

use super::archives_file;
use super::diagnostics::toml_error;
use super::env::CONFIG_ENV;
use super::error::{ConfigError, BUILTIN_ORIGIN};
use super::schema::Config;
use std::path::{Path, PathBuf};

/// File looked for in the working directory when neither `--config` nor `TMPROXY_CONFIG` names one.
pub const DEFAULT_FILE: &str = "config.toml";

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
        super::env::check_variable_names(
            std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned()),
        )?;
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
        cfg.check(&origin).map_err(|e| blame_variable(e, &get))?;
        Ok((cfg, origin))
    }
}

/// A validation error about a key a `TMPROXY_*` variable set names the variable, not the file:
/// the value that failed is the variable's.
fn blame_variable(mut e: ConfigError, get: &impl Fn(&str) -> Option<String>) -> ConfigError {
    let set = super::env::ENV_OVERRIDES
        .iter()
        .find(|(var, key)| *key == e.key && get(var).is_some());
    if let Some((var, _)) = set {
        e.origin = format!("env {var}");
    }
    e
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
