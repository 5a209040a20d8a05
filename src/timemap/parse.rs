//! The application/link-format tokenizer for upstream TimeMaps (being written).

use super::model::LinkTimeMap;

/// Parses one link-format document; relative URIs are resolved against `base` (the URI-T).
pub fn parse_link_format(body: &str, base: &str) -> LinkTimeMap {
    let _ = (body, base);
    LinkTimeMap::default()
}
