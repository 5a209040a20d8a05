//! The run's input and the offline stages over it, read on a blocking thread while the CDX
//! stage asks about the candidates they pass on.

use super::limits::{Limits, PER_ENTRY, PER_URL};
use super::ndjson::Log;
use super::popular::PopularPool;
use super::progress::{FIRST_CAPTURE, POPULAR_QUOTA};
use super::Progress;
use crate::index::parse_line;
use crate::offline::{Candidate, Offline};
use crate::reading::{Line, LineReader, OrderCheck};
use crate::{FunnelRow, SetAside};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the offline stages hand back once the input is through: their funnel rows, and the
/// popular domains' URLs they set aside, for the quota stage.
pub(super) type OfflineResult = Result<(Vec<FunnelRow>, PopularPool), String>;

/// Reads `input` through the offline stages on a blocking thread, each candidate sent on `tx`
/// (bounded, so reading keeps pace with the CDX stage); stops early when the receiver is gone
/// or the run is cancelled. Lines are read under `limits` (a line too long or not UTF-8 is set
/// aside with its number; input out of order, too large or a gzip bomb ends the run with an
/// error naming the line or the limit), and the engine's memory estimate is checked as it goes.
pub(super) fn spawn_offline(
    input: PathBuf,
    popular: Vec<String>,
    seed: u64,
    tx: tokio::sync::mpsc::Sender<Candidate>,
    aside_log: Arc<Log>,
    prog: Arc<Progress>,
    limits: Limits,
) -> tokio::task::JoinHandle<OfflineResult> {
    tokio::task::spawn_blocking(move || -> OfflineResult {
        let reader = crate::index::open_counted(&input, prog.input_read.clone(), limits.read)
            .map_err(|e| format!("{}: {e}", input.display()))?;
        let mut reader = LineReader::new(reader, limits.read.max_line);
        let mut o = Offline::new(&popular);
        let mut pool = PopularPool::new(seed, &popular);
        let mut order = OrderCheck::default();
        let mut aside = |a: SetAside| {
            // A popular domain's URL is handed to the quota stage, which records its fate.
            if a.stage == "popular_domains" {
                if let Some(not_drawn) = pool.push(&a.url) {
                    aside_log.write(&not_drawn);
                }
                let bytes = pool.len() as u64 * (PER_ENTRY + PER_URL);
                prog.memory.popular.store(bytes, Ordering::Relaxed);
                prog.set_seen(POPULAR_QUOTA, pool.size());
            } else {
                aside_log.write(&a)
            }
        };
        loop {
            let (number, line) = match reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    let at = prog.lines.load(Ordering::Relaxed);
                    return Err(format!("{} (after line {at}): {e}", input.display()));
                }
            };
            prog.lines.store(number, Ordering::Relaxed);
            if number.is_multiple_of(1024) {
                prog.offline_read();
            }
            let mut batch = Vec::new();
            match line {
                Line::Text(text) => {
                    if let Ok(rec) = parse_line(text) {
                        order.check(rec.key, rec.timestamp.unwrap_or(""), text, number)?;
                    }
                    o.push_line(text, &mut |c| batch.push(c), &mut aside);
                }
                Line::TooLong { bytes, head } => {
                    let reason = format!(
                        "line {number}: {bytes} bytes, longer than [sampling] max_line ({} \
                         bytes); skipped unread",
                        limits.read.max_line
                    );
                    o.reject_line(&head, reason, &mut aside);
                }
                Line::NotUtf8 { at, lossy } => {
                    let reason = format!("line {number}: not UTF-8 (a bad byte at offset {at})");
                    o.reject_line(&lossy, reason, &mut aside);
                }
            }
            for c in batch {
                prog.add_seen(FIRST_CAPTURE, 1);
                if tx.blocking_send(c).is_err() {
                    // The CDX side stopped (cancelled): stop reading.
                    return Ok((o.funnel(), pool));
                }
            }
            if number.is_multiple_of(4096) {
                account(&prog, limits)?;
            }
            if prog.cancel.load(Ordering::Relaxed) {
                return Ok((o.funnel(), pool));
            }
        }
        account(&prog, limits)?;
        // Through the input: first_capture's work is every candidate handed over, the quota's
        // at most the pool.
        prog.offline_read();
        prog.input_through(pool.size());
        Ok((o.funnel(), pool))
    })
}

/// The memory estimate checked while the input is read (the offline stages hold nothing that
/// grows: the last key and the current block's root, at most a few `max_line`s).
fn account(prog: &Progress, limits: Limits) -> Result<(), String> {
    prog.memory.check(limits.max_memory)
}

/// The input as a local file: a path as it is, an http(s) URL downloaded into `out` first, at
/// most `max_bytes` of it (0 = no limit; an endless body must not fill the disk).
pub(super) async fn local_input(
    input: &str,
    out: &Path,
    max_bytes: u64,
) -> Result<PathBuf, String> {
    if !(input.starts_with("http://") || input.starts_with("https://")) {
        return Ok(PathBuf::from(input));
    }
    let path = out.join("input.index");
    let http = reqwest::Client::builder()
        .redirect(crate::cdx::no_redirects())
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
    let mut got = 0u64;
    while let Some(chunk) = r.chunk().await.map_err(|e| format!("input {input}: {e}"))? {
        got += chunk.len() as u64;
        if max_bytes > 0 && got > max_bytes {
            drop(file);
            let _ = std::fs::remove_file(&path);
            return Err(format!(
                "input {input}: larger than [sampling] max_input_bytes ({max_bytes} bytes)"
            ));
        }
        file.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(path)
}
