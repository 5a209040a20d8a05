//! The conditional TimeMap cache: the replacement policies of "An Evaluation of Caching Policies
//! for Memento TimeMaps" plus `merge` (`policy`) and what an entry holds (`entry`), both pure and
//! in `tmproxy-core` (shared with `simulations/`); what the hot tier holds (`cached`: an entry
//! and the serving layer's view of it); where entries live (`store`: moka bounded by bytes over
//! sled, behind the `Store` trait, with the huge entries' renderings on disk and the fan-out
//! claim beside it); and the service that puts them in front of the fan-out (`service`, over
//! any store), with its counters (`stats`) and the observation log (`observe`).
//!
//! The cache calls no layer around it: the fan-out, routing and the views come in through its
//! own traits (`fan_out::Archives`, `fan_out::Router`, `cached::ServedView`,
//! `store::renderings::Renders`), given in `app.rs` (`core/tests/module_cycles.rs` checks it).
//! See `docs/cache-policy.md` for the rules.

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
