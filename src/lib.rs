//! tmproxy: a Memento aggregator. A request walks one line:
//! http (routes, errors → status) → aggregate (fan-out to archives) → parse → merge → serialize.

pub mod config;
pub mod timemap;
