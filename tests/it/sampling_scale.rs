//! The benchmark's SYNTHETIC index and fake CDX API (`tmproxy_testkit::scale`, served as
//! `examples/sampling_scale.rs` serves it) through the whole engine on 127.0.0.1:0: the index is
//! read without a bad line and the sample is the same twice; and a run resumed from a copy of
//! the checkpoint (its answers held compactly, by a 128-bit hash of the URL) asks no first
//! capture again and ends with the same sample, byte for byte.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tmproxy::sampling::engine::{run, Progress, Spec};
use tmproxy_testkit::scale::{cdx_answer, write_scale_zipnum};

/// The fake CDX API, counting first-capture queries.
async fn scale_cdx() -> (String, Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    use axum::extract::RawQuery;
    let firsts = Arc::new(AtomicU64::new(0));
    let counted = firsts.clone();
    let app = axum::Router::new().route(
        "/cdx",
        axum::routing::get(move |RawQuery(q): RawQuery| {
            let counted = counted.clone();
            async move {
                let params: Vec<(String, String)> =
                    url::form_urlencoded::parse(q.unwrap_or_default().as_bytes())
                        .into_owned()
                        .collect();
                if params.iter().any(|(k, v)| k == "limit" && v == "1") {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                let (status, body) = cdx_answer(&params);
                (
                    axum::http::StatusCode::from_u16(status)
                        .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
                    body,
                )
            }
        }),
    );
    let (addr, task) = crate::support::serve_fake(app).await;
    (format!("http://{addr}/cdx"), firsts, task)
}

fn spec(input: &Path, cdx: &str) -> Spec {
    let text = format!(
        "input = {:?}\ncdx_api = {cdx:?}\ndialect = \"ia\"\nseed = 7\nconcurrency = 8\n\
         popular_domains = [\"twitter.com\"]\n",
        input.display().to_string()
    );
    toml::from_str(&text).expect("a spec")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_index_samples_the_same_twice_and_resumes_from_the_compact_checkpoint() {
    let (cdx, firsts, task) = scale_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("index.txt");
    let file = std::fs::File::create(&input).expect("create");
    assert_eq!(write_scale_zipnum(20_000, file).expect("write"), 20_000);
    let s = spec(&input, &cdx);

    let a = dir.path().join("a");
    let first = run(&s, &a, Arc::new(Progress::default()))
        .await
        .expect("the run");
    let asked = firsts.swap(0, Ordering::Relaxed);
    assert!(
        first.sample > 1_000 && asked > 5_000,
        "{} sampled, {asked} asked",
        first.sample
    );
    let funnel: Vec<serde_json::Value> =
        serde_json::from_str(&read(&a.join("funnel.json"))).expect("funnel.json");
    let read_row = &funnel[0];
    assert_eq!(
        (read_row["in"].as_u64(), read_row["errors"].as_u64()),
        (Some(20_000), Some(0))
    );

    // Another directory, fresh: the same sample (the fake's answers and the index are fixed).
    let b = dir.path().join("b");
    run(&s, &b, Arc::new(Progress::default()))
        .await
        .expect("again");
    assert_eq!(
        firsts.swap(0, Ordering::Relaxed),
        asked,
        "asked everything again"
    );
    assert_eq!(
        read(&a.join("sample.ndjson")),
        read(&b.join("sample.ndjson"))
    );

    // Only the checkpoint copied into a third directory: every answer comes from it.
    let c = dir.path().join("c");
    std::fs::create_dir_all(&c).expect("mkdir");
    std::fs::copy(
        a.join("first_captures.ndjson"),
        c.join("first_captures.ndjson"),
    )
    .expect("copy");
    let progress = Arc::new(Progress::default());
    run(&s, &c, progress.clone()).await.expect("resumed");
    assert_eq!(
        firsts.load(Ordering::Relaxed),
        0,
        "a resumed run asked again"
    );
    assert_eq!(progress.resumed_answers.load(Ordering::Relaxed), asked);
    assert_eq!(
        read(&a.join("sample.ndjson")),
        read(&c.join("sample.ndjson"))
    );
    assert_eq!(read(&a.join("funnel.json")), read(&c.join("funnel.json")));
    task.abort();
}
