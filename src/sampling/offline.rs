//! The offline stages chained over index lines, in this order: read, unique SURTs, SURT → URL
//! (invalid set aside), wildcard URLs (dropped, their host's root re-entered if new), SURT
//! www-collisions, session-id aliases, index-file aliases (root re-entered if new), likely HTML,
//! popular domains (set aside for the per-year quota sampler). Each stage counts in, out, set
//! aside and errors; every URL not passed on goes to the set-aside sink with its reason (a
//! duplicate SURT is counted, not recorded: it is the same URL again). A re-entered root is a
//! new URL: it is counted in a side row of its own (`wildcard_roots`, `index_file_roots`)
//! whose `out` joins `popular_domains`, so each stage's `in = out + set_aside + errors` holds.
//!
//! Memory: the last SURT key (the index is sorted, so duplicates are adjacent) and the set of
//! hosts whose root URL has been passed on; nothing per input line.

use super::filters::{has_session_id, is_index_alias, is_root, is_wildcard, likely_html, root_of};
use super::index::{parse_line, BadLine};
use super::surt::{self, strip_www, url_host, www_collision};
use super::{Counters, FunnelRow, SetAside};
use std::collections::HashSet;

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
    roots: HashSet<String>,
}

impl Offline {
    /// `popular`: domains set aside for the quota sampler (a URL of `x.twitter.com` is
    /// `twitter.com`'s).
    pub fn new(popular: &[String]) -> Offline {
        Offline {
            popular: popular.iter().map(|d| d.to_ascii_lowercase()).collect(),
            counters: [Counters::default(); STAGES.len()],
            last_key: String::new(),
            roots: HashSet::new(),
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

    /// Hosts whose root URL has been passed on (what memory grows with).
    pub fn hosts(&self) -> usize {
        self.roots.len()
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
        self.counters[SURT_TO_URL].output += 1;
        let host = url_host(&url).unwrap_or_default();

        self.counters[WILDCARDS].input += 1;
        if is_wildcard(&url) {
            self.aside(
                WILDCARDS,
                &url,
                "CDX wildcard URL (ends with '*')".into(),
                aside,
            );
            self.reenter_root(WILDCARD_ROOTS, &url, &host, out, aside);
            return;
        }
        self.counters[WILDCARDS].output += 1;

        self.counters[COLLISIONS].input += 1;
        let lost = match rec.original.and_then(url_host) {
            Some(orig) => www_collision(&host, &orig),
            // Without the original URL, a key whose host is a bare TLD (`com)/`) can only be
            // IA's `www\d*.` rule collapsing some `wwwN.com`.
            None => (!host.contains('.') && host.parse::<std::net::Ipv4Addr>().is_err())
                .then(|| format!("www*.{host}")),
        };
        if let Some(lost) = lost {
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
        if root {
            self.roots.insert(host.to_string());
        }
        out(Candidate {
            url,
            domain,
            root,
            reentered,
        });
    }

    /// A stage that drops a URL re-enters its host's root URL, once per host: a new URL,
    /// counted in the side row `side`, then through the popular-domains stage like any other.
    fn reenter_root(
        &mut self,
        side: usize,
        url: &str,
        host: &str,
        out: &mut impl FnMut(Candidate),
        aside: &mut impl FnMut(SetAside),
    ) {
        if host.is_empty() || self.roots.contains(host) {
            return;
        }
        self.roots.insert(host.to_string());
        self.counters[side].input += 1;
        self.counters[side].output += 1;
        self.pass(POPULAR, root_of(url), host, true, true, out, aside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str], popular: &[&str]) -> (Vec<Candidate>, Vec<SetAside>, Vec<FunnelRow>) {
        let popular: Vec<String> = popular.iter().map(|s| s.to_string()).collect();
        let mut o = Offline::new(&popular);
        let (mut c, mut a) = (Vec::new(), Vec::new());
        for l in lines {
            o.push_line(l, &mut |x| c.push(x), &mut |x| a.push(x));
        }
        (c, a, o.funnel())
    }

    fn urls(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.url.as_str()).collect()
    }

    #[test]
    fn the_papers_examples_through_every_stage() {
        let id32 = "0123456789abcdefABCDEF0123456789";
        let session = format!("com,clickbank)/index.html;jsessionid={id32} 20050101000000 p 0 1");
        let lines = [
            " CDX N b a m s k r M S V g",
            ")/?dn=renunciationguide.com&flrdr=yes&nxte=css 20090101000000 p 0 1",
            "*)/robots.txt 20090101000000 p 0 1",
            "am,dx,brs53)/scripts/jquery.min.js 20100101000000 p 0 1",
            "ar,com,notiche)/index.php?limitstart=42 20100101000000 p 0 1",
            "ar,com,notiche)/index.php?limitstart=42 20110101000000 p 0 1",
            session.as_str(),
            "com,abc)/index.asp 20010101000000 p 0 1",
            "com,example:8080)/ 20030101000000 p 0 1",
            "com,example:8080)/a.php3 20030101000000 p 0 1",
            "com,shop)/search?text=* 20120101000000 p 0 1",
            "com)/ 20150101000000 http://www1355544.com/ text/html 200 AAA 100",
            "com,twitter)/jack 20160101000000 p 0 1",
            "garbage-without-timestamp",
        ];
        let (c, a, f) = run(&lines, &["twitter.com"]);
        assert_eq!(
            urls(&c),
            vec![
                "https://notiche.com.ar/index.php?limitstart=42",
                "https://abc.com/",
                "https://example.com:8080/",
                "https://example.com:8080/a.php3",
                "https://shop.com/",
            ]
        );
        assert!(
            c[1].reentered && c[1].root,
            "an index file's host root stands for it"
        );
        // A session-id alias is set aside without re-entering anything.
        assert!(!urls(&c).contains(&"https://clickbank.com/"));
        let reasons: Vec<(&str, &str)> = a.iter().map(|s| (s.stage, s.reason.as_str())).collect();
        assert!(reasons.contains(&("surt_to_url", "invalid: no host")));
        assert!(reasons.contains(&("surt_to_url", "invalid: '*' in the host")));
        assert!(reasons.contains(&("likely_html", "not likely HTML (.js)")));
        assert!(reasons.contains(&("session_ids", "session-id alias")));
        assert!(reasons.contains(&("index_files", "index-file alias of the root URL")));
        assert!(reasons.contains(&("wildcards", "CDX wildcard URL (ends with '*')")));
        assert!(reasons
            .iter()
            .any(|(s, r)| *s == "www_collisions" && r.contains("www1355544.com")));
        assert!(reasons
            .iter()
            .any(|(s, r)| *s == "popular_domains" && r.contains("twitter.com")));
        assert!(reasons.iter().any(|(s, _)| *s == "read"));
        let at = |s: &str| f.iter().find(|r| r.stage == s).map(|r| r.counters);
        assert_eq!(
            at("read"),
            Some(Counters {
                input: 13,
                output: 12,
                set_aside: 0,
                errors: 1
            })
        );
        assert_eq!(
            at("unique_surts"),
            Some(Counters {
                input: 12,
                output: 11,
                set_aside: 1,
                errors: 0
            })
        );
        // Every URL that went in came out, was set aside or was an error; re-entered roots
        // are their own rows, joining popular_domains.
        for r in &f {
            let c = r.counters;
            assert_eq!(c.output + c.set_aside + c.errors, c.input, "{r:?}");
        }
        assert_eq!(STAGES.len(), f.len());
        let side: u64 = f
            .iter()
            .filter(|r| r.into == Some("popular_domains"))
            .map(|r| r.counters.output)
            .sum();
        assert_eq!(at("wildcard_roots").map(|c| c.output), Some(1));
        assert_eq!(at("index_file_roots").map(|c| c.output), Some(1));
        assert_eq!(
            at("popular_domains").map(|c| c.input),
            at("likely_html").map(|c| c.output + side)
        );
    }

    #[test]
    fn a_root_already_in_the_index_is_not_reentered() {
        let (c, _, _) = run(
            &[
                "com,abc)/ 20010101000000 p 0 1",
                "com,abc)/index.html 20010101000000 p 0 1",
                "com,abc)/index.php 20010101000000 p 0 1",
            ],
            &[],
        );
        assert_eq!(urls(&c), vec!["https://abc.com/"]);
        assert!(!c[0].reentered);
    }
}
