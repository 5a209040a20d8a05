//! What root upsampling needs from the first-capture stage, on disk rather than in memory: a
//! small record per answer (the domain had a root candidate, or kept a URL at some host),
//! pushed to an external sort ([`ExternalSort`]) as answers arrive and merged by domain when the
//! stage starts. A domain with any root candidate is left alone; any other kept domain is
//! asked at [`front_host`]'s choice among its kept hosts. What is held is the sort's chunk and
//! a bounded window of recent domains for the progress estimate, not a set per domain.

use crate::external_sort::bytes::{put_str, Cursor};
use crate::external_sort::{ExternalSort, Merge, Record};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// One fact about a domain. The derived order sorts by domain, root candidates first.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fact {
    domain: String,
    kind: Kind,
    /// The kept URL's host (empty for a root candidate).
    host: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    RootCandidate,
    KeptWithHost,
}

impl Record for Fact {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(match self.kind {
            Kind::RootCandidate => 0,
            Kind::KeptWithHost => 1,
        });
        put_str(out, &self.domain);
        put_str(out, &self.host);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let kind = match c.u8()? {
            0 => Kind::RootCandidate,
            1 => Kind::KeptWithHost,
            _ => return Err("a kind that is neither root nor kept".into()),
        };
        let (domain, host) = (c.string()?, c.string()?);
        c.end()?;
        Ok(Fact { domain, kind, host })
    }

    fn heap_bytes(&self) -> usize {
        self.domain.len() + self.host.len()
    }
}

/// Whether `candidate` is a better host to ask a domain's root at than `than`: shorter, then
/// first in byte order. A total order, so the choice over a domain's kept hosts is the same
/// whatever order they are met in.
pub(super) fn front_host(candidate: &str, than: &str) -> bool {
    (candidate.len(), candidate) < (than.len(), than)
}

/// Domains remembered for the progress estimate: far more than the answers in flight
/// (`concurrency`·2), so a domain's URLs, adjacent in a SURT index, meet in it.
const RECENT: usize = 4096;

/// The first-capture stage's facts for root upsampling, as they arrive.
pub(super) struct RootHosts {
    spill: ExternalSort<Fact>,
    /// The last fact pushed: a domain's URLs arrive together, so most repeats are skipped
    /// here rather than sorted.
    last: Option<(String, Kind, String)>,
    /// Recent domains, (kept, had a root candidate), and their order of arrival.
    recent: HashMap<String, (bool, bool)>,
    order: VecDeque<String>,
    rootless: u64,
}

impl RootHosts {
    pub(super) fn new(dir: &Path, max_held: usize) -> Result<RootHosts, String> {
        Ok(RootHosts {
            spill: ExternalSort::new(dir, "root-hosts", max_held)?,
            last: None,
            recent: HashMap::new(),
            order: VecDeque::new(),
            rootless: 0,
        })
    }

    /// Bytes held in memory: the chunk not yet in a run, and the window of recent domains.
    pub(super) fn held(&self) -> usize {
        let per = 2 * std::mem::size_of::<String>() + 64;
        self.spill.held() + self.order.iter().map(|d| 2 * d.len() + per).sum::<usize>()
    }

    /// A root candidate of `domain` was answered, whatever the answer.
    pub(super) fn root_candidate(&mut self, domain: &str) -> Result<(), String> {
        self.note(domain, false, true);
        self.push(domain, Kind::RootCandidate, "")
    }

    /// A URL of `domain` at `host` was kept.
    pub(super) fn kept(&mut self, domain: &str, host: &str) -> Result<(), String> {
        self.note(domain, true, false);
        self.push(domain, Kind::KeptWithHost, host)
    }

    fn push(&mut self, domain: &str, kind: Kind, host: &str) -> Result<(), String> {
        if let Some((d, k, h)) = &self.last {
            if d == domain && *k == kind && h == host {
                return Ok(());
            }
        }
        self.last = Some((domain.to_string(), kind, host.to_string()));
        self.spill.push(Fact {
            domain: domain.to_string(),
            kind,
            host: host.to_string(),
        })
    }

    /// Domains kept without a root candidate so far, an estimate: exact unless a domain's
    /// URLs are further apart than [`RECENT`] domains (then it may count twice, or a root
    /// candidate seen late is missed).
    pub(super) fn rootless_estimate(&self) -> u64 {
        self.rootless
    }

    fn note(&mut self, domain: &str, kept: bool, root: bool) {
        let counts = |(k, r): (bool, bool)| u64::from(k && !r);
        let before = match self.recent.get_mut(domain) {
            Some(state) => {
                let before = *state;
                state.0 |= kept;
                state.1 |= root;
                before
            }
            None => {
                self.recent.insert(domain.to_string(), (kept, root));
                self.order.push_back(domain.to_string());
                if self.order.len() > RECENT {
                    if let Some(old) = self.order.pop_front() {
                        // Its count stays: it was decided as far as the window can tell.
                        self.recent.remove(&old);
                    }
                }
                (false, false)
            }
        };
        let after = self.recent.get(domain).copied().unwrap_or((kept, root));
        self.rootless = (self.rootless + counts(after)).saturating_sub(counts(before));
    }

    /// The domains root upsampling asks, in domain order, each with its host. Can be called
    /// again (a first pass counts them).
    pub(super) fn rootless(&mut self) -> Result<Rootless, String> {
        self.recent = HashMap::new();
        self.order = VecDeque::new();
        Ok(Rootless {
            merge: self.spill.merge()?,
            next: None,
        })
    }

    /// Deletes the run files.
    pub(super) fn remove(self) {
        self.spill.remove();
    }
}

/// Rootless domains with their front host, from the merged facts.
pub(super) struct Rootless {
    merge: Merge<Fact>,
    /// A fact read past the end of the previous domain.
    next: Option<Fact>,
}

impl Iterator for Rootless {
    type Item = Result<(String, String), String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let first = match self.next.take() {
                Some(f) => f,
                None => match self.merge.next()? {
                    Ok(f) => f,
                    Err(e) => return Some(Err(e)),
                },
            };
            let mut root = first.kind == Kind::RootCandidate;
            let mut front: Option<String> = (!root).then_some(first.host);
            loop {
                match self.merge.next() {
                    None => break,
                    Some(Err(e)) => return Some(Err(e)),
                    Some(Ok(f)) if f.domain != first.domain => {
                        self.next = Some(f);
                        break;
                    }
                    Some(Ok(f)) => match f.kind {
                        Kind::RootCandidate => root = true,
                        Kind::KeptWithHost => match &front {
                            Some(h) if !front_host(&f.host, h) => {}
                            _ => front = Some(f.host),
                        },
                    },
                }
            }
            match (root, front) {
                (false, Some(host)) => return Some(Ok((first.domain, host))),
                // Left alone (a root candidate) or never kept: the next domain.
                _ => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_host_is_the_shortest_then_first_in_byte_order_in_any_order() {
        let hosts = [
            "www2.example.com",
            "www.example.com",
            "example.com",
            "wwx.example.com",
        ];
        fn pick<'a>(order: &[&'a str]) -> &'a str {
            order.iter().fold(
                order[0],
                |front, h| {
                    if front_host(h, front) {
                        h
                    } else {
                        front
                    }
                },
            )
        }
        let mut order = hosts.to_vec();
        for _ in 0..hosts.len() {
            assert_eq!(pick(&order), "example.com", "{order:?}");
            order.rotate_left(1);
            let mut rev = order.clone();
            rev.reverse();
            assert_eq!(pick(&rev), "example.com", "{rev:?}");
        }
        // Same length: byte order.
        assert!(front_host("www.example.com", "wwx.example.com"));
        assert!(!front_host("wwx.example.com", "www.example.com"));
        assert!(!front_host("example.com", "example.com"));
    }

    fn all(r: &mut RootHosts) -> Vec<(String, String)> {
        r.rootless()
            .expect("merge")
            .collect::<Result<_, _>>()
            .expect("facts")
    }

    #[test]
    fn rootless_domains_get_their_front_host_in_domain_order_whatever_the_arrival() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A tiny chunk: several runs, merged.
        let mut r = RootHosts::new(dir.path(), 64).expect("spill");
        r.kept("example.com", "www.example.com").expect("push");
        r.kept("b.org", "b.org").expect("push");
        r.kept("example.com", "www2.example.com").expect("push");
        r.kept("withroot.net", "www.withroot.net").expect("push");
        r.kept("example.com", "example.com").expect("push");
        r.kept("example.com", "www.example.com").expect("push");
        r.root_candidate("withroot.net").expect("push");
        // A root candidate not kept, and no URL kept: nothing to ask either.
        r.root_candidate("gone.com").expect("push");
        assert_eq!(r.rootless_estimate(), 2);
        let want = vec![
            ("b.org".to_string(), "b.org".to_string()),
            ("example.com".to_string(), "example.com".to_string()),
        ];
        assert_eq!(all(&mut r), want);
        // Again, the same (the first pass counts, the second asks).
        assert_eq!(all(&mut r), want);
        r.remove();
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn a_garbled_fact_is_an_error_not_a_panic() {
        assert!(Fact::decode(&[7, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(Fact::decode(&[1, 9, 0, 0, 0]).is_err());
        let mut b = Vec::new();
        Fact {
            domain: "a.com".into(),
            kind: Kind::KeptWithHost,
            host: "a.com".into(),
        }
        .encode(&mut b);
        b.push(0);
        assert!(Fact::decode(&b).is_err(), "a byte past its fields");
    }
}
