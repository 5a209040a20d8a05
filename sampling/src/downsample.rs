//! Log downsampling per domain per year (`n = min(N, round(K·log(N) + C))`, the paper's Eq. 1
//! with Table 7's K by year), the long-tail reduction, and a seeded choice of which URLs stay.
//!
//! The choice is "bottom-k by seeded hash": every URL gets a priority `hash(seed, url)` and a
//! domain keeps the URLs with the smallest priorities, its root URL first. That is a uniform
//! random sample, the same for a seed whatever order the URLs arrive in (so a resumed job picks
//! what an uninterrupted one would), and it streams: a (year, domain) holds at most `pool`
//! candidates (the spec's `candidate_pool`, by default Eq. 1's largest target over the years
//! for any N a u64 can count, see [`Downsampling::largest_target`]), so [`Sampler`]'s memory
//! grows with the (year, domain)s kept, never with their URLs. Every URL that leaves the pool
//! (evicted, a second root, not picked, dropped by the long tail) is handed to the caller's
//! sink, so none is lost silently; a target the pool cannot meet is reported as a
//! [`Shortfall`]. [`SpillSampler`] applies the same rules to candidates spilled to sorted runs
//! on disk, so its memory does not grow with the domains either: the engine runs it;
//! [`Sampler`] stays as the rules' plain statement, which the spilling one is tested against.

mod domains;
mod results;
mod rules;
mod sampler;
mod spilling;

// A façade: the rules and the result types live in files of their own, so the two samplers and
// the domain statistics use them without importing this file.
pub use domains::DomainStats;
pub use results::{DomainCounts, Finished, LongTail, Picked, Shortfall, YearInput};
pub use rules::{seeded_hash, target, Downsampling, MAX_POOL, TABLE7_K};
pub use sampler::Sampler;
pub use spilling::{Left, SpillSampler, Summary};

#[cfg(test)]
mod tests;
