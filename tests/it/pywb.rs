//! Real pywb archives as upstreams for integration tests, and tests pinning how pywb behaves.
//!
//! `PywbArchive::start` builds a one-collection pywb root in a temp dir (WARC written with
//! warcio by `tests/fixtures/pywb_collection.py`, indexed by pywb's own collection manager)
//! and runs `wayback -b 127.0.0.1 -p PORT` on it. The venv comes from `bash scripts/test.sh`
//! (`$TMPROXY_PYWB_VENV`, else `$CARGO_MANIFEST_DIR/.venv`). Starting one costs ~2.5 s, mostly
//! Python imports, so tests start the archives they need in parallel with `start_all`.
//!
//! # What pywb 2.10.0 does (observed here, pinned by the tests below)
//!
//! URL forms, for collection `COLL` served at `http://127.0.0.1:PORT`:
//! - TimeMap (link format): `http://127.0.0.1:PORT/COLL/timemap/link/URI-R`. The URI-R is
//!   appended raw, query string and all (`.../timemap/link/http://example.com/page?x=1&y=2`
//!   works). `timemap/json/` and `timemap/cdxj/` give pywb's CDX lines instead.
//! - TimeGate: `http://127.0.0.1:PORT/COLL/URI-R`, closest memento to `Accept-Datetime`
//!   (latest when the header is absent).
//! - Memento: `http://127.0.0.1:PORT/COLL/YYYYMMDDhhmmssmp_/URI-R` (the form the TimeMap lists;
//!   the page is rewritten and wrapped for replay) or `.../YYYYMMDDhhmmssid_/URI-R` (the
//!   archived bytes as captured). A 14-digit timestamp with no captured match there answers
//!   307 to the exact one.
//!
//! A TimeMap request answers 200 directly (no redirect), `Content-Type: application/link-format`,
//! `Vary: accept-datetime`, and a `Link` header with original/timegate/timemap. Sample body,
//! byte for byte, for two captures of `http://example.com/` in collection `a` (the body ends in
//! a newline; `from` but no `until` on `self`; every memento carries `collection="a"`):
//!
//! ```text
//! <http://127.0.0.1:18651/a/timemap/link/http://example.com/>; rel="self"; type="application/link-format"; from="Wed, 01 Jan 2020 12:00:00 GMT",
//! <http://127.0.0.1:18651/a/http://example.com/>; rel="timegate",
//! <http://example.com/>; rel="original",
//! <http://127.0.0.1:18651/a/20200101120000mp_/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 12:00:00 GMT"; collection="a",
//! <http://127.0.0.1:18651/a/20210615083000mp_/http://example.com/>; rel="memento"; datetime="Tue, 15 Jun 2021 08:30:00 GMT"; collection="a"
//! ```
//!
//! Surprises an aggregator must allow for:
//! - A URI-R with no captures: the TimeMap answers **404 with an empty body** (still
//!   `Content-Type: application/link-format`); the TimeGate answers 404 with an HTML
//!   "URL Not Found" page.
//! - **The TimeMap honours `Accept-Datetime`** as a lower bound: only mementos at or after it
//!   are listed, and `from` moves with it; none left gives the 404 above. So never forward
//!   `Accept-Datetime` on a TimeMap request.
//! - URI-Rs are matched by SURT: `example.com`, `http://example.com`, `https://example.com/`,
//!   `http://www.example.com/`, `http://EXAMPLE.com/`, `http://example.com:80/` all list the
//!   captures of `http://example.com/`. The `original`, `self` and `timegate` links echo the URI-R
//!   as requested; memento links use the captured URL.
//! - TimeGate status depends on config. With pywb's defaults (no `config.yaml`) it answers
//!   **200** with a framed-replay HTML page, no `Location`, and the chosen memento only in the
//!   `Link` header. With `redirect_to_exact: true` (what `start` uses, because a Memento
//!   aggregator expects a redirecting TimeGate) it answers **307 Temporary Redirect**,
//!   `Location: http://127.0.0.1:PORT/COLL/YYYYMMDDhhmmss/URI-R` (no `mp_`: the framed page),
//!   empty body, `Vary: accept-datetime`, and a `Link` header whose memento entry has the
//!   datetime. An unparsable `Accept-Datetime` gets 400.
//! - `wayback` needs ~1.3 s to exit on SIGTERM, so `stop` sends SIGKILL (`Child::kill`).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// One archived response: `url` captured at `timestamp` (14 digits, UTC) with an HTML `body`.
#[derive(Clone, Debug)]
pub struct Capture {
    pub url: String,
    /// `YYYYMMDDhhmmss`, UTC; becomes the WARC-Date and so the memento's datetime.
    pub timestamp: String,
    pub body: String,
}

impl Capture {
    pub fn new(url: &str, timestamp: &str, body: &str) -> Capture {
        Capture {
            url: url.to_owned(),
            timestamp: timestamp.to_owned(),
            body: body.to_owned(),
        }
    }
}

/// `config.yaml` for `start`: makes the TimeGate redirect (307) like a Memento TimeGate should,
/// instead of pywb's default 200 framed page.
pub const REDIRECTING_CONFIG: &str = "redirect_to_exact: true\n";

/// How long a `wayback` may take to answer HTTP. It takes ~2 s alone; generous because the
/// two cores are shared with parallel tests and other developers.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running pywb serving one collection on 127.0.0.1. Killed on `stop` or drop, so a
/// panicking test leaves no process behind.
pub struct PywbArchive {
    child: Option<Child>,
    port: u16,
    collection: String,
    // Holds the collection, config and logs; removed on drop, after the process is gone.
    dir: TempDir,
}

impl PywbArchive {
    /// Start pywb with `captures` in `collection`, TimeGate redirecting (see `REDIRECTING_CONFIG`).
    pub fn start(collection: &str, captures: &[Capture]) -> PywbArchive {
        PywbArchive::start_with_config(collection, captures, REDIRECTING_CONFIG)
    }

    /// Like `start` with the given `config.yaml` text; `""` means pywb's own defaults.
    pub fn start_with_config(collection: &str, captures: &[Capture], config: &str) -> PywbArchive {
        launch(&venv_dir(), collection, captures, config, None)
    }

    /// The same collection with its CDXJ index turned into a ZipNum cluster (gzip blocks of
    /// `block_lines` lines, a `.idx` secondary index and a `.loc` file), which is how pywb serves
    /// a paged CDX API (`showNumPages`, `page`).
    pub fn start_zipnum(collection: &str, captures: &[Capture], block_lines: usize) -> PywbArchive {
        launch(
            &venv_dir(),
            collection,
            captures,
            REDIRECTING_CONFIG,
            Some(block_lines),
        )
    }

    /// Start several archives at once; pywb's start-up is mostly Python imports, so this halves
    /// the wait for two. If any fails, the others are stopped and the first panic goes on.
    pub fn start_all(specs: &[(&str, &[Capture])]) -> Vec<PywbArchive> {
        let results: Vec<std::thread::Result<PywbArchive>> = std::thread::scope(|s| {
            let handles: Vec<_> = specs
                .iter()
                .map(|&(coll, caps)| s.spawn(move || PywbArchive::start(coll, caps)))
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut archives = Vec::with_capacity(results.len());
        let mut failure = None;
        for result in results {
            match result {
                Ok(archive) => archives.push(archive),
                Err(panic) => failure = failure.or(Some(panic)),
            }
        }
        if let Some(panic) = failure {
            drop(archives);
            std::panic::resume_unwind(panic);
        }
        archives
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Append a URI-R to get its link-format TimeMap.
    pub fn timemap_prefix(&self) -> String {
        format!("{}/{}/timemap/link/", self.base_url(), self.collection)
    }

    /// Append a URI-R to get its TimeGate.
    pub fn timegate_prefix(&self) -> String {
        format!("{}/{}/", self.base_url(), self.collection)
    }

    /// Kill the process by its PID and reap it; the port is closed when this returns.
    /// Idempotent.
    /// The collection's `indexes/` folder (a ZipNum collection's `cluster.idx` is there).
    pub fn indexes_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("collections")
            .join(&self.collection)
            .join("indexes")
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL: wayback lingers ~1.3 s on SIGTERM and holds no state worth flushing.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("wayback.log")
    }
}

impl Drop for PywbArchive {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `$TMPROXY_PYWB_VENV`, else the repo's `.venv` (where `scripts/test.sh` puts it).
/// The test venv's Python (pywb, warcio, py-memento-client), for tests that run a Python
/// Memento client against the proxy.
pub fn venv_python() -> PathBuf {
    venv_dir().join("bin").join("python")
}

fn venv_dir() -> PathBuf {
    match std::env::var_os("TMPROXY_PYWB_VENV") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"),
    }
}

fn launch(
    venv: &Path,
    collection: &str,
    captures: &[Capture],
    config: &str,
    zipnum_block_lines: Option<usize>,
) -> PywbArchive {
    let python = venv.join("bin/python");
    let wayback = venv.join("bin/wayback");
    if !python.exists() || !wayback.exists() {
        panic!(
            "pywb not installed: run bash scripts/test.sh (no {} or {})",
            python.display(),
            wayback.display()
        );
    }

    let dir = tempfile::Builder::new()
        .prefix("tmproxy-pywb-")
        .tempdir()
        .expect("create temp dir for pywb");
    build_collection(&python, dir.path(), collection, captures);
    if let Some(lines) = zipnum_block_lines {
        to_zipnum(
            &dir.path()
                .join("collections")
                .join(collection)
                .join("indexes"),
            lines,
        );
    }
    if !config.is_empty() {
        std::fs::write(dir.path().join("config.yaml"), config).expect("write config.yaml");
    }
    // pywb serves DIR/static/ at /static/; the temp dir's unique path proves which server
    // answers, should another process win a race for our port.
    let token = dir.path().display().to_string();
    std::fs::write(dir.path().join("static/tmproxy-instance.txt"), &token)
        .expect("write instance token");

    let mut archive = PywbArchive {
        child: None,
        port: 0,
        collection: collection.to_owned(),
        dir,
    };
    // The port is free when we look but could be taken before wayback binds it: retry then.
    for _attempt in 0..5 {
        archive.port = free_port();
        let log = std::fs::File::create(archive.log_path()).expect("create wayback.log");
        let child = Command::new(&wayback)
            .args(["-b", "127.0.0.1", "-p", &archive.port.to_string()])
            .current_dir(archive.dir.path())
            .stdin(Stdio::null())
            // To a file, not a pipe: pywb logs every request and would block on a full pipe.
            .stdout(log.try_clone().expect("clone log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", wayback.display()));
        archive.child = Some(child);
        match wait_ready(&mut archive, &token) {
            Ok(()) => return archive,
            Err(exit) => {
                let log = std::fs::read_to_string(archive.log_path()).unwrap_or_default();
                if log.contains("Address already in use") {
                    archive.stop();
                    continue;
                }
                // Dropping `archive` on this panic kills the process if it still runs.
                panic!(
                    "pywb on 127.0.0.1:{} did not come up ({exit}); its output:\n{log}",
                    archive.port
                );
            }
        }
    }
    panic!("pywb: lost the race for a free port 5 times");
}

/// Replaces `indexes/index.cdxj` by a ZipNum cluster: `blocks/cluster.cdxj.gz` (one gzip member
/// per block), `cluster.idx` (`first key\tpart\toffset\tlength\tlineno` per block) and
/// `cluster.loc` (`part\tpath`).
fn to_zipnum(indexes: &Path, block_lines: usize) {
    use flate2::write::GzEncoder;
    let cdxj = indexes.join("index.cdxj");
    let text = std::fs::read_to_string(&cdxj).expect("read index.cdxj");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    std::fs::create_dir_all(indexes.join("blocks")).expect("mkdir blocks");
    let (mut blocks, mut idx) = (Vec::new(), String::new());
    for (n, chunk) in lines.chunks(block_lines.max(1)).enumerate() {
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        for l in chunk {
            gz.write_all(l.as_bytes()).expect("gzip");
            gz.write_all(b"\n").expect("gzip");
        }
        let member = gz.finish().expect("gzip");
        // The block's key is the first line's `SURT timestamp`.
        let key: Vec<&str> = chunk[0].splitn(3, ' ').take(2).collect();
        idx.push_str(&format!(
            "{}\tcluster\t{}\t{}\t{}\n",
            key.join(" "),
            blocks.len(),
            member.len(),
            n + 1
        ));
        blocks.extend(member);
    }
    std::fs::write(indexes.join("blocks/cluster.cdxj.gz"), blocks).expect("write blocks");
    std::fs::write(indexes.join("cluster.idx"), idx).expect("write idx");
    std::fs::write(
        indexes.join("cluster.loc"),
        "cluster\tblocks/cluster.cdxj.gz\n",
    )
    .expect("write loc");
    std::fs::remove_file(cdxj).expect("remove index.cdxj");
}

/// Write the WARC and the pywb collection layout into `dir` via the Python fixture.
fn build_collection(python: &Path, dir: &Path, collection: &str, captures: &[Capture]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pywb_collection.py");
    let json = serde_json::Value::Array(
        captures
            .iter()
            .map(|c| {
                serde_json::json!({
                    "url": c.url, "timestamp": c.timestamp, "body": c.body, "mime": "text/html",
                })
            })
            .collect(),
    );
    let mut child = Command::new(python)
        .arg(&script)
        .arg(dir)
        .arg(collection)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin piped")
        .write_all(json.to_string().as_bytes())
        .expect("send captures to pywb_collection.py");
    let out = child.wait_with_output().expect("run pywb_collection.py");
    if !out.status.success() {
        panic!(
            "pywb_collection.py failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A port the kernel just handed out on 127.0.0.1, released for wayback to bind.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Poll until this archive's wayback serves its instance token. `Err` says why not: the process
/// exited (status) or the deadline passed.
fn wait_ready(archive: &mut PywbArchive, token: &str) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let child = archive.child.as_mut().expect("child just spawned");
    loop {
        if let Some(status) = child.try_wait().expect("poll wayback") {
            return Err(format!("exited early with {status}"));
        }
        if raw_get(archive.port, "/static/tmproxy-instance.txt").is_some_and(|r| r.ends_with(token))
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("no answer within {READY_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Minimal blocking HTTP/1.0 GET, enough for the readiness probe (reqwest here is async only).
fn raw_get(port: u16, path: &str) -> Option<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut request = String::new();
    write!(
        request,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.starts_with("HTTP/1.").then_some(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, VARY};
    use reqwest::StatusCode;

    const EXAMPLE: &str = "http://example.com/";

    /// Overlap on purpose: both hold example.com at 2021-06-15 08:30, each has one of its own.
    fn alpha_captures() -> Vec<Capture> {
        vec![
            Capture::new(
                EXAMPLE,
                "20200101120000",
                "<html><body>alpha 2020</body></html>",
            ),
            Capture::new(
                EXAMPLE,
                "20210615083000",
                "<html><body>alpha 2021</body></html>",
            ),
            Capture::new(
                "http://example.org/only-alpha?q=1&r=2",
                "20190101000000",
                "only alpha",
            ),
        ]
    }

    fn beta_captures() -> Vec<Capture> {
        vec![
            Capture::new(
                EXAMPLE,
                "20210615083000",
                "<html><body>beta 2021</body></html>",
            ),
            Capture::new(
                EXAMPLE,
                "20230310101010",
                "<html><body>beta 2023</body></html>",
            ),
        ]
    }

    /// Redirects off: the tests pin pywb's own status codes and Locations.
    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .build()
            .expect("build reqwest client")
    }

    fn header(resp: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> String {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().expect("ASCII header").to_owned())
            .unwrap_or_default()
    }

    async fn get(url: &str, accept_datetime: Option<&str>) -> reqwest::Response {
        let mut req = client().get(url);
        if let Some(dt) = accept_datetime {
            req = req.header("Accept-Datetime", dt);
        }
        req.send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
    }

    /// The TimeMap body pywb writes, byte for byte (see the module doc).
    fn expected_timemap(archive: &PywbArchive, uri_r: &str, mementos: &[(&str, &str)]) -> String {
        let coll = &archive.collection;
        let mut body = format!(
            "<{tm}{uri_r}>; rel=\"self\"; type=\"application/link-format\"; from=\"{from}\",\n\
             <{tg}{uri_r}>; rel=\"timegate\",\n\
             <{uri_r}>; rel=\"original\",\n",
            tm = archive.timemap_prefix(),
            tg = archive.timegate_prefix(),
            from = mementos[0].1,
        );
        let lines: Vec<String> = mementos
            .iter()
            .map(|(ts, dt)| {
                format!(
                    "<{base}/{coll}/{ts}mp_/{uri_r}>; rel=\"memento\"; datetime=\"{dt}\"; collection=\"{coll}\"",
                    base = archive.base_url()
                )
            })
            .collect();
        body.push_str(&lines.join(",\n"));
        body.push('\n');
        body
    }

    #[tokio::test]
    async fn two_archives_serve_overlapping_timemaps() {
        let (alpha, beta) = (alpha_captures(), beta_captures());
        let archives = PywbArchive::start_all(&[("alpha", &alpha), ("beta", &beta)]);
        let (a, b) = (&archives[0], &archives[1]);
        assert_ne!(a.base_url(), b.base_url());

        for (archive, mementos) in [
            (
                a,
                [
                    ("20200101120000", "Wed, 01 Jan 2020 12:00:00 GMT"),
                    ("20210615083000", "Tue, 15 Jun 2021 08:30:00 GMT"),
                ],
            ),
            (
                b,
                [
                    ("20210615083000", "Tue, 15 Jun 2021 08:30:00 GMT"),
                    ("20230310101010", "Fri, 10 Mar 2023 10:10:10 GMT"),
                ],
            ),
        ] {
            let url = format!("{}{EXAMPLE}", archive.timemap_prefix());
            assert_eq!(
                url,
                format!(
                    "{}/{}/timemap/link/{EXAMPLE}",
                    archive.base_url(),
                    archive.collection
                )
            );
            let resp = get(&url, None).await;
            // 200 straight away: the TimeMap itself never redirects.
            assert_eq!(resp.status(), StatusCode::OK, "{url}");
            assert_eq!(header(&resp, CONTENT_TYPE), "application/link-format");
            assert_eq!(header(&resp, VARY), "accept-datetime");
            assert_eq!(
                header(&resp, "link"),
                format!(
                    "<{EXAMPLE}>; rel=\"original\", <{tg}{EXAMPLE}>; rel=\"timegate\", \
                     <{url}>; rel=\"timemap\"; type=\"application/link-format\"",
                    tg = archive.timegate_prefix()
                )
            );
            let body = resp.text().await.expect("TimeMap body");
            assert_eq!(body, expected_timemap(archive, EXAMPLE, &mementos));
        }

        // A URI-R with a query string goes in raw, unescaped.
        let only_alpha = "http://example.org/only-alpha?q=1&r=2";
        let resp = get(&format!("{}{only_alpha}", a.timemap_prefix()), None).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = resp.text().await.unwrap();
        assert_eq!(
            body,
            expected_timemap(
                a,
                only_alpha,
                &[("20190101000000", "Tue, 01 Jan 2019 00:00:00 GMT")]
            )
        );
        let resp = get(&format!("{}{only_alpha}", b.timemap_prefix()), None).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);

        // Same datetime, different archives, different archived bytes: the WARCs are real.
        for (archive, expected) in [(a, "alpha 2021"), (b, "beta 2021")] {
            let coll = &archive.collection;
            let url = format!("{}/{coll}/20210615083000id_/{EXAMPLE}", archive.base_url());
            let resp = get(&url, None).await;
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(
                header(&resp, "memento-datetime"),
                "Tue, 15 Jun 2021 08:30:00 GMT"
            );
            assert_eq!(
                resp.text().await.unwrap(),
                format!("<html><body>{expected}</body></html>")
            );
        }
    }

    #[tokio::test]
    async fn timegate_redirects_307_to_closest_memento() {
        let archive = PywbArchive::start("beta", &beta_captures());
        let tg = format!("{}{EXAMPLE}", archive.timegate_prefix());
        let memento = |ts: &str| format!("{}/beta/{ts}/{EXAMPLE}", archive.base_url());

        for (accept_datetime, ts, dt) in [
            // Closer to 2021-06 than to 2023-03.
            (
                Some("Sat, 01 Jan 2022 00:00:00 GMT"),
                "20210615083000",
                "Tue, 15 Jun 2021 08:30:00 GMT",
            ),
            (
                Some("Sun, 01 Jan 2023 00:00:00 GMT"),
                "20230310101010",
                "Fri, 10 Mar 2023 10:10:10 GMT",
            ),
            // Before the first and after the last clamp to them.
            (
                Some("Mon, 01 Jan 1990 00:00:00 GMT"),
                "20210615083000",
                "Tue, 15 Jun 2021 08:30:00 GMT",
            ),
            (
                Some("Mon, 01 Jan 2035 00:00:00 GMT"),
                "20230310101010",
                "Fri, 10 Mar 2023 10:10:10 GMT",
            ),
            // No Accept-Datetime: the latest.
            (None, "20230310101010", "Fri, 10 Mar 2023 10:10:10 GMT"),
        ] {
            let resp = get(&tg, accept_datetime).await;
            assert_eq!(
                resp.status(),
                StatusCode::TEMPORARY_REDIRECT,
                "{accept_datetime:?}"
            );
            assert_eq!(header(&resp, LOCATION), memento(ts), "{accept_datetime:?}");
            assert_eq!(header(&resp, VARY), "accept-datetime");
            let link = header(&resp, "link");
            let memento_link = format!(
                "<{}/beta/{ts}mp_/{EXAMPLE}>; rel=\"memento\"; datetime=\"{dt}\"",
                archive.base_url()
            );
            assert!(link.contains(&memento_link), "{link}");
            assert!(
                link.contains(&format!("<{EXAMPLE}>; rel=\"original\"")),
                "{link}"
            );
            assert_eq!(resp.text().await.unwrap(), "");
        }

        let resp = get(&tg, Some("not a date")).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

        let resp = get(
            &format!("{}http://nothing.example/", archive.timegate_prefix()),
            Some("Sat, 01 Jan 2022 00:00:00 GMT"),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(header(&resp, CONTENT_TYPE), "text/html");
        assert!(resp.text().await.unwrap().contains("URL Not Found"));
    }

    #[tokio::test]
    async fn timemap_edge_cases() {
        let archive = PywbArchive::start("alpha", &alpha_captures());
        let tm = archive.timemap_prefix();

        // Nothing captured: 404, empty body, yet link-format.
        let resp = get(&format!("{tm}http://nothing.example/"), None).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(header(&resp, CONTENT_TYPE), "application/link-format");
        assert_eq!(resp.text().await.unwrap(), "");

        // Accept-Datetime on a TimeMap filters to mementos from then on.
        let resp = get(
            &format!("{tm}{EXAMPLE}"),
            Some("Fri, 01 Jan 2021 00:00:00 GMT"),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.text().await.unwrap(),
            expected_timemap(
                &archive,
                EXAMPLE,
                &[("20210615083000", "Tue, 15 Jun 2021 08:30:00 GMT")]
            )
        );
        let resp = get(
            &format!("{tm}{EXAMPLE}"),
            Some("Sat, 01 Jan 2022 00:00:00 GMT"),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);

        // SURT matching: variants of the URI-R list the same mementos, echoing the URI-R given.
        for variant in [
            "http://example.com",
            "example.com",
            "https://example.com/",
            "http://www.example.com/",
            "http://EXAMPLE.com/",
            "http://example.com:80/",
        ] {
            let resp = get(&format!("{tm}{variant}"), None).await;
            assert_eq!(resp.status(), StatusCode::OK, "{variant}");
            let body = resp.text().await.unwrap();
            let echoed = if variant == "example.com" {
                "http://example.com"
            } else {
                variant
            };
            assert!(
                body.contains(&format!("<{echoed}>; rel=\"original\"")),
                "{variant}: {body}"
            );
            for ts in ["20200101120000", "20210615083000"] {
                let memento = format!("<{}/alpha/{ts}mp_/{EXAMPLE}>", archive.base_url());
                assert!(body.contains(&memento), "{variant}: {body}");
            }
        }
    }

    #[tokio::test]
    async fn default_config_timegate_answers_200_not_a_redirect() {
        let archive = PywbArchive::start_with_config("plain", &beta_captures(), "");
        let tg = format!("{}{EXAMPLE}", archive.timegate_prefix());
        let resp = client()
            .get(&tg)
            .header("Accept-Datetime", "Sat, 01 Jan 2022 00:00:00 GMT")
            .header(ACCEPT, "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(header(&resp, LOCATION), "");
        assert_eq!(header(&resp, CONTENT_TYPE), "text/html");
        let link = header(&resp, "link");
        assert!(
            link.contains(&format!(
                "<{}/plain/20210615083000mp_/{EXAMPLE}>; rel=\"memento\"; datetime=\"Tue, 15 Jun 2021 08:30:00 GMT\"",
                archive.base_url()
            )),
            "{link}"
        );
    }

    #[tokio::test]
    async fn stop_closes_the_port_and_is_idempotent() {
        let mut archive = PywbArchive::start("gamma", &alpha_captures()[..1]);
        let port = archive.port;
        let resp = get(&format!("{}/", archive.base_url()), None).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let dir = archive.dir.path().to_owned();

        archive.stop();
        let err = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect_err("port still open");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
        archive.stop();
        drop(archive);
        assert!(!dir.exists(), "temp dir {} left behind", dir.display());
    }

    /// A wayback that dies at start must fail the test with its output, not hang 30 s.
    #[test]
    #[should_panic(
        expected = "exited early with exit status: 3); its output:\nwayback: simulated crash"
    )]
    fn dead_wayback_panics_with_its_output() {
        let fake = tempfile::tempdir().unwrap();
        let bin = fake.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // A wrapper, not a symlink: a venv's python finds its packages only from inside it.
        let python = format!(
            "#!/bin/sh\nexec '{}' \"$@\"\n",
            venv_dir().join("bin/python").display()
        );
        let wayback = "#!/bin/sh\necho 'wayback: simulated crash' >&2\nexit 3\n";
        for (name, script) in [("python", python.as_str()), ("wayback", wayback)] {
            std::fs::write(bin.join(name), script).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(bin.join(name), mode).unwrap();
        }
        launch(fake.path(), "dead", &alpha_captures(), "", None);
    }

    #[test]
    #[should_panic(expected = "pywb not installed: run bash scripts/test.sh")]
    fn missing_venv_panics_with_the_fix() {
        launch(
            Path::new("/nonexistent/venv"),
            "x",
            &alpha_captures(),
            "",
            None,
        );
    }
}
