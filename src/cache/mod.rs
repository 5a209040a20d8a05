//! The TimeMap cache's logic without I/O: what an entry holds (`entry`) and the replacement
//! policies of "An Evaluation of Caching Policies for Memento TimeMaps" plus `merge` (`policy`),
//! shared by the HTTP server's cache tiers and the `simulations/` harness; and where entries
//! live (`store`: moka bounded by bytes over sled). See `design/cache-policy.md` for the spec.

pub mod entry;
pub mod policy;
pub mod store;
