//! What one setting did over HTTP in `memsim route-e2e`, and where it differs from `memsim
//! route`'s replay of the same misses.

use crate::route::sim::RunResult;
use crate::route::{Request, Stream};
use serde::Serialize;

/// What one setting did over HTTP, in `memsim route --json`'s shape (its model latencies aside).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct E2eRow {
    pub mode: &'static str,
    pub min_share: f64,
    pub explore: f64,
    pub min_evidence: u32,
    pub max_per_client: u32,
    pub misses: u64,
    pub requests: u64,
    /// The archive requests of the `all` run, counted at the fake archives.
    pub requests_all: u64,
    pub requests_per_miss: f64,
    pub avoided: f64,
    pub memento_recall: f64,
    pub uri_recall: f64,
    pub mementos: u64,
    /// The mementos the server served in the `all` run.
    pub mementos_all: u64,
    pub uris_found: u64,
    pub uris_found_all: u64,
    /// The median time the server took to answer a miss, measured by the client (ms), over
    /// the misses from `Slow::from` on (all of them without a slow archive).
    pub median_miss_ms: f64,
    /// Requests each archive received, in the stream's order.
    #[serde(skip)]
    pub requests_by_archive: Vec<u64>,
    /// Mementos each archive contributed to the served TimeMaps, in the stream's order.
    #[serde(skip)]
    pub mementos_by_archive: Vec<u64>,
}

/// Where an HTTP run and memsim's replay of the same misses and setting differ (empty: they
/// are equal): requests and mementos per archive, URI-Rs found, and the `all` references.
pub fn differences(
    stream: &Stream,
    misses: &[Request],
    e2e: &E2eRow,
    sim: &RunResult,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |what: String, got: u64, want: u64| {
        if got != want {
            out.push(format!("{what}: server {got}, memsim {want}"));
        }
    };
    check("misses".into(), e2e.misses, sim.misses);
    check("requests".into(), e2e.requests, sim.requests);
    check("requests_all".into(), e2e.requests_all, sim.requests_all);
    check("mementos".into(), e2e.mementos, sim.mementos);
    check("mementos_all".into(), e2e.mementos_all, sim.mementos_all);
    check("uris_found".into(), e2e.uris_found, sim.uris_found);
    check(
        "uris_found_all".into(),
        e2e.uris_found_all,
        sim.uris_found_all,
    );
    let mut held = vec![0u64; stream.archives.len()];
    for m in misses {
        for &(a, k) in &stream.holdings[m.holdings as usize] {
            held[usize::from(a)] += u64::from(k);
        }
    }
    for (a, archive) in stream.archives.iter().enumerate() {
        let get = |v: &[u64]| v.get(a).copied().unwrap_or(0);
        check(
            format!("requests to {}", archive.id),
            get(&e2e.requests_by_archive),
            get(&sim.requests_by_archive),
        );
        check(
            format!("mementos of {}", archive.id),
            get(&e2e.mementos_by_archive),
            held[a] - get(&sim.missed_by_archive),
        );
    }
    out
}
