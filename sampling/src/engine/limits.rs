//! A run's limits (`[sampling] max_line`, `max_input_bytes`, `max_gzip_ratio`, `max_memory`)
//! and the engine's own account of its memory: an estimate, in bytes, of the structures that
//! grow with the input (the resumed answers, the popular pool) and of the sampler's bounded ones (its chunk of candidates before a run is written,
//! one (year, domain)'s pool while merging), updated as they grow and checked while the input
//! is read. It is not the process's RSS: buffers, the allocator and the rest of the server are
//! not in it.

use crate::reading::ReadLimits;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub read: ReadLimits,
    /// The most bytes the engine's account may reach (0 = no limit).
    pub max_memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read: ReadLimits::default(),
            max_memory: 2 << 30,
        }
    }
}

/// The most bytes of candidates the sampler holds before it writes a run: the sort's chunk.
const SPILL_CHUNK: usize = 64 << 20;

impl Limits {
    /// The sampler's chunk: [`SPILL_CHUNK`], or an eighth of `max_memory` when that is less
    /// (64 KiB at the least), so the bounded part never crowds out the rest of the limit.
    pub(super) fn spill_chunk(&self) -> usize {
        let eighth = usize::try_from(self.max_memory / 8).unwrap_or(usize::MAX);
        match self.max_memory {
            0 => SPILL_CHUNK,
            _ => eighth.clamp(64 << 10, SPILL_CHUNK),
        }
    }
}

/// The engine's estimate of its big structures, each part set by the stage that owns it.
#[derive(Debug, Default)]
pub struct MemoryUse {
    pub resumed: AtomicU64,
    pub popular: AtomicU64,
    pub sampler: AtomicU64,
    /// The sampler's candidate pool per (year, domain), which bounds what its merge holds.
    pub pool: AtomicU64,
}

/// Bytes per entry, beside the strings' own: a hash map or heap slot, its `String` headers and
/// the allocator's rounding (measured, roughly, not exact).
pub(super) const PER_ENTRY: u64 = 96;
/// A popular domain's URL or a sampler's URL with its payload, as the index has them.
pub(super) const PER_URL: u64 = 120;

impl MemoryUse {
    pub fn total(&self) -> u64 {
        [&self.resumed, &self.popular, &self.sampler]
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }

    /// The spilling sampler the engine runs: `held` bytes of candidates not yet in a run (with
    /// root upsampling's spilled per-domain records, which the engine adds in), and the one
    /// (year, domain)'s pool + 1 (the root) URLs its merge holds at a time.
    pub(super) fn set_spilled(&self, held: usize) {
        let per_bucket = self.pool.load(Ordering::Relaxed) + 1;
        let bytes = held as u64 + PER_ENTRY + 64 + per_bucket * (PER_ENTRY + PER_URL);
        self.sampler.store(bytes, Ordering::Relaxed);
    }

    /// The in-memory [`Sampler`](crate::downsample::Sampler) (tests and small
    /// inputs; the engine runs the spilling one): per (year, domain) its counters, and at
    /// most its candidate pool + 1 (the root) URLs kept; `urls` pushed is an upper bound on
    /// those kept.
    #[cfg(test)]
    pub(super) fn set_sampler(&self, buckets: usize, urls: u64) {
        let per_bucket = self.pool.load(Ordering::Relaxed) + 1;
        let kept = urls.min(buckets as u64 * per_bucket);
        let bytes = buckets as u64 * (PER_ENTRY + 64) + kept * (PER_ENTRY + PER_URL);
        self.sampler.store(bytes, Ordering::Relaxed);
    }

    /// Err naming the limit when the estimate is past `max` (0 = no limit).
    pub fn check(&self, max: u64) -> Result<(), String> {
        let total = self.total();
        if max > 0 && total > max {
            return Err(format!(
                "the run's memory estimate ({total} bytes: resumed answers {}, popular pool {}, \
                 sampler {}) is past [sampling] max_memory ({max} bytes)",
                self.resumed.load(Ordering::Relaxed),
                self.popular.load(Ordering::Relaxed),
                self.sampler.load(Ordering::Relaxed),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_checked_against_the_limit_and_names_it() {
        let m = MemoryUse::default();
        m.pool.store(300, Ordering::Relaxed);
        assert!(m.check(1000).is_ok());
        m.set_sampler(10, 5);
        let sampler = m.sampler.load(Ordering::Relaxed);
        assert_eq!(sampler, 10 * (PER_ENTRY + 64) + 5 * (PER_ENTRY + PER_URL));
        // Kept URLs are bounded per bucket, whatever was pushed.
        m.set_sampler(1, 1_000_000);
        assert!(m.sampler.load(Ordering::Relaxed) < 100_000);
        m.popular.store(5_000, Ordering::Relaxed);
        let e = m.check(1000).unwrap_err();
        assert!(e.contains("max_memory (1000 bytes)"), "{e}");
        assert!(m.check(0).is_ok(), "0: no limit");
    }

    #[test]
    fn the_spilling_sampler_is_counted_as_its_chunk_and_one_pool() {
        let m = MemoryUse::default();
        m.pool.store(223, Ordering::Relaxed);
        m.set_spilled(1 << 20);
        let one_pool = PER_ENTRY + 64 + 224 * (PER_ENTRY + PER_URL);
        assert_eq!(m.sampler.load(Ordering::Relaxed), (1 << 20) + one_pool);
        // The chunk: 64 MiB, or an eighth of a smaller max_memory, never under 64 KiB.
        let chunk = |max_memory| {
            Limits {
                max_memory,
                ..Limits::default()
            }
            .spill_chunk()
        };
        assert_eq!(chunk(0), 64 << 20);
        assert_eq!(chunk(2 << 30), 64 << 20);
        assert_eq!(chunk(80 << 20), 10 << 20);
        assert_eq!(chunk(100_000), 64 << 10);
    }
}
