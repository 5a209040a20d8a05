//! The sampled URLs' TimeMaps through CDX pagination, revisits hydrated when the spec asks,
//! `concurrency` at a time, checkpointed.
//!
//! TimeMap `i` (the sample's line `i`) is written to `timemaps/NNNNNN.ndjson.part`, renamed to
//! `NNNNNN.ndjson` once complete, and only then gets its line in `timemaps/index.ndjson`
//! (appended, written through): a file killed half-written is never renamed, a renamed one
//! without its index line is fetched again, so a run started again over the directory asks
//! only the TimeMaps that have no index line. At the end the index is rewritten whole in
//! sample order (failures included, as `{url, error}`: they are asked again on the next run),
//! each line copied from the appended index by its byte offset. The sample is read from
//! `sample.ndjson` as the stage goes, never held: the stage holds 16 bytes per sampled URL
//! (the offset, and a hash of the URL while it finds them) and each failure's reason.

use super::checkpoint::FirstCaptures;
use super::ndjson::{write_ndjson, Log};
use super::progress::TIMEMAPS;
use super::sample_file::read_sample;
use super::Progress;
use crate::sampling::revisit::{Hydrator, Row, LRU_SIZE};
use crate::sampling::{Counters, SetAside};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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

/// No entry for this sample line (yet).
const NONE: u64 = u64::MAX;

/// The hash each sample line's URL is compared by.
fn url_hash(url: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(url.as_bytes())
}

/// Where each sample line's finished TimeMap is in `index.ndjson`: the byte offset of its index
/// line (8 bytes a sampled URL, where holding the entries took some 250), or [`NONE`]. Only
/// lines naming the file this sample's line `i` gets, for the same URL (by a 64-bit hash of
/// it), with the file there, count; anything else (torn lines, failures, another sample's
/// entries) is asked again. A later line for `i` wins. Err: `sample` could not be read.
fn finished(dir: &Path, sample: &Path) -> Result<Vec<u64>, String> {
    let urls = read_sample(sample)?
        .map(|s| s.map(|s| url_hash(&s.url)))
        .collect::<Result<Vec<u64>, String>>()?;
    let mut done = vec![NONE; urls.len()];
    let Ok(file) = std::fs::File::open(dir.join("index.ndjson")) else {
        return Ok(done);
    };
    let mut offset = 0u64;
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        let at = offset;
        offset += line.len() as u64 + 1;
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
        let same = urls.get(i) == Some(&url_hash(&e.url));
        if same && *name == file_name(i) && dir.join(name).is_file() {
            done[i] = at;
        }
    }
    Ok(done)
}

/// Each sampled URL's TimeMap into `out/timemaps/`; returns the stage's counters (partial when
/// the run is cancelled: what was written stays, and is not asked again).
pub(super) async fn collect_timemaps(
    captures: &FirstCaptures,
    errors: &Log,
    sample: &Path,
    out: &Path,
    hydrate: bool,
    concurrency: usize,
    progress: &Progress,
) -> Result<Counters, String> {
    use futures::StreamExt;
    let dir = out.join("timemaps");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let before = finished(&dir, sample)?;
    let lines = before.len() as u64;
    let mut done = before.iter().filter(|&&o| o != NONE).count() as u64;
    progress.timemaps.fetch_add(done, Ordering::Relaxed);
    progress.set_total(TIMEMAPS, lines);
    progress.add_done(TIMEMAPS, done);
    progress.add_reused(TIMEMAPS, done);
    let index = Log {
        write_through: true,
        ..Log::open(&dir.join("index.ndjson"), true)?
    };
    // Failures are held (sample line, reason) to go into the final index: asked again next run.
    let mut failed: Vec<(usize, String)> = Vec::new();
    // The sample read again as the TimeMaps are asked; a line that cannot be read ends the
    // stage with an error (it was written by this run: something else changed it).
    let todo = read_sample(sample)?
        .enumerate()
        .filter(|(i, s)| s.is_err() || before.get(*i) == Some(&NONE));
    let dir_ref = &dir;
    let mut fetched = futures::stream::iter(todo)
        .map(|(i, s)| async move {
            let url = s?.url;
            let entry = {
                let note = captures.note(&url, STAGE);
                let rows = captures.client.timemap_noting(&url, &note).await;
                rows.and_then(|rows| save(dir_ref, i, &url, rows, hydrate))
            };
            Ok::<_, String>((i, url, entry))
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(next) = fetched.next().await {
        let (i, url, entry) = next?;
        progress.timemaps.fetch_add(1, Ordering::Relaxed);
        progress.add_done(TIMEMAPS, 1);
        progress.answer(STAGE, true);
        match entry {
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
                failed.push((i, reason));
            }
        }
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
    }
    drop(fetched);
    drop(index);
    let c = Counters {
        input: lines,
        output: done,
        set_aside: 0,
        errors: failed.len() as u64,
    };
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(c);
    }
    rewrite_index(&dir, sample, failed, hydrate)?;
    Ok(c)
}

/// The whole index in sample order (each finished TimeMap's line copied from the appended
/// index, each failure as `{url, error}`), renamed over it, and the hydration summed over every
/// TimeMap: read back one line at a time beside the sample's, so nothing per TimeMap is held but
/// its offset.
fn rewrite_index(
    dir: &Path,
    sample: &Path,
    mut failed: Vec<(usize, String)>,
    hydrate: bool,
) -> Result<(), String> {
    use std::io::{Seek, SeekFrom, Write};
    let err = |e: std::io::Error| format!("{}: {e}", dir.display());
    let offsets = finished(dir, sample)?;
    failed.sort_by_key(|f| f.0);
    let mut failed = failed.into_iter().peekable();
    let mut appended =
        std::io::BufReader::new(std::fs::File::open(dir.join("index.ndjson")).map_err(err)?);
    let tmp = dir.join("index.ndjson.part");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(err)?);
    let mut sum = Hydration::default();
    let mut line = Vec::new();
    for ((i, &at), s) in offsets.iter().enumerate().zip(read_sample(sample)?) {
        if at != NONE {
            appended.seek(SeekFrom::Start(at)).map_err(err)?;
            line.clear();
            appended.read_until(b'\n', &mut line).map_err(err)?;
            let entry = serde_json::from_slice::<Entry>(line.trim_ascii_end()).ok();
            if let Some(h) = entry.and_then(|e| e.hydration) {
                sum.revisits += h.revisits;
                sum.hydrated += h.hydrated;
                sum.misses += h.misses;
                for (d, n) in &h.distances {
                    *sum.distances.entry(*d).or_default() += n;
                }
            }
            w.write_all(line.trim_ascii_end()).map_err(err)?;
            w.write_all(b"\n").map_err(err)?;
        }
        while let Some((_, reason)) = failed.next_if(|f| f.0 == i) {
            let e = Entry {
                file: None,
                url: s.as_ref().map_err(|e| e.clone())?.url.clone(),
                mementos: None,
                hydration: None,
                error: Some(reason),
            };
            // A line already finished (an earlier run's) wins over a failure this run: none
            // is asked twice, so there is at most one of the two.
            if at == NONE {
                let text = serde_json::to_string(&e).map_err(|e| e.to_string())?;
                writeln!(w, "{text}").map_err(err)?;
            }
        }
    }
    w.flush().map_err(err)?;
    drop(w);
    std::fs::rename(&tmp, dir.join("index.ndjson")).map_err(err)?;
    if hydrate {
        let text = serde_json::to_string(&sum).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("hydration.json"), text).map_err(|e| e.to_string())?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::engine::SampledUrl;

    fn sampled(url: &str) -> SampledUrl {
        SampledUrl {
            url: url.into(),
            year: "2001".into(),
            root: false,
            first_capture: "20010101000000".into(),
            mime: "text/html".into(),
        }
    }

    fn done(i: usize, url: &str, revisits: u64) -> String {
        let e = Entry {
            file: Some(file_name(i)),
            url: url.into(),
            mementos: Some(1),
            hydration: Some(Hydration {
                revisits,
                ..Hydration::default()
            }),
            error: None,
        };
        serde_json::to_string(&e).expect("JSON")
    }

    #[test]
    fn the_index_is_rewritten_in_sample_order_from_offsets_failures_included() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        let sample: Vec<SampledUrl> = ["https://a/", "https://b/", "https://c/", "https://d/"]
            .iter()
            .map(|u| sampled(u))
            .collect();
        // The stage reads the sample from its file, as a run leaves it.
        let sample_path = d.join("sample.ndjson");
        write_ndjson(&sample_path, &sample).expect("sample");
        let sample = sample_path;
        for i in [0, 2, 3] {
            std::fs::write(d.join(file_name(i)), "[]\n").expect("a TimeMap file");
        }
        // Appended out of order across runs, with a torn line, another sample's entry (same
        // file name, another URL) and an entry whose file is missing (1).
        let appended = [
            done(2, "https://c/", 2),
            "{\"file\":\"000000.nd".to_string(),
            done(0, "https://other/", 100),
            done(1, "https://b/", 100),
            done(0, "https://a/", 3),
        ]
        .join("\n");
        std::fs::write(d.join("index.ndjson"), appended + "\n").expect("index");
        let offsets = finished(d, &sample).expect("the sample");
        assert_eq!(offsets.iter().filter(|&&o| o != NONE).count(), 2);
        assert_eq!((offsets[1], offsets[3]), (NONE, NONE));
        rewrite_index(
            d,
            &sample,
            vec![(3, "HTTP 500".into()), (1, "blocked".into())],
            true,
        )
        .expect("rewrite");
        let index = std::fs::read_to_string(d.join("index.ndjson")).expect("index");
        let rows: Vec<serde_json::Value> = index
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let urls: Vec<&str> = rows.iter().filter_map(|r| r["url"].as_str()).collect();
        assert_eq!(
            urls,
            ["https://a/", "https://b/", "https://c/", "https://d/"]
        );
        assert_eq!(rows[1]["error"], "blocked");
        assert_eq!(rows[3]["error"], "HTTP 500");
        assert_eq!(rows[0]["file"], "000000.ndjson");
        let h: Hydration = serde_json::from_str(
            &std::fs::read_to_string(d.join("hydration.json")).expect("hydration.json"),
        )
        .expect("JSON");
        assert_eq!(h.revisits, 5, "the finished TimeMaps' hydration only");
    }
}
