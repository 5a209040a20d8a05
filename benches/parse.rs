//! Throughput of `parse_link_format` on generated Wayback-style TimeMaps: 40,000 mementos oldest
//! first and newest first (the parser must not care), one ~100 MB document, and parse + merge of
//! 40,000 newest first.

use chrono::{Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution};
use tmproxy::timemap::datetime::{format_14digit, write_rfc1123};
use tmproxy::timemap::merge::merge;
use tmproxy::timemap::parse::parse_link_format;

const ORIGINAL: &str = "http://a.example.org/some/page.html";
const URI_T: &str =
    "http://web.archive.example/web/timemap/link/http://a.example.org/some/page.html";

/// A TimeMap as the Wayback Machine writes it: header links, then one memento per line.
fn timemap(n: usize, newest_first: bool) -> String {
    let start = Utc
        .with_ymd_and_hms(1996, 12, 20, 4, 11, 7)
        .single()
        .expect("valid start");
    let mut doc = String::with_capacity(n * 150 + 1024);
    let _ = write!(
        doc,
        "<{ORIGINAL}>; rel=\"original\",\n<{URI_T}>; rel=\"self\"; type=\"application/link-format\",\n\
         <http://web.archive.example/web/{ORIGINAL}>; rel=\"timegate\",\n"
    );
    for k in 0..n {
        let i = if newest_first { n - 1 - k } else { k };
        // About one capture every 3.7 hours, with irregular seconds.
        let dt = start + Duration::seconds(i as i64 * 13_337);
        let rel = match (i, newest_first) {
            (0, _) => "first memento",
            (i, _) if i == n - 1 => "last memento",
            _ => "memento",
        };
        let _ = write!(
            doc,
            "<http://web.archive.example/web/{}/{ORIGINAL}>; rel=\"{rel}\"; datetime=\"",
            format_14digit(dt)
        );
        write_rfc1123(&mut doc, dt);
        doc.push_str(if k + 1 == n { "\"\n" } else { "\",\n" });
    }
    doc
}

fn bench_40k(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_40k");
    for (name, newest_first) in [("oldest_first", false), ("newest_first", true)] {
        let doc = timemap(40_000, newest_first);
        assert_eq!(parse_link_format(&doc, URI_T).mementos.len(), 40_000);
        group.throughput(Throughput::Bytes(doc.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| parse_link_format(black_box(&doc), black_box(URI_T)))
        });
    }
    group.finish();
}

fn bench_100mb(c: &mut Criterion) {
    // ~140 bytes a memento: 750,000 of them make about 100 MB.
    let doc = timemap(750_000, false);
    assert_eq!(parse_link_format(&doc, URI_T).mementos.len(), 750_000);
    let mut group = c.benchmark_group("parse_100mb");
    // One iteration takes a good fraction of a second: few flat samples keep the run short.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(doc.len() as u64));
    group.bench_function("oldest_first", |b| {
        b.iter(|| parse_link_format(black_box(&doc), black_box(URI_T)))
    });
    group.finish();
}

/// The end-to-end CPU target: a 40,000-memento TimeMap served newest first, parsed and
/// made a contribution (sorted, deduplicated) as the fan-out does and merged as it is served. MemGator takes 8.9 s on this input.
fn bench_parse_and_merge_40k(c: &mut Criterion) {
    let doc = timemap(40_000, true);
    let mut group = c.benchmark_group("parse_and_merge_40k");
    group.throughput(Throughput::Bytes(doc.len() as u64));
    group.bench_function("newest_first", |b| {
        b.iter(|| {
            let parsed = parse_link_format(black_box(&doc), black_box(URI_T));
            let at = chrono::DateTime::<Utc>::UNIX_EPOCH;
            let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
            merge(&[Contribution::listed("ia", answer, at, parsed.mementos)])
        })
    });
    group.finish();
}

criterion_group!(benches, bench_40k, bench_100mb, bench_parse_and_merge_40k);
criterion_main!(benches);
