//! Where cached values live: a byte-bounded hot tier in memory (moka) in front of a durable
//! tier on disk (sled), all behind one `Store` trait, generic over the stored value; a value
//! too heavy for the hot tier has its renderings written to disk (`renderings`, told of every
//! change through `Overflow`). Who fans out for a key across replicas is not storage: it is
//! the `FanOutLock` (`lock`).
//!
//! Freshness is not decided here: values carry their own `fresh_until` and the policy reads it.
//! So moka's expiry is deliberately unused and its size limit is only the memory bound.

mod cas;
mod contract;
mod disk_check;
mod disk_threads;
mod envelope;
mod error;
#[cfg(test)]
mod fault_tests;
mod hot;
mod invalidate;
mod lock;
mod open;
mod pause;
mod persistent;
mod record;
mod recover;
mod remote;
pub mod renderings;
mod sled_db;
mod tiered;

pub use cas::{Observed, SetIf, CAS_ATTEMPTS};
pub use contract::{Cacheable, Overflow, PutIf, Store, TierStats};
pub use error::StoreError;
pub use hot::HotTier;
pub use invalidate::Invalidate;
pub use lock::{Alone, FanOutClaim, FanOutLock};
pub use open::SLED_CACHE_BYTES;
pub use pause::PAUSE_AFTER_FAILURE;
pub use persistent::{PersistentTier, DISK_THREADS};
pub use remote::{redis_key, SharedAddress, SharedStats, SharedTier, KEY_PREFIX};
pub use tiered::{open, Tiered};

#[cfg(test)]
use tiered::body_revision;
