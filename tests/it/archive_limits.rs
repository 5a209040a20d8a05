//! tmproxy stays within each archive's limits, as the fake archive on the other end sees it: no
//! more of our requests in flight than `max_concurrency`, none closer together than `rate`
//! allows, none at all while it holds us off with `Retry-After` (capped by `max_retry_after`),
//! each naming `contact` in its User-Agent (and `/memento/proxy` held alike, a 503 with
//! Retry-After); and a request that waits in our own queue past its time is a `timeout` that
//! never counts towards dormancy.

use crate::support::{client, config_for, get_json, metric_value, outcome, start_proxy, Proxy};
use serde_json::Value;
use std::time::{Duration, Instant};
use tmproxy::config::Config;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://limits.example/";

async fn archive(behaviour: Behaviour) -> SimulatedArchive {
    SimulatedArchive::start(behaviour)
        .await
        .expect("a simulated archive")
}

fn timemap(delay: Duration) -> Behaviour {
    let mut spec = TimeMapSpec::of(&["20010101000000", "20020101000000"]);
    spec.delay = delay;
    Behaviour::TimeMap(spec)
}

/// The JSON TimeMap of `uri_r`, with the headers that matter here.
async fn timemap_of(proxy: &Proxy, uri_r: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = client()
        .get(format!("{}/timemap/json/{uri_r}", proxy.base))
        .send()
        .await
        .expect("GET");
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    let text = r.text().await.expect("body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, headers, json)
}

/// `/archives`' entry for `id`.
async fn report(proxy: &Proxy, id: &str) -> Value {
    let (status, all) = get_json(&format!("{}/archives", proxy.base)).await;
    assert_eq!(status, 200, "{all}");
    all.as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == id).cloned())
        .unwrap_or_else(|| panic!("no {id} in /archives: {all}"))
}

/// The status and detail `archives[]` gives `id`.
fn said(json: &Value, id: &str) -> (String, String) {
    let o = outcome(json, id);
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    (text(&o["status"]), text(&o["detail"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_than_max_concurrency_requests_are_ever_in_flight_to_an_archive() {
    let slow = archive(timemap(Duration::from_millis(100))).await;
    let mut config = config_for(&[("slow", &slow)]);
    config.archives[0].max_concurrency = 2;
    // 50 misses two at a time, 100 ms each: about 2.5 s, far inside these.
    config.upstream.timeout = Duration::from_secs(30);
    config.upstream.deadline = Duration::from_secs(30);
    let proxy = std::sync::Arc::new(start_proxy(config).await);
    let misses: Vec<_> = (0..50)
        .map(|n| {
            let proxy = proxy.clone();
            tokio::spawn(async move { timemap_of(&proxy, &format!("{URI_R}{n}")).await })
        })
        .collect();
    // Watched while they run: never more than two in flight, and the rest waiting their turn.
    let (mut most_in_flight, mut waited) = (0, false);
    while misses.iter().any(|m| !m.is_finished()) {
        let r = report(&proxy, "slow").await;
        most_in_flight = most_in_flight.max(r["in_flight"].as_u64().unwrap_or(99));
        let series = "tmproxy_archive_waiting{archive=\"slow\"}";
        waited |= metric_value(&proxy.base, series).await.unwrap_or(0.0) > 0.0;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for m in misses {
        let (status, _, json) = m.await.expect("the miss ran");
        assert_eq!(status, 200, "{json}");
        assert_eq!(said(&json, "slow").0, "ok", "{json}");
    }
    assert_eq!(slow.requests(), 50, "each distinct URI-R asked once");
    assert_eq!(
        slow.max_in_flight(),
        2,
        "the archive saw at most (and, with 50 waiting, exactly) max_concurrency at once"
    );
    assert!(
        most_in_flight <= 2,
        "/archives said {most_in_flight} in flight"
    );
    assert!(
        waited,
        "tmproxy_archive_waiting never showed a request waiting"
    );
    let r = report(&proxy, "slow").await;
    assert_eq!(r["max_concurrency"], 2, "{r}");
    assert_eq!(r["in_flight"], 0, "{r}");
    assert!(r["rate"].is_null(), "unlimited: {r}");
    assert!(r.get("retry_after_until").is_none(), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_a_paced_archive_are_spaced_by_its_rate() {
    let paced = archive(timemap(Duration::ZERO)).await;
    let mut config = config_for(&[("paced", &paced)]);
    // One every 200 ms: 8 misses at once take about 1.4 s.
    config.archives[0].rate = 5.0;
    config.upstream.timeout = Duration::from_secs(20);
    config.upstream.deadline = Duration::from_secs(20);
    let proxy = std::sync::Arc::new(start_proxy(config).await);
    let misses: Vec<_> = (0..8)
        .map(|n| {
            let proxy = proxy.clone();
            tokio::spawn(async move { timemap_of(&proxy, &format!("{URI_R}paced/{n}")).await })
        })
        .collect();
    for m in misses {
        let (status, _, json) = m.await.expect("the miss ran");
        assert_eq!(status, 200, "{json}");
        assert_eq!(said(&json, "paced").0, "ok", "{json}");
    }
    let times: Vec<Instant> = paced.seen().iter().map(|s| s.at).collect();
    assert_eq!(times.len(), 8);
    // Generous: any three in a row span at least one period (they are paced two apart), so a
    // late wake-up on a busy machine cannot fail it, while requests sent at once would.
    for w in times.windows(3) {
        let span = w[2].duration_since(w[0]);
        assert!(
            span >= Duration::from_millis(200),
            "three requests within {span:?}: {times:?}"
        );
    }
    let whole = times[7].duration_since(times[0]);
    assert!(
        whole >= Duration::from_millis(1000),
        "8 requests in {whole:?}"
    );
    assert_eq!(report(&proxy, "paced").await["rate"], 5.0);
}

/// An archive answering `status` with `Retry-After: 2`: asked again only after ~2 s, skipped
/// with `retry-after` in between without making any answer partial, and never dormant, though
/// it answers so twice with `failures_before_dormant = 2`.
async fn held_by_retry_after(status: u16) {
    let good = archive(timemap(Duration::ZERO)).await;
    let busy = archive(Behaviour::AskToWait(status, "2".into())).await;
    let mut config = config_for(&[("good", &good), ("busy", &busy)]);
    config.upstream.failures_before_dormant = 2;
    let proxy = start_proxy(config).await;

    let (code, _, json) = timemap_of(&proxy, &format!("{URI_R}held/0")).await;
    assert_eq!(code, 200, "{json}");
    let (busy_status, detail) = said(&json, "busy");
    assert_eq!(busy_status, "error", "{json}");
    assert!(detail.contains("asked us to wait until"), "{detail}");
    assert_eq!(busy.requests(), 1);
    let r = report(&proxy, "busy").await;
    assert!(r["retry_after_until"].is_string(), "{r}");
    let about = client()
        .get(format!("{}/about", proxy.base))
        .send()
        .await
        .expect("GET /about")
        .text()
        .await
        .expect("body");
    assert!(about.contains("(asked us to wait until "), "{about}");

    // Asked again only once its two seconds are over; skipped meanwhile.
    let mut n = 1;
    let started = Instant::now();
    while busy.requests() == 1 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never asked again"
        );
        let (code, headers, json) = timemap_of(&proxy, &format!("{URI_R}held/{n}")).await;
        n += 1;
        if busy.requests() > 1 {
            break;
        }
        assert_eq!(code, 200, "{json}");
        assert_eq!(
            said(&json, "busy"),
            ("skipped".to_string(), "retry-after".to_string()),
            "{json}"
        );
        let listed = headers["x-memento-archives"].to_str().unwrap_or("");
        assert!(
            listed.contains("busy=skipped;n=0;dup=0;detail=retry-after"),
            "{listed}"
        );
        assert!(
            headers.get("x-memento-partial").is_none(),
            "a skip for retry-after makes no answer partial: {headers:?}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(n > 3, "only {n} requests during the wait");
    let seen = busy.seen();
    let again = seen[1].at.duration_since(seen[0].at);
    assert!(
        again >= Duration::from_millis(1900),
        "asked again after {again:?}, before its Retry-After of 2 s"
    );
    assert!(
        again < Duration::from_secs(6),
        "asked again after {again:?}"
    );
    // It asked to wait twice, past failures_before_dormant, and skips galore: never dormant.
    let r = report(&proxy, "busy").await;
    assert_eq!(r["state"], "active", "{r}");
    assert_eq!(r["consecutive_failures"], 0, "{r}");
    assert!(r["counts"]["skipped"].as_u64().unwrap_or(0) >= 2, "{r}");

    // Once it answers again, it is asked as soon as its last wait is over.
    busy.set_behaviour(timemap(Duration::ZERO));
    let started = Instant::now();
    for n in 0.. {
        let (_, _, json) = timemap_of(&proxy, &format!("{URI_R}held/back/{n}")).await;
        match said(&json, "busy").0.as_str() {
            "ok" => break,
            "skipped" => {}
            other => panic!("busy said {other:?} after its wait: {json}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "still held: {json}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = report(&proxy, "busy").await;
    assert!(r.get("retry_after_until").is_none(), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_holds_the_archive_until_then() {
    held_by_retry_after(429).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_with_retry_after_holds_the_archive_and_is_no_step_towards_dormancy() {
    held_by_retry_after(503).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_date_far_off_is_capped_by_max_retry_after() {
    let good = archive(timemap(Duration::ZERO)).await;
    let busy = archive(Behaviour::AskToWait(
        503,
        "Fri, 01 Jan 2100 00:00:00 GMT".into(),
    ))
    .await;
    let mut config = config_for(&[("good", &good), ("busy", &busy)]);
    config.upstream.max_retry_after = Duration::from_secs(2);
    let proxy = start_proxy(config).await;
    let asked = chrono::Utc::now();
    let (_, _, json) = timemap_of(&proxy, &format!("{URI_R}capped/0")).await;
    assert_eq!(said(&json, "busy").0, "error", "{json}");
    let r = report(&proxy, "busy").await;
    let until = r["retry_after_until"].as_str().unwrap_or("");
    let until = chrono::DateTime::parse_from_rfc3339(until)
        .unwrap_or_else(|e| panic!("retry_after_until {until:?}: {e} in {r}"));
    let held = until.signed_duration_since(asked);
    assert!(
        held <= chrono::Duration::seconds(4),
        "held {held} for a date in 2100, max_retry_after 2s"
    );
    let started = Instant::now();
    let mut n = 1;
    while busy.requests() == 1 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never asked again after the capped wait"
        );
        timemap_of(&proxy, &format!("{URI_R}capped/{n}")).await;
        n += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let seen = busy.seen();
    let again = seen[1].at.duration_since(seen[0].at);
    assert!(
        again >= Duration::from_millis(1900) && again < Duration::from_secs(6),
        "asked again after {again:?}"
    );
}

/// `config` with `failures_before_dormant = 1`: one failure counted would put the archive to
/// sleep at once.
fn touchy(mut config: Config) -> Config {
    config.upstream.failures_before_dormant = 1;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_pace_slot_comes_too_late_is_a_timeout_and_no_step_towards_dormancy() {
    let paced = archive(timemap(Duration::ZERO)).await;
    let mut config = touchy(config_for(&[("paced", &paced)]));
    // One request every 5 s, each with 1 s to begin: of three at once, two cannot.
    config.archives[0].rate = 0.2;
    config.archives[0].timeout = Some(Duration::from_secs(1));
    let proxy = std::sync::Arc::new(start_proxy(config).await);
    let misses: Vec<_> = (0..3)
        .map(|n| {
            let proxy = proxy.clone();
            tokio::spawn(async move { timemap_of(&proxy, &format!("{URI_R}late/{n}")).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for m in misses {
        let (_, _, json) = m.await.expect("the miss ran");
        let (status, detail) = said(&json, "paced");
        if status == "timeout" {
            assert!(detail.contains("its turn"), "{detail}");
        }
        statuses.push(status);
    }
    statuses.sort();
    assert_eq!(statuses, ["ok", "timeout", "timeout"]);
    assert_eq!(paced.requests(), 1, "the late ones were never sent");
    let r = report(&proxy, "paced").await;
    assert_eq!(r["state"], "active", "{r}");
    assert_eq!(r["consecutive_failures"], 0, "{r}");
    assert_eq!(r["counts"]["timeout"], 2, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_waits_for_its_turn_past_its_time_is_a_timeout_and_no_step_towards_dormancy()
{
    // One at a time, 1.5 s each, 2 s to wait for a turn, and a 2.5 s deadline: the first is
    // answered; the second gets its turn at 1.5 s and is cut off by the deadline; the third
    // never gets one.
    let narrow = archive(timemap(Duration::from_millis(1500))).await;
    let mut config = touchy(config_for(&[("narrow", &narrow)]));
    config.archives[0].max_concurrency = 1;
    config.archives[0].timeout = Some(Duration::from_secs(2));
    config.upstream.deadline = Duration::from_millis(2500);
    let proxy = std::sync::Arc::new(start_proxy(config).await);
    let mut misses = Vec::new();
    for n in 0..3 {
        let proxy = proxy.clone();
        misses.push(tokio::spawn(async move {
            timemap_of(&proxy, &format!("{URI_R}narrow/{n}")).await
        }));
        // In this order, so the first holds the turn.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut said_each = Vec::new();
    for m in misses {
        let (_, _, json) = m.await.expect("the miss ran");
        said_each.push(said(&json, "narrow"));
    }
    assert_eq!(said_each[0].0, "ok", "{said_each:?}");
    for (status, detail) in &said_each[1..] {
        assert_eq!(status, "timeout", "{said_each:?}");
        assert!(detail.contains("its turn"), "{detail}");
    }
    assert_eq!(narrow.max_in_flight(), 1);
    let r = report(&proxy, "narrow").await;
    assert_eq!(r["state"], "active", "{r}");
    assert_eq!(r["consecutive_failures"], 0, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contact_rides_in_the_user_agent_the_archive_sees() {
    let a = archive(timemap(Duration::ZERO)).await;
    let mut config = config_for(&[("a", &a)]);
    config.upstream.contact = "https://ops.example/contact".into();
    let proxy = start_proxy(config).await;
    let (status, _, json) = timemap_of(&proxy, URI_R).await;
    assert_eq!(status, 200, "{json}");
    let seen = a.seen();
    let agents: Vec<&str> = seen.iter().map(|s| s.user_agent.as_str()).collect();
    assert_eq!(
        agents,
        ["tmproxy/0.1 (Memento aggregator; +https://ops.example/contact)"]
    );
    assert_eq!(seen[0].accept, "application/link-format");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memento_proxy_is_held_by_retry_after_too_and_says_so_with_a_503() {
    let a = archive(timemap(Duration::ZERO)).await;
    let proxy = start_proxy(config_for(&[("a", &a)])).await;
    // Its TimeMap cached while it answers; then it asks us to wait.
    let (status, _, json) = timemap_of(&proxy, URI_R).await;
    assert_eq!(status, 200, "{json}");
    a.set_behaviour(Behaviour::AskToWait(429, "30".into()));
    let memento = format!("{}/memento/proxy/2001/{URI_R}", proxy.base);
    let asked = a.requests();
    for attempt in ["the archive's own 429", "held: not asked"] {
        let r = client().get(&memento).send().await.expect("GET");
        let status = r.status().as_u16();
        let retry_after = r.headers().get("retry-after").cloned();
        let body = r.text().await.expect("body");
        assert_eq!(status, 503, "{attempt}: {body}");
        let secs: u64 = retry_after
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{attempt}: Retry-After {retry_after:?}"));
        assert!((1..=31).contains(&secs), "{attempt}: Retry-After {secs}");
        assert!(body.contains("asked us to wait until"), "{attempt}: {body}");
    }
    assert_eq!(a.requests(), asked + 1, "asked once, then held");
    // The fan-outs are held by it as well.
    let (_, _, json) = timemap_of(&proxy, &format!("{URI_R}other")).await;
    assert_eq!(said(&json, "a").0, "skipped", "{json}");
}
