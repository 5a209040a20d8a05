//! Aggregated TimeMaps as clients read them, one type per format behind [`Format`]: link
//! format (RFC 7089), JSON (Time Travel's, plus `archives[]`) and CDXJ (MemGator's). Pure: the
//! public base URL is passed in. A new format is a file here, its names in `formats.rs` and a
//! line in `render.rs`'s list.

mod cdxj;
mod formats;
mod json;
mod link;
mod nav;
mod page;
mod render;
mod self_links;
mod writing;

// A façade: what the renderers share (`writing`, `formats`, `self_links`, `page`) and what
// calls them (`render`, `nav`) are files of their own, so no renderer imports its caller.
pub use cdxj::{to_cdxj, Cdxj};
pub use formats::TimeMapFormat;
pub use json::{to_json, Json};
pub use link::{to_link_format, Link};
pub use nav::render_closest;
pub use page::{Page, PageError, Pages};
pub use render::{render, Skeleton};
pub use self_links::SelfLinks;
pub use writing::{Format, List, CHUNK};

#[cfg(test)]
mod page_tests;
#[cfg(test)]
mod skeleton_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
