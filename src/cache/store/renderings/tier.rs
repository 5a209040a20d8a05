//! The heads and their files by cache key: written in the background once per revision of a
//! huge entry, bounded by the bytes on disk, and dropped whenever the store says the key changed
//! ([`Overflowing`]).

use super::head::{Head, Rendering, RenderingFile, Renders};
use super::runs::{RenderingRuns, Run};
use super::write;
use crate::cache::cached::CachedTimeMap;
use crate::cache::store::Overflow;
use crate::timemap::aggregate::Verdict;
use crate::timemap::serialize::TimeMapFormat;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tmproxy_core::content_hash::ContentHash;

/// The directory under `[cache] path` the renderings are written to.
pub const DIR: &str = "renderings";

/// The heads and their files, by cache key, of values whose views are `V`.
pub struct Renderings<V: Renders> {
    dir: PathBuf,
    /// What the views are built with (a huge entry read from disk has none built yet).
    context: V::Context,
    /// Bounded by the bytes of their files; a head that leaves takes its files with it.
    heads: moka::sync::Cache<String, Arc<Head<V>>>,
    /// Heads inserted and not yet removed (never fewer than `heads` holds): while it is 0, a
    /// request skips the key and the lookup, so a server with no huge entry pays nothing.
    kept: Arc<AtomicU64>,
    /// Keys whose renderings are being written, with the revision that may become their head
    /// and the value they are written from: served from memory meanwhile
    /// ([`Overflow::held`]), as the hot tier would, rather than read from disk a second time.
    pending: Mutex<HashMap<String, Pending<V>>>,
    /// Keys whose renderings alone are over the capacity: served the ordinary way.
    refused: Mutex<HashSet<String>>,
    /// Changes per bucket of keys: a value read from disk has its renderings written only if its key did not
    /// change while it was read ([`Overflow::stamp`]).
    stamps: Box<[AtomicU64]>,
    next_rev: AtomicU64,
    /// One rendering run at a time: each holds a whole huge entry in memory while it renders.
    busy: AtomicBool,
    /// The runs under way, lingering included, for the fan-outs to wait on.
    runs: Arc<RenderingRuns>,
    capacity: u64,
    /// Bodies streamed from files so far (tests, operators).
    pub(super) streamed: AtomicU64,
}

const STAMP_BUCKETS: usize = 1024;

/// A stored entry with its view, as the store holds it.
type Value<V> = Arc<CachedTimeMap<V>>;

/// A rendering run under way (or just done, see [`LINGER`]): its revision and the value it renders.
struct Pending<V> {
    rev: u64,
    value: Value<V>,
    done: bool,
}

/// How long a rendering run's value stays held once its head is kept: a request that looked for the
/// head just before it came finds the value in memory rather than reading it from disk.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);
/// How often a lingering value looks whether a fan-out waits for it to go.
const LINGER_STEP: std::time::Duration = std::time::Duration::from_millis(20);

impl<V: Renders> Renderings<V> {
    /// The renderings directory under `cache_path`, emptied: heads live in memory only, so
    /// files of an earlier run (temporary ones of a crash included) belong to no head.
    pub fn open(
        cache_path: &Path,
        capacity: u64,
        context: V::Context,
    ) -> std::io::Result<Arc<Renderings<V>>> {
        let dir = cache_path.join(DIR);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(&dir)?;
        let kept = Arc::new(AtomicU64::new(0));
        let gone = kept.clone();
        let heads = moka::sync::Cache::builder()
            .max_capacity(capacity)
            // The least recently used entry's files go first when the bound is reached.
            .eviction_policy(moka::policy::EvictionPolicy::lru())
            .weigher(|_: &String, head: &Arc<Head<V>>| {
                u32::try_from(head.bytes()).unwrap_or(u32::MAX)
            })
            // Evicted for room, replaced, or invalidated: its files go with it.
            .eviction_listener(move |_, head: Arc<Head<V>>, _| {
                head.remove_files();
                gone.fetch_sub(1, Ordering::AcqRel);
            })
            .build();
        Ok(Arc::new(Renderings {
            dir,
            context,
            heads,
            kept,
            pending: Mutex::default(),
            refused: Mutex::default(),
            stamps: (0..STAMP_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            next_rev: AtomicU64::new(1),
            busy: AtomicBool::new(false),
            runs: RenderingRuns::new(),
            capacity,
            streamed: AtomicU64::new(0),
        }))
    }

    /// The runs under way: a fan-out reading a huge body waits for them ([`RenderingRuns`]).
    pub fn runs(&self) -> Arc<RenderingRuns> {
        self.runs.clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many bodies were streamed from files since start.
    pub fn streamed(&self) -> u64 {
        self.streamed.load(Ordering::Relaxed)
    }

    /// Whether any head may be kept: false means no entry's answer is on disk.
    pub fn any_head(&self) -> bool {
        self.kept.load(Ordering::Acquire) > 0
    }

    /// The head kept for `key`, if any.
    pub fn head(&self, key: &str) -> Option<Arc<Head<V>>> {
        self.heads.get(key)
    }

    /// Drops `key`'s head of revision `rev` (its file is damaged or gone), files and all, so
    /// the next request reads the entry and renders it again.
    pub fn discard(&self, key: &str, rev: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(head) = self.heads.get(key).filter(|h| h.rev == rev) {
            self.heads.invalidate(key);
            head.remove_files();
            // A value still held from making it would keep a new rendering run from starting.
            if pending.get(key).is_some_and(|p| p.done) {
                pending.remove(key);
            }
        }
    }

    fn bucket(&self, key: &str) -> &AtomicU64 {
        let hash = ContentHash::of(key.as_bytes()).value();
        &self.stamps[(hash % STAMP_BUCKETS as u64) as usize]
    }

    /// Starts writing `value`'s renderings as a new revision of `key`, on the blocking pool,
    /// unless `stamp` is given and `key` changed since (or already has, or awaits, a head).
    /// Not when another rendering run is at work: the next read of the entry starts it again.
    fn start(self: &Arc<Self>, key: &str, value: &Value<V>, stamp: Option<u64>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let run: Run;
        let rev = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(stamp) = stamp {
                let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
                if pending.contains_key(key)
                    || refused.contains(key)
                    || self.heads.contains_key(key)
                    || self.bucket(key).load(Ordering::Acquire) != stamp
                {
                    return;
                }
            }
            if self.busy.swap(true, Ordering::AcqRel) {
                return;
            }
            run = self.runs.begin();
            let rev = self.next_rev.fetch_add(1, Ordering::Relaxed);
            let value = value.clone();
            pending.insert(
                key.to_owned(),
                Pending {
                    rev,
                    value,
                    done: false,
                },
            );
            rev
        };
        let (this, key, value) = (self.clone(), key.to_owned(), value.clone());
        runtime.spawn_blocking(move || {
            let made = this.make(&key, &value, rev);
            drop(value);
            this.busy.store(false, Ordering::Release);
            this.settle(&key, rev, made, run);
        });
    }

    /// Renders every format of `value` to files: the head they make, None when it is not
    /// served from files (no mementos) or a write failed (logged).
    fn make(&self, key: &str, value: &CachedTimeMap<V>, rev: u64) -> Option<Head<V>> {
        let started = std::time::Instant::now();
        let view = value.view(&self.context);
        if !matches!(view.aggregate().verdict(), Verdict::Found { .. }) {
            return None;
        }
        let stem = format!("{:016x}-{rev}", ContentHash::of(key.as_bytes()).value());
        let mut formats = Vec::with_capacity(TimeMapFormat::count());
        for format in TimeMapFormat::all() {
            match write::render(&self.dir, &stem, view.as_ref(), format) {
                Ok(r) => formats.push(r),
                Err(e) => {
                    tracing::warn!(uri_r = %value.entry.uri_r, error = %e, "cannot write a TimeMap rendering");
                    formats
                        .iter()
                        .flat_map(Rendering::<V>::files)
                        .for_each(RenderingFile::remove);
                    return None;
                }
            }
        }
        let head = Head {
            rev,
            uri_r: value.entry.uri_r.clone(),
            checked_at: value.entry.checked_at,
            fresh_until: value.entry.fresh_until,
            formats: formats.into(),
        };
        // Once per huge entry's revision: what the pass cost (BENCHMARKS.md reads it).
        tracing::info!(
            uri_r = %head.uri_r,
            bytes = head.bytes(),
            seconds = started.elapsed().as_secs_f64(),
            "renderings written"
        );
        Some(head)
    }

    /// Keeps `made` as `key`'s head if `rev` is still the one awaited; else its files go.
    fn settle(self: &Arc<Self>, key: &str, rev: u64, made: Option<Head<V>>, run: Run) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let taken = match pending.get(key) {
            Some(p) if p.rev == rev && !p.done => pending.remove(key),
            _ => None,
        };
        let refuse = || {
            self.refused
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.to_owned());
        };
        match (made, taken) {
            (Some(head), None) => head.remove_files(),
            // It would be evicted at once, and made again on every read.
            (Some(head), Some(_)) if head.bytes() > self.capacity => {
                head.remove_files();
                refuse();
            }
            (Some(head), Some(taken)) => {
                // Counted before it is in: the count is never below what `heads` holds.
                self.kept.fetch_add(1, Ordering::AcqRel);
                self.heads.insert(key.to_owned(), Arc::new(head));
                self.linger(&mut pending, key, taken, run);
            }
            // Not servable from files, or the disk refused them: not tried again on every read
            // (seconds of rendering each), only once the key changes.
            (None, Some(_)) => refuse(),
            (None, None) => {}
        }
    }

    /// Holds `taken`'s value for [`LINGER`] more (still a run under way), then lets it go
    /// (unless `key` changed); at once when a fan-out waits for the runs.
    fn linger(
        self: &Arc<Self>,
        pending: &mut HashMap<String, Pending<V>>,
        key: &str,
        taken: Pending<V>,
        run: Run,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let rev = taken.rev;
        pending.insert(
            key.to_owned(),
            Pending {
                done: true,
                ..taken
            },
        );
        let (this, key) = (self.clone(), key.to_owned());
        runtime.spawn(async move {
            let until = tokio::time::Instant::now() + LINGER;
            while tokio::time::Instant::now() < until && !this.runs.awaited() {
                tokio::time::sleep(LINGER_STEP).await;
            }
            let mut pending = this.pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.get(&key).is_some_and(|p| p.rev == rev) {
                pending.remove(&key);
            }
            drop(pending);
            drop(run);
        });
    }
}

/// The store's side: every change to a key drops what was kept of its old value.
pub struct Overflowing<V: Renders>(pub Arc<Renderings<V>>);

impl<V: Renders> Overflow<CachedTimeMap<V>> for Overflowing<V> {
    fn stamp(&self, key: &str) -> u64 {
        self.0.bucket(key).load(Ordering::Acquire)
    }

    fn replace(&self, key: &str, value: Option<&Value<V>>) {
        let renderings = &self.0;
        {
            // Under the pending lock: a renderings settling now sees its revision is gone.
            let mut pending = renderings.pending.lock().unwrap_or_else(|p| p.into_inner());
            renderings.bucket(key).fetch_add(1, Ordering::AcqRel);
            pending.remove(key);
            if let Some(old) = renderings.heads.remove(key) {
                old.remove_files();
            }
            renderings
                .refused
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(key);
        }
        if let Some(value) = value {
            renderings.start(key, value, None);
        }
    }

    fn held(&self, key: &str) -> Option<Value<V>> {
        let pending = self.0.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.get(key).map(|p| p.value.clone())
    }

    fn read(&self, key: &str, value: &Value<V>, stamp: u64) {
        self.0.start(key, value, Some(stamp));
    }
}
