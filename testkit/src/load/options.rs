//! What a load run is asked to do ([`Options`], the documented benchmark by default) and how much
//! the server's memory may grow before the run fails.

use std::path::PathBuf;
use std::time::Duration;

/// One simulated archive of the run: how many mementos it lists per URI-R and how long it takes.
#[derive(Debug, Clone, Copy)]
pub struct ArchiveLoad {
    pub captures: usize,
    pub delay: Duration,
}

/// What to run. [`Options::default`] is the documented benchmark (60 s, 200 connections).
#[derive(Debug, Clone)]
pub struct Options {
    /// The `tmproxy` binary to start (`target/release/tmproxy` for the benchmark).
    pub server_bin: PathBuf,
    pub duration: Duration,
    /// Persistent connections, each driven by one task sending one request after another.
    pub connections: usize,
    /// URI-Rs cached before the run starts; requests for them are the hits.
    pub hot_uris: usize,
    /// Share of requests for a URI-R never asked before (a miss: a fan-out to every archive).
    pub miss_ratio: f64,
    /// The server's `[cache] hot_capacity`, in bytes.
    pub hot_capacity: u64,
    /// The server's `[cache] policy` ("none" takes the cache out, to tell its memory apart).
    pub cache_policy: String,
    pub archives: Vec<ArchiveLoad>,
    /// Seeds each connection's choice of URI-R and endpoint, so two runs ask the same things.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            server_bin: PathBuf::from("target/release/tmproxy"),
            duration: Duration::from_secs(60),
            connections: 200,
            hot_uris: 300,
            miss_ratio: 0.10,
            // Small enough that the misses fill it within the first seconds, so the second half
            // of the run measures a full tier (evicting), not one still growing.
            hot_capacity: 64 * 1024 * 1024,
            cache_policy: "conditional".into(),
            // Three archives of 60, 25 and 10 mementos: 95 per URI-R once merged, about twice the
            // mean TimeMap of the JCDL 2013 data set (46), answering in 20, 50 and 80 ms.
            archives: vec![
                ArchiveLoad {
                    captures: 60,
                    delay: Duration::from_millis(20),
                },
                ArchiveLoad {
                    captures: 25,
                    delay: Duration::from_millis(50),
                },
                ArchiveLoad {
                    captures: 10,
                    delay: Duration::from_millis(80),
                },
            ],
            seed: 1,
        }
    }
}

/// Allowed growth of the server's RSS over the second half of the run (its least-squares trend
/// across that half, so one allocator spike that is given back does not count, while a steady
/// climb does): the larger of these.
/// Why not zero: mimalloc takes memory from the OS in segments of several MiB and keeps freed
/// pages for reuse, and sled's index grows by a few bytes per new key, so a healthy server's RSS
/// moves by a few MiB. A leak of even a few hundred bytes per miss would exceed it at ~1,000
/// misses/s over 30 s (the report gives the per-miss bytes the tolerance would hide).
pub const RSS_TOLERANCE_MIB: f64 = 8.0;
pub const RSS_TOLERANCE_SHARE: f64 = 0.05;
