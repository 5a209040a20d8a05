//! Which failures fall back, and what a TimeGate's headers may put in an answer.

use super::*;
use crate::timemap::answer::ArchiveStatus;
use crate::timemap::datetime::parse_14digit;

fn hops() -> HopRules {
    HopRules::new(
        &["http://arch.example/tm/", "http://arch.example/tg/"]
            .map(|t| Url::parse(t).expect("url")),
        &[crate::config::RedirectHost::parse("replay.example").expect("a host")],
    )
}

fn base() -> Url {
    Url::parse("http://arch.example/tg/http://x.com/").expect("url")
}

fn dt(ts: &str) -> MementoDatetime {
    parse_14digit(ts).expect("ts")
}

const IA_LINK: &str = r#"<http://x.com/>; rel="original", <http://arch.example/tm/http://x.com/>; rel="timemap"; type="application/link-format", <http://arch.example/w/20010101000000/http://x.com/>; rel="first memento"; datetime="Mon, 01 Jan 2001 00:00:00 GMT", <http://arch.example/w/20200101000000/http://x.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT", <http://arch.example/w/20240101000000/http://x.com/>; rel="last memento"; datetime="Mon, 01 Jan 2024 00:00:00 GMT""#;

#[test]
fn which_failures_fall_back() {
    for kind in [
        FailureKind::HttpStatus(500),
        FailureKind::HttpStatus(403),
        FailureKind::Malformed,
        FailureKind::TooLarge,
        FailureKind::Body,
        FailureKind::Redirects,
    ] {
        assert!(worth_a_fallback(kind), "{kind}");
    }
    for kind in [
        FailureKind::HttpStatus(429),
        FailureKind::Timeout,
        FailureKind::Dns,
        FailureKind::Connect,
        FailureKind::Tls,
        FailureKind::RefusedRedirect,
        FailureKind::Budget,
        FailureKind::Dormant,
        FailureKind::Other,
    ] {
        assert!(!worth_a_fallback(kind), "{kind}");
    }
}

#[test]
fn the_location_dated_by_the_link_and_the_first_and_last_are_taken() {
    let loc = "/w/20200101000000/http://x.com/";
    let gate = timegate_mementos(&base(), Some(loc), IA_LINK, None, &hops());
    let got: Vec<(&str, MementoDatetime)> = gate
        .mementos
        .iter()
        .map(|m| (&*m.uri_m, m.datetime))
        .collect();
    assert_eq!(
        got,
        [
            (
                "http://arch.example/w/20010101000000/http://x.com/",
                dt("20010101000000")
            ),
            (
                "http://arch.example/w/20200101000000/http://x.com/",
                dt("20200101000000")
            ),
            (
                "http://arch.example/w/20240101000000/http://x.com/",
                dt("20240101000000")
            ),
        ]
    );
    assert!(gate.notes.is_empty(), "{:?}", gate.notes);
    // A Location no Link dates is listed by its Memento-Datetime, else named and left out.
    let other = "http://replay.example/w/2019/http://x.com/";
    let gate = timegate_mementos(&base(), Some(other), "", Some(dt("2019")), &hops());
    assert_eq!(gate.mementos.len(), 1);
    let gate = timegate_mementos(&base(), Some(other), "", None, &hops());
    assert!(gate.mementos.is_empty());
    assert!(gate.notes[0].contains("not dated"), "{:?}", gate.notes);
}

#[test]
fn hostile_locations_and_links_are_ignored() {
    let when = Some(dt("20200101000000"));
    for loc in [
        "javascript:alert(1)",
        "http://evil.example/w/2020/http://x.com/",
        "http://arch.example:8080/w/",
        "http://127.0.0.1/latest/meta-data/",
        "ftp://arch.example/x",
        "data:text/html,<script>",
    ] {
        let gate = timegate_mementos(&base(), Some(loc), "", when, &hops());
        assert!(gate.mementos.is_empty(), "{loc}: {:?}", gate.mementos);
        assert_eq!(gate.notes.len(), 1, "{loc}: {:?}", gate.notes);
    }
    let link = r#"<http://evil.example/w/1/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT", <javascript:alert(1)>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT", <http://arch.example/ok/>; rel="memento"; datetime="Thu, 02 Jan 2020 00:00:00 GMT""#;
    let gate = timegate_mementos(&base(), None, link, None, &hops());
    let uris: Vec<&str> = gate.mementos.iter().map(|m| &*m.uri_m).collect();
    assert_eq!(uris, ["http://arch.example/ok/"]);
    // A long URI is clipped in the note, not quoted whole.
    let long = format!("http://evil.example/{}", "a".repeat(10_000));
    let gate = timegate_mementos(&base(), Some(&long), "", when, &hops());
    assert!(gate.notes[0].len() < 1000, "{}", gate.notes[0].len());
}

#[test]
fn at_most_so_many_link_mementos_and_each_once() {
    let mut link = String::new();
    for i in 0..40 {
        link.push_str(&format!(
            "<http://arch.example/w/{i}/>; rel=\"memento\"; datetime=\"Wed, 01 Jan 2020 00:00:{:02} GMT\", ",
            i % 60
        ));
    }
    link.push_str(
        r#"<http://arch.example/w/0/>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT""#,
    );
    let gate = timegate_mementos(&base(), None, &link, None, &hops());
    assert_eq!(gate.mementos.len(), MAX_LINK_MEMENTOS);
    assert!(gate.notes[0].contains("first 16"), "{:?}", gate.notes);
}

#[test]
fn a_fallback_keeps_the_listings_status_and_says_so() {
    let listed = ArchiveFetch::failed(FailureKind::HttpStatus(500), Some(500), "HTTP 500");
    let gate = timegate_mementos(&base(), None, IA_LINK, None, &hops());
    let mut gate_ok = gate.clone();
    gate_ok.http_status = 302;
    let fell = with_fallback(listed.clone(), Ok(gate_ok));
    assert_eq!(fell.answer.status, ArchiveStatus::Error);
    assert_eq!(fell.answer.fallback, Some(Fallback::Timegate));
    assert_eq!(fell.mementos.len(), 3);
    assert_eq!(
        fell.answer.detail.as_deref(),
        Some("HTTP 500; TimeGate fallback (HTTP 302): 3 mementos")
    );
    let failed = with_fallback(listed, Err("HTTP 503".into()));
    assert_eq!(failed.answer.fallback, None);
    assert!(failed.mementos.is_empty());
    assert_eq!(
        failed.answer.detail.as_deref(),
        Some("HTTP 500; TimeGate fallback failed: HTTP 503")
    );
}
