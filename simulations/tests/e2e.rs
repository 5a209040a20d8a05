//! `memsim e2e`: the server, run in-process on a simulated clock against fake archives serving a
//! SYNTHETIC series day by day, serves exactly what `replay` computes for the same policy.

use simulations::adaptive::Setting;
use simulations::e2e::{run, run_with};
use simulations::generate::{live_groups, Preset};
use simulations::replay::{policy, replay_days, Measures};
use simulations::series::LiveDay;
use std::process::Command;
use tmproxy_core::policy::{Match, PolicyKind};

fn groups(preset: &str, seed: u64) -> Vec<Vec<LiveDay>> {
    let p = Preset::by_name(preset).expect("preset");
    live_groups(p, seed)
        .collect::<Result<_, _>>()
        .expect("a generated series resolves")
}

fn replayed(g: &[Vec<LiveDay>], kind: PolicyKind, ttl: Option<i64>) -> Measures {
    replay_days(g.iter().flatten(), &policy(kind, Match::Loose, ttl)).measures
}

#[test]
fn the_server_serves_what_replay_computes_on_small() {
    let g = groups("small", 1);
    for (kind, ttl) in [
        (PolicyKind::Conditional, Some(5)),
        (PolicyKind::Merge, Some(5)),
        (PolicyKind::Unconditional, Some(0)),
    ] {
        let want = replayed(&g, kind, ttl);
        let got = run(g.clone(), kind, ttl, None).expect("e2e run");
        assert_eq!(got.measures, want, "{kind} TTL {ttl:?}");
        assert_eq!((got.uri_rs, got.requests), (200, 200 * 30));
    }
}

#[test]
fn the_server_serves_what_replay_computes_with_adaptive_ttls() {
    // Each entry's own TTL, chosen by the server from its history and by replay from the same
    // fetches: equal measures mean equal decisions, day by day. A budget small enough that
    // TTLs differ between URI-Rs and refetches happen within the 30 days.
    let g = groups("small", 1);
    for (kind, budget, min_days) in [
        (PolicyKind::Conditional, 0.5, 0.0),
        (PolicyKind::Merge, 2.0, 1.0),
    ] {
        let setting = Setting {
            kind,
            budget,
            min_days,
            max_days: 20.0,
        };
        let want = replay_days(g.iter().flatten(), &setting.policy()).measures;
        let got = run_with(g.clone(), kind, None, Some(setting.rule()), None).expect("e2e run");
        assert_eq!(got.measures, want, "{kind} {}", setting.label());
        // Neither a fixed TTL's measures nor asking every day: the TTLs really vary.
        assert!(want.q > 200 && want.q < 200 * 30, "{want:?}");
        assert_ne!(want, replayed(&g, kind, Some(15)));
    }
}

#[test]
fn the_comparison_tells_policies_apart() {
    // The same server run matches its own policy's replay and not another's: e2e == replay is a
    // check that can fail.
    let g = groups("small", 3);
    let got = run(g.clone(), PolicyKind::Conditional, Some(1), None).expect("e2e run");
    assert_eq!(got.measures, replayed(&g, PolicyKind::Conditional, Some(1)));
    assert_ne!(
        got.measures,
        replayed(&g, PolicyKind::Unconditional, Some(1))
    );
    assert_ne!(got.measures, replayed(&g, PolicyKind::Conditional, Some(2)));
}

#[test]
fn memsim_e2e_prints_both_and_exits_0_when_equal() {
    let out = Command::new(env!("CARGO_BIN_EXE_memsim"))
        .args([
            "e2e", "--preset", "tiny", "--seed", "2", "--policy", "merge", "--ttl", "2", "--json",
        ])
        .output()
        .expect("run memsim");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["equal"], true);
    assert_eq!(v["e2e"], v["replay"]);
    assert!(v["e2e"]["q"].as_u64().unwrap_or(0) > 20, "{v}");
}
