//! The renderings tier: huge entries (too heavy for the hot tier) served without reading them.
//! Each format's body is rendered once per entry revision into a file under `<[cache]
//! path>/renderings/` (with zstd, gzip and br copies), and a small head in memory holds what an
//! answer's headers need. A hit is then a head lookup and a file streamed in pieces
//! ([`body`], a stream of bytes, not any server's body type), checked against its length and
//! CRC-32 as it goes.
//!
//! The store tells [`Renderings`] of every change to a key ([`Overflow`](super::Overflow)), so a head never
//! outlives the entry it was made of; a head or file that is gone only sends the request the
//! ordinary way (the entry read from disk), which makes them again. What it needs of a view
//! (its bodies written out, what the answer's headers need) is the view's to give ([`Renders`]).

mod head;
mod runs;
mod stream;
mod tier;
mod write;

pub use head::{Head, Rendering, RenderingFile, Renders};
pub use runs::RenderingRuns;
pub use stream::{body, BodyStream};
pub use tier::{Overflowing, Renderings, DIR};
