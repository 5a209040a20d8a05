//! A fake archive for `/memento/proxy`: its TimeMap (under any `…/timemap/link/` path) lists the
//! URI-Ms a test chooses, and every other path is a memento answered with the test's body
//! (plain or content-coded, of any size). It records each request's method and path, and how
//! many body bytes the network took from it, so a test sees what it was asked and what was read.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The URI-Ms listed for a URI-R, given the archive's own address.
pub type Listing = Arc<dyn Fn(SocketAddr, &str) -> Vec<String> + Send + Sync>;

/// How a memento is answered: 200, `Content-Length`, and this `Content-Encoding` (if any).
#[derive(Clone)]
pub struct MementoBody {
    pub bytes: Arc<Vec<u8>>,
    pub encoding: Option<&'static str>,
}

impl MementoBody {
    /// `size` bytes of HTML-ish text, no coding.
    pub fn plain(size: usize) -> MementoBody {
        let mut bytes = b"<html>".to_vec();
        bytes.resize(size, b'x');
        MementoBody {
            bytes: Arc::new(bytes),
            encoding: None,
        }
    }

    /// `bytes` sent with `Content-Encoding: encoding`.
    pub fn coded(bytes: Vec<u8>, encoding: &'static str) -> MementoBody {
        MementoBody {
            bytes: Arc::new(bytes),
            encoding: Some(encoding),
        }
    }
}

/// A running fake memento archive; dropping it stops it.
pub struct MementoArchive {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    body_bytes_sent: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl MementoArchive {
    /// Binds 127.0.0.1:0; TimeMaps list what `listing` says, mementos are `body`.
    pub async fn start(listing: Listing, body: MementoBody) -> std::io::Result<MementoArchive> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let body_bytes_sent = Arc::new(AtomicUsize::new(0));
        let (record, sent) = (seen.clone(), body_bytes_sent.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (record, sent) = (record.clone(), sent.clone());
                let (listing, body) = (listing.clone(), body.clone());
                tokio::spawn(async move {
                    let _ = answer(stream, addr, &listing, &body, &record, &sent).await;
                });
            }
        });
        Ok(MementoArchive {
            addr,
            seen,
            body_bytes_sent,
            task,
        })
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// (method, path) of every request so far.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The requests for mementos (not TimeMaps) so far.
    pub fn memento_requests(&self) -> Vec<(String, String)> {
        let mut all = self.requests();
        all.retain(|(_, path)| !path.contains("/timemap/link/"));
        all
    }

    /// Memento body bytes the network took from it.
    pub fn body_bytes_sent(&self) -> usize {
        self.body_bytes_sent.load(Ordering::SeqCst)
    }
}

impl Drop for MementoArchive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request per connection (`Connection: close`).
async fn answer(
    mut stream: TcpStream,
    addr: SocketAddr,
    listing: &Listing,
    body: &MementoBody,
    record: &Mutex<Vec<(String, String)>>,
    sent: &AtomicUsize,
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let path = words.next().unwrap_or("/").to_string();
    record
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((method.clone(), path.clone()));
    if let Some((_, uri_r)) = path.split_once("/timemap/link/") {
        let mut text = format!("<{uri_r}>; rel=\"original\"");
        for uri_m in listing(addr, uri_r) {
            text.push_str(&format!(
                ",\n<{uri_m}>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\""
            ));
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", text.len());
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(text.as_bytes()).await?;
        return stream.flush().await;
    }
    let coding = body
        .encoding
        .map(|e| format!("Content-Encoding: {e}\r\n"))
        .unwrap_or_default();
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{coding}Content-Length: {}\r\nConnection: close\r\n\r\n", body.bytes.len());
    stream.write_all(head.as_bytes()).await?;
    if method == "HEAD" {
        return stream.flush().await;
    }
    for piece in body.bytes.chunks(16 * 1024) {
        stream.write_all(piece).await?;
        sent.fetch_add(piece.len(), Ordering::SeqCst);
    }
    stream.flush().await
}
