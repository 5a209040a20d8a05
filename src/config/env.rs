//! `TMPROXY_*` environment variables, each replacing one key of the file.

use super::values::{
    normalize_public_url, parse_duration, parse_listen, parse_net, parse_opt_listen, parse_size,
};
use super::{Config, ConfigError};

/// Every environment override and the key it replaces, so `--help` text and docs can list them.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("TMPROXY_LISTEN", "server.listen"),
    ("TMPROXY_PUBLIC_URL", "server.public_url"),
    ("TMPROXY_TRUSTED_PROXIES", "server.trusted_proxies"),
    ("TMPROXY_DATA_DIR", "server.data_dir"),
    (
        "TMPROXY_UPSTREAM_CONNECT_TIMEOUT",
        "upstream.connect_timeout",
    ),
    ("TMPROXY_UPSTREAM_TIMEOUT", "upstream.timeout"),
    ("TMPROXY_UPSTREAM_DEADLINE", "upstream.deadline"),
    ("TMPROXY_MAX_BODY", "upstream.max_body"),
    ("TMPROXY_USER_AGENT", "upstream.user_agent"),
    ("TMPROXY_UPSTREAM_CONTACT", "upstream.contact"),
    ("TMPROXY_ARCHIVES", "archives.enabled"),
    ("TMPROXY_ARCHIVES_FILE", "upstream.archives_file"),
    ("TMPROXY_CACHE_POLICY", "cache.policy"),
    ("TMPROXY_CACHE_TTL_MODE", "cache.ttl_mode"),
    ("TMPROXY_CACHE_PATH", "cache.path"),
    ("TMPROXY_CACHE_SHARED", "cache.shared"),
    ("TMPROXY_ADMIN_TOKEN", "admin.token"),
    ("TMPROXY_ADMIN_TOKEN_FILE", "admin.token"),
    ("TMPROXY_ADMIN_LISTEN", "admin.listen"),
    ("TMPROXY_OBSERVE_LOG", "observe.log"),
    ("TMPROXY_LOG_FORMAT", "log.format"),
];

impl Config {
    /// Applies the `TMPROXY_*` overrides listed in [`ENV_OVERRIDES`]; `get` reads one variable.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = env_override(&get, "TMPROXY_LISTEN", "server.listen", parse_listen)? {
            self.server.listen = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_PUBLIC_URL", "server.public_url", |s| {
            Ok(normalize_public_url(s))
        })? {
            self.server.public_url = v;
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_TRUSTED_PROXIES",
            "server.trusted_proxies",
            parse_net_list,
        )? {
            self.server.trusted_proxies = v;
        }
        let u = &mut self.upstream;
        for (var, key, slot) in [
            (
                "TMPROXY_UPSTREAM_CONNECT_TIMEOUT",
                "upstream.connect_timeout",
                &mut u.connect_timeout,
            ),
            (
                "TMPROXY_UPSTREAM_TIMEOUT",
                "upstream.timeout",
                &mut u.timeout,
            ),
            (
                "TMPROXY_UPSTREAM_DEADLINE",
                "upstream.deadline",
                &mut u.deadline,
            ),
        ] {
            if let Some(v) = env_override(&get, var, key, parse_duration)? {
                *slot = v;
            }
        }
        if let Some(v) = env_override(&get, "TMPROXY_MAX_BODY", "upstream.max_body", parse_size)? {
            u.max_body = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_USER_AGENT", "upstream.user_agent", |s| {
            Ok(s.to_owned())
        })? {
            u.user_agent = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_UPSTREAM_CONTACT", "upstream.contact", |s| {
            Ok(s.to_owned())
        })? {
            u.contact = v;
        }
        for (var, key, slot) in [
            ("TMPROXY_CACHE_PATH", "cache.path", &mut self.cache.path),
            (
                "TMPROXY_DATA_DIR",
                "server.data_dir",
                &mut self.server.data_dir,
            ),
            (
                "TMPROXY_ARCHIVES_FILE",
                "upstream.archives_file",
                &mut self.upstream.archives_file,
            ),
            ("TMPROXY_ADMIN_TOKEN", "admin.token", &mut self.admin.token),
            ("TMPROXY_OBSERVE_LOG", "observe.log", &mut self.observe.log),
        ] {
            if let Some(v) = env_override(&get, var, key, |s| Ok(s.to_owned()))? {
                *slot = v;
            }
        }
        let token_too = get("TMPROXY_ADMIN_TOKEN").is_some();
        if let Some(v) = env_override(&get, "TMPROXY_ADMIN_TOKEN_FILE", "admin.token", |path| {
            token_from_file(path, token_too)
        })? {
            self.admin.token = v;
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_CACHE_POLICY",
            "cache.policy",
            super::fields::policy_field::parse,
        )? {
            self.cache.policy = v;
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_CACHE_TTL_MODE",
            "cache.ttl_mode",
            super::fields::ttl_mode_field::parse,
        )? {
            self.cache.ttl_mode = v;
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_CACHE_SHARED",
            "cache.shared",
            super::SharedAddress::parse,
        )? {
            self.cache.shared = v;
        }
        if let Some(v) = env_override(
            &get,
            "TMPROXY_ADMIN_LISTEN",
            "admin.listen",
            parse_opt_listen,
        )? {
            self.admin.listen = v;
        }
        if let Some(v) = env_override(&get, "TMPROXY_LOG_FORMAT", "log.format", parse_log_format)? {
            self.log.format = v;
        }
        let known: Vec<&str> = self.archives.iter().map(|a| a.id.as_str()).collect();
        if let Some(ids) = env_override(&get, "TMPROXY_ARCHIVES", "archives.enabled", |s| {
            parse_id_list(s, &known)
        })? {
            for a in &mut self.archives {
                a.enabled = ids.contains(&a.id);
            }
        }
        Ok(())
    }
}

fn parse_log_format(s: &str) -> Result<super::LogFormat, String> {
    match s {
        "text" => Ok(super::LogFormat::Text),
        "json" => Ok(super::LogFormat::Json),
        _ => Err(format!("{s:?} is not \"text\" or \"json\"")),
    }
}

/// Reads and parses one override; errors name the variable as origin and the config key it replaces.
fn env_override<T>(
    get: &impl Fn(&str) -> Option<String>,
    var: &str,
    key: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, ConfigError> {
    match get(var) {
        None => Ok(None),
        Some(v) => parse(&v)
            .map(Some)
            .map_err(|r| ConfigError::new(&format!("env {var}"), key, r)),
    }
}

/// The most a token file may hold: a token is tens of bytes, and a path to a large file is a
/// mistake to say rather than a file to read into memory.
const MAX_TOKEN_FILE: u64 = 4096;

/// The admin token from the file at `path` (a Docker or compose secret, say), without its final
/// line end; refused when `TMPROXY_ADMIN_TOKEN` is set too (which would win is not obvious), when
/// the file cannot be read, is empty or is larger than a token.
fn token_from_file(path: &str, token_too: bool) -> Result<String, String> {
    if token_too {
        return Err("TMPROXY_ADMIN_TOKEN is set too: set one of the two".into());
    }
    let mut file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(&mut file, MAX_TOKEN_FILE + 1),
        &mut text,
    )
    .map_err(|e| format!("{path}: {e}"))?;
    if text.len() as u64 > MAX_TOKEN_FILE {
        return Err(format!(
            "{path}: longer than {MAX_TOKEN_FILE} bytes, not a token"
        ));
    }
    let token = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    if token.is_empty() {
        return Err(format!("{path} is empty"));
    }
    Ok(token.to_owned())
}

/// `TMPROXY_*` variables read besides the overrides: the config file's name and `tmproxy
/// sample`'s progress interval.
pub const OTHER_VARIABLES: &[&str] = &[CONFIG_ENV, PROGRESS_SECS_ENV];

/// How often `tmproxy sample` prints its progress when stderr is not a terminal, in seconds.
pub const PROGRESS_SECS_ENV: &str = "TMPROXY_PROGRESS_SECS";

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "TMPROXY_CONFIG";

/// What the test suite sets for itself, which a server it starts inherits: not tmproxy's to
/// refuse. (`TMPROXY_TEST_*`, and three older names.)
const TEST_PREFIX: &str = "TMPROXY_TEST_";
const TEST_VARIABLES: &[&str] = &[
    "TMPROXY_PYWB_VENV",
    "TMPROXY_PROP_SEED",
    "TMPROXY_STUCK_FLAG",
];

/// Refuses a `TMPROXY_*` variable tmproxy does not read, as an unknown key in the file is: a
/// misspelt override (`TMPROXY_LISTN`) would otherwise be ignored without a word. The error
/// names the variable and the known one nearest to it.
pub fn check_variable_names(names: impl IntoIterator<Item = String>) -> Result<(), ConfigError> {
    let known = || {
        ENV_OVERRIDES
            .iter()
            .map(|(var, _)| *var)
            .chain(OTHER_VARIABLES.iter().copied())
    };
    for name in names {
        if !name.starts_with("TMPROXY_")
            || name.starts_with(TEST_PREFIX)
            || TEST_VARIABLES.contains(&name.as_str())
            || known().any(|k| k == name)
        {
            continue;
        }
        let nearest = known()
            .map(|k| (strsim::osa_distance(k, &name), k))
            .min()
            .filter(|(d, _)| *d <= 3)
            .map(|(_, k)| format!("; did you mean {k}?"))
            .unwrap_or_default();
        return Err(ConfigError::new(
            &format!("env {name}"),
            "(variable)",
            format!("not a variable tmproxy reads{nearest} (docs/configuration.md lists them)"),
        ));
    }
    Ok(())
}

/// Comma-separated addresses and CIDR ranges; empty trusts no peer.
fn parse_net_list(s: &str) -> Result<Vec<ipnet::IpNet>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(parse_net)
        .collect()
}

fn parse_id_list(s: &str, known: &[&str]) -> Result<Vec<String>, String> {
    let ids: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect();
    if ids.is_empty() {
        return Err("no archive ids given (comma-separated, e.g. \"ia,arquivo\")".into());
    }
    if let Some(bad) = ids.iter().find(|id| !known.contains(&id.as_str())) {
        return Err(format!(
            "unknown archive id {bad:?} (known: {})",
            known.join(", ")
        ));
    }
    Ok(ids)
}
