//! A body too big to code whole in memory (the view's `MAX_CODED`), coded on the way: a
//! client that accepts a coding gets a coded stream of a huge TimeMap even before its coded
//! renderings are on disk, never the plain body it would take seconds longer to download.
//!
//! The coding runs on the blocking pool, at each coding's fastest level, into a channel of a
//! few pieces: the memory it holds is the encoder's state and those pieces, whatever the
//! body's size, and a client that stops reading stops it (the send fails). At most one such
//! coding per core runs at once: the others wait for their turn rather than multiply the CPU a
//! burst of requests for a fresh huge entry would cost. The bytes are not the stored
//! renderings' (another level), so the answer's ETag is weak ([`weak_etag`]).

use super::Coding;
use axum::body::Body;
use bytes::Bytes;
use std::io::Write;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, Semaphore};

/// Input fed to the encoder at a time, and the size of each coded piece sent.
const FEED: usize = 256 * 1024;
const PIECE: usize = 64 * 1024;

/// Coded pieces in flight between the coder and the connection.
const IN_FLIGHT: usize = 4;

/// Turns to code a body on the way: one per core.
fn turns() -> &'static Arc<Semaphore> {
    static TURNS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Arc::new(Semaphore::new(cores))
    })
}

/// The ETag of a body coded on the way: weak, the plain body's with the coding's suffix.
pub fn weak_etag(coding: Coding, plain: &str) -> Option<axum::http::HeaderValue> {
    let tag = format!("W/{}-{}\"", plain.trim_end_matches('"'), coding.token());
    axum::http::HeaderValue::from_str(&tag).ok()
}

/// `body` coded in `coding` as it is sent. Waits for a turn first (see the module's words).
/// `body` is the plain body's pieces, in order.
pub async fn coded_on_the_way(coding: Coding, body: Vec<Bytes>) -> Body {
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(IN_FLIGHT);
    // A closed semaphore never happens (it is never closed); then code without a turn.
    let turn = turns().clone().acquire_owned().await.ok();
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let out = Sender {
            tx: tx.clone(),
            buf: Vec::with_capacity(PIECE),
        };
        let coded = code(coding, &body, out);
        if let Err(e) = coded {
            // The client is gone (the send failed) or the coder failed: end the body with
            // an error rather than a short body that looks whole.
            let _ = tx.blocking_send(Err(e));
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    });
    Body::from_stream(stream)
}

fn code(coding: Coding, body: &[Bytes], out: Sender) -> std::io::Result<()> {
    let mut w = coding.fast_encoder(out)?;
    for piece in body {
        for chunk in piece.chunks(FEED) {
            w.write_all(chunk)?;
        }
    }
    let mut out = w.finish()?;
    out.flush()
}

/// Where the coder writes: pieces of [`PIECE`] bytes sent down the channel.
struct Sender {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl Sender {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE)));
        self.tx
            .blocking_send(Ok(piece))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client gone"))
    }
}

impl Write for Sender {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn body() -> (Vec<Bytes>, Vec<u8>) {
        let list: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("<http://a.test/web/{i:014}/x>; rel=\"memento\",\n").into_bytes())
            .collect();
        let pieces = vec![
            Bytes::from_static(b"head\n"),
            Bytes::from(list.clone()),
            Bytes::from_static(b"tail\n"),
        ];
        let whole = [&b"head\n"[..], &list, b"tail\n"].concat();
        (pieces, whole)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_coding_on_the_way_decodes_to_the_body() {
        let (pieces, whole) = body();
        for coding in Coding::ALL {
            let coded = coded_on_the_way(coding, pieces.clone()).await;
            let coded = axum::body::to_bytes(coded, usize::MAX)
                .await
                .expect("streamed");
            assert!(coded.len() * 4 < whole.len(), "{coding:?}: {}", coded.len());
            let mut back = Vec::new();
            match coding {
                Coding::Br => brotli::Decompressor::new(&coded[..], 4096).read_to_end(&mut back),
                Coding::Zstd => zstd::stream::Decoder::new(&coded[..])
                    .and_then(|mut d| d.read_to_end(&mut back)),
                Coding::Gzip => flate2::read::GzDecoder::new(&coded[..]).read_to_end(&mut back),
            }
            .expect("decodes");
            assert!(back == whole, "{coding:?}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_nobody_reads_gives_its_turn_back() {
        let (pieces, _) = body();
        let cores = turns().available_permits();
        for _ in 0..3 * cores.max(1) {
            drop(coded_on_the_way(Coding::Gzip, pieces.clone()).await);
        }
        // Each coder stops at its first send after the body is gone, and gives its turn back.
        for _ in 0..200 {
            if turns().available_permits() >= cores {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!(
            "turns not given back: {} of {cores}",
            turns().available_permits()
        );
    }
}
