//! A disk that refuses writes (read-only for the server's uid, or full) never wedges the cache:
//! the answers say `not_stored` within `write_timeout`, /healthz says `degraded`, and once the
//! disk is back new entries are stored again without a restart (docs/operating.md, disk
//! faults). No root needed: as root the server runs as `nobody` (root ignores permissions), as
//! anyone else as itself; the full disk is a tmpfs, mounted in a user and mount namespace of its
//! own when the suite is not root.

use crate::support::{client, config_for, skip, start_proxy, ServeProcess};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tmproxy::cache::store::Store;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "disk-faults-token";
/// The configured `[cache] write_timeout` of these tests.
const WRITE_TIMEOUT_SECS: u64 = 3;
/// An answer must come within write_timeout plus this: the fan-out to a local fake archive and
/// the rest of the request, on two busy cores.
const MARGIN: Duration = Duration::from_secs(15);

/// `n` distinct 14-digit timestamps.
pub fn captures(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let (day, hour, minute) = (1 + i % 28, (i / 28) % 24, i / (28 * 24));
            format!("201001{day:02}{hour:02}{minute:02}00")
        })
        .collect()
}

/// `n` distinct capture times scattered over 1996-2025 (a fixed LCG, so every run is the same):
/// unlike evenly spaced ones they do not deflate to almost nothing, so a TimeMap of a few
/// thousand of them is still over sled's blob threshold (128 KiB) once stored (compressed).
pub fn scattered_captures(n: usize) -> Vec<String> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < n {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = state >> 16;
        seen.insert(format!(
            "{}{:02}{:02}{:02}{:02}{:02}",
            1996 + r % 30,
            1 + (r >> 5) % 12,
            1 + (r >> 9) % 28,
            (r >> 14) % 24,
            (r >> 19) % 60,
            (r >> 25) % 60
        ));
    }
    seen.into_iter().collect()
}

/// Mementos in a TimeMap large enough that sled writes it as a file under `blobs/` (over 128 KiB
/// stored, compressed: sled's 512 KiB segment / 4), the write that wedged sled for good. The
/// compact stored form puts 10,000 of them just under the threshold.
pub const BLOB_MEMENTOS: usize = 20_000;

/// An archive whose TimeMaps are sled blobs ([`BLOB_MEMENTOS`] scattered captures each).
pub async fn big_archive() -> SimulatedArchive {
    SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec {
        captures: scattered_captures(BLOB_MEMENTOS),
        ..TimeMapSpec::default()
    }))
    .await
    .expect("archive starts")
}

/// What one TimeMap request gave.
pub struct Answer {
    pub status: u16,
    pub x_cache: String,
    pub action: String,
    pub body: String,
    pub took: Duration,
}

pub async fn timemap(base: &str, uri_r: &str) -> Answer {
    let started = Instant::now();
    let r = client()
        .get(format!("{base}/timemap/link/{uri_r}"))
        .timeout(Duration::from_secs(WRITE_TIMEOUT_SECS) + MARGIN)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {uri_r} did not answer in time: {e}"));
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, x_cache, action) = (
        r.status().as_u16(),
        header("x-cache"),
        header("x-cache-action"),
    );
    let body = r.text().await.expect("body");
    Answer {
        status,
        x_cache,
        action,
        body,
        took: started.elapsed(),
    }
}

pub async fn healthz(base: &str) -> (u16, String) {
    let r = client()
        .get(format!("{base}/healthz"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("healthz answers");
    (r.status().as_u16(), r.text().await.expect("body"))
}

pub async fn metric(base: &str, name: &str) -> u64 {
    match crate::support::metric_value(base, name).await {
        Some(v) => v as u64,
        None => panic!("no {name} in {base}/metrics"),
    }
}

/// A miss whose write failed: answered in time, served, and not claimed stored.
async fn assert_not_stored(base: &str, uri_r: &str) {
    let a = timemap(base, uri_r).await;
    assert_eq!(a.status, 200, "{uri_r}: {}", a.body);
    assert_eq!(a.x_cache, "MISS", "{uri_r}");
    assert_eq!(
        a.action, "not_stored",
        "{uri_r}: a failed write was reported as stored"
    );
    assert!(
        a.took < Duration::from_secs(WRITE_TIMEOUT_SECS) + MARGIN,
        "{uri_r} took {:?}",
        a.took
    );
}

/// The TOML of a server with one archive and this cache directory.
fn config_text(archive: &SimulatedArchive, cache: &Path) -> String {
    format!(
        "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"10s\"\ndeadline = \"10s\"\n\n\
         [cache]\npath = {:?}\nwrite_timeout = \"{WRITE_TIMEOUT_SECS}s\"\n\n[admin]\ntoken = {TOKEN:?}\n\n\
         [[archives]]\nid = \"big\"\nname = \"big\"\ntimemap = {:?}\ntimegate = {:?}\n",
        cache.display().to_string(),
        archive.timemap_prefix(),
        archive.timegate_prefix()
    )
}

/// `chmod` of `path` and everything under it: `writable` adds u+w, else removes a-w.
fn chmod_tree(path: &Path, writable: bool) {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    let mut mode = meta.permissions().mode();
    mode = if writable {
        mode | 0o200
    } else {
        mode & !0o222
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).expect("list") {
            chmod_tree(&entry.expect("entry").path(), writable);
        }
    }
}

/// `chown -R uid:gid path`.
fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("list") {
            chown_tree(&entry.expect("entry").path(), uid, gid);
        }
    }
}

const NOBODY: (u32, u32) = (65534, 65534);

/// Whether this process runs as root, whom file permissions do not hold back.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective uid.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// What a test of file permissions starts from: the archive, a temporary directory the server
/// may enter, the cache path in it, and whom to run the server as (`nobody` when this suite is
/// root, else None: this user, already held to permissions). None when root cannot switch uid
/// (the test is then skipped or failed by [`skip`]).
struct PermissionTest {
    archive: SimulatedArchive,
    dir: tempfile::TempDir,
    cache: PathBuf,
    server_uid: Option<(u32, u32)>,
}

async fn permission_test() -> Option<PermissionTest> {
    let server_uid = if is_root() {
        if let Some(why) = cannot_switch_uid() {
            skip(&format!(
                "running as root, and cannot run the server as another uid ({why})"
            ));
            return None;
        }
        Some(NOBODY)
    } else {
        None
    };
    let archive = big_archive().await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cache = dir.path().join("cache");
    Some(PermissionTest {
        archive,
        dir,
        cache,
        server_uid,
    })
}

/// `tmproxy serve` on `config` as `uid` (None: as this user).
fn serve_as(config: &Path, uid: Option<(u32, u32)>) -> ServeProcess {
    match uid {
        Some((uid, gid)) => ServeProcess::start_as(config, uid, gid),
        None => ServeProcess::start(config),
    }
}

/// Why this suite cannot run a process as `nobody`, if it cannot.
fn cannot_switch_uid() -> Option<String> {
    use std::os::unix::process::CommandExt;
    let ran = std::process::Command::new("true")
        .uid(NOBODY.0)
        .gid(NOBODY.1)
        .status();
    match ran {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`true` as uid {} exited {s}", NOBODY.0)),
        Err(e) => Some(format!("cannot run as uid {}: {e}", NOBODY.0)),
    }
}

/// Restores write permission when the test ends, however it ends, so the temp dir can go.
struct Writable(PathBuf);

impl Drop for Writable {
    fn drop(&mut self) {
        if self.0.exists() {
            chmod_tree(&self.0, true);
        }
    }
}

/// Each test's whole run; far above what it needs (about 5 s), so only a hang reaches it.
const TEST_BOUND: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_cache_dir_answers_not_stored_and_stores_again_once_writable() {
    tokio::time::timeout(TEST_BOUND, read_only_cache_dir())
        .await
        .expect("the test hung");
}

async fn read_only_cache_dir() {
    let Some(PermissionTest {
        archive,
        dir,
        cache,
        server_uid,
    }) = permission_test().await
    else {
        return;
    };
    std::fs::create_dir_all(&cache).expect("mkdir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, config_text(&archive, &cache)).expect("config");
    if let Some((uid, gid)) = server_uid {
        chown_tree(dir.path(), uid, gid);
    }
    let _restore = Writable(cache.clone());

    let mut server = serve_as(&config, server_uid);
    let base = server.base.clone();
    let first = timemap(&base, "http://example.com/first").await;
    assert_eq!(first.action, "stored", "{}", server.log());
    assert!(
        std::fs::read_dir(cache.join("blobs"))
            .expect("blobs")
            .count()
            > 0,
        "the TimeMaps are meant to be large enough to be sled blobs"
    );

    chmod_tree(&cache, false);
    for i in 0..3 {
        assert_not_stored(&base, &format!("http://example.com/read-only/{i}")).await;
    }
    let (status, body) = healthz(&base).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("degraded: "), "{body}");
    assert!(metric(&base, "tmproxy_cache_writes_failed_total").await >= 3);

    chmod_tree(&cache, true);
    let back = timemap(&base, "http://example.com/writable-again").await;
    assert_eq!(
        back.action,
        "stored",
        "not stored once writable:\n{}",
        server.log()
    );
    assert_eq!(healthz(&base).await, (200, "ok\n".to_string()));

    // A real check that it reached the disk: a new process serves it without asking the archive.
    server.term();
    assert!(server.exit_within(Duration::from_secs(60)).await.success());
    let asked = archive.requests();
    let server = serve_as(&config, server_uid);
    for (uri_r, before) in [
        ("http://example.com/writable-again", &back.body),
        ("http://example.com/first", &first.body),
    ] {
        let again = timemap(&server.base, uri_r).await;
        assert_eq!(
            again.x_cache, "HIT",
            "{uri_r} not served from the persistent tier"
        );
        // The same TimeMap; only our own links name the new process's port.
        let before = before.replace(&base, &server.base);
        assert!(again.body == before, "{uri_r} served different content");
    }
    assert_eq!(archive.requests(), asked, "the archive was asked again");
    let not_stored = timemap(&server.base, "http://example.com/read-only/0").await;
    assert_eq!(
        not_stored.x_cache, "MISS",
        "an entry answered not_stored was on disk"
    );
}

/// Unmounts the tmpfs when the test ends.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fills the filesystem of `dir` with one file; its path.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("filler");
    let chunk = vec![0u8; 64 * 1024];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_not_stored_and_stores_again_once_space_is_freed() {
    tokio::time::timeout(TEST_BOUND, full_disk())
        .await
        .expect("the test hung");
}

async fn full_disk() {
    if !is_root() {
        return rerun_in_user_namespace(
            "disk_faults::a_full_disk_answers_not_stored_and_stores_again_once_space_is_freed",
        )
        .await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=5m", "tmpfs"])
        .arg(dir.path())
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return skip(&format!(
                "cannot mount a 5 MB tmpfs: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("cannot run mount: {e}")),
    }
    let _unmount = Mounted(dir.path().to_path_buf());
    let archive = big_archive().await;
    let mut config = config_for(&[("big", &archive)]);
    config.cache.path = dir.path().join("cache").display().to_string();
    config.cache.write_timeout = Duration::from_secs(WRITE_TIMEOUT_SECS);
    config.upstream.timeout = Duration::from_secs(10);
    config.upstream.deadline = Duration::from_secs(10);
    let proxy = start_proxy(config).await;
    let base = proxy.base.clone();
    let state = proxy.state.clone().expect("state");
    let store = state.cache.store().expect("a store").clone();

    assert_eq!(
        timemap(&base, "http://example.com/before").await.action,
        "stored"
    );
    let filler = fill(dir.path());
    for i in 0..3 {
        assert_not_stored(&base, &format!("http://example.com/full/{i}")).await;
        // Stored under the URI-R's canonical key (`[cache] canonical`, the default).
        let key = state.cache.key_of(&crate::support::uri_r(&format!(
            "http://example.com/full/{i}"
        )));
        assert_eq!(key, format!("com,example)/full/{i}"));
        assert!(store.persistent().get(&key).await.is_none());
    }
    let (status, body) = healthz(&base).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("degraded: "), "{body}");
    assert!(store.persistent().stats().writes_failed >= 3);

    std::fs::remove_file(&filler).expect("free the space");
    for i in 0..3 {
        let uri_r = format!("http://example.com/freed/{i}");
        let a = timemap(&base, &uri_r).await;
        assert_eq!(
            a.action, "stored",
            "{uri_r} not stored once space was freed"
        );
        assert!(
            store
                .persistent()
                .get(&state.cache.key_of(&crate::support::uri_r(&uri_r)))
                .await
                .is_some(),
            "{uri_r} not on disk"
        );
    }
    assert_eq!(healthz(&base).await, (200, "ok\n".to_string()));
    drop(store);
    drop(state);
    proxy.stop().await;
}

/// Set by [`rerun_in_user_namespace`] in the test it runs, so that one cannot recurse.
const IN_NAMESPACE: &str = "TMPROXY_TEST_IN_USER_NAMESPACE";

/// Runs the test `name` of this binary again in a user and mount namespace of its own (`unshare
/// --user --map-root-user --mount`), where it is root for its own mounts without being root on
/// the machine; its verdict is this test's.
async fn rerun_in_user_namespace(name: &str) {
    if std::env::var_os(IN_NAMESPACE).is_some() {
        return skip("not root even inside a user namespace");
    }
    let unshare = |program: &std::ffi::OsStr| {
        let mut command = tokio::process::Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "--mount"])
            .arg(program)
            .env(IN_NAMESPACE, "1")
            .kill_on_drop(true);
        command
    };
    match unshare("true".as_ref()).output().await {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return skip(&format!(
                "not root, and no user namespace to mount in: unshare: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("not root, and cannot run unshare: {e}")),
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = unshare(exe.as_os_str())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .output()
        .await
        .expect("unshare runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{name} in a user namespace:\n{text}"
    );
}

/// A store this uid may not open is the operator's mistake, not damage: the start fails saying
/// so, and the store is left where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_this_user_cannot_open_is_refused_not_moved_aside() {
    use std::os::unix::process::CommandExt;
    let Some(PermissionTest {
        archive,
        dir,
        cache,
        server_uid,
    }) = permission_test().await
    else {
        return;
    };
    drop(
        tmproxy::cache::store::open::<
            tmproxy::cache::service::CachedTimeMap<tmproxy::http::view::View>,
        >(
            &cache,
            1 << 20,
            Duration::from_secs(5),
            tmproxy::cache::store::SLED_CACHE_BYTES,
        )
        .expect("a store of this user's"),
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, config_text(&archive, &cache)).expect("config");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tmproxy"));
    // The parent is the server's own: moving the store aside would be allowed, so only the
    // check stops it.
    let _restore = match server_uid {
        Some((uid, gid)) => {
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
            command.uid(uid).gid(gid);
            None
        }
        None => {
            // Not root: a store its owner has shut itself out of.
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o000))
                .expect("chmod");
            Some(Reopened(cache.clone()))
        }
    };
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env_remove("TMPROXY_CONFIG")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("serve kept running on a store it cannot open");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut log = String::new();
    use std::io::Read;
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut log);
    assert!(!status.success(), "{log}");
    assert_ne!(status.code(), Some(101), "panicked: {log}");
    assert!(log.contains("permission denied"), "{log}");
    let moved = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains("corrupt"));
    assert!(!moved, "a store that is fine was moved aside:\n{log}");
}

/// Gives its owner back a directory it was shut out of (mode 000), so the temp dir can go.
struct Reopened(PathBuf);

impl Drop for Reopened {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}
