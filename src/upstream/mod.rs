//! The archives behind us: who they are, how we ask them, and the fan-out with its deadline.

pub(crate) mod budget;
pub(crate) mod cdx;
pub mod clients;
pub(crate) mod decode;
pub(crate) mod failure;
pub(crate) mod fallback;
pub(crate) mod fanout;
pub(crate) mod fetch;
mod for_cache;
pub(crate) mod guard;
pub(crate) mod ledger;
pub mod memento;
pub(crate) mod registry;
pub mod resolve;
pub(crate) mod streamed;
pub(crate) mod transport;
pub(crate) mod turns;
pub(crate) mod via;

pub use fanout::Upstream;
pub use registry::{Archive, Health, Transition};
