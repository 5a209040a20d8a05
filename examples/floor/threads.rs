//! The floors' threads: one copy of the listener per thread, each serving on a single-threaded
//! runtime of its own, as `tmproxy serve`'s connection threads do.

use std::future::Future;

/// Runs `serve` on `threads` threads, each on its own runtime with its own copy of `listener`,
/// until all end.
pub fn serve_on_threads<F, Fut>(listener: &std::net::TcpListener, threads: usize, serve: F)
where
    F: Fn(tokio::net::TcpListener) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = std::io::Result<()>>,
{
    let handles: Vec<_> = (0..threads)
        .filter_map(|_| {
            let listener = listener.try_clone().ok()?;
            let serve = serve.clone();
            Some(std::thread::spawn(move || on_runtime(listener, serve)))
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
}

/// `serve` on this thread's runtime.
fn on_runtime<F, Fut>(listener: std::net::TcpListener, serve: F) -> std::io::Result<()>
where
    F: Fn(tokio::net::TcpListener) -> Fut,
    Fut: Future<Output = std::io::Result<()>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        listener.set_nonblocking(true)?;
        serve(tokio::net::TcpListener::from_std(listener)?).await
    })
}
