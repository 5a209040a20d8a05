//! A memento's body on its way to the client (`/memento/proxy`): handed to hyper a frame at a
//! time, each frame only when hyper asks for the next, so a client that does not read stops
//! the upstream read instead of filling our memory.
//!
//! hyper asks for a frame while its write buffer holds under its cap (about 400 KiB for
//! HTTP/1.1 and per HTTP/2 stream), so what one answer has read from the archive and not yet
//! written to the client's socket is at most that buffer, one frame and the rest of the upstream
//! chunk being split: [`IN_FLIGHT`]. That is charged to `[upstream] max_buffered` before the
//! answer starts (a 503 when it does not fit) and given back when hyper drops the body.

use super::budget::Held;
use super::decode::Inflate;
use bytes::Bytes;
use futures::StreamExt;
use http_body::{Frame, SizeHint};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The largest frame handed to hyper.
pub const FRAME: usize = 64 * 1024;

/// What one streamed answer may hold between the archive and the client's socket (see the
/// module's comment): hyper's ~400 KiB write buffer, a frame, an upstream chunk, with room.
pub const IN_FLIGHT: u64 = 1024 * 1024;

/// Where the bytes come from.
enum Source {
    /// The archive's body, still arriving (identity coding).
    Upstream(crate::upstream::transport::BodyStream),
    /// A coded body in memory, inflated a frame at a time for a client that does not accept
    /// its coding.
    Inflating(Box<Inflate>),
    /// Nothing more than what is queued.
    Done,
}

/// The body of a proxied memento: at most `cap` bytes, then an error (hyper then closes the
/// connection, so no client takes a cut body for a whole one).
pub struct Streamed {
    queued: VecDeque<Bytes>,
    source: Source,
    sent: u64,
    cap: u64,
    /// The length, when known before the first byte (sent as `Content-Length`).
    length: Option<u64>,
    /// The answer's charge against `max_buffered`, given back when hyper drops the body.
    _held: Held,
}

impl Streamed {
    /// The archive's identity body: `first` (already read) then the rest of `rest`.
    pub fn upstream(
        first: Vec<Bytes>,
        rest: Option<crate::upstream::transport::BodyStream>,
        length: Option<u64>,
        cap: u64,
        held: Held,
    ) -> Streamed {
        Streamed::new(
            first,
            rest.map_or(Source::Done, Source::Upstream),
            length,
            cap,
            held,
        )
    }

    /// A body wholly in memory (`coded`, sent in its coding).
    pub fn in_memory(coded: Bytes, held: Held) -> Streamed {
        let length = Some(coded.len() as u64);
        Streamed::new(vec![coded], Source::Done, length, u64::MAX, held)
    }

    /// A coded body inflated on the way, at most `cap` bytes of it.
    pub fn inflating(inflate: Inflate, cap: u64, held: Held) -> Streamed {
        let source = Source::Inflating(Box::new(inflate));
        Streamed::new(Vec::new(), source, None, cap, held)
    }

    fn new(
        first: Vec<Bytes>,
        source: Source,
        length: Option<u64>,
        cap: u64,
        held: Held,
    ) -> Streamed {
        Streamed {
            queued: first.into(),
            source,
            sent: 0,
            cap,
            length,
            _held: held,
        }
    }

    pub fn length(&self) -> Option<u64> {
        self.length
    }

    /// The next bytes from the source, when it has any now.
    fn pull(&mut self, cx: &mut Context<'_>) -> Poll<Option<std::io::Result<Bytes>>> {
        match &mut self.source {
            Source::Upstream(stream) => match stream.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(b))) => Poll::Ready(Some(Ok(b))),
                Poll::Ready(Some(Err(e))) => {
                    self.source = Source::Done;
                    Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "the archive's body broke off: {e}"
                    )))))
                }
                Poll::Ready(None) => {
                    self.source = Source::Done;
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            },
            Source::Inflating(inflate) => match inflate.next_piece(FRAME) {
                Ok(Some(piece)) => Poll::Ready(Some(Ok(Bytes::from(piece)))),
                Ok(None) => {
                    self.source = Source::Done;
                    Poll::Ready(None)
                }
                Err(e) => {
                    self.source = Source::Done;
                    Poll::Ready(Some(Err(e)))
                }
            },
            Source::Done => Poll::Ready(None),
        }
    }
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        loop {
            if let Some(front) = self.queued.front_mut() {
                let frame = if front.len() > FRAME {
                    front.split_to(FRAME)
                } else {
                    self.queued.pop_front().unwrap_or_default()
                };
                if frame.is_empty() {
                    continue;
                }
                self.sent += frame.len() as u64;
                if self.sent > self.cap {
                    // Past the cap only now (the archive announced no length): cut off.
                    self.queued.clear();
                    self.source = Source::Done;
                    let cap = self.cap;
                    tracing::warn!(
                        cap,
                        "memento cut off: over [server] memento_proxy_max_bytes"
                    );
                    return Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "memento over [server] memento_proxy_max_bytes ({cap} bytes)"
                    )))));
                }
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            match self.pull(cx) {
                Poll::Ready(Some(Ok(bytes))) => self.queued.push_back(bytes),
                Poll::Ready(Some(Err(e))) => {
                    tracing::warn!(error = %e, "memento body failed after its head was sent");
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.queued.is_empty() && matches!(self.source, Source::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n.saturating_sub(self.sent)),
            None => SizeHint::default(),
        }
    }
}
