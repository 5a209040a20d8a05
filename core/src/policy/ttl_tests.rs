//! The adaptive TTL rule on synthetic histories, and a policy that uses it end to end.

use super::*;
use crate::policy::{Action, Decision, Freshness, Policy, PolicyKind};
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, Fetch, ListedMemento};
use crate::timemap::datetime::parse_14digit;

fn now() -> DateTime<Utc> {
    parse_14digit("20240601000000").expect("test timestamp")
}

fn rule(budget: f64) -> Adaptive {
    Adaptive {
        min: Duration::days(1),
        max: Duration::days(90),
        budget,
    }
}

/// `n` captures, one every `step`, the newest `step` before `now()`.
fn every(step: Duration, n: i64) -> Vec<DateTime<Utc>> {
    (1..=n).map(|i| now() - step * i as i32).collect()
}

fn no_history() -> VecDeque<HistoryItem> {
    VecDeque::new()
}

fn item(at: DateTime<Utc>, case: Option<crate::policy::ChangeCase>) -> HistoryItem {
    HistoryItem {
        at,
        case,
        action: crate::policy::Action::Kept,
        same_set: None,
    }
}

#[test]
fn an_hourly_page_gets_a_shorter_ttl_than_a_yearly_one() {
    let r = rule(1.0);
    let hourly = r.ttl(every(Duration::hours(1), 200), &no_history(), now());
    let daily = r.ttl(every(Duration::days(1), 200), &no_history(), now());
    let monthly = r.ttl(every(Duration::days(30), 50), &no_history(), now());
    let yearly = r.ttl(every(Duration::days(365), 20), &no_history(), now());
    assert_eq!(hourly, Duration::days(1), "at the floor");
    assert!(hourly <= daily && daily < monthly && monthly < yearly);
    // Yearly: λ = 7.5/2920, T = √(2 · 2920/7.5) ≈ 27.9 days.
    assert_eq!(yearly.num_hours(), 669);
    // Daily captures: λ = 7.5/8 a day, T = √(2/λ) ≈ 1.46 days.
    assert_eq!(daily.num_hours(), 35);
    // Monthly: λ = 7.5/240, T = √64 = 8 days.
    assert_eq!(monthly.num_hours(), 8 * 24);
}

#[test]
fn the_ttl_grows_as_the_square_root_of_the_budget() {
    let dts = every(Duration::days(30), 50);
    let t1 = rule(1.0).ttl(dts.clone(), &no_history(), now());
    let t4 = rule(4.0).ttl(dts, &no_history(), now());
    assert_eq!(t4.num_hours(), 2 * t1.num_hours());
}

#[test]
fn bounds_hold_for_every_rate() {
    let r = Adaptive {
        min: Duration::hours(6),
        max: Duration::days(30),
        budget: 2.0,
    };
    for rate in [
        0.0,
        1e-300,
        1e-9,
        0.01,
        1.0,
        1e9,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
        -1.0,
    ] {
        let t = r.ttl_for_rate(rate);
        assert!(r.min <= t && t <= r.max, "{rate}: {t:?}");
    }
    // A rate of 0 (or nonsense) is no evidence of gains: the ceiling.
    assert_eq!(r.ttl_for_rate(0.0), r.max);
    assert_eq!(r.ttl_for_rate(f64::NAN), r.max);
    // Crossed bounds (refused by validation): the floor wins, nothing panics.
    let crossed = Adaptive {
        min: Duration::days(5),
        max: Duration::days(2),
        budget: 1.0,
    };
    assert_eq!(crossed.ttl_for_rate(1.0), Duration::days(5));
}

#[test]
fn an_empty_timemap_backs_off_as_it_stays_empty() {
    let r = rule(1.0);
    // Just stored: watched for no time, so asked again soon.
    let fresh = r.ttl([], &no_history(), now());
    assert_eq!(fresh, Duration::days(1));
    // Empty for 50 days: λ = ½/50, T = √200 ≈ 14.1 days.
    let watched = VecDeque::from([item(now() - Duration::days(50), None)]);
    let later = r.ttl([], &watched, now());
    assert_eq!(later.num_hours(), 339);
    // Empty for ten years: the ceiling.
    let long = VecDeque::from([item(now() - Duration::days(3650), None)]);
    assert_eq!(r.ttl([], &long, now()), Duration::days(90));
}

#[test]
fn one_memento_reads_its_age() {
    let r = rule(1.0);
    // Half a capture in 8 days: T = √32 ≈ 5.7 days.
    let recent = r.ttl([now() - Duration::days(8)], &no_history(), now());
    assert_eq!(recent.num_hours(), 135);
    // A single capture of 2001: the ceiling.
    let old = parse_14digit("20010101000000").expect("test timestamp");
    assert_eq!(r.ttl([old], &no_history(), now()), Duration::days(90));
}

#[test]
fn a_busy_past_with_an_ancient_newest_memento_is_quiet_now() {
    // Thousands of captures a minute apart, but all in 1999: the window reaches back from now,
    // so the rate is that of the last 25 years (7.5 captures in 9,280 days, T ≈ 49.7 days),
    // not of 1999 (the floor).
    let base = parse_14digit("19990101000000").expect("test timestamp");
    let dts: Vec<_> = (0..5000).map(|i| base + Duration::minutes(i)).collect();
    assert_eq!(rule(1.0).ttl(dts, &no_history(), now()).num_days(), 49);
    assert_eq!(
        rule(2.0).ttl(vec![base; 5], &no_history(), now()),
        Duration::days(90)
    );
}

#[test]
fn repeated_datetimes_count_once() {
    // One capture listed by many archives or collections is one capture.
    let dts = vec![now() - Duration::days(8); 100];
    let once = rule(1.0).ttl([now() - Duration::days(8)], &no_history(), now());
    assert_eq!(rule(1.0).ttl(dts, &no_history(), now()), once);
}

#[test]
fn a_burst_shortens_the_ttl_only_as_far_as_the_lifetime_mean() {
    // Twenty yearly captures, then thirty in the last day (one crawl): the recent rate says 7.5
    // a day (the floor), the lifetime mean 49.5 in 7,300 days, T = √(2 · 7300/49.5) ≈ 17.2 days.
    let yearly = every(Duration::days(365), 20);
    let mut burst = yearly.clone();
    burst.extend((1..=30).map(|m| now() - Duration::minutes(m * 30)));
    let before = rule(1.0).ttl(yearly, &no_history(), now());
    let after = rule(1.0).ttl(burst, &no_history(), now());
    assert_eq!(after.num_hours(), 412);
    assert!(after < before && after > Duration::days(1));
}

#[test]
fn extreme_datetimes_neither_overflow_nor_panic() {
    let r = rule(1.0);
    let extremes = [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC, now()];
    for &at in &extremes {
        for dts in [
            vec![],
            extremes.to_vec(),
            vec![DateTime::<Utc>::MAX_UTC; 20],
        ] {
            let hist = VecDeque::from([
                item(DateTime::<Utc>::MIN_UTC, None),
                item(
                    DateTime::<Utc>::MAX_UTC,
                    Some(crate::policy::ChangeCase::C2),
                ),
            ]);
            for h in [no_history(), hist] {
                let t = r.ttl(dts.clone(), &h, at);
                assert!(r.min <= t && t <= r.max, "{at} {t:?}");
            }
        }
    }
    // Captures dated after now say nothing: as if the TimeMap were empty and just stored.
    let future = vec![DateTime::<Utc>::MAX_UTC; 20];
    assert_eq!(
        r.ttl(future, &no_history(), now()),
        r.ttl([], &no_history(), now())
    );
}

/// A policy in adaptive mode, conditional, with `rule(1.0)`.
fn adaptive() -> Policy {
    Policy {
        ttl_mode: TtlMode::Adaptive(rule(1.0)),
        ..Policy::default()
    }
}

fn fetch_of(dts: &[DateTime<Utc>], at: DateTime<Utc>) -> Fetch {
    Fetch {
        uri_r: "http://example.com/".to_string(),
        at,
        archives: vec![Contribution {
            archive: "ia".to_string(),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: at,
            mementos: dts
                .iter()
                .enumerate()
                .map(|(i, &datetime)| ListedMemento {
                    uri_m: format!("http://ia/{i}").into(),
                    datetime,
                    absent: None,
                })
                .collect(),
            last_error: None,
            listing: Default::default(),
        }],
    }
}

#[test]
fn an_adaptive_policy_stores_the_entrys_own_ttl_and_judges_by_it() {
    let p = adaptive();
    let dts = every(Duration::days(30), 50);
    let Decision::Store { entry, action, .. } = p.decide(None, &fetch_of(&dts, now()), now())
    else {
        panic!("a first fetch is stored");
    };
    assert_eq!(action, Action::Stored);
    assert_eq!(entry.fresh_until, Some(now() + Duration::days(8)));
    assert_eq!(
        p.effective_ttl(entry.checked_at, entry.fresh_until),
        Some(Duration::days(8))
    );
    let at = |d: i64| now() + Duration::days(d);
    assert_eq!(p.freshness(Some(&entry), at(8)), Freshness::Fresh);
    assert_eq!(p.freshness(Some(&entry), at(9)), Freshness::Expired);
    // Narrower bounds configured since: the stored TTL is held to them.
    let narrow = Policy {
        ttl_mode: TtlMode::Adaptive(Adaptive {
            max: Duration::days(3),
            ..rule(1.0)
        }),
        ..Policy::default()
    };
    assert_eq!(narrow.freshness(Some(&entry), at(4)), Freshness::Expired);
    // An entry stored without an end (fixed TTL ∞): the ceiling.
    let mut forever = entry.clone();
    forever.fresh_until = None;
    assert_eq!(
        p.effective_ttl(forever.checked_at, None),
        Some(Duration::days(90))
    );
    // The same entry under a fixed policy: the policy's TTL, whatever is stored.
    let fixed = Policy::default();
    assert_eq!(fixed.freshness(Some(&entry), at(15)), Freshness::Fresh);
    assert_eq!(fixed.freshness(Some(&entry), at(16)), Freshness::Expired);
}

#[test]
fn a_refetch_that_finds_new_captures_shortens_the_ttl() {
    let p = adaptive();
    let dts = every(Duration::days(30), 50);
    let first = p
        .decide(None, &fetch_of(&dts, now()), now())
        .into_entry()
        .expect("stored");
    // Nine days later, ten captures of the last day have appeared (case 2): replaced, and the
    // TTL falls (to the lifetime mean's, 59.5 in 1,509 days: T ≈ 7.1 days).
    let later = now() + Duration::days(9);
    let mut more = dts.clone();
    more.extend((1..=10).map(|h| later - Duration::hours(h)));
    let d = p.decide(Some(&first), &fetch_of(&more, later), later);
    assert_eq!(d.action(), Action::Replaced);
    let e = d.into_entry().expect("stored");
    let ttl = p.effective_ttl(e.checked_at, e.fresh_until);
    assert_eq!(ttl.map(|t| t.num_hours()), Some(170));
    // Nothing new for 40 days: kept, and the TTL longer again (the recent window has grown).
    let quiet = later + Duration::days(40);
    let k = p
        .decide(Some(&e), &fetch_of(&more, quiet), quiet)
        .into_entry()
        .expect("kept");
    let longer = p.effective_ttl(k.checked_at, k.fresh_until);
    assert!(longer > ttl, "{longer:?} after {ttl:?}");
}

#[test]
fn forever_and_none_ignore_the_mode() {
    let forever = Policy {
        kind: PolicyKind::Forever,
        ..adaptive()
    };
    let e = forever
        .decide(None, &fetch_of(&[now()], now()), now())
        .into_entry()
        .expect("stored");
    assert_eq!(e.fresh_until, None);
    assert_eq!(
        forever.freshness(Some(&e), now() + Duration::days(10_000)),
        Freshness::Fresh
    );
    let none = Policy {
        kind: PolicyKind::None,
        ..adaptive()
    };
    assert_eq!(none.freshness(Some(&e), now()), Freshness::Miss);
}
