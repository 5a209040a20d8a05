//! The conditional TimeMap cache: the replacement policies of "An Evaluation of Caching Policies
//! for Memento TimeMaps" plus `merge` (`policy`, pure, shared with `simulations/`), what an entry
//! holds (`entry`), where it lives (`store`: moka bounded by bytes over sled), and the service
//! that puts them in front of the fan-out (`service`), with its counters (`stats`) and the
//! observation log (`observe`). See `design/cache-policy.md` for the spec.

pub mod entry;
pub mod observe;
pub mod policy;
pub mod service;
pub mod stats;
pub mod store;
