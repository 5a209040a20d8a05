//! Which stripe of a striped value the calling thread uses: threads are numbered in turn as
//! they first ask, so the few connection threads of a server each get one of their own.
//!
//! Why: a value every connection thread writes on every request (a counter, a lock) moves its
//! cache line between cores each time, and a cache hit is a few microseconds: striping it by
//! thread keeps each thread's writes on a line of its own (BENCHMARKS.md, "Small cache hits
//! against nginx").

use std::sync::atomic::{AtomicUsize, Ordering};

/// The calling thread's stripe among `stripes` (at least one).
pub fn of_this_thread(stripes: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| n % stripes.max(1))
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
    }
}
