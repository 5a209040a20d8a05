//! TimeMaps without I/O: the model, the link-format parser, the merge and the serialisers.

pub mod aggregate;
pub mod answer;
pub mod credit;
pub mod datetime;
pub mod identity;
pub mod incremental;
pub mod merge;
pub mod model;
pub mod parse;
pub mod prefix;
pub mod refresh;
pub mod serialize;

pub use model::{ArchiveId, LinkMemento, LinkTimeMap, Memento, MementoDatetime, PageLink, TimeMap};
