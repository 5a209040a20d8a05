//! Importing an archive's holdings into its profile: a CDX summary (CDXJ or classic CDX lines)
//! or a MementoMap file (Alam et al. 2019), line by line, every line hostile until parsed.
//!
//! What a line is worth, in URI-Rs held under its host's keys:
//! - CDX/CDXJ: one per distinct URL key. An index is sorted by its SURT key, so all captures of
//!   a URI-R are adjacent: a key equal to the previous line's is the same URI-R, not another.
//! - MementoMap (`SURT FREQUENCY [JSON]`, `!`-lines are its header): an exact key (`com,cnn)/a`)
//!   is one URI-R (its frequency counts mementos, not URI-Rs); a wildcard key (`com,cnn)/news/*`,
//!   `com,cnn,*`) stands for a subtree compacted into one line, and is worth its frequency, an
//!   upper bound on the URI-Rs under it: imported evidence only ever makes an archive *asked*
//!   (it adds held URI-Rs), so erring high costs requests, never recall. A host wildcard credits
//!   the registrable domain and TLD of the name it is under (`com,example,*` → `domain
//!   example.com`, `tld com`; `com,*` → `tld com` alone), never a host key.

use super::keys::{surt_host, Key, Level, UriKeys};
use super::profile::Profiles;

/// Lines longer than this are counted and skipped: a CDXJ line with its JSON block is a few
/// hundred bytes; nothing longer is an index line.
pub const MAX_LINE: usize = 16 * 1024;

/// What the file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `SURT TIMESTAMP {json}` or `SURT TIMESTAMP URL MIME STATUS ...`.
    Cdx,
    /// `SURT FREQUENCY [json]`, `!` header lines.
    MementoMap,
}

/// What an import did, line by line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub format: Option<Format>,
    pub lines: u64,
    /// Lines that added evidence.
    pub used: u64,
    /// Header, comment and blank lines.
    pub headers: u64,
    /// Repeats of the previous line's URL key (more captures of the same URI-R).
    pub repeats: u64,
    pub non_utf8: u64,
    pub too_long: u64,
    /// Lines that are none of the above and cannot be read.
    pub garbage: u64,
    /// URI-Rs credited as held, summed over lines.
    pub uri_rs: u64,
}

/// Reads lines into `archive`'s profile. The caller splits the file into lines (bounded) and
/// says which were cut at [`MAX_LINE`].
pub struct Importer<'a> {
    profiles: &'a mut Profiles,
    archive: String,
    previous: Option<String>,
    report: ImportReport,
}

impl<'a> Importer<'a> {
    pub fn new(profiles: &'a mut Profiles, archive: &str, format: Option<Format>) -> Importer<'a> {
        Importer {
            profiles,
            archive: archive.to_owned(),
            previous: None,
            report: ImportReport {
                format,
                ..ImportReport::default()
            },
        }
    }

    /// A line longer than [`MAX_LINE`], not read.
    pub fn too_long(&mut self) {
        self.report.lines += 1;
        self.report.too_long += 1;
    }

    /// One line, without its line ending.
    pub fn line(&mut self, bytes: &[u8]) {
        self.report.lines += 1;
        if bytes.len() > MAX_LINE {
            self.report.too_long += 1;
            return;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.report.non_utf8 += 1;
            return;
        };
        let text = text.trim();
        if text.is_empty() || text.starts_with('!') || text.starts_with('#') || is_cdx_header(text)
        {
            // `!` starts a MementoMap's UKVS header and an OpenWayback CDXJ's first line alike:
            // the format is told from data lines.
            self.report.headers += 1;
            return;
        }
        let mut fields = text.split_ascii_whitespace();
        let (Some(key), Some(second)) = (fields.next(), fields.next()) else {
            self.report.garbage += 1;
            return;
        };
        let format = *self
            .report
            .format
            .get_or_insert_with(|| sniff(second, fields.clone().next()));
        let credited = match format {
            Format::Cdx => self.cdx(key, second),
            Format::MementoMap => self.memento_map(key, second),
        };
        match credited {
            Some(0) => self.report.repeats += 1,
            Some(n) => {
                self.report.used += 1;
                self.report.uri_rs += u64::from(n);
            }
            None => self.report.garbage += 1,
        }
    }

    pub fn finish(self) -> ImportReport {
        self.report
    }

    /// Some(0) for a repeat of the previous URL key.
    fn cdx(&mut self, key: &str, timestamp: &str) -> Option<u32> {
        if !(4..=14).contains(&timestamp.len()) || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if self.previous.as_deref() == Some(key) {
            return Some(0);
        }
        let keys = keys_of_url_key(key)?;
        self.credit(keys.keys().iter(), 1);
        self.previous = Some(key.to_owned());
        Some(1)
    }

    fn memento_map(&mut self, key: &str, frequency: &str) -> Option<u32> {
        let frequency: u32 = frequency.parse().ok().filter(|&f| f > 0)?;
        if let Some(hosts) = key.strip_suffix(",*") {
            // A host wildcard: every host under `hosts` (reversed labels, no `)`).
            if hosts.is_empty() || hosts.contains(')') {
                return None;
            }
            let labels: Vec<&str> = hosts.split(',').rev().collect();
            let keys: Vec<Key> = if let [tld] = labels[..] {
                // `com,*`: the TLD alone.
                UriKeys::of_host(&format!("x.{tld}"))
                    .get(Level::Tld)
                    .into_iter()
                    .cloned()
                    .collect()
            } else {
                // Hosts under a name: its registrable domain and TLD, never a host key, which
                // would stand for the one host the wildcard is not.
                let keys = UriKeys::of_host(&labels.join("."));
                [Level::Domain, Level::Tld]
                    .iter()
                    .filter_map(|l| keys.get(*l).cloned())
                    .collect()
            };
            if keys.is_empty() {
                return None;
            }
            self.credit(keys.iter(), frequency);
            return Some(frequency);
        }
        let (key, worth) = match key.strip_suffix("/*") {
            Some(subtree) => (subtree, frequency),
            None => (key, 1),
        };
        let keys = keys_of_url_key(key)?;
        self.credit(keys.keys().iter(), worth);
        Some(worth)
    }

    fn credit<'k>(&mut self, keys: impl Iterator<Item = &'k Key>, times: u32) {
        for key in keys {
            self.profiles.add(&self.archive, key, true, times);
        }
    }
}

/// The keys of an index line's first field: a SURT (`com,example)/a`), or a URL in indexes
/// that are not SURT-ordered.
fn keys_of_url_key(key: &str) -> Option<UriKeys> {
    let keys = if key.contains("://") {
        UriKeys::of_uri(key)
    } else {
        UriKeys::of_host(&surt_host(key)?)
    };
    (!keys.is_empty()).then_some(keys)
}

/// The classic CDX header (` CDX N b a m s k r M S V g`).
fn is_cdx_header(line: &str) -> bool {
    line.starts_with("CDX ")
}

/// A file's format from its first data line: a 14-digit second field is a CDX timestamp (no
/// MementoMap frequency is near 10^13).
fn sniff(second: &str, third: Option<&str>) -> Format {
    let timestamp = second.len() == 14 && second.bytes().all(|b| b.is_ascii_digit());
    if timestamp || third.is_some_and(|t| t.contains("://")) {
        Format::Cdx
    } else {
        Format::MementoMap
    }
}
