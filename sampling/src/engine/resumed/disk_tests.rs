//! The answers on disk against the table in memory, with chunks and blocks set small so a few
//! thousand answers take every path (many runs, the sort's merges of its oldest runs, many
//! blocks), and against a file garbled or cut under the run or a run garbled or cut during the
//! build.

use super::disk::BLOCK;
use super::*;
use crate::engine::checkpoint::{read_checkpoint, read_checkpoint_with, Answered};
use crate::engine::ndjson::Log;

/// A checkpoint's answers: 3,000 lines over 1,000 URLs, each URL answered again and again with
/// answers that vary (failures among them), in a scrambled order.
fn lines() -> Vec<(String, FirstCapture)> {
    (0u64..3000)
        .map(|i| {
            let h = xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes());
            let url = format!("https://h{}.example/p", h % 1000);
            let answer = match (h >> 20) % 5 {
                0 => FirstCapture::NotArchived,
                1 => FirstCapture::Blocked,
                2 => FirstCapture::Failed {
                    reason: "503".into(),
                },
                _ => FirstCapture::Found {
                    timestamp: format!("{}", 19960101000000 + i),
                    mime: ["text/html", "image/png"][(h >> 30) as usize % 2].into(),
                    status: "200".into(),
                },
            };
            (url, answer)
        })
        .collect()
}

fn on_disk(dir: &Path, chunk: usize, lines: &[(String, FirstCapture)]) -> Resumed {
    let spill = DiskThreshold {
        in_memory: 0,
        chunk,
    };
    let mut b = Resumed::on_disk(dir, spill).expect("builder");
    for (url, a) in lines {
        b.insert(url, a).expect("insert");
    }
    b.finish().expect("built")
}

fn in_memory(lines: &[(String, FirstCapture)]) -> Resumed {
    let mut r = Resumed::default();
    for (url, a) in lines {
        r.insert(url, a);
    }
    r
}

fn sorted(r: &Resumed) -> &disk::Sorted {
    match &r.answers {
        Answers::Disk(d) => d,
        Answers::Memory(_) => panic!("in memory"),
    }
}

#[test]
fn the_file_on_disk_answers_as_the_table_does_the_later_line_winning() {
    let lines = lines();
    let memory = in_memory(&lines);
    // 1 record a chunk (3,000 chunks, merged in passes of 64), 37 and all at once.
    for chunk in [1, 37, 10_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let disk = on_disk(&dir.path().join(".resumed"), chunk, &lines);
        assert_eq!(disk.len(), memory.len(), "chunk {chunk}");
        assert!(disk.len() > 5 * BLOCK, "several blocks: {}", disk.len());
        for i in 0..1000 {
            let url = format!("https://h{i}.example/p");
            assert_eq!(disk.get(&url), memory.get(&url), "chunk {chunk}: {url}");
        }
        // Absent URLs, below, among and above the keys.
        for url in ["", "https://h1000.example/p", "https://h1.example/q"] {
            assert_eq!(disk.get(url), None);
        }
        // Nothing left in the directory: the file is open, unlinked; the chunks are gone.
        assert!(!dir.path().join(".resumed").exists(), "chunk {chunk}");
        // RAM: the index and the strings, far below the table's 33 bytes an answer.
        assert!(disk.bytes() < memory.bytes() / 10, "{}", disk.bytes());
    }
}

#[test]
fn the_last_answer_for_a_url_wins_within_a_chunk_and_across_chunks() {
    let url = "https://a.example/";
    let at = |ts: &str| FirstCapture::Found {
        timestamp: ts.into(),
        mime: "text/html".into(),
        status: "200".into(),
    };
    let lines: Vec<(String, FirstCapture)> = ["1", "2", "3", "4", "5"]
        .iter()
        .map(|ts| (url.to_string(), at(ts)))
        .chain([(url.to_string(), FirstCapture::Failed { reason: "x".into() })])
        .collect();
    for chunk in [1, 2, 3, 100] {
        let dir = tempfile::tempdir().expect("temp dir");
        let disk = on_disk(dir.path(), chunk, &lines);
        assert_eq!(disk.get(url), Some(at("5")), "chunk {chunk}");
        assert_eq!(disk.len(), 1);
    }
}

#[test]
fn a_garbled_or_cut_file_is_asked_again_never_misread() {
    let lines = lines();
    let memory = in_memory(&lines);
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = on_disk(dir.path(), 100, &lines);
    let urls: Vec<String> = (0..1000)
        .map(|i| format!("https://h{i}.example/p"))
        .collect();
    // A byte of the second block's last record's answer flipped: that block is asked again
    // (a flipped answer byte would otherwise decode to a wrong answer); the others still read.
    sorted(&disk).garble(32 + (2 * BLOCK as u64 - 1) * 32 + 20, &[0xff]);
    let mut asked = 0;
    for url in &urls {
        match disk.get(url) {
            Some(a) => assert_eq!(Some(a), memory.get(url), "{url}"),
            None => asked += usize::from(memory.get(url).is_some()),
        }
    }
    assert_eq!(asked, BLOCK, "one block asked again");
    // Cut inside the fourth block: every answer from it on is asked again, none misread.
    sorted(&disk).truncate(32 + (3 * BLOCK as u64 + 5) * 32 + 7);
    let kept = urls.iter().filter(|u| disk.get(u).is_some()).count();
    assert_eq!(kept, 2 * BLOCK);
    // Emptied: nothing found, nothing panics.
    sorted(&disk).truncate(0);
    assert!(urls.iter().all(|u| disk.get(u).is_none()));
}

#[test]
fn a_large_checkpoint_is_read_to_disk_with_the_answers_of_a_small_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("first_captures.ndjson");
    let log = Log::open_checkpoint(&path).expect("open");
    let lines = lines();
    for (url, answer) in &lines {
        log.write(&Answered {
            url: url.clone(),
            answer: answer.clone(),
        });
    }
    drop(log);
    let memory = read_checkpoint(&path).expect("read");
    assert!(matches!(memory.answers, Answers::Memory(_)));
    let spill = DiskThreshold {
        in_memory: 100,
        chunk: 64,
    };
    let disk = read_checkpoint_with(&path, spill).expect("read");
    assert!(matches!(disk.answers, Answers::Disk(_)));
    assert_eq!(disk.len(), memory.len());
    for (url, _) in &lines {
        assert_eq!(disk.get(url), memory.get(url), "{url}");
    }
    // Built again at each resume over what an earlier one (or a crash) left.
    let stale = dir.path().join(".resumed");
    std::fs::create_dir_all(&stale).expect("dir");
    std::fs::write(stale.join("answers.bin"), b"TMRSUM02 garbage").expect("write");
    std::fs::write(stale.join("index.bin"), b"garbage").expect("write");
    let again = read_checkpoint_with(&path, spill).expect("read");
    assert_eq!(again.len(), memory.len());
    // Or a file at its name.
    std::fs::write(&stale, b"not a directory").expect("write");
    assert_eq!(
        read_checkpoint_with(&path, spill).expect("read").len(),
        memory.len()
    );
    // Only the checkpoint is left in the output directory.
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
}

#[test]
fn a_garbled_or_cut_run_fails_the_build_never_panics_and_leaves_nothing() {
    let lines = lines();
    // A byte flipped inside the first record, or the run cut inside it.
    let flip = |b: &mut Vec<u8>| b[8 + 12 + 5] ^= 0xff;
    let cut = |b: &mut Vec<u8>| b.truncate(8 + 12 + 5);
    for (what, garble) in [("flipped", &flip as &dyn Fn(&mut Vec<u8>)), ("cut", &cut)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let at = dir.path().join(".resumed");
        let spill = DiskThreshold {
            in_memory: 0,
            chunk: 1000,
        };
        let mut b = Resumed::on_disk(&at, spill).expect("builder");
        for (url, a) in &lines {
            b.insert(url, a).expect("insert");
        }
        // A run the sort wrote (1,000 answers each), garbled as a disk might before it is read.
        let run = std::fs::read_dir(&at)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .find(|p| p.extension().is_some_and(|x| x == "run"))
            .expect("a run");
        let mut bytes = std::fs::read(&run).expect("read");
        garble(&mut bytes);
        std::fs::write(&run, bytes).expect("write");
        match b.finish() {
            Err(e) => assert!(e.contains("garbled"), "{what}: {e}"),
            Ok(_) => panic!("{what}: built from a garbled run"),
        }
        assert!(!at.exists(), "{what}");
    }
}
