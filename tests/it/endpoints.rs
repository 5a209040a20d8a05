//! The public endpoints' contract: redirects, Link headers, statuses, CORS, HEAD and 304.

use crate::support::{client, config_for, get_json, start_proxy, Proxy};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";

/// Two archives: a holds 2001 and 2005, b holds 2003 and 2005 (same second as a's).
async fn two_archives() -> (SimulatedArchive, SimulatedArchive, Proxy) {
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive a");
    let b = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20030101000000",
        "20050101000000",
    ])))
    .await
    .expect("archive b");
    let proxy = start_proxy(config_for(&[("a", &a), ("b", &b)])).await;
    (a, b, proxy)
}

#[tokio::test]
async fn timegate_redirects_to_the_closest_memento_across_archives() {
    let (a, b, proxy) = two_archives().await;
    let resp = client()
        .get(format!("{}/timegate/{URI_R}", proxy.base))
        .header("Accept-Datetime", "Wed, 01 Jan 2003 10:00:00 GMT")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 302);
    assert_eq!(
        resp.headers()["location"],
        b.uri_m("20030101000000", URI_R).as_str()
    );
    assert_eq!(resp.headers()["vary"], "accept-datetime");
    assert!(
        resp.headers().get("memento-datetime").is_none(),
        "pattern 2.1: the TimeGate is not a memento"
    );
    let link = resp.headers()["link"].to_str().expect("ascii");
    assert!(
        link.contains(&format!("<{URI_R}>; rel=\"original\"")),
        "{link}"
    );
    assert!(
        link.contains(&format!(
            "<{}/timemap/link/{URI_R}>; rel=\"timemap\"",
            proxy.base
        )),
        "{link}"
    );
    // prev is another archive's memento: only the aggregate knows it.
    assert!(
        link.contains(&format!(
            "<{}>; rel=\"first prev memento\"",
            a.uri_m("20010101000000", URI_R)
        )),
        "{link}"
    );
    assert!(
        link.contains(&format!(
            "<{}>; rel=\"memento\"",
            b.uri_m("20030101000000", URI_R)
        )),
        "{link}"
    );
    assert!(
        link.contains(&format!(
            "<{}>; rel=\"next memento\"",
            a.uri_m("20050101000000", URI_R)
        )),
        "{link}"
    );
    assert!(
        link.contains(&format!(
            "<{}>; rel=\"last memento\"",
            b.uri_m("20050101000000", URI_R)
        )),
        "{link}"
    );
}

#[tokio::test]
async fn timegate_without_accept_datetime_gives_the_latest() {
    let (a, _b, proxy) = two_archives().await;
    let resp = client()
        .get(format!("{}/timegate/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 302);
    // Two mementos share the last second; the first in archive order wins the tie.
    assert_eq!(
        resp.headers()["location"],
        a.uri_m("20050101000000", URI_R).as_str()
    );
}

#[tokio::test]
async fn timegate_before_first_and_after_last() {
    let (a, _b, proxy) = two_archives().await;
    for (when, want) in [
        ("Sat, 01 Jan 1990 00:00:00 GMT", "20010101000000"),
        ("Fri, 01 Jan 2100 00:00:00 GMT", "20050101000000"),
    ] {
        let resp = client()
            .get(format!("{}/timegate/{URI_R}", proxy.base))
            .header("Accept-Datetime", when)
            .send()
            .await
            .expect("request");
        assert_eq!(resp.headers()["location"], a.uri_m(want, URI_R).as_str());
    }
}

#[tokio::test]
async fn malformed_accept_datetime_is_400_naming_the_form() {
    let (a, b, proxy) = two_archives().await;
    let resp = client()
        .get(format!("{}/timegate/{URI_R}", proxy.base))
        .header("Accept-Datetime", "2003-01-01")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 400);
    let text = resp.text().await.expect("body");
    assert_eq!(
        text.trim_end(),
        "400 malformed Accept-Datetime: \"2003-01-01\", expected RFC 1123 like \"Thu, 31 May 2007 20:35:00 GMT\""
    );
    assert_eq!(
        a.requests() + b.requests(),
        0,
        "a client mistake asks no archive"
    );
}

#[tokio::test]
async fn memento_path_redirects_with_padded_datetimes() {
    let (_a, b, proxy) = two_archives().await;
    let resp = client()
        .get(format!("{}/memento/2003/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 302);
    assert_eq!(
        resp.headers()["location"],
        b.uri_m("20030101000000", URI_R).as_str()
    );
    let resp = client()
        .get(format!("{}/memento/200313/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 400);
    assert!(resp
        .text()
        .await
        .expect("body")
        .contains("expected YYYY[MM[DD[hh[mm[ss]]]]]"));
}

#[tokio::test]
async fn api_json_groups_mementos_that_share_a_datetime() {
    let (a, b, proxy) = two_archives().await;
    let (status, json) = get_json(&format!("{}/api/json/20040601/{URI_R}", proxy.base)).await;
    assert_eq!(status, 200);
    assert_eq!(json["original_uri"], URI_R);
    assert_eq!(
        json["mementos"]["closest"]["datetime"],
        "2005-01-01T00:00:00Z"
    );
    assert_eq!(
        json["mementos"]["closest"]["uri"],
        serde_json::json!([
            a.uri_m("20050101000000", URI_R),
            b.uri_m("20050101000000", URI_R)
        ])
    );
    assert_eq!(json["mementos"]["prev"]["datetime"], "2003-01-01T00:00:00Z");
    assert!(json["mementos"].get("next").is_none());
    assert_eq!(
        json["mementos"]["first"]["uri"],
        serde_json::json!([a.uri_m("20010101000000", URI_R)])
    );
    assert_eq!(
        json["timemap_uri"]["link_format"],
        format!("{}/timemap/link/{URI_R}", proxy.base)
    );
}

#[tokio::test]
async fn uri_r_forms_are_accepted() {
    let (_a, _b, proxy) = two_archives().await;
    for form in [
        "http%3A%2F%2Fexample.com%2F",
        "example.com/",
        "http:/example.com/",
    ] {
        let (status, json) = get_json(&format!("{}/timemap/json/{form}", proxy.base)).await;
        assert_eq!(status, 200, "{form}");
        assert_eq!(json["original_uri"], URI_R, "{form}");
    }
    // No format segment: link format.
    let resp = client()
        .get(format!("{}/timemap/{URI_R}", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers()["content-type"], "application/link-format");
}

#[tokio::test]
async fn client_mistakes_are_4xx_with_a_reason_and_ask_no_archive() {
    let (a, b, proxy) = two_archives().await;
    let long = format!("http://example.com/{}", "a".repeat(9000));
    let cases: Vec<(String, u16, &str)> = vec![
        (
            "/timemap/link/ftp://example.com/".to_string(),
            400,
            "must be an http:// or https:// URL",
        ),
        (
            format!("/timemap/xml/{URI_R}"),
            400,
            "unknown TimeMap format \"xml\": use link, json or cdxj",
        ),
        ("/timemap/link/".to_string(), 400, "missing URI-R"),
        (format!("/timemap/link/{long}"), 414, "limit"),
        (
            "/timegate/javascript:alert(1)".to_string(),
            400,
            "must be an http",
        ),
        // A JSON route: the reason is the JSON `error` (memgator_routes checks the shape).
        (
            format!("/api/json/yesterday/{URI_R}"),
            400,
            r#"malformed datetime \"yesterday\""#,
        ),
        ("/nowhere".to_string(), 404, "no such endpoint"),
    ];
    for (path, status, reason) in cases {
        let resp = client()
            .get(format!("{}{path}", proxy.base))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status().as_u16(), status, "{path}");
        assert_eq!(resp.headers()["access-control-allow-origin"], "*", "{path}");
        let text = resp.text().await.expect("body");
        assert!(text.contains(reason), "{path}: {text}");
        assert_eq!(text.trim_end().lines().count(), 1, "one line: {text}");
    }
    assert_eq!(a.requests() + b.requests(), 0);
}

#[tokio::test]
async fn options_preflight_is_answered_without_fanning_out() {
    let (a, b, proxy) = two_archives().await;
    let resp = client()
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/timegate/{URI_R}", proxy.base),
        )
        .header("Origin", "https://client.test")
        .header("Access-Control-Request-Method", "GET")
        .header("Access-Control-Request-Headers", "accept-datetime")
        .send()
        .await
        .expect("request");
    assert!(resp.status().is_success());
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
    let allowed = resp.headers()["access-control-allow-headers"]
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    assert!(allowed.contains("accept-datetime"), "{allowed}");
    let plain = client()
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/timemap/link/{URI_R}", proxy.base),
        )
        .send()
        .await
        .expect("request");
    assert!(plain.status().is_success());
    assert_eq!(a.requests() + b.requests(), 0);
}

#[tokio::test]
async fn cors_exposes_the_memento_headers() {
    let (_a, _b, proxy) = two_archives().await;
    let resp = client()
        .get(format!("{}/timemap/link/{URI_R}", proxy.base))
        .header("Origin", "https://client.test")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
    let exposed = resp.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    for h in [
        "link",
        "location",
        "x-memento-count",
        "memento-datetime",
        "x-memento-partial",
    ] {
        assert!(exposed.contains(h), "{h} in {exposed}");
    }
}

#[tokio::test]
async fn head_has_the_headers_and_no_body_and_etag_gives_304() {
    let (_a, _b, proxy) = two_archives().await;
    let url = format!("{}/timemap/link/{URI_R}", proxy.base);
    let head = client().head(&url).send().await.expect("request");
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["x-memento-count"], "4");
    let etag = head.headers()["etag"].clone();
    assert!(head.headers().contains_key("last-modified"));
    assert_eq!(head.headers()["x-cache"], "MISS");
    assert!(head.bytes().await.expect("body").is_empty());
    let again = client()
        .get(&url)
        .header("If-None-Match", etag.clone())
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag);
}

#[tokio::test]
async fn healthz_answers() {
    let proxy = start_proxy(tmproxy::config::Config {
        archives: vec![],
        ..Default::default()
    })
    .await;
    let resp = client()
        .get(format!("{}/healthz", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn demo_prints_curl_lines_that_work() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = crate::support::ChildGuard(Some(
        Command::new(env!("CARGO_BIN_EXE_tmproxy"))
            .args(["demo", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tmproxy demo starts"),
    ));
    let stdout = child.get().stdout.take().expect("stdout");
    // Read the printed lines on a thread; the demo keeps running until we kill it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let done = line.starts_with("ctrl-c");
            let _ = tx.send(line);
            if done {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(20)) {
        let done = line.starts_with("ctrl-c");
        lines.push(line);
        if done {
            break;
        }
    }
    let url = lines
        .iter()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/timemap/json/"))
        })
        .next()
        .map(str::to_string);
    let result = match &url {
        Some(url) => Some(get_json(url).await),
        None => None,
    };
    // The admin line, run as printed: its URL with the token of its Authorization header.
    let admin = lines.iter().find_map(|l| {
        let token = l
            .split("Authorization: Bearer ")
            .nth(1)?
            .split('"')
            .next()?;
        let url = l.split_whitespace().find(|w| w.contains("/admin/"))?;
        Some((url.to_string(), token.to_string()))
    });
    let admin_status = match &admin {
        Some((url, token)) => Some(
            client()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .map(|r| r.status().as_u16()),
        ),
        None => None,
    };
    // The ?timeout= line: a URI-R not yet cached, with less time than the slow archive takes.
    let timeout_url = lines.iter().find_map(|l| {
        l.split_whitespace()
            .find(|w| w.contains("?timeout="))
            .map(|w| w.trim_matches('\'').to_string())
    });
    let partial = match &timeout_url {
        Some(url) => Some(client().get(url).send().await.map(|r| {
            let partial = r
                .headers()
                .get("x-memento-partial")
                .map(|v| v.to_str().unwrap_or("").to_string());
            (r.status().as_u16(), partial)
        })),
        None => None,
    };
    // Stop it as a user would (SIGTERM, by PID): the demo then removes its temporary cache.
    let pid = child.get().id();
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let mut exited = false;
    for _ in 0..200 {
        if matches!(child.get().try_wait(), Ok(Some(_))) {
            exited = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(child);
    assert!(exited, "demo stops on SIGTERM");
    assert!(
        !tmproxy::demo::demo_cache_dir_of(pid).exists(),
        "the demo removes its cache directory on the way out"
    );
    let admin_status =
        admin_status.unwrap_or_else(|| panic!("no admin curl line with a token in {lines:?}"));
    assert_eq!(admin_status.expect("admin request"), 200, "{admin:?}");
    let (status, partial) = partial
        .unwrap_or_else(|| panic!("no ?timeout= curl line in {lines:?}"))
        .expect("timeout request");
    assert_eq!(status, 200, "{timeout_url:?}");
    let partial = partial.unwrap_or_else(|| panic!("{timeout_url:?} answered in full"));
    assert!(partial.contains("slow"), "X-Memento-Partial: {partial}");
    let (status, json) =
        result.unwrap_or_else(|| panic!("no /timemap/json/ curl line in {lines:?}"));
    assert_eq!(status, 200);
    let statuses: Vec<(String, String)> = json["archives"]
        .as_array()
        .expect("archives")
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap_or("").to_string(),
                o["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("slow".into(), "timeout".into())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("broken".into(), "error".into())),
        "{statuses:?}"
    );
    assert!(json["mementos"]["list"].as_array().map_or(0, Vec::len) >= 10);
}
