//! Archive profiles: per key, per archive, how many URI-Rs it was seen to hold mementos for and
//! how many it held none for; bounded to `max_keys` keys, the least recently used forgotten.

use super::keys::{Key, UriKeys};
use lru::LruCache;
use serde::{Deserialize, Serialize};
use std::num::NonZeroUsize;

/// What one archive's answer for one URI-R teaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It listed at least one memento.
    Held,
    /// It answered that it holds nothing (an empty TimeMap, a 404).
    HeldNone,
    /// It failed, timed out, was dormant or was skipped: nothing learned.
    Unknown,
}

impl Outcome {
    /// From an answer's status and the mementos it listed: any memento is `Held` whatever the
    /// status (a TimeGate fallback lists one after a failed TimeMap).
    pub fn of(status: crate::timemap::answer::ArchiveStatus, mementos: usize) -> Outcome {
        if mementos > 0 {
            Outcome::Held
        } else if status.answered() {
            Outcome::HeldNone
        } else {
            Outcome::Unknown
        }
    }
}

/// One fan-out's lesson: a URI-R's keys and what each archive answered for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub keys: UriKeys,
    /// `(archive id, outcome)`; archives not listed teach nothing.
    pub outcomes: Vec<(String, Outcome)>,
}

impl Observation {
    /// The lesson of a fan-out's fresh answers (before any merge with a cached entry), under
    /// the URI-R's `keys` ([`UriKeys::of_uri`] of `fetch.uri_r`, which its caller holds).
    pub fn of_fetch(fetch: &crate::timemap::answer::Fetch, keys: UriKeys) -> Observation {
        Observation {
            keys,
            outcomes: fetch
                .archives
                .iter()
                .map(|c| {
                    let outcome = Outcome::of(c.answer.status, c.mementos.len());
                    (c.archive.clone(), outcome)
                })
                .collect(),
        }
    }
}

impl Observation {
    /// Whether some archive listed mementos. A miss none holds (every answer "not found" or
    /// empty, as for any URL a client makes up) teaches the server nothing: made-up URLs must
    /// not be a way to build the evidence that skips an archive.
    pub fn holds_any(&self) -> bool {
        self.outcomes.iter().any(|(_, o)| *o == Outcome::Held)
    }
}

/// Counts at one key for one archive. When their sum passes [`Tally::AGE_AT`] both are halved,
/// so the latest evidence weighs the most: an archive that starts holding a domain overturns a
/// profile of thousands of misses after tens of explored hits, not thousands. The cap also lets
/// a count fit in a u16 (a profile of 100,000 keys is tens of MB: each key holds a tally per
/// archive that answered under it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// URI-Rs it held mementos for.
    pub held: u16,
    /// URI-Rs it held none for.
    pub none: u16,
}

impl Tally {
    pub const AGE_AT: u32 = 4096;

    pub fn observed(self) -> u32 {
        u32::from(self.held) + u32::from(self.none)
    }

    /// The share of URI-Rs with mementos; 0 when nothing was observed.
    pub fn share(self) -> f64 {
        match self.observed() {
            0 => 0.0,
            n => f64::from(self.held) / f64::from(n),
        }
    }

    fn add(&mut self, held: bool, times: u32) {
        let (mut h, mut n) = (u64::from(self.held), u64::from(self.none));
        if held {
            h += u64::from(times);
        } else {
            n += u64::from(times);
        }
        while h + n > u64::from(Tally::AGE_AT) {
            h /= 2;
            n /= 2;
        }
        // Both are at most AGE_AT now.
        self.held = u16::try_from(h).unwrap_or(u16::MAX);
        self.none = u16::try_from(n).unwrap_or(u16::MAX);
    }
}

/// One key's tallies: `(archive index, tally)`, few per key, in the order first seen.
type Tallies = Vec<(u16, Tally)>;

/// The profiles of every archive. Deterministic: the same calls in the same order give the same
/// profiles (the LRU order does not depend on hashing).
#[derive(Debug, Clone)]
pub struct Profiles {
    /// Archive ids, interned: a key holds a u16 per archive, not its id.
    archives: Vec<Box<str>>,
    /// Every key seen, most recently used first. std's SipHash with a random key, not Fx: keys
    /// come from client URI-Rs, and a crafted set must not collide into one bucket.
    keys: LruCache<Key, Tallies>,
}

impl Profiles {
    /// Empty profiles holding at most `max_keys` keys (at least 1).
    pub fn new(max_keys: usize) -> Profiles {
        Profiles {
            archives: Vec::new(),
            keys: LruCache::new(NonZeroUsize::new(max_keys).unwrap_or(NonZeroUsize::MIN)),
        }
    }

    pub fn max_keys(&self) -> usize {
        self.keys.cap().get()
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// A new bound; past it the least recently used keys go at once.
    pub fn set_max_keys(&mut self, max_keys: usize) {
        self.keys
            .resize(NonZeroUsize::new(max_keys).unwrap_or(NonZeroUsize::MIN));
    }

    /// Learns every archive's outcome under each of the URI-R's keys; `Unknown` teaches nothing.
    pub fn observe(&mut self, observation: &Observation) {
        for (archive, outcome) in &observation.outcomes {
            let held = match outcome {
                Outcome::Held => true,
                Outcome::HeldNone => false,
                Outcome::Unknown => continue,
            };
            for key in observation.keys.keys() {
                self.add(archive, key, held, 1);
            }
        }
    }

    /// Adds `times` URI-Rs held (or not) by `archive` under `key`, making it the most recently
    /// used key. An archive past the 65,536th is not profiled (always asked).
    pub fn add(&mut self, archive: &str, key: &Key, held: bool, times: u32) {
        let Some(index) = self.archive_index(archive) else {
            return;
        };
        let tallies = match self.keys.get_mut(key) {
            Some(t) => t,
            None => {
                // `push` evicts the least recently used key when full.
                self.keys.push(key.clone(), Vec::new());
                match self.keys.get_mut(key) {
                    Some(t) => t,
                    None => return,
                }
            }
        };
        match tallies.iter_mut().find(|(i, _)| *i == index) {
            Some((_, tally)) => tally.add(held, times),
            None => {
                let mut tally = Tally::default();
                tally.add(held, times);
                tallies.push((index, tally));
            }
        }
    }

    /// `archive`'s tally at `key`, without touching its recency (a decision only reads).
    pub fn tally(&self, archive: &str, key: &Key) -> Option<Tally> {
        let index = self.archives.iter().position(|a| **a == *archive)?;
        let tallies = self.keys.peek(key)?;
        tallies
            .iter()
            .find(|(i, _)| usize::from(*i) == index)
            .map(|(_, t)| *t)
    }

    /// How many keys hold a tally for `archive`: its profile's size.
    pub fn keys_of(&self, archive: &str) -> usize {
        let Some(index) = self.archives.iter().position(|a| **a == *archive) else {
            return 0;
        };
        self.keys
            .iter()
            .filter(|(_, t)| t.iter().any(|(i, _)| usize::from(*i) == index))
            .count()
    }

    fn archive_index(&mut self, archive: &str) -> Option<u16> {
        if let Some(i) = self.archives.iter().position(|a| **a == *archive) {
            return u16::try_from(i).ok();
        }
        let i = u16::try_from(self.archives.len()).ok()?;
        self.archives.push(archive.into());
        Some(i)
    }

    /// The serialisable form: keys from the least to the most recently used, so reading it back
    /// restores the LRU order.
    pub fn to_stored(&self) -> StoredProfiles {
        StoredProfiles {
            archives: self.archives.clone(),
            keys: self
                .keys
                .iter()
                .rev()
                .map(|(k, t)| (k.clone(), t.clone()))
                .collect(),
        }
    }

    /// Profiles from their stored form, bounded by `max_keys` (the oldest keys beyond it go).
    /// Refused when it is inconsistent (an archive index out of range, a key twice): a file that
    /// decodes but says impossible things is not trusted either.
    pub fn from_stored(stored: StoredProfiles, max_keys: usize) -> Result<Profiles, String> {
        if stored.archives.len() > usize::from(u16::MAX) + 1 {
            return Err("more archives than a profile can name".into());
        }
        let mut profiles = Profiles::new(max_keys);
        profiles.archives = stored.archives;
        let n = profiles.archives.len();
        let mut seen = std::collections::HashSet::new();
        for (key, tallies) in stored.keys {
            if !seen.insert(key.clone()) {
                return Err(format!("the key {key} is stored twice"));
            }
            if let Some((i, _)) = tallies.iter().find(|(i, _)| usize::from(*i) >= n) {
                return Err(format!("the key {key} names archive #{i} of {n}"));
            }
            profiles.keys.push(key, tallies);
        }
        Ok(profiles)
    }
}

/// What is persisted: plain data, so a format version can describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredProfiles {
    pub archives: Vec<Box<str>>,
    /// Least recently used first.
    pub keys: Vec<(Key, Vec<(u16, Tally)>)>,
}
