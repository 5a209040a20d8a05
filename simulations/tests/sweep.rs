//! `memsim sweep` on the SYNTHETIC `tiny` preset (20 URI-Rs × 10 days, cheap in a debug build):
//! the CSV's shape, the identities the grid must show, and the binary end to end.

use simulations::generate::{generate, Preset};
use simulations::series::{LiveDay, LiveReader};
use simulations::sweep::{summary, sweep, write_csv, Row, SeriesInfo, Source, CSV_HEADER};
use std::path::PathBuf;
use std::process::Command;
use tmproxy_core::policy::PolicyKind;

fn tiny(seed: u64) -> (SeriesInfo, Vec<LiveDay>) {
    let p = Preset::by_name("tiny").expect("preset");
    let mut bytes = Vec::new();
    generate(p, seed, &mut bytes).expect("write to a Vec");
    let days: Vec<LiveDay> = LiveReader::new(&bytes[..])
        .collect::<Result<_, _>>()
        .expect("a generated series reads back");
    let source = Source::Preset {
        name: "tiny".to_string(),
        seed,
    };
    (SeriesInfo::of(source, &days), days)
}

fn row(rows: &[Row], kind: PolicyKind, ttl: Option<i64>) -> &Row {
    rows.iter()
        .find(|r| r.kind == kind && r.ttl == ttl)
        .expect("cell in the grid")
}

#[test]
fn tiny_sweep_writes_the_exact_header_and_4_policies_by_d_plus_1_ttls() {
    let (info, days) = tiny(1);
    assert_eq!((info.uri_rs, info.days), (20, 10));
    let rows = sweep(&days, info.days);
    let mut csv = Vec::new();
    write_csv(&rows, &mut csv).expect("write to a Vec");
    let text = String::from_utf8(csv).expect("utf-8");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "policy,ttl,memdays,memdays_live,memdays_union,q,missed_days,false_zero_days,\
             worse_replacements"
        )
    );
    let body: Vec<&str> = lines.collect();
    assert_eq!(body.len(), 5 * (10 + 1));
    assert!(body[0].starts_with("none,0,"), "{}", body[0]);
    assert!(body[10].starts_with("none,inf,"), "{}", body[10]);
    assert!(body[11].starts_with("forever,0,"), "{}", body[11]);
    assert!(body[21].starts_with("forever,inf,"), "{}", body[21]);
    assert!(body[22].starts_with("unconditional,0,"), "{}", body[22]);
    assert!(body[54].starts_with("merge,inf,"), "{}", body[54]);
    // `none` is the no-cache baseline: a fetch every day at every TTL.
    for row in &body[0..11] {
        let q: u64 = row
            .split(',')
            .nth(5)
            .and_then(|v| v.parse().ok())
            .expect("q column");
        assert_eq!(q, 20 * 10, "{row}");
    }
    for l in &body {
        assert_eq!(l.split(',').count(), CSV_HEADER.split(',').count(), "{l}");
    }
}

#[test]
fn inf_rows_agree_and_ttl_0_fetches_every_day() {
    let (info, days) = tiny(2);
    let rows = sweep(&days, info.days);
    let f = row(&rows, PolicyKind::Forever, None).measures.memdays;
    let u = row(&rows, PolicyKind::Unconditional, None).measures.memdays;
    let c = row(&rows, PolicyKind::Conditional, None).measures.memdays;
    assert_eq!((f, u), (c, c));
    let nd = info.uri_rs * u64::from(info.days);
    for kind in [
        PolicyKind::Unconditional,
        PolicyKind::Conditional,
        PolicyKind::Merge,
    ] {
        assert_eq!(row(&rows, kind, Some(0)).measures.q, nd, "{kind}");
    }
    assert_eq!(
        row(&rows, PolicyKind::Conditional, Some(0))
            .measures
            .memdays,
        0
    );
    let md = summary(&info, &rows);
    assert!(md.contains("SYNTHETIC"), "{md}");
    assert!(md.contains("20 URI-Rs × 10 days"), "{md}");
    assert!(md.contains("4,010,406"), "{md}");
}

#[test]
fn memsim_sweep_writes_csv_and_summary() {
    let dir: PathBuf = std::env::temp_dir().join(format!("memsim-sweep-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args(["sweep", "--preset", "tiny", "--seed", "3", "--out"])
        .arg(&dir)
        .output()
        .expect("run memsim");
    let csv = std::fs::read_to_string(dir.join("sweep.csv"));
    let md = std::fs::read_to_string(dir.join("summary.md"));
    let svgs: Vec<(String, std::io::Result<String>)> = [
        "ttl_none.svg",
        "ttl_forever.svg",
        "ttl_unconditional.svg",
        "ttl_conditional.svg",
        "ttl_merge.svg",
        "fig12a.svg",
        "fig12b.svg",
        "pareto.svg",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read_to_string(dir.join(f))))
    .collect();
    // The same series from a file sweeps to the same CSV.
    let file = dir.join("tiny.jsonl");
    let generated = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args(["generate", "--preset", "tiny", "--seed", "3", "--out"])
        .arg(&file)
        .output()
        .expect("run memsim");
    let from_file = dir.join("from-file");
    let swept = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args(["sweep", "--series"])
        .arg(&file)
        .arg("--out")
        .arg(&from_file)
        .output()
        .expect("run memsim");
    let csv_file = std::fs::read_to_string(from_file.join("sweep.csv"));
    let md_file = std::fs::read_to_string(from_file.join("summary.md"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(generated.status.success(), "{generated:?}");
    assert!(swept.status.success(), "{swept:?}");
    assert!(out.status.success(), "{out:?}");
    let csv = csv.expect("sweep.csv written");
    assert_eq!(csv.lines().next(), Some(CSV_HEADER));
    assert_eq!(csv.lines().count(), 1 + 5 * 11);
    let md = md.expect("summary.md written");
    assert!(md.contains("SYNTHETIC") && md.contains("optimum"), "{md}");
    assert!(md.contains("[fig12b.svg](fig12b.svg)") && md.contains("Pareto front"));
    for (name, svg) in svgs {
        let svg = svg.unwrap_or_else(|e| panic!("{name} written: {e}"));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}"
        );
        assert!(svg.contains("SYNTHETIC preset tiny, seed 3"), "{name}");
        let labels: &[&str] = match name.as_str() {
            "pareto.svg" => &["Pareto front", "unconditional", "conditional", "merge"],
            n if n.starts_with("fig12") => {
                &["MemDays (normalised)", "Q (normalised)", "optimum TTL"]
            }
            _ => &["MemDays", "Q (fetches)", "inf"],
        };
        for l in labels {
            assert!(svg.contains(l), "{name} lacks {l}");
        }
    }
    assert_eq!(csv_file.expect("sweep.csv from the file"), csv);
    let md_file = md_file.expect("summary.md from the file");
    assert!(md_file.contains("tiny.jsonl") && md_file.contains("20 URI-Rs × 10 days"));

    // --series and --preset exclude each other; neither is a usage error (exit 2, one line), and
    // so is a seed without a preset (a preset without one takes seed 1: harness.rs).
    for args in [
        &["sweep", "--out", "x"][..],
        &["sweep", "--seed", "1", "--out", "x"][..],
        &[
            "sweep", "--preset", "tiny", "--seed", "1", "--series", "s", "--out", "x",
        ][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
            .args(args)
            .output()
            .expect("run memsim");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn memsim_sweep_adaptive_writes_its_settings_beside_the_fixed_grid() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("memsim-sweep-adaptive-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args([
            "sweep",
            "--preset",
            "small",
            "--seed",
            "2",
            "--ttl-mode",
            "adaptive",
            "--budget",
            "0.5,4",
            "--ttl-min",
            "0,1",
            "--ttl-max",
            "20",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("run memsim");
    let csv = std::fs::read_to_string(dir.join("adaptive.csv"));
    let md = std::fs::read_to_string(dir.join("summary.md"));
    let svg = std::fs::read_to_string(dir.join("adaptive.svg"));
    let fixed = std::fs::read_to_string(dir.join("sweep.csv"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{out:?}");
    let csv = csv.expect("adaptive.csv written");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], simulations::adaptive::CSV_HEADER);
    // 2 budgets × 2 floors × 1 ceiling.
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    assert!(lines[1].starts_with("conditional,0.5,0,20,"), "{csv}");
    // A larger budget asks the archives less.
    let q = |l: &str| l.split(',').nth(7).and_then(|q| q.parse::<u64>().ok());
    assert!(q(lines[2]) < q(lines[1]), "{csv}");
    let md = md.expect("summary.md written");
    assert!(md.contains("## Adaptive TTL"), "{md}");
    assert!(md.contains("conditional TTL 15"), "{md}");
    assert!(svg.expect("adaptive.svg written").contains("<svg"));
    // The fixed grid is still all there.
    assert_eq!(fixed.expect("sweep.csv").lines().count(), 1 + 5 * 31);
}
