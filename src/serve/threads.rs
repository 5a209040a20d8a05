//! Connection threads: one single-threaded runtime per core, and each public connection lives on
//! one of them from accept to close, the way nginx's workers each keep their own connections.
//!
//! Why not the multi-threaded runtime's work stealing: on a cache hit the work per request is
//! a few microseconds, and tokio's workers handing the I/O driver and each other's tasks back
//! and forth cost more than the request itself. Under wrk the server fell, for minutes at a time,
//! into a mode with 60% more context switches and ~40% more CPU per request (BENCHMARKS.md,
//! "Small cache hits against nginx"); with a runtime per thread each connection's readiness, timers and wakes
//! stay on its thread. Whatever a request spawns (a fan-out, a refresh, h2 streams) runs on the
//! same thread's runtime; blocking work goes to that runtime's own small pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// What a connection thread is handed: made on its own thread, so that the socket registers
/// with that thread's I/O driver.
type Start = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// The threads, handed connections in turn. Dropping the last handle lets each thread finish:
/// it stops taking connections and gives the tasks still on it `unwind` to end.
pub struct ConnectionThreads {
    threads: Vec<UnboundedSender<Start>>,
    next: AtomicUsize,
}

impl std::fmt::Debug for ConnectionThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConnectionThreads({})", self.threads.len())
    }
}

impl ConnectionThreads {
    /// `count` threads (at least one), each with a runtime whose blocking pool holds at most
    /// `blocking` threads; tasks still running when the threads stop get `unwind` to end.
    pub fn start(count: usize, blocking: usize, unwind: Duration) -> std::io::Result<Arc<Self>> {
        let mut threads = Vec::with_capacity(count.max(1));
        for index in 0..count.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .max_blocking_threads(blocking.max(1))
                .thread_name(format!("tmproxy-blk-{index}"))
                .build()?;
            let (give, mut taken) = unbounded_channel::<Start>();
            std::thread::Builder::new()
                .name(format!("tmproxy-conn-{index}"))
                .spawn(move || {
                    crate::stripe::bind_connection_thread(index);
                    runtime.block_on(async move {
                        while let Some(start) = taken.recv().await {
                            tokio::spawn(start());
                        }
                    });
                    runtime.shutdown_timeout(unwind);
                })?;
            threads.push(give);
        }
        Ok(Arc::new(ConnectionThreads {
            threads,
            next: AtomicUsize::new(0),
        }))
    }

    /// One per worker of the runtime this is called on (its `TOKIO_WORKER_THREADS`, else one
    /// per core), sharing `blocking_total` blocking threads between them.
    pub fn for_this_runtime(blocking_total: usize, unwind: Duration) -> std::io::Result<Arc<Self>> {
        let count = tokio::runtime::Handle::try_current()
            .map(|h| h.metrics().num_workers())
            .unwrap_or(1)
            .max(1);
        ConnectionThreads::start(count, blocking_total.div_ceil(count), unwind)
    }

    pub fn len(&self) -> usize {
        self.threads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Serves `stream` on the next thread in turn: `serve` is called there with the stream
    /// registered on that thread. If the stream cannot move (it is dropped: the client sees a
    /// closed connection) or the thread is gone (it runs here instead), the server goes on.
    pub fn hand<F, Fut>(&self, stream: tokio::net::TcpStream, serve: F)
    where
        F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "cannot hand a connection to its thread");
                return;
            }
        };
        let start: Start = Box::new(move || match tokio::net::TcpStream::from_std(stream) {
            Ok(stream) => Box::pin(serve(stream)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot register a connection on its thread");
                Box::pin(async {})
            }
        });
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        if let Err(refused) = self.threads[turn].send(start) {
            tracing::error!(
                thread = turn,
                "a connection thread is gone: serving on the acceptor's runtime"
            );
            tokio::spawn((refused.0)());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::{serve_with, ServeOptions};

    /// The name of the thread that served the request.
    async fn served_on(client: &reqwest::Client, base: &str) -> String {
        let r = client.get(base).send().await.expect("GET");
        r.text().await.expect("body")
    }

    #[tokio::test]
    async fn connections_go_to_the_threads_in_turn_and_each_stays_on_its_own() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}/", listener.local_addr().expect("addr"));
        let router = axum::Router::new().route(
            "/",
            axum::routing::get(|| async {
                std::thread::current().name().unwrap_or("?").to_owned()
            }),
        );
        let threads = ConnectionThreads::start(2, 1, Duration::from_secs(1)).expect("start");
        assert_eq!(threads.len(), 2);
        let options = ServeOptions {
            threads: Some(threads),
            ..ServeOptions::unshared(&crate::config::Config::default())
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_with(
            listener,
            router,
            async {
                let _ = stopped.await;
            },
            options,
        ));
        // Each client keeps one connection: four clients, four connections.
        let clients: Vec<_> = (0..4)
            .map(|_| reqwest::Client::builder().build().expect("client"))
            .collect();
        let mut first = Vec::new();
        for client in &clients {
            first.push(served_on(client, &base).await);
        }
        assert_eq!(
            first,
            [
                "tmproxy-conn-0",
                "tmproxy-conn-1",
                "tmproxy-conn-0",
                "tmproxy-conn-1"
            ]
        );
        for (client, name) in clients.iter().zip(&first) {
            for _ in 0..3 {
                assert_eq!(&served_on(client, &base).await, name, "moved thread");
            }
        }
        // A graceful stop still ends the server once its connections are closed.
        drop(clients);
        let _ = stop.send(());
        let ended = tokio::time::timeout(Duration::from_secs(10), server).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
    }
}
