//! A client's own choices: the archives it wants (`archives=`, `Prefer:
//! archives=`), which restrict the fan-out or filter the cached entry and never replace it, and
//! `Cache-Control: only-if-cached`, answered from the cache or 504 without asking anyone.

use crate::cache::{set_day, sim_proxy};
use crate::pywb::{Capture, PywbArchive};
use crate::support::{archive_config, client, config_for, memento_uris, Proxy};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

fn tm(captures: &[&str]) -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec::of(captures))
}

async fn archive(captures: &[&str]) -> SimulatedArchive {
    SimulatedArchive::start(tm(captures))
        .await
        .expect("archive")
}

/// What a GET answered: status, X-Cache, X-Cache-Action, the archives of its mementos (JSON
/// routes; empty otherwise), and the headers.
struct Answer {
    status: u16,
    cache: String,
    action: String,
    archives: Vec<String>,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn get(proxy: &Proxy, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = client().get(format!("{}{path}", proxy.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("GET");
    let h = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, cache, action) = (r.status().as_u16(), h("x-cache"), h("x-cache-action"));
    let headers = r.headers().clone();
    let body = r.text().await.expect("body");
    let archives = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|j| {
            j["mementos"]["list"].as_array().map(|list| {
                list.iter()
                    .filter_map(|m| m["archive"].as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default();
    Answer {
        status,
        cache,
        action,
        archives,
        headers,
        body,
    }
}

#[tokio::test]
async fn chosen_archives_restrict_the_fan_out_and_never_replace_the_entry() {
    let a = archive(&["20010101000000", "20050101000000"]).await;
    let b = archive(&["20030101000000"]).await;
    let c = archive(&["20070101000000"]).await;
    let mut config = config_for(&[("a", &a), ("b", &b), ("c", &c)]);
    let mut off = archive_config("off", "http://127.0.0.1:9/tm/", "http://127.0.0.1:9/tg/");
    off.enabled = false;
    config.archives.push(off);
    let proxy = crate::support::start_proxy(config).await;
    let tm_json = format!("/timemap/json/{URI_R}");

    // Nothing cached: only a and c are asked, and the answer is not stored.
    let r = get(&proxy, &format!("{tm_json}?archives=a,c"), &[]).await;
    assert_eq!(
        (r.status, r.cache.as_str(), r.action.as_str()),
        (200, "MISS", "not_stored")
    );
    assert_eq!(r.archives, ["a", "a", "c"]);
    assert_eq!((a.requests(), b.requests(), c.requests()), (1, 0, 1));
    assert!(
        !r.body.contains("archives=a"),
        "not part of the URI-R: {}",
        r.body
    );
    // The ordinary answer is still a miss, and stored.
    let r = get(&proxy, &tm_json, &[]).await;
    assert_eq!((r.cache.as_str(), r.action.as_str()), ("MISS", "stored"));
    assert_eq!(r.archives.len(), 4);
    assert_eq!(b.requests(), 1);

    // Now cached and fresh: a choice is the entry filtered, no archive asked.
    let asked = (a.requests(), b.requests(), c.requests());
    let r = get(&proxy, &format!("{tm_json}?archives=b"), &[]).await;
    assert_eq!((r.status, r.cache.as_str()), (200, "HIT"));
    assert_eq!(r.archives, ["b"]);
    assert_eq!(r.headers["x-memento-archives"], "b=ok;n=1;dup=0");
    let r = get(&proxy, &tm_json, &[("prefer", "archives=\"a b\"")]).await;
    assert_eq!(r.archives, ["a", "b", "a"]);
    assert_eq!(r.headers["preference-applied"], "archives=\"a b\"");
    assert!(r
        .headers
        .get_all("vary")
        .iter()
        .any(|v| v.to_str().unwrap_or("").contains("prefer")));
    // Both: the archives in both.
    let r = get(
        &proxy,
        &format!("{tm_json}?archives=a,c"),
        &[("prefer", "archives=\"c b\"")],
    )
    .await;
    assert_eq!(r.archives, ["c"]);
    // The TimeGate and the web page choose among the chosen archives too.
    let r = get(&proxy, &format!("/memento/2004/{URI_R}?archives=b"), &[]).await;
    assert_eq!(r.status, 302);
    assert!(r.headers["location"]
        .to_str()
        .unwrap_or("")
        .contains("20030101000000"));
    assert_eq!((a.requests(), b.requests(), c.requests()), asked);

    // A refresh of the chosen archives only (no-cache) sees a's new capture, but the entry
    // every other client is served keeps what it had.
    a.set_behaviour(tm(&["20010101000000", "20050101000000", "20090101000000"]));
    let r = get(
        &proxy,
        &format!("{tm_json}?archives=a"),
        &[("cache-control", "no-cache")],
    )
    .await;
    assert_eq!((r.cache.as_str(), r.archives.len()), ("MISS", 3));
    assert_eq!(b.requests(), asked.1, "b was not chosen");
    let r = get(&proxy, &tm_json, &[]).await;
    assert_eq!((r.cache.as_str(), r.archives.len()), ("HIT", 4));

    // Refused, with no archive asked: an unknown or disabled archive, nothing named.
    let asked = (a.requests(), b.requests(), c.requests());
    for prefer in ["archives=\"a nope\"", "archives=off", "archives=\"\""] {
        let r = get(&proxy, &tm_json, &[("prefer", prefer)]).await;
        assert_eq!(r.status, 400, "{prefer}: {}", r.body);
        assert!(r.headers.get("preference-applied").is_none());
    }
    let r = get(&proxy, &format!("{tm_json}?archives=off"), &[]).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("disabled"), "{}", r.body);
    assert_eq!((a.requests(), b.requests(), c.requests()), asked);
    // A value naming none of our archives is the URI-R's own parameter, asked for as such.
    let r = get(&proxy, &format!("/timemap/link/{URI_R}?archives=x1"), &[]).await;
    assert!(
        r.body.contains("http://example.com/?archives=x1"),
        "{}",
        r.body
    );
    proxy.stop().await;
}

#[tokio::test]
async fn only_if_cached_answers_from_the_cache_or_504_without_asking() {
    let a = archive(&["20010101000000", "20050101000000"]).await;
    let b = archive(&["20030101000000"]).await;
    let proxy = sim_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    let tm_json = format!("/timemap/json/{URI_R}");
    let only = [("cache-control", "only-if-cached")];

    for path in [
        tm_json.clone(),
        format!("/timegate/{URI_R}"),
        format!("/api/json/2004/{URI_R}"),
    ] {
        let r = get(&proxy, &path, &only).await;
        assert_eq!(r.status, 504, "{path}: {}", r.body);
        assert!(r.body.contains("only-if-cached"), "{path}: {}", r.body);
    }
    assert_eq!((a.requests(), b.requests()), (0, 0), "nobody asked");

    assert_eq!(get(&proxy, &tm_json, &[]).await.status, 200);
    let r = get(&proxy, &tm_json, &only).await;
    assert_eq!(
        (r.status, r.cache.as_str(), r.archives.len()),
        (200, "HIT", 3)
    );
    let r = get(&proxy, &format!("{tm_json}?archives=b"), &only).await;
    assert_eq!((r.status, r.archives.clone()), (200, vec!["b".to_string()]));
    // Another spelling of the URL finds the same entry (canonical keys), named as spelled.
    let www = "https://www.example.com/";
    for path in [
        format!("/timemap/json/{www}"),
        format!("/timemap/json/{www}?archives=a"),
    ] {
        let r = get(&proxy, &path, &only).await;
        assert_eq!((r.status, r.cache.as_str()), (200, "HIT"), "{path}");
        let json: serde_json::Value = serde_json::from_str(&r.body).expect("json");
        assert_eq!(json["original_uri"], www, "{path}: {json}");
    }
    let r = get(
        &proxy,
        &tm_json,
        &[("cache-control", "only-if-cached, no-cache")],
    )
    .await;
    assert_eq!(r.status, 504, "no-cache cannot be met from the cache");

    // Expired (TTL 15 days): served only within the client's max-stale.
    set_day(&proxy, 17).await;
    assert_eq!(get(&proxy, &tm_json, &only).await.status, 504);
    let r = get(
        &proxy,
        &tm_json,
        &[("cache-control", "only-if-cached, max-stale=60")],
    )
    .await;
    assert_eq!(r.status, 504, "expired for a day, not a minute");
    let r = get(
        &proxy,
        &tm_json,
        &[("cache-control", "only-if-cached, max-stale")],
    )
    .await;
    assert_eq!((r.status, r.cache.as_str()), (200, "STALE"));
    assert_eq!(r.headers["cache-control"], "max-age=0");
    assert_eq!(
        (a.requests(), b.requests()),
        (1, 1),
        "only the one ordinary miss"
    );
    proxy.stop().await;
}

/// Against pywb: two collections, a client choosing one gets that collection's mementos only,
/// from a fan-out to it alone and then from the cached entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_chooses_one_of_two_pywb_archives() {
    let caps = |stamps: &[&str]| -> Vec<Capture> {
        stamps
            .iter()
            .map(|ts| Capture::new(URI_R, ts, "<html>x</html>"))
            .collect()
    };
    let (one, two) = (
        caps(&["20150101000000"]),
        caps(&["20160101000000", "20170101000000"]),
    );
    let pywbs = tokio::task::spawn_blocking(move || {
        PywbArchive::start_all(&[("one", &one), ("two", &two)])
    })
    .await
    .expect("pywb starts");
    let mut config = config_for(&[]);
    for (id, p) in [("one", &pywbs[0]), ("two", &pywbs[1])] {
        config.archives.push(archive_config(
            id,
            &p.timemap_prefix(),
            &p.timegate_prefix(),
        ));
    }
    let proxy = crate::support::start_proxy(config).await;
    let path = format!("/timemap/json/{URI_R}");
    let r = get(&proxy, &path, &[("prefer", "archives=two")]).await;
    assert_eq!((r.status, r.action.as_str()), (200, "not_stored"));
    assert_eq!(r.archives, ["two", "two"]);
    let json: serde_json::Value = serde_json::from_str(&r.body).expect("json");
    assert!(memento_uris(&json).iter().all(|u| u.contains("/two/")));
    assert_eq!(get(&proxy, &path, &[]).await.archives.len(), 3);
    let r = get(&proxy, &path, &[("prefer", "archives=one")]).await;
    assert_eq!(
        (r.cache.as_str(), r.archives.clone()),
        ("HIT", vec!["one".to_string()])
    );
    proxy.stop().await;
}

/// `?archives=` or `?timeout=` with a typo used to become part of the URL: a new fan-out and a
/// new cache entry for `…/?archives=a,nosuch`. Meant for us (plain words, one an archive's id or
/// near one), it is a 400 naming the archives and how to send the text to the archive instead;
/// sent that way (`%3F`), it is the URL's own query. A value that looks like no id of ours stays
/// the URL's own parameter, as before.
#[tokio::test]
async fn a_typo_in_our_parameters_is_a_400_not_a_new_url() {
    let a = archive(&["20010101000000"]).await;
    let alpha = archive(&["20030101000000"]).await;
    let proxy = crate::support::start_proxy(config_for(&[("a", &a), ("alpha", &alpha)])).await;
    for (query, says) in [
        ("?archives=alpha,nosuch", "\"nosuch\" is not one of ours"),
        ("?archives=alpah", "did you mean \"alpha\""),
        ("?x=1&archives=ALPHA", "not one of ours"),
        ("?timeout=5", "timeout \"5\" is not a duration"),
        ("?timeout=10sec", "timeout \"10sec\" is not a duration"),
    ] {
        let answer = get(&proxy, &format!("/timemap/json/{URI_R}{query}"), &[]).await;
        assert_eq!(answer.status, 400, "{query}: {}", answer.body);
        let error: serde_json::Value = serde_json::from_str(&answer.body).expect("JSON error");
        let text = error["error"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{query}: {text}");
        assert!(text.contains("%3F"), "{query}: {text}");
        if query == "?archives=alpha,nosuch" {
            assert!(
                text.ends_with(": http%3A%2F%2Fexample%2Ecom%2F%3Farchives%3Dalpha%2Cnosuch"),
                "{text}"
            );
        }
        if query.contains("archives") {
            assert!(
                text.contains("the archives are: a, alpha"),
                "{query}: {text}"
            );
        }
    }
    assert_eq!(
        (a.requests(), alpha.requests()),
        (0, 0),
        "no fan-out for a typo"
    );
    // Percent-encoded whole, as the 400 says, the same text is the URL's own query, and every
    // archive is asked for it.
    let encoded = "http%3A%2F%2Fexample%2Ecom%2F%3Farchives%3Dalpha%2Cnosuch";
    let answer = get(&proxy, &format!("/timemap/json/{encoded}"), &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let json: serde_json::Value = serde_json::from_str(&answer.body).expect("JSON");
    assert_eq!(
        json["original_uri"],
        format!("{URI_R}?archives=alpha,nosuch")
    );
    // A parameter that names nothing like ours is the URL's own, as it always was.
    let answer = get(
        &proxy,
        &format!("/timemap/json/{URI_R}?archives=2&timeout=soon"),
        &[],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!((a.requests(), alpha.requests()), (2, 2));
    proxy.stop().await;
}
