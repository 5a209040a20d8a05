//! Real observations replayed: the proxy's own observation log (written by the server during an
//! e2e run) and a directory of daily link-format snapshots.

use simulations::import::{load, write_series, InputKind};
use simulations::replay::{policy, replay, Measures};
use std::process::Command;
use tmproxy_core::policy::{Match, PolicyKind};

fn replay_input(path: &std::path::Path, kind: PolicyKind, ttl: Option<i64>) -> Measures {
    let (k, c) = load(path).expect("loads");
    assert_ne!(k, InputKind::Series);
    let mut bytes = Vec::new();
    write_series(&c, &mut bytes).expect("to a Vec");
    replay(&bytes[..], &policy(kind, Match::Loose, ttl))
        .expect("a converted series replays")
        .measures
}

/// The server writes the log, so these need memsim's `e2e` feature (the suite turns it on).
#[cfg(feature = "e2e")]
mod observed_by_the_server {
    use super::*;
    use simulations::e2e::run;
    use simulations::generate::{live_groups, Preset};
    use simulations::replay::replay_days;
    use simulations::series::LiveDay;

    fn groups(preset: &str, seed: u64) -> Vec<Vec<LiveDay>> {
        let p = Preset::by_name(preset).expect("preset");
        live_groups(p, seed)
            .collect::<Result<_, _>>()
            .expect("a generated series resolves")
    }

    #[test]
    fn the_servers_observation_log_replays_like_the_series_it_observed() {
        // Policy none fetches every URI-R every day, so the log holds the whole series as the server
        // saw it; replayed under any policy it must give what the original series gives.
        let g = groups("tiny", 6);
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("observations.jsonl");
        run(g.clone(), PolicyKind::None, Some(0), Some(&log)).expect("e2e run");
        for (kind, ttl) in [
            (PolicyKind::Conditional, Some(2)),
            (PolicyKind::Unconditional, Some(0)),
            (PolicyKind::Merge, None),
        ] {
            let want = replay_days(g.iter().flatten(), &policy(kind, Match::Loose, ttl)).measures;
            assert_eq!(replay_input(&log, kind, ttl), want, "{kind} {ttl:?}");
        }
        // And through the binary: detected, converted, one JSON object on stdout.
        let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
            .args(["replay", "--policy", "conditional", "--ttl", "2", "--json"])
            .arg("--series")
            .arg(&log)
            .output()
            .expect("run memsim");
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        let want = replay_days(
            g.iter().flatten(),
            &policy(PolicyKind::Conditional, Match::Loose, Some(2)),
        )
        .measures;
        assert_eq!(v["memdays"], want.memdays);
        assert!(String::from_utf8_lossy(&out.stderr).contains("observation log"));
    }
}

fn timemap(n: usize) -> String {
    let mut s = "<http://a.example/>; rel=\"original\"".to_string();
    for k in 0..n {
        s.push_str(&format!(
            ",\n<https://web.archive.org/web/2020010{}000000/http://a.example/>; rel=\"memento\"; \
             datetime=\"Wed, 0{} Jan 2020 00:00:00 GMT\"",
            k + 1,
            k + 1
        ));
    }
    s
}

#[test]
fn a_snapshot_directory_replays_with_missing_days_carried() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 2 mementos, a dip to 1, no snapshot (failed: carries 1), then 3.
    for (day, n) in [
        ("2012-05-01", Some(2)),
        ("2012-05-02", Some(1)),
        ("2012-05-03", None),
        ("2012-05-04", Some(3)),
    ] {
        let folder = dir.path().join(day);
        std::fs::create_dir_all(&folder).expect("mkdir");
        if let Some(n) = n {
            std::fs::write(folder.join("a.link"), timemap(n)).expect("write");
        }
    }
    let c = replay_input(dir.path(), PolicyKind::Conditional, Some(0));
    assert_eq!((c.memdays, c.q), (0, 4));
    let u = replay_input(dir.path(), PolicyKind::Unconditional, Some(0));
    // Served 2, 1, 1, 3 against the best so far 2, 2, 2, 3.
    assert_eq!((u.memdays, u.q, u.worse_replacements), (2, 4, 1));

    let out_file = dir.path().join("series.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .arg("convert")
        .arg("--from")
        .arg(dir.path())
        .arg("--out")
        .arg(&out_file)
        .output()
        .expect("run memsim");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&out_file).expect("written");
    assert_eq!(text.lines().count(), 4);
    assert!(text.contains(r#""status":"failed""#));
    assert!(text.contains(r#"["ia","20200101000000""#));
}
