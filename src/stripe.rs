//! Which copy of a per-thread value the calling thread uses: a connection thread uses its own
//! index (`serve::threads` binds it), any other thread a number given in turn as it first asks.
//!
//! Why: a value every connection thread writes on every request (a counter, a lock) moves its
//! cache line between cores each time, and a cache hit is a few microseconds: striping it by
//! thread keeps each thread's writes on a line of its own (BENCHMARKS.md, "Small cache hits
//! against nginx").

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// This thread's connection-thread index, when it is one.
    static CONNECTION_THREAD: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Marks the calling thread as connection thread `index`.
pub fn bind_connection_thread(index: usize) {
    CONNECTION_THREAD.with(|c| c.set(Some(index)));
}

/// The calling thread's connection-thread index, when it is one.
pub fn connection_thread() -> Option<usize> {
    CONNECTION_THREAD.with(Cell::get)
}

/// The calling thread's stripe among `stripes` (at least one): its connection-thread index, so
/// that no two connection threads share one while there are enough, else its number.
pub fn of_this_thread(stripes: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    let n = connection_thread().unwrap_or_else(|| NUMBER.with(|n| *n));
    n % stripes.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_stripe_and_threads_take_them_in_turn() {
        let mine = of_this_thread(4);
        assert_eq!(of_this_thread(4), mine);
        assert!(mine < 4);
        assert_eq!(of_this_thread(0), 0);
        let others: std::collections::HashSet<usize> = (0..4)
            .map(|_| std::thread::spawn(|| of_this_thread(1_000_000)))
            .map(|t| t.join().expect("thread"))
            .collect();
        assert_eq!(others.len(), 4, "each new thread a number of its own");
        let bound = std::thread::spawn(|| {
            bind_connection_thread(3);
            (connection_thread(), of_this_thread(4), of_this_thread(2))
        });
        assert_eq!(bound.join().expect("thread"), (Some(3), 3, 1));
    }
}
