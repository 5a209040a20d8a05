//! Throughput of the offline sampling stages (read, unique SURTs, SURT → URL, wildcards,
//! collisions, session ids, index files, likely HTML, popular domains) on one core, over
//! SYNTHETIC ZipNum lines held in memory (`tmproxy_testkit::synthetic`).

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use std::hint::black_box;
use tmproxy::sampling::offline::Offline;
use tmproxy_testkit::synthetic::write_zipnum;

fn offline(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let lines = write_zipnum(1_000_000, &mut bytes).expect("write to a Vec");
    let text = String::from_utf8(bytes).expect("ASCII");
    let popular = vec!["twitter.com".to_string()];
    let mut g = c.benchmark_group("sampling_offline");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.throughput(Throughput::Elements(lines));
    g.bench_function("zipnum_lines", |b| {
        b.iter(|| {
            let mut o = Offline::new(&popular);
            let (mut kept, mut aside) = (0u64, 0u64);
            for l in text.lines() {
                o.push_line(l, &mut |_| kept += 1, &mut |_| aside += 1);
            }
            black_box((kept, aside, o.funnel()))
        })
    });
    g.finish();
}

criterion_group!(benches, offline);
criterion_main!(benches);
