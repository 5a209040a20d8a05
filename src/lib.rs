//! tmproxy: a Memento aggregator. A request walks one line:
//! http (routes, errors → status) → aggregate (fan-out to archives) → parse → merge → serialize.

pub mod app;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod config;
pub mod demo;
pub mod error;
pub mod http;
pub mod invariants;
pub mod sampling;
pub mod serve;
pub mod timemap;
pub mod upstream;
pub mod uri_r;
pub mod uri_text;
