//! `report.md`'s per-year table (the paper's Table 7) and CCDF, checked against what the same run
//! wrote in `sample.ndjson` and `funnel.json`, not against fixed strings: a run over the
//! SYNTHETIC index of `sampling_job` with a long-tail threshold low enough to cut domains.

use crate::sampling_job::{fake_cdx, index_file, sample_of, spec};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tmproxy::sampling::downsample::TABLE7_K;
use tmproxy::sampling::engine::{run, Progress};

/// The rows of the markdown table under `heading`, as cells.
fn table(report: &str, heading: &str) -> Vec<Vec<String>> {
    let start = report.find(heading).expect("the section");
    report[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn num(cell: &str) -> u64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("{cell:?} is not a count"))
}

fn funnel_row<'a>(funnel: &'a Value, stage: &str) -> &'a Value {
    funnel
        .as_array()
        .and_then(|a| a.iter().find(|r| r["stage"] == stage))
        .unwrap_or_else(|| panic!("no {stage} row in {funnel}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_year_table_and_the_ccdf_agree_with_the_sample_and_the_funnel() {
    let (cdx, _fake, task) = fake_cdx().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let input = index_file(dir.path());
    let out = dir.path().join("out");
    let mut spec = spec(&input, &cdx);
    // Every year with more than 2 domains loses all its single-URL domains.
    spec.long_tail_threshold = 2;
    spec.long_tail_fraction = 1.0;
    run(&spec, &out, Arc::new(Progress::default()))
        .await
        .expect("the run");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    let sample = sample_of(&out);
    let funnel: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("funnel.json")).expect("funnel"))
            .expect("JSON");
    let stage = |name: &str, key: &str| funnel_row(&funnel, name)[key].as_u64().expect("a count");

    // The sample per year label: URLs and roots.
    let mut per_year: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for s in &sample {
        let e = per_year.entry(s.year.clone()).or_default();
        e.0 += 1;
        e.1 += u64::from(s.root);
    }

    let rows = table(&report, "## URLs per year");
    let (total, years) = rows.split_last().expect("rows and a total");
    assert_eq!(total[0], "total");
    assert!(years.len() >= 5, "{report}");
    let mut sums = [0u64; 6];
    for r in years {
        let year = &r[0];
        let (domains, before, after, roots, quota, in_sample, long_tail) = (
            num(&r[1]),
            num(&r[2]),
            num(&r[5]),
            num(&r[6]),
            num(&r[7]),
            num(&r[8]),
            num(&r[9]),
        );
        let (want_urls, want_roots) = per_year.get(year).copied().unwrap_or_default();
        assert_eq!(
            in_sample, want_urls,
            "{year}: the year's URLs in sample.ndjson"
        );
        assert_eq!(
            roots, want_roots,
            "{year}: the year's roots in sample.ndjson"
        );
        assert_eq!(after + quota, in_sample, "{year}");
        assert!(after <= before, "{year}: Eq. 1 keeps at most N");
        // With C = 1 every domain keeps at least one URL: round(K·log N + 1) ≥ 1.
        assert!(after >= domains, "{year}");
        let bucket: u16 = if year == "1996-2000" {
            2000
        } else {
            year.parse().expect("a year")
        };
        if before > 0 {
            let k = TABLE7_K
                .iter()
                .find(|(b, _)| *b == bucket)
                .map(|(_, k)| k.to_string())
                .expect("Table 7 has every year");
            assert_eq!(r[3], k, "{year}: K");
            assert_eq!(r[4], "1", "{year}: C");
        }
        for (sum, v) in sums
            .iter_mut()
            .zip([domains, before, after, roots, quota, long_tail])
        {
            *sum += v;
        }
    }
    let [domains, before, after, roots, quota, long_tail] = sums;
    assert_eq!(before, stage("downsampling", "in"), "URLs given to Eq. 1");
    assert_eq!(after, stage("downsampling", "out"), "URLs Eq. 1 kept");
    assert_eq!(quota, stage("popular_quota", "out"), "the quota's picks");
    assert_eq!(
        long_tail,
        stage("long_tail", "set_aside"),
        "the long tail's cut"
    );
    assert!(long_tail > 0, "the threshold of 2 cuts: {report}");
    assert_eq!(
        [&total[1], &total[2], &total[5], &total[6], &total[7], &total[8], &total[9]],
        [
            &domains.to_string(),
            &before.to_string(),
            &after.to_string(),
            &roots.to_string(),
            &quota.to_string(),
            &sample.len().to_string(),
            &long_tail.to_string()
        ]
    );
    assert!(
        report.contains(&format!("**Final sample size: {} URLs**", sample.len())),
        "{report}"
    );

    // The CCDF counts every domain given to downsampling, those the long tail dropped whole
    // included: "after" at x = 1 is the domains left in the sample (the popular twitter.com
    // re-enters by its quota, not through downsampling), "before" is more.
    let ccdf = table(&report, "## Per-domain CCDF");
    let first = &ccdf[0];
    assert_eq!(first[0], "1");
    let hosts: BTreeSet<String> = sample
        .iter()
        .filter_map(|s| url::Url::parse(&s.url).ok()?.host_str().map(str::to_string))
        .filter(|h| h != "twitter.com")
        .collect();
    assert_eq!(num(&first[3]), hosts.len() as u64, "{report}");
    assert!(num(&first[1]) > num(&first[3]), "{report}");
    assert!(report.contains(&format!("{} domains before downsampling", num(&first[1]))));

    // The SVG: two step lines, both axes labelled, tick labels from 1 up.
    let svg = std::fs::read_to_string(out.join("ccdf.svg")).expect("ccdf.svg");
    assert_eq!(svg.matches("<path").count(), 2);
    for label in [
        "x: URLs per domain",
        "share of domains with at least x URLs",
        "class=\"tick x\" ",
        ">1</text>",
        ">10</text>",
        ">0.1</text>",
        ">0.01</text>",
    ] {
        assert!(svg.contains(label), "{label} missing from {svg}");
    }
    task.abort();
}
