//! Compressed answers: which content coding a client accepts (`Accept-Encoding`, RFC 9110
//! §12.5.3), and the coded body, made once per cached rendering.

mod coding;
mod joined;
mod streamed;

pub use coding::{accepts, if_none_match, negotiate, negotiate_favouring, Coding};
pub use joined::{join, Part};
pub use streamed::{coded_on_the_way, weak_etag};
