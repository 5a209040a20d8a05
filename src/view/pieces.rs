//! A rendered body in up to three pieces: whole, or another spelling's head, the stored
//! spelling's memento list (shared, never copied) and its tail. Sent as they are, each piece
//! one frame, with the exact length announced.

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pieces([Bytes; 3]);

impl Pieces {
    /// A body in one piece.
    pub fn one(body: Bytes) -> Pieces {
        Pieces([body, Bytes::new(), Bytes::new()])
    }

    /// A body made of `head`, `list` and `tail`, in that order.
    pub fn three(head: Bytes, list: Bytes, tail: Bytes) -> Pieces {
        Pieces([head, list, tail])
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body in one piece: itself when it is one, else the pieces copied together.
    pub fn contiguous(&self) -> Bytes {
        match &self.0 {
            [one, b, c] if b.is_empty() && c.is_empty() => one.clone(),
            pieces => Bytes::from(pieces.concat()),
        }
    }

    /// The pieces in order (some may be empty).
    pub fn iter(&self) -> impl Iterator<Item = &Bytes> {
        self.0.iter()
    }
}

impl From<Pieces> for Body {
    fn from(pieces: Pieces) -> Body {
        match pieces.0 {
            [one, b, c] if b.is_empty() && c.is_empty() => Body::from(one),
            pieces => Body::new(Frames(pieces, 0)),
        }
    }
}

/// The pieces from the `.1`th on, as frames.
struct Frames([Bytes; 3], usize);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        while this.1 < this.0.len() {
            let piece = std::mem::take(&mut this.0[this.1]);
            this.1 += 1;
            if !piece.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(piece))));
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.0[self.1..].iter().all(Bytes::is_empty)
    }

    /// Exact, so the answer carries a `Content-Length` as a body in one piece does.
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0[self.1..].iter().map(|b| b.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn three_pieces_are_sent_in_order_with_their_exact_length() {
        let p = Pieces::three(
            Bytes::from_static(b"head,"),
            Bytes::from_static(b"list"),
            Bytes::new(),
        );
        assert_eq!(p.len(), 9);
        assert_eq!(p.contiguous(), Bytes::from_static(b"head,list"));
        let body = Body::from(p);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(9));
        let got = axum::body::to_bytes(body, usize::MAX).await.expect("body");
        assert_eq!(got, Bytes::from_static(b"head,list"));
        let one = Pieces::one(Bytes::from_static(b"whole"));
        assert_eq!(
            http_body::Body::size_hint(&Body::from(one)).exact(),
            Some(5)
        );
    }
}
