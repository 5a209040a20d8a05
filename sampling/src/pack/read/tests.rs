//! Packs written and read back, rotated, cut short by a kill, and pointed into wrongly by a
//! hostile index: every bad case an error naming the TimeMap, nothing read outside the pack.

use super::super::entry::{file_name, IndexLine};
use super::super::write::{compress, PackWriter};
use super::*;
use std::io::Write;

/// A TimeMap's NDJSON lines: `n` rows of sample line `i`.
fn timemap(i: usize, n: usize) -> String {
    (0..n)
        .map(|k| format!("{{\"urlkey\":\"h{i})/\",\"timestamp\":\"2001{k:010}\"}}\n"))
        .collect()
}

/// Writes TimeMaps `0..n` into `d`'s packs (rotated every `limit` bytes) with their index
/// lines, as the stage does: the frame, then its line.
fn write_all(d: &Path, n: usize, limit: u64) -> Vec<IndexLine> {
    let mut w = PackWriter::open(d, limit).expect("open");
    let mut index = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.join("index.ndjson"))
        .expect("index");
    let mut lines = Vec::new();
    for i in 0..n {
        let text = timemap(i, 1 + i % 40);
        let at = w
            .append(&compress(text.as_bytes()).expect("zstd"))
            .expect("append");
        let mut e = IndexLine {
            file: Some(file_name(i)),
            url: format!("https://h{i}/"),
            mementos: Some(1 + i % 40),
            ..IndexLine::default()
        };
        e.set_location(at);
        writeln!(index, "{}", serde_json::to_string(&e).expect("JSON")).expect("line");
        lines.push(e);
    }
    lines
}

fn read(d: &Path, name: &str) -> Result<Option<String>, String> {
    open_in(d, name).map(|r| {
        r.map(|mut r| {
            let mut s = String::new();
            r.read_to_string(&mut s).expect("a complete TimeMap");
            s
        })
    })
}

#[test]
fn timemaps_read_back_from_rotated_packs_and_from_their_own_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let lines = write_all(d, 60, 2000);
    let packs: std::collections::BTreeSet<_> =
        lines.iter().filter_map(|e| e.pack.clone()).collect();
    assert!(packs.len() > 3, "rotated: {packs:?}");
    for i in 0..60 {
        assert_eq!(
            read(d, &file_name(i)),
            Ok(Some(timemap(i, 1 + i % 40))),
            "{i}"
        );
    }
    // A pack is one zstd stream of every TimeMap in the order written.
    let first = std::fs::File::open(d.join("pack-0000.zst")).expect("pack");
    let mut all = String::new();
    zstd::stream::read::Decoder::new(first)
        .expect("decoder")
        .read_to_string(&mut all)
        .expect("a zstd stream");
    assert!(all.starts_with(&timemap(0, 1)));
    // A run of a version with one file per TimeMap: its line has no pack.
    std::fs::write(d.join(file_name(60)), "old\n").expect("file");
    let old = IndexLine {
        file: Some(file_name(60)),
        url: "https://old/".into(),
        ..IndexLine::default()
    };
    let mut index = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("index.ndjson"))
        .expect("index");
    writeln!(index, "{}", serde_json::to_string(&old).expect("JSON")).expect("line");
    assert_eq!(read(d, &file_name(60)), Ok(Some("old\n".into())));
    assert_eq!(read(d, &file_name(61)), Ok(None), "not written");
    // A writer opened again goes on in the last pack.
    let last = packs.iter().max().expect("a pack").clone();
    let mut w = PackWriter::open(d, 1 << 20).expect("open");
    assert_eq!(w.append(b"x").expect("append").pack, last);
}

#[test]
fn a_frame_cut_short_by_a_kill_is_an_error_and_the_ones_before_it_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let lines = write_all(d, 10, 1 << 20);
    let last = lines[9].location().expect("a location");
    let pack = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join(&last.pack))
        .expect("pack");
    pack.set_len(last.offset + last.length / 2)
        .expect("truncate");
    let err = read(d, &file_name(9)).expect_err("cut short");
    assert!(
        err.contains("000009.ndjson") && err.contains("outside"),
        "{err}"
    );
    for i in 0..9 {
        assert_eq!(
            read(d, &file_name(i)),
            Ok(Some(timemap(i, 1 + i % 40))),
            "{i}"
        );
    }
}

/// The index rewritten with line 3 changed by `f`.
fn tamper(d: &Path, lines: &[IndexLine], f: impl Fn(&mut IndexLine)) {
    let mut text = String::new();
    for (i, e) in lines.iter().enumerate() {
        let mut e = e.clone();
        if i == 3 {
            f(&mut e);
        }
        text += &serde_json::to_string(&e).expect("JSON");
        text.push('\n');
    }
    std::fs::write(d.join("index.ndjson"), text).expect("index");
}

/// A change made to an index line.
type Change = Box<dyn Fn(&mut IndexLine)>;

#[test]
fn a_hostile_index_or_pack_is_an_error_never_a_read_outside_the_pack() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = &dir.path().join("timemaps");
    std::fs::create_dir(d).expect("mkdir");
    let lines = write_all(d, 6, 1 << 20);
    // Outside the TimeMaps' directory, a frame that would decode: never to be read.
    let secret = compress(b"secret\n").expect("zstd");
    let secret_len = secret.len() as u64;
    std::fs::write(dir.path().join("pack-0009.zst"), &secret).expect("write");
    let size = std::fs::metadata(d.join("pack-0000.zst"))
        .expect("pack")
        .len();
    let at3 = lines[3].location().expect("a location");
    let at4 = lines[4].location().expect("a location");
    let cases: Vec<(&str, Change)> = vec![
        ("past the end", Box::new(move |e| e.offset = Some(size - 2))),
        ("offset overflows", Box::new(|e| e.offset = Some(u64::MAX))),
        ("length overflows", Box::new(|e| e.length = Some(u64::MAX))),
        ("empty span", Box::new(|e| e.length = Some(0))),
        (
            "one byte late",
            Box::new(|e| e.offset = e.offset.map(|o| o + 1)),
        ),
        (
            "cut short",
            Box::new(|e| e.length = e.length.map(|l| l - 1)),
        ),
        // Two frames in one span: the second is never part of this TimeMap.
        (
            "two frames",
            Box::new(move |e| e.length = Some(at3.length + at4.length)),
        ),
        (
            "a path",
            Box::new(move |e| {
                e.pack = Some("../pack-0009.zst".into());
                e.offset = Some(0);
                e.length = Some(secret_len);
            }),
        ),
        (
            "not a pack",
            Box::new(|e| e.pack = Some("index.ndjson".into())),
        ),
        (
            "a missing pack",
            Box::new(|e| e.pack = Some("pack-0042.zst".into())),
        ),
    ];
    for (what, f) in cases {
        tamper(d, &lines, f);
        let err = read(d, &file_name(3)).expect_err(what);
        assert!(err.contains("000003.ndjson"), "{what}: {err}");
        assert_eq!(read(d, &file_name(2)), Ok(Some(timemap(2, 3))), "{what}");
    }
    // A byte of the frame changed: the checksum (or the decoder) says so.
    tamper(d, &lines, |_| {});
    let mut bytes = std::fs::read(d.join("pack-0000.zst")).expect("pack");
    let at = lines[3].location().expect("a location");
    let mid = usize::try_from(at.offset + at.length - 6).expect("small");
    bytes[mid] ^= 0x55;
    std::fs::write(d.join("pack-0000.zst"), bytes).expect("pack");
    let err = read(d, &file_name(3)).expect_err("changed");
    assert!(err.contains("000003.ndjson"), "{err}");
}

#[test]
fn torn_and_over_long_index_lines_are_passed_over() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let lines = write_all(d, 3, 1 << 20);
    let mut text = std::fs::read_to_string(d.join("index.ndjson")).expect("index");
    // A later line for the same name wins, whatever lies between.
    let mut again = lines[0].clone();
    again.set_location(lines[1].location().expect("a location"));
    text += &format!(
        "{{\"file\":\"{}\",\"url\":\"{}\n",
        file_name(1),
        "x".repeat(MAX_LINE + 10)
    );
    text += &serde_json::to_string(&again).expect("JSON");
    text += "\n{\"file\":\"000002.ndjson\",\"url\":\"https://h2/\",\"pack\":\"pack-00";
    std::fs::write(d.join("index.ndjson"), text).expect("index");
    assert_eq!(read(d, &file_name(0)), Ok(Some(timemap(1, 2))));
    assert_eq!(read(d, &file_name(1)), Ok(Some(timemap(1, 2))));
    assert_eq!(read(d, &file_name(2)), Ok(Some(timemap(2, 3))));
}

#[test]
fn index_offsets_find_a_line_at_once_and_a_hostile_one_falls_back_to_the_scan() {
    use super::super::offsets::{offset_record, OFFSETS};
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    write_all(d, 5, 1 << 20);
    let index = std::fs::read_to_string(d.join("index.ndjson")).expect("index");
    let mut starts = Vec::new();
    let mut at = 0u64;
    for l in index.lines() {
        starts.push(at);
        at += l.len() as u64 + 1;
    }
    let offsets = |records: &[Option<u64>]| {
        let bytes: Vec<u8> = records.iter().flat_map(|&o| offset_record(o)).collect();
        std::fs::write(d.join(OFFSETS), bytes).expect("offsets");
    };
    let whole: Vec<Option<u64>> = starts.iter().map(|&o| Some(o)).collect();
    offsets(&whole);
    for i in 0..5 {
        assert_eq!(
            read(d, &file_name(i)),
            Ok(Some(timemap(i, 1 + i % 40))),
            "{i}"
        );
    }
    // The offsets alone find line 2, no scan.
    let found = std::fs::File::open(d.join("index.ndjson")).expect("index");
    let offsets_file = std::fs::File::open(d.join(OFFSETS)).expect("offsets");
    let quick = super::lookup(&offsets_file, &found, &file_name(2));
    assert_eq!(quick.flatten().and_then(|e| e.file), Some(file_name(2)));
    // Mid-line, past the end, another line, a record past the file, a sample line with none:
    // the scan answers, or nothing is written; never an error or a read outside.
    let hostile = [
        vec![
            Some(3),
            Some(starts[1]),
            Some(at + 100),
            Some(starts[0]),
            None,
        ],
        vec![Some(u64::MAX - 1)],
    ];
    for records in hostile {
        offsets(&records);
        for i in 0..4 {
            assert_eq!(
                read(d, &file_name(i)),
                Ok(Some(timemap(i, 1 + i % 40))),
                "{i}"
            );
        }
    }
    offsets(&[None, None, None, None, None]);
    assert_eq!(
        read(d, &file_name(4)),
        Ok(None),
        "the offsets say none was written"
    );
}
