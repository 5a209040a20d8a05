//! The fake IA CDX server that counts what it is asked, and the SYNTHETIC trap index.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tmproxy::sampling::engine::{SampledUrl, Spec};

#[derive(Default)]
pub(super) struct Fake {
    /// Questions per url parameter (first captures and TimeMap pages alike).
    pub(super) seen: Mutex<HashMap<String, u32>>,
    /// `showNumPages` questions: one per TimeMap asked.
    pub(super) timemaps: AtomicU64,
    /// Requests under way and the most at once, per kind (`root`, `popular`, `timemap`).
    pub(super) inflight: Mutex<HashMap<&'static str, (u64, u64)>>,
    pub(super) latency_ms: AtomicU64,
    /// Added to TimeMap answers only.
    pub(super) timemap_latency_ms: AtomicU64,
    /// No first-try 503s.
    pub(super) steady: AtomicBool,
    /// Added to the answers for a URL of this host: a way to choose the order answers arrive in.
    pub(super) host_latency_ms: Mutex<HashMap<String, u64>>,
}

fn h(url: &str) -> u64 {
    url.bytes().fold(1469598103934665603u64, |a, b| {
        (a ^ u64::from(b)).wrapping_mul(1099511628211)
    })
}

fn kind(url: &str, q: &HashMap<String, String>) -> &'static str {
    if q.contains_key("showNumPages") || q.contains_key("page") {
        "timemap"
    } else if url.contains("twitter") {
        "popular"
    } else if url.ends_with(".com/") {
        "root"
    } else {
        "other"
    }
}

async fn cdx(State(f): State<Arc<Fake>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let url = q.get("url").cloned().unwrap_or_default();
    let k = kind(&url, &q);
    if let Ok(mut m) = f.inflight.lock() {
        let e = m.entry(k).or_default();
        e.0 += 1;
        e.1 = e.1.max(e.0);
    }
    let mut latency = f.latency_ms.load(Ordering::Relaxed);
    if k == "timemap" {
        latency += f.timemap_latency_ms.load(Ordering::Relaxed);
    }
    if let Some(host) = tmproxy::sampling::surt::url_host(&url) {
        latency += f
            .host_latency_ms
            .lock()
            .map_or(0, |m| m.get(&host).copied().unwrap_or(0));
    }
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let answer = answer(&f, &url, &q);
    if let Ok(mut m) = f.inflight.lock() {
        m.entry(k).or_default().0 -= 1;
    }
    answer
}

fn answer(f: &Fake, url: &str, q: &HashMap<String, String>) -> Response {
    let n = {
        let mut seen = f.seen.lock().expect("lock");
        let n = seen.entry(url.to_string()).or_default();
        *n += 1;
        *n
    };
    let x = h(url);
    if q.contains_key("showNumPages") {
        f.timemaps.fetch_add(1, Ordering::Relaxed);
        return "1\n".into_response();
    }
    if url.contains("blocked") {
        return (StatusCode::FORBIDDEN, "Blocked Site Error").into_response();
    }
    if url.contains("fatal") {
        return (StatusCode::BAD_REQUEST, "bad url").into_response();
    }
    if x.is_multiple_of(11) && n == 1 && !f.steady.load(Ordering::Relaxed) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if x.is_multiple_of(13) && !q.contains_key("page") {
        return "".into_response();
    }
    // Hosts named `old…` were first archived in 1998 (root upsampling's window).
    let year = if url.contains("old") {
        1998
    } else {
        1996 + x % 26
    };
    let mime = if x.is_multiple_of(17) && !q.contains_key("page") {
        "image/jpeg"
    } else {
        "text/html"
    };
    format!(
        r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"],["k","{year}0101000000","{url}","{mime}","200","D","1"],["k","{year}0601000000","{url}","{mime}","200","D","1"]]"#
    )
    .into_response()
}

pub(super) async fn fake_cdx() -> (String, Arc<Fake>, tokio::task::JoinHandle<()>) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/cdx", axum::routing::get(cdx))
        .with_state(fake.clone());
    let (addr, task) = crate::support::serve_fake(app).await;
    (format!("http://{addr}/cdx"), fake, task)
}

/// A SYNTHETIC ZipNum-like index (sorted) with every trap the stages meet: deep pages with and
/// without roots, a big domain (evictions, downsampling, a shortfall), single-URL domains (the
/// long tail), rootless `old…` hosts (root upsampling), an index file and a wildcard of
/// rootless hosts (re-entered roots), one of a popular domain, session ids, an invalid key, a
/// garbage line, a repeated SURT, images, blocked and failing URLs, and a popular domain.
pub(super) fn trap_index(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for host in 0..40 {
        let key = format!("com,site{host:03})");
        if host % 3 == 0 {
            lines.push(format!("{key}/ 20010101000000 p 0 1"));
        }
        for page in 0..(1 + host % 12) {
            lines.push(format!("{key}/page{page}.html 20050101000000 p 0 1"));
        }
        lines.push(format!("{key}/logo.gif 20050101000000 p 0 1"));
    }
    for page in 0..2000 {
        lines.push(format!("com,big)/p{page:04}.html 20050101000000 p 0 1"));
    }
    for tiny in 0..60 {
        lines.push(format!("com,tiny{tiny:02})/x.html 20050101000000 p 0 1"));
    }
    for old in 0..8 {
        lines.push(format!("com,old{old})/a.html 19990101000000 p 0 1"));
        lines.push(format!("com,old{old})/b.html 19990101000000 p 0 1"));
    }
    lines.push("com,idx)/index.php 20050101000000 p 0 1".into());
    lines.push("com,idx)/about.html 20050101000000 p 0 1".into());
    lines.push("com,wild)/search?q=* 20050101000000 p 0 1".into());
    lines.push("com,twitter)/search?q=* 20160101000000 p 0 1".into());
    lines.push("com,site002)/x.php?PHPSESSID=0123456789abcdef0123456789abcdef 2005 p 0 1".into());
    lines.push(")/?dn=nohost 20050101000000 p 0 1".into());
    lines.push("garbage-without-timestamp".into());
    lines.push("com,site004)/page1.html 20060101000000 p 0 1".into());
    for user in 0..40 {
        lines.push(format!("com,twitter)/user{user:02} 20160101000000 p 0 1"));
    }
    lines.push("com,blocked)/page.html 20160101000000 p 0 1".into());
    lines.push("com,fatal)/page.html 20160101000000 p 0 1".into());
    lines.sort();
    let path = dir.join("index.txt");
    let mut f = std::fs::File::create(&path).expect("create");
    for l in lines {
        writeln!(f, "{l}").expect("write");
    }
    path
}

pub(super) fn spec(input: &Path, cdx: &str) -> Spec {
    Spec {
        input: input.display().to_string(),
        cdx_api: cdx.to_string(),
        dialect: Some(tmproxy::sampling::cdx::Dialect::Ia),
        seed: 42,
        years: [1996, 2021],
        concurrency: 8,
        rate_limit: 0.0,
        popular_domains: vec!["twitter.com".into()],
        popular_quota: 1,
        downsampling: Default::default(),
        candidate_pool: Some(20),
        long_tail_threshold: 10,
        long_tail_fraction: 0.9,
        collect_timemaps: false,
        hydrate_revisits: false,
    }
}

pub(super) fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

pub(super) fn sample_of(dir: &Path) -> Vec<SampledUrl> {
    lines(&dir.join("sample.ndjson"))
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("a sample line"))
        .collect()
}

pub(super) fn funnel(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("funnel.json")).expect("funnel");
    serde_json::from_str(&text).expect("JSON")
}

/// Checks each row's `in = out + set_aside + errors` and the chain: a main row's `in` is the
/// main row before it's `out` plus the `out` of the side rows `into` it; a side row `from` a
/// stage takes that stage's `set_aside`.
pub(super) fn check_chain(rows: &[serde_json::Value]) {
    let n = |r: &serde_json::Value, k: &str| r[k].as_u64().expect("a count");
    let by: HashMap<&str, &serde_json::Value> = rows
        .iter()
        .map(|r| (r["stage"].as_str().expect("stage"), r))
        .collect();
    let mut prev: Option<&serde_json::Value> = None;
    for r in rows {
        let stage = r["stage"].as_str().expect("stage");
        assert_eq!(
            n(r, "in"),
            n(r, "out") + n(r, "set_aside") + n(r, "errors"),
            "{r}"
        );
        if let Some(from) = r["from"].as_str() {
            assert_eq!(n(r, "in"), n(by[from], "set_aside"), "{r} from {from}");
        }
        if r.get("into").is_some() || r.get("from").is_some() {
            continue;
        }
        let side: u64 = rows
            .iter()
            .filter(|s| s["into"].as_str() == Some(stage))
            .map(|s| n(s, "out"))
            .sum();
        if let Some(p) = prev {
            assert_eq!(n(r, "in"), n(p, "out") + side, "{r} after {p}");
        }
        prev = Some(r);
    }
}

/// The stop-and-resume tests' case: TimeMaps collected (hydrated, two at a time) over the trap
/// index from a steady fake server (no first-try 503s), once uninterrupted into `whole`.
pub(super) struct TimemapCase {
    pub(super) fake: Arc<Fake>,
    pub(super) task: tokio::task::JoinHandle<()>,
    pub(super) dir: tempfile::TempDir,
    pub(super) spec: Spec,
    pub(super) whole: PathBuf,
}

pub(super) async fn timemap_case() -> TimemapCase {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = trap_index(dir.path());
    let spec = Spec {
        collect_timemaps: true,
        hydrate_revisits: true,
        concurrency: 2,
        ..spec(&input, &cdx)
    };
    let whole = dir.path().join("whole");
    tmproxy::sampling::engine::run(&spec, &whole, Arc::new(Default::default()))
        .await
        .expect("uninterrupted run");
    TimemapCase {
        fake,
        task,
        dir,
        spec,
        whole,
    }
}

/// What a run's `timemaps/` holds, whatever order its TimeMaps were written in: the index's
/// lines without where each TimeMap is stored (packs fill in the order answers arrive), each
/// TimeMap read back by its name, `hydration.json`; and no file but those, the packs, the
/// index's offsets and the TimeMaps of their own files an earlier version wrote (no `.part`
/// left over).
pub(super) fn timemaps_of(out: &Path) -> Vec<(String, String)> {
    let dir = out.join("timemaps");
    let Ok(index) = std::fs::read_to_string(dir.join("index.ndjson")) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for line in index.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("an index line");
        let e = v.as_object_mut().expect("an object");
        for k in ["pack", "offset", "length"] {
            e.remove(k);
        }
        files.push(("index.ndjson".to_string(), v.to_string()));
        if let Some(name) = v["file"].as_str() {
            let mut text = String::new();
            let mut r = tmproxy::sampling::pack::open_in(&dir, name)
                .expect("readable")
                .expect("written");
            std::io::Read::read_to_string(&mut r, &mut text).expect("a whole TimeMap");
            files.push((name.to_string(), text));
        }
    }
    let hydration = std::fs::read_to_string(dir.join("hydration.json")).unwrap_or_default();
    files.push(("hydration.json".to_string(), hydration));
    for e in std::fs::read_dir(&dir)
        .expect("timemaps/")
        .filter_map(Result::ok)
    {
        let name = e.file_name().to_string_lossy().to_string();
        let pack = tmproxy::sampling::pack::pack_number(&name).is_some();
        let own = name
            .strip_suffix(".ndjson")
            .is_some_and(|d| d.len() >= 6 && d.bytes().all(|b| b.is_ascii_digit()));
        assert!(
            pack || own
                || ["index.ndjson", "index.offsets", "hydration.json"].contains(&name.as_str()),
            "{name} left in timemaps/"
        );
    }
    files
}
