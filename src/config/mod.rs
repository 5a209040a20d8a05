//! Configuration: the `config.toml` schema, its built-in defaults, `TMPROXY_*` environment overrides and validation.
//!
//! Each `[table]` of the file is one struct that derives `Deserialize` with `#[serde(default, deny_unknown_fields)]`
//! and implements `Default`; adding a table means adding that struct (in `sections`) plus one field on [`Config`].
//! Durations and sizes are written as strings ("10s", "128MiB") and converted by field-level deserializers,
//! so a bad value is reported with the key it sits under, recovered from the span toml gives.

mod archives;
pub mod archives_file;
mod contact;
mod diagnostics;
mod env;
mod error;
mod fields;
mod http_url;
mod load;
mod redirect_host;
mod routing;
mod schema;
mod sections;
mod shared;
mod validate;
mod values;

pub use archives::{
    ArchiveConfig, ArchiveKind, CdxDialect, DEFAULT_MAX_CONCURRENCY, MAX_CONCURRENCY,
};
pub use env::{
    check_variable_names, CONFIG_ENV, ENV_OVERRIDES, OTHER_VARIABLES, PROGRESS_SECS_ENV,
};
pub use error::{ConfigError, BUILTIN_ORIGIN};
pub use fields::{TtlModeName, CACHE_MATCHES, CACHE_POLICIES, CACHE_TTL_MODES};
pub use http_url::HttpUrl;
pub use load::DEFAULT_FILE;
pub use redirect_host::RedirectHost;
pub use routing::{RoutingConfig, RoutingMode, MAX_ROUTING_KEYS};
pub use schema::Config;
pub use sections::{
    AdminConfig, CacheConfig, Compat, LogConfig, LogFormat, ObserveConfig, SamplingConfig,
    ServerConfig, UpstreamConfig, SLED_CACHE_BYTES,
};
pub use shared::SharedAddress;
pub use values::{format_duration, format_size, parse_duration, parse_size};

#[cfg(test)]
mod tests;
