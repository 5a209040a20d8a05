//! `tmproxy serve` starts on any damaged cache directory (docs/operating.md, disk faults):
//! flipped bytes in `db`, in a blob file and in `conf`, a truncated `db`, and damage on which
//! sled itself panics. Each case runs the real binary on a copy of one populated store and
//! checks that it answers, never serves a TimeMap other than the one stored, and accounts for
//! every entry it no longer serves (moved aside, unreadable or lost).

use crate::disk_faults::{captures, healthz, timemap};
use crate::support::{admin_stats, ServeProcess};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "damaged-store-token";
/// Each test's whole run, far above what it needs, so only a hang reaches it.
const TEST_BOUND: Duration = Duration::from_secs(300);

/// A store populated by the real binary, and what it served for each URI-R.
struct Pristine {
    dir: tempfile::TempDir,
    archive: SimulatedArchive,
    /// (URI-R, link-format body as served by the process at `base`).
    served: Vec<(String, String)>,
    base: String,
}

impl Pristine {
    fn cache(&self) -> PathBuf {
        self.dir.path().join("pristine").join("cache")
    }
}

fn config_text(archive: &SimulatedArchive, cache: &Path) -> String {
    format!(
        "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"10s\"\ndeadline = \"10s\"\n\n\
         [cache]\npath = {:?}\n\n[admin]\ntoken = {TOKEN:?}\n\n\
         [[archives]]\nid = \"a\"\nname = \"a\"\ntimemap = {:?}\ntimegate = {:?}\n",
        cache.display().to_string(),
        archive.timemap_prefix(),
        archive.timegate_prefix()
    )
}

fn start_on(archive: &SimulatedArchive, cache: &Path) -> ServeProcess {
    let config = cache.with_extension("toml");
    std::fs::write(&config, config_text(archive, cache)).expect("config");
    ServeProcess::start(&config)
}

/// 20 small TimeMaps (inline in sled's log) and 4 of `BLOB_MEMENTOS` (sled blob files).
async fn populate() -> Pristine {
    let blob = crate::disk_faults::scattered_captures(crate::disk_faults::BLOB_MEMENTOS);
    let pristine = populate_with(|i, _| match i {
        0..20 => Some(captures(5)),
        20..24 => Some(blob.clone()),
        _ => None,
    })
    .await;
    assert!(
        std::fs::read_dir(pristine.cache().join("blobs"))
            .expect("blobs")
            .count()
            > 0,
        "the large TimeMaps are meant to be sled blobs"
    );
    pristine
}

/// A store populated by the real binary with one entry after another, `plan(i, db)` giving the
/// captures of entry i (the archive's TimeMap for it), or None to stop; `db` is the store's
/// log file, to stop at a size.
async fn populate_with(plan: impl Fn(usize, &Path) -> Option<Vec<String>>) -> Pristine {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::default()))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let pristine = Pristine {
        dir,
        archive,
        served: Vec::new(),
        base: String::new(),
    };
    std::fs::create_dir_all(pristine.cache().parent().expect("parent")).expect("mkdir");
    let mut server = start_on(&pristine.archive, &pristine.cache());
    let mut served = Vec::new();
    let db = pristine.cache().join("db");
    for i in 0.. {
        let Some(captures) = plan(i, &db) else {
            break;
        };
        pristine
            .archive
            .set_behaviour(Behaviour::TimeMap(TimeMapSpec {
                captures,
                ..TimeMapSpec::default()
            }));
        let uri_r = format!("http://example.com/page/{i}");
        let a = timemap(&server.base, &uri_r).await;
        assert_eq!(a.action, "stored", "{uri_r}");
        served.push((uri_r, a.body));
    }
    server.term();
    assert!(server.exit_within(Duration::from_secs(60)).await.success());
    Pristine {
        served,
        base: server.base.clone(),
        ..pristine
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn flip_byte(file: &Path, offset: u64) {
    let mut bytes = std::fs::read(file).expect("read");
    let at = usize::try_from(offset)
        .expect("offset")
        .min(bytes.len() - 1);
    bytes[at] ^= 0xff;
    std::fs::write(file, bytes).expect("write");
}

/// Runs the binary on a damaged copy of the store and checks it serves only what was stored
/// and accounts for everything else. `damage` gets the copy's cache directory. Gives the log.
async fn survives(pristine: &Pristine, case: &str, damage: impl FnOnce(&Path)) -> String {
    let cache = pristine.dir.path().join(case).join("cache");
    copy_tree(&pristine.cache(), &cache);
    damage(&cache);
    let mut server = start_on(&pristine.archive, &cache);
    let (status, _) = healthz(&server.base).await;
    assert_eq!(status, 200, "{case}");
    let mut hits = 0u64;
    for (uri_r, before) in &pristine.served {
        let a = timemap(&server.base, uri_r).await;
        assert_eq!(a.status, 200, "{case}: {uri_r}");
        if a.x_cache == "HIT" {
            hits += 1;
            let before = before.replace(&pristine.base, &server.base);
            assert!(
                a.body == before,
                "{case}: {uri_r} served from the cache with content other than what was stored"
            );
        }
    }
    let stats = admin_stats(&server.base, TOKEN).await;
    let persistent = &stats["tiers"]["persistent"];
    let count = |k: &str| persistent[k].as_u64().unwrap_or(0);
    let moved = std::fs::read_dir(cache.parent().expect("parent"))
        .expect("list")
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("cache.corrupt-")
        });
    let misses = pristine.served.len() as u64 - hits;
    eprintln!(
        "{case}: {hits} hits, {misses} misses, moved aside {moved}, unreadable {}, lost {}, sled panicked {}",
        count("unreadable"),
        count("lost"),
        server.log().contains("sled panicked")
    );
    if moved {
        assert_eq!(count("moved_aside"), 1, "{case}: {persistent}");
        assert!(server.log().contains("moved aside"), "{case}: not logged");
    } else {
        assert!(
            misses <= count("unreadable") + count("lost"),
            "{case}: {misses} entries silently no longer served: {persistent}\n{}",
            server.log()
        );
    }
    assert!(
        server.is_running(),
        "{case}: the server died:\n{}",
        server.log()
    );
    server.term();
    let exit = server.exit_within(Duration::from_secs(60)).await;
    assert_ne!(
        exit.code(),
        Some(101),
        "{case}: panicked:\n{}",
        server.log()
    );
    server.log()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_bytes_in_db_at_several_offsets() {
    tokio::time::timeout(TEST_BOUND, async {
        let pristine = populate().await;
        let len = std::fs::metadata(pristine.cache().join("db"))
            .expect("db")
            .len();
        let mut offsets = vec![0, 100, len / 16, len / 4, len / 2, 3 * len / 4, len - 1];
        if len > 2_000_000 {
            offsets.push(2_000_000);
        }
        for offset in offsets {
            survives(&pristine, &format!("db-at-{offset}"), |cache| {
                flip_byte(&cache.join("db"), offset)
            })
            .await;
        }
    })
    .await
    .expect("the test hung");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_a_blob_file() {
    tokio::time::timeout(TEST_BOUND, async {
        let pristine = populate().await;
        let blobs: Vec<PathBuf> = std::fs::read_dir(pristine.cache().join("blobs"))
            .expect("blobs")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        for (i, blob) in blobs.iter().enumerate() {
            let name = blob.file_name().expect("name").to_owned();
            let len = std::fs::metadata(blob).expect("blob").len();
            survives(&pristine, &format!("blob-{i}"), |cache| {
                flip_byte(&cache.join("blobs").join(&name), len / 2)
            })
            .await;
        }
    })
    .await
    .expect("the test hung");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_conf_and_a_truncated_db() {
    tokio::time::timeout(TEST_BOUND, async {
        let pristine = populate().await;
        survives(&pristine, "conf", |cache| flip_byte(&cache.join("conf"), 3)).await;
        survives(&pristine, "truncated-db", |cache| {
            let db = cache.join("db");
            let len = std::fs::metadata(&db).expect("db").len();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&db)
                .expect("open db")
                .set_len(len / 2)
                .expect("truncate");
        })
        .await;
    })
    .await
    .expect("the test hung");
}

/// sled's log is written in segments of 512 KiB; in a log of four or more, a byte flipped at the
/// same place in every segment makes sled 0.34 panic while opening it ("tried to serialize
/// Uninitialized"), not return an error, for places from about 40,000 to 130,000 into the
/// segment in every store tried (where exactly depends on how writes fell into segments, so a
/// few places are tried until one panics). The panic is caught on its own thread: the store is
/// moved aside like any other sled cannot open, and the server starts with a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_sled_panics_on_is_moved_aside() {
    const SEGMENT: u64 = 512 * 1024;
    tokio::time::timeout(TEST_BOUND, async {
        let mid_sized = crate::disk_faults::scattered_captures(2_000);
        let pristine = populate_with(|i, db| {
            let len = std::fs::metadata(db).map_or(0, |m| m.len());
            (len < 5 * SEGMENT && i < 400).then(|| mid_sized.clone())
        })
        .await;
        let mut logs = String::new();
        for place in [100_000, 60_000, 120_000, 45_000, 200_000] {
            let log = survives(&pristine, &format!("every-segment-at-{place}"), |cache| {
                let db = cache.join("db");
                let len = std::fs::metadata(&db).expect("db").len();
                for segment in 0..len.div_ceil(SEGMENT) {
                    flip_byte(&db, segment * SEGMENT + place);
                }
            })
            .await;
            if log.contains("sled panicked") {
                return;
            }
            logs.push_str(&log);
        }
        panic!("sled no longer panics on these damages: find one that it does\n{logs}");
    })
    .await
    .expect("the test hung");
}

/// The entry-count file beside sled's, damaged (eight 0xFF bytes, or twelve: the count and its
/// checksum), on a store that is otherwise whole: nothing counted as lost (it once reported
/// 18446744073709551585 of 3), the damage logged, every entry still served.
#[tokio::test]
async fn a_damaged_entry_count_file_is_unknown_not_a_loss() {
    let pristine = populate_with(|i, _| (i < 3).then(|| captures(2))).await;
    for (case, bytes) in [("ff8", vec![0xFF; 8]), ("ff12", vec![0xFF; 12])] {
        let cache = pristine.dir.path().join(case).join("cache");
        copy_tree(&pristine.cache(), &cache);
        std::fs::write(cache.join("tmproxy-entry-count"), bytes).expect("damage");
        let server = start_on(&pristine.archive, &cache);
        let stats = admin_stats(&server.base, TOKEN).await;
        let persistent = &stats["tiers"]["persistent"];
        assert_eq!(persistent["lost"], 0, "{case}: {persistent}");
        assert_eq!(persistent["entries"], 3, "{case}: {persistent}");
        assert!(
            server.log().contains("entry-count file is damaged"),
            "{case}: {}",
            server.log()
        );
        for (uri_r, _) in &pristine.served {
            assert_eq!(timemap(&server.base, uri_r).await.x_cache, "HIT", "{case}");
        }
    }
}
