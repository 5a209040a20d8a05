//! What the server lets its jobs do: its `[sampling]` section, handed in as values.

use crate::engine::Limits;

/// What the server lets its jobs do: its `[sampling]` section as values (the server reads and
/// validates the file; this crate never sees it, so its serde form stays the server's).
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    /// A job submitted over HTTP may only read index files inside this directory.
    pub input_dir: String,
    /// URL prefixes a job submitted over HTTP may use for `input` and `cdx_api`, parsed once
    /// where the server read them.
    pub allowed_urls: Vec<url::Url>,
    /// The most concurrent CDX requests a job may make (a spec asking more is capped).
    pub concurrency: usize,
    /// The most CDX requests per second a job may make, and the feed's pace (0 = unlimited).
    pub rate_limit: f64,
    /// A run's reading and memory limits.
    pub limits: Limits,
}

/// The `[sampling]` defaults (the server's config test holds its defaults to these).
impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            input_dir: "data/sampling/input".to_owned(),
            allowed_urls: url::Url::parse("https://web.archive.org/cdx/search/cdx")
                .into_iter()
                .collect(),
            concurrency: 4,
            rate_limit: 1.0,
            limits: Limits::default(),
        }
    }
}
