//! Open connections per listener: the `[server] max_connections` cap, and the idle connection
//! closed to make room for a new one. The counts `/metrics` and `/admin/stats` show are kept in
//! `crate::metrics::connections`, counted from here.
//!
//! Why close an idle connection rather than the newcomer: connections that open and then send
//! nothing hold their place until `header_read_timeout` (30 s by default), and refusing every
//! newcomer meanwhile would let a few hundred of them shut everyone else out.

use super::activity::{Activity, Idle};
use crate::metrics::connections::ListenerCounts;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// One listener's connections: which are open, and which were told to close to make room; how
/// many, and how many were refused or closed past the cap, in its `ListenerCounts` (the counts
/// `/metrics` reads, `crate::metrics::connections`).
#[derive(Debug)]
pub struct ListenerConnections {
    counts: Arc<ListenerCounts>,
    /// Connections told to close to make room that have not gone yet.
    closing: AtomicUsize,
    live: Mutex<Live>,
}

/// The most connections told to close that may still be open: each newcomer admitted in the
/// place of one is over the cap until it goes, so without a bound a flood accepted faster than
/// the connection threads drop them would use up the descriptors the cap keeps.
pub const MAX_CLOSING: usize = 16;

/// Every open connection, so the oldest idle one can be found and told to close. Taken once
/// when a connection opens and once when it closes, never per request.
#[derive(Debug, Default)]
struct Live {
    next: u64,
    by_id: HashMap<u64, Tracked>,
}

#[derive(Debug, Clone)]
struct Tracked {
    activity: Arc<Activity>,
    close: CancellationToken,
}

impl ListenerConnections {
    /// Capped at `max`, with counts of its own.
    pub fn new(max: usize) -> Arc<ListenerConnections> {
        ListenerConnections::counting_into(ListenerCounts::new(max))
    }

    /// Capped at `counts`' cap, and counted there.
    pub fn counting_into(counts: Arc<ListenerCounts>) -> Arc<ListenerConnections> {
        Arc::new(ListenerConnections {
            counts,
            closing: AtomicUsize::new(0),
            live: Mutex::new(Live::default()),
        })
    }

    /// A new connection whose requests `activity` counts: counted open while the returned
    /// guard lives. With `max` open, the connection idle the longest (one that never asked
    /// anything first) is told to close and the newcomer takes its place; with none idle, None
    /// (counted as refused).
    pub fn admit(self: &Arc<Self>, activity: Arc<Activity>) -> Option<OpenConnection> {
        if !self.counts.open_under_cap() {
            if !self.close_oldest_idle() {
                self.counts.refuse();
                return None;
            }
            // Over the cap until the one told to close has gone, a moment later.
            self.counts.open_past_cap();
        }
        let close = CancellationToken::new();
        let mut live = lock(&self.live);
        let id = live.next;
        live.next += 1;
        live.by_id.insert(
            id,
            Tracked {
                activity,
                close: close.clone(),
            },
        );
        Some(OpenConnection {
            listener: self.clone(),
            id,
            close,
        })
    }

    /// Tells the connection idle the longest (see `Idle`) to close, unless [`MAX_CLOSING`]
    /// told already have not gone yet; whether one was told.
    pub fn close_oldest_idle(&self) -> bool {
        if self.closing() >= MAX_CLOSING {
            return false;
        }
        let live = lock(&self.live);
        let oldest = live
            .by_id
            .values()
            .filter(|t| !t.close.is_cancelled())
            .filter_map(|t| Some((t.activity.idle()?, t)))
            .min_by_key(|(idle, _): &(Idle, &Tracked)| *idle);
        match oldest {
            Some((_, t)) => {
                t.close.cancel();
                self.closing.fetch_add(1, Ordering::SeqCst);
                self.counts.evict();
                true
            }
            None => false,
        }
    }

    /// Connections told to close to make room that are still open.
    pub fn closing(&self) -> usize {
        self.closing.load(Ordering::SeqCst)
    }

    /// Whether a newcomer past the cap would have to wait: [`MAX_CLOSING`] are still going.
    pub fn full_and_closing(&self) -> bool {
        self.open() >= self.counts.max() && self.closing() >= MAX_CLOSING
    }

    pub fn open(&self) -> usize {
        self.counts.open()
    }

    pub fn refused(&self) -> u64 {
        self.counts.refused()
    }

    /// Idle connections closed to make room for new ones.
    pub fn evicted(&self) -> u64 {
        self.counts.evicted()
    }
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    // A poisoned map still holds valid entries: take it over.
    live.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection counted open until dropped.
pub struct OpenConnection {
    listener: Arc<ListenerConnections>,
    id: u64,
    close: CancellationToken,
}

impl OpenConnection {
    /// Resolves when the connection is to close to make room for a new one.
    pub async fn told_to_close(&self) {
        self.close.cancelled().await;
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        lock(&self.listener.live).by_id.remove(&self.id);
        // Only a close made room for cancels the token.
        if self.close.is_cancelled() {
            self.listener.closing.fetch_sub(1, Ordering::SeqCst);
        }
        self.listener.counts.closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::connections::Connections;

    /// A connection that has asked something and is idle again.
    fn asked() -> Arc<Activity> {
        let a = Activity::new();
        drop(a.begin());
        a
    }

    #[test]
    fn past_the_cap_with_nothing_idle_a_connection_is_refused_and_counted() {
        let l = ListenerConnections::new(2);
        let (busy_a, busy_b) = (Activity::new(), Activity::new());
        let _in_a = busy_a.begin();
        let _in_b = busy_b.begin();
        let a = l.admit(busy_a).expect("first");
        let _b = l.admit(busy_b).expect("second");
        assert!(l.admit(Activity::new()).is_none());
        assert!(l.admit(Activity::new()).is_none());
        assert_eq!((l.open(), l.refused(), l.evicted()), (2, 2, 0));
        drop(a);
        assert_eq!(l.open(), 1);
        let _c = l.admit(Activity::new()).expect("a slot came free");
        assert_eq!((l.open(), l.refused()), (2, 2));
    }

    #[test]
    fn past_the_cap_the_longest_idle_connection_makes_room_silent_ones_first() {
        let l = ListenerConnections::new(3);
        let old_asker = l.admit(asked()).expect("1");
        // Only the order of the idle times matters, not how far apart they are.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let silent = l.admit(Activity::new()).expect("2");
        let new_asker = l.admit(asked()).expect("3");
        // Full: the one that never asked goes first, though it is younger.
        let fourth = l.admit(Activity::new()).expect("room is made");
        assert!(silent.close.is_cancelled());
        assert!(!old_asker.close.is_cancelled() && !new_asker.close.is_cancelled());
        assert_eq!((l.open(), l.evicted(), l.refused()), (4, 1, 0));
        // Told once: the next newcomer picks another (the new silent one), not it again.
        let _fifth = l.admit(asked()).expect("room is made");
        assert!(fourth.close.is_cancelled());
        drop((silent, fourth));
        // Then, among those that asked, the one idle the longest.
        let _sixth = l.admit(Activity::new()).expect("room is made");
        assert!(old_asker.close.is_cancelled() && !new_asker.close.is_cancelled());
        assert_eq!(l.evicted(), 3);
        assert_eq!(l.closing(), 1);
    }

    #[test]
    fn no_more_than_max_closing_are_told_to_close_at_once() {
        let l = ListenerConnections::new(1);
        let mut held = vec![l.admit(Activity::new()).expect("first")];
        for _ in 0..MAX_CLOSING {
            held.push(l.admit(Activity::new()).expect("room is made"));
        }
        assert!(l.full_and_closing());
        assert!(l.admit(Activity::new()).is_none(), "past MAX_CLOSING");
        assert_eq!((l.closing(), l.refused()), (MAX_CLOSING, 1));
        // One told to close goes: room can be made again.
        drop(held.remove(0));
        assert_eq!(l.closing(), MAX_CLOSING - 1);
        assert!(l.admit(Activity::new()).is_some());
    }

    #[test]
    fn the_counts_name_each_listener_in_use() {
        let c = Connections::new(1);
        let public = ListenerConnections::counting_into(c.public.clone());
        let busy = Activity::new();
        let _in = busy.begin();
        let _open = public.admit(busy);
        let _ = public.admit(Activity::new());
        let names: Vec<_> = c.listeners(false).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["public"]);
        assert_eq!(c.listeners(true).len(), 2);
        assert_eq!(c.json(false)["public"]["refused"], 1);
    }
}
