//! How tmproxy keeps bytes on disk, in one place: a value framed with its format's magic, a
//! version, a zstd body and a CRC-32 ([`frame`]); a file replaced whole, never seen half
//! written ([`atomic`]); a damaged file or directory moved aside for an operator to look at
//! ([`aside`]); and the writer that checksums what passes through it ([`checksum`]).
//!
//! A crate of its own rather than part of `tmproxy-core`: the core does no I/O, and this is
//! all about files.

pub mod aside;
pub mod atomic;
pub mod checksum;
pub mod frame;

pub use atomic::{write_atomically, AtomicFile, Durability, WriteError};
pub use checksum::Checksummed;
pub use frame::{Format, FrameError, FrameWriter};
