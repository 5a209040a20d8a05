//! tmproxy's pure core, shared by the server and the simulations: the TimeMap model, the
//! link-format parser, the merge, the output formats ([`timemap`]), URI text helpers
//! ([`uri_text`]), JSON that keeps one line one line ([`json_text`]), the archives tmproxy knows
//! ([`archives`]), why an archive's request failed ([`failure`]), how we pace requests to an
//! archive ([`pacing`]) and when it asked us to wait ([`retry_after`]), the SURT rules and the cache's
//! canonical key ([`surt`]), what a fan-out asks and has settled ([`fan_out`]), the ETags' hash
//! ([`content_hash`]), the cache policy with what an entry holds ([`policy`]), archive profiles with the
//! routing decision ([`routing`]), a memento's raw form ([`raw_memento`]), the clock trait
//! ([`clock`]) and the observation log's line ([`observation_log`]). No I/O and no clock read:
//! every function takes values and returns values (the time through a [`clock::Clock`] passed
//! in), so the server and `memsim` run the very same code.

pub mod archives;
pub mod cdx;
pub mod clock;
pub mod content_hash;
pub mod failure;
pub mod fan_out;
pub mod json_text;
pub mod observation_log;
pub mod pacing;
pub mod policy;
#[cfg(test)]
mod prop_tests;
pub mod raw_memento;
pub mod retry_after;
pub mod routing;
pub mod surt;
pub mod timemap;
pub mod uri_text;
