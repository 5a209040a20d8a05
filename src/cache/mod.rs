//! The conditional TimeMap cache: the replacement policies of "An Evaluation of Caching Policies
//! for Memento TimeMaps" plus `merge` (`policy`) and what an entry holds (`entry`), both pure and
//! in `tmproxy-core` (shared with `simulations/`); where entries live (`store`: moka bounded by
//! bytes over sled, behind the `Store` trait), and the service that puts them in front of the
//! fan-out (`service`, over any store, HTTP-free), with its counters (`stats`) and the
//! observation log (`observe`). See `docs/cache-policy.md` for the rules.

pub mod cached;
pub mod fan_out;
pub mod observe;
pub mod service;
pub(crate) mod stats;
pub(crate) mod status;
pub mod store;

// The policy and what an entry holds are pure: they live in tmproxy-core, shared with memsim.
pub use tmproxy_core::policy::{self, entry};
// What an entry is stored under with `[cache] canonical`: pure too, beside the SURT rules.
pub use tmproxy_core::surt::canonical_key;
