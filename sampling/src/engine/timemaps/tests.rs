//! The TimeMap stage's bookkeeping: which sample lines are finished, and the index rewritten
//! in sample order, with spill chunks small enough that every record is a run of its own.

use super::*;
use crate::engine::ndjson::write_ndjson;
use crate::engine::SampledUrl;
use crate::pack::PackWriter;

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
    let e = IndexLine {
        file: Some(file_name(i)),
        url: url.into(),
        mementos: Some(1),
        hydration: Some(Hydration {
            revisits,
            ..Hydration::default()
        }),
        ..IndexLine::default()
    };
    serde_json::to_string(&e).expect("JSON")
}

/// The sample as a run leaves it, under `d`.
fn sample_file(d: &Path, urls: &[String]) -> std::path::PathBuf {
    let sample: Vec<SampledUrl> = urls.iter().map(|u| sampled(u)).collect();
    let path = d.join("sample.ndjson");
    write_ndjson(&path, &sample).expect("sample");
    path
}

/// Each sample line's offset, as the stage finds them (1 byte held: a run per record).
fn offsets(d: &Path, sample: &Path) -> Vec<Option<u64>> {
    let mut ledger = Ledger::scan(d, &d.join(".spill"), 1).expect("scan");
    let rows: Vec<Option<u64>> = ledger
        .join(sample)
        .expect("join")
        .map(|r| r.expect("a row").2)
        .collect();
    ledger.remove();
    rows
}

fn rewrite(d: &Path, sample: &Path, failures: &[(u64, &str)]) -> Vec<serde_json::Value> {
    let spill = d.join(".spill");
    let mut failed = index::failures(&spill, 1).expect("spill");
    for &(line, reason) in failures {
        let reason = reason.to_string();
        failed.push(Failed { line, reason }).expect("push");
    }
    let mut ledger = Ledger::scan(d, &spill, 1).expect("scan");
    rewrite_index(d, sample, &mut ledger, &mut failed, true).expect("rewrite");
    ledger.remove();
    failed.remove();
    let left = std::fs::read_dir(&spill).expect("spill dir").count();
    assert_eq!(left, 0, "the runs are removed");
    let index = std::fs::read_to_string(d.join("index.ndjson")).expect("index");
    // index.offsets: each sample line's record is where its line starts, in order, every
    // line of the index having one.
    let offsets = std::fs::read(d.join(crate::pack::OFFSETS)).expect("offsets");
    let lines: Vec<&str> = index.lines().collect();
    let starts: Vec<u64> = lines
        .iter()
        .scan(0u64, |at, l| {
            let start = *at;
            *at += l.len() as u64 + 1;
            Some(start)
        })
        .collect();
    let recorded: Vec<u64> = offsets
        .chunks(8)
        .map(|r| u64::from_le_bytes(r.try_into().expect("8 bytes")))
        .filter(|&o| o != u64::MAX)
        .collect();
    assert_eq!(recorded, starts);
    lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn the_index_is_rewritten_in_sample_order_from_offsets_failures_included() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let urls: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|h| format!("https://{h}/"))
        .collect();
    let sample = sample_file(d, &urls);
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
    let found = offsets(d, &sample);
    assert_eq!(found.iter().filter(|o| o.is_some()).count(), 2);
    assert_eq!((found[1], found[3]), (None, None));
    let rows = rewrite(d, &sample, &[(3, "HTTP 500"), (1, "blocked")]);
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

#[test]
fn many_runs_merge_to_what_a_map_of_every_entry_says() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let n = 150;
    let urls: Vec<String> = (0..n).map(|i| format!("https://h{i}.example/")).collect();
    let sample = sample_file(d, &urls);
    // A scrambled order of appends (several runs of the stage), some lines twice (the later
    // wins), some for another URL (not counted, even when later), some files missing, an
    // entry past the sample's end, and torn lines between.
    let mut appended = Vec::new();
    for k in 0..n {
        let i = (k * 67) % n;
        if i % 7 != 3 {
            std::fs::write(d.join(file_name(i)), "[]\n").expect("a TimeMap file");
        }
        appended.push(done(i, &urls[i], i as u64));
        if i % 5 == 0 {
            appended.push(done(i, &urls[i], 1000 + i as u64));
        }
        if i % 11 == 0 {
            appended.push(done(i, "https://elsewhere/", 0));
            appended.push("{\"file\":\"0001".to_string());
        }
    }
    std::fs::write(d.join(file_name(n)), "[]\n").expect("a stray TimeMap file");
    appended.push(done(n, "https://past-the-end/", 0));
    let text = appended.join("\n") + "\n";
    std::fs::write(d.join("index.ndjson"), &text).expect("index");
    // What the stage held in memory before: the last matching line per sample line.
    let mut want = vec![None; n];
    let mut at = 0u64;
    for line in text.lines() {
        if let Ok(e) = serde_json::from_str::<IndexLine>(line) {
            let i = e.file.as_deref().and_then(|f| f.strip_suffix(".ndjson"));
            let i = i
                .and_then(|f| f.parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            if i < n && e.url == urls[i] && d.join(file_name(i)).is_file() {
                want[i] = Some(at);
            }
        }
        at += line.len() as u64 + 1;
    }
    assert_eq!(offsets(d, &sample), want);
    assert!(want.iter().filter(|o| o.is_some()).count() > 100);
    // The rewrite: every sample line in order, its latest entry or its failure.
    let failures: Vec<(u64, &str)> = (0..n as u64)
        .rev()
        .filter(|&i| want[i as usize].is_none())
        .map(|i| (i, "HTTP 500"))
        .collect();
    let rows = rewrite(d, &sample, &failures);
    assert_eq!(rows.len(), n);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["url"], urls[i].as_str(), "line {i}");
        match want[i] {
            Some(_) => {
                let revisits = if i % 5 == 0 { 1000 + i } else { i };
                assert_eq!(r["hydration"]["revisits"], revisits, "line {i}");
            }
            None => assert_eq!(r["error"], "HTTP 500", "line {i}"),
        }
    }
}

/// Sample lines `0..n` written to packs as the stage writes them (frame, then line), packs
/// rotated every `limit` bytes.
fn packed(d: &Path, urls: &[String], limit: u64) -> Vec<IndexLine> {
    let mut w = PackWriter::open(d, limit).expect("open");
    let index = Log {
        write_through: true,
        ..Log::open(&d.join("index.ndjson"), true).expect("index")
    };
    let mut lines = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let (mut e, frame) = encode(i, url, Vec::new(), false).expect("encode");
        e.set_location(w.append(&frame).expect("append"));
        index.write(&e);
        lines.push(e);
    }
    lines
}

#[test]
fn a_pack_cut_mid_frame_leaves_only_that_timemap_to_ask_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let urls: Vec<String> = (0..40).map(|i| format!("https://h{i}.example/")).collect();
    let sample = sample_file(d, &urls);
    let lines = packed(d, &urls, 200);
    assert!(offsets(d, &sample).iter().all(Option::is_some));
    // Killed mid-frame: the last frame of a pack (its line written: a power cut) cut short, and
    // a frame torn at the end of the newest pack with no line at all.
    let k = (0..39)
        .find(|&i| lines[i].pack != lines[i + 1].pack)
        .expect("rotated");
    let at = lines[k].location().expect("a location");
    let pack = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join(&at.pack))
        .expect("pack");
    pack.set_len(at.offset + at.length - 1).expect("truncate");
    let newest = lines[39].location().expect("a location").pack;
    let mut torn = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join(&newest))
        .expect("pack");
    std::io::Write::write_all(&mut torn, &[0x28, 0xb5, 0x2f, 0xfd, 0x20]).expect("torn");
    let found = offsets(d, &sample);
    let missing: Vec<usize> = (0..40).filter(|&i| found[i].is_none()).collect();
    assert_eq!(missing, [k], "only the cut TimeMap is asked again");
    // Asked again, it goes after the torn bytes, and the rewritten index keeps where.
    packed_again(d, &urls[k], k);
    assert!(offsets(d, &sample).iter().all(Option::is_some));
    let rows = rewrite(d, &sample, &[]);
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[k]["pack"], newest.as_str());
    for i in 0..40 {
        let name = file_name(i);
        let read = crate::pack::open_in(d, &name).expect(&name);
        assert!(read.is_some(), "{name}");
    }
}

/// TimeMap `i` fetched again and appended, as a resumed run does.
fn packed_again(d: &Path, url: &str, i: usize) {
    let mut w = PackWriter::open(d, 1 << 20).expect("open");
    let index = Log {
        write_through: true,
        ..Log::open(&d.join("index.ndjson"), true).expect("index")
    };
    let (mut e, frame) = encode(i, url, Vec::new(), false).expect("encode");
    e.set_location(w.append(&frame).expect("append"));
    index.write(&e);
}
