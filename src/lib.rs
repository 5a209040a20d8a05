//! tmproxy: a Memento aggregator. A request walks one line: http (routes, errors → status) →
//! cache (policy, store) → upstream (fan-out: each archive's contribution) → back to the view,
//! where the contributions are merged once and rendered. The pure parts (TimeMaps, the policy)
//! live in `tmproxy-core` and are re-exported here under their old paths.

pub mod app;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod config;
pub mod demo;
pub(crate) mod encoding;
pub(crate) mod error;
pub mod http;
pub mod logs;
pub mod memo;
pub(crate) mod metrics;
pub mod routing;
pub mod serve;
pub(crate) mod stripe;
pub mod upstream;
pub mod uri_r;
pub mod view;
pub(crate) mod web;

// The pure core, under the paths the rest of the crate (and its users) have always used.
pub use tmproxy_core::{timemap, uri_text};
// The sampling crate, under the path its users (tests, testkit, examples, benches) know.
pub use tmproxy_sampling as sampling;
