//! The decision: evidence thresholds, shares, always-asked archives, exploration.

use super::*;

/// `times` URI-Rs of `host`, each held by `ia` and `holder` and by nobody else among `others`.
fn learn(p: &mut Profiles, host: &str, times: u32, holder: &str, others: &[&str]) {
    for i in 0..times {
        let mut outcomes = vec![("ia", Outcome::Held), (holder, Outcome::Held)];
        outcomes.extend(others.iter().map(|o| (*o, Outcome::HeldNone)));
        p.observe(&observation(&format!("http://{host}/{i}"), &outcomes));
    }
}

fn candidates<'a>(ids: &[&'a str]) -> Vec<Candidate<'a>> {
    ids.iter().map(|id| Candidate::new(id, false)).collect()
}

/// A draw that never explores at explore < 1.
const NO_EXPLORE: u64 = u64::MAX;

#[test]
fn an_archive_is_skipped_only_after_min_evidence_observations() {
    let c = candidates(&["ia", "uk", "pt"]);
    let s = Settings::learned(20, 0.02, 0.05);
    let keys = UriKeys::of_uri("http://www.example.co.uk/new");
    let mut p = Profiles::new(1000);
    learn(&mut p, "www.example.co.uk", 19, "uk", &["pt"]);
    let d = decide(&p, &s, &c, &keys, NO_EXPLORE);
    assert!(d.routes.iter().all(Route::is_ask), "{d:?}");
    learn(&mut p, "www.example.co.uk", 1, "uk", &["pt"]);
    let d = decide(&p, &s, &c, &keys, NO_EXPLORE);
    assert_eq!(d.routes[0], Route::Ask);
    assert_eq!(d.routes[1], Route::Ask);
    let Route::Skip(skip) = &d.routes[2] else {
        panic!("pt should be skipped: {d:?}");
    };
    assert_eq!(skip.key.to_string(), "host example.co.uk");
    assert_eq!(skip.tally, Tally { held: 0, none: 20 });
    assert_eq!(
        skip.explain(),
        "host example.co.uk: mementos for 0 of 20 URI-Rs"
    );
}

#[test]
fn the_most_specific_key_with_enough_evidence_decides() {
    let c = candidates(&["pt"]);
    let s = Settings::learned(20, 0.02, 0.0);
    let mut p = Profiles::new(1000);
    // pt holds nothing across twenty hosts of example.com…
    for h in 0..20 {
        learn(&mut p, &format!("h{h}.example.com"), 1, "ia", &["pt"]);
    }
    // …but everything on news.example.com, with enough evidence there.
    learn(&mut p, "news.example.com", 20, "pt", &[]);
    let ask = |uri: &str| decide(&p, &s, &c, &UriKeys::of_uri(uri), 0).routes[0].clone();
    assert_eq!(ask("http://news.example.com/x"), Route::Ask);
    // A host never seen falls back to the domain, where pt holds 20 of 40.
    assert_eq!(ask("http://other.example.com/x"), Route::Ask);
    // A new domain with no evidence anywhere but its TLD (pt: 20 of 40 held in com).
    assert_eq!(ask("http://fresh.com/"), Route::Ask);
    // Unknown TLD, no evidence: asked.
    assert_eq!(ask("http://fresh.org/"), Route::Ask);
}

#[test]
fn min_share_is_the_line() {
    let c = candidates(&["x"]);
    let keys = UriKeys::of_uri("http://example.com/");
    let mut p = Profiles::new(100);
    let k = keys.get(Level::Host).unwrap().clone();
    p.add("x", &k, true, 1);
    p.add("x", &k, false, 49);
    // 1 of 50 is 0.02: not below 0.02.
    assert_eq!(
        decide(&p, &Settings::learned(20, 0.02, 0.0), &c, &keys, 0).routes[0],
        Route::Ask
    );
    assert!(!decide(&p, &Settings::learned(20, 0.021, 0.0), &c, &keys, 0).routes[0].is_ask());
}

#[test]
fn always_archives_and_mode_all_are_always_asked() {
    let keys = UriKeys::of_uri("http://example.com/");
    let mut p = Profiles::new(100);
    for a in ["ia", "mine", "other"] {
        for k in keys.keys() {
            p.add(a, k, false, 100);
        }
    }
    let c = [
        Candidate::new("ia", false),
        Candidate::new("mine", true),
        Candidate::new("other", false),
    ];
    let d = decide(&p, &Settings::learned(20, 0.02, 0.0), &c, &keys, 0);
    assert_eq!(d.routes[0], Route::Ask, "the Internet Archive");
    assert_eq!(d.routes[1], Route::Ask, "always = true");
    assert!(!d.routes[2].is_ask());
    let all = Settings {
        mode: Mode::All,
        ..Settings::learned(20, 0.02, 0.0)
    };
    assert!(decide(&p, &all, &c, &keys, 0)
        .routes
        .iter()
        .all(Route::is_ask));
}

#[test]
fn exploration_is_a_share_of_draws_and_replays_exactly() {
    assert!(decide::explores(0.05, 0));
    assert!(!decide::explores(0.05, u64::MAX));
    assert!(!decide::explores(0.0, 0));
    assert!(decide::explores(1.0, u64::MAX));
    assert!(!decide::explores(f64::NAN, 0));
    // Over many URI-Rs the hashed draw explores close to the share asked for.
    let explored = (0..20_000)
        .filter(|i| decide::explores(0.05, draw_for(&format!("http://e{i}.com/"), 7)))
        .count();
    assert!((800..1200).contains(&explored), "{explored}");
    // The same URI-R and nonce give the same draw; another nonce another one.
    assert_eq!(draw_for("http://a/", 1), draw_for("http://a/", 1));
    assert_ne!(draw_for("http://a/", 1), draw_for("http://a/", 2));
}

#[test]
fn an_explored_miss_asks_every_archive_and_lets_a_profile_recover() {
    let c = candidates(&["ia", "pt"]);
    let s = Settings::learned(20, 0.02, 0.05);
    let keys = UriKeys::of_uri("http://example.pt/");
    let mut p = Profiles::new(100);
    learn(&mut p, "example.pt", 200, "ia", &["pt"]);
    assert!(!decide(&p, &s, &c, &keys, NO_EXPLORE).routes[1].is_ask());
    let explored = decide(&p, &s, &c, &keys, 0);
    assert!(explored.explored && explored.routes.iter().all(Route::is_ask));
    // pt starts holding the domain: the explored misses' answers overturn the profile.
    learn(&mut p, "example.pt", 5, "pt", &[]);
    assert!(decide(&p, &s, &c, &keys, NO_EXPLORE).routes[1].is_ask());
}
