//! The log's queue and its writer thread: a request hands its line over without waiting, and
//! the writer takes the lines in batches, so a busy server wakes it a few hundred times a second
//! rather than once a line.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::thread;
use std::time::{Duration, Instant};
use tracing_subscriber::fmt::MakeWriter;

/// How long the writer lets lines gather after the first of a batch. A request wakes the writer
/// (a futex call and a context switch, once a line, was about a tenth of a miss's CPU) only when
/// it is waiting for a line; while it gathers, handing a line over is a push on the queue. Lines
/// reach the log at most this much later.
const GATHER: Duration = Duration::from_millis(5);

/// How long the end of the process waits for the lines still queued to be written.
const DRAIN_AT_EXIT: Duration = Duration::from_secs(1);

/// A batch buffer grown past this (a burst) is given back after its write.
const KEEP_BATCH: usize = 1 << 20;

enum Msg {
    Line(Vec<u8>),
    Stop,
}

/// Where the log's formatter writes: each line goes on the queue, or is dropped when the queue
/// is full (a request never waits on its log).
#[derive(Clone)]
pub struct Queue {
    tx: SyncSender<Msg>,
}

/// Held to the end of `main`: dropping it writes out the lines still queued (for at most
/// `DRAIN_AT_EXIT`).
pub struct Guard {
    tx: SyncSender<Msg>,
    done: Receiver<()>,
}

/// Starts the writer thread `name` writing to `out`, with room for `capacity` queued lines.
pub fn start(
    capacity: usize,
    out: impl Write + Send + 'static,
    name: &str,
) -> io::Result<(Queue, Guard)> {
    let (tx, rx) = sync_channel(capacity);
    let (done_tx, done) = sync_channel(1);
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            write_batches(rx, out);
            let _ = done_tx.send(());
        })?;
    Ok((Queue { tx: tx.clone() }, Guard { tx, done }))
}

/// Writes what comes in batches until told to stop (or every sender is gone), then what is left.
fn write_batches(rx: Receiver<Msg>, mut out: impl Write) {
    let mut batch: Vec<u8> = Vec::new();
    let mut stop = false;
    while !stop {
        match rx.recv() {
            Ok(Msg::Line(line)) => batch.extend_from_slice(&line),
            Ok(Msg::Stop) | Err(_) => stop = true,
        }
        if !stop {
            thread::sleep(GATHER);
        }
        loop {
            match rx.try_recv() {
                Ok(Msg::Line(line)) => batch.extend_from_slice(&line),
                // Stop once what is queued is written.
                Ok(Msg::Stop) => stop = true,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    stop = true;
                    break;
                }
            }
        }
        // A failed write loses this batch, not the log: the next one is tried anew.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        if batch.capacity() > KEEP_BATCH {
            batch = Vec::new();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The queue may be full for a moment, or for good behind a stderr nobody reads: try until
        // the deadline, never longer.
        let until = Instant::now() + DRAIN_AT_EXIT;
        let mut stop = Msg::Stop;
        loop {
            match self.tx.try_send(stop) {
                Ok(()) => break,
                Err(TrySendError::Full(again)) if Instant::now() < until => {
                    stop = again;
                    thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return,
            }
        }
        // Past the deadline the process ends with the rest unwritten.
        let _ = self
            .done
            .recv_timeout(until.saturating_duration_since(Instant::now()));
    }
}

/// One line on its way to the queue.
pub struct Line<'a> {
    tx: &'a SyncSender<Msg>,
}

impl<'a> MakeWriter<'a> for Queue {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line { tx: &self.tx }
    }
}

impl Write for Line<'_> {
    /// The formatter writes a whole line at once: it is queued whole, or dropped when the queue
    /// is full.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.tx.try_send(Msg::Line(buf.to_vec()));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What the writer thread wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_queued_is_written_in_order_by_the_end() {
        let sink = Sink::default();
        let (queue, guard) = start(1024, sink.clone(), "test-log").expect("thread");
        for i in 0..500 {
            queue
                .make_writer()
                .write_all(format!("line {i}\n").as_bytes())
                .expect("queued");
        }
        drop(guard);
        let written = String::from_utf8(sink.0.lock().expect("sink").clone()).expect("utf-8");
        let want: String = (0..500).map(|i| format!("line {i}\n")).collect();
        assert_eq!(written, want);
    }

    #[test]
    fn a_full_queue_drops_lines_rather_than_waiting() {
        /// A writer that never returns until the test lets it.
        struct Stuck(Receiver<()>);
        impl Write for Stuck {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let _ = self.0.recv();
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (release, stuck) = sync_channel(0);
        let (queue, guard) = start(4, Stuck(stuck), "test-log").expect("thread");
        let started = Instant::now();
        for _ in 0..1000 {
            queue
                .make_writer()
                .write_all(b"line\n")
                .expect("never an error");
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a line waited for the writer"
        );
        drop(release);
        drop(guard);
    }
}
