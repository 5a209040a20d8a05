//! Each listener's connection counts: how many are open, refused, and closed to make room for a
//! newcomer. The serve loop counts them (its cap and its choice of whom to close are in
//! `crate::serve::connections`); they live here, below the routes, because `/metrics` and
//! `/admin/stats` read them.

use serde_json::json;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// One listener's counts, and its cap (`[server] max_connections`).
#[derive(Debug)]
pub struct ListenerCounts {
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    evicted: AtomicU64,
}

impl ListenerCounts {
    pub fn new(max: usize) -> Arc<ListenerCounts> {
        Arc::new(ListenerCounts {
            max,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        })
    }

    /// The most connections open at once before one must make room.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Counts one more open if fewer than the cap are; whether it did.
    pub fn open_under_cap(&self) -> bool {
        let max = self.max;
        self.open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Counts one more open past the cap: one told to close makes room a moment later.
    pub fn open_past_cap(&self) {
        self.open.fetch_add(1, Ordering::SeqCst);
    }

    /// One connection gone.
    pub fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    /// One newcomer closed at once: the cap was reached and none could make room.
    pub fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// One idle connection told to close to make room.
    pub fn evict(&self) {
        self.evicted.fetch_add(1, Ordering::Relaxed);
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Idle connections closed to make room for new ones.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// The server's listeners: the public one, and the admin one (`[admin] listen`, unused when the
/// admin API shares the public listener). Each has its own cap, so a flood of the public
/// listener never locks the operator out of `/metrics` on the admin one.
#[derive(Debug)]
pub struct Connections {
    pub public: Arc<ListenerCounts>,
    pub admin: Arc<ListenerCounts>,
}

impl Connections {
    /// Both listeners capped at `max_connections`.
    pub fn new(max_connections: usize) -> Connections {
        Connections {
            public: ListenerCounts::new(max_connections),
            admin: ListenerCounts::new(max_connections),
        }
    }

    /// The listeners in use, by name.
    pub fn listeners(&self, admin_separate: bool) -> Vec<(&'static str, &ListenerCounts)> {
        let mut all = vec![("public", &*self.public)];
        if admin_separate {
            all.push(("admin", &*self.admin));
        }
        all
    }

    /// `{"public": {"open": 3, "refused": 0, "evicted": 0}, …}` for `/admin/stats`.
    pub fn json(&self, admin_separate: bool) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .listeners(admin_separate)
            .into_iter()
            .map(|(name, l)| {
                (
                    name.to_string(),
                    json!({"open": l.open(), "refused": l.refused(), "evicted": l.evicted()}),
                )
            })
            .collect();
        serde_json::Value::Object(map)
    }
}
