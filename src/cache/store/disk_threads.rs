//! The threads sled calls run on: started on demand, reused while busy, gone after a quiet spell.
//!
//! Not tokio's blocking pool: a sled call can block for good on a failed disk, and one stuck
//! there would hold a slot of the pool that serves everything else. Not a thread per call
//! either: each call then paid for a thread start, and a finished thread still exiting while its
//! slot was already reused put more threads alive than [`super::DISK_THREADS`].
//!
//! The caller bounds how many calls are in flight (the tier's gate). A call that never returns
//! keeps its worker, and the next call finds no idle worker and starts another: a stuck sled
//! costs a thread, never the pool.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A call's work, which hands back how to deliver its answer: the worker counts itself free
/// before the answer reaches the caller, so the caller's next call finds it free.
type Job = Box<dyn FnOnce() -> Deliver + Send + 'static>;
type Deliver = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle worker waits for another call before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Workers not running a job: waiting, about to look at the queue, or just started.
    free: usize,
}

/// A pool of named threads; cloning shares it.
#[derive(Clone)]
pub(super) struct DiskThreads {
    name: &'static str,
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

impl DiskThreads {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            shared: Arc::new((Mutex::new(Queue::default()), Condvar::new())),
        }
    }

    /// Runs `work` on a worker (a free one if there is one, else a new one), then `deliver`
    /// with its result. A panic in `work` drops `deliver` uncalled. Fails only when no thread
    /// can be started; nothing is run then.
    pub fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
        deliver: impl FnOnce(T) + Send + 'static,
    ) -> std::io::Result<()> {
        let job: Job = Box::new(move || {
            // A panic is caught here so that `deliver`, whose drop tells the caller, is dropped
            // only once the worker counts itself free again, as an answer is delivered.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
                Ok(value) => Box::new(move || deliver(value)),
                Err(_) => Box::new(move || drop(deliver)),
            }
        });
        let (lock, wake) = &*self.shared;
        let mut queue = lock.lock().unwrap_or_else(|p| p.into_inner());
        queue.jobs.push_back(job);
        // Each free worker takes one job: more jobs than free workers need one more worker.
        // Workers alive are then never more than the jobs queued and running.
        if queue.jobs.len() <= queue.free {
            wake.notify_one();
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || work_on(&shared));
        match started {
            Ok(_) => {
                queue.free += 1;
                Ok(())
            }
            Err(e) => {
                // Dropped outside the lock: a job's captures may be slow to drop (a database).
                let job = queue.jobs.pop_back();
                drop(queue);
                drop(job);
                Err(e)
            }
        }
    }
}

/// A worker: counted free from its start until it takes a job, and again once it has done it.
fn work_on(shared: &(Mutex<Queue>, Condvar)) {
    let (lock, wake) = shared;
    let mut queue = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(job) = queue.jobs.pop_front() {
            queue.free -= 1;
            drop(queue);
            // The work's own panic is caught inside the job (see `run`).
            let deliver = job();
            lock.lock().unwrap_or_else(|p| p.into_inner()).free += 1;
            // The caller's delivery is its code, not ours: a panic there must not end the worker
            // while it is counted free.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(deliver));
            queue = lock.lock().unwrap_or_else(|p| p.into_inner());
            continue;
        }
        let (back, waited) = wake
            .wait_timeout(queue, IDLE_EXIT)
            .unwrap_or_else(|p| p.into_inner());
        queue = back;
        if waited.timed_out() && queue.jobs.is_empty() {
            queue.free -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|tasks| {
                tasks
                    .filter_map(Result::ok)
                    .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                    .filter(|comm| comm.trim() == name)
                    .count()
            })
            .unwrap_or(0)
    }

    /// Calls one after another reuse one worker; without reuse each started a thread.
    #[test]
    fn sequential_calls_reuse_one_thread() {
        let pool = DiskThreads::new("tmp-seq-test");
        for i in 0..50 {
            let (tx, rx) = mpsc::channel();
            pool.run(move || i, move |i| tx.send(i).expect("send"))
                .expect("run");
            assert_eq!(rx.recv().expect("answer"), i);
        }
        assert_eq!(threads_named("tmp-seq-test"), 1);
    }

    /// Eight calls in flight at a time (a slot is given back when the answer arrives, as the
    /// tier's gate does), 400 in all: never more than eight workers alive.
    #[test]
    fn workers_never_outnumber_the_calls_in_flight() {
        let pool = DiskThreads::new("tmp-bound-test");
        let most = Arc::new(AtomicUsize::new(0));
        let (slots_tx, slots) = mpsc::channel();
        for _ in 0..8 {
            slots_tx.send(()).expect("slot");
        }
        for _ in 0..400 {
            slots.recv().expect("a slot");
            let (most, slots_tx) = (Arc::clone(&most), slots_tx.clone());
            pool.run(
                move || {
                    most.fetch_max(threads_named("tmp-bound-test"), Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(200));
                },
                move |()| slots_tx.send(()).expect("slot back"),
            )
            .expect("run");
        }
        for _ in 0..8 {
            slots.recv().expect("every slot back");
        }
        let most = most
            .load(Ordering::SeqCst)
            .max(threads_named("tmp-bound-test"));
        assert!((1..=8).contains(&most), "{most} workers");
    }

    /// A call that never returns keeps its worker; the next call gets another.
    #[test]
    fn a_stuck_call_does_not_block_the_next() {
        let pool = DiskThreads::new("tmp-stuck-test");
        let (_release, stuck) = mpsc::channel::<()>();
        pool.run(move || stuck.recv().is_ok(), |_| {}).expect("run");
        let (tx, rx) = mpsc::channel();
        pool.run(|| 7, move |n| tx.send(n).expect("send"))
            .expect("run");
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).expect("answer"), 7);
    }

    /// A panicking call is its caller's failure; the worker serves the next call.
    #[test]
    fn a_panicking_call_leaves_the_worker_serving() {
        let pool = DiskThreads::new("tmp-panic-test");
        let (tx, rx) = mpsc::channel::<u8>();
        pool.run(
            || -> u8 { panic!("sled on damaged data") },
            move |n| tx.send(n).expect("send"),
        )
        .expect("run");
        assert!(rx.recv().is_err(), "the dropped sender says it failed");
        let (tx, rx) = mpsc::channel();
        pool.run(|| 1, move |n| tx.send(n).expect("send"))
            .expect("run");
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).expect("answer"), 1);
        assert_eq!(threads_named("tmp-panic-test"), 1);
    }
}
