//! The run's input and the offline stages over it, read on a blocking thread while the CDX
//! stage asks about the candidates they pass on.

use super::ndjson::Log;
use super::popular::PopularPool;
use super::progress::{FIRST_CAPTURE, POPULAR_QUOTA};
use super::Progress;
use crate::sampling::offline::{Candidate, Offline};
use crate::sampling::FunnelRow;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the offline stages hand back once the input is through: their funnel rows, and the
/// popular domains' URLs they set aside, for the quota stage.
pub(super) type OfflineResult = Result<(Vec<FunnelRow>, PopularPool), String>;

/// Reads `input` through the offline stages on a blocking thread, each candidate sent on `tx`
/// (bounded, so reading keeps pace with the CDX stage); stops early when the receiver is gone
/// or the run is cancelled.
pub(super) fn spawn_offline(
    input: PathBuf,
    popular: Vec<String>,
    seed: u64,
    tx: tokio::sync::mpsc::Sender<Candidate>,
    aside_log: Arc<Log>,
    prog: Arc<Progress>,
) -> tokio::task::JoinHandle<OfflineResult> {
    tokio::task::spawn_blocking(move || -> OfflineResult {
        let mut reader = crate::sampling::index::open_counted(&input, prog.input_read.clone())
            .map_err(|e| format!("{}: {e}", input.display()))?;
        let mut o = Offline::new(&popular);
        let mut pool = PopularPool::new(seed, &popular);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(format!("{}: {e}", input.display())),
            }
            let lines = prog.lines.fetch_add(1, Ordering::Relaxed) + 1;
            if lines.is_multiple_of(1024) {
                prog.offline_read();
            }
            let mut batch = Vec::new();
            o.push_line(&line, &mut |c| batch.push(c), &mut |a| {
                // A popular domain's URL is handed to the quota stage, which records its fate.
                if a.stage == "popular_domains" {
                    if let Some(not_drawn) = pool.push(&a.url) {
                        aside_log.write(&not_drawn);
                    }
                    prog.set_seen(POPULAR_QUOTA, pool.size());
                } else {
                    aside_log.write(&a)
                }
            });
            for c in batch {
                prog.add_seen(FIRST_CAPTURE, 1);
                if tx.blocking_send(c).is_err() {
                    // The CDX side stopped (cancelled): stop reading.
                    return Ok((o.funnel(), pool));
                }
            }
            if prog.cancel.load(Ordering::Relaxed) {
                return Ok((o.funnel(), pool));
            }
        }
        // Through the input: first_capture's work is every candidate handed over, the quota's
        // at most the pool.
        prog.offline_read();
        prog.input_through(pool.size());
        Ok((o.funnel(), pool))
    })
}

/// The input as a local file: a path as it is, an http(s) URL downloaded into `out` first.
pub(super) async fn local_input(input: &str, out: &Path) -> Result<PathBuf, String> {
    if !(input.starts_with("http://") || input.starts_with("https://")) {
        return Ok(PathBuf::from(input));
    }
    let path = out.join("input.index");
    let http = reqwest::Client::builder()
        .redirect(crate::sampling::cdx::no_redirects())
        .build()
        .map_err(|e| format!("input {input}: {e}"))?;
    let mut r = http
        .get(input)
        .send()
        .await
        .map_err(|e| format!("input {input}: {e}"))?;
    if !r.status().is_success() {
        return Err(format!("input {input}: HTTP {}", r.status()));
    }
    let mut file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    while let Some(chunk) = r.chunk().await.map_err(|e| format!("input {input}: {e}"))? {
        file.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(path)
}
