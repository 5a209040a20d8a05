//! Property tests over the HTTP routes: random paths under every route prefix and outside them,
//! percent-encodings, invalid UTF-8, random and huge header values and bodies, sent through an
//! HTTP client and as raw bytes on a socket. The archives behind the proxy always answer at
//! once (a TimeMap, a 404), so any 5xx is our bug; every 4xx carries a one-line reason; no
//! request hangs; and the server still answers /healthz afterwards.

use crate::support::{archive_config, start_proxy, Proxy};
use proptest::prelude::*;
use proptest::test_runner::{
    Config as RunnerConfig, FileFailurePersistence, RngAlgorithm, TestCaseError, TestRng,
    TestRunner,
};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "prop-admin-token";
/// Longer than any answer may take: the archives answer at once and the deadline is 5 s.
const HANG: Duration = Duration::from_secs(20);

const PREFIXES: &[&str] = &[
    "/timemap/link/",
    "/timemap/json/",
    "/timemap/cdxj/",
    "/timemap/xml/",
    "/timemap/",
    "/timemap",
    "/timegate/",
    "/memento/",
    "/memento/2003/",
    "/memento/20031301/",
    "/memento/json/2003/",
    "/memento/link/2003/",
    "/memento/cdxj/",
    "/memento/proxy/2003/",
    "/api/json/",
    "/api/json/20030101/",
    "/api/json/x/",
    "/api/link/2003/",
    "/api/proxy/",
    "/api/",
    "/admin/cache/",
    "/admin/stats",
    "/admin/clock",
    "/admin/sampling/jobs",
    "/admin/sampling/jobs/",
    "/admin/sampling/jobs/x/feed",
    "/admin/sampling/jobs/x/sample",
    "/metrics",
    "/healthz",
    "/ui/",
    "/ui?url=",
    "/ui/admin",
    "/",
    "//",
    "/nowhere/",
    "/%2e%2e/",
];

/// Characters a URL may hold, and some it may not.
const URL_CHARS: &str = "abcxyzABC019:/?#[]@!$&'()*+,;=._~%-{}|\\^`\" <>\u{e9}\u{4e2d}\u{1f600}";

const HEADER_NAMES: &[&str] = &[
    "accept-datetime",
    "prefer",
    "cache-control",
    "pragma",
    "if-none-match",
    "authorization",
    "accept",
    "origin",
    "access-control-request-method",
    "access-control-request-headers",
    "content-type",
    "x-forwarded-for",
    "x-random",
];

/// The proxy for one property: an archive with a TimeMap and one answering 404, an admin token,
/// a sampling input directory, on its own runtime so proptest's runner can drive it.
struct Rig {
    rt: tokio::runtime::Runtime,
    proxy: Option<Proxy>,
    _archives: Vec<SimulatedArchive>,
    _inputs: tempfile::TempDir,
    base: String,
    client: reqwest::Client,
}

impl Rig {
    fn new() -> Rig {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let inputs = tempfile::tempdir().expect("temp dir");
        let (proxy, archives) = rt.block_on(async {
            let a = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
                "20010101000000",
                "20050101000000",
            ])))
            .await
            .expect("archive");
            let b = SimulatedArchive::start(Behaviour::Status(404, "<html>none</html>".into()))
                .await
                .expect("archive");
            let mut config = tmproxy::config::Config::default();
            config.upstream.connect_timeout = Duration::from_secs(2);
            config.upstream.timeout = Duration::from_secs(5);
            config.upstream.deadline = Duration::from_secs(5);
            config.archives = vec![
                archive_config("a", &a.timemap_prefix(), &a.timegate_prefix()),
                archive_config("b", &b.timemap_prefix(), &b.timegate_prefix()),
            ];
            config.admin.token = TOKEN.into();
            config.sampling.input_dir = inputs.path().display().to_string();
            (start_proxy(config).await, vec![a, b])
        });
        let base = proxy.base.clone();
        // A fresh connection per request: a case must not fail for a connection an earlier
        // case left closing (hyper closes one whose request body went unread).
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .timeout(HANG)
            .build()
            .expect("client");
        Rig {
            rt,
            proxy: Some(proxy),
            _archives: archives,
            _inputs: inputs,
            base,
            client,
        }
    }

    fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    /// /healthz still answers: the server survived whatever came before.
    fn assert_healthy(&self) {
        let status = self.rt.block_on(async {
            self.client
                .get(format!("{}/healthz", self.base))
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        assert_eq!(status.ok(), Some(200), "/healthz after the property");
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(proxy) = self.proxy.take() {
            self.rt.block_on(proxy.stop());
        }
    }
}

/// The environment variable that replays a run: its seed is in every failure's message.
const SEED_VAR: &str = "TMPROXY_PROP_SEED";

/// This run's seed: `TMPROXY_PROP_SEED` when set (to replay a failure), otherwise a new one, so
/// each run explores new cases and any failure can still be replayed exactly.
fn seed() -> u64 {
    match std::env::var(SEED_VAR) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VAR}={v:?} is not a whole number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

/// A runner whose cases follow from `seed` alone (ChaCha, so the same seed draws the same
/// requests on every machine and proptest version).
fn runner(cases: u32, seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&seed.rotate_left(i as u32 * 16).to_le_bytes());
    }
    TestRunner::new_with_rng(
        RunnerConfig {
            cases,
            // A failing case's seed is kept in tests/proptest-regressions/ (commit it) and
            // tried first on every later run.
            failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
                "proptest-regressions",
            ))),
            source_file: Some(file!()),
            // Shrinking re-sends requests; keep a failing run short and its report readable.
            max_shrink_iters: 200,
            ..RunnerConfig::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

fn url_text(max: usize) -> impl Strategy<Value = String> {
    let chars: Vec<char> = URL_CHARS.chars().collect();
    prop::collection::vec(prop::sample::select(chars), 0..max).prop_map(|v| v.into_iter().collect())
}

/// `%XX` of arbitrary bytes (invalid UTF-8 among them), sometimes after an encoded scheme.
fn percent_text() -> impl Strategy<Value = String> {
    (
        prop::bool::ANY,
        prop::bool::ANY,
        prop::collection::vec(any::<u8>(), 0..24),
    )
        .prop_map(|(scheme, lower, bytes)| {
            let mut s = if scheme {
                "http%3A%2F%2F".to_string()
            } else {
                String::new()
            };
            for b in bytes {
                if lower {
                    s.push_str(&format!("%{b:02x}"));
                } else {
                    s.push_str(&format!("%{b:02X}"));
                }
            }
            s
        })
}

/// What follows a route prefix: nothing, a good URI-R, URL text, percent-encodings, any
/// Unicode, or something huge; sometimes with our `timeout` parameter.
fn tail() -> impl Strategy<Value = String> {
    let body = prop_oneof![
        Just(String::new()),
        prop::sample::select(vec![
            "http://example.com/",
            "example.com",
            "http:/example.com/",
            "https://example.com/a?b=c&d=e",
            "http%3A%2F%2Fexample.com%2F",
            "http://[::1]/",
            "http://user:pw@example.com:99999/",
            "mailto:x@example.com",
            "javascript:alert(1)",
            "http://",
            "http:///x",
            "20010101000000/http://example.com/",
            "http://example.com/..%2f..%2f..%2fcanary/x1",
            "http://example.com/%2e%2e%2F%2E%2e%5ccanary",
            "http://example.com/..%5C..;/..;x/canary",
            "http%3A%2F%2Fexample.com%2F..%252f%2e%2e;x%2Fcanary",
        ])
        .prop_map(str::to_string),
        url_text(80),
        percent_text(),
        prop::collection::vec(any::<char>(), 0..16).prop_map(|v| v.into_iter().collect()),
        (1usize..12_000).prop_map(|n| format!("http://example.com/{}", "a".repeat(n))),
    ];
    let timeout = prop_oneof![
        4 => Just(None),
        1 => prop::sample::select(vec!["0s", "5s", "1h", "10", "x", "", "99999999999999999999s", "1ms"])
            .prop_map(Some),
    ];
    (body, timeout).prop_map(|(body, timeout)| match timeout {
        None => body,
        Some(t) if body.contains('?') => format!("{body}&timeout={t}"),
        Some(t) => format!("{body}?timeout={t}"),
    })
}

/// A header value: empty, typical, random visible bytes (obs-text included), or huge.
fn header_value(name: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let typical: Vec<String> = match name {
        "accept-datetime" => vec![
            "Thu, 31 May 2007 20:35:00 GMT".into(),
            "Thu, 31 May 2007 20:35:00".into(),
            "2007-05-31".into(),
            "Mon, 99 Foo 9999 99:99:99 GMT".into(),
        ],
        "prefer" => vec![
            "wait=0".into(),
            "wait=5".into(),
            "wait=-1".into(),
            "wait=99999999999999999999".into(),
            "respond-async, wait=3".into(),
            "wait=".into(),
        ],
        "cache-control" | "pragma" => vec!["no-cache".into(), "max-age=0, no-cache".into()],
        "if-none-match" => vec!["*".into(), "\"abc\"".into(), "W/\"x\", \"y\"".into()],
        "authorization" => vec![
            format!("Bearer {TOKEN}"),
            format!("Bearer  {TOKEN} "),
            "Bearer".into(),
            "Basic Zm9vOmJhcg==".into(),
        ],
        "content-type" => vec!["application/json".into(), "text/plain".into()],
        _ => vec!["*".into(), "x".into()],
    };
    // Bytes a header value may hold: visible ASCII, space, tab and obs-text (0x80-0xFF).
    let allowed: Vec<u8> = (0x20u8..=0x7e).chain(0x80..=0xff).chain([b'\t']).collect();
    prop_oneof![
        Just(Vec::new()),
        prop::sample::select(typical).prop_map(String::into_bytes),
        prop::collection::vec(prop::sample::select(allowed), 0..64),
        (1usize..24_000).prop_map(|n| vec![b'v'; n]),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(&'static str, Vec<u8>)>> {
    let one = prop::sample::select(HEADER_NAMES.to_vec())
        .prop_flat_map(|name| header_value(name).prop_map(move |v| (name, v)));
    prop::collection::vec(one, 0..5)
}

fn method() -> impl Strategy<Value = reqwest::Method> {
    prop::sample::select(vec![
        "GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "BREW",
    ])
    .prop_map(|m| reqwest::Method::from_bytes(m.as_bytes()).expect("method"))
}

fn request_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => Just(Vec::new()),
        2 => prop::sample::select(vec![
            r#"{"now": "2012-05-01T00:00:00Z"}"#,
            r#"{"input": "index.txt", "cdx_api": "https://web.archive.org/cdx/search/cdx"}"#,
            r#"{"input": "../../etc/passwd", "cdx_api": "http://127.0.0.1:1/"}"#,
            r#"{"warm": true, "observe": "1d"}"#,
            "{", "null", "[]",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => (60_000usize..70_000).prop_map(|n| vec![b'{'; n]),
    ]
}

/// The response contract for a request a well-behaved HTTP client could send: no 5xx (but a
/// 504 when the client itself shortened the deadline: that is the documented answer), and a
/// 4xx is `text/plain` whose first line is the status and a reason; only a 404 for an aggregate
/// without mementos goes on, with one documented line per archive. The web pages (`page`) say
/// the same in HTML, a page whose heading is the status (or whose problem says why there is no
/// memento); what refuses a request before the page is reached (431) stays plain text. The
/// JSON routes (`json_route`) say it in JSON: `{"error": "<reason>", "archives": [...]}`.
/// How a route writes its 4xx: a web page, JSON, or text.
#[derive(PartialEq)]
enum Says {
    Page,
    Json,
    Text,
}

fn check_answer(
    what: &str,
    says: Says,
    method: &reqwest::Method,
    client_deadline: bool,
    status: u16,
    content_type: Option<&str>,
    body: &str,
) -> Result<(), TestCaseError> {
    prop_assert!(
        status < 500 || (status == 504 && client_deadline),
        "{what}: {status} {body}"
    );
    let html = content_type == Some("text/html; charset=utf-8");
    let page = says == Says::Page;
    if says == Says::Json && status >= 400 && method != reqwest::Method::HEAD {
        prop_assert_eq!(content_type, Some("application/json"), "{}: {}", what, body);
        check_json_error(what, body)?;
    } else if page && html && (400..500).contains(&status) && method != reqwest::Method::HEAD {
        let heading = format!("<h1>{status} ");
        prop_assert!(
            body.contains(&heading) || (status == 404 && body.contains("id=\"problem\"")),
            "{what}: {status} page without its status: {body:?}"
        );
    } else if (400..500).contains(&status) && method != reqwest::Method::HEAD {
        let mut lines = body.lines();
        let first = lines.next().unwrap_or("");
        prop_assert!(
            first.starts_with(&format!("{status} ")) && first.len() > 4,
            "{what}: {status} without a reason line: {body:?}"
        );
        let rest: Vec<&str> = lines.collect();
        prop_assert!(
            rest.is_empty() || (status == 404 && rest.iter().all(|l| l.contains(": "))),
            "{what}: {status} reason is not one line: {body:?}"
        );
        prop_assert_eq!(content_type, Some("text/plain; charset=utf-8"), "{}", what);
    }
    Ok(())
}

/// Whether the route at `path` (as sent) answers errors in JSON (docs/api.md, "Errors in the
/// route's format").
fn json_route(target: &str) -> bool {
    let path = target.split(['?', '#']).next().unwrap_or("");
    ["/timemap/json", "/memento/json", "/api/json"]
        .iter()
        .any(|r| path == *r || path.starts_with(&format!("{r}/")))
}

/// A JSON route's error body: one JSON object with a non-empty `error` and an `archives` list.
fn check_json_error(what: &str, body: &str) -> Result<(), TestCaseError> {
    let v: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| TestCaseError::fail(format!("{what}: error is not JSON ({e}): {body:?}")))?;
    prop_assert!(
        v["error"].as_str().is_some_and(|e| !e.is_empty()) && v["archives"].is_array(),
        "{what}: not an error object: {body:?}"
    );
    Ok(())
}

#[test]
fn random_requests_are_never_5xx_never_hang_and_4xx_say_why() {
    let rig = Rig::new();
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::<u16, u32>::new());
    let strategy = (
        method(),
        prop::sample::select(PREFIXES.to_vec()),
        tail(),
        headers(),
        request_body(),
    );
    let seed = seed();
    let result = runner(400, seed).run(&strategy, |(method, prefix, tail, headers, body)| {
        let url = format!("{}{prefix}{tail}", rig.base);
        // What the client library cannot even send is the raw-bytes property's business.
        let Ok(parsed) = reqwest::Url::parse(&url) else {
            return Ok(());
        };
        let path = parsed.path().to_owned();
        let mut req = rig.client.request(method.clone(), parsed);
        for (name, value) in &headers {
            let Ok(v) = reqwest::header::HeaderValue::from_bytes(value) else {
                return Ok(());
            };
            req = req.header(*name, v);
        }
        if !body.is_empty() {
            req = req.body(body.clone());
        }
        let what = format!(
            "{method} {} with {:?}",
            crate::routes_prop::clip(&url),
            headers
                .iter()
                .map(|(n, v)| (n, crate::routes_prop::clip(&String::from_utf8_lossy(v))))
                .collect::<Vec<_>>()
        );
        let answer = rig.rt.block_on(async {
            let resp = req.send().await?;
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, ct, text))
        });
        if let Ok((status, _, _)) = &answer {
            *seen.lock().expect("lock").entry(*status).or_default() += 1;
        }
        let (status, ct, text) = answer.map_err(|e| {
            TestCaseError::fail(format!("{what}: no answer ({e}); a hang if it timed out"))
        })?;
        let client_deadline =
            url.contains("timeout=") || headers.iter().any(|(n, _)| *n == "prefer");
        check_answer(
            &what,
            if prefix.starts_with("/ui") && method == reqwest::Method::GET {
                Says::Page
            } else if json_route(&path) {
                Says::Json
            } else {
                Says::Text
            },
            &method,
            client_deadline,
            status,
            ct.as_deref(),
            &text,
        )
    });
    if let Err(e) = result {
        panic!("{e}\nreplay with {SEED_VAR}={seed}");
    }
    rig.assert_healthy();
    eprintln!("reqwest statuses: {:?}", seen.lock().expect("lock"));
}

/// Mostly bytes a URL or header may hold, now and then any byte at all: a request that is
/// nearly well-formed reaches the routes, a broken one tests hyper's refusal.
fn raw_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let usual: Vec<u8> = (0x21u8..=0x7e).chain(0x80..=0xff).collect();
    let byte = prop_oneof![
        30 => prop::sample::select(usual),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..max)
}

/// A request as bytes on a socket: raw bytes (percent signs, obs-text, controls) in the target
/// and in header names and values, which no client library would send.
fn raw_request() -> impl Strategy<Value = Vec<u8>> {
    let target = (
        prop::sample::select(PREFIXES.to_vec()),
        prop_oneof![raw_bytes(80), tail().prop_map(String::into_bytes)],
    );
    let header = (
        prop_oneof![
            6 => prop::sample::select(HEADER_NAMES.to_vec()).prop_map(|n| n.as_bytes().to_vec()),
            1 => raw_bytes(12),
        ],
        raw_bytes(40),
    );
    (
        prop_oneof![
            12 => prop::sample::select(vec!["GET", "HEAD", "POST", "OPTIONS", "DELETE"]),
            1 => prop::sample::select(vec!["G\u{e9}T", "", "get", "BREW"]),
        ],
        target,
        prop::collection::vec(header, 0..4),
        prop_oneof![
            12 => Just("HTTP/1.1"),
            1 => prop::sample::select(vec!["HTTP/1.0", "HTTP/9.9", ""]),
        ],
    )
        .prop_map(|(method, (prefix, tail), headers, version)| {
            let mut r = Vec::new();
            r.extend_from_slice(method.as_bytes());
            r.push(b' ');
            r.extend_from_slice(prefix.as_bytes());
            r.extend_from_slice(&tail);
            r.push(b' ');
            r.extend_from_slice(version.as_bytes());
            r.extend_from_slice(b"\r\nHost: x\r\n");
            for (name, value) in headers {
                r.extend_from_slice(&name);
                r.extend_from_slice(b": ");
                r.extend_from_slice(&value);
                r.extend_from_slice(b"\r\n");
            }
            r.extend_from_slice(b"Connection: close\r\n\r\n");
            r
        })
}

#[test]
fn raw_bytes_are_never_5xx_and_never_hang() {
    let rig = Rig::new();
    let addr = rig.addr();
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::<u16, u32>::new());
    let seed = seed();
    let result = runner(300, seed).run(&raw_request(), |request| {
        let what = format!("{:?}", String::from_utf8_lossy(&request));
        let answer = rig.rt.block_on(async {
            let mut s = tokio::net::TcpStream::connect(&addr).await?;
            // The server may answer and close before reading it all: a failed write is fine.
            let _ = s.write_all(&request).await;
            // No half-close: hyper drops a request whose client shut its write side. Read
            // until the answer is complete or the server closes.
            tokio::time::timeout(HANG, read_answer(&mut s, request.starts_with(b"HEAD ")))
                .await
                .map_err(|_| std::io::Error::other("no complete answer: a hang"))?
        });
        let answer = answer.map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        let text = String::from_utf8_lossy(&answer);
        if std::env::var_os("PROP_DEBUG").is_some() {
            eprintln!("{what} -> {:?}", text.lines().next());
        }
        let status: u16 = text
            .strip_prefix("HTTP/1.1 ")
            .or_else(|| text.strip_prefix("HTTP/1.0 "))
            .and_then(|t| t.get(..3))
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| TestCaseError::fail(format!("{what}: no status line in {text:?}")))?;
        *seen.lock().expect("lock").entry(status).or_default() += 1;
        let client_deadline =
            what.contains("timeout=") || what.to_ascii_lowercase().contains("prefer:");
        prop_assert!(
            status < 500 || (status == 504 && client_deadline),
            "{what}: {text}"
        );
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let head_lower = head.to_ascii_lowercase();
        let ours = head_lower.contains("content-type: text/plain; charset=utf-8");
        // A JSON route's error is a JSON object (docs/api.md, "Errors in the route's format").
        let json = head_lower.contains("content-type: application/json");
        // A web page (`/ui…`) says the same in HTML: a page headed by its status.
        let page = head_lower.contains("content-type: text/html; charset=utf-8");
        if (400..500).contains(&status) && !request.starts_with(b"HEAD ") {
            if page {
                prop_assert!(
                    request.starts_with(b"GET /ui")
                        && (body.contains(&format!("<h1>{status} "))
                            || (status == 404 && body.contains("id=\"problem\""))),
                    "{what}: {status} page without its status: {body:?}"
                );
            } else if json && !body.is_empty() {
                let line = String::from_utf8_lossy(&request);
                let path = line.split(' ').nth(1).unwrap_or("");
                prop_assert!(json_route(path), "{what}: JSON error off a JSON route");
                check_json_error(&what, body)?;
            } else if body.is_empty() {
                // hyper refuses what it cannot parse before any route sees it, with no body.
                prop_assert!(
                    !ours && [400, 414, 431].contains(&status),
                    "{what}: {status} without a reason: {text:?}"
                );
            } else {
                let lines: Vec<&str> = body.trim_end().lines().collect();
                prop_assert!(
                    lines[0].starts_with(&format!("{status} "))
                        && (lines.len() == 1
                            || (status == 404 && lines[1..].iter().all(|l| l.contains(": ")))),
                    "{what}: {status} reason is not one line: {body:?}"
                );
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\nreplay with {SEED_VAR}={seed}");
    }
    rig.assert_healthy();
    eprintln!("raw statuses: {:?}", seen.lock().expect("lock"));
}

/// Reads one HTTP/1.1 answer: to the end of its head, then its `content-length` bytes (none
/// for a HEAD's answer or a 304), or to the end of a chunked body, or until the server closes.
/// Whatever follows the first answer (the answer to a pipelined second request) is dropped.
async fn read_answer(s: &mut tokio::net::TcpStream, head_only: bool) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let body = buf.len() - (end + 4);
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            let no_body = head.starts_with("http/1.1 304") || head.starts_with("http/1.1 1");
            if head_only || no_body {
                buf.truncate(end + 4);
                return Ok(buf);
            }
            if let Some(n) = length.filter(|&n| body >= n) {
                // A bare LF can end the head early, so the rest of the bytes are a second,
                // pipelined request whose answer may arrive in the same read: keep the first.
                buf.truncate(end + 4 + n);
                return Ok(buf);
            }
            if head.contains("transfer-encoding: chunked") && buf.ends_with(b"0\r\n\r\n") {
                return Ok(buf);
            }
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(buf);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A value cut for a failure message.
fn clip(s: &str) -> String {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}… ({} bytes)", &s[..end], s.len())
    } else {
        s.to_string()
    }
}

/// A failure's seed replays it: the same seed draws the same requests, another seed others.
#[test]
fn a_seed_replays_the_same_cases() {
    use proptest::strategy::ValueTree;
    let draw = |seed: u64| -> Vec<Vec<u8>> {
        let mut runner = runner(1, seed);
        (0..20)
            .map(|_| {
                raw_request()
                    .new_tree(&mut runner)
                    .map(|tree| tree.current())
                    .unwrap_or_default()
            })
            .collect()
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
}
