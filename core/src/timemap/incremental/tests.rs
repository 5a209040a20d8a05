//! What an incremental refresh may skip, when its answer is trusted, and the contribution built
//! from it.

use super::*;
use crate::timemap::answer::{Absence, ArchiveStatus, ListedMemento};
use crate::timemap::datetime::parse_14digit;
use crate::timemap::refresh::{Listing, Refresh};
use std::sync::Arc;

fn at(ts: &str) -> MementoDatetime {
    parse_14digit(ts).expect("test timestamp")
}

fn lm(ts: &str) -> LinkMemento {
    LinkMemento {
        uri_m: Arc::from(format!("http://a.test/web/{ts}/http://x.org/")),
        datetime: at(ts),
    }
}

fn ok() -> ArchiveAnswer {
    ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None)
}

/// A contribution listed in full at 2024-01-01 with these mementos.
fn stored(stamps: &[&str]) -> Contribution {
    let mut c = Contribution::listed(
        "a",
        ok(),
        at("20240101000000"),
        stamps.iter().map(|t| lm(t)).collect(),
    );
    c.listing = Listing {
        full_at: Some(at("20240101000000")),
        etag: Some("\"v1\"".into()),
        ..Listing::default()
    };
    c
}

const DAY: i64 = 86_400;

#[test]
fn a_recent_full_listing_is_asked_from_its_newest_memento() {
    let c = stored(&["20200101000000", "20230505050505", "20210101000000"]);
    let since = Since::of(&c, at("20240110000000"), Duration::days(30)).expect("incremental");
    assert_eq!(since.newest, at("20230505050505"));
    assert_eq!(
        since.newest_uri_m,
        "http://a.test/web/20230505050505/http://x.org/"
    );
    assert_eq!(since.etag.as_deref(), Some("\"v1\""));
}

#[test]
fn a_full_listing_is_due_after_full_refresh_or_when_unknown() {
    let c = stored(&["20200101000000"]);
    let now = at("20240131000000");
    assert!(
        Since::of(&c, now, Duration::days(30)).is_none(),
        "30 days on"
    );
    assert!(Since::of(&c, now, Duration::seconds(30 * DAY + 1)).is_some());
    assert!(
        Since::of(&c, now, Duration::zero()).is_none(),
        "0: always full"
    );
    let mut never = c.clone();
    never.listing.full_at = None;
    assert!(Since::of(&never, now, Duration::days(90)).is_none());
}

#[test]
fn no_incremental_ask_from_a_failure_a_fallback_or_nothing() {
    let now = at("20240102000000");
    let month = Duration::days(30);
    let mut failed = stored(&["20200101000000"]);
    failed.answer = ArchiveAnswer::failed(ArchiveStatus::Timeout, None, None);
    assert!(Since::of(&failed, now, month).is_none());
    let mut fallback = stored(&["20200101000000"]);
    fallback.answer.fallback = Some(crate::timemap::answer::Fallback::Timegate);
    assert!(Since::of(&fallback, now, month).is_none());
    assert!(Since::of(&stored(&[]), now, month).is_none());
}

#[test]
fn mementos_the_archive_stopped_listing_are_not_asked_from() {
    let mut c = stored(&["20200101000000", "20220101000000"]);
    c.mementos[1].absent = Some(Box::new(Absence {
        since: at("20240101000000"),
        confirmations: 1,
    }));
    let since = Since::of(&c, at("20240102000000"), Duration::days(30)).expect("incremental");
    assert_eq!(since.newest, at("20200101000000"));
}

#[test]
fn an_answer_is_trusted_only_when_it_lists_the_newest_memento_again() {
    let c = stored(&["20200101000000", "20230505050505"]);
    let since = Since::of(&c, at("20240102000000"), Duration::days(30)).expect("incremental");
    assert!(since.trusts(&[lm("20230505050505"), lm("20240101000000")]));
    assert!(!since.trusts(&[lm("20240101000000")]), "newest removed");
    assert!(!since.trusts(&[]));
    // The same URI-M spelt with an upper-case host and a default port is the same memento.
    let respelt = LinkMemento {
        uri_m: Arc::from("http://A.TEST:80/web/20230505050505/http://x.org/"),
        datetime: at("20230505050505"),
    };
    assert!(since.trusts(&[respelt]));
    // Another URI-M at the same second is not it.
    let other = LinkMemento {
        uri_m: Arc::from("http://a.test/web/20230505050505/http://x.org/other"),
        datetime: at("20230505050505"),
    };
    assert!(!since.trusts(&[other]));
}

#[test]
fn the_extended_contribution_is_the_stored_one_plus_what_is_new_each_once() {
    let mut c = stored(&["20200101000000", "20230505050505"]);
    c.mementos.push(ListedMemento {
        uri_m: Arc::from("http://a.test/web/20100101000000/gone"),
        datetime: at("20100101000000"),
        absent: Some(Box::new(Absence {
            since: at("20231201000000"),
            confirmations: 1,
        })),
    });
    let new = vec![
        lm("20230505050505"),
        lm("20240101000000"),
        lm("20240101000000"),
    ];
    let listing = Listing {
        etag: Some("\"v2\"".into()),
        ..Listing::default()
    };
    let e = extended(&c, ok(), at("20240102000000"), new, listing);
    let stamps: Vec<_> = e.mementos.iter().map(|m| m.datetime).collect();
    assert_eq!(
        stamps,
        [
            at("20200101000000"),
            at("20230505050505"),
            at("20240101000000")
        ],
        "sorted, each once, the no longer listed one left out"
    );
    assert_eq!(e.listing.refresh, Refresh::Incremental);
    assert_eq!(e.listing.full_at, Some(at("20240101000000")), "kept");
    assert_eq!(e.listing.etag.as_deref(), Some("\"v2\""));
    assert_eq!(e.fetched_at, at("20240102000000"));
}

#[test]
fn a_not_modified_answer_keeps_the_mementos_and_validators() {
    let c = stored(&["20200101000000", "20230505050505"]);
    let mut answer = ok();
    answer.http_status = Some(304);
    let u = unchanged(&c, answer, at("20240105000000"));
    assert_eq!(u.mementos, c.mementos);
    assert_eq!(u.listing.refresh, Refresh::NotModified);
    assert_eq!(u.listing.etag.as_deref(), Some("\"v1\""));
    assert_eq!(u.listing.full_at, c.listing.full_at);
    assert_eq!(u.answer.http_status, Some(304));
}

#[test]
fn the_listing_survives_json_and_old_entries_read_without_one() {
    let c = stored(&["20200101000000"]);
    let json = serde_json::to_string(&c).expect("json");
    let back: Contribution = serde_json::from_str(&json).expect("read");
    assert_eq!(back.listing, c.listing);
    let mut plain = c.clone();
    plain.listing = Listing::default();
    let json = serde_json::to_string(&plain).expect("json");
    assert!(!json.contains("listing"), "{json}");
    let back: Contribution = serde_json::from_str(&json).expect("read");
    assert_eq!(back.listing, Listing::default());
}
