//! Hostile URIs through the real app: a URI-R that tries to climb out of an archive's prefix
//! (`..`, `%2e%2e`, backslashes, mixed), one that tries to forge links (`%3E`) or break lines
//! (`%0D%0A`, `%00`, `%09`), and an archive listing hostile URI-Ms. The fake archive records
//! every path it is asked; requests go out as raw bytes, because an HTTP client would resolve
//! the dot segments of our own request before the proxy ever saw them.

use crate::support::{config_for, serve_fake, start_proxy, Proxy};
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy::cache::entry::{Entry, ENTRY_FORMAT_VERSION};
use tmproxy::cache::store::Store;
use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution, ListedMemento};
use tmproxy::timemap::datetime::parse_14digit;
use tmproxy::timemap::parse::parse_link_format;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where the fake archive's TimeMaps live; everything else on it is the canary.
const PREFIX_PATH: &str = "/archive/timemap/link/";
/// Longer than any answer may take on two busy cores: it only proves "did not hang".
const HANG: Duration = Duration::from_secs(30);

/// A fake archive on 127.0.0.1:0 recording every path and query it is asked. Under
/// [`PREFIX_PATH`] it answers `body(uri_t)`; anywhere else a TimeMap of a canary memento, so a
/// request that climbed out would show in the answer as well as in the record.
struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    async fn start(body: fn(&str) -> String) -> Fake {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = seen.clone();
        let app = Router::new().fallback(move |uri: Uri| {
            let record = record.clone();
            async move {
                let target = uri.path_and_query().map_or("", |pq| pq.as_str()).to_string();
                record.lock().expect("record").push(target.clone());
                let text = if uri.path().starts_with(PREFIX_PATH) {
                    body(&target)
                } else {
                    "<http://canary.example/2001/x>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\"\n".to_string()
                };
                (
                    StatusCode::OK,
                    [("content-type", "application/link-format")],
                    text,
                )
                    .into_response()
            }
        });
        let (addr, task) = serve_fake(app).await;
        Fake {
            base: format!("http://{addr}"),
            seen,
            task,
        }
    }

    fn prefix(&self) -> String {
        format!("{}{PREFIX_PATH}", self.base)
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().expect("record"))
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Two good mementos, one absolute and one relative to the URI-T.
fn two_mementos(_uri_t: &str) -> String {
    "<http://good.example/web/20010101000000/x>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\",\n\
     </web/20050101000000/x>; rel=\"memento\"; datetime=\"Sat, 01 Jan 2005 00:00:00 GMT\"\n"
        .to_string()
}

async fn proxy_for(fake: &Fake) -> Proxy {
    let mut config = config_for(&[]);
    config.archives = vec![crate::support::archive_config(
        "fake",
        &fake.prefix(),
        &fake.prefix(),
    )];
    start_proxy(config).await
}

/// One answer read off the wire.
struct Raw {
    status: u16,
    head: String,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Vec<String> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
            .collect()
    }
}

/// `GET target` sent byte for byte (no client-side normalisation), with extra header lines.
async fn raw_get(base: &str, target: &str, extra: &str) -> Raw {
    let addr = base.trim_start_matches("http://");
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req =
            format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read");
        buf
    };
    let buf = tokio::time::timeout(HANG, exchange)
        .await
        .unwrap_or_else(|_| panic!("GET {target} hung"));
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"));
    let mut raw = Raw {
        status,
        head: head.to_string(),
        body: body.to_string(),
    };
    if raw
        .header("transfer-encoding")
        .iter()
        .any(|v| v.eq_ignore_ascii_case("chunked"))
    {
        raw.body = dechunk(&raw.body);
    }
    raw
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_r_never_climbs_out_of_the_archive_prefix() {
    let fake = Fake::start(two_mementos).await;
    let proxy = proxy_for(&fake).await;
    // (URI-R as sent, the path the archive must be asked for; None when hyper or we refuse the
    // request before any archive is asked). Each case has its own host: no cache hit hides one.
    let cases: Vec<(String, Option<String>)> = vec![
        (
            "http://h0.example/../../../../../canary/x",
            Some("http://h0.example/canary/x"),
        ),
        (
            "http://h1.example/a/b/../../../../../../canary/x",
            Some("http://h1.example/canary/x"),
        ),
        (
            "http://h2.example/%2e%2e/%2e%2e/%2e%2e/%2e%2e/canary/x",
            Some("http://h2.example/canary/x"),
        ),
        (
            "http://h3.example/%2E%2e/%2E%2e/%2E%2e/%2E%2e/canary",
            Some("http://h3.example/canary"),
        ),
        (
            "http://h4.example/.%2e/.%2E/%2e./%2E./canary",
            Some("http://h4.example/canary"),
        ),
        (
            "http://h5.example/a/./../%2e/..\\..\\.%2e\\canary\\x",
            Some("http://h5.example/canary/x"),
        ),
        (
            "http://h6.example\\..\\..\\..\\canary",
            Some("http://h6.example/canary"),
        ),
        (
            // Dots behind an encoded separator: refused (400), no archive asked.
            "http://h7.example/..%5C..%5C..%5Ccanary",
            None,
        ),
        ("http://h8.example/..%2f..%2f..%2fcanary", None),
        (
            "http://h9.example/../../canary?q=/../../..",
            Some("http://h9.example/canary?q=/../../.."),
        ),
        (
            "http%3A%2F%2Fh10.example%2F..%2F..%2F..%2Fcanary",
            Some("http://h10.example/canary"),
        ),
        (
            "http%3A%2F%2Fh11.example%5C..%5C..%5Ccanary%5Cx",
            Some("http://h11.example/canary/x"),
        ),
        (
            "http%3A%2F%2Fh12.example%2F%252e%252e%2F%252e%252e%2Fcanary",
            Some("http://h12.example/canary"),
        ),
        (
            "h13.example/../../../canary",
            Some("http://h13.example/canary"),
        ),
        (
            "http:/h14.example/%2e%2e/%2e%2e/canary",
            Some("http://h14.example/canary"),
        ),
        ("http://../../../../canary", None),
        ("http://%2e%2e/%2e%2e/%2e%2e/canary", None),
    ]
    .into_iter()
    .map(|(u, p)| (u.to_string(), p.map(|p| format!("{PREFIX_PATH}{p}"))))
    .collect();
    let mut asked = 0;
    for (ri, route) in ["/timemap/link/", "/timemap/json/", "/timegate/"]
        .into_iter()
        .enumerate()
    {
        for (i, (uri_r, want)) in cases.iter().enumerate() {
            // A fresh host per route too, so each request reaches the archive.
            let (from, to) = (format!("h{i}."), format!("h{i}r{ri}."));
            let uri_r = uri_r.replacen(&from, &to, 1);
            let want = want.as_ref().map(|w| w.replacen(&from, &to, 1));
            let r = raw_get(&proxy.base, &format!("{route}{uri_r}"), "").await;
            let seen = fake.take();
            assert!(r.status < 500, "{route}{uri_r}: {} {}", r.status, r.body);
            for path in &seen {
                assert!(
                    path.starts_with(PREFIX_PATH),
                    "{route}{uri_r} made the archive receive {path}"
                );
            }
            assert!(
                !r.body.contains("canary.example") && !r.head.contains("canary.example"),
                "{route}{uri_r} served the canary: {}",
                r.body
            );
            if let Some(want) = want {
                assert_eq!(seen, [want], "{route}{uri_r}");
                assert!(
                    matches!(r.status, 200 | 302),
                    "{route}{uri_r}: {}",
                    r.status
                );
                asked += 1;
            }
        }
    }
    assert!(asked >= 39, "only {asked} cases reached the archive");
    // The dot-resolved URI-R is what is echoed (and the cache key): two spellings, one entry.
    let r = raw_get(
        &proxy.base,
        "/timemap/link/http://h0r0.example/a/../canary/./x",
        "",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-cache"), ["HIT"], "{}", r.head);
    assert!(r
        .body
        .starts_with("<http://h0r0.example/canary/x>; rel=\"original\""));
    assert!(fake.take().is_empty());
    proxy.stop().await;
}

/// The `%3E` forgery: a URI-R closing its own `<…>` and opening a forged link.
const FORGED: &str = "http%3A%2F%2Fe.com%2Finj%3E%3B%20rel%3D%22memento%22%3B%20datetime%3D%22Mon%2C%2001%20Jan%202001%2000%3A00%3A00%20GMT%22%2C%20%3Chttps%3A%2F%2Fevil.example%2Fphish";

/// Link-format text (a body or a Link header) read back with our own parser: exactly one
/// `original`, the two real mementos and nothing else, no link to evil.example.
fn assert_one_link_each(text: &str, fake: &Fake) {
    let back = parse_link_format(text, "http://proxy.test/");
    assert_eq!(back.skipped, 0, "{text}");
    assert_eq!(text.matches("rel=\"original\"").count(), 1, "{text}");
    assert!(
        back.original
            .as_deref()
            .is_some_and(|o| o.starts_with("http://e.com/inj%3E")),
        "{text}"
    );
    let uris: Vec<&str> = back.mementos.iter().map(|m| &*m.uri_m).collect();
    assert_eq!(
        uris,
        [
            "http://good.example/web/20010101000000/x".to_string(),
            format!("{}/web/20050101000000/x", fake.base)
        ],
        "{text}"
    );
    assert!(!text.contains("<https://evil.example"), "{text}");
    assert!(
        back.pages
            .iter()
            .all(|p| p.uri.starts_with("http://127.0.0.1:")),
        "{text}"
    );
    assert!(
        !text.contains(|c: char| c.is_control() && c != '\n'),
        "{text:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_r_cannot_forge_links_or_break_lines() {
    let fake = Fake::start(two_mementos).await;
    let proxy = proxy_for(&fake).await;

    let r = raw_get(&proxy.base, &format!("/timegate/{FORGED}"), "").await;
    assert_eq!(r.status, 302, "{}", r.body);
    let link = r.header("link").join(", ");
    assert_one_link_each(&link, &fake);
    let location = r.header("location");
    assert_eq!(location.len(), 1, "{}", r.head);
    assert!(location[0].starts_with(&fake.base), "{location:?}");

    let r = raw_get(&proxy.base, &format!("/timemap/link/{FORGED}"), "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-cache"), ["HIT"]);
    assert_one_link_each(&r.body, &fake);
    assert_eq!(r.body.lines().count(), 7, "one link per line:\n{}", r.body);

    let r = raw_get(&proxy.base, &format!("/timemap/json/{FORGED}"), "").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).expect("valid JSON");
    let forged = percent_encoding::percent_decode_str(FORGED)
        .decode_utf8()
        .expect("utf-8");
    assert_eq!(v["original_uri"], forged.as_ref());
    assert!(v["timegate_uri"]
        .as_str()
        .is_some_and(|t| !t.contains(['<', '>', '"', ' '])));
    let r = raw_get(&proxy.base, &format!("/timemap/cdxj/{FORGED}"), "").await;
    assert_eq!(r.body.lines().filter(|l| !l.starts_with('!')).count(), 2);
    assert_eq!(
        fake.take().len(),
        1,
        "asked once, then served from the cache"
    );

    // A control character once decoded: 400 with a reason, no archive asked, nothing cached.
    let store = proxy
        .state
        .as_ref()
        .and_then(|s| s.cache.store())
        .expect("a store");
    for (encoded, decoded) in [
        (
            "http%3A%2F%2Fe.com%2Fa%0D%0ASet-Cookie%3A%20x%3D1",
            "http://e.com/a\r\nSet-Cookie: x=1",
        ),
        ("http%3A%2F%2Fe.com%2Fa%00b", "http://e.com/a\0b"),
        ("http%3A%2F%2Fe.com%2Fa%09b", "http://e.com/a\tb"),
        (
            "http%3A%2F%2Fe.com%2F.%09.%2F.%09.%2Fcanary",
            "http://e.com/.\t./.\t./canary",
        ),
    ] {
        for route in [
            "/timemap/link/",
            "/timegate/",
            "/timemap/json/",
            "/memento/2001/",
        ] {
            let r = raw_get(&proxy.base, &format!("{route}{encoded}"), "").await;
            assert_eq!(r.status, 400, "{route}{encoded}: {}", r.body);
            assert!(r.body.contains("control character"), "{}", r.body);
            assert!(!r.body.contains(['\r', '\0', '\t']), "{:?}", r.body);
            assert!(r.header("x-cache").is_empty());
        }
        // Under its exact text or its canonical key (`[cache] canonical`, the default).
        // (It is no URI-R, so its key is the one the cache would make of its text.)
        let canonical = tmproxy_core::surt::canonical_key(decoded);
        for key in [
            decoded.to_string(),
            canonical.unwrap_or_else(|| decoded.to_string()),
        ] {
            assert!(
                store.get(&key).await.is_none(),
                "{decoded:?} cached as {key:?}"
            );
        }
    }
    assert!(fake.take().is_empty(), "an archive was asked");
    proxy.stop().await;
}

/// An archive listing hostile URI-Ms among good ones, each at its own year.
fn hostile_mementos(_uri_t: &str) -> String {
    let d = |y: u32| format!("datetime=\"Mon, 01 Jan {y} 00:00:00 GMT\"");
    [
        format!(
            "<http://good.example/web/2001/x>; rel=\"memento\"; {}",
            d(2001)
        ),
        format!("<javascript:alert(1)>; rel=\"memento\"; {}", d(2002)),
        format!("</web/2003/x>; rel=\"memento\"; {}", d(2003)),
        format!(
            "<data:text/html;base64,PHNjcmlwdD4=>; rel=\"memento\"; {}",
            d(2004)
        ),
        format!("<http://good.example/nul\0x>; rel=\"memento\"; {}", d(2005)),
        format!("<http://good.example/cr\rx>; rel=\"memento\"; {}", d(2006)),
        format!("<http://good.example/lf\nx>; rel=\"memento\"; {}", d(2007)),
        format!("<http://good.example/tab\tx>; rel=\"memento\"; {}", d(2008)),
        format!("<http://good.example/sp ace>; rel=\"memento\"; {}", d(2009)),
        format!("<http://good.example/gt>x>; rel=\"memento\"; {}", d(2010)),
        format!(
            "<http://good.example/q\"uote>; rel=\"memento\"; {}",
            d(2011)
        ),
        format!(
            "<JavaScript://good.example/%0Aalert(1)>; rel=\"memento\"; {}",
            d(2012)
        ),
        format!("<http:///nohost>; rel=\"memento\"; {}", d(2013)),
    ]
    .join(",\n")
}

/// Every year a TimeGate is asked at, and the answer: a 302 whose one Location is http(s).
async fn assert_timegate_locations_are_http(proxy: &Proxy, uri_r: &str) -> Vec<String> {
    let mut locations = Vec::new();
    for year in 2000..=2014 {
        let r = raw_get(
            &proxy.base,
            &format!("/timegate/{uri_r}"),
            &format!("Accept-Datetime: Mon, 01 Jan {year} 00:00:00 GMT\r\n"),
        )
        .await;
        assert_eq!(r.status, 302, "{year}: {}", r.body);
        let location = r.header("location");
        assert_eq!(
            location.len(),
            1,
            "{year}: a 302 without one Location: {}",
            r.head
        );
        assert!(
            location[0].starts_with("http://") || location[0].starts_with("https://"),
            "{year}: {location:?}"
        );
        locations.push(location[0].clone());
    }
    locations
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_uri_ms_are_skipped_and_never_a_location() {
    let fake = Fake::start(hostile_mementos).await;
    let proxy = proxy_for(&fake).await;
    let r = raw_get(&proxy.base, "/timemap/json/http://e.com/", "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).expect("JSON");
    assert_eq!(
        crate::support::memento_uris(&v),
        [
            "http://good.example/web/2001/x".to_string(),
            format!("{}/web/2003/x", fake.base),
            "http://good.example/sp%20ace".to_string(),
            "http://good.example/q%22uote".to_string(),
        ]
    );
    let outcome = crate::support::outcome(&v, "fake");
    assert_eq!(outcome["skipped"], 9, "{outcome}");
    assert_eq!(outcome["status"], "ok");

    let locations = assert_timegate_locations_are_http(&proxy, "http://e.com/").await;
    assert!(locations
        .iter()
        .any(|l| l == "http://good.example/q%22uote"));
    let r = raw_get(&proxy.base, "/timemap/link/http://e.com/", "").await;
    let back = parse_link_format(&r.body, "http://proxy.test/");
    assert_eq!(back.mementos.len(), 4);
    assert_eq!(back.skipped, 0);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_uri_m_cached_before_is_never_served() {
    let fake = Fake::start(two_mementos).await;
    let proxy = proxy_for(&fake).await;
    let at = |ts: &str| parse_14digit(ts).expect("timestamp");
    let memento = |uri_m: &str, ts: &str| ListedMemento {
        uri_m: uri_m.into(),
        datetime: at(ts),
        absent: None,
    };
    // As an older tmproxy (which kept every URI-M) may have written it: fresh for good.
    let entry = Entry {
        version: ENTRY_FORMAT_VERSION,
        uri_r: "http://old.example/".to_string(),
        contributions: vec![Contribution {
            archive: "fake".to_string(),
            answer: ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None),
            fetched_at: at("20240101"),
            mementos: vec![
                memento("http://good.example/2001/x", "2001"),
                memento("javascript:alert(1)", "2002"),
                memento("http://good.example/nul\0x", "2003"),
                memento("data:text/html,x", "2004"),
                memento("http://good.example/2005/x", "2005"),
            ],
            last_error: None,
            listing: Default::default(),
        }],
        fetched_at: chrono::Utc::now(),
        checked_at: chrono::Utc::now(),
        fresh_until: None,
        loose: 5,
        strict: 5,
        archives: 1,
        history: Default::default(),
    };
    proxy.store_entry("http://old.example/", entry).await;
    let locations = assert_timegate_locations_are_http(&proxy, "http://old.example/").await;
    assert!(locations
        .iter()
        .all(|l| l.starts_with("http://good.example/")));
    let r = raw_get(&proxy.base, "/timemap/link/http://old.example/", "").await;
    assert_eq!(r.header("x-cache"), ["HIT"]);
    let back = parse_link_format(&r.body, "http://proxy.test/");
    let uris: Vec<&str> = back.mementos.iter().map(|m| &*m.uri_m).collect();
    assert_eq!(
        uris,
        ["http://good.example/2001/x", "http://good.example/2005/x"]
    );
    let asked = fake.take();
    assert!(
        asked.is_empty(),
        "served from the cache, yet asked {asked:?}"
    );
    proxy.stop().await;
}

/// A URI-R holding U+2028, U+2029 or U+0085 (percent-encoded, so decoded into the URI-R): no
/// CDXJ or JSON answer carries one raw (a reader splitting lines on them would see a forged
/// `!meta` line), and CDXJ holds exactly one `original_uri` line. U+0085 is a C1 control, so
/// its URI-R is refused (400), with no raw one in the error either.
#[tokio::test]
async fn line_separators_in_a_uri_r_never_split_a_cdxj_or_json_line() {
    use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
    let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let proxy = start_proxy(crate::support::config_for(&[("a", &a)])).await;
    let client = crate::support::client();
    let raw_separators = [
        '\u{2028}', '\u{2029}', '\u{85}', '\n', '\r', '\u{b}', '\u{c}',
    ];
    for (encoded, served) in [("%E2%80%A8", true), ("%E2%80%A9", true), ("%C2%85", false)] {
        // The rest of the line would be a forged metadata line if the separator stayed raw.
        let forged = "!meta%20%7B%22forged%22%3A%201%7D";
        let uri_r = format!("http%3A%2F%2Fexample.com%2Fa{encoded}{forged}");
        for format in ["cdxj", "json"] {
            let url = format!("{}/timemap/{format}/{uri_r}", proxy.base);
            let r = client.get(&url).send().await.expect("request");
            let status = r.status().as_u16();
            let text = r.text().await.expect("body");
            assert_eq!(status == 200, served, "{encoded} {format}: {status} {text}");
            for raw in raw_separators {
                assert!(
                    !text.trim_end_matches('\n').contains(raw) || raw == '\n' && format == "cdxj",
                    "{encoded} {format}: raw {raw:?} in {text:?}"
                );
            }
            if format == "cdxj" && served {
                let splitter = |c: char| raw_separators.contains(&c);
                let metas: Vec<&str> = text
                    .split(splitter)
                    .filter(|l| l.starts_with("!meta {\"original_uri\""))
                    .collect();
                assert_eq!(metas.len(), 1, "{text:?}");
                assert!(!text
                    .split(splitter)
                    .any(|l| l.starts_with("!meta {\"forged\"")));
                // Parsed, the escape gives the URI-R back as it was.
                let meta: serde_json::Value =
                    serde_json::from_str(&metas[0]["!meta ".len()..]).expect("JSON");
                let decoded = percent_encoding::percent_decode_str(encoded)
                    .decode_utf8()
                    .expect("utf-8");
                assert!(meta["original_uri"]
                    .as_str()
                    .expect("uri")
                    .contains(&*decoded));
            }
            if format == "json" && served {
                let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                assert!(doc["original_uri"].as_str().expect("uri").contains("/a"));
            }
        }
    }
}
