//! The sampled URLs' TimeMaps through CDX pagination, revisits hydrated when the spec asks,
//! `concurrency` at a time, checkpointed.
//!
//! TimeMap `i` (the sample's line `i`) is written to `timemaps/NNNNNN.ndjson.part`, renamed to
//! `NNNNNN.ndjson` once complete, and only then gets its line in `timemaps/index.ndjson`
//! (appended, written through): a file killed half-written is never renamed, a renamed one
//! without its index line is fetched again, so a run started again over the directory asks
//! only the TimeMaps that have no index line. At the end the index is rewritten whole in
//! sample order (failures included, as `{url, error}`: they are asked again on the next run).

use super::checkpoint::FirstCaptures;
use super::ndjson::{write_ndjson, Log};
use super::progress::TIMEMAPS;
use super::{Progress, SampledUrl};
use crate::sampling::revisit::{Hydrator, Row, LRU_SIZE};
use crate::sampling::{Counters, SetAside};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::Ordering;

const STAGE: &str = "timemaps";

/// What hydration did over one TimeMap (summed into `hydration.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Hydration {
    revisits: u64,
    hydrated: u64,
    misses: u64,
    distances: BTreeMap<usize, u64>,
}

/// A line of `timemaps/index.ndjson`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mementos: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hydration: Option<Hydration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn file_name(i: usize) -> String {
    format!("{i:06}.ndjson")
}

/// The TimeMaps a previous run finished: index lines naming the file this sample's line `i`
/// gets, for the same URL, with the file there. Anything else (torn lines, failures, another
/// sample's entries) is asked again.
fn finished(dir: &Path, sample: &[SampledUrl]) -> HashMap<usize, Entry> {
    let mut done = HashMap::new();
    let Ok(file) = std::fs::File::open(dir.join("index.ndjson")) else {
        return done;
    };
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        let Ok(e) = serde_json::from_slice::<Entry>(&line) else {
            continue;
        };
        let Some(name) = &e.file else { continue };
        let Some(i) = name
            .strip_suffix(".ndjson")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let same = sample.get(i).is_some_and(|s| s.url == e.url);
        if same && *name == file_name(i) && dir.join(name).is_file() {
            done.insert(i, e);
        }
    }
    done
}

/// Each sampled URL's TimeMap into `out/timemaps/`; returns the stage's counters (partial when
/// the run is cancelled: what was written stays, and is not asked again).
pub(super) async fn collect_timemaps(
    captures: &FirstCaptures,
    errors: &Log,
    sample: &[SampledUrl],
    out: &Path,
    hydrate: bool,
    concurrency: usize,
    progress: &Progress,
) -> Result<Counters, String> {
    use futures::StreamExt;
    let dir = out.join("timemaps");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut done = finished(&dir, sample);
    progress
        .timemaps
        .fetch_add(done.len() as u64, Ordering::Relaxed);
    progress.set_total(TIMEMAPS, sample.len() as u64);
    progress.add_done(TIMEMAPS, done.len() as u64);
    progress.add_reused(TIMEMAPS, done.len() as u64);
    let index = Log {
        write_through: true,
        ..Log::open(&dir.join("index.ndjson"), true)?
    };
    let mut failed: HashMap<usize, Entry> = HashMap::new();
    let todo: Vec<usize> = (0..sample.len())
        .filter(|i| !done.contains_key(i))
        .collect();
    let dir_ref = &dir;
    let mut fetched = futures::stream::iter(todo)
        .map(|i| async move {
            let url = &sample[i].url;
            let note = captures.note(url, STAGE);
            let rows = captures.client.timemap_noting(url, &note).await;
            (
                i,
                rows.and_then(|rows| save(dir_ref, i, url, rows, hydrate)),
            )
        })
        .buffer_unordered(concurrency.max(1));
    while let Some((i, entry)) = fetched.next().await {
        progress.timemaps.fetch_add(1, Ordering::Relaxed);
        progress.add_done(TIMEMAPS, 1);
        progress.answer(STAGE, true);
        match entry {
            Ok(e) => {
                index.write(&e);
                done.insert(i, e);
            }
            Err(reason) => {
                let url = sample[i].url.clone();
                errors.write(&SetAside {
                    stage: STAGE,
                    url: url.clone(),
                    reason: reason.clone(),
                });
                failed.insert(
                    i,
                    Entry {
                        file: None,
                        url,
                        mementos: None,
                        hydration: None,
                        error: Some(reason),
                    },
                );
            }
        }
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
    }
    drop(fetched);
    let c = Counters {
        input: sample.len() as u64,
        output: done.len() as u64,
        set_aside: 0,
        errors: failed.len() as u64,
    };
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(c);
    }
    // The whole index in sample order, and the hydration summed over every TimeMap.
    let mut all: Vec<Entry> = Vec::with_capacity(sample.len());
    let mut sum = Hydration::default();
    for i in 0..sample.len() {
        if let Some(e) = done.remove(&i).or_else(|| failed.remove(&i)) {
            if let Some(h) = &e.hydration {
                sum.revisits += h.revisits;
                sum.hydrated += h.hydrated;
                sum.misses += h.misses;
                for (d, n) in &h.distances {
                    *sum.distances.entry(*d).or_default() += n;
                }
            }
            all.push(e);
        }
    }
    let tmp = dir.join("index.ndjson.part");
    write_ndjson(&tmp, &all)?;
    std::fs::rename(&tmp, dir.join("index.ndjson"))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if hydrate {
        let text = serde_json::to_string(&sum).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("hydration.json"), text).map_err(|e| e.to_string())?;
    }
    Ok(c)
}

/// Hydrates (when asked) and writes TimeMap `i`: to a `.part` file, renamed once complete.
fn save(
    dir: &Path,
    i: usize,
    url: &str,
    mut rows: Vec<crate::sampling::cdx::CdxRow>,
    hydrate: bool,
) -> Result<Entry, String> {
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
    let name = file_name(i);
    let part = dir.join(format!("{name}.part"));
    write_ndjson(&part, &rows)?;
    std::fs::rename(&part, dir.join(&name)).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(Entry {
        file: Some(name),
        url: url.to_string(),
        mementos: Some(rows.len()),
        hydration,
        error: None,
    })
}
