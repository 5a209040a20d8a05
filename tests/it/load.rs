//! The load tool's smoke run: the real `tmproxy` binary (this build's) as a child process, a few
//! seconds of 50 connections on 90% hits and 10% misses against slow simulated archives, through
//! the same `tmproxy_testkit::load::run` the 60 s benchmark uses. Only errors are asserted: timing
//! and memory figures on a shared CI machine are too noisy to gate on.

use std::time::Duration;
use tmproxy_testkit::load::{run, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_mixed_load_has_no_errors() {
    let opts = Options {
        server_bin: env!("CARGO_BIN_EXE_tmproxy").into(),
        duration: Duration::from_secs(4),
        connections: 50,
        hot_uris: 50,
        ..Options::default()
    };
    let report = run(&opts).await.expect("the load run starts and stops");
    assert_eq!(report.errors, 0, "{}", report.summary());
    assert!(report.hits.count > 0, "{}", report.summary());
    assert!(report.misses.count > 0, "{}", report.summary());
    // The warmed URI-Rs were served from the cache and the new ones fanned out.
    assert!(
        report.x_cache.get("hit/HIT").is_some_and(|n| *n > 0),
        "{}",
        report.summary()
    );
    assert!(
        report.x_cache.get("miss/MISS").is_some_and(|n| *n > 0),
        "{}",
        report.summary()
    );
}
