//! The two-level index over a build of several index pages: every key found through a page
//! and a block, and a page garbled or cut under the run making exactly the keys under it "no
//! answer" (asked again), never a wrong one.

use super::disk::BLOCK;
use super::index::{PAGE, PER_PAGE};
use super::*;
use std::collections::{BTreeMap, HashMap};

/// Answers under one full index page.
const UNDER_PAGE: usize = PER_PAGE * BLOCK;

/// 2.25 pages' worth of distinct URLs (three pages, the last partial), each with an answer.
fn lines() -> Vec<(String, FirstCapture)> {
    (0..UNDER_PAGE * 9 / 4)
        .map(|i| {
            let answer = match i % 3 {
                0 => FirstCapture::NotArchived,
                _ => FirstCapture::Found {
                    timestamp: format!("{}", 19960101000000u64 + i as u64),
                    mime: "text/html".into(),
                    status: "200".into(),
                },
            };
            (format!("https://u{i}.example/"), answer)
        })
        .collect()
}

fn built(dir: &Path, lines: &[(String, FirstCapture)]) -> Resumed {
    let spill = DiskThreshold {
        in_memory: 0,
        chunk: 20_000,
    };
    let mut b = Resumed::on_disk(dir, spill).expect("builder");
    for (url, a) in lines {
        b.insert(url, a).expect("insert");
    }
    b.finish().expect("built")
}

fn sorted(r: &Resumed) -> &disk::Sorted {
    match &r.answers {
        Answers::Disk(d) => d,
        Answers::Memory(_) => panic!("in memory"),
    }
}

/// The URLs in key order, each with its index page (where its block's entry is): all of them,
/// or (`ends`) only each block's first and last, as a block reads back whole or not at all
/// (a lookup in debug hashes 8 KiB unoptimised: checking them all takes seconds).
fn by_page(lines: &[(String, FirstCapture)], ends: bool) -> Vec<(&str, usize)> {
    let mut by_key: Vec<&str> = lines.iter().map(|(u, _)| u.as_str()).collect();
    by_key.sort_by_key(|u| key(u).to_bytes());
    let last = by_key.len() - 1;
    by_key
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !ends || i % BLOCK == 0 || i % BLOCK == BLOCK - 1 || *i == last)
        .map(|(i, u)| (u, i / UNDER_PAGE))
        .collect()
}

/// The pages whose URLs are "no answer", every other URL answering as it went in; a page's
/// URLs are asked again all together or not at all.
fn asked_again(disk: &Resumed, lines: &[(String, FirstCapture)], ends: bool) -> Vec<usize> {
    let answers: HashMap<&str, &FirstCapture> =
        lines.iter().map(|(u, a)| (u.as_str(), a)).collect();
    let mut urls = BTreeMap::<usize, usize>::new();
    let mut asked = BTreeMap::<usize, usize>::new();
    for (url, page) in by_page(lines, ends) {
        *urls.entry(page).or_default() += 1;
        match disk.get(url) {
            Some(a) => assert_eq!(Some(&a), answers.get(url).copied(), "{url}"),
            None => *asked.entry(page).or_default() += 1,
        }
    }
    assert!(
        asked.iter().all(|(p, n)| urls.get(p) == Some(n)),
        "{asked:?} of {urls:?}"
    );
    asked.into_keys().collect()
}

#[test]
fn every_key_is_found_through_several_index_pages_and_absent_ones_are_not() {
    let lines = lines();
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = built(dir.path(), &lines);
    assert_eq!(disk.len(), lines.len());
    assert!(disk.len() > 2 * UNDER_PAGE, "three index pages");
    assert_eq!(asked_again(&disk, &lines, false), Vec::<usize>::new());
    // Absent URLs fall below, among and above the keys; none is found.
    for i in lines.len()..lines.len() + 2000 {
        assert_eq!(disk.get(&format!("https://u{i}.example/")), None);
    }
    assert_eq!(disk.get(""), None);
    // RAM: an entry (24 bytes) a page, and the interned strings.
    assert!(sorted(&disk).bytes() <= 3 * 24, "{}", sorted(&disk).bytes());
}

#[test]
fn a_garbled_index_page_is_asked_again_for_its_keys_alone() {
    let lines = lines();
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = built(dir.path(), &lines);
    let index = sorted(&disk).index();
    // An entry's checksum byte on the second page: the whole page no longer reads as written.
    index.garble(PAGE as u64 + 5 * 24 + 17, &[0xff]);
    assert_eq!(asked_again(&disk, &lines, true), vec![1]);
    // A pad byte after the first page's 170 entries: checksummed with the page.
    index.garble(PAGE as u64 - 1, &[0xff]);
    assert_eq!(asked_again(&disk, &lines, true), vec![0, 1]);
    // The answers' header is read only when the build is checked: garbled now, nothing changes.
    sorted(&disk).garble(0, &[0xff; 32]);
    assert_eq!(asked_again(&disk, &lines, true), vec![0, 1]);
}

#[test]
fn a_cut_index_file_is_asked_again_from_the_cut_on() {
    let lines = lines();
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = built(dir.path(), &lines);
    let index = sorted(&disk).index();
    // Cut inside the third (last, partial) page, then inside the second, then emptied.
    index.truncate(2 * PAGE as u64 + 100);
    assert_eq!(asked_again(&disk, &lines, true), vec![2]);
    index.truncate(PAGE as u64 + 4095);
    assert_eq!(asked_again(&disk, &lines, true), vec![1, 2]);
    index.truncate(0);
    assert_eq!(asked_again(&disk, &lines, true), vec![0, 1, 2]);
}
