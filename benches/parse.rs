//! Throughput of `parse_link_format` on generated Wayback-style TimeMaps: 40,000 mementos oldest
//! first and newest first (the parser must not care), one ~100 MB document, and parse + merge of
//! 40,000 newest first; and the core's part of one small aggregated miss (three archives of 34
//! mementos, as `benches/vs_memgator.sh` serves them): parsed, listed, merged and rendered.

use chrono::{Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use tmproxy::timemap::aggregate::Aggregate;
use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution};
use tmproxy::timemap::credit::Credits;
use tmproxy::timemap::datetime::{format_14digit, write_rfc1123};
use tmproxy::timemap::merge::merge;
use tmproxy::timemap::parse::parse_link_format;
use tmproxy::timemap::serialize::{render, SelfLinks, TimeMapFormat};

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

/// Archive `i`'s TimeMap of `n` SYNTHETIC mementos, a month apart from a start month of its own,
/// each on its own host (`archive<i>.test`): what `benches/vs_memgator.sh`'s nginx archives serve.
fn small_timemap(i: u32, n: u32) -> String {
    let mut doc = format!(
        "<http://example.com/>; rel=\"original\",\n<http://archive{i}.test/web/timemap/link/http://example.com/>; rel=\"self\"; type=\"application/link-format\",\n"
    );
    for k in 0..n {
        let (y, m) = (2000 + (k + 7 * i) / 12, (k + 7 * i) % 12 + 1);
        let dt = Utc
            .with_ymd_and_hms(y as i32, m, i + 1, i + 10, k % 60, 17)
            .single()
            .expect("valid datetime");
        let _ = write!(
            doc,
            "<http://archive{i}.test/web/{}/http://example.com/>; rel=\"memento\"; datetime=\"",
            format_14digit(dt)
        );
        write_rfc1123(&mut doc, dt);
        doc.push_str("\",\n");
    }
    let _ = writeln!(
        doc,
        "<http://archive{i}.test/web/http://example.com/>; rel=\"timegate\""
    );
    doc
}

/// The core's work in one aggregated miss of three archives × 34 mementos, stage by stage and
/// whole: each body parsed, each archive's mementos listed (sorted, deduplicated), the three
/// merged into the aggregate, and that rendered in link format.
fn bench_miss_core(c: &mut Criterion) {
    let docs: Vec<(String, String)> = (0..3)
        .map(|i| {
            let uri_t = format!("http://127.0.0.1:1841{i}/timemap/link/http://example.com/");
            (small_timemap(i, 34), uri_t)
        })
        .collect();
    let at = chrono::DateTime::<Utc>::UNIX_EPOCH;
    let ids = ["a0", "a1", "a2"];
    let parse = || {
        docs.iter()
            .map(|(doc, uri_t)| parse_link_format(black_box(doc), uri_t).mementos)
            .collect::<Vec<_>>()
    };
    let list = |parsed: Vec<Vec<tmproxy::timemap::LinkMemento>>| {
        parsed
            .into_iter()
            .zip(ids)
            .map(|(mementos, id)| {
                let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
                Contribution::listed(id, answer, at, mementos)
            })
            .collect::<Vec<_>>()
    };
    let uri_r = "http://example.com/";
    let links = SelfLinks::new("http://127.0.0.1:18414", uri_r);
    let credits = Credits::default();
    let contributions = list(parse());
    let agg = Aggregate::of(uri_r, at, &contributions, &credits);
    assert_eq!(agg.timemap.mementos.len(), 102);
    let mut group = c.benchmark_group("miss_core_3x34");
    group.bench_function("parse", |b| b.iter(parse));
    group.bench_function("list", |b| {
        b.iter_batched(parse, list, criterion::BatchSize::SmallInput)
    });
    group.bench_function("merge", |b| {
        b.iter(|| Aggregate::of(uri_r, at, black_box(&contributions), &credits))
    });
    group.bench_function("render", |b| {
        b.iter(|| render(TimeMapFormat::LINK, black_box(&agg), &links))
    });
    group.bench_function("all", |b| {
        b.iter(|| {
            let contributions = list(parse());
            let agg = Aggregate::of(uri_r, at, &contributions, &credits);
            render(TimeMapFormat::LINK, &agg, &links)
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_40k,
    bench_100mb,
    bench_parse_and_merge_40k,
    bench_miss_core
);
criterion_main!(benches);
