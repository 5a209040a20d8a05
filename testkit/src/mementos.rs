//! A fake archive for `/memento/proxy`: its TimeMap (under any `…/timemap/link/` path) lists the
//! URI-Ms a test chooses, and every other path is a memento answered with the test's body
//! (plain or content-coded, of any size). It records each request's method and path, and how
//! many body bytes the network took from it, so a test sees what it was asked and what was read.
//! A test may answer some paths otherwise ([`Special`]): another body, a status, no answer at all
//! (a memento's raw form that differs from its replay page, or fails).

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

/// How a path holding a test's marker is answered instead of the memento body.
#[derive(Clone)]
pub enum Special {
    /// 200 with this body.
    Body(MementoBody),
    /// This status, with a short text body.
    Status(u16),
    /// Nothing: the request is read, and the connection left open without an answer.
    Hang,
}

/// Paths holding the marker (the first that matches) answered as said.
pub type Specials = Arc<Vec<(&'static str, Special)>>;

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
        MementoArchive::start_with(listing, body, Vec::new()).await
    }

    /// As [`MementoArchive::start`], a path holding one of `specials`' markers answered as
    /// that marker says.
    pub async fn start_with(
        listing: Listing,
        body: MementoBody,
        specials: Vec<(&'static str, Special)>,
    ) -> std::io::Result<MementoArchive> {
        let specials: Specials = Arc::new(specials);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let body_bytes_sent = Arc::new(AtomicUsize::new(0));
        let (record, sent) = (seen.clone(), body_bytes_sent.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (record, sent) = (record.clone(), sent.clone());
                let (listing, body) = (listing.clone(), body.clone());
                let specials = specials.clone();
                tokio::spawn(async move {
                    let served = Served {
                        listing: &listing,
                        body: &body,
                        specials: &specials,
                    };
                    let _ = answer(stream, addr, served, &record, &sent).await;
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

/// What the archive answers with.
#[derive(Clone, Copy)]
struct Served<'a> {
    listing: &'a Listing,
    body: &'a MementoBody,
    specials: &'a Specials,
}

/// One request per connection (`Connection: close`).
async fn answer(
    mut stream: TcpStream,
    addr: SocketAddr,
    served: Served<'_>,
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
        for uri_m in (served.listing)(addr, uri_r) {
            text.push_str(&format!(
                ",\n<{uri_m}>; rel=\"memento\"; datetime=\"Mon, 01 Jan 2001 00:00:00 GMT\""
            ));
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/link-format\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", text.len());
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(text.as_bytes()).await?;
        return stream.flush().await;
    }
    let mut body = served.body;
    match served
        .specials
        .iter()
        .find(|(marker, _)| path.contains(marker))
    {
        Some((_, Special::Body(special))) => body = special,
        Some((_, Special::Status(code))) => {
            let head = format!("HTTP/1.1 {code} Special\r\nContent-Type: text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\nspecial");
            stream.write_all(head.as_bytes()).await?;
            return stream.flush().await;
        }
        Some((_, Special::Hang)) => {
            // Long past any test's timeout; the test's runtime drops it when the test ends.
            tokio::time::sleep(std::time::Duration::from_secs(600)).await;
            return Ok(());
        }
        None => {}
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
