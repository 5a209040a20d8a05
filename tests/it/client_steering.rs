//! What one client asks never decides what the shared cache holds for the others: a 4xx to a
//! hostile URI-R never puts an archive to sleep, a client's short deadline is never stored, and
//! one client's misses cannot teach routing to skip an archive.

use crate::support::{client, config_for, get_json, outcome, start_proxy};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

fn held() -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000", "20050101000000"]))
}

/// Five (and more) URI-Rs the archive refuses with a 400 used to make it dormant for five
/// minutes, so entries stored meanwhile lacked it. A 4xx is an answer to what a client asked,
/// not a fault of the archive: it is still asked, and is in the next entry.
#[tokio::test]
async fn client_errors_never_make_an_archive_dormant() {
    let good = SimulatedArchive::start(held()).await.expect("archive");
    let dorm = SimulatedArchive::start(Behaviour::Status(400, "bad request".into()))
        .await
        .expect("archive");
    let config = config_for(&[("good", &good), ("dorm", &dorm)]);
    assert_eq!(config.upstream.failures_before_dormant, 5);
    let proxy = start_proxy(config).await;
    let hostile = [
        "..%2f..%2f..%2fx",
        "%zz",
        "a%zz",
        "..%2fy",
        "%zzz",
        "b%zz",
        "c%zz",
    ];
    for path in hostile {
        let (status, json) = get_json(&format!(
            "{}/timemap/json/http://dorm1.com/{path}",
            proxy.base
        ))
        .await;
        assert_eq!(status, 200, "{path}: {json}");
        let dorm = outcome(&json, "dorm");
        assert_eq!(dorm["http_status"], 400, "{path}: {dorm}");
        assert!(!dorm.to_string().contains("dormant"), "{path}: {dorm}");
    }
    let asked = dorm.requests();
    dorm.set_behaviour(held());
    let (status, json) = get_json(&format!(
        "{}/timemap/json/http://dorm1.com/real",
        proxy.base
    ))
    .await;
    assert_eq!(status, 200, "{json}");
    assert!(dorm.requests() > asked, "the archive is still asked");
    assert_eq!(outcome(&json, "dorm")["status"], "ok", "{json}");
    // And the stored entry holds it.
    let resp = client()
        .get(format!("{}/timemap/json/http://dorm1.com/real", proxy.base))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers()["x-cache"], "HIT");
    let json: serde_json::Value =
        serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(outcome(&json, "dorm")["mementos"], 2, "{json}");
}

/// A 5xx still is the archive's fault: five of them make it dormant.
#[tokio::test]
async fn server_errors_still_make_an_archive_dormant() {
    let good = SimulatedArchive::start(held()).await.expect("archive");
    let broken = SimulatedArchive::start(Behaviour::Status(503, "down".into()))
        .await
        .expect("archive");
    let proxy = start_proxy(config_for(&[("good", &good), ("broken", &broken)])).await;
    for i in 0..5 {
        let (status, _) =
            get_json(&format!("{}/timemap/json/http://down.com/{i}", proxy.base)).await;
        assert_eq!(status, 200);
    }
    let asked = broken.requests();
    let (_, json) = get_json(&format!("{}/timemap/json/http://down.com/next", proxy.base)).await;
    assert_eq!(broken.requests(), asked, "dormant: not asked");
    let detail = outcome(&json, "broken")["detail"].to_string();
    assert!(detail.contains("dormant"), "{detail}");
}
