//! The cache between the routes and the fan-out: fresh entries are served as they are, expired
//! ones are refreshed through the policy (one fan-out per URI-R however many requests wait), and
//! every answer says what happened (HIT, MISS, REFRESH, STALE).

mod chosen;
mod first_store;
mod keys;
mod lookup;
mod refresh;
mod served;
mod shared_write;
mod short_deadline;
#[cfg(test)]
mod tests;
mod time_map_cache;

pub use super::cached::{aggregate_of, CachedTimeMap, ServedView, ALIAS_VIEWS};
pub use super::status::CacheStatus;
pub use served::{Request, Served, Settings};
pub use time_map_cache::TimeMapCache;
