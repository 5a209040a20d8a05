//! The CDX API's two dialects, pure: what a CDX server answers, read into rows, shared by the
//! sampling pipeline's client and the upstream's `kind = "cdx"` archives.
//! - the Internet Archive's: `output=json` is an array of arrays whose first row is the header
//!   (`urlkey timestamp original mimetype statuscode digest length`); `showNumPages=true`
//!   answers a bare number;
//! - pywb's: `output=json` is one JSON object per line (`urlkey timestamp url mime status
//!   digest …`); `showNumPages=true` answers `{"pages": n, …}` over a ZipNum index, and the
//!   captures themselves (CDXJ lines) over a plain one.
//!
//! [`parse_rows`] is strict (one bad row fails the answer: the sampling pipeline records it);
//! [`read_rows`] keeps every readable row and counts the others (an archive's answer is never
//! all-or-nothing). [`replay`] turns rows into mementos; [`Pager`] says which page requests a
//! query takes, for both clients.

mod pager;
mod query;
pub mod replay;
mod rows;

// A façade: the rows, the request and the pager live in files of their own, so the pager can
// use the rows' types without importing its own parent.
pub use pager::{paging, paging_in, PageQuery, Pager, Paging, COUNT_QUERY};
pub use query::query_url;
pub use rows::{
    detect_dialect, parse_num_pages, parse_rows, read_rows, CdxRow, Dialect, ParseError, Rows,
};

#[cfg(test)]
mod tests;
