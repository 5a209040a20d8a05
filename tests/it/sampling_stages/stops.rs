//! What a stop must leave: a run stopped in any stage (first captures, the popular quota, root
//! upsampling, the TimeMaps) and started again over its directory ends with the files of a run
//! never stopped: the same sample, funnel, set-aside and error records, and TimeMaps.

use super::fixture::{timemap_case, timemaps_of, Fake, TimemapCase};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tmproxy::sampling::engine::{run, Progress, Spec};

/// The files a run leaves that must not depend on where it was stopped (`retries.ndjson` is
/// appended across runs on purpose; `progress.json` counts the runs).
fn outcome(dir: &Path) -> Vec<(String, String)> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let sorted = |text: String| {
        let mut v: Vec<&str> = text.lines().collect();
        v.sort_unstable();
        v.join("\n")
    };
    let mut files = vec![
        ("sample.ndjson".to_string(), read("sample.ndjson")),
        ("funnel.json".to_string(), read("funnel.json")),
        ("shortfalls.json".to_string(), read("shortfalls.json")),
        // Written as the stages' answers arrive: the same records, in arrival order.
        ("set_aside".to_string(), sorted(read("set_aside.ndjson"))),
        ("errors".to_string(), sorted(read("errors.ndjson"))),
    ];
    files.extend(timemaps_of(dir));
    files
}

/// Runs `spec` into `dir`, cancelling it once its stage is `stage` (each CDX answer slowed by
/// `latency_ms` so the stage lasts long enough to be seen). Whether it was stopped.
async fn stop_in(
    spec: &Spec,
    dir: &Path,
    stage: &'static str,
    fake: &Fake,
    latency_ms: u64,
) -> bool {
    fake.latency_ms.store(latency_ms, Ordering::Relaxed);
    let progress = Arc::new(Progress::default());
    let watcher = {
        let p = progress.clone();
        tokio::spawn(async move {
            loop {
                let now = p.stage.lock().map(|s| s.clone()).unwrap_or_default();
                if now == stage {
                    p.cancel.store(true, Ordering::Relaxed);
                    return;
                }
                if now == "done" {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    let outcome = run(spec, dir, progress).await.expect("a run");
    watcher.abort();
    fake.latency_ms.store(0, Ordering::Relaxed);
    outcome.cancelled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_in_any_stage_ends_with_the_files_of_one_never_stopped() {
    let TimemapCase {
        fake,
        task,
        dir,
        spec: s,
        whole,
    } = timemap_case().await;
    let sampled = std::fs::read_to_string(whole.join("sample.ndjson"))
        .expect("sample")
        .lines()
        .count();
    assert!(sampled > 0);
    let expected = outcome(&whole);

    for stage in [
        "first_capture",
        "popular_quota",
        "root_upsampling",
        "timemaps",
    ] {
        let out = dir.path().join(stage);
        // Slower answers until the watcher sees the stage (a short stage can pass unseen).
        let mut stopped = false;
        for latency in [20, 80, 250] {
            let _ = std::fs::remove_dir_all(&out);
            if stop_in(&s, &out, stage, &fake, latency).await {
                stopped = true;
                break;
            }
        }
        assert!(stopped, "never stopped in {stage}");
        assert!(
            !out.join("sample.ndjson").exists() || stage == "timemaps",
            "a run stopped in {stage} wrote no sample"
        );
        // Stopped twice more on the way, then through.
        let _ = stop_in(&s, &out, stage, &fake, 20).await;
        let again = run(&s, &out, Arc::new(Progress::default()))
            .await
            .expect("resumed run");
        assert!(!again.cancelled, "{stage}");
        assert_eq!(again.sample, sampled, "stopped in {stage}");
        assert_eq!(outcome(&out), expected, "stopped in {stage}: other files");
    }
    task.abort();
}
