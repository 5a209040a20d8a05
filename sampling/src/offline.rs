//! The offline stages chained over index lines, in this order: read, unique SURTs, SURT → URL
//! (invalid set aside), wildcard URLs (dropped, their host's root re-entered if new), SURT
//! www-collisions, session-id aliases, index-file aliases (root re-entered if new), likely HTML,
//! popular domains (set aside for the per-year quota sampler). Each stage counts in, out, set
//! aside and errors; every URL not passed on goes to the set-aside sink with its reason (a
//! duplicate SURT is counted, not recorded: it is the same URL again). A re-entered root is a
//! new URL: it is counted in a side row of its own (`wildcard_roots`, `index_file_roots`)
//! whose `out` joins `popular_domains`, so each stage's `in = out + set_aside + errors` holds.
//!
//! A root URL is re-entered only if new: not passed on yet, from the index or re-entered. The
//! input is sorted by SURT key and a root URL (`https://host:port/`) comes from one key host
//! part (`com,example:8080)`) while the keys are spelled one way (see [`surt::Spelling`]; a key
//! spelled unlike the index's others is set aside as invalid), so a root URL's lines are one
//! contiguous block: whether its root went through is known from the current block alone.
//!
//! Memory: the last SURT key (the index is sorted, so duplicates are adjacent), the current
//! block's root URL and whether it went through; nothing per input line or host.

use super::filters::{has_session_id, is_index_alias, is_root, is_wildcard, likely_html, root_of};
use super::index::{parse_line, BadLine};
use super::surt::{self, strip_www, url_host, www_collision, Spelling};
use super::{Counters, FunnelRow, SetAside};

/// The stages, in pipeline order (their names are the funnel's).
pub const STAGES: [&str; 11] = [
    "read",
    "unique_surts",
    "surt_to_url",
    "wildcards",
    "www_collisions",
    "session_ids",
    "index_files",
    "likely_html",
    "wildcard_roots",
    "index_file_roots",
    "popular_domains",
];

const READ: usize = 0;
const UNIQUE: usize = 1;
const SURT_TO_URL: usize = 2;
const WILDCARDS: usize = 3;
const COLLISIONS: usize = 4;
const SESSION_IDS: usize = 5;
const INDEX_FILES: usize = 6;
const LIKELY_HTML: usize = 7;
const WILDCARD_ROOTS: usize = 8;
const INDEX_FILE_ROOTS: usize = 9;
const POPULAR: usize = 10;

/// A URL that passed every offline stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub url: String,
    /// The domain downsampling groups by: the host, `www\d*.` stripped by our rule.
    pub domain: String,
    pub root: bool,
    /// Put back by a stage (a wildcard's or an index file's host root), not read from the index.
    pub reentered: bool,
}

/// The offline stages' state and counters.
pub struct Offline {
    popular: Vec<String>,
    counters: [Counters; STAGES.len()],
    last_key: String,
    /// The index's spelling, learnt from the keys that gave a URL; every other must match it.
    spelling: Option<Spelling>,
    /// The root URL of the current block of lines, and whether it has gone through already.
    block_root: String,
    root_seen: bool,
}

impl Offline {
    /// `popular`: domains set aside for the quota sampler (a URL of `x.twitter.com` is
    /// `twitter.com`'s).
    pub fn new(popular: &[String]) -> Offline {
        Offline {
            popular: popular.iter().map(|d| d.to_ascii_lowercase()).collect(),
            counters: [Counters::default(); STAGES.len()],
            last_key: String::new(),
            spelling: None,
            block_root: String::new(),
            root_seen: false,
        }
    }

    /// The funnel so far, in pipeline order.
    pub fn funnel(&self) -> Vec<FunnelRow> {
        STAGES
            .iter()
            .zip(self.counters)
            .enumerate()
            .map(|(i, (&stage, counters))| FunnelRow {
                into: matches!(i, WILDCARD_ROOTS | INDEX_FILE_ROOTS).then_some(STAGES[POPULAR]),
                ..FunnelRow::main(stage, counters)
            })
            .collect()
    }

    fn aside(&mut self, stage: usize, url: &str, reason: String, sink: &mut impl FnMut(SetAside)) {
        self.counters[stage].set_aside += 1;
        sink(SetAside {
            stage: STAGES[stage],
            url: url.to_string(),
            reason,
        });
    }

    /// A line the reader could not hand over (longer than `max_line`, not UTF-8): read, in
    /// error, and set aside with its reason (which names its line), like a line with no
    /// timestamp; the run goes on.
    pub fn reject_line(&mut self, shown: &str, reason: String, aside: &mut impl FnMut(SetAside)) {
        self.counters[READ].input += 1;
        self.counters[READ].errors += 1;
        aside(SetAside {
            stage: STAGES[READ],
            url: shown.to_string(),
            reason,
        });
    }

    /// One index line through every stage.
    pub fn push_line(
        &mut self,
        line: &str,
        out: &mut impl FnMut(Candidate),
        aside: &mut impl FnMut(SetAside),
    ) {
        let rec = match parse_line(line) {
            Ok(r) => r,
            // Not data: blank lines and CDX headers are skipped, not counted.
            Err(BadLine::Empty | BadLine::Header) => return,
            Err(BadLine::NoTimestamp) => {
                self.counters[READ].input += 1;
                self.counters[READ].errors += 1;
                aside(SetAside {
                    stage: STAGES[READ],
                    url: line.trim_end().chars().take(2_000).collect(),
                    reason: "not an index line (no timestamp after the key)".to_string(),
                });
                return;
            }
        };
        self.counters[READ].input += 1;
        self.counters[READ].output += 1;

        self.counters[UNIQUE].input += 1;
        if rec.key == self.last_key {
            self.counters[UNIQUE].set_aside += 1;
            return;
        }
        self.last_key.clear();
        self.last_key.push_str(rec.key);
        self.counters[UNIQUE].output += 1;

        self.counters[SURT_TO_URL].input += 1;
        let url = match surt::to_url(rec.key) {
            Ok(u) => u,
            Err(e) => {
                let reason = format!("invalid: {}", e.reason());
                self.aside(SURT_TO_URL, rec.key, reason, aside);
                return;
            }
        };
        if let Some(reason) = self.spelling_clash(surt::spelling(rec.key)) {
            self.aside(SURT_TO_URL, rec.key, reason, aside);
            return;
        }
        self.counters[SURT_TO_URL].output += 1;
        let root = root_part(&url);
        if root != self.block_root {
            self.block_root.clear();
            self.block_root.push_str(root);
            self.root_seen = false;
        }
        let host = url_host(&url).unwrap_or_default();

        // Judged once, before the wildcard stage needs it: a wildcard whose key host stands for
        // another host must not re-enter that host's root (it would be the colliding URL).
        let lost = match rec.original.and_then(url_host) {
            Some(orig) => www_collision(&host, &orig),
            // Without the original URL, a key whose host is a bare TLD (`com)/`) can only be
            // IA's `www\d*.` rule collapsing some `wwwN.com`.
            None => (!host.contains('.') && host.parse::<std::net::Ipv4Addr>().is_err())
                .then(|| format!("www*.{host}")),
        };

        self.counters[WILDCARDS].input += 1;
        if is_wildcard(&url) {
            self.aside(
                WILDCARDS,
                &url,
                "CDX wildcard URL (ends with '*')".into(),
                aside,
            );
            if lost.is_none() {
                self.reenter_root(WILDCARD_ROOTS, &url, &host, out, aside);
            }
            return;
        }
        self.counters[WILDCARDS].output += 1;

        self.counters[COLLISIONS].input += 1;
        if let Some(lost) = lost {
            // A root set aside here is accounted for: no later line of its block re-enters it.
            self.root_seen |= is_root(&url);
            let reason = format!("SURT www-collision: the key's host `{host}` stands for `{lost}`");
            self.aside(COLLISIONS, &url, reason, aside);
            return;
        }
        self.counters[COLLISIONS].output += 1;

        self.counters[SESSION_IDS].input += 1;
        if has_session_id(&url) {
            self.aside(SESSION_IDS, &url, "session-id alias".into(), aside);
            return;
        }
        self.counters[SESSION_IDS].output += 1;

        self.counters[INDEX_FILES].input += 1;
        if is_index_alias(&url) {
            self.aside(
                INDEX_FILES,
                &url,
                "index-file alias of the root URL".into(),
                aside,
            );
            self.reenter_root(INDEX_FILE_ROOTS, &url, &host, out, aside);
            return;
        }
        self.counters[INDEX_FILES].output += 1;

        self.counters[LIKELY_HTML].input += 1;
        if likely_html(&url).is_none() {
            let path = super::filters::path_of(&url);
            let ext = path
                .rsplit('/')
                .next()
                .and_then(|l| l.rsplit_once('.'))
                .map_or("", |e| e.1);
            self.aside(
                LIKELY_HTML,
                &url,
                format!("not likely HTML (.{ext})"),
                aside,
            );
            return;
        }
        self.counters[LIKELY_HTML].output += 1;

        let root = is_root(&url);
        self.pass(POPULAR, url, &host, root, false, out, aside);
    }

    /// The last stage, and the way back in for re-entered roots.
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &mut self,
        stage: usize,
        url: String,
        host: &str,
        root: bool,
        reentered: bool,
        out: &mut impl FnMut(Candidate),
        aside: &mut impl FnMut(SetAside),
    ) {
        self.counters[stage].input += 1;
        // In the sample's way or the quota's, a root that got here is not new any more.
        self.root_seen |= root;
        let domain = strip_www(host).to_string();
        if let Some(p) = self
            .popular
            .iter()
            .find(|p| domain == **p || domain.ends_with(&format!(".{p}")))
        {
            let reason = format!("popular domain {p}: re-entered by the per-year quota sampler");
            self.aside(stage, &url, reason, aside);
            return;
        }
        self.counters[stage].output += 1;
        out(Candidate {
            url,
            domain,
            root,
            reentered,
        });
    }

    /// Why a key's spelling is not the index's, if it is not. The index's is learnt from its
    /// keys: the scheme prefix from the first, the trailing commas from the first that has a
    /// say (an IPv4 host has none).
    fn spelling_clash(&mut self, key: Spelling) -> Option<String> {
        let index = self.spelling.get_or_insert(key);
        let commas = match (index.trailing_commas, key.trailing_commas) {
            (None, Some(_)) => {
                index.trailing_commas = key.trailing_commas;
                true
            }
            (Some(a), Some(b)) => a == b,
            (_, None) => true,
        };
        if index.prefix == key.prefix && commas {
            return None;
        }
        let shown = |s: Spelling| {
            let commas = s.trailing_commas.map_or("any".into(), |n| n.to_string());
            format!("scheme prefix `{}`, {commas} trailing comma(s)", s.prefix)
        };
        Some(format!(
            "invalid: spelled unlike the index's keys ({}, not {}): one URL could be named twice",
            shown(key),
            shown(*index)
        ))
    }

    /// A stage that drops a URL re-enters its root URL (scheme, host and port) unless it went
    /// through already: a new URL, counted in the side row `side`, then through the
    /// popular-domains stage like any other.
    fn reenter_root(
        &mut self,
        side: usize,
        url: &str,
        host: &str,
        out: &mut impl FnMut(Candidate),
        aside: &mut impl FnMut(SetAside),
    ) {
        if host.is_empty() || self.root_seen {
            return;
        }
        self.counters[side].input += 1;
        self.counters[side].output += 1;
        self.pass(POPULAR, root_of(url), host, true, true, out, aside);
    }
}

/// `https://host:port/` of a URL `surt::to_url` built (its path always starts with `/`): what
/// [`root_of`] gives, without a new string per line.
fn root_part(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    url[start..]
        .find('/')
        .map_or(url, |j| &url[..start + j + 1])
}

#[cfg(test)]
mod tests;
