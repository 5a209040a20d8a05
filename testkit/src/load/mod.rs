//! A load run against the real `tmproxy serve` binary: simulated archives with latency in this
//! process, the server as a child process on loopback, a fixed number of persistent HTTP/1.1
//! connections driven for a fixed time on a mix of cache hits and misses. Every status and
//! latency is recorded and the server's resident memory is sampled once a second.
//!
//! Both `examples/load.rs` (the 60 s benchmark in BENCHMARKS.md) and the `load` integration test
//! (a few seconds, in CI) call [`run`], so the benchmark and the test exercise the same code.
//! Linux only for the memory figures (they come from `/proc/<pid>/status`).

mod client;
mod memory;
mod options;
mod report;
mod run;
mod server;

// A façade: the options, the report and the run are files of their own, so the server and the
// memory sampler use the options without importing the run that calls them.
pub use memory::{rss_kib, Rss};
pub use options::{ArchiveLoad, Options, RSS_TOLERANCE_MIB, RSS_TOLERANCE_SHARE};
pub use report::{Latency, Report};
pub use run::run;
