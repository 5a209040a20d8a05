//! A connection and its watchdog in one task, the watchdog polled only when something it waits
//! for has woken it.
//!
//! Why: `tokio::select!` polls every branch whenever the task wakes, and a busy connection's
//! task wakes for every request (and several times for a fan-out). The watchdog's branches (the
//! server's stop, a close to make room, the end of a request, its deadline) each took a lock
//! or a timer's state to poll, on every request, for news that comes once in a connection's
//! life (BENCHMARKS.md, "Small cache hits against nginx"). Here the watchdog's future gets a
//! waker of its own, which marks it woken before waking the task: the task polls the
//! connection every time and the watchdog only when marked. One task still, so the watchdog's
//! decisions never race the connection's requests.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Which of the two finished first.
#[derive(Debug, PartialEq, Eq)]
pub enum First<A, B> {
    Connection(A),
    Watchdog(B),
}

/// The watchdog's waker: marks it woken, then wakes whatever task last polled it.
#[derive(Default)]
pub struct Marked {
    woken: AtomicBool,
    task: futures::task::AtomicWaker,
}

impl Wake for Marked {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// One per connection: the mark and the waker made from it, shared by each watchdog future
/// the connection runs in turn.
pub struct Watch {
    marked: Arc<Marked>,
    waker: Waker,
}

impl Watch {
    pub fn new() -> Watch {
        let marked = Arc::new(Marked::default());
        Watch {
            waker: Waker::from(marked.clone()),
            marked,
        }
    }

    /// Polls `connection` whenever the task wakes and `watchdog` only when it was woken
    /// (or is new: a fresh watchdog is always polled once), until one of them is ready.
    pub async fn first<C, W>(
        &self,
        mut connection: Pin<&mut C>,
        watchdog: W,
    ) -> First<C::Output, W::Output>
    where
        C: Future,
        W: Future,
    {
        let mut watchdog = std::pin::pin!(watchdog);
        self.marked.woken.store(true, Ordering::Release);
        std::future::poll_fn(|cx| {
            // Registered before either is polled, so a wake during the polls is not lost.
            self.marked.task.register(cx.waker());
            if let Poll::Ready(ended) = connection.as_mut().poll(cx) {
                return Poll::Ready(First::Connection(ended));
            }
            if self.marked.woken.swap(false, Ordering::AcqRel) {
                let mut own = Context::from_waker(&self.waker);
                if let Poll::Ready(order) = watchdog.as_mut().poll(&mut own) {
                    return Poll::Ready(First::Watchdog(order));
                }
            }
            Poll::Pending
        })
        .await
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its polls; ready after `ready_after` of them.
    struct Counted<'a> {
        polls: &'a AtomicUsize,
        ready_after: usize,
    }

    impl Future for Counted<'_> {
        type Output = usize;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            if n >= self.ready_after {
                return Poll::Ready(n);
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn the_watchdog_is_polled_once_unless_it_is_woken() {
        let (conn_polls, dog_polls) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let conn = std::pin::pin!(Counted {
            polls: &conn_polls,
            ready_after: 50,
        });
        // Never woken, never ready: polled when new and not again.
        let dog = std::future::poll_fn(|_| {
            dog_polls.fetch_add(1, Ordering::SeqCst);
            Poll::<()>::Pending
        });
        let first = Watch::new().first(conn, dog).await;
        assert_eq!(first, First::Connection(50));
        assert_eq!(dog_polls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_watchdog_woken_by_its_timer_is_polled_and_wins() {
        let conn = std::pin::pin!(std::future::pending::<()>());
        let dog = async {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            "drop"
        };
        let first = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            Watch::new().first(conn, dog),
        )
        .await;
        assert_eq!(first.ok(), Some(First::Watchdog("drop")));
    }

    #[tokio::test]
    async fn a_watchdog_woken_from_another_thread_wins() {
        let notify = Arc::new(tokio::sync::Notify::new());
        let conn = std::pin::pin!(std::future::pending::<()>());
        let told = notify.clone();
        let dog = async move {
            told.notified().await;
            7
        };
        let thread = std::thread::spawn({
            let notify = notify.clone();
            move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                notify.notify_one();
            }
        });
        let watch = Watch::new();
        let first =
            tokio::time::timeout(std::time::Duration::from_secs(10), watch.first(conn, dog)).await;
        assert_eq!(first.ok(), Some(First::Watchdog(7)));
        assert!(thread.join().is_ok());
    }
}
