//! What a configuration problem is reported as: the source it came from, the key, the reason.

/// Origin reported when no file was read.
pub const BUILTIN_ORIGIN: &str = "built-in defaults";

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
    pub(super) fn new(origin: &str, key: &str, reason: impl Into<String>) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}
