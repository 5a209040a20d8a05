//! Why a store operation failed, for every tier alike.

use std::path::PathBuf;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be created or the database in it could not be opened.
    #[error("cannot open the cache store at {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    /// The persistent tier failed to read, write or flush.
    #[error("cache store I/O failed: {0}")]
    Sled(String),
    /// The value could not be serialized.
    #[error("cannot encode a cache entry: {0}")]
    Encode(String),
    /// The disk cannot take the write now (full, read-only); sled was not asked.
    #[error("cache write refused: {0}")]
    Refused(String),
    /// The persistent tier is out of service while it is reopened.
    #[error("the persistent cache tier is unavailable: {0}")]
    Unavailable(String),
}
