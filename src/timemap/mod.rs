//! TimeMaps without I/O: the model, the link-format parser, the merge and the serialisers.

pub mod datetime;
pub mod model;
pub mod parse;

pub use model::{ArchiveId, LinkMemento, LinkTimeMap, Memento, MementoDatetime, PageLink, TimeMap};
