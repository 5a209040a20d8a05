//! The spilling sampler against the in-memory one: the same picks, in the same order, the
//! same URLs left (long tail and downsampled), the same per-year counts, shortfalls and
//! report counts, however small its chunk; and a damaged run is an error.

use super::*;
use crate::downsample::{Finished, Sampler};

/// A SYNTHETIC mix: three buckets, a few large domains (over the pool of 20, and targets
/// above it), many single-URL ones (the long tail at a threshold of 40), roots, second roots
/// and a domain whose only URL is its root.
fn fixture() -> Vec<(u16, String, String, bool)> {
    let mut v = Vec::new();
    for (b, bucket) in [2000u16, 2004, 2010].into_iter().enumerate() {
        for d in 0..120u64 {
            let n = match d % 10 {
                0 => 150 + d,
                1 => 25,
                2 | 3 => 3,
                _ => 1,
            };
            let domain = format!("d{d}.com");
            for i in 0..n {
                let root = (d % 7 == 0 && i == 0) || (d % 21 == 0 && i == 1) || d == 9;
                let url = if root {
                    format!("https://{domain}/?v{i}")
                } else {
                    format!("https://{domain}/p{b}-{i}")
                };
                v.push((bucket, domain.clone(), url, root));
            }
        }
    }
    // Arrival order is the CDX stage's: not sorted.
    v.sort_by_key(|(_, _, u, _)| seeded_hash(99, u));
    v
}

const POOL: usize = 20;
const THRESHOLD: u64 = 40;
const FRACTION: f64 = 0.9;

/// The in-memory run, as the engine made it before it spilled.
fn in_memory(
    input: &[(u16, String, String, bool)],
) -> (Summary, Vec<Picked>, Vec<String>, Vec<String>) {
    let mut s = Sampler::new(5, Downsampling::default(), POOL);
    let mut down = Vec::new();
    for (b, d, u, root) in input {
        down.extend(s.push_with(*b, d, u, *root, &format!("meta {u}")));
    }
    let before_long_tail = s.per_year();
    let per_domain = s.urls_per_domain();
    let mut long = Vec::new();
    let lt = s.reduce_long_tail(THRESHOLD, FRACTION, &mut |_, _, u| long.push(u.to_string()));
    let eq1 = s.per_year();
    let Finished {
        picked,
        mut counts,
        shortfalls,
    } = s.finish(&mut |_, _, u| down.push(u.to_string()));
    for (d, n) in per_domain {
        counts.entry(d).or_default().before = n;
    }
    let mut picked_per_year = BTreeMap::new();
    for p in &picked {
        *picked_per_year.entry(p.bucket).or_default() += 1;
    }
    let summary = Summary {
        urls: input.len() as u64,
        before_long_tail,
        eq1,
        long_tail: lt,
        picked: picked.len() as u64,
        picked_per_year,
        shortfalls,
        domains: DomainStats::from(&counts),
    };
    (summary, picked, long, down)
}

#[test]
fn a_tiny_chunk_picks_what_the_in_memory_sampler_picks() {
    let input = fixture();
    let (want, want_picked, mut want_long, mut want_down) = in_memory(&input);
    assert!(!want_long.is_empty() && want_down.len() > 1000 && !want.shortfalls.is_empty());
    for chunk in [1 << 30, 4 << 10, 300] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = SpillSampler::new(5, Downsampling::default(), POOL, dir.path(), chunk)
            .expect("sampler");
        for (b, d, u, root) in &input {
            s.push_with(*b, d, u, *root, &format!("meta {u}"))
                .expect("push");
        }
        if chunk < 1 << 20 {
            assert!(s.runs() > 100, "chunk {chunk}: {} runs", s.runs());
        }
        let (mut picked, mut long, mut down) = (Vec::new(), Vec::new(), Vec::new());
        let got = s
            .finish(THRESHOLD, FRACTION, &mut |left| {
                match left {
                    Left::Picked(p) => picked.push(p.clone()),
                    Left::LongTail(u) => long.push(u.to_string()),
                    Left::Downsampled(u) => down.push(u.to_string()),
                }
                Ok(())
            })
            .expect("finish");
        assert_eq!(picked, want_picked, "chunk {chunk}: the sample, in order");
        for v in [&mut long, &mut down, &mut want_long, &mut want_down] {
            v.sort();
        }
        assert_eq!(long, want_long, "chunk {chunk}");
        assert_eq!(down, want_down, "chunk {chunk}");
        assert_eq!(got.urls, want.urls);
        assert_eq!(got.before_long_tail, want.before_long_tail);
        assert_eq!(got.eq1, want.eq1);
        assert_eq!(got.long_tail, want.long_tail);
        assert_eq!(
            (got.picked, &got.picked_per_year),
            (want.picked, &want.picked_per_year)
        );
        assert_eq!(got.shortfalls, want.shortfalls);
        assert_eq!(
            got.domains, want.domains,
            "chunk {chunk}: the report's counts"
        );
        let left = std::fs::read_dir(dir.path()).expect("dir").count();
        assert_eq!(left, 0, "the runs are deleted at the end");
    }
}

#[test]
fn a_damaged_run_is_an_error_not_a_panic() {
    let input = fixture();
    for damage in [0usize, 1, 2] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = SpillSampler::new(5, Downsampling::default(), POOL, dir.path(), 4 << 10)
            .expect("sampler");
        for (b, d, u, root) in &input {
            s.push_with(*b, d, u, *root, "m").expect("push");
        }
        let run = std::fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.to_string_lossy().contains("candidates"))
            .expect("a run");
        let mut bytes = std::fs::read(&run).expect("read");
        match damage {
            0 => bytes.truncate(bytes.len() / 3),
            1 => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0xFF
            }
            _ => bytes = b"TMSPILL1\xff\xff\xff\x7f".to_vec(),
        }
        std::fs::write(&run, bytes).expect("write");
        let e = s
            .finish(THRESHOLD, FRACTION, &mut |_| Ok(()))
            .expect_err("a damaged run");
        assert!(e.contains("spill file"), "{e}");
    }
}
