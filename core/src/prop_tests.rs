//! The property tests' shared configuration: a seed per run, printed with any failure.

use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence, RngSeed};

/// Each run draws new cases from a seed printed with any failure (`TMPROXY_PROP_SEED=<seed>`
/// replays it); a failing case is kept in `core/proptest-regressions/` (commit it) and tried
/// first on every later run.
pub fn config() -> ProptestConfig {
    let seed = match std::env::var("TMPROXY_PROP_SEED") {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TMPROXY_PROP_SEED={v:?} is not a whole number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    };
    // Shown by the test harness only when the test fails.
    eprintln!("proptest seed {seed}: TMPROXY_PROP_SEED={seed} replays this run");
    ProptestConfig {
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}
