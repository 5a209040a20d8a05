//! Loops between aggregators. Every request to an archive names us, `Via: 1.1 {node} (tmproxy)`
//! (RFC 9110 §7.6.3), where the node is our public URL's host and port. A request that reaches
//! us naming ourselves went round a loop; one naming an aggregator we ask (`kind =
//! "aggregator"`) would go round one, since answering it means asking that aggregator on its
//! own behalf. Both are refused (508 Loop Detected) before any archive is asked.

use crate::config::Config;
use crate::timemap::identity::site;
use http::header::HeaderValue;

/// Who we are in a `Via` header, and whom a request must not come from.
#[derive(Debug, Clone)]
pub struct Loops {
    own: String,
    header: HeaderValue,
    /// The nodes of the aggregators we ask.
    aggregators: Vec<String>,
}

impl Loops {
    /// Ours from `public_url`; the aggregators' from the URLs they are configured on.
    pub fn new<'a>(public_url: &str, aggregator_urls: impl IntoIterator<Item = &'a str>) -> Loops {
        let own = site(public_url).map(|s| s.into_owned()).unwrap_or_default();
        // A host is visible ASCII; a public URL that is not gives a bare `tmproxy`.
        let header = HeaderValue::from_str(&format!("1.1 {own} (tmproxy)"))
            .unwrap_or(HeaderValue::from_static("1.1 tmproxy"));
        let mut aggregators: Vec<String> = aggregator_urls
            .into_iter()
            .filter_map(|u| site(u).map(|s| s.into_owned()))
            .collect();
        aggregators.sort();
        aggregators.dedup();
        Loops {
            own,
            header,
            aggregators,
        }
    }

    /// The `Via` value every archive request carries.
    pub fn header(&self) -> &HeaderValue {
        &self.header
    }

    /// Why a request whose `Via` headers are `via` is refused, or None: a node in it is us, or
    /// an aggregator we would ask.
    pub fn refused<'a>(&self, via: impl IntoIterator<Item = &'a str>) -> Option<String> {
        for node in via.into_iter().flat_map(received_by) {
            if !self.own.is_empty() && node == self.own {
                return Some(format!(
                    "Via names this tmproxy ({node}): the request went round a loop"
                ));
            }
            if self.aggregators.contains(&node) {
                return Some(format!(
                    "Via names {node}, an aggregator this tmproxy asks: answering would ask it on its own behalf"
                ));
            }
        }
        None
    }
}

/// Why `config` cannot start with this public URL: an enabled archive configured on it (its
/// TimeMap, TimeGate or CDX URL on our own host and port) would be ourselves, asked on every
/// miss by every miss.
pub fn archive_at_own_url(config: &Config, public_url: &str) -> Option<String> {
    let own = site(public_url)?;
    for (i, a) in config
        .archives
        .iter()
        .enumerate()
        .filter(|(_, a)| a.enabled)
    {
        let urls = a.timemap.iter().chain(a.cdx.iter()).chain([&a.timegate]);
        if urls
            .into_iter()
            .any(|u| site(u.url().as_str()).as_deref() == Some(&*own))
        {
            return Some(format!(
                "archives[{i}] ({}) is on this tmproxy's own public URL ({own}): it would ask itself",
                a.id
            ));
        }
    }
    None
}

/// The `received-by` of each entry of a `Via` value (`[protocol/]version received-by
/// [comment]`, entries separated by commas outside comments), lower-cased.
fn received_by(value: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let (mut depth, mut start) = (0u32, 0);
    for (i, c) in value.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                entries.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&value[start..]);
    entries
        .into_iter()
        .filter_map(|e| e.split_whitespace().nth(1))
        .map(str::to_ascii_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_naming_us_or_an_aggregator_we_ask_is_refused() {
        let loops = Loops::new(
            "https://Agg.Example:443/",
            [
                "http://peer.example:8080/timemap/link/",
                "http://peer.example:8080/timegate/",
            ],
        );
        assert_eq!(loops.header(), "1.1 agg.example (tmproxy)");
        assert!(loops.refused(["1.1 agg.example (tmproxy)"]).is_some());
        assert!(loops
            .refused(["1.0 fred, 1.1 AGG.example (tmproxy, a, b)"])
            .is_some());
        assert!(loops.refused(["HTTP/1.1 peer.example:8080"]).is_some());
        assert!(loops
            .refused(["1.1 peer.example (other)", "1.1 proxy.isp"])
            .is_none());
        assert!(loops.refused(["1.1 agg.example:8443"]).is_none());
        assert!(loops.refused(["", ",,", "garbage"]).is_none());
        // A comment holding a comma and a name is not an entry.
        assert!(loops.refused(["1.1 x (see, 1.1 agg.example)"]).is_none());
    }
}
