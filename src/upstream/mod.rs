//! The archives behind us: who they are, how we ask them, and the fan-out with its deadline.

pub mod budget;
pub mod failure;
pub mod fanout;
pub mod fetch;
pub mod guard;
pub mod ledger;
pub mod registry;
pub mod resolve;

pub use fanout::Upstream;
pub use registry::{Archive, Health, Transition};
