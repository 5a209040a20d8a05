//! Fan-out and merge against simulated archives: good, slow, broken and hostile ones.

use crate::support::{client, config_for, get_json, memento_uris, outcome, start_proxy};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

async fn archive(b: Behaviour) -> SimulatedArchive {
    SimulatedArchive::start(b)
        .await
        .expect("simulated archive starts")
}

fn tm(captures: &[&str]) -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec::of(captures))
}

#[tokio::test]
async fn merged_timemap_is_the_deduplicated_union_in_time_order() {
    let a = archive(Behaviour::TimeMap(TimeMapSpec {
        duplicate_first: true,
        ..TimeMapSpec::of(&["20010101000000", "20050101000000"])
    }))
    .await;
    let b = archive(Behaviour::TimeMap(TimeMapSpec {
        newest_first: true,
        ..TimeMapSpec::of(&["20050101000000", "20030101000000", "20100101000000"])
    }))
    .await;
    let proxy = start_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(
        memento_uris(&json),
        vec![
            a.uri_m("20010101000000", URI_R),
            b.uri_m("20030101000000", URI_R),
            // Same second at two archives: both kept (different loose keys), archive order.
            a.uri_m("20050101000000", URI_R),
            b.uri_m("20050101000000", URI_R),
            b.uri_m("20100101000000", URI_R),
        ]
    );
    assert_eq!(outcome(&json, "a")["status"], "ok");
    assert_eq!(
        outcome(&json, "a")["mementos"],
        2,
        "the duplicate first memento counts once"
    );
    assert_eq!(outcome(&json, "b")["mementos"], 3);
    assert_eq!(
        json["mementos"]["first"]["datetime"],
        "2001-01-01T00:00:00Z"
    );
    assert_eq!(json["mementos"]["last"]["archive"], "b");
}

#[tokio::test]
async fn link_format_lists_each_memento_once_with_first_and_last() {
    let a = archive(Behaviour::TimeMap(TimeMapSpec {
        duplicate_first: true,
        ..TimeMapSpec::of(&["20010101000000", "20050101000000"])
    }))
    .await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/link-format");
    assert_eq!(resp.headers()["x-memento-count"], "2");
    assert_eq!(resp.headers()["x-memento-archives"], "a=ok;n=2;dup=0");
    let body = resp.text().await.expect("body");
    let parsed = tmproxy::timemap::parse::parse_link_format(&body, &proxy.base);
    assert_eq!(parsed.mementos.len(), 2, "{body}");
    assert_eq!(parsed.skipped, 0, "our own output parses cleanly: {body}");
    assert_eq!(parsed.original.as_deref(), Some(URI_R));
    assert!(body.contains("rel=\"first memento\""));
    assert!(body.contains("rel=\"last memento\""));
    assert_eq!(body.matches(&a.uri_m("20010101000000", URI_R)).count(), 1);
}

#[tokio::test]
async fn failing_archives_give_a_partial_200_that_names_them() {
    let good = archive(tm(&["20010101000000"])).await;
    let missing = archive(Behaviour::Status(404, "<html>not here</html>".into())).await;
    let broken = archive(Behaviour::Status(500, "oops".into())).await;
    let reset = archive(Behaviour::ResetMidBody).await;
    let garbage = archive(Behaviour::Body("<html><body>Hello</body></html>".into())).await;
    let proxy = start_proxy(config_for(&[
        ("good", &good),
        ("missing", &missing),
        ("broken", &broken),
        ("reset", &reset),
        ("garbage", &garbage),
    ]))
    .await;
    let resp = client()
        .get(format!("{}/timemap/json/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["x-memento-partial"],
        "broken, reset, garbage"
    );
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(
        memento_uris(&json),
        vec![good.uri_m("20010101000000", URI_R)]
    );
    assert_eq!(outcome(&json, "good")["status"], "ok");
    assert_eq!(outcome(&json, "missing")["status"], "not_found");
    assert_eq!(outcome(&json, "missing")["http_status"], 404);
    assert_eq!(outcome(&json, "broken")["status"], "error");
    assert_eq!(outcome(&json, "broken")["http_status"], 500);
    assert_eq!(outcome(&json, "reset")["status"], "error");
    assert_eq!(outcome(&json, "garbage")["status"], "malformed");
}

#[tokio::test]
async fn an_archive_past_the_deadline_is_a_timeout_and_the_rest_is_served() {
    let good = archive(tm(&["20010101000000"])).await;
    let hang = archive(Behaviour::HangBeforeHeaders).await;
    let stall = archive(Behaviour::HangAfterHeaders).await;
    let mut config = config_for(&[("good", &good), ("hang", &hang), ("stall", &stall)]);
    // Each archive's own timeout is far past the deadline, so only the deadline can cut them:
    // were it ignored, the request would take a minute and name the archives' timeout.
    config.upstream.timeout = Duration::from_secs(60);
    config.upstream.deadline = Duration::from_secs(1);
    let proxy = start_proxy(config).await;
    let asked = std::time::Instant::now();
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    // Catches a deadline that is not kept (60 s), with room for two busy cores.
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(status, 200);
    assert_eq!(memento_uris(&json).len(), 1);
    for id in ["hang", "stall"] {
        assert_eq!(outcome(&json, id)["status"], "timeout", "{json}");
        assert!(
            outcome(&json, id)["detail"]
                .as_str()
                .unwrap_or("")
                .contains("request deadline (1s)"),
            "{json}"
        );
    }
}

/// `n` distinct SYNTHETIC 14-digit timestamps, a minute apart from 1999.
fn minutes(n: usize) -> Vec<String> {
    let start = chrono::DateTime::from_timestamp(915_148_800, 0).unwrap_or_default();
    (0..n)
        .map(|i| {
            (start + chrono::Duration::minutes(i as i64))
                .format("%Y%m%d%H%M%S")
                .to_string()
        })
        .collect()
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Held by the tests that build and store 100,000-memento entries, so they never run at once:
/// each bounds its answer time, and two such loads on two cores would only measure each other.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A proxy in front of an archive with `n` mementos and one that never answers, so every
/// fan-out lasts the whole `deadline` (each archive's own timeout is far past it).
async fn big_behind_a_hanging_archive(
    n: usize,
    deadline: Duration,
) -> ([SimulatedArchive; 2], crate::support::Proxy) {
    let big = archive(Behaviour::TimeMap(TimeMapSpec {
        captures: minutes(n),
        ..TimeMapSpec::default()
    }))
    .await;
    let hang = archive(Behaviour::HangBeforeHeaders).await;
    let mut config = config_for(&[("big", &big), ("hang", &hang)]);
    config.upstream.timeout = Duration::from_secs(60);
    config.upstream.deadline = deadline;
    let proxy = start_proxy(config).await;
    ([big, hang], proxy)
}

/// A URI-R's first answer does not wait past the deadline for its entry to be built and
/// written. 100,000 mementos take seconds to store in a debug build; an archive that never
/// answers holds the fan-out to the deadline (20 s, far more than the big archive needs even on
/// a loaded machine), so the store starts at the deadline and the answer's head must still come
/// by the deadline + 1 s. Before, it came once the entry was stored (seconds later here). The
/// answer then says `not_stored` (`stored` if a fast machine stored it within 250 ms); either
/// way the entry is stored in the end and served as a HIT with the same body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_answer_comes_by_the_deadline_however_long_its_store_takes() {
    const N: usize = 100_000;
    const DEADLINE: Duration = Duration::from_secs(20);
    let _heavy = HEAVY.lock().await;
    let (_archives, proxy) = big_behind_a_hanging_archive(N, DEADLINE).await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    let asked = std::time::Instant::now();
    let first = client().get(&url).send().await.expect("first answer");
    let head_after = asked.elapsed();
    let action = header(&first, "x-cache-action");
    eprintln!(
        "first answer's head after {head_after:?}, x-cache-action {action}, archives {}",
        header(&first, "x-memento-archives")
    );
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(header(&first, "x-cache"), "MISS");
    assert_eq!(header(&first, "x-memento-count"), N.to_string());
    assert!(
        matches!(action.as_str(), "stored" | "not_stored"),
        "{action}"
    );
    // The guarantee is the deadline + 1 s; rendering 100,000 mementos in a debug build on two
    // busy cores gets one more second. Without the fix the head comes after the store, several
    // seconds later still.
    assert!(
        head_after < DEADLINE + Duration::from_secs(2),
        "answered after {head_after:?} against a {DEADLINE:?} deadline"
    );
    let first_body = first.bytes().await.expect("first body");
    // The store lands in the end (the bound only catches a store that never does). Until then
    // a request is answered from the first answer's view, never by fanning out again (which
    // the hanging archive would hold for 20 s).
    let started = std::time::Instant::now();
    let hit = loop {
        let asked = std::time::Instant::now();
        let r = client().get(&url).send().await.expect("later answer");
        if header(&r, "x-cache") == "HIT" {
            break r;
        }
        assert_eq!(header(&r, "x-cache"), "MISS");
        assert!(
            asked.elapsed() < DEADLINE,
            "a request while the store is written fanned out again"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never stored: {}",
            header(&r, "x-cache")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(header(&hit, "x-memento-count"), N.to_string());
    assert_eq!(hit.bytes().await.expect("hit body"), first_body);
}

/// A refresh of a stored huge entry answers by the deadline too: deciding, writing and
/// rendering 200,000 mementos take seconds in a debug build, so past the deadline the stored
/// entry is served STALE while the refresh lands behind it, and a request meanwhile is answered
/// from it rather than fanning out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_of_a_huge_entry_answers_by_the_deadline_however_long_its_store_takes() {
    const N: usize = 100_000;
    const DEADLINE: Duration = Duration::from_secs(10);
    let _heavy = HEAVY.lock().await;
    let (_archives, proxy) = big_behind_a_hanging_archive(N, DEADLINE).await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    // Stored first (the hanging archive is a timeout).
    let first = client().get(&url).send().await.expect("first answer");
    assert_eq!(header(&first, "x-memento-count"), N.to_string());
    let first_body = first.bytes().await.expect("first body");
    let started = std::time::Instant::now();
    while header(&client().get(&url).send().await.expect("hit"), "x-cache") != "HIT" {
        assert!(started.elapsed() < Duration::from_secs(120), "never stored");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The refresh waits the whole deadline for the hanging archive, then has a huge entry to
    // decide on, write and serve.
    let asked = std::time::Instant::now();
    let refreshed = client()
        .get(&url)
        .header("cache-control", "no-cache")
        .send()
        .await
        .expect("refresh answer");
    let head_after = asked.elapsed();
    let status = header(&refreshed, "x-cache");
    eprintln!("refresh's head after {head_after:?}, x-cache {status}");
    assert_eq!(refreshed.status().as_u16(), 200);
    assert!(matches!(status.as_str(), "STALE" | "REFRESH"), "{status}");
    // 5 s of margin: deciding on and rendering 100,000 mementos in a debug build on two busy
    // cores. A refresh that waited for the hanging archive would wait out its 60 s timeout.
    assert!(
        head_after < DEADLINE + Duration::from_secs(5),
        "answered after {head_after:?} against a {DEADLINE:?} deadline"
    );
    assert_eq!(refreshed.bytes().await.expect("body"), first_body);
    // Until the refresh lands, requests are answered from the stored entry without a new
    // fan-out (which the hanging archive would hold for the whole deadline); then it is a HIT.
    let started = std::time::Instant::now();
    loop {
        let asked = std::time::Instant::now();
        let r = client().get(&url).send().await.expect("later answer");
        let status = header(&r, "x-cache");
        assert!(
            asked.elapsed() < DEADLINE,
            "a request while the refresh is written fanned out again"
        );
        if status == "HIT" {
            assert_eq!(r.bytes().await.expect("hit body"), first_body);
            break;
        }
        assert_eq!(status, "STALE");
        assert!(started.elapsed() < Duration::from_secs(120), "never landed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_per_archive_timeout_is_a_timeout_even_within_the_deadline() {
    let good = archive(tm(&["20010101000000"])).await;
    let slow = archive(Behaviour::TimeMap(TimeMapSpec {
        delay: Duration::from_secs(30),
        ..TimeMapSpec::of(&["20020101000000"])
    }))
    .await;
    let mut config = config_for(&[("good", &good), ("slow", &slow)]);
    config.archives[1].timeout = Some(Duration::from_millis(300));
    let proxy = start_proxy(config).await;
    let (_, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(outcome(&json, "slow")["status"], "timeout");
    assert!(outcome(&json, "slow")["detail"]
        .as_str()
        .unwrap_or("")
        .contains("its timeout"));
}

#[tokio::test]
async fn client_timeout_parameter_shortens_the_deadline() {
    let good = archive(tm(&["20010101000000"])).await;
    let hang = archive(Behaviour::HangBeforeHeaders).await;
    let mut config = config_for(&[("good", &good), ("hang", &hang)]);
    config.upstream.deadline = Duration::from_secs(60);
    config.upstream.timeout = Duration::from_secs(60);
    let proxy = start_proxy(config).await;
    // The client would wait 30 s; the proxy must answer at 1 s with hang as a timeout.
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}?timeout=1s", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(
        json["original_uri"], URI_R,
        "timeout=1s is ours, not part of the URI-R"
    );
    assert!(outcome(&json, "hang")["detail"]
        .as_str()
        .unwrap_or("")
        .contains("request deadline (1s)"));
}

#[tokio::test]
async fn oversized_bodies_are_cut_at_max_body() {
    let good = archive(tm(&["20010101000000"])).await;
    let huge = archive(Behaviour::Oversized(4 << 20)).await;
    let mut config = config_for(&[("good", &good), ("huge", &huge)]);
    config.upstream.max_body = 64 * 1024;
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(outcome(&json, "huge")["status"], "error");
    assert!(outcome(&json, "huge")["detail"]
        .as_str()
        .unwrap_or("")
        .contains("max_body"));
}

#[tokio::test]
async fn max_body_bounds_all_pages_of_an_archive_together() {
    // Four pages of 50 mementos, each well under max_body, together over it: the first page
    // is kept, the rest is refused and the detail says why (each page used to get max_body).
    let captures: Vec<String> = (0..200)
        .map(|i| format!("2001{:02}{:02}000000", 1 + i / 28, 1 + i % 28))
        .collect();
    let captures: Vec<&str> = captures.iter().map(String::as_str).collect();
    let paged = archive(Behaviour::TimeMap(TimeMapSpec {
        page_size: Some(50),
        ..TimeMapSpec::of(&captures)
    }))
    .await;
    let mut config = config_for(&[("paged", &paged)]);
    config.upstream.max_body = 12 * 1024;
    let proxy = start_proxy(config).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    let got = memento_uris(&json).len();
    assert!((50..200).contains(&got), "{got} mementos: {json}");
    assert!(
        outcome(&json, "paged")["detail"]
            .as_str()
            .unwrap_or("")
            .contains("max_body"),
        "{json}"
    );
}

#[tokio::test]
async fn malformed_entries_are_skipped_and_counted_and_the_rest_kept() {
    let body = format!(
        "<{URI_R}>; rel=\"original\",\n\
         <http://x.test/web/20010101000000/{URI_R}>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
         <http://x.test/web/bad/{URI_R}>; rel=\"memento\"; datetime=\"the day before yesterday\",\n\
         <http://x.test/web/20020101000000/{URI_R}>; rel=memento; datetime='Tue, 01 Jan 2002 00:00:00 GMT'\n"
    );
    let odd = archive(Behaviour::Body(body)).await;
    let proxy = start_proxy(config_for(&[("odd", &odd)])).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(memento_uris(&json).len(), 2);
    assert_eq!(outcome(&json, "odd")["skipped"], 1);
    assert_eq!(outcome(&json, "odd")["status"], "ok");
}

#[tokio::test]
async fn paged_timemaps_are_followed_with_a_cycle_guard_and_a_page_limit() {
    let captures = [
        "20010101000000",
        "20020101000000",
        "20030101000000",
        "20040101000000",
        "20050101000000",
    ];
    let paged = archive(Behaviour::TimeMap(TimeMapSpec {
        page_size: Some(2),
        ..TimeMapSpec::of(&captures)
    }))
    .await;
    let proxy = start_proxy(config_for(&[("paged", &paged)])).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(memento_uris(&json).len(), 5);
    // Three pages; the last links back to the first, which is not fetched again.
    assert_eq!(outcome(&json, "paged")["pages"], 3);
    assert_eq!(paged.requests(), 3);

    let mut config = config_for(&[("paged", &paged)]);
    config.upstream.max_pages = 2;
    let limited = start_proxy(config).await;
    let (_, json) = get_json(&format!("{}/timemap/json/{URI_R}", limited.base)).await;
    assert_eq!(memento_uris(&json).len(), 4);
    assert!(outcome(&json, "paged")["detail"]
        .as_str()
        .unwrap_or("")
        .contains("max_pages"));
}

#[tokio::test]
async fn redirects_are_followed_and_loops_are_errors() {
    let moved = archive(Behaviour::Redirect(TimeMapSpec::of(&["20010101000000"]))).await;
    let looping = archive(Behaviour::RedirectLoop).await;
    let proxy = start_proxy(config_for(&[("moved", &moved), ("loop", &looping)])).await;
    let (status, json) = get_json(&format!("{}/timemap/json/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(outcome(&json, "moved")["status"], "ok");
    assert_eq!(outcome(&json, "loop")["status"], "error");
}

#[tokio::test]
async fn no_memento_anywhere_is_404_and_no_answer_is_502_or_504() {
    let missing = archive(Behaviour::Status(404, "nope".into())).await;
    let empty = archive(tm(&[])).await;
    let proxy = start_proxy(config_for(&[("missing", &missing), ("empty", &empty)])).await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 404);
    assert_eq!(
        resp.headers()["x-memento-archives"],
        "missing=not_found;n=0;dup=0, empty=empty;n=0;dup=0"
    );
    let text = resp.text().await.expect("body");
    assert!(
        text.starts_with("404 no memento of http://example.com/ in any of the 2 archives"),
        "{text}"
    );

    let broken = archive(Behaviour::Status(503, "down".into())).await;
    let proxy = start_proxy(config_for(&[("broken", &broken)])).await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 502);
    assert!(resp
        .text()
        .await
        .expect("body")
        .contains("broken: error (HTTP 503)"));

    let hang = archive(Behaviour::HangBeforeHeaders).await;
    let mut config = config_for(&[("hang", &hang)]);
    // Only the deadline can end this one (the archive's own timeout is a minute).
    config.upstream.timeout = Duration::from_secs(60);
    config.upstream.deadline = Duration::from_millis(500);
    let proxy = start_proxy(config).await;
    let asked = std::time::Instant::now();
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(resp.status(), 504);
    let text = resp.text().await.expect("body");
    assert!(text.contains("request deadline"), "{text}");
}

#[tokio::test]
async fn a_404_beside_a_failure_is_a_404_that_names_the_failure() {
    let missing = archive(Behaviour::Status(404, "nope".into())).await;
    let broken = archive(Behaviour::Status(500, "oops".into())).await;
    let proxy = start_proxy(config_for(&[("missing", &missing), ("broken", &broken)])).await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 404);
    let text = resp.text().await.expect("body");
    assert!(
        text.contains("in the 1 archives that answered; no answer from: broken"),
        "{text}"
    );
}

#[tokio::test]
async fn an_archive_that_keeps_failing_goes_dormant() {
    let good = archive(tm(&["20010101000000"])).await;
    let broken = archive(Behaviour::Status(500, "oops".into())).await;
    let mut config = config_for(&[("good", &good), ("broken", &broken)]);
    config.upstream.failures_before_dormant = 2;
    config.upstream.dormant_for = Duration::from_secs(3600);
    let proxy = start_proxy(config).await;
    // Distinct URI-Rs: each is a cache miss, so each asks the archives.
    for i in 0..5 {
        let (status, _) = get_json(&format!("{}/timemap/json/{URI_R}{i}", proxy.base)).await;
        assert_eq!(status, 200);
    }
    // Each time its TimeMap's 500 sends us to its TimeGate (the TimeGate fallback), which 500s too.
    assert_eq!(
        broken.requests(),
        4,
        "asked twice (TimeMap, then TimeGate), then left alone"
    );
    assert_eq!(good.requests(), 5);
    let (_, json) = get_json(&format!("{}/timemap/json/{URI_R}5", proxy.base)).await;
    assert!(outcome(&json, "broken")["detail"]
        .as_str()
        .unwrap_or("")
        .contains("dormant"));
}

#[tokio::test]
async fn newest_first_and_oldest_first_give_the_same_timemap() {
    let captures: Vec<String> = (0..2000)
        .map(|i| format!("2010{:02}{:02}000000", 1 + i % 12, 1 + (i / 12) % 28))
        .collect();
    let refs: Vec<&str> = captures.iter().map(String::as_str).collect();
    let old = archive(Behaviour::TimeMap(TimeMapSpec::of(&refs))).await;
    let new = archive(Behaviour::TimeMap(TimeMapSpec {
        newest_first: true,
        ..TimeMapSpec::of(&refs)
    }))
    .await;
    let p1 = start_proxy(config_for(&[("x", &old)])).await;
    let p2 = start_proxy(config_for(&[("x", &new)])).await;
    let (_, j1) = get_json(&format!("{}/timemap/json/{URI_R}", p1.base)).await;
    let (_, j2) = get_json(&format!("{}/timemap/json/{URI_R}", p2.base)).await;
    let strip = |uris: Vec<String>, a: &SimulatedArchive| -> Vec<String> {
        uris.into_iter()
            .map(|u| u.replace(&a.addr.to_string(), "HOST"))
            .collect()
    };
    assert_eq!(
        strip(memento_uris(&j1), &old),
        strip(memento_uris(&j2), &new)
    );
}
