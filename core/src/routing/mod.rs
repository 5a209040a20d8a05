//! Routing: archive profiles learned from what archives answered (or imported from their
//! indexes), and the pure decision of which archives a miss asks ([`decide::decide`]).
//!
//! The server keeps one [`profile::Profiles`], feeds it an [`profile::Observation`] per fan-out
//! and asks [`decide::decide`] before the next; `memsim` runs the very same functions.

pub mod bound;
pub mod decide;
pub mod import;
pub mod keys;
pub mod profile;

pub use bound::{client_key, PerClient};
pub use decide::{decide, draw_for, Candidate, Decision, Mode, Route, Settings, Skip};
pub use import::{Format, ImportReport, Importer};
pub use keys::{Key, Level, UriKeys};
pub use profile::{Observation, Outcome, Profiles, StoredProfiles, Tally};

#[cfg(test)]
mod tests;
