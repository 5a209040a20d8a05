//! What docs/operating.md promises of the process itself, checked against the real binary:
//! a second tmproxy on the same cache directory waits for the lock and then exits with a
//! reason, and a burst of cache writes runs on a bounded number of threads.

use crate::support::{client, ChildGuard, ServeProcess};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

/// A config for the real binary: these archives, the cache under `dir`.
fn write_config(dir: &Path, archive: &SimulatedArchive) -> std::path::PathBuf {
    let text = format!(
        "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"10s\"\ndeadline = \"10s\"\n\n\
         [cache]\npath = {:?}\n\n\
         [[archives]]\nid = \"a\"\nname = \"a\"\ntimemap = {:?}\ntimegate = {:?}\n",
        dir.join("data").join("cache").display().to_string(),
        archive.timemap_prefix(),
        archive.timegate_prefix(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_tmproxy_on_the_same_cache_waits_then_exits_with_a_reason() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &archive);
    let first = ServeProcess::start(&config);

    let started = Instant::now();
    let mut second = ChildGuard(Some(
        Command::new(env!("CARGO_BIN_EXE_tmproxy"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env_remove("TMPROXY_CONFIG")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("second serve starts"),
    ));
    // It waits for the lock (docs/operating.md: up to 10 s) instead of giving up at once…
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        second.get().try_wait().expect("try_wait").is_none(),
        "the second process gave up at once"
    );
    // …then exits on its own, with a reason (the bound only catches a hang).
    let status = loop {
        if let Some(status) = second.get().try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the second process never gave up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut log = String::new();
    if let Some(mut stderr) = second.get().stderr.take() {
        use std::io::Read;
        let _ = stderr.read_to_string(&mut log);
    }
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("is another tmproxy using it?"), "{log}");
    eprintln!("second process exited after {:?}", started.elapsed());

    // The first one never noticed.
    let r = client()
        .get(format!("{}/healthz", first.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(r.status().as_u16(), 200);
}

/// Threads of process `pid` by kind, from /proc: tokio's (its workers and its blocking pool share
/// the name `tokio-rt-worker`, `tokio-runtime-worker` in older tokio, cut to 15 bytes; the
/// connection threads `tmproxy-conn-N` and their blocking pools `tmproxy-blk-N`) and the cache
/// store's sled calls (`tmproxy-store`).
fn threads_of(pid: u32) -> (usize, usize) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    let names: Vec<String> = tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .collect();
    (
        names
            .iter()
            .filter(|n| {
                ["tokio-", "tmproxy-conn-", "tmproxy-blk-"]
                    .iter()
                    .any(|p| n.starts_with(p))
            })
            .count(),
        names.iter().filter(|n| n.trim() == "tmproxy-store").count(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_cache_writes_runs_on_a_bounded_number_of_threads() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20020101000000",
    ])))
    .await
    .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &archive);
    // A write that passes `write_timeout` gives its slot back and keeps its thread (by design:
    // a wedged sled costs a thread, never the pool), so on a machine loaded by the rest of the
    // suite the 5 s default made extra threads that are no leak. The bound is for a disk that
    // answers: the abandoned case has its own test (`fault_tests`).
    let text = std::fs::read_to_string(&config).expect("config");
    let text = text.replace("[cache]\n", "[cache]\nwrite_timeout = \"120s\"\n");
    assert!(text.contains("write_timeout"), "no [cache] table in {text}");
    std::fs::write(&config, text).expect("config");
    let server = ServeProcess::start(&config);
    let pid = server.pid();

    // 400 distinct misses, 100 at a time: each ends in a sled put and its fsync, on the
    // blocking pool. Unbounded, tokio would spread them over up to 512 threads.
    let (mut most, mut most_store) = threads_of(pid);
    let http = client();
    for round in 0..4 {
        let requests: Vec<_> = (0..100)
            .map(|i| {
                let url = format!(
                    "{}/timemap/link/http://burst.example/{round}/{i}",
                    server.base
                );
                let http = http.clone();
                tokio::spawn(async move { http.get(url).send().await.map(|r| r.status()) })
            })
            .collect();
        // Sampled for as long as the burst lasts (however slow a loaded machine makes it):
        // store threads live only as long as one sled call, so a fixed window can miss them all.
        let burst_done = std::sync::atomic::AtomicBool::new(false);
        let sampling = async {
            let (mut most, mut most_store) = (0, 0);
            while !burst_done.load(std::sync::atomic::Ordering::SeqCst) {
                let (tokio, store) = threads_of(pid);
                most = most.max(tokio);
                most_store = most_store.max(store);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (most, most_store)
        };
        let burst = async {
            let statuses = futures::future::join_all(requests).await;
            burst_done.store(true, std::sync::atomic::Ordering::SeqCst);
            statuses
        };
        let ((during, during_store), statuses) = tokio::join!(sampling, burst);
        most = most.max(during);
        most_store = most_store.max(during_store);
        for s in statuses {
            let status = s.expect("task").expect("answered");
            assert_eq!(status.as_u16(), 200, "{}", server.log());
        }
    }
    // The main runtime's workers (one a core) and the connection threads (one a core), each
    // runtime's blocking pool: MAX_BLOCKING_THREADS for the main one, as many shared out between
    // the connection threads; tokio's default of 512 blocking threads spreads such a burst over
    // dozens. The sled calls (each put and its fsync) run on at most DISK_THREADS threads.
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let blocking = tmproxy::app::MAX_BLOCKING_THREADS;
    let bound = 2 * cores + blocking + cores * blocking.div_ceil(cores);
    let store_bound = tmproxy::cache::store::DISK_THREADS;
    eprintln!(
        "at most {most} tokio threads (bound {bound}), {most_store} store threads (bound {store_bound})"
    );
    assert!(most <= bound, "{most} tokio threads, over {bound}");
    assert!(
        most_store <= store_bound,
        "{most_store} store threads, over {store_bound}"
    );
    assert!(
        most_store > 0,
        "no store thread was seen: the names changed?"
    );
}
