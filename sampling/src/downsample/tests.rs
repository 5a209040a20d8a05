//! Eq. 1, the seeded choice, the long tail and the candidate pool's accounting.

use super::*;

#[test]
fn eq_1_on_the_papers_numbers() {
    let p = Downsampling::default();
    // google.com's 1.8 M URLs in one 2004 bucket (K = 5): round(5·ln(1.8e6) + 1) = 73.
    assert_eq!(p.target(1_800_000, 2004), 73);
    // K = 1 (2012): round(ln(1.8e6) + 1) = 15.
    assert_eq!(p.target(1_800_000, 2012), 15);
    // Small domains keep everything: min(N, …).
    assert_eq!(p.target(1, 2004), 1);
    assert_eq!(p.target(2, 2004), 2);
    assert_eq!(p.target(0, 2004), 0);
    // Base 10 instead of e.
    assert_eq!(target(1_000_000, 2.0, 1.0, 10.0), 13);
    // The paper's 459 for google.com is a sum over its year buckets; with Table 7's K and
    // 1.8 M spread evenly over the 22 buckets it would be Σ round(K·ln(81,818) + 1).
    let spread: u64 = TABLE7_K
        .iter()
        .map(|&(b, _)| p.target(1_800_000 / 22, b))
        .sum();
    assert_eq!(spread, 590);
}

#[test]
fn root_first_then_a_seeded_choice_independent_of_order() {
    let urls: Vec<String> = (0..500).map(|i| format!("https://a.com/p{i}")).collect();
    let run = |seed: u64, rev: bool| {
        let mut s = Sampler::new(seed, Downsampling::default(), 300);
        let mut list = urls.clone();
        if rev {
            list.reverse();
        }
        for u in &list {
            s.push(2004, "a.com", u, false);
        }
        s.push(2004, "a.com", "https://a.com/", true);
        let f = s.finish(&mut |_, _, _| {});
        (f.picked, f.counts)
    };
    let (picked, counts) = run(7, false);
    // N = 501: round(5·ln 501 + 1) = 32.
    assert_eq!(picked.len(), 32);
    assert!(picked[0].root && picked[0].url == "https://a.com/");
    assert_eq!(
        counts["a.com"],
        DomainCounts {
            before: 501,
            after: 32
        }
    );
    assert_eq!(
        run(7, true).0,
        picked,
        "the order of arrival does not matter"
    );
    assert_ne!(run(8, false).0, picked, "the seed does");
}

#[test]
fn the_long_tail_drops_single_url_domains_only_in_crowded_buckets() {
    let mut s = Sampler::new(1, Downsampling::default(), 300);
    for i in 0..1000 {
        s.push(
            2010,
            &format!("d{i}.com"),
            &format!("https://d{i}.com/x"),
            false,
        );
    }
    s.push(2010, "big.com", "https://big.com/a", false);
    s.push(2010, "big.com", "https://big.com/b", false);
    for i in 0..10 {
        s.push(
            2003,
            &format!("e{i}.com"),
            &format!("https://e{i}.com/x"),
            false,
        );
    }
    let before = s.urls_per_domain();
    assert_eq!(before.len(), 1011);
    assert_eq!(before["big.com"], 2);
    let mut dropped = Vec::new();
    let lt = s.reduce_long_tail(500, 0.9, &mut |b, d, u| {
        dropped.push((b, d.to_string(), u.to_string()))
    });
    assert_eq!(lt.buckets, vec![2010]);
    assert!((850..=950).contains(&lt.dropped_domains), "{lt:?}");
    // Every dropped domain's URL is handed back, not lost.
    assert_eq!(dropped.len() as u64, lt.dropped_domains);
    assert!(dropped
        .iter()
        .all(|(b, d, u)| *b == 2010 && *u == format!("https://{d}/x")));
    let after = s.per_year();
    assert_eq!(after[&2010].domains, 1001 - lt.dropped_domains);
    assert_eq!(after[&2010].urls, 1002 - lt.dropped_domains);
    assert_eq!((after[&2003].domains, after[&2003].urls), (10, 10));
    assert_eq!(
        (after[&2010].k, after[&2003].k, after[&2010].c),
        (2.0, 2.0, 1.0)
    );
    let picked = s.finish(&mut |_, _, _| {}).picked;
    assert!(picked.iter().any(|p| p.domain == "big.com"));
    assert_eq!(picked.iter().filter(|p| p.bucket == 2003).count(), 10);
}

#[test]
fn every_url_not_picked_is_handed_back_once() {
    // 1,000 URLs through a pool of 50: 950 leave as they are pushed, the rest at finish.
    let mut s = Sampler::new(3, Downsampling::default(), 50);
    let mut left = Vec::new();
    for i in 0..1000 {
        if let Some(u) = s.push(2004, "a.com", &format!("https://a.com/p{i}"), false) {
            left.push(u);
        }
    }
    s.push(2004, "a.com", "https://a.com/", true);
    if let Some(u) = s.push(2004, "a.com", "https://www.a.com/", true) {
        left.push(u);
    }
    let f = s.finish(&mut |_, _, u| left.push(u.to_string()));
    let mut all: Vec<String> = f.picked.iter().map(|p| p.url.clone()).collect();
    all.extend(left);
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!(
        (n, all.len()),
        (1002, 1002),
        "each URL once, picked or left"
    );
    assert!(
        f.shortfalls.is_empty(),
        "K·ln(1002)+1 = 36 fits a pool of 50"
    );
}

#[test]
fn a_target_above_the_pool_is_a_shortfall_and_the_default_pool_has_none() {
    let mut p = Downsampling::default();
    p.k.insert(2010, 100.0);
    // round(100·ln(1000) + 1) = 692 wanted, the pool holds 300.
    let mut s = Sampler::new(1, p.clone(), 300);
    for i in 0..1000 {
        s.push(2010, "big.com", &format!("https://big.com/{i}"), false);
    }
    let f = s.finish(&mut |_, _, _| {});
    assert_eq!(
        f.shortfalls,
        vec![Shortfall {
            year: 2010,
            domain: "big.com".into(),
            urls: 1000,
            target: 692,
            sampled: 300,
            pool: 300
        }]
    );
    // Sized from Eq. 1's largest target, the pool meets it.
    let pool = p.largest_target([2009, 2011]) as usize;
    assert!(pool >= 692, "{pool}");
    let mut s = Sampler::new(1, p, pool);
    for i in 0..1000 {
        s.push(2010, "big.com", &format!("https://big.com/{i}"), false);
    }
    let f = s.finish(&mut |_, _, _| {});
    assert!(f.shortfalls.is_empty());
    assert_eq!(f.picked.len(), 692);
}
