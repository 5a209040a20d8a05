//! The calibrated SYNTHETIC preset `jcdl2013` against the facts of `docs/cache-policy.md`,
//! measured by `calibration` on a slice of its URI-Rs (the whole preset is for release builds).

use simulations::calibration::Calibration;
use simulations::generate::{live_groups, Preset};
use simulations::jcdl::{IA_PROXY_BROKEN, OBSERVER_DOWN, POWER_FAILURE};

fn calibration(uri_rs: u32, seed: u64) -> Calibration {
    let p = Preset::by_name("jcdl2013")
        .expect("preset")
        .with_uri_rs(uri_rs);
    let mut c = Calibration::new();
    for g in live_groups(p, seed) {
        c.push_uri(&g.expect("a generated series resolves"));
    }
    c
}

#[test]
fn a_slice_of_jcdl2013_shows_the_papers_facts() {
    let c = calibration(1_000, 1);
    assert_eq!((c.uri_rs, c.days), (1_000, 92));
    let share = c.never_shrink_share();
    assert!((0.75..=0.86).contains(&share), "never shrink: {share}");
    assert_eq!(c.mode_changes(), Some(3), "{:?}", c.changes);
    let mean = c.mean_interval();
    assert!((32.0..=44.0).contains(&mean), "mean interval {mean}");
    assert_eq!(c.most_frequent_change(), Some(6), "{:?}", c.cases);
    let ia = (*IA_PROXY_BROKEN.start(), *IA_PROXY_BROKEN.end());
    let observer = (*OBSERVER_DOWN.start(), *OBSERVER_DOWN.end());
    let power = (*POWER_FAILURE.start(), *POWER_FAILURE.end());
    assert_eq!(c.outages(), vec![observer, power, ia]);
    assert!(
        c.always_empty > 0 && c.always_empty < 200,
        "{}",
        c.always_empty
    );
    assert!(
        c.loose_collisions > 0,
        "midnight times and dual captures collide"
    );
    assert!(c.migrated_uri_rs > 0, "URI-M migrations");
    // Heavy-tailed: the mean well above the median, a long tail.
    assert!(c.mean_size() > 1.5 * c.size_percentile(50.0) as f64);
    assert!(c.size_percentile(100.0) > 20 * c.size_percentile(50.0));
}

#[test]
fn jcdl2013_is_deterministic_per_seed() {
    let a = calibration(60, 9);
    let b = calibration(60, 9);
    assert_eq!(a.table(), b.table());
    assert_ne!(a.table(), calibration(60, 10).table());
}
