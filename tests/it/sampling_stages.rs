//! The engine's stages after the offline ones, against an in-process fake IA CDX server on
//! 127.0.0.1:0 that counts what it is asked: every URL of a SYNTHETIC index holding every trap
//! ends once in the sample, `set_aside.ndjson` or `errors.ndjson` and the funnel chains; retries
//! are in `retries.ndjson`; `years` bounds root upsampling; the quota, the roots and the
//! TimeMaps ask several at once with the same result; a TimeMap stage stopped (cancelled, or a
//! `tmproxy sample` child killed) resumes asking only what is missing, a torn file not counted;
//! a checkpoint written for another spec is refused; a job capped by `[sampling]` says so;
//! the root asked for a rootless domain spelled with and without `www.` does not depend on
//! which answer came first.

mod fixture;
mod stops;

use fixture::{
    check_chain, fake_cdx, funnel, lines, sample_of, spec, timemap_case, timemaps_of, trap_index,
    TimemapCase,
};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tmproxy::sampling::engine::{run, Progress, Spec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_url_ends_once_in_sample_set_aside_or_errors_and_the_funnel_chains() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = trap_index(dir.path());
    let out = dir.path().join("out");
    let outcome = run(&spec(&input, &cdx), &out, Arc::new(Progress::default()))
        .await
        .expect("the run");
    let rows = funnel(&out);
    check_chain(&rows);
    let at = |s: &str| {
        rows.iter()
            .find(|r| r["stage"] == s)
            .unwrap_or_else(|| panic!("row {s}"))
            .clone()
    };
    let n = |s: &str, k: &str| at(s)[k].as_u64().expect("a count");
    // Every trap was met.
    for (stage, key) in [
        ("wildcard_roots", "out"),
        ("index_file_roots", "out"),
        ("long_tail", "set_aside"),
        ("downsampling", "set_aside"),
        ("root_upsampling", "out"),
        ("popular_quota", "out"),
        ("popular_quota", "set_aside"),
        ("first_capture", "errors"),
    ] {
        assert!(n(stage, key) > 0, "{stage}.{key}: {rows:?}");
    }
    let sample = sample_of(&out);
    let aside = lines(&out.join("set_aside.ndjson"));
    let errors = lines(&out.join("errors.ndjson"));
    assert_eq!(sample.len() as u64, n("sample", "out"));
    assert_eq!(sample.len(), outcome.sample);
    // Each URL once across the three files.
    let mut seen: HashMap<String, &str> = HashMap::new();
    let all = sample
        .iter()
        .map(|s| (s.url.clone(), "sample"))
        .chain(
            aside
                .iter()
                .map(|a| (a["url"].as_str().expect("url").to_string(), "aside")),
        )
        .chain(
            errors
                .iter()
                .map(|a| (a["url"].as_str().expect("url").to_string(), "error")),
        );
    for (url, file) in all {
        if let Some(before) = seen.insert(url.clone(), file) {
            panic!("{url} is in {before} and {file}");
        }
    }
    // And every URL is there: the input's distinct keys (a repeated SURT is the same URL
    // again), the roots stages re-entered and the roots upsampling added.
    let distinct = n("read", "in") - n("unique_surts", "set_aside")
        + n("wildcard_roots", "in")
        + n("index_file_roots", "in")
        + n("root_upsampling", "in");
    assert_eq!(seen.len() as u64, distinct);
    // Per stage, the files hold what the funnel counts.
    let count = |list: &[serde_json::Value], stage: &str| {
        list.iter().filter(|a| a["stage"] == stage).count() as u64
    };
    for r in &rows {
        let stage = r["stage"].as_str().expect("stage");
        if matches!(stage, "unique_surts" | "popular_domains" | "read") {
            continue; // not recorded / handed to the quota / its errors are lines, set aside
        }
        assert_eq!(count(&aside, stage), n(stage, "set_aside"), "{stage}");
        assert_eq!(count(&errors, stage), n(stage, "errors"), "{stage}");
    }
    assert_eq!(count(&aside, "read"), n("read", "errors"));
    assert!(aside.iter().any(|a| a["stage"] == "long_tail"
        && a["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("long_tail"))));
    assert!(aside
        .iter()
        .any(|a| a["stage"] == "downsampling" && a["reason"] == "downsampled"));
    // No quota pick is also set aside (the offline stage hands them over, unrecorded).
    assert_eq!(count(&aside, "popular_domains"), 0);
    // The twitter.com wildcard's root went to the quota like twitter.com's other URLs.
    assert!(sample
        .iter()
        .map(|s| s.url.as_str())
        .chain(aside.iter().filter_map(|a| a["url"].as_str()))
        .any(|u| u == "https://twitter.com/"));
    // Transient failures are logged, one line per retry, and their URLs are accounted for.
    let retries = lines(&out.join("retries.ndjson"));
    assert!(!retries.is_empty());
    for r in &retries {
        assert_eq!(r["status"], 503, "{r}");
        assert_eq!(r["attempt"], 1, "{r}");
        assert!(r["stage"].is_string() && r["reason"].is_string(), "{r}");
        assert!(seen.contains_key(r["url"].as_str().expect("url")), "{r}");
    }
    // big.com's targets above the pool of 20 are reported, and said.
    let shortfalls: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(out.join("shortfalls.json")).expect("shortfalls"),
    )
    .expect("JSON");
    assert!(!shortfalls.is_empty() && shortfalls.iter().all(|s| s["domain"] == "big.com"));
    assert!(shortfalls
        .iter()
        .all(|s| s["target"].as_u64() > s["sampled"].as_u64() && s["pool"] == 20));
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.contains("shortfalls.json")));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn years_bound_root_upsampling() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = trap_index(dir.path());
    // 1996–2021: the `old…` hosts get their roots, first captured in 1998.
    let wide = dir.path().join("wide");
    run(&spec(&input, &cdx), &wide, Arc::new(Progress::default()))
        .await
        .expect("the run");
    assert!(sample_of(&wide)
        .iter()
        .any(|s| s.root && s.url.starts_with("https://old")));
    // 2010–2021: no stage may bring in an earlier year, and upsampling asks nothing.
    let asked_before = fake.seen.lock().expect("lock").clone();
    let late = dir.path().join("late");
    let s = Spec {
        years: [2010, 2021],
        ..spec(&input, &cdx)
    };
    run(&s, &late, Arc::new(Progress::default()))
        .await
        .expect("the run");
    let sample = sample_of(&late);
    assert!(!sample.is_empty());
    for u in &sample {
        let year: u16 = u.first_capture[..4].parse().expect("a year");
        assert!((2010..=2021).contains(&year), "{u:?}");
    }
    let rows = funnel(&late);
    let up = rows
        .iter()
        .find(|r| r["stage"] == "root_upsampling")
        .expect("row");
    assert_eq!(up["in"], 0, "{up}");
    check_chain(&rows);
    // No root URL was asked for upsampling: only roots that were candidates were asked again.
    let seen = fake.seen.lock().expect("lock");
    let roots = |m: &HashMap<String, u32>| {
        m.iter()
            .filter(|(u, _)| u.ends_with(".com/"))
            .map(|(u, n)| (u.clone(), *n))
            .collect::<HashMap<String, u32>>()
    };
    let input_roots: HashSet<String> = (0..40)
        .filter(|h| h % 3 == 0)
        .map(|h| format!("https://site{h:03}.com/"))
        .chain([
            "https://idx.com/".to_string(),
            "https://wild.com/".to_string(),
        ])
        .collect();
    for (url, n) in roots(&seen) {
        let before = asked_before.get(&url).copied().unwrap_or(0);
        if !input_roots.contains(&url) && !url.contains("twitter") {
            assert_eq!(n, before, "{url} asked again for upsampling");
        }
    }
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quota_roots_and_timemaps_ask_several_at_once_with_the_same_result() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = trap_index(dir.path());
    let serial = dir.path().join("serial");
    let s = Spec {
        concurrency: 1,
        collect_timemaps: true,
        ..spec(&input, &cdx)
    };
    run(&s, &serial, Arc::new(Progress::default()))
        .await
        .expect("serial run");
    fake.inflight.lock().expect("lock").clear();
    fake.latency_ms.store(10, Ordering::Relaxed);
    let parallel = dir.path().join("parallel");
    let s = Spec {
        concurrency: 4,
        ..s
    };
    run(&s, &parallel, Arc::new(Progress::default()))
        .await
        .expect("parallel run");
    let peaks = fake.inflight.lock().expect("lock").clone();
    for k in ["popular", "root", "timemap"] {
        let peak = peaks.get(k).map_or(0, |p| p.1);
        assert!(peak > 1, "{k}: at most {peak} at once ({peaks:?})");
    }
    assert_eq!(sample_of(&parallel), sample_of(&serial));
    assert_eq!(timemaps_of(&parallel), timemaps_of(&serial));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_timemap_stage_resumes_asking_only_the_missing_ones() {
    let TimemapCase {
        fake,
        task,
        dir,
        spec: s,
        whole,
    } = timemap_case().await;
    let n = fake.timemaps.swap(0, Ordering::Relaxed);
    assert_eq!(n as usize, sample_of(&whole).len());

    let part = dir.path().join("part");
    assert!(stopped_after_timemaps(&fake, &s, &part, 10).await);
    let written = std::fs::read_to_string(part.join("timemaps/index.ndjson"))
        .expect("index")
        .lines()
        .count() as u64;
    assert!(written >= 10 && written < n, "{written} of {n}");
    // A TimeMap killed half-written: its frame torn at the end of the pack, with no index line.
    let mut pack = std::fs::OpenOptions::new()
        .append(true)
        .open(part.join("timemaps/pack-0000.zst"))
        .expect("the pack");
    std::io::Write::write_all(&mut pack, &[0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x0c]).expect("torn");

    fake.timemaps.store(0, Ordering::Relaxed);
    fake.latency_ms.store(0, Ordering::Relaxed);
    let again = run(&s, &part, Arc::new(Progress::default()))
        .await
        .expect("resumed run");
    assert!(!again.cancelled);
    assert_eq!(
        fake.timemaps.load(Ordering::Relaxed),
        n - written,
        "only the missing TimeMaps are asked"
    );
    assert_eq!(
        timemaps_of(&part),
        timemaps_of(&whole),
        "the same TimeMaps, index and hydration"
    );
    task.abort();
}

/// Runs `spec` into `dir` with every answer slowed (5 ms) and stops it once `n` TimeMaps are
/// through; says whether it was stopped. The answers stay slowed for the caller to restore.
async fn stopped_after_timemaps(fake: &fixture::Fake, spec: &Spec, dir: &Path, n: u64) -> bool {
    fake.latency_ms.store(5, Ordering::Relaxed);
    let progress = Arc::new(Progress::default());
    let watcher = {
        let p = progress.clone();
        tokio::spawn(async move {
            while p.timemaps.load(Ordering::Relaxed) < n {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            p.cancel.store(true, Ordering::Relaxed);
        })
    };
    let stopped = run(spec, dir, progress).await.expect("a run").cancelled;
    let _ = watcher.await;
    stopped
}

/// A directory a version writing one file per TimeMap stopped in, its TimeMaps kept and the
/// rest written to packs; and a frame whose index line was written but whose bytes were cut
/// off the pack (a power cut): asked again, and only it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_one_file_per_timemap_resumes_into_packs() {
    let TimemapCase {
        fake,
        task,
        dir,
        spec: s,
        whole,
    } = timemap_case().await;
    let n = fake.timemaps.swap(0, Ordering::Relaxed);
    let part = dir.path().join("part");
    assert!(stopped_after_timemaps(&fake, &s, &part, 10).await);
    let tm = part.join("timemaps");
    let index = std::fs::read_to_string(tm.join("index.ndjson")).expect("index");
    let lines: Vec<serde_json::Value> = index
        .lines()
        .map(|l| serde_json::from_str(l).expect("a line"))
        .collect();
    let written = lines.len() as u64;
    assert!(written >= 10 && written < n, "{written} of {n}");
    // Every line but the last as the earlier version wrote it: a file, no pack.
    let mut old = String::new();
    for v in &lines[..lines.len() - 1] {
        let name = v["file"].as_str().expect("a file");
        let mut text = Vec::new();
        let mut r = tmproxy::sampling::pack::open_in(&tm, name)
            .expect("readable")
            .expect("written");
        std::io::Read::read_to_end(&mut r, &mut text).expect("whole");
        std::fs::write(tm.join(name), text).expect("its own file");
        let mut v = v.clone();
        for k in ["pack", "offset", "length"] {
            v.as_object_mut().expect("an object").remove(k);
        }
        old += &format!("{v}\n");
    }
    let last = &lines[lines.len() - 1];
    old += &format!("{last}\n");
    std::fs::write(tm.join("index.ndjson"), old).expect("index");
    let cut =
        last["offset"].as_u64().expect("offset") + last["length"].as_u64().expect("length") - 1;
    let pack = std::fs::OpenOptions::new()
        .write(true)
        .open(tm.join(last["pack"].as_str().expect("pack")))
        .expect("pack");
    pack.set_len(cut).expect("cut");

    fake.timemaps.store(0, Ordering::Relaxed);
    fake.latency_ms.store(0, Ordering::Relaxed);
    run(&s, &part, Arc::new(Progress::default()))
        .await
        .expect("resumed run");
    assert_eq!(
        fake.timemaps.load(Ordering::Relaxed),
        n - written + 1,
        "the missing TimeMaps and the one cut off its pack"
    );
    assert_eq!(timemaps_of(&part), timemaps_of(&whole));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_written_for_another_spec_is_refused() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = trap_index(dir.path());
    let a = dir.path().join("a");
    run(&spec(&input, &cdx), &a, Arc::new(Progress::default()))
        .await
        .expect("the run");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&b).expect("dir");
    std::fs::copy(
        a.join("first_captures.ndjson"),
        b.join("first_captures.ndjson"),
    )
    .expect("copy");
    let other = Spec {
        seed: 43,
        ..spec(&input, &cdx)
    };
    let err = run(&other, &b, Arc::new(Progress::default()))
        .await
        .expect_err("refused");
    assert!(
        err.contains("another spec") && err.contains("seed"),
        "{err}"
    );
    assert!(!b.join("sample.ndjson").exists());
    // The same spec, only faster, is the same result: the copy is reused, only the failures
    // (not kept in a checkpoint) asked again.
    let asked = fake.seen.lock().expect("lock").values().sum::<u32>();
    let failures = lines(&a.join("errors.ndjson")).len() as u32;
    assert!(failures > 0);
    let faster = Spec {
        concurrency: 16,
        ..spec(&input, &cdx)
    };
    run(&faster, &b, Arc::new(Progress::default()))
        .await
        .expect("same spec");
    assert_eq!(
        fake.seen.lock().expect("lock").values().sum::<u32>(),
        asked + failures
    );
    assert_eq!(sample_of(&b), sample_of(&a));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_capped_by_the_server_says_so_in_its_warnings() {
    use crate::support::{client, start_proxy};
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    crate::sampling_job::index_file(&inputs);
    let mut c = tmproxy::config::Config::default();
    c.admin.token = "t".into();
    c.archives = Vec::new();
    c.cache.path = dir.path().join("data/cache").display().to_string();
    c.sampling.input_dir = inputs.display().to_string();
    c.sampling.allowed_urls = vec![cdx.parse().expect("an http URL")];
    c.sampling.concurrency = 2;
    c.sampling.rate_limit = 1000.0;
    let proxy = start_proxy(c).await;
    let body = serde_json::json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia",
                                  "concurrency": 8});
    let r = client()
        .post(format!("{}/admin/sampling/jobs", proxy.base))
        .bearer_auth("t")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST");
    let v: serde_json::Value = serde_json::from_str(&r.text().await.expect("body")).expect("JSON");
    let id = v["id"].as_str().expect("an id").to_string();
    let mut status = serde_json::Value::Null;
    for _ in 0..600 {
        status = client()
            .get(format!("{}/admin/sampling/jobs/{id}", proxy.base))
            .bearer_auth("t")
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .expect("JSON");
        if status["state"] == "done" || status["state"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status["state"], "done", "{status}");
    let warnings: Vec<&str> = status["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        warnings.contains(&"concurrency 8 capped to 2 by [sampling] concurrency"),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(&"rate_limit unlimited capped to 1000/s by [sampling] rate_limit"),
        "{warnings:?}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tmproxy_sample_killed_during_timemaps_resumes_to_the_same_files() {
    let TimemapCase {
        fake,
        task,
        dir,
        spec: s,
        whole,
    } = timemap_case().await;
    let n = fake.timemaps.swap(0, Ordering::Relaxed);

    // A child `tmproxy sample`, killed (SIGKILL: no flush, no cleanup) mid-way through the
    // TimeMaps, slowed down so that it is mid-way when the test looks.
    let spec_path = dir.path().join("spec.toml");
    std::fs::write(&spec_path, toml::to_string(&s).expect("TOML")).expect("spec");
    let part = dir.path().join("part");
    fake.timemap_latency_ms.store(20, Ordering::Relaxed);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tmproxy"))
        .arg("sample")
        .arg("--spec")
        .arg(&spec_path)
        .arg("--out")
        .arg(&part)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let index = part.join("timemaps/index.ndjson");
    let written = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
            .count() as u64
    };
    for _ in 0..3000 {
        if written(&index) >= 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let k = written(&index);
    assert!(k >= 5 && k < n, "killed with {k} of {n} TimeMaps written");

    fake.timemaps.store(0, Ordering::Relaxed);
    fake.timemap_latency_ms.store(0, Ordering::Relaxed);
    run(&s, &part, Arc::new(Progress::default()))
        .await
        .expect("resumed run");
    assert_eq!(fake.timemaps.load(Ordering::Relaxed), n - k);
    // The same TimeMaps, each read back whole (the frame the kill tore is never pointed at),
    // and no `.part` left over.
    assert_eq!(timemaps_of(&part), timemaps_of(&whole));
    assert_eq!(
        std::fs::read_to_string(part.join("sample.ndjson")).expect("sample"),
        std::fs::read_to_string(whole.join("sample.ndjson")).expect("sample")
    );
    task.abort();
}

/// A rootless domain spelled `oldfront.com` and `www.oldfront.com` (one domain once `www.` is
/// stripped; adjacent in the index, so asked in the same window): whichever host's first
/// capture arrives first, root upsampling asks `https://oldfront.com/` and the sample is the
/// same. It used to ask the host of the first kept answer to arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_asked_for_a_rootless_domain_does_not_depend_on_arrival_order() {
    let (cdx, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("index.txt");
    // `old…`: first captured in 1998, in root upsampling's window; the fake archives these
    // URLs as HTML. Everything kept (no long-tail draw) so the root shows in the sample.
    std::fs::write(
        &input,
        "com,oldfront)/a.html 19990101000000 p 0 1\n\
         com,oldfront,www)/b.html 19990101000000 p 0 1\n",
    )
    .expect("index");
    let s = Spec {
        long_tail_fraction: 0.0,
        ..spec(&input, &cdx)
    };
    let mut samples = Vec::new();
    for slow in ["www.oldfront.com", "oldfront.com"] {
        {
            let mut m = fake.host_latency_ms.lock().expect("lock");
            m.clear();
            m.insert(slow.to_string(), 300);
        }
        fake.seen.lock().expect("lock").clear();
        let out = dir.path().join(slow);
        run(&s, &out, Arc::new(Progress::default()))
            .await
            .expect("the run");
        let seen = fake.seen.lock().expect("lock").clone();
        let roots: Vec<&String> = seen.keys().filter(|u| u.ends_with(".com/")).collect();
        assert_eq!(
            roots,
            vec!["https://oldfront.com/"],
            "{slow} answered last: {seen:?}"
        );
        samples.push(std::fs::read_to_string(out.join("sample.ndjson")).expect("sample"));
    }
    assert!(
        samples[0].contains("\"https://oldfront.com/\""),
        "{}",
        samples[0]
    );
    assert_eq!(samples[0], samples[1]);
    task.abort();
}
