//! Whether a huge entry's renderings are being written, for the fan-outs to wait on: a rendering
//! run holds a whole huge entry in memory (hundreds of MB at a million mementos), so a fan-out
//! that reads a huge body waits for the run to end rather than build a second huge TimeMap
//! beside it. Two huge misses one after the other then peak as one does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// The rendering runs under way (holding their entry, lingering included) and the fan-outs
/// waiting for them. Share it behind an `Arc`.
#[derive(Debug)]
pub struct RenderingRuns {
    under_way: watch::Sender<usize>,
    waiting: AtomicUsize,
}

/// One run under way, until dropped.
#[derive(Debug)]
pub struct Run(Arc<RenderingRuns>);

impl Drop for Run {
    fn drop(&mut self) {
        self.0.under_way.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl RenderingRuns {
    pub fn new() -> Arc<RenderingRuns> {
        Arc::new(RenderingRuns {
            under_way: watch::Sender::new(0),
            waiting: AtomicUsize::new(0),
        })
    }

    /// Counts a run until the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Run {
        self.under_way.send_modify(|n| *n += 1);
        Run(self.clone())
    }

    /// Whether any run is under way.
    pub fn any(&self) -> bool {
        *self.under_way.borrow() > 0
    }

    /// Whether a fan-out waits for the runs to end: a run's value lingering for late readers
    /// lets go at once then.
    pub fn awaited(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// Returns once no run is under way (at once when none is). Cancel-safe: a caller dropped
    /// while waiting (its deadline) stops counting as waiting.
    pub async fn none_under_way(&self) {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        if !self.any() {
            return;
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(&self.waiting);
        let mut rx = self.under_way.subscribe();
        // The sender lives as long as `self`: an error cannot happen while we borrow it.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_waiter_goes_on_once_the_last_run_ends() {
        let runs = RenderingRuns::new();
        runs.none_under_way().await; // none: at once
        let (a, b) = (runs.begin(), runs.begin());
        let waiter = tokio::spawn({
            let runs = runs.clone();
            async move { runs.none_under_way().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(runs.awaited());
        drop(a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one run is still under way");
        drop(b);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("goes on")
            .expect("no panic");
        assert!(!runs.awaited() && !runs.any());
    }

    #[tokio::test]
    async fn a_cancelled_waiter_stops_counting() {
        let runs = RenderingRuns::new();
        let _run = runs.begin();
        let waited = tokio::time::timeout(Duration::from_millis(20), runs.none_under_way()).await;
        assert!(waited.is_err());
        assert!(!runs.awaited());
    }
}
