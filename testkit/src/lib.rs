//! What tmproxy's tests, examples, benchmarks and fuzz targets share, kept out of the library's
//! API: fake archives that fail in every way a network can ([`archive`]), the load generator
//! ([`load`]), a fake archive serving mementos of any size or coding ([`mementos`]), the parsers' properties as panicking checks
//! ([`invariants`], also run by `fuzz/`), and SYNTHETIC Wayback index lines ([`synthetic`], and at scale with a fake CDX API's answers:
//! [`scale`]).
//! A dev-dependency only: the server never links it.

pub mod archive;
pub mod invariants;
pub mod load;
pub mod mementos;
pub mod scale;
pub mod synthetic;
