//! The calibrated SYNTHETIC preset `jcdl2013` against the paper's figures (restated in
//! `calibration::figures`), measured by `calibration` on the whole preset at seed 1.

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

/// The whole preset at the seed the docs quote: every figure the table holds to the paper's lands
/// in its band (2 points, 10%, or equal). A test of the generator's knobs: retuning one can fail it.
#[test]
fn jcdl2013_at_seed_1_is_within_every_band_of_the_paper() {
    let p = Preset::by_name("jcdl2013").expect("preset");
    let c = calibration(p.uri_rs, 1);
    let outside = c.outside();
    assert!(
        outside.is_empty(),
        "outside their bands: {outside:?}\n{}",
        c.table()
    );
    assert!(c
        .table()
        .contains("All 7 figures compared with the paper's are within"));
    // The outages where jcdl.rs places them, and the facts the paper gives no figure for.
    let ia = (*IA_PROXY_BROKEN.start(), *IA_PROXY_BROKEN.end());
    let observer = (*OBSERVER_DOWN.start(), *OBSERVER_DOWN.end());
    let power = (*POWER_FAILURE.start(), *POWER_FAILURE.end());
    assert_eq!(c.outages(), vec![observer, power, ia]);
    assert!(
        c.always_empty > 0 && c.always_empty < 800,
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
