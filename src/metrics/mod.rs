//! What `/metrics` shows: the registry of requests answered (by route, from a fixed set), the
//! histograms they are timed in, and what is read at each scrape (the cache, the archives, the
//! byte budget, the listeners' connection counts). Below the routes, which count into it, and
//! the serve loop, which counts connections into it.

mod archives;
mod cache;
pub mod connections;
mod encode;
mod histogram;
mod registry;
pub mod route;
mod scraped;

pub use registry::Metrics;
pub use scraped::Scraped;
