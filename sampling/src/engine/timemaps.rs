//! The sampled URLs' TimeMaps through CDX pagination, revisits hydrated when the spec asks,
//! `concurrency` at a time, checkpointed.
//!
//! TimeMap `i` (the sample's line `i`, served as `NNNNNN.ndjson`) is compressed into one zstd
//! frame, appended whole to the current pack (`timemaps/pack-NNNN.zst`, [`crate::pack`]), and
//! only then gets its line in `timemaps/index.ndjson` (appended, written through) saying where
//! it is: a frame killed half-written has no line and is never read, a whole one without its
//! line is fetched again (its bytes left unused), so a run started again over the directory
//! asks only the TimeMaps that have no index line. Lines of a run that wrote one file per
//! TimeMap (no `pack`) count as written while their file is there. At the end the index is rewritten whole in
//! sample order (failures included, as `{url, error}`: they are asked again on the next run),
//! each line copied from the appended index by its byte offset. The sample is read from
//! `sample.ndjson` as the stage goes, never held, and so are the index's finished entries and
//! the failures: sorted on disk and merged with it ([`index`]), nothing per sampled URL held.

mod index;

use super::checkpoint::FirstCaptures;
use super::ndjson::{write_lines, Log};
use super::progress::TIMEMAPS;
use super::Progress;
use crate::external_sort::ExternalSort;
use crate::pack::{compress, file_name, offset_record, Hydration, IndexLine, PackWriter};
use crate::pack::{OFFSETS, PACK_BYTES};
use crate::revisit::{Hydrator, Row, LRU_SIZE};
use crate::{Counters, SetAside};
use index::{failures, Failed, Ledger};
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::Ordering;
use tmproxy_disk::{AtomicFile, Durability};

const STAGE: &str = "timemaps";

/// Where the stage's bookkeeping is sorted: the engine's spill directory, and the most bytes of
/// records held before a run is written.
pub(super) struct SpillAt<'a> {
    pub(super) dir: &'a Path,
    pub(super) max_held: usize,
}

/// Each sampled URL's TimeMap into `out/timemaps/`; returns the stage's counters (partial when
/// the run is cancelled: what was written stays, and is not asked again).
#[allow(clippy::too_many_arguments)]
pub(super) async fn collect_timemaps(
    captures: &FirstCaptures,
    errors: &Log,
    sample: &Path,
    out: &Path,
    spill: SpillAt<'_>,
    hydrate: bool,
    concurrency: usize,
    progress: &Progress,
) -> Result<Counters, String> {
    use futures::StreamExt;
    let dir = out.join("timemaps");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut ledger = Ledger::scan(&dir, spill.dir, spill.max_held)?;
    let (mut lines, mut done) = (0u64, 0u64);
    for row in ledger.join(sample)? {
        lines += 1;
        done += u64::from(row?.2.is_some());
    }
    progress.timemaps.fetch_add(done, Ordering::Relaxed);
    progress.set_total(TIMEMAPS, lines);
    progress.add_done(TIMEMAPS, done);
    progress.add_reused(TIMEMAPS, done);
    // The offsets describe the index as rewritten; lines are about to be appended to it.
    match std::fs::remove_file(dir.join(OFFSETS)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", dir.join(OFFSETS).display()))
        }
        _ => {}
    }
    let index = Log {
        write_through: true,
        ..Log::open(&dir.join("index.ndjson"), true)?
    };
    let mut pack = PackWriter::open(&dir, PACK_BYTES)?;
    // Failures go into the final index, in sample order: asked again next run.
    let mut failed = failures(spill.dir, spill.max_held)?;
    let mut errors_n = 0u64;
    // The sample read again beside the entries as the TimeMaps are asked; a line that cannot
    // be read ends the stage with an error (it was written by this run: something else
    // changed it).
    let todo = ledger.join(sample)?.filter_map(|row| match row {
        Ok((i, s, None)) => Some(Ok((i, s.url))),
        Ok((_, _, Some(_))) => None,
        Err(e) => Some(Err(e)),
    });
    let mut fetched = futures::stream::iter(todo)
        .map(|row| async move {
            let (i, url) = row?;
            let entry = {
                let note = captures.note(&url, STAGE);
                let rows = captures.client.timemap_noting(&url, &note).await;
                rows.and_then(|rows| encode(i, &url, rows, hydrate))
            };
            Ok::<_, String>((i, url, entry))
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(next) = fetched.next().await {
        let (i, url, entry) = next?;
        progress.timemaps.fetch_add(1, Ordering::Relaxed);
        progress.add_done(TIMEMAPS, 1);
        progress.answer(STAGE, true);
        // The frame, then its line: only a whole frame is ever pointed at.
        let stored = entry.and_then(|(mut e, frame)| {
            e.set_location(pack.append(&frame)?);
            Ok(e)
        });
        match stored {
            Ok(e) => {
                index.write(&e);
                done += 1;
            }
            Err(reason) => {
                errors.write(&SetAside {
                    stage: STAGE,
                    url,
                    reason: reason.clone(),
                });
                failed.push(Failed {
                    line: i as u64,
                    reason,
                })?;
                errors_n += 1;
            }
        }
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
    }
    drop(fetched);
    drop(index);
    ledger.remove();
    let c = Counters {
        input: lines,
        output: done,
        set_aside: 0,
        errors: errors_n,
    };
    if progress.cancel.load(Ordering::Relaxed) {
        failed.remove();
        return Ok(c);
    }
    // The entries found again, with the TimeMaps fetched now.
    let mut ledger = Ledger::scan(&dir, spill.dir, spill.max_held)?;
    let written = rewrite_index(&dir, sample, &mut ledger, &mut failed, hydrate);
    ledger.remove();
    failed.remove();
    written?;
    Ok(c)
}

/// The whole index in sample order (each finished TimeMap's line copied from the appended
/// index, each failure as `{url, error}`), renamed over it, and the hydration summed over every
/// TimeMap: read back one line at a time beside the sample's and the sorted failures.
fn rewrite_index(
    dir: &Path,
    sample: &Path,
    ledger: &mut Ledger,
    failed: &mut ExternalSort<Failed>,
    hydrate: bool,
) -> Result<(), String> {
    use std::io::{Seek, SeekFrom, Write};
    let err = |e: std::io::Error| format!("{}: {e}", dir.display());
    let mut failed = failed.merge()?;
    let mut next_failed = failed.next().transpose()?;
    let mut appended =
        std::io::BufReader::new(std::fs::File::open(dir.join("index.ndjson")).map_err(err)?);
    let mut w =
        AtomicFile::create_with_suffix(&dir.join("index.ndjson"), ".part", Durability::Unsynced)
            .map_err(|e| e.to_string())?;
    let mut offsets =
        AtomicFile::create_with_suffix(&dir.join(OFFSETS), ".part", Durability::Unsynced)
            .map_err(|e| e.to_string())?;
    let mut sum = Hydration::default();
    let mut line = Vec::new();
    // Bytes of the new index so far: where the next line starts.
    let mut written = 0u64;
    for row in ledger.join(sample)? {
        let (i, s, at) = row?;
        let start = written;
        if let Some(at) = at {
            appended.seek(SeekFrom::Start(at)).map_err(err)?;
            line.clear();
            appended.read_until(b'\n', &mut line).map_err(err)?;
            let entry = serde_json::from_slice::<IndexLine>(line.trim_ascii_end()).ok();
            if let Some(h) = entry.and_then(|e| e.hydration) {
                sum.revisits += h.revisits;
                sum.hydrated += h.hydrated;
                sum.misses += h.misses;
                for (d, n) in &h.distances {
                    *sum.distances.entry(*d).or_default() += n;
                }
            }
            let kept = line.trim_ascii_end();
            w.write_all(kept).map_err(err)?;
            w.write_all(b"\n").map_err(err)?;
            written += kept.len() as u64 + 1;
        }
        while let Some(f) = next_failed.take_if(|f| f.line <= i as u64) {
            next_failed = failed.next().transpose()?;
            // A line already finished (an earlier run's) wins over a failure this run: none
            // is asked twice, so there is at most one of the two.
            if f.line == i as u64 && at.is_none() {
                let e = IndexLine {
                    url: s.url.clone(),
                    error: Some(f.reason),
                    ..IndexLine::default()
                };
                let text = serde_json::to_string(&e).map_err(|e| e.to_string())?;
                writeln!(w, "{text}").map_err(err)?;
                written += text.len() as u64 + 1;
            }
        }
        let wrote = (written > start).then_some(start);
        offsets.write_all(&offset_record(wrote)).map_err(err)?;
    }
    w.commit().map_err(|e| e.to_string())?;
    // After the index: offsets never describe an index not yet in place.
    offsets.commit().map_err(|e| e.to_string())?;
    if hydrate {
        let text = serde_json::to_string(&sum).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("hydration.json"), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Hydrates (when asked) and compresses TimeMap `i`: its index line, not yet saying where it
/// is stored, and its frame.
fn encode(
    i: usize,
    url: &str,
    mut rows: Vec<crate::cdx::CdxRow>,
    hydrate: bool,
) -> Result<(IndexLine, Vec<u8>), String> {
    let hydration = hydrate.then(|| {
        let mut h = Hydrator::new(LRU_SIZE);
        for r in &mut rows {
            let mut row = Row {
                mime: std::mem::take(&mut r.mime),
                status: std::mem::take(&mut r.status),
                digest: r.digest.clone(),
            };
            h.hydrate(&mut row);
            r.mime = row.mime;
            r.status = row.status;
        }
        Hydration {
            revisits: h.report.revisits,
            hydrated: h.report.hydrated,
            misses: h.report.misses,
            distances: h.report.distances,
        }
    });
    let mut text = Vec::new();
    write_lines(&mut text, &rows).map_err(|e| e.to_string())?;
    let frame = compress(&text)?;
    let line = IndexLine {
        file: Some(file_name(i)),
        url: url.to_string(),
        mementos: Some(rows.len()),
        hydration,
        ..IndexLine::default()
    };
    Ok((line, frame))
}

#[cfg(test)]
mod tests;
