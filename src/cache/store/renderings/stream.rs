//! A rendering streamed from its file in 256 KiB pieces, as stored (every coding has its own
//! file), and checked against the length and CRC-32 it was written with. The last piece
//! is held back until the whole file has checked out: a damaged file ends the answer short (the
//! client sees a cut transfer, never a complete wrong body) and is dropped, so the next request
//! renders it again from the entry. Damage found before the first piece is sent (a file of one
//! piece) sends this request the ordinary way instead.

use super::head::{RenderingFile, Renders};
use super::tier::Renderings;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Arc;
use tokio::sync::mpsc;

/// What is read from the file and sent at a time.
const PIECE: usize = 256 * 1024;

/// Why a stream ended before its end.
#[derive(Debug)]
enum StreamEnd {
    /// The client went away: nothing is wrong with the file.
    Gone,
    /// The file is not what was written (shorter, longer, other bytes, unreadable).
    Damaged(String),
}

/// A rendering's bytes as they are read and checked: an error ends it short (the server cuts
/// the transfer). Plain `bytes` and `futures`: the serving layer wraps it in its own body type.
pub type BodyStream = BoxStream<'static, io::Result<Bytes>>;

/// The body of `file` (revision `rev` of `key`'s head); None when the file cannot be opened or
/// shows damage before its first piece is sent (the head is then dropped: answer the ordinary
/// way).
pub async fn body<V: Renders>(
    renderings: Arc<Renderings<V>>,
    key: String,
    rev: u64,
    file: RenderingFile,
) -> Option<BodyStream> {
    let opened = match tokio::fs::File::open(&file.path).await {
        Ok(f) => f.into_std().await,
        Err(e) => {
            tracing::warn!(path = %file.path.display(), error = %e, "a rendering is gone");
            renderings.discard(&key, rev);
            return None;
        }
    };
    renderings
        .streamed
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    tokio::task::spawn_blocking(move || {
        if let Err(StreamEnd::Damaged(why)) = pump(opened, &file, &tx) {
            tracing::warn!(path = %file.path.display(), why, "a rendering is damaged: dropped");
            renderings.discard(&key, rev);
            // Ends the body with an error: the server cuts the transfer short.
            let _ = tx.blocking_send(Err(io::Error::other(why)));
        }
    });
    // The first piece before the head goes out: a file of one piece is checked whole before
    // any of it is sent, so its damage is known here, and the request is answered the ordinary
    // way rather than cut off with no answer at all.
    let mut rx = rx;
    let first = match rx.recv().await {
        Some(Ok(piece)) => Some(piece),
        Some(Err(_)) => return None,
        None => None,
    };
    let rest = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    });
    let pieces = futures::stream::iter(first.map(Ok::<Bytes, io::Error>)).chain(rest);
    Some(pieces.boxed())
}

/// Sends what it is given in pieces of [`PIECE`] bytes down the channel.
struct Pieces<'a> {
    tx: &'a mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl Pieces<'_> {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE)));
        self.tx
            .blocking_send(Ok(piece))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for Pieces<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= PIECE {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// Reads `file` to its end, checking it against `want`, and sends it on.
fn pump(
    mut file: File,
    want: &RenderingFile,
    tx: &mpsc::Sender<io::Result<Bytes>>,
) -> Result<(), StreamEnd> {
    let gone = |_| StreamEnd::Gone;
    let mut out = Pieces {
        tx,
        buf: Vec::with_capacity(PIECE),
    };
    let (mut crc, mut len) = (crc32fast::Hasher::new(), 0u64);
    let mut held: Option<Vec<u8>> = None;
    loop {
        let mut piece = vec![0; PIECE];
        let n = read_full(&mut file, &mut piece)
            .map_err(|e| StreamEnd::Damaged(format!("unreadable: {e}")))?;
        if n == 0 {
            break;
        }
        piece.truncate(n);
        len += n as u64;
        if len > want.len {
            return Err(StreamEnd::Damaged(format!(
                "longer than {} bytes",
                want.len
            )));
        }
        crc.update(&piece);
        if let Some(previous) = held.replace(piece) {
            out.write_all(&previous).map_err(gone)?;
        }
    }
    if len != want.len {
        return Err(StreamEnd::Damaged(format!("{len} bytes of {}", want.len)));
    }
    if crc.finalize() != want.crc {
        return Err(StreamEnd::Damaged("CRC-32 mismatch".into()));
    }
    if let Some(last) = held {
        out.write_all(&last).map_err(gone)?;
    }
    out.flush().map_err(gone)
}

/// Fills `buf` unless the file ends first; how many bytes it read.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams the file `want` names as it stands: the pieces sent, and whether it was found
    /// damaged.
    fn stream(want: &RenderingFile) -> (Vec<Bytes>, bool) {
        let (tx, mut rx) = mpsc::channel(1024);
        let file = File::open(&want.path).expect("open");
        let damaged = matches!(pump(file, want, &tx), Err(StreamEnd::Damaged(_)));
        drop(tx);
        let mut got = Vec::new();
        while let Ok(Ok(piece)) = rx.try_recv() {
            got.push(piece);
        }
        (got, damaged)
    }

    fn written(dir: &tempfile::TempDir, body: &[u8]) -> RenderingFile {
        let path = dir.path().join("r.txt");
        std::fs::write(&path, body).expect("write");
        RenderingFile {
            path,
            len: body.len() as u64,
            crc: crc32fast::hash(body),
        }
    }

    #[test]
    fn a_sound_file_is_sent_whole_in_pieces() {
        let dir = tempfile::tempdir().expect("dir");
        let body: Vec<u8> = (0..PIECE * 2 + 17).map(|i| (i % 251) as u8).collect();
        let file = written(&dir, &body);
        let (got, damaged) = stream(&file);
        assert!(!damaged);
        assert_eq!(got.len(), 3);
        assert_eq!(got.concat(), body);
    }

    #[test]
    fn a_damaged_file_never_sends_its_last_piece() {
        let dir = tempfile::tempdir().expect("dir");
        let body: Vec<u8> = (0..PIECE * 2 + 17).map(|i| (i % 251) as u8).collect();
        let want = written(&dir, &body);
        let mut flipped = body.clone();
        flipped[PIECE + 5] ^= 1;
        let mut longer = body.clone();
        longer.extend_from_slice(b"more");
        for (what, bytes) in [
            ("flipped", flipped),
            ("shorter", body[..PIECE + 3].to_vec()),
            ("longer", longer),
            ("empty", Vec::new()),
        ] {
            std::fs::write(&want.path, &bytes).expect("damage");
            let (got, damaged) = stream(&want);
            assert!(damaged, "{what}");
            let sent: usize = got.iter().map(Bytes::len).sum();
            assert!(sent < body.len(), "{what}: {sent} bytes sent");
        }
    }
}
