//! sled failing under the real binary, the faults injected below the process: libfiu's POSIX
//! preload (`fiu-run -x`, switched on and off in the running server by `fiu-ctrl`) fails sled's
//! writes and syncs with EIO, and a shim of ours (`stuck_disk.c`, preloaded) makes them never
//! return. docs/operating.md, "A failing disk never wedges the cache": the degraded gauge,
//! a purge answering 500 while sled fails, and a stuck sled call leaving the cache memory-only.

use crate::disk_faults::{healthz, metric, timemap};
use crate::support::{client, skip, ServeProcess};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tmproxy::cache::store::DISK_THREADS;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "sled-faults-token";

/// The calls sled makes to put an entry on disk (the log's pwrite, its syncs). Not `write`:
/// that would fail the sockets and the log too.
const SLED_WRITES: [&str; 3] = [
    "posix/io/rw/pwrite",
    "posix/io/sync/fsync",
    "posix/io/sync/fdatasync",
];

/// Recovery reopens with a backoff of up to 5 s; this is far past it on two busy cores.
const RECOVERY_BOUND: Duration = Duration::from_secs(60);

/// Each test's whole run; only a hang reaches it.
const TEST_BOUND: Duration = Duration::from_secs(180);

/// A server on a cache in `dir` with one small archive (entries far below sled's blob size). The
/// deadline is far longer than the answers' bound ([`timemap`]'s), so it is `write_timeout`, not
/// the deadline, that cuts a request's wait for a stuck write.
async fn setup(dir: &Path) -> (SimulatedArchive, PathBuf) {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&[
        "20010101000000",
        "20020101000000",
    ])))
    .await
    .expect("archive starts");
    let config = dir.join("config.toml");
    let text = format!(
        "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"30s\"\ndeadline = \"60s\"\n\n\
         [cache]\npath = {:?}\nwrite_timeout = \"2s\"\n\n[admin]\ntoken = {TOKEN:?}\n\n\
         [[archives]]\nid = \"small\"\nname = \"small\"\ntimemap = {:?}\ntimegate = {:?}\n",
        dir.join("cache").display().to_string(),
        archive.timemap_prefix(),
        archive.timegate_prefix()
    );
    std::fs::write(&config, text).expect("config");
    (archive, config)
}

/// `program` found on PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// `fiu-ctrl` running `command` (`enable` or `disable`) on every point of [`SLED_WRITES`] in the
/// process `pid`, whose control FIFOs start with `ctl`.
fn fiu_ctrl(ctl: &Path, pid: u32, command: &str) {
    let mut ctrl = Command::new("fiu-ctrl");
    ctrl.arg("-f").arg(ctl);
    for point in SLED_WRITES {
        // failinfo is the errno the failed call sets: EIO.
        let extra = if command == "enable" {
            ",failinfo=5"
        } else {
            ""
        };
        ctrl.arg("-c").arg(format!("{command} name={point}{extra}"));
    }
    let out = ctrl.arg(pid.to_string()).output().expect("fiu-ctrl runs");
    assert!(
        out.status.success(),
        "fiu-ctrl {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn purge(base: &str, uri_r: &str) -> u16 {
    client()
        .delete(format!("{base}/admin/cache/{uri_r}"))
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("purge answers")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_sled_fails_the_cache_is_degraded_and_a_purge_is_500_until_it_is_back() {
    tokio::time::timeout(TEST_BOUND, sled_fails())
        .await
        .expect("the test hung");
}

async fn sled_fails() {
    if !on_path("fiu-run") || !on_path("fiu-ctrl") {
        return skip("libfiu's fiu-run and fiu-ctrl are not on PATH (apt-get install fiu-utils)");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (_archive, config) = setup(dir.path()).await;
    let ctl = dir.path().join("fiu-ctl");
    let ctl_arg = ctl.display().to_string();
    let server = ServeProcess::start_under(&["fiu-run", "-x", "-f", &ctl_arg], &config, &[]);
    let base = server.base.clone();
    let degraded = |base: String| async move { metric(&base, "tmproxy_cache_degraded").await };

    let (kept, purged) = ("http://example.com/kept", "http://example.com/purged");
    for uri_r in [kept, purged] {
        let a = timemap(&base, uri_r).await;
        assert_eq!(a.action, "stored", "{}", server.log());
    }
    assert_eq!(degraded(base.clone()).await, 0);

    fiu_ctrl(&ctl, server.pid(), "enable");
    let failed = timemap(&base, "http://example.com/while-failing").await;
    assert_eq!(failed.status, 200, "{}", failed.body);
    assert_eq!(failed.action, "not_stored", "{}", server.log());
    let (status, body) = healthz(&base).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("degraded: "), "{body}");
    assert_eq!(
        degraded(base.clone()).await,
        1,
        "the gauge while sled fails"
    );
    assert_eq!(purge(&base, purged).await, 500, "a purge while sled fails");
    // The hot tier still serves what was stored (the purged entry left it).
    let hit = timemap(&base, kept).await;
    assert_eq!((hit.status, hit.x_cache.as_str()), (200, "HIT"));

    fiu_ctrl(&ctl, server.pid(), "disable");
    let started = Instant::now();
    for i in 0.. {
        let a = timemap(&base, &format!("http://example.com/back/{i}")).await;
        if a.action == "stored" {
            break;
        }
        assert!(
            started.elapsed() < RECOVERY_BOUND,
            "not stored again once sled's writes succeed:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        degraded(base.clone()).await,
        0,
        "the gauge once sled is back"
    );
    assert_eq!(healthz(&base).await, (200, "ok\n".to_string()));
    assert_eq!(purge(&base, kept).await, 204, "a purge once sled is back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_sled_call_leaves_the_cache_memory_only_and_answering() {
    tokio::time::timeout(TEST_BOUND, sled_stuck())
        .await
        .expect("the test hung");
}

/// `stuck_disk.c` built into `dir`, or why it could not be (no C compiler).
fn build_shim(dir: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/stuck_disk.c");
    let shim = dir.join("stuck_disk.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .output()
        .map_err(|e| format!("cannot run cc to build the stuck-disk shim: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc failed on {}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(shim)
}

async fn sled_stuck() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shim = match build_shim(dir.path()) {
        Ok(shim) => shim,
        Err(why) => return skip(&why),
    };
    let (_archive, config) = setup(dir.path()).await;
    let flag = dir.path().join("stuck");
    let (shim, flag_arg) = (shim.display().to_string(), flag.display().to_string());
    let server = ServeProcess::start_with(
        &config,
        &[],
        &[
            ("LD_PRELOAD", shim.as_str()),
            ("TMPROXY_STUCK_FLAG", flag_arg.as_str()),
        ],
    );
    let base = server.base.clone();
    let (kept, purged) = ("http://example.com/kept", "http://example.com/purged");
    for uri_r in [kept, purged] {
        let a = timemap(&base, uri_r).await;
        assert_eq!(a.action, "stored", "{}", server.log());
    }

    // From here every sled write and sync blocks, for good as far as the server can tell.
    std::fs::write(&flag, b"").expect("flag");
    let first = timemap(&base, "http://example.com/stuck/first").await;
    assert_eq!((first.status, first.action.as_str()), (200, "not_stored"));
    // More misses at once than sled has threads: none waits on a slot a stuck call holds.
    let misses = (0..2 * DISK_THREADS).map(|i| {
        let base = base.clone();
        async move { timemap(&base, &format!("http://example.com/stuck/{i}")).await }
    });
    for a in futures::future::join_all(misses).await {
        assert_eq!(
            (a.status, a.action.as_str()),
            (200, "not_stored"),
            "{}",
            a.body
        );
    }
    let hit = timemap(&base, kept).await;
    assert_eq!((hit.status, hit.x_cache.as_str()), (200, "HIT"));
    // The reopen cannot take sled's lock from the stuck call: memory only, and said so.
    let started = Instant::now();
    while !server
        .log()
        .contains("cannot reopen the persistent cache tier")
    {
        assert!(
            started.elapsed() < RECOVERY_BOUND,
            "no reopen was tried:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, body) = healthz(&base).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("degraded: "), "{body}");
    assert_eq!(metric(&base, "tmproxy_cache_degraded").await, 1);
    let later = timemap(&base, "http://example.com/stuck/later").await;
    assert_eq!((later.status, later.action.as_str()), (200, "not_stored"));
    assert_eq!(timemap(&base, kept).await.x_cache, "HIT");
    // The server is killed when it is dropped; the flag goes with the temp dir.
    drop(server);
}
