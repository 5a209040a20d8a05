//! Keys, counting, eviction, the decision and imports.

use super::*;
use crate::timemap::answer::ArchiveStatus;

fn names(keys: &UriKeys) -> Vec<String> {
    keys.keys().iter().map(|k| k.to_string()).collect()
}

fn keys_of(uri: &str) -> Vec<String> {
    names(&UriKeys::of_uri(uri))
}

#[test]
fn keys_follow_the_public_suffix_list() {
    assert_eq!(
        keys_of("http://news.bbc.co.uk/a"),
        ["host news.bbc.co.uk", "domain bbc.co.uk", "tld uk"]
    );
    assert_eq!(
        keys_of("https://www.example.com/"),
        ["host example.com", "domain example.com", "tld com"]
    );
    // A private suffix of the list: each user's site is its own registrable domain.
    assert_eq!(
        keys_of("https://alice.github.io/x"),
        ["host alice.github.io", "domain alice.github.io", "tld io"]
    );
}

#[test]
fn a_host_that_is_a_public_suffix_has_no_domain_key() {
    assert_eq!(keys_of("http://co.uk/"), ["host co.uk", "tld uk"]);
    assert_eq!(keys_of("http://github.io/"), ["host github.io", "tld io"]);
    // A single label: neither a domain nor a TLD to speak of.
    assert_eq!(keys_of("http://intranet/"), ["host intranet"]);
}

#[test]
fn ports_case_and_trailing_dots_do_not_change_the_keys() {
    let plain = keys_of("http://example.co.uk/");
    assert_eq!(keys_of("http://EXAMPLE.co.UK.:8080/p"), plain);
    assert_eq!(keys_of("https://www.example.co.uk./"), plain);
    assert_eq!(names(&UriKeys::of_host("Example.CO.uk.:80")), plain);
}

#[test]
fn idn_hosts_are_keyed_by_their_punycode() {
    // пример.рф: the URL parser gives xn-- labels, which the compiled-in list knows.
    assert_eq!(
        keys_of("http://пример.рф/"),
        [
            "host xn--e1afmkfd.xn--p1ai",
            "domain xn--e1afmkfd.xn--p1ai",
            "tld xn--p1ai"
        ]
    );
    // 公司.cn is a public suffix of its own (in the list's Unicode section).
    assert_eq!(
        keys_of("http://例子.公司.cn/"),
        keys_of("http://xn--fsqu00a.xn--55qx5d.cn/")
    );
    assert_eq!(
        keys_of("http://例子.公司.cn/")[1],
        "domain xn--fsqu00a.xn--55qx5d.cn"
    );
}

#[test]
fn ip_hosts_have_only_a_host_key() {
    assert_eq!(keys_of("http://192.168.0.1:8080/"), ["host 192.168.0.1"]);
    assert_eq!(keys_of("http://[::1]/"), ["host [::1]"]);
    // The WHATWG parser normalises IPv4 spellings; a SURT's unreversed IP is read as written.
    assert_eq!(keys_of("http://0x7f.1/"), ["host 127.0.0.1"]);
    assert_eq!(
        names(&UriKeys::of_host(
            &keys::surt_host("192.168.0.1)/a").unwrap()
        )),
        ["host 192.168.0.1"]
    );
}

#[test]
fn what_has_no_host_has_no_keys() {
    for uri in [
        "mailto:a@b.c",
        "not a url",
        "file:///etc/passwd",
        "http://a..b/",
    ] {
        assert!(UriKeys::of_uri(uri).is_empty(), "{uri}");
    }
    assert!(UriKeys::of_host(&"a.".repeat(200)).is_empty());
    assert!(UriKeys::of_host("bad host").is_empty());
}

#[test]
fn surt_hosts_read_back() {
    assert_eq!(
        keys::surt_host("uk,co,bbc,news)/a?b").as_deref(),
        Some("news.bbc.co.uk")
    );
    assert_eq!(
        keys::surt_host("com,example:8080)/").as_deref(),
        Some("example.com:8080")
    );
    assert_eq!(keys::surt_host("no-paren"), None);
}

fn observation(uri: &str, outcomes: &[(&str, Outcome)]) -> Observation {
    Observation {
        keys: UriKeys::of_uri(uri),
        outcomes: outcomes
            .iter()
            .map(|(a, o)| ((*a).to_owned(), *o))
            .collect(),
    }
}

fn key(level: Level, name: &str) -> Key {
    Key {
        level,
        name: name.into(),
    }
}

#[test]
fn observations_count_held_and_none_and_failures_teach_nothing() {
    let mut p = Profiles::new(100);
    p.observe(&observation(
        "http://a.example.com/1",
        &[
            ("ia", Outcome::Held),
            ("uk", Outcome::HeldNone),
            ("pt", Outcome::Unknown),
        ],
    ));
    p.observe(&observation(
        "http://b.example.com/2",
        &[("ia", Outcome::Held), ("uk", Outcome::Held)],
    ));
    let domain = key(Level::Domain, "example.com");
    assert_eq!(p.tally("ia", &domain), Some(Tally { held: 2, none: 0 }));
    assert_eq!(p.tally("uk", &domain), Some(Tally { held: 1, none: 1 }));
    assert_eq!(p.tally("pt", &domain), None);
    assert_eq!(
        p.tally("uk", &key(Level::Host, "a.example.com")),
        Some(Tally { held: 0, none: 1 })
    );
    // hosts a and b, their domain, their TLD.
    assert_eq!(p.len(), 4);
    assert_eq!(p.keys_of("uk"), 4);
    assert_eq!(p.keys_of("pt"), 0);
}

#[test]
fn outcomes_come_from_status_and_mementos() {
    assert_eq!(Outcome::of(ArchiveStatus::Ok, 3), Outcome::Held);
    assert_eq!(Outcome::of(ArchiveStatus::NotFound, 0), Outcome::HeldNone);
    assert_eq!(Outcome::of(ArchiveStatus::Empty, 0), Outcome::HeldNone);
    assert_eq!(Outcome::of(ArchiveStatus::Timeout, 0), Outcome::Unknown);
    assert_eq!(Outcome::of(ArchiveStatus::Error, 0), Outcome::Unknown);
    // A TimeGate fallback's memento after a failed TimeMap is still a memento held.
    assert_eq!(Outcome::of(ArchiveStatus::Error, 1), Outcome::Held);
}

#[test]
fn tallies_halve_past_their_cap_keeping_the_share() {
    let mut p = Profiles::new(10);
    let k = key(Level::Tld, "uk");
    p.add("x", &k, false, 4000);
    p.add("x", &k, true, 1000);
    let t = p.tally("x", &k).unwrap();
    assert!(t.observed() <= Tally::AGE_AT, "{t:?}");
    assert_eq!((t.held, t.none), (500, 2000));
}

#[test]
fn the_least_recently_used_keys_are_forgotten_at_max_keys() {
    let mut p = Profiles::new(6);
    for host in ["a.example.com", "b.example.org", "c.example.net"] {
        p.observe(&observation(
            &format!("http://{host}/"),
            &[("x", Outcome::HeldNone)],
        ));
    }
    // 9 keys were seen; the first URI-R's went first.
    assert_eq!(p.len(), 6);
    assert_eq!(p.tally("x", &key(Level::Domain, "example.com")), None);
    assert!(p.tally("x", &key(Level::Domain, "example.net")).is_some());
    // Reading for a decision does not make a key recent; observing does.
    p.observe(&observation(
        "http://b.example.org/",
        &[("x", Outcome::HeldNone)],
    ));
    p.observe(&observation(
        "http://d.example.io/",
        &[("x", Outcome::Held)],
    ));
    assert!(p.tally("x", &key(Level::Domain, "example.org")).is_some());
    assert_eq!(p.tally("x", &key(Level::Domain, "example.net")), None);
}

#[test]
fn the_same_calls_give_the_same_profiles() {
    let run = || {
        let mut p = Profiles::new(50);
        for i in 0..200u32 {
            let outcome = if i % 7 == 0 {
                Outcome::Held
            } else {
                Outcome::HeldNone
            };
            p.observe(&observation(
                &format!("http://h{}.d{}.com/{i}", i % 13, i % 31),
                &[("a", outcome), ("b", Outcome::Held)],
            ));
        }
        p.to_stored()
    };
    assert_eq!(run(), run());
}

#[test]
fn the_stored_form_reads_back_in_its_lru_order() {
    let mut p = Profiles::new(20);
    for uri in ["http://a.com/", "http://b.org/", "http://c.net/"] {
        p.observe(&observation(uri, &[("x", Outcome::Held)]));
    }
    let stored = p.to_stored();
    let back = Profiles::from_stored(stored.clone(), 20).unwrap();
    assert_eq!(back.to_stored(), stored);
    // A smaller bound keeps the most recent keys.
    let small = Profiles::from_stored(stored.clone(), 3).unwrap();
    assert_eq!(small.len(), 3);
    assert!(small.tally("x", &key(Level::Host, "c.net")).is_some());
    assert!(small.tally("x", &key(Level::Host, "a.com")).is_none());
    // Impossible contents are refused.
    let mut twice = stored.clone();
    twice.keys.push(twice.keys[0].clone());
    assert!(Profiles::from_stored(twice, 20).is_err());
    let mut dangling = stored;
    dangling.keys[0].1[0].0 = 7;
    assert!(Profiles::from_stored(dangling, 20).is_err());
}

mod decisions;
mod imports;
