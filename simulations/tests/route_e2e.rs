//! `memsim route-e2e` (feature `e2e`): `memsim route`'s misses sent over HTTP to the real server
//! (routing `learned`, fake archives on loopback answering from the SYNTHETIC holdings) ask each
//! archive exactly as often, and serve exactly the mementos and URI-Rs, that `memsim route`
//! counts for the same misses and setting; and the comparison tells a setting one step off.

use simulations::route::e2e::{differences, run, E2eRow};
use simulations::route::model::{generate, Preset};
use simulations::route::{sim, Request, Stream};
use std::process::Command;
use tmproxy_core::routing::Settings;

/// Misses of the small preset replayed: enough for profiles past `min_evidence` at many keys.
const MISSES: usize = 1500;

fn small(seed: u64) -> (Stream, Vec<Request>) {
    let stream = generate(&Preset::SMALL, seed);
    let mut misses = stream.misses(Preset::SMALL.ttl);
    misses.truncate(MISSES);
    (stream, misses)
}

fn assert_same(stream: &Stream, misses: &[Request], row: &E2eRow, s: &Settings) {
    let want = sim::run(stream, misses, s, sim::Limits::SERVER);
    assert_eq!(row.requests_by_archive, want.requests_by_archive, "{s:?}");
    assert_eq!(
        (
            row.requests,
            row.requests_all,
            row.mementos,
            row.mementos_all
        ),
        (
            want.requests,
            want.requests_all,
            want.mementos,
            want.mementos_all
        ),
        "{s:?}"
    );
    assert_eq!(
        (row.memento_recall, row.uri_recall, row.avoided),
        (want.memento_recall, want.uri_recall, want.avoided),
        "{s:?}"
    );
    assert_eq!(
        differences(stream, misses, row, &want),
        Vec::<String>::new()
    );
}

#[test]
fn the_server_over_http_asks_and_serves_what_memsim_route_counts() {
    let (stream, misses) = small(1);
    let settings = [
        Settings::learned(5, 0.02, 0.05),
        Settings::learned(20, 0.1, 0.0),
    ];
    let rows = run(&stream, &misses, &settings, sim::Limits::SERVER, None).expect("e2e run");
    assert_eq!(rows.len(), 3, "all, then each setting");
    assert_eq!(rows[0].mode, "all");
    assert_same(&stream, &misses, &rows[0], &sim::all());
    let mut bound_mattered = false;
    for (row, s) in rows[1..].iter().zip(&settings) {
        assert_eq!(row.mode, "learned");
        assert_same(&stream, &misses, row, s);
        // Each miss came from its SYNTHETIC client: without the per-client bound the replay
        // routes otherwise, so the server did bound what each client taught.
        let unbounded = sim::Limits {
            max_per_client: 4096,
            ..sim::Limits::SERVER
        };
        bound_mattered |=
            sim::run(&stream, &misses, s, unbounded).requests_by_archive != row.requests_by_archive;
        // Routing did skip, and lost something: the comparison is not of two `all` runs.
        assert!(row.requests < row.requests_all, "{row:?}");
        assert!(row.memento_recall < 1.0 || row.uri_recall < 1.0, "{row:?}");
    }
    assert!(bound_mattered, "max_per_client changed no route");
    // The slow archive holds nothing, and the mementos served are the holdings' own.
    let slow = stream
        .archives
        .iter()
        .position(|a| a.id == "slow")
        .expect("slow");
    assert_eq!(rows[0].mementos_by_archive[slow], 0);
    assert!(rows[0].mementos > 10 * misses.len() as u64, "{:?}", rows[0]);
}

#[test]
fn a_server_one_setting_off_from_memsim_is_told_apart() {
    // The server runs one setting; memsim's replay at that setting matches it, and memsim's at
    // each parameter one step off does not.
    let (stream, misses) = small(2);
    let at = Settings::learned(5, 0.05, 0.05);
    let rows = run(&stream, &misses, &[at], sim::Limits::SERVER, None).expect("e2e run");
    let row = &rows[1];
    assert_same(&stream, &misses, row, &at);
    for off in [
        Settings::learned(6, 0.05, 0.05),
        Settings::learned(5, 0.06, 0.05),
        Settings::learned(5, 0.05, 0.06),
    ] {
        let want = sim::run(&stream, &misses, &off, sim::Limits::SERVER);
        let diff = differences(&stream, &misses, row, &want);
        assert!(!diff.is_empty(), "{off:?} not told apart from {at:?}");
    }
}

#[test]
fn memsim_route_e2e_replays_a_trace_and_exits_0_when_equal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("misses.jsonl");
    let memsim = env!("CARGO_BIN_EXE_memsim");
    let wrote = Command::new(memsim)
        .args(["route", "--preset", "small", "--seed", "3", "--write-trace"])
        .arg(&trace)
        .output()
        .expect("run memsim route");
    assert!(wrote.status.success(), "{wrote:?}");
    let out = Command::new(memsim)
        .args([
            "route-e2e",
            "--misses",
            "400",
            "--min-evidence",
            "5",
            "--json",
        ])
        .arg("--trace")
        .arg(&trace)
        .output()
        .expect("run memsim route-e2e");
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2, "all, then the learned setting: {lines:?}");
    for v in &lines {
        assert_eq!(v["equal"], true, "{v}");
        assert_eq!(v["misses"], 400);
        for field in [
            "requests",
            "requests_all",
            "avoided",
            "memento_recall",
            "uri_recall",
        ] {
            assert!(v[field].is_number(), "{field} in {v}");
        }
    }
    assert_eq!(lines[1]["mode"], "learned");
    // `ia` is always asked; `slow`, which holds nothing, is skipped once learned.
    assert_eq!(lines[1]["requests_by_archive"]["ia"], 400);
    let slow = lines[1]["requests_by_archive"]["slow"].as_u64();
    assert!(slow.expect("slow's requests") < 400);
    assert!(lines[1]["median_miss_ms"].is_number());
    let requests = |v: &serde_json::Value| v["requests"].as_u64().expect("requests");
    assert!(requests(&lines[1]) < requests(&lines[0]));
}
