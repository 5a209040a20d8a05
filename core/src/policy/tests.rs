//! The policy's behaviour: Table 1, freshness and the stale rules, each policy's decisions,
//! merging and redaction, and replays of daily requests.

use super::*;
use crate::policy::entry::ENTRY_FORMAT_VERSION;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::answer::{Absence, ArchiveAnswer, ArchiveStatus, Contribution, ListedMemento};
use crate::timemap::credit::Credits;
use crate::timemap::datetime::parse_14digit;
use crate::timemap::merge::merge;
use crate::timemap::{MementoDatetime, TimeMap};
use std::sync::Arc;

/// Simulated day `d` (midnight), the clock of every test.
fn day(d: i64) -> DateTime<Utc> {
    parse_14digit("20120501000000").expect("test timestamp") + Duration::days(d)
}

/// The datetime of memento number `k` (the same k is the same loose key in one archive).
fn mdt(k: usize) -> MementoDatetime {
    parse_14digit("20000101000000").expect("test timestamp") + Duration::hours(k as i64)
}

fn lm(archive: &str, k: usize) -> ListedMemento {
    ListedMemento {
        uri_m: format!("http://{archive}/{k}").into(),
        datetime: mdt(k),
        absent: None,
    }
}

/// What `archive` answered, with these mementos (`fetch` sets when).
fn answered(archive: &str, answer: ArchiveAnswer, mementos: Vec<ListedMemento>) -> Contribution {
    Contribution {
        archive: archive.to_string(),
        answer,
        fetched_at: day(0),
        mementos,
        last_error: None,
        listing: Default::default(),
    }
}

/// An archive that answered 200 with mementos numbered `keys`.
fn ok(archive: &str, keys: impl IntoIterator<Item = usize>) -> Contribution {
    let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
    answered(
        archive,
        answer,
        keys.into_iter().map(|k| lm(archive, k)).collect(),
    )
}

/// An archive that answered 404: it holds nothing (a usable answer).
fn not_found(archive: &str) -> Contribution {
    let answer = ArchiveAnswer::failed(ArchiveStatus::NotFound, Some(404), None);
    answered(archive, answer, vec![])
}

fn failed(archive: &str, status: ArchiveStatus) -> Contribution {
    answered(archive, ArchiveAnswer::failed(status, None, None), vec![])
}

/// The fan-out of day `d`: each archive's contribution answered then.
fn fetch(d: i64, archives: Vec<Contribution>) -> Fetch {
    Fetch {
        uri_r: "http://example.com/".to_string(),
        at: day(d),
        archives: archives
            .into_iter()
            .map(|c| Contribution {
                fetched_at: day(d),
                ..c
            })
            .collect(),
    }
}

fn policy(kind: PolicyKind) -> Policy {
    Policy {
        kind,
        ..Policy::default()
    }
}

fn ttl_days(kind: PolicyKind, ttl: Option<i64>) -> Policy {
    Policy {
        kind,
        ttl: ttl.map(Duration::days),
        ..Policy::default()
    }
}

/// The entry a first fetch on day 0 stores.
fn first(p: &Policy, archives: Vec<Contribution>) -> Entry {
    let f = fetch(0, archives);
    p.decide(None, &f, f.at)
        .into_entry()
        .expect("a first fetch is stored")
}

fn decide_on(p: &Policy, cached: &Entry, d: i64, archives: Vec<Contribution>) -> Decision {
    p.decide(Some(cached), &fetch(d, archives), day(d))
}

fn stored(d: &Decision) -> &Entry {
    d.entry().expect("decision stores an entry")
}

fn served_uris(e: &Entry) -> Vec<String> {
    e.timemap()
        .mementos
        .into_iter()
        .map(|m| m.uri_m.to_string())
        .collect()
}

fn served_m(e: &Entry) -> usize {
    counts(&e.timemap(), Match::Loose).1
}

// ---- Table 1 -------------------------------------------------------------------------

#[test]
fn classify_unchanged_sizes_is_case_1_even_when_both_empty() {
    assert_eq!(classify(2, 10, 2, 10), ChangeCase::C1);
    assert_eq!(classify(0, 0, 0, 0), ChangeCase::C1);
}

#[test]
fn classify_gains_are_cases_2_3_4_by_archive_change() {
    assert_eq!(classify(2, 10, 2, 11), ChangeCase::C2);
    assert_eq!(classify(2, 10, 3, 11), ChangeCase::C3);
    assert_eq!(classify(2, 10, 1, 11), ChangeCase::C4);
}

#[test]
fn classify_empty_to_nonempty_is_case_5_before_2_to_4() {
    assert_eq!(classify(0, 0, 1, 5), ChangeCase::C5);
    assert_eq!(classify(0, 0, 3, 1), ChangeCase::C5);
    // Inconsistent counts (archives without mementos) still take case 5 first.
    assert_eq!(classify(1, 0, 1, 3), ChangeCase::C5);
    assert_eq!(classify(2, 0, 1, 3), ChangeCase::C5);
}

#[test]
fn classify_lost_archive_without_gain_is_case_6() {
    assert_eq!(classify(2, 10, 1, 10), ChangeCase::C6);
    assert_eq!(classify(2, 10, 1, 4), ChangeCase::C6);
    // A 404 after a non-empty TimeMap.
    assert_eq!(classify(1, 10, 0, 0), ChangeCase::C6);
}

#[test]
fn classify_lost_mementos_without_losing_archive_is_case_7() {
    assert_eq!(classify(2, 10, 2, 9), ChangeCase::C7);
    assert_eq!(classify(2, 10, 3, 9), ChangeCase::C7);
    // Boundary: a new archive and no more mementos than before.
    assert_eq!(classify(2, 10, 3, 10), ChangeCase::C7);
}

#[test]
fn classify_gives_every_input_the_one_row_it_satisfies() {
    for a in 0..4 {
        for m in 0..4 {
            for a2 in 0..4 {
                for m2 in 0..4 {
                    let five = m == 0 && m2 > 0;
                    let row = match classify(a, m, a2, m2) {
                        ChangeCase::C1 => a2 == a && m2 == m,
                        ChangeCase::C2 => !five && a2 == a && m2 > m,
                        ChangeCase::C3 => !five && a2 > a && m2 > m,
                        ChangeCase::C4 => !five && a2 < a && m2 > m,
                        ChangeCase::C5 => five,
                        ChangeCase::C6 => a2 < a && m2 <= m,
                        ChangeCase::C7 => (a2 >= a && m2 < m) || (a2 > a && m2 == m),
                    };
                    assert!(row, "({a}, {m}) → ({a2}, {m2})");
                }
            }
        }
    }
}

#[test]
fn exactly_cases_2_to_5_are_better_and_serialise_as_numbers() {
    let better: Vec<u8> = ChangeCase::ALL
        .iter()
        .filter(|c| c.is_better())
        .map(|c| c.number())
        .collect();
    assert_eq!(better, [2, 3, 4, 5]);
    for c in ChangeCase::ALL {
        let json = serde_json::to_string(&c).expect("serialise");
        assert_eq!(json, c.number().to_string());
        assert_eq!(serde_json::from_str::<ChangeCase>(&json).expect("back"), c);
    }
    assert!(serde_json::from_str::<ChangeCase>("0").is_err());
    assert!(serde_json::from_str::<ChangeCase>("8").is_err());
}

// ---- configuration -------------------------------------------------------------------

#[test]
fn policy_and_match_parse_from_their_config_words() {
    for k in PolicyKind::ALL {
        assert_eq!(k.as_str().parse::<PolicyKind>(), Ok(k));
        let json = serde_json::to_string(&k).expect("serialise");
        assert_eq!(json, format!("\"{}\"", k.as_str()));
    }
    assert_eq!("loose".parse::<Match>(), Ok(Match::Loose));
    assert_eq!("strict".parse::<Match>(), Ok(Match::Strict));
    let e = "lru".parse::<PolicyKind>().expect_err("not a policy");
    assert!(e.to_string().contains("`lru`"), "{e}");
    assert!("Loose".parse::<Match>().is_err());
    assert_eq!(
        serde_json::from_str::<Match>("\"strict\"").expect("match"),
        Match::Strict
    );
}

#[test]
fn default_policy_is_the_papers_conditional_loose_15_days() {
    let p = Policy::default();
    assert_eq!(p.kind, PolicyKind::Conditional);
    assert_eq!(p.matching, Match::Loose);
    assert_eq!(p.ttl, Some(Duration::days(15)));
    assert_eq!(p.redaction_confirmations, 2);
    assert_eq!(p.redaction_grace, Duration::days(7));
}

// ---- freshness -----------------------------------------------------------------------

#[test]
fn freshness_without_an_entry_is_a_miss() {
    for k in PolicyKind::ALL {
        assert_eq!(policy(k).freshness(None, day(0)), Freshness::Miss);
    }
}

#[test]
fn freshness_ttl_zero_refetches_every_request() {
    let p = ttl_days(PolicyKind::Conditional, Some(0));
    let e = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(p.freshness(Some(&e), day(0)), Freshness::Expired);
    assert_eq!(p.freshness(Some(&e), day(1)), Freshness::Expired);
}

#[test]
fn freshness_ttl_n_serves_days_d_plus_1_to_d_plus_n() {
    let p = ttl_days(PolicyKind::Unconditional, Some(3));
    let e = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(e.fresh_until, Some(day(3)));
    for d in 1..=3 {
        assert_eq!(p.freshness(Some(&e), day(d)), Freshness::Fresh, "day {d}");
    }
    assert_eq!(p.freshness(Some(&e), day(4)), Freshness::Expired);
    assert_eq!(
        p.freshness(Some(&e), day(3) + Duration::seconds(1)),
        Freshness::Expired
    );
}

#[test]
fn stale_while_revalidate_serves_an_expired_entry_within_its_window() {
    let p = Policy {
        stale_while_revalidate: Duration::days(2),
        ..ttl_days(PolicyKind::Conditional, Some(3))
    };
    let e = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(p.freshness(Some(&e), day(3)), Freshness::Fresh);
    assert_eq!(
        p.freshness(Some(&e), day(3) + Duration::seconds(1)),
        Freshness::Stale
    );
    assert_eq!(p.freshness(Some(&e), day(5)), Freshness::Stale);
    assert_eq!(
        p.freshness(Some(&e), day(5) + Duration::seconds(1)),
        Freshness::Expired
    );
    // A TTL of zero is never fresh, but the window still counts from the check.
    let zero = Policy {
        ttl: Some(Duration::zero()),
        ..p.clone()
    };
    assert_eq!(zero.freshness(Some(&e), day(0)), Freshness::Stale);
    assert_eq!(zero.freshness(Some(&e), day(3)), Freshness::Expired);
    // Nothing cached is a miss, whatever the window.
    assert_eq!(p.freshness(None, day(4)), Freshness::Miss);
}

#[test]
fn without_stale_if_error_an_outage_is_the_answer() {
    let p = Policy {
        stale_if_error: false,
        ..policy(PolicyKind::Conditional)
    };
    let cached = first(&p, vec![ok("ia", 0..3)]);
    let outage = fetch(20, vec![failed("ia", ArchiveStatus::Timeout)]);
    let d = p.decide(Some(&cached), &outage, day(20));
    assert_eq!(d, Decision::Unavailable { serve_stale: false });
    assert_eq!((d.action(), d.serve()), (Action::Unavailable, Serve::Fresh));
}

#[test]
fn freshness_infinite_ttl_is_fresh_forever() {
    let p = ttl_days(PolicyKind::Conditional, None);
    let e = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(e.fresh_until, None);
    assert_eq!(p.freshness(Some(&e), day(100_000)), Freshness::Fresh);
}

#[test]
fn freshness_forever_ignores_the_ttl() {
    let p = ttl_days(PolicyKind::Forever, Some(0));
    let e = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(e.fresh_until, None);
    assert_eq!(p.freshness(Some(&e), day(0)), Freshness::Fresh);
    assert_eq!(p.freshness(Some(&e), day(10_000)), Freshness::Fresh);
}

#[test]
fn freshness_under_none_is_always_a_miss() {
    let stored_by = ttl_days(PolicyKind::Conditional, None);
    let e = first(&stored_by, vec![ok("ia", 0..3)]);
    assert_eq!(
        policy(PolicyKind::None).freshness(Some(&e), day(0)),
        Freshness::Miss
    );
}

#[test]
fn keeping_restarts_the_ttl() {
    let p = ttl_days(PolicyKind::Conditional, Some(4));
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 5, vec![ok("ia", 0..3)]);
    assert_eq!(d.action(), Action::Kept);
    let kept = stored(&d);
    assert_eq!(kept.checked_at, day(5));
    assert_eq!(kept.fetched_at, day(0), "content is still day 0's");
    assert_eq!(kept.fresh_until, Some(day(9)));
    assert_eq!(p.freshness(Some(kept), day(9)), Freshness::Fresh);
    assert_eq!(p.freshness(Some(kept), day(10)), Freshness::Expired);
}

#[test]
fn a_kept_entry_names_the_failure_of_the_refetch_beside_the_answer_it_serves() {
    // Found by the fault tests: a case 6 refetch kept the TimeMap and went on reporting the
    // failed archive as `ok` with nothing else, so the answer hid that it had just timed out.
    // Found by the compatibility tests: reporting it as `timeout` instead made every hit for 15 days call the
    // archive missing (X-Memento-Partial) although all its mementos were served. Now its answer
    // stays `ok` with its own fetched_at, and the failure is its `last_error`.
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 10..13)]);
    let d = decide_on(
        &p,
        &e,
        20,
        vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
    );
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C6), Action::Kept));
    let kept = stored(&d);
    let pt = &kept.contributions[1];
    assert_eq!(pt.answer.status, ArchiveStatus::Ok);
    assert_eq!(pt.mementos, e.contributions[1].mementos);
    assert_eq!(pt.fetched_at, e.contributions[1].fetched_at);
    let last = pt.last_error.as_ref().expect("the failure is told");
    assert_eq!((last.status, last.at), (ArchiveStatus::Timeout, day(20)));
    assert_eq!(kept.contributions[0].answer.status, ArchiveStatus::Ok);
    assert_eq!(kept.contributions[0].last_error, None);
    assert_eq!(served_m(kept), 8, "the content is unchanged");
    assert_eq!(kept.fetched_at, day(0));

    // Its next answer clears the failure.
    let d = decide_on(&p, kept, 40, vec![ok("ia", 0..5), ok("pt", 10..13)]);
    assert_eq!(stored(&d).contributions[1].last_error, None);
}

#[test]
fn an_archive_that_failed_before_and_fails_again_stays_failed_without_last_error() {
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Error)]);
    let d = decide_on(
        &p,
        &e,
        20,
        vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
    );
    let pt = &stored(&d).contributions[1];
    assert_eq!(
        pt.answer.status,
        ArchiveStatus::Timeout,
        "nothing of it is served"
    );
    assert_eq!(pt.last_error, None);
}

// ---- outages, none, first store ------------------------------------------------------

#[test]
fn an_outage_is_unavailable_under_every_policy_and_stores_nothing() {
    let outages = [
        vec![
            failed("ia", ArchiveStatus::Timeout),
            failed("pt", ArchiveStatus::Error),
            failed("uk", ArchiveStatus::Malformed),
        ],
        vec![],
    ];
    for k in PolicyKind::ALL {
        let p = policy(k);
        let cached = first(&policy(PolicyKind::Conditional), vec![ok("ia", 0..3)]);
        for archives in &outages {
            let f = fetch(20, archives.clone());
            let with = p.decide(Some(&cached), &f, day(20));
            assert_eq!(with, Decision::Unavailable { serve_stale: true }, "{k}");
            let without = p.decide(None, &f, day(20));
            assert_eq!(without.action(), Action::Unavailable);
            assert_eq!(without.entry(), None);
            assert_eq!(without.serve(), Serve::Fresh);
        }
    }
}

#[test]
fn a_partial_answer_is_a_timemap_not_an_outage() {
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..3), ok("pt", 0..2)]);
    let d = decide_on(
        &p,
        &e,
        20,
        vec![ok("ia", 0..3), failed("pt", ArchiveStatus::Timeout)],
    );
    assert_eq!(d.case(), Some(ChangeCase::C6));
    assert_eq!(d.action(), Action::Kept);
    assert_eq!(served_m(stored(&d)), 5);
}

#[test]
fn none_serves_the_fresh_fetch_and_stores_nothing() {
    let p = policy(PolicyKind::None);
    let f = fetch(0, vec![ok("ia", 0..3)]);
    let d = p.decide(None, &f, day(0));
    assert_eq!(d, Decision::Pass);
}

#[test]
fn a_first_fetch_is_stored_by_every_policy_but_none_even_when_empty() {
    for k in PolicyKind::ALL {
        let p = policy(k);
        for archives in [vec![ok("ia", 0..3)], vec![not_found("ia")]] {
            let f = fetch(0, archives);
            let d = p.decide(None, &f, day(0));
            if k == PolicyKind::None {
                assert_eq!(d.action(), Action::NotStored);
                continue;
            }
            assert_eq!(d.action(), Action::Stored, "{k}");
            assert_eq!(d.case(), None);
            assert_eq!(d.serve(), Serve::Stored);
            let e = stored(&d);
            assert_eq!(e.version, ENTRY_FORMAT_VERSION);
            assert_eq!(e.uri_r, "http://example.com/");
            assert_eq!((e.fetched_at, e.checked_at), (day(0), day(0)));
            assert_eq!(e.history.len(), 1);
            assert_eq!(e.history[0].action, Action::Stored);
            assert_eq!(e.history[0].case, None);
            let expect_until = (k != PolicyKind::Forever).then(|| day(15));
            assert_eq!(e.fresh_until, expect_until, "{k}");
        }
    }
}

#[test]
fn an_empty_first_fetch_is_stored_with_zero_counts() {
    let e = first(&policy(PolicyKind::Conditional), vec![not_found("ia")]);
    assert_eq!((e.archives, e.loose, e.strict), (0, 0, 0));
    assert_eq!(e.contributions.len(), 1);
    assert_eq!(e.contributions[0].answer.status, ArchiveStatus::NotFound);
}

// ---- forever -------------------------------------------------------------------------

#[test]
fn forever_keeps_what_it_first_stored_even_on_a_forced_refetch() {
    let p = policy(PolicyKind::Forever);
    let e = first(&p, vec![ok("ia", 0..3)]);
    let d = decide_on(&p, &e, 30, vec![ok("ia", 0..9)]);
    assert_eq!(d.case(), Some(ChangeCase::C2));
    assert_eq!(d.action(), Action::Kept);
    assert_eq!(served_m(stored(&d)), 3);
    assert_eq!(stored(&d).fresh_until, None);
}

// ---- unconditional -------------------------------------------------------------------

#[test]
fn unconditional_replaces_whatever_the_case_and_records_it() {
    let p = policy(PolicyKind::Unconditional);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5)]);
    let cases = [
        (vec![ok("ia", 5..10), ok("pt", 0..5)], ChangeCase::C1, 10),
        (vec![ok("ia", 0..6), ok("pt", 0..5)], ChangeCase::C2, 11),
        (
            vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
            ChangeCase::C6,
            5,
        ),
        (vec![ok("ia", 0..4), ok("pt", 0..5)], ChangeCase::C7, 9),
    ];
    for (archives, case, m) in cases {
        let d = decide_on(&p, &e, 20, archives);
        assert_eq!((d.case(), d.action()), (Some(case), Action::Replaced));
        let r = stored(&d);
        assert_eq!(served_m(r), m, "case {case}");
        assert_eq!((r.fetched_at, r.checked_at), (day(20), day(20)));
        assert_eq!(r.fresh_until, Some(day(35)));
        assert_eq!(r.history.len(), 2);
        assert_eq!(r.history[1].case, Some(case));
    }
}

// ---- conditional ---------------------------------------------------------------------

#[test]
fn conditional_replaces_on_cases_2_to_5() {
    let p = policy(PolicyKind::Conditional);
    let two = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5), not_found("uk")]);
    let cases = [
        (
            vec![ok("ia", 0..6), ok("pt", 0..5), not_found("uk")],
            ChangeCase::C2,
            11,
        ),
        (
            vec![ok("ia", 0..5), ok("pt", 0..5), ok("uk", 0..1)],
            ChangeCase::C3,
            11,
        ),
        (
            vec![
                ok("ia", 0..12),
                failed("pt", ArchiveStatus::Timeout),
                not_found("uk"),
            ],
            ChangeCase::C4,
            12,
        ),
    ];
    for (archives, case, m) in cases {
        let d = decide_on(&p, &two, 20, archives);
        assert_eq!((d.case(), d.action()), (Some(case), Action::Replaced));
        assert_eq!(served_m(stored(&d)), m);
        assert_eq!(stored(&d).fetched_at, day(20));
    }
    let empty = first(&p, vec![not_found("ia")]);
    let d = decide_on(&p, &empty, 20, vec![ok("ia", 0..2)]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C5), Action::Replaced)
    );
    assert_eq!(served_m(stored(&d)), 2);
}

#[test]
fn conditional_keeps_on_cases_1_6_and_7() {
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..5)]);
    let cases = [
        (vec![ok("ia", 0..5), ok("pt", 0..5)], ChangeCase::C1),
        (
            vec![ok("ia", 0..6), failed("pt", ArchiveStatus::Error)],
            ChangeCase::C6,
        ),
        (vec![ok("ia", 0..5), ok("pt", 0..4)], ChangeCase::C7),
        (
            vec![ok("ia", 0..5), ok("pt", 0..4), ok("uk", 0..1)],
            ChangeCase::C7,
        ),
    ];
    for (archives, case) in cases {
        let d = decide_on(&p, &e, 20, archives);
        assert_eq!((d.case(), d.action()), (Some(case), Action::Kept));
        let kept = stored(&d);
        // The content is untouched; only each archive's latest status may differ.
        let content = |e: &Entry| {
            e.contributions
                .iter()
                .map(|c| (c.archive.clone(), c.mementos.clone(), c.fetched_at))
                .collect::<Vec<_>>()
        };
        assert_eq!(content(kept), content(&e), "content untouched");
        assert_eq!(kept.fetched_at, day(0));
        assert_eq!(kept.checked_at, day(20));
        assert_eq!(kept.fresh_until, Some(day(35)));
        let last = kept.history.back().expect("history item");
        assert_eq!(
            (last.at, last.case, last.action),
            (day(20), Some(case), Action::Kept)
        );
    }
}

#[test]
fn conditional_case_1_records_whether_the_loose_set_was_equal() {
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let same = decide_on(&p, &e, 20, vec![ok("ia", 0..5)]);
    assert_eq!(same.case(), Some(ChangeCase::C1));
    assert_eq!(stored(&same).history[1].same_set, Some(true));
    // One memento gone, another new: same count, other set.
    let swapped = decide_on(&p, &e, 20, vec![ok("ia", 1..6)]);
    assert_eq!(swapped.case(), Some(ChangeCase::C1));
    assert_eq!(swapped.action(), Action::Kept);
    assert_eq!(stored(&swapped).history[1].same_set, Some(false));
    // Not case 1: nothing recorded.
    let grew = decide_on(&p, &e, 20, vec![ok("ia", 0..6)]);
    assert_eq!(stored(&grew).history[1].same_set, None);
}

#[test]
fn a_404_never_replaces_a_nonempty_timemap_under_conditional_or_merge() {
    for k in [PolicyKind::Conditional, PolicyKind::Merge] {
        let p = policy(k);
        let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
        let d = decide_on(&p, &e, 20, vec![not_found("ia"), not_found("pt")]);
        assert_eq!(d.case(), Some(ChangeCase::C6), "{k}");
        assert_eq!(d.action(), Action::Kept, "{k}");
        assert_eq!(d.serve(), Serve::Stored);
        assert_eq!(served_uris(stored(&d)), served_uris(&e), "{k}");
        // Nor does a second 404 within the redaction grace.
        let again = decide_on(&p, stored(&d), 21, vec![not_found("ia"), not_found("pt")]);
        assert_eq!(served_m(stored(&again)), 8, "{k}");
    }
}

#[test]
fn a_404_does_replace_a_nonempty_timemap_under_unconditional() {
    let p = policy(PolicyKind::Unconditional);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 20, vec![not_found("ia")]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C6), Action::Replaced)
    );
    assert_eq!(served_m(stored(&d)), 0);
}

// ---- merge ---------------------------------------------------------------------------

#[test]
fn merge_keeps_a_failed_archives_mementos_and_reports_its_failure() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
    let d = decide_on(
        &p,
        &e,
        20,
        vec![ok("ia", 0..5), failed("pt", ArchiveStatus::Timeout)],
    );
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C6), Action::Kept));
    let m = stored(&d);
    // Its mementos, their answer and fetch time stand; its last_error says it failed this time.
    assert_eq!(m.contributions[1].mementos, e.contributions[1].mementos);
    assert_eq!(m.contributions[1].fetched_at, e.contributions[1].fetched_at);
    assert_eq!(m.contributions[1].answer.status, ArchiveStatus::Ok);
    let last = m.contributions[1].last_error.as_ref().expect("last_error");
    assert_eq!((last.status, last.at), (ArchiveStatus::Timeout, day(20)));
    assert_eq!(m.contributions[0].last_error, None);
    assert_eq!(m.contributions[0].fetched_at, day(20));
    assert_eq!(m.fetched_at, day(0), "served TimeMap unchanged");
    assert_eq!(m.checked_at, day(20));
    assert_eq!(m.fresh_until, Some(day(35)));
}

#[test]
fn merge_adds_a_fallbacks_mementos_without_marking_the_others_absent() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
    // pt's TimeMap failed; its TimeGate gave memento 2 (known) and 7 (new).
    let mut fell = failed("pt", ArchiveStatus::Error);
    fell.answer.fallback = Some(crate::timemap::answer::Fallback::Timegate);
    fell.mementos = vec![lm("pt", 7), lm("pt", 2)];
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..5), fell]);
    let m = stored(&d);
    let pt = &m.contributions[1];
    let keys: Vec<MementoDatetime> = pt.mementos.iter().map(|m| m.datetime).collect();
    assert_eq!(keys, [mdt(0), mdt(1), mdt(2), mdt(7)]);
    assert!(pt.mementos.iter().all(|m| m.absent.is_none()));
    // Its earlier TimeMap answer is still what it is served under (an answer that counts honestly); the
    // failed listing, fallback and all, is its last_error.
    assert_eq!(pt.answer.status, ArchiveStatus::Ok);
    let last = pt.last_error.as_ref().expect("last_error");
    assert_eq!(last.status, ArchiveStatus::Error);
}

#[test]
fn merge_case_4_keeps_the_lost_archive_and_the_new_mementos() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..3)]);
    let d = decide_on(
        &p,
        &e,
        20,
        vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Error)],
    );
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C4), Action::Merged)
    );
    let m = stored(&d);
    assert_eq!(served_m(m), 12);
    assert_eq!((m.archives, m.loose, m.strict), (2, 12, 12));
    assert_eq!(m.fetched_at, day(20));
    // Conditional had to choose: the 9 new ones win and pt's 3 are gone.
    let c = decide_on(
        &policy(PolicyKind::Conditional),
        &e,
        20,
        vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Error)],
    );
    assert_eq!(served_m(stored(&c)), 9);
}

#[test]
fn merge_adds_new_mementos_and_archives() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..6)]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C2), Action::Merged)
    );
    assert_eq!(served_m(stored(&d)), 6);
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..5), ok("pt", 0..2)]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C3), Action::Merged)
    );
    assert_eq!(served_m(stored(&d)), 7);
}

#[test]
fn merge_recovers_from_an_empty_timemap_in_case_5() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![not_found("ia")]);
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..4)]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C5), Action::Merged)
    );
    assert_eq!(served_m(stored(&d)), 4);
    assert_eq!(stored(&d).contributions[0].answer.status, ArchiveStatus::Ok);
}

#[test]
fn merge_unchanged_answer_is_case_1_kept() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..5)]);
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
    assert_eq!(stored(&d).history[1].same_set, Some(true));
}

#[test]
fn merge_marks_a_missing_memento_absent_but_still_serves_it_after_one_answer() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C7), Action::Kept));
    let m = stored(&d);
    assert_eq!(served_m(m), 5);
    let gone = m.contributions[0]
        .mementos
        .iter()
        .find(|c| c.datetime == mdt(4))
        .expect("still cached");
    assert_eq!(
        gone.absent.as_deref(),
        Some(&Absence {
            since: day(1),
            confirmations: 1
        })
    );
    assert_eq!(
        m.contributions[0]
            .mementos
            .iter()
            .filter(|c| c.absent.is_some())
            .count(),
        1
    );
}

#[test]
fn merge_keeps_a_memento_absent_twice_within_the_grace() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
    let d2 = decide_on(&p, stored(&d1), 2, vec![ok("ia", 0..4)]);
    assert_eq!(d2.action(), Action::Kept);
    let m = stored(&d2);
    assert_eq!(served_m(m), 5);
    let gone = m.contributions[0]
        .mementos
        .iter()
        .find(|c| c.datetime == mdt(4))
        .expect("still cached");
    assert_eq!(
        gone.absent.as_deref(),
        Some(&Absence {
            since: day(1),
            confirmations: 2
        })
    );
}

#[test]
fn merge_drops_a_memento_absent_twice_across_the_grace() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..2)]);
    let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4), ok("pt", 0..2)]);
    // ia failing in between neither confirms nor resets the absence.
    let mid = decide_on(
        &p,
        stored(&d1),
        5,
        vec![failed("ia", ArchiveStatus::Timeout), ok("pt", 0..2)],
    );
    assert_eq!(mid.action(), Action::Kept);
    assert_eq!(
        stored(&mid).contributions[0].mementos,
        stored(&d1).contributions[0].mementos
    );
    let d2 = decide_on(&p, stored(&mid), 8, vec![ok("ia", 0..4), ok("pt", 0..2)]);
    // The entry still served 7 (the absent one included): 6 is case 7.
    assert_eq!(
        (d2.case(), d2.action()),
        (Some(ChangeCase::C7), Action::Merged)
    );
    let m = stored(&d2);
    assert_eq!(served_m(m), 6);
    assert!(m.contributions[0]
        .mementos
        .iter()
        .all(|c| c.absent.is_none()));
    assert!(!m.contributions[0]
        .mementos
        .iter()
        .any(|c| c.datetime == mdt(4)));
    assert_eq!((m.loose, m.strict, m.archives), (6, 6, 2));
}

#[test]
fn merge_needs_the_confirmations_not_only_the_grace() {
    let p = Policy {
        redaction_confirmations: 3,
        ..policy(PolicyKind::Merge)
    };
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
    let d2 = decide_on(&p, stored(&d1), 30, vec![ok("ia", 0..4)]);
    assert_eq!(served_m(stored(&d2)), 5, "two answers of three");
    let d3 = decide_on(&p, stored(&d2), 31, vec![ok("ia", 0..4)]);
    assert_eq!(served_m(stored(&d3)), 4);
}

#[test]
fn merge_clears_the_absence_of_a_memento_that_reappears() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d1 = decide_on(&p, &e, 1, vec![ok("ia", 0..4)]);
    let d2 = decide_on(&p, stored(&d1), 2, vec![ok("ia", 0..5)]);
    let m = stored(&d2);
    assert!(m.contributions[0]
        .mementos
        .iter()
        .all(|c| c.absent.is_none()));
    // Absent again much later: the count starts over, so it is not dropped yet.
    let d3 = decide_on(&p, m, 30, vec![ok("ia", 0..4)]);
    assert_eq!(served_m(stored(&d3)), 5);
}

#[test]
fn merge_keeps_cached_archives_the_fetch_did_not_list_at_the_end() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("old", 0..2), ok("ia", 0..3)]);
    let d = decide_on(&p, &e, 20, vec![ok("ia", 0..3), ok("pt", 0..1)]);
    let order: Vec<&str> = stored(&d)
        .contributions
        .iter()
        .map(|c| c.archive.as_str())
        .collect();
    assert_eq!(order, ["ia", "pt", "old"]);
    assert_eq!(served_m(stored(&d)), 6);
}

/// Replays one request a day; returns Q and the served m (loose) per day.
fn run_daily(p: &Policy, live: &[Fetch]) -> (usize, Vec<usize>) {
    let mut entry: Option<Entry> = None;
    let mut q = 0;
    let mut served = Vec::new();
    for f in live {
        let tm = match p.freshness(entry.as_ref(), f.at) {
            Freshness::Fresh => entry.as_ref().expect("fresh implies cached").timemap(),
            // (No stale window in these policies: never `Stale`.)
            Freshness::Miss | Freshness::Stale | Freshness::Expired => {
                q += 1;
                let d = p.decide(entry.as_ref(), f, f.at);
                let serve = d.serve();
                if let Some(e) = d.into_entry() {
                    entry = Some(e);
                }
                match serve {
                    Serve::Fresh => merge(&f.archives),
                    Serve::Stored => entry.as_ref().expect("stored or cached").timemap(),
                }
            }
        };
        served.push(counts(&tm, Match::Loose).1);
    }
    (q, served)
}

#[test]
fn merge_never_serves_fewer_than_conditional_on_the_same_schedule() {
    let live: Vec<Fetch> = vec![
        fetch(0, vec![ok("ia", 0..5), ok("pt", 0..3)]),
        fetch(
            1,
            vec![ok("ia", 0..6), failed("pt", ArchiveStatus::Timeout)],
        ),
        fetch(
            2,
            vec![ok("ia", 0..9), failed("pt", ArchiveStatus::Timeout)],
        ),
        fetch(3, vec![ok("ia", 0..4), ok("pt", 0..3)]),
        fetch(4, vec![not_found("ia"), not_found("pt")]),
        fetch(5, vec![ok("ia", 2..12), ok("pt", 0..1)]),
        fetch(6, vec![ok("ia", 2..12), ok("pt", 0..1)]),
    ];
    for ttl in [0, 1, 2] {
        let (_, c) = run_daily(&ttl_days(PolicyKind::Conditional, Some(ttl)), &live);
        let (_, m) = run_daily(&ttl_days(PolicyKind::Merge, Some(ttl)), &live);
        for (day, (c, m)) in c.iter().zip(&m).enumerate() {
            assert!(m >= c, "ttl {ttl}, day {day}: merge {m} < conditional {c}");
        }
    }
}

// ---- URI migration and matching ------------------------------------------------------

/// ia's mementos 0..n at new addresses (same datetimes).
fn migrated(n: usize) -> Contribution {
    let mut r = ok("ia", 0..n);
    for m in &mut r.mementos {
        m.uri_m = m
            .uri_m
            .replace("http://ia/", "https://ia.example/web/")
            .into();
    }
    r
}

#[test]
fn a_migration_under_loose_matching_is_case_1_kept_by_conditional() {
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 20, vec![migrated(5)]);
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
    assert_eq!(stored(&d).history[1].same_set, Some(true));
    assert_eq!(served_uris(stored(&d)), served_uris(&e));
}

#[test]
fn merge_serves_the_new_uri_m_after_a_migration() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5)]);
    let d = decide_on(&p, &e, 20, vec![migrated(5)]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C1), Action::Merged)
    );
    let uris = served_uris(stored(&d));
    assert_eq!(uris.len(), 5);
    assert!(
        uris.iter()
            .all(|u| u.starts_with("https://ia.example/web/")),
        "{uris:?}"
    );
    assert!(stored(&d).contributions[0]
        .mementos
        .iter()
        .all(|m| m.absent.is_none()));
}

#[test]
fn strict_matching_sees_a_migration_as_changed_keys() {
    // Mid-migration the archive lists each memento at both addresses.
    let mut both = ok("ia", 0..5);
    both.mementos.extend(migrated(5).mementos);
    let loose = policy(PolicyKind::Conditional);
    let strict = Policy {
        matching: Match::Strict,
        ..loose.clone()
    };
    let e = first(&loose, vec![ok("ia", 0..5)]);
    assert_eq!((e.loose, e.strict), (5, 5));
    let d = decide_on(&loose, &e, 20, vec![both.clone()]);
    assert_eq!((d.case(), d.action()), (Some(ChangeCase::C1), Action::Kept));
    let d = decide_on(&strict, &e, 20, vec![both.clone()]);
    assert_eq!(
        (d.case(), d.action()),
        (Some(ChangeCase::C2), Action::Replaced)
    );
    let f = fetch(20, vec![both]);
    assert_eq!(f.counts(Match::Loose), (1, 5));
    assert_eq!(f.counts(Match::Strict), (1, 10));
    // Completed, the migration keeps the strict count: case 1 by numbers, yet the served
    // strict keys changed, which is what merge reports.
    let d = decide_on(&strict, &e, 20, vec![migrated(5)]);
    assert_eq!(d.case(), Some(ChangeCase::C1));
}

#[test]
fn merge_under_strict_matching_keeps_a_migrated_uri_m_absent_until_redaction() {
    // Strict: a memento is its URI-M, so the old addresses are no longer listed.
    let p = Policy {
        matching: Match::Strict,
        ..policy(PolicyKind::Merge)
    };
    let e = first(&p, vec![ok("ia", 0..2)]);
    let d = decide_on(&p, &e, 20, vec![migrated(2)]);
    let c = &stored(&d).contributions[0];
    assert_eq!(c.mementos.len(), 4, "{:?}", c.mementos);
    let absent: Vec<&str> = c
        .mementos
        .iter()
        .filter(|m| m.absent.is_some())
        .map(|m| &*m.uri_m)
        .collect();
    assert_eq!(absent, ["http://ia/0", "http://ia/1"]);
}

#[test]
fn two_uri_ms_at_one_second_are_two_mementos_and_one_loose_key() {
    let mut r = ok("ia", 0..3);
    let mut twin = lm("ia", 1);
    twin.uri_m = "http://bibalex.example/web/1".into();
    r.mementos.insert(2, twin);
    // The same memento spelt with a default port and upper-case host: once.
    let mut again = lm("ia", 2);
    again.uri_m = "HTTP://IA:80/2".into();
    r.mementos.push(again);
    let p = policy(PolicyKind::Conditional);
    let e = first(&p, vec![r]);
    assert_eq!(
        served_uris(&e),
        [
            "http://ia/0",
            "http://ia/1",
            "http://bibalex.example/web/1",
            "http://ia/2"
        ]
    );
    assert_eq!((e.loose, e.strict), (3, 4));
}

#[test]
fn an_aggregators_mementos_count_under_the_archives_they_are_credited_to() {
    let ia = "https://web.archive.org/web/19990125093238/http://a.com/";
    let bibalex = "http://web.archive.bibalex.org/web/19990125093238/http://a.com/";
    let listed = |archive: &str, uris: &[&str]| {
        let mut c = ok(archive, 0..0);
        c.mementos = uris
            .iter()
            .map(|u| ListedMemento {
                uri_m: Arc::from(*u),
                datetime: mdt(1),
                absent: None,
            })
            .collect();
        c
    };
    let contributions = || vec![listed("ia", &[ia]), listed("mg", &[ia, bibalex])];
    let plain = policy(PolicyKind::Conditional);
    let credited = Policy {
        credits: Arc::new(Credits::new(
            ["mg"],
            [("https://web.archive.org/web/", "ia")],
        )),
        ..plain.clone()
    };
    // One second, three listings, two mementos: credited, ia's twice is one loose key and
    // bibalex's is another; uncredited, the aggregator's two collapse into one of its own.
    let e = first(&credited, contributions());
    assert_eq!((e.loose, e.strict, e.archives), (2, 2, 2));
    let e = first(&plain, contributions());
    assert_eq!((e.loose, e.strict, e.archives), (2, 2, 2));
    let e = first(&plain, vec![listed("mg", &[ia, bibalex])]);
    assert_eq!((e.loose, e.strict, e.archives), (1, 2, 1));
    let e = first(&credited, vec![listed("mg", &[ia, bibalex])]);
    assert_eq!((e.loose, e.strict, e.archives), (2, 2, 2));
}

// ---- history, worked example, round trip, aggregate ----------------------------------

#[test]
fn history_through_decide_is_capped_at_twenty() {
    let p = ttl_days(PolicyKind::Conditional, Some(0));
    let mut e = first(&p, vec![ok("ia", 0..1)]);
    for d in 1..=30 {
        let n = d as usize + 1;
        e = decide_on(&p, &e, d, vec![ok("ia", 0..n)])
            .into_entry()
            .expect("replaced");
    }
    assert_eq!(e.history.len(), 20);
    assert_eq!(e.history.front().map(|h| h.at), Some(day(11)));
    assert_eq!(e.history.back().map(|h| h.at), Some(day(30)));
    assert!(e.history.iter().all(|h| h.action == Action::Replaced));
}

#[test]
fn worked_example_conditional_ttl_4_costs_two_fetches_and_8_memdays() {
    let live: Vec<Fetch> = [6, 6, 8, 8, 10, 10]
        .iter()
        .enumerate()
        .map(|(d, &n)| fetch(d as i64, vec![ok("ia", 0..n)]))
        .collect();
    let p = ttl_days(PolicyKind::Conditional, Some(4));
    let (q, served) = run_daily(&p, &live);
    assert_eq!(q, 2);
    assert_eq!(served, [6, 6, 6, 6, 6, 10]);
    let mut best = 0;
    let mut memdays = 0;
    for (f, &c) in live.iter().zip(&served) {
        best = best.max(f.counts(Match::Loose).1);
        memdays += best.saturating_sub(c);
    }
    assert_eq!(memdays, 8);
}

#[test]
fn a_merged_entry_round_trips_through_json() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..5), ok("pt", 0..2)]);
    let d = decide_on(
        &p,
        &e,
        1,
        vec![ok("ia", 0..4), failed("pt", ArchiveStatus::Timeout)],
    );
    let m = stored(&d);
    let json = serde_json::to_string(m).expect("serialise");
    let back: Entry = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(&back, m);
}

#[test]
fn a_fetch_is_merged_where_it_is_served_with_each_archive_answer_in_order() {
    let mut uk = ok("uk", [0, 2]);
    uk.answer.pages = 3;
    let f = fetch(
        3,
        vec![ok("ia", [1, 3]), failed("pt", ArchiveStatus::Timeout), uk],
    );
    let agg = Aggregate::of(
        &f.uri_r,
        f.at,
        &f.archives,
        crate::timemap::credit::Credits::none(),
    );
    let got: Vec<&str> = agg.timemap.mementos.iter().map(|m| &*m.uri_m).collect();
    assert_eq!(
        got,
        ["http://uk/0", "http://ia/1", "http://uk/2", "http://ia/3"]
    );
    let ids: Vec<(&str, usize)> = agg
        .outcomes
        .iter()
        .map(|o| (o.id.as_str(), o.mementos))
        .collect();
    assert_eq!(ids, [("ia", 2), ("pt", 0), ("uk", 2)]);
    // Each archive's answer travels with it, so a cached answer can repeat it.
    assert_eq!(agg.outcomes[2].answer.pages, 3);
    assert_eq!(agg.outcomes[1].answer.status, ArchiveStatus::Timeout);
    assert_eq!(agg.fetched_at, day(3));
    assert_eq!(f.counts(Match::Loose), (2, 4));
}

#[test]
fn counts_of_a_timemap_are_archives_and_distinct_keys() {
    let tm = merge(&fetch(0, vec![ok("ia", 0..3), ok("pt", 0..2), not_found("uk")]).archives);
    assert_eq!(counts(&tm, Match::Loose), (2, 5));
    assert_eq!(counts(&tm, Match::Strict), (2, 5));
    assert_eq!(counts(&TimeMap::default(), Match::Loose), (0, 0));
}

#[test]
fn merge_of_ten_thousand_mementos_keeps_and_then_merges() {
    let p = policy(PolicyKind::Merge);
    let e = first(&p, vec![ok("ia", 0..10_000)]);
    let d = decide_on(&p, &e, 1, vec![ok("ia", 0..10_000)]);
    assert_eq!(d.action(), Action::Kept);
    let d = decide_on(&p, stored(&d), 2, vec![ok("ia", 5_000..15_000)]);
    assert_eq!(d.action(), Action::Merged);
    assert_eq!(served_m(stored(&d)), 15_000);
}

/// Replicas compare-and-set on an entry's revision: the same entry names the same revision,
/// and every decision (a kept one too, which leaves the content as it was) a new one.
#[test]
fn a_revision_names_each_decision_and_only_it() {
    let p = policy(PolicyKind::Conditional);
    let entry = first(&p, vec![ok("ia", 0..3)]);
    assert_eq!(revision(&entry), revision(&entry.clone()));
    let kept = stored(&decide_on(&p, &entry, 1, vec![ok("ia", 0..2)])).clone();
    assert_eq!(
        served_uris(&kept),
        served_uris(&entry),
        "a worse fetch is kept out"
    );
    assert_ne!(
        revision(&entry),
        revision(&kept),
        "a kept decision is a new revision"
    );
    let replaced = stored(&decide_on(&p, &entry, 1, vec![ok("ia", 0..5)])).clone();
    assert_ne!(revision(&kept), revision(&replaced));
    let elsewhere = Entry {
        uri_r: "http://example.com/other".into(),
        ..entry.clone()
    };
    assert_ne!(revision(&entry), revision(&elsewhere));
}

// ---- archives routing skipped ------------------------------------------------

/// An archive routing did not ask.
fn skipped(archive: &str) -> Contribution {
    answered(archive, ArchiveAnswer::skipped("routing"), vec![])
}

#[test]
fn a_skipped_archive_never_replaces_or_shrinks_a_cached_entry_under_any_policy() {
    for kind in [
        PolicyKind::Conditional,
        PolicyKind::Merge,
        PolicyKind::Unconditional,
    ] {
        let p = policy(kind);
        let cached = first(&p, vec![ok("ia", 0..3), ok("pt", 10..12)]);
        // ia gains a memento while pt is skipped: without pt's part kept this is case 4
        // (lost an archive, gained mementos), which conditional replaces on.
        let d = decide_on(&p, &cached, 1, vec![ok("ia", 0..4), skipped("pt")]);
        let e = stored(&d);
        assert_eq!(d.case(), Some(ChangeCase::C2), "{kind:?}");
        assert_eq!(served_m(e), 6, "{kind:?}: pt's two are still served");
        let pt = e
            .contributions
            .iter()
            .find(|c| c.archive == "pt")
            .expect("pt kept");
        assert_eq!(pt.answer.status, ArchiveStatus::Ok, "{kind:?}");
        let why = pt.last_error.as_ref().expect("the skip is told");
        assert_eq!(why.status, ArchiveStatus::Skipped);
        assert_eq!(why.detail.as_deref(), Some("routing"));
        // Nothing gained, pt skipped: case 1, never case 6, and the content is unchanged.
        let d = decide_on(&p, e, 2, vec![ok("ia", 0..4), skipped("pt")]);
        assert_eq!(d.case(), Some(ChangeCase::C1), "{kind:?}");
        assert_eq!(served_uris(stored(&d)), served_uris(e), "{kind:?}");
    }
}

#[test]
fn a_failed_archive_still_counts_as_lost_where_a_skipped_one_does_not() {
    // The contrast that makes the test above mean something: a timeout is case 6.
    let p = policy(PolicyKind::Conditional);
    let cached = first(&p, vec![ok("ia", 0..3), ok("pt", 10..12)]);
    let d = decide_on(
        &p,
        &cached,
        1,
        vec![ok("ia", 0..3), failed("pt", ArchiveStatus::Timeout)],
    );
    assert_eq!(d.case(), Some(ChangeCase::C6));
    let d = decide_on(&p, &cached, 1, vec![ok("ia", 0..3), skipped("pt")]);
    assert_eq!(d.case(), Some(ChangeCase::C1));
}

#[test]
fn a_skipped_archive_that_held_nothing_is_recorded_as_skipped() {
    let p = policy(PolicyKind::Conditional);
    let cached = first(&p, vec![ok("ia", 0..3), not_found("pt")]);
    let d = decide_on(&p, &cached, 1, vec![ok("ia", 0..4), skipped("pt")]);
    let e = stored(&d);
    assert_eq!(d.action(), Action::Replaced);
    let pt = e.contributions.iter().find(|c| c.archive == "pt");
    assert_eq!(
        pt.map(|c| c.answer.status),
        Some(ArchiveStatus::Skipped),
        "the skip replaces a 404: neither is content"
    );
    let agg = Aggregate::of(
        &e.uri_r,
        e.fetched_at,
        &e.contributions,
        crate::timemap::credit::Credits::none(),
    );
    assert_eq!(
        agg.verdict(),
        crate::timemap::aggregate::Verdict::Found { partial: false },
        "a skipped archive does not make the answer partial"
    );
    assert_eq!(agg.skipped().count(), 1);
}

#[test]
fn with_every_asked_archive_timed_out_a_skip_leaves_the_answer_a_timeout() {
    use crate::timemap::aggregate::Verdict;
    let f = fetch(0, vec![failed("ia", ArchiveStatus::Timeout), skipped("pt")]);
    let agg = Aggregate::of(
        &f.uri_r,
        f.at,
        &f.archives,
        crate::timemap::credit::Credits::none(),
    );
    assert_eq!(agg.verdict(), Verdict::Unavailable { timed_out: true });
    assert_eq!(
        agg.missing().map(|o| o.id.as_str()).collect::<Vec<_>>(),
        ["ia"]
    );
    // Nothing answered: the cache is not touched.
    let p = policy(PolicyKind::Conditional);
    let cached = first(&p, vec![ok("ia", 0..2), ok("pt", 5..6)]);
    let d = p.decide(Some(&cached), &f, day(1));
    assert!(matches!(d, Decision::Unavailable { .. }), "{d:?}");
}
