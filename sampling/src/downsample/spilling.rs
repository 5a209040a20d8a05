//! The sampler on disk, what the engine runs: every candidate is appended to sorted runs
//! (`spill`) instead of a per-(year, domain) pool in memory, and [`SpillSampler::finish`]
//! applies [`Sampler`](super::Sampler)'s rules while merging them in (bucket, domain, root
//! first, priority) order: the first root pushed stands for its (year, domain), the
//! `candidate_pool` non-roots with the smallest priorities are its candidates, the long tail
//! drops single-URL domains by seeded hash in crowded buckets, and Eq. 1's target picks. So it
//! picks the same sample, the same URLs leave (at the end, not as they are pushed), and what
//! it holds is a chunk of bounded bytes, one (year, domain)'s pool while merging, and per-year
//! counts: nothing that grows with the input but the number of run files.
//!
//! Two merges: the first counts each bucket's domains (the long tail needs them before it
//! drops any), the second picks. The per-domain counts for the report are spilled as well and
//! merged by domain into [`DomainStats`].

use super::domains::DomainStats;
use super::results::{LongTail, Picked, Shortfall, YearInput};
use super::rules::{seeded_hash, Downsampling, MAX_POOL};
use crate::external_sort::bytes::{put_str, Cursor};
use crate::external_sort::{ExternalSort, Record};
use std::collections::BTreeMap;
use std::path::Path;

/// One candidate as spilled, ordered as the sample is.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    bucket: u16,
    domain: String,
    /// Roots sort first.
    not_root: bool,
    /// A root's push number (the first pushed stands), a non-root's seeded priority.
    key: u64,
    url: String,
    meta: String,
}

impl Record for Candidate {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bucket.to_le_bytes());
        out.push(u8::from(self.not_root));
        out.extend_from_slice(&self.key.to_le_bytes());
        put_str(out, &self.domain);
        put_str(out, &self.url);
        put_str(out, &self.meta);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let (bucket, flag, key) = (c.u16()?, c.u8()?, c.u64()?);
        if flag > 1 {
            return Err("a root flag that is neither 0 nor 1".into());
        }
        let (domain, url, meta) = (c.string()?, c.string()?, c.string()?);
        c.end()?;
        Ok(Candidate {
            bucket,
            domain,
            not_root: flag == 1,
            key,
            url,
            meta,
        })
    }

    fn heap_bytes(&self) -> usize {
        self.domain.len() + self.url.len() + self.meta.len()
    }
}

/// One (year, domain)'s URLs before and after, merged by domain for the report.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct DomainRow {
    domain: String,
    before: u64,
    after: u64,
}

impl Record for DomainRow {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.before.to_le_bytes());
        out.extend_from_slice(&self.after.to_le_bytes());
        put_str(out, &self.domain);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let (before, after, domain) = (c.u64()?, c.u64()?, c.string()?);
        c.end()?;
        Ok(DomainRow {
            domain,
            before,
            after,
        })
    }

    fn heap_bytes(&self) -> usize {
        self.domain.len()
    }
}

/// A URL the sample does not keep, or one it does, as [`SpillSampler::finish`] hands them out.
pub enum Left<'a> {
    Picked(&'a Picked),
    /// Dropped by the long-tail reduction.
    LongTail(&'a str),
    /// Evicted from its pool, a second root, or past Eq. 1's target.
    Downsampled(&'a str),
}

/// What [`SpillSampler::finish`] found, all of it per year or bounded.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// URLs pushed.
    pub urls: u64,
    pub before_long_tail: BTreeMap<u16, YearInput>,
    pub eq1: BTreeMap<u16, YearInput>,
    pub long_tail: LongTail,
    /// URLs picked, in all and per bucket.
    pub picked: u64,
    pub picked_per_year: BTreeMap<u16, u64>,
    pub shortfalls: Vec<Shortfall>,
    pub domains: DomainStats,
}

/// The sampler writing its candidates to runs under a directory of its own.
pub struct SpillSampler {
    seed: u64,
    params: Downsampling,
    pool: usize,
    candidates: ExternalSort<Candidate>,
    domains: ExternalSort<DomainRow>,
    pushed: u64,
}

mod finish;

impl SpillSampler {
    /// A sampler keeping `pool` candidates per (year, domain) (clamped to 1..=[`MAX_POOL`]),
    /// holding at most `max_held` bytes of candidates in memory before it writes a run to
    /// `dir` (which should be empty: runs are never read across runs of the engine).
    pub fn new(
        seed: u64,
        params: Downsampling,
        pool: usize,
        dir: &Path,
        max_held: usize,
    ) -> Result<SpillSampler, String> {
        Ok(SpillSampler {
            seed,
            params,
            pool: pool.clamp(1, MAX_POOL),
            candidates: ExternalSort::new(dir, "candidates", max_held)?,
            domains: ExternalSort::new(dir, "domains", max_held)?,
            pushed: 0,
        })
    }

    /// Feeds a URL with its payload; nothing leaves before [`SpillSampler::finish`].
    pub fn push_with(
        &mut self,
        bucket: u16,
        domain: &str,
        url: &str,
        root: bool,
        meta: &str,
    ) -> Result<(), String> {
        let key = if root {
            self.pushed
        } else {
            seeded_hash(self.seed, url)
        };
        self.pushed += 1;
        self.candidates.push(Candidate {
            bucket,
            domain: domain.to_string(),
            not_root: !root,
            key,
            url: url.to_string(),
            meta: meta.to_string(),
        })
    }

    /// URLs pushed so far.
    pub fn urls(&self) -> u64 {
        self.pushed
    }

    /// Bytes of candidates held in memory now.
    pub fn held(&self) -> usize {
        self.candidates.held() + self.domains.held()
    }

    /// Run files written so far (merged-down ones included).
    pub fn runs(&self) -> usize {
        self.candidates.written() + self.domains.written()
    }
}

#[cfg(test)]
mod tests;
