//! A request's answer polled once as soon as hyper hands the request over, before hyper goes
//! back to its read buffer.
//!
//! Why: hyper parses a request head out of its connection's read buffer and the request keeps
//! slices of that buffer (URI, header values) until it is dropped. Right after handing it over,
//! hyper reserves room in the buffer for the next request; while the request still holds it,
//! that is a fresh allocation, and freeing the old one later can empty a whole allocator page,
//! which mimalloc purges at once (`madvise`, shooting down the other threads' TLBs). A cache hit
//! needs no waiting: answered here, its request is dropped before hyper reserves, and hyper
//! reuses its buffer in place (BENCHMARKS.md, "Small cache hits against nginx": the request dropped before hyper reads on).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// `answer` polled once now (with a waker that does nothing: a future still pending is polled
/// again by hyper, with its own waker, before it could have been woken); what is left to wait.
pub fn poll_now<F>(mut answer: F) -> Early<F>
where
    F: Future + Unpin,
{
    match Pin::new(&mut answer).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Early::Ready(Some(out)),
        Poll::Pending => Early::Pending(answer),
    }
}

/// An answer that was ready at once, or the future still to wait for.
pub enum Early<F: Future> {
    Ready(Option<F::Output>),
    Pending(F),
}

impl<F: Future + Unpin> Future for Early<F>
where
    F::Output: Unpin,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.get_mut() {
            // Taken once: hyper does not poll a finished future again.
            Early::Ready(out) => match out.take() {
                Some(out) => Poll::Ready(out),
                None => Poll::Pending,
            },
            Early::Pending(answer) => Pin::new(answer).poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_ready_answer_is_taken_at_once_and_what_it_held_is_let_go() {
        let request = Arc::new("the request's bytes");
        let held = request.clone();
        let early = poll_now(Box::pin(async move { held.len() }));
        assert!(matches!(early, Early::Ready(Some(_))));
        // The future (and the request it owned) is gone before hyper would reserve again.
        assert_eq!(Arc::strong_count(&request), 1);
        assert_eq!(early.await, request.len());
    }

    #[tokio::test]
    async fn an_answer_still_waiting_is_woken_through_the_later_poll() {
        let (send, receive) = tokio::sync::oneshot::channel::<u32>();
        let early = poll_now(Box::pin(async move { receive.await.unwrap_or(0) + 1 }));
        assert!(matches!(early, Early::Pending(_)));
        let waiting = tokio::spawn(early);
        tokio::task::yield_now().await;
        // Sent after the first poll registered the do-nothing waker: only the task's own
        // waker, registered when polled again, can finish it.
        let _ = send.send(41);
        assert_eq!(waiting.await.ok(), Some(42));
    }
}
