//! Open connections per listener: the `[server] max_connections` cap, and the counts `/metrics`
//! and `/admin/stats` show.

use serde_json::json;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// One listener's connections: how many are open, how many were refused past the cap.
#[derive(Debug)]
pub struct ListenerConnections {
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
}

impl ListenerConnections {
    pub fn new(max: usize) -> Arc<ListenerConnections> {
        Arc::new(ListenerConnections {
            max,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// A new connection: counted open while the returned guard lives, or None (and counted as
    /// refused) when `max` are open already.
    pub fn admit(self: &Arc<Self>) -> Option<OpenConnection> {
        let max = self.max;
        let admitted = self
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            Some(OpenConnection(self.clone()))
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// A connection counted open until dropped.
pub struct OpenConnection(Arc<ListenerConnections>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The server's listeners: the public one, and the admin one (`[admin] listen`, unused when the
/// admin API shares the public listener). Each has its own cap, so a flood of the public
/// listener never locks the operator out of `/metrics` on the admin one.
#[derive(Debug)]
pub struct Connections {
    pub public: Arc<ListenerConnections>,
    pub admin: Arc<ListenerConnections>,
}

impl Connections {
    /// Both listeners capped at `max_connections`.
    pub fn new(max_connections: usize) -> Connections {
        Connections {
            public: ListenerConnections::new(max_connections),
            admin: ListenerConnections::new(max_connections),
        }
    }

    /// The listeners in use, by name.
    pub fn listeners(&self, admin_separate: bool) -> Vec<(&'static str, &ListenerConnections)> {
        let mut all = vec![("public", &*self.public)];
        if admin_separate {
            all.push(("admin", &*self.admin));
        }
        all
    }

    /// `{"public": {"open": 3, "refused": 0}, …}` for `/admin/stats`.
    pub fn json(&self, admin_separate: bool) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .listeners(admin_separate)
            .into_iter()
            .map(|(name, l)| {
                (
                    name.to_string(),
                    json!({"open": l.open(), "refused": l.refused()}),
                )
            })
            .collect();
        serde_json::Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_a_connection_is_refused_and_counted_until_one_closes() {
        let l = ListenerConnections::new(2);
        let a = l.admit().expect("first");
        let _b = l.admit().expect("second");
        assert!(l.admit().is_none());
        assert!(l.admit().is_none());
        assert_eq!((l.open(), l.refused()), (2, 2));
        drop(a);
        assert_eq!(l.open(), 1);
        let _c = l.admit().expect("a slot came free");
        assert_eq!((l.open(), l.refused()), (2, 2));
    }

    #[test]
    fn the_counts_name_each_listener_in_use() {
        let c = Connections::new(1);
        let _open = c.public.admit();
        let _ = c.public.admit();
        let names: Vec<_> = c.listeners(false).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["public"]);
        assert_eq!(c.listeners(true).len(), 2);
        assert_eq!(c.json(false)["public"]["refused"], 1);
    }
}
