//! Compressed answers: which content coding a client accepts (`Accept-Encoding`, RFC 9110
//! §12.5.3), and the coded body, made once per cached rendering.

mod coding;
mod joined;

pub use coding::{accepts, if_none_match, negotiate, negotiate_favouring, Coding};
pub use joined::{join, Part};
