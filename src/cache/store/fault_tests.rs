//! Unit tests of the store against damaged files and failing writes (the HTTP-level ones are in
//! tests/it/disk_faults.rs and damaged_store.rs).

use super::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Note {
    body: String,
}

impl Cacheable for Note {
    const FORMAT_VERSION: u32 = 1;
    fn approx_bytes(&self) -> usize {
        self.body.len() + 32
    }
    fn revision(&self) -> u64 {
        crate::cache::store::body_revision(&self.body)
    }
}

fn note(body: &str) -> Arc<Note> {
    Arc::new(Note { body: body.into() })
}

#[tokio::test]
async fn a_flipped_byte_in_a_value_fails_its_checksum_and_is_a_counted_miss() {
    let dir = TempDir::new().expect("tempdir");
    let store = open::<Note>(dir.path(), 1 << 20, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("open");
    store
        .persistent()
        .put("k", note("original"))
        .await
        .expect("put");
    let db = store.persistent().db();
    let mut raw = db.get(b"k").expect("get").expect("present").to_vec();
    // Still valid JSON of the right shape, different content: only the checksum can tell.
    let at = raw
        .windows(8)
        .position(|w| w == b"original")
        .expect("body in envelope");
    raw[at] = b'O';
    db.insert(b"k", raw).expect("raw insert");
    assert!(
        store.persistent().get("k").await.is_none(),
        "damaged value served"
    );
    assert_eq!(store.stats().unreadable, 1);
}

#[test]
fn an_envelope_without_a_checksum_still_reads() {
    let old = br#"{"v":1,"value":{"body":"from before checksums"}}"#;
    assert_eq!(
        envelope::decode::<Note>(old).expect("old envelope").body,
        "from before checksums"
    );
    let bad = br#"{"v":1,"crc32":1,"value":{"body":"x"}}"#;
    let why = envelope::decode::<Note>(bad).expect_err("wrong checksum");
    assert!(why.contains("checksum mismatch"), "{why}");
}

#[tokio::test]
async fn entries_gone_since_the_last_run_are_counted_as_lost() {
    let dir = TempDir::new().expect("tempdir");
    {
        let store =
            open::<Note>(dir.path(), 1 << 20, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("open");
        for i in 0..5 {
            store.put(&format!("k{i}"), note("v")).await.expect("put");
        }
        // Behind the record's back, as sled does when it drops a damaged blob on recovery.
        let db = store.persistent().db();
        db.remove(b"k1").expect("remove");
        db.remove(b"k3").expect("remove");
        db.flush().expect("flush");
    }
    let store = open::<Note>(dir.path(), 1 << 20, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("reopen");
    assert_eq!(store.stats().entries, 3);
    assert_eq!(store.stats().lost, 2);
    drop(store);
    // Reported once: the record now counts what is there.
    let store =
        open::<Note>(dir.path(), 1 << 20, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("reopen again");
    assert_eq!(store.stats().lost, 0);
}

#[test]
fn a_store_sled_cannot_open_is_moved_aside_and_replaced() {
    let parent = TempDir::new().expect("tempdir");
    let path = parent.path().join("cache");
    drop(PersistentTier::<Note>::open(&path, WRITE_TIMEOUT).expect("create"));
    std::fs::write(path.join("conf"), b"\x00garbage, not a sled conf").expect("damage conf");
    let tier = PersistentTier::<Note>::open(&path, WRITE_TIMEOUT).expect("opens anyway");
    assert_eq!(tier.stats().moved_aside, 1);
    let aside: Vec<_> = std::fs::read_dir(parent.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cache.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        std::fs::read(parent.path().join(&aside[0]).join("conf"))
            .expect("kept")
            .starts_with(b"\x00garbage"),
        "the damaged files are kept as they were"
    );
}

#[test]
fn a_held_store_is_refused_never_moved_aside() {
    let parent = TempDir::new().expect("tempdir");
    let path = parent.path().join("cache");
    let _held = PersistentTier::<Note>::open(&path, WRITE_TIMEOUT).expect("create");
    // Damage that makes sled refuse before it even tries the lock.
    std::fs::write(path.join("conf"), b"garbage").expect("damage conf");
    let err =
        PersistentTier::<Note>::open_waiting(&path, WRITE_TIMEOUT, Duration::from_millis(200))
            .err()
            .expect("held");
    assert!(err.to_string().contains("another tmproxy"), "{err}");
    let moved = std::fs::read_dir(parent.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains("corrupt"));
    assert!(!moved, "a directory in use was moved aside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_taken_out_of_service_is_reopened_and_stores_again() {
    let dir = TempDir::new().expect("tempdir");
    let store = open::<Note>(dir.path(), 1 << 20, WRITE_TIMEOUT, SLED_CACHE_BYTES).expect("open");
    store.put("before", note("kept")).await.expect("put");
    store
        .persistent()
        .out_of_service("simulated sled failure".into());
    assert!(store.persistent().degraded().is_some());
    let during = store.put("during", note("memory only")).await;
    assert!(
        during.is_err(),
        "a write while out of service is not stored"
    );
    assert_eq!(
        store.get("during").await.expect("served from memory").body,
        "memory only"
    );
    let started = std::time::Instant::now();
    while store.persistent().degraded().is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never reopened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    store
        .put("after", note("stored"))
        .await
        .expect("stores again");
    assert_eq!(
        store.persistent().get("after").await.expect("on disk").body,
        "stored"
    );
    assert_eq!(
        store
            .persistent()
            .get("before")
            .await
            .expect("on disk")
            .body,
        "kept"
    );
    assert_eq!(store.stats().writes_failed, 1);
    assert_eq!(store.stats().entries, 2);
    assert!(!store.persistent().sled.recovering.load(Ordering::Relaxed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_call_that_never_returns_is_abandoned_at_write_timeout_and_frees_its_slot() {
    let dir = TempDir::new().expect("tempdir");
    let limit = Duration::from_millis(300);
    let tier = PersistentTier::<Note>::open(dir.path(), limit).expect("open");
    let started = std::time::Instant::now();
    // More stuck calls than there are slots: each must still give up in time.
    let calls = (0..12).map(|_| {
        let tier = tier.clone();
        async move {
            tier.on_disk_thread(move || std::thread::sleep(Duration::from_secs(20)))
                .await
                .is_err()
        }
    });
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|abandoned| *abandoned));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a stuck call held its caller for {:?}",
        started.elapsed()
    );
    // The slots came back: a quick call still runs.
    assert_eq!(tier.on_disk_thread(|| 7).await.ok(), Some(7));
}
