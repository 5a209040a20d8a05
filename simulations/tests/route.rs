//! `memsim route`: deterministic for a seed, `all` as the baseline, a hand-computed trace, the
//! trace written by a preset replaying the preset's own run, and hostile trace lines refused
//! with their line numbers (the binary end to end).

use simulations::route::model::{generate, Preset};
use simulations::route::sim::{self, RunResult};
use simulations::route::{trace, Stream};
use std::process::Command;
use tmproxy_core::routing::Settings;

fn sweep_small(seed: u64) -> Vec<RunResult> {
    let stream = generate(&Preset::SMALL, seed);
    let misses = stream.misses(Preset::SMALL.ttl);
    let settings = sim::grid(&[0.02, 0.1], &[0.0, 0.05], &[5, 20]);
    sim::sweep(&stream, &misses, &settings, sim::Limits::SERVER, 2, &|| ())
}

#[test]
fn a_preset_is_deterministic_for_a_seed_and_differs_between_seeds() {
    let one = sweep_small(1);
    assert_eq!(one, sweep_small(1));
    assert_ne!(one, sweep_small(2));
    assert_eq!(one.len(), 1 + 2 * 2 * 2);
    // The stream itself, not only the numbers.
    let (a, b) = (generate(&Preset::SMALL, 7), generate(&Preset::SMALL, 7));
    assert_eq!(a.requests, b.requests);
    assert_eq!(a.holdings, b.holdings);
    assert_eq!(a.uris, b.uris);
}

#[test]
fn all_asks_every_archive_and_loses_nothing_while_learned_avoids_requests() {
    let rows = sweep_small(3);
    let all = &rows[0];
    assert_eq!(all.mode, "all");
    assert_eq!(all.requests, all.requests_all);
    assert_eq!(all.requests_all, all.misses * 13);
    assert_eq!(
        (all.avoided, all.memento_recall, all.uri_recall),
        (0.0, 1.0, 1.0)
    );
    assert_eq!(all.mementos, all.mementos_all);
    assert_eq!(all.median_latency_ms, all.median_latency_all_ms);
    assert!(all.mementos_all > 0 && all.misses > 0);
    for r in &rows[1..] {
        assert_eq!(r.mode, "learned");
        assert_eq!((r.misses, r.mementos_all), (all.misses, all.mementos_all));
        assert!(r.requests < r.requests_all, "{r:?}");
        assert!(r.memento_recall <= 1.0 && r.uri_recall <= 1.0);
        // The slow archive holds nothing: skipped, it stops being what a miss waits for.
        assert!(r.median_latency_ms < all.median_latency_ms, "{r:?}");
    }
}

fn read(text: &str, always: &[&str]) -> Result<Stream, trace::TraceError> {
    let always: Vec<String> = always.iter().map(|s| s.to_string()).collect();
    trace::read(text.as_bytes(), &always).map(|(s, _)| s)
}

/// `one.example` is held by `ia` and `a`, never by `b`: after 3 misses (min_evidence) `b` is
/// skipped there; lines 7 and 8 then show what skipping costs when `b` starts holding.
const HAND: &str = r#"{"uri_r": "http://one.example/p1", "holdings": {"ia": 1, "a": 2, "b": 0}}
{"uri_r": "http://one.example/p2", "holdings": {"ia": 1, "a": 2}}
{"uri_r": "http://one.example/p3", "holdings": {"ia": 1, "a": 2}}

{"uri_r": "http://one.example/p4", "holdings": {"ia": 1, "a": 2}}
{"uri_r": "http://one.example/p5", "holdings": {"ia": 1, "a": 2}}
{"uri_r": "http://one.example/p6", "holdings": {"ia": 1, "a": 2}}
{"uri_r": "http://one.example/p7", "holdings": {"ia": 1, "b": 4}}
{"uri_r": "http://one.example/p8", "holdings": {"b": 5}}
"#;

#[test]
fn a_hand_built_trace_gives_the_numbers_computed_by_hand() {
    let stream = read(HAND, &["ia"]).expect("a good trace");
    assert_eq!(stream.archives.len(), 3);
    let misses = stream.misses(0);
    assert_eq!(misses.len(), 8);
    let r = sim::run(
        &stream,
        &misses,
        &Settings::learned(3, 0.5, 0.0),
        sim::Limits::SERVER,
    );
    // Misses 1-3 ask all three; from miss 4 `b` is skipped (0 of 3 at host one.example).
    assert_eq!((r.requests, r.requests_all), (3 * 3 + 5 * 2, 24));
    assert_eq!(r.avoided, 1.0 - 19.0 / 24.0);
    // Served: 3 a miss for six misses, then ia's 1 (b's 4 skipped), then nothing (b's 5).
    assert_eq!((r.mementos, r.mementos_all), (19, 28));
    assert_eq!(r.memento_recall, 19.0 / 28.0);
    assert_eq!((r.uris_found, r.uris_found_all), (7, 8));
    assert_eq!(r.uri_recall, 7.0 / 8.0);
    assert_eq!(r.explored, 0);
    assert_eq!(r.median_latency_ms, None, "a trace has no latencies");
    // Exploring every miss is `all` again; `all` loses nothing.
    for s in [Settings::learned(3, 0.5, 1.0), sim::all()] {
        let r = sim::run(&stream, &misses, &s, sim::Limits::SERVER);
        assert_eq!((r.requests, r.mementos, r.uris_found), (24, 28, 8));
    }
    // min_evidence 4: `b` is asked one more time (on miss 4) before it is skipped.
    let r = sim::run(
        &stream,
        &misses,
        &Settings::learned(4, 0.5, 0.0),
        sim::Limits::SERVER,
    );
    assert_eq!(r.requests, 4 * 3 + 4 * 2);
    // `b` always asked: nothing skipped but nothing to skip from ia either.
    let always_b = read(HAND, &["b"]).expect("a good trace");
    let r = sim::run(
        &always_b,
        &misses,
        &Settings::learned(3, 0.5, 0.0),
        sim::Limits::SERVER,
    );
    assert_eq!((r.requests, r.mementos), (24, 28));
}

/// [`HAND`] with every line from one client, then the same from a client per line.
fn with_clients(one: bool) -> String {
    HAND.lines()
        .enumerate()
        .map(|(i, l)| match l.strip_suffix('}') {
            Some(head) => {
                let ip = if one { 1 } else { i + 1 };
                format!("{head}, \"client\": \"2001:db8:{ip}::7\"}}\n")
            }
            None => "\n".to_string(),
        })
        .collect()
}

#[test]
fn one_client_teaches_a_key_at_most_max_per_client_times() {
    // One client (an IPv6 /64) asks all eight: with max_per_client 2 it teaches one.example,
    // its domain and TLD twice, below min_evidence 3, so `b` is never skipped.
    let one = read(&with_clients(true), &["ia"]).expect("a good trace");
    let misses = one.misses(0);
    assert!(misses.iter().all(|m| m.client.is_some()));
    let s = Settings::learned(3, 0.5, 0.0);
    let bounded = sim::Limits {
        max_per_client: 2,
        ..sim::Limits::SERVER
    };
    assert_eq!(sim::run(&one, &misses, &s, bounded).requests, 24);
    // Up to 3 (at least min_evidence), it is the unbounded count again.
    let three = sim::Limits {
        max_per_client: 3,
        ..sim::Limits::SERVER
    };
    assert_eq!(sim::run(&one, &misses, &s, three).requests, 3 * 3 + 5 * 2);
    // A client per line, each in its own /64: nothing is bounded.
    let many = read(&with_clients(false), &["ia"]).expect("a good trace");
    let r = sim::run(&many, &many.misses(0), &s, bounded);
    assert_eq!(r.requests, 3 * 3 + 5 * 2);
}

#[test]
fn a_presets_written_trace_replays_its_run_exactly() {
    let stream = generate(&Preset::SMALL, 5);
    let misses = stream.misses(Preset::SMALL.ttl);
    let mut bytes = Vec::new();
    trace::write(&stream, &misses, &mut bytes).expect("write to a Vec");
    let replayed = read(std::str::from_utf8(&bytes).expect("UTF-8"), &["ia"]).expect("reads back");
    assert_eq!(replayed.requests.len(), misses.len());
    assert_eq!(replayed.archives.len(), stream.archives.len());
    let again = replayed.misses(0);
    for s in [
        sim::all(),
        Settings::learned(20, 0.02, 0.05),
        Settings::learned(5, 0.1, 0.0),
    ] {
        let (a, b) = (
            sim::run(&stream, &misses, &s, sim::Limits::SERVER),
            sim::run(&replayed, &again, &s, sim::Limits::SERVER),
        );
        // Latencies are the model's; everything else is the stream's.
        let strip = |r: RunResult| RunResult {
            median_latency_ms: None,
            median_latency_all_ms: None,
            ..r
        };
        assert_eq!(strip(a), strip(b));
    }
}

#[test]
fn bad_trace_lines_are_refused_with_their_line_number() {
    let good = r#"{"uri_r": "http://a.example/", "holdings": {"ia": 1}}"#;
    let long = format!(
        r#"{{"uri_r": "http://a.example/{}", "holdings": {{}}}}"#,
        "x".repeat(trace::MAX_LINE)
    );
    let many: String = (0..=trace::MAX_ARCHIVES)
        .map(|i| format!(r#"{{"uri_r": "http://a.example/", "holdings": {{"a{i}": 1}}}}"#))
        .collect::<Vec<_>>()
        .join("\n");
    let cases: Vec<(String, u64, &str)> = vec![
        (format!("{good}\n{{\"uri_r\": 5}}\n"), 2, "expected"),
        (format!("{good}\n\n{good}\nnot json\n"), 4, "expected"),
        (format!("{good}\n{long}\n"), 2, "longer than"),
        (
            r#"{"uri_r": "x", "holdings": {"ia": -1}}"#.to_string(),
            1,
            "expected",
        ),
        (
            r#"{"uri_r": "x", "holdings": {"ia": 1.5}}"#.to_string(),
            1,
            "expected",
        ),
        (
            r#"{"uri_r": "x", "holdings": {"ia": 4294967296}}"#.to_string(),
            1,
            "expected",
        ),
        (r#"{"uri_r": "", "holdings": {}}"#.to_string(), 1, "uri_r"),
        (
            r#"{"uri_r": "x", "holdings": {"": 1}}"#.to_string(),
            1,
            "archive id",
        ),
        (
            r#"{"uri_r": "x", "holdings": {"a\u0007": 1}}"#.to_string(),
            1,
            "archive id",
        ),
        (
            r#"{"uri_r": "x", "holdings": []}"#.to_string(),
            1,
            "expected",
        ),
        (
            r#"{"uri_r": "x", "holdings": {"ia": 1, "ia": 2}}"#.to_string(),
            1,
            "named twice",
        ),
        (many, trace::MAX_ARCHIVES as u64 + 1, "archives"),
        (
            r#"{"uri_r": "x", "holdings": {"ia": 1}, "client": "not an address"}"#.to_string(),
            1,
            "expected",
        ),
    ];
    for (text, line, why) in cases {
        match read(&text, &["ia"]) {
            Err(trace::TraceError::Line(n, w)) => {
                assert_eq!(n, line, "{w}");
                assert!(w.contains(why), "line {n}: {w}");
            }
            other => panic!(
                "{:?} accepted: {:?}",
                &text[..text.len().min(80)],
                other.map(|s| s.requests.len())
            ),
        }
    }
    // Not UTF-8.
    let mut bytes = format!("{good}\n").into_bytes();
    bytes.extend_from_slice(b"{\"uri_r\": \"\xff\", \"holdings\": {}}\n");
    let err = trace::read(&bytes[..], &[])
        .map(|_| ())
        .expect_err("refused");
    assert!(
        matches!(err, trace::TraceError::Line(2, ref w) if w.contains("UTF-8")),
        "{err}"
    );
}

#[test]
fn memsim_route_trace_json_prints_one_object_per_setting_with_the_pinned_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hand.jsonl");
    std::fs::write(&path, HAND).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args(["route", "--trace"])
        .arg(&path)
        .args([
            "--json",
            "--min-share",
            "0.5",
            "--explore",
            "0",
            "--min-evidence",
            "3",
        ])
        .output()
        .expect("run memsim");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2);
    for v in &lines {
        for field in [
            "mode",
            "min_share",
            "explore",
            "requests",
            "requests_all",
            "avoided",
            "memento_recall",
            "uri_recall",
        ] {
            assert!(v.get(field).is_some(), "{field} missing in {v}");
        }
    }
    assert_eq!(lines[0]["mode"], "all");
    assert_eq!(lines[0]["requests"], 24);
    assert_eq!(lines[1]["mode"], "learned");
    assert_eq!(lines[1]["min_share"], 0.5);
    assert_eq!(
        (
            lines[1]["requests"].as_u64(),
            lines[1]["requests_all"].as_u64()
        ),
        (Some(19), Some(24))
    );
    assert_eq!(lines[1]["memento_recall"].as_f64(), Some(19.0 / 28.0));

    // A bad line: exit 1, the line number on stderr, nothing on stdout.
    std::fs::write(&path, format!("{HAND}{{\"uri_r\": \"http://x/\"}}\n")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args(["route", "--json", "--trace"])
        .arg(&path)
        .output()
        .expect("run memsim");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 10") && err.contains("refused"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn memsim_route_writes_a_trace_that_route_trace_replays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("small.jsonl");
    let bin = env!("CARGO_BIN_EXE_memsim");
    let out = Command::new(bin)
        .args(["route", "--preset", "small", "--seed", "1", "--write-trace"])
        .arg(&path)
        .output()
        .expect("run memsim");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = Command::new(bin)
            .args([
                "route",
                "--json",
                "--min-share",
                "0.02",
                "--explore",
                "0.05",
            ])
            .args(["--min-evidence", "20"])
            .args(args)
            .output()
            .expect("run memsim");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect()
    };
    let preset = run(&["--preset", "small", "--seed", "1"]);
    let traced = run(&["--trace", path.to_str().expect("a UTF-8 temp path")]);
    assert_eq!(preset.len(), 2);
    for (p, t) in preset.iter().zip(&traced) {
        for field in [
            "requests",
            "requests_all",
            "avoided",
            "memento_recall",
            "uri_recall",
        ] {
            assert_eq!(p[field], t[field], "{field}");
        }
    }
}
