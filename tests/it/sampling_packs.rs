//! A done job's TimeMaps over `GET /admin/sampling/jobs/{id}/timemaps/{name}` on the real app:
//! stored compressed in packs, each is served by the name it always had as its plain NDJSON
//! lines; a TimeMap of the layout with one file per TimeMap still is; and a hostile index (a
//! span outside its pack, a frame cut short, a pack name that is a path) is a 500 naming the
//! damaged TimeMap, never a panic or a byte from outside the pack, the other TimeMaps still
//! served.

use crate::sampling_files::{fetch, plain_timemap, DoneJob};
use serde_json::{json, Value};
use std::path::Path;

const SECRET: &str = "SECRET-OUTSIDE-THE-PACK";

fn index_lines(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("timemaps/index.ndjson"))
        .expect("index")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an index line"))
        .collect()
}

fn write_index(out: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(out.join("timemaps/index.ndjson"), text).expect("index");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_timemaps_are_served_plain_by_name_and_a_hostile_index_is_a_clear_error() {
    let job = DoneJob::run(json!({})).await;
    let (dir, base, id, out) = (&job.dir, &job.base, &job.id, &job.out);
    let jobs = format!("{base}/admin/sampling/jobs/{id}/timemaps");

    // No file per TimeMap: packs, the index and the hydration summary only.
    let names: Vec<String> = std::fs::read_dir(out.join("timemaps"))
        .expect("timemaps/")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.ends_with(".ndjson") || n == "index.ndjson"),
        "{names:?}"
    );
    let lines = index_lines(out);
    let written: Vec<&Value> = lines.iter().filter(|v| v["pack"].is_string()).collect();
    assert!(written.len() >= 3, "{lines:?}");
    for v in &written {
        let name = v["file"].as_str().expect("a name");
        let (status, ct, body) = fetch(&format!("{jobs}/{name}")).await;
        assert_eq!(
            (status, ct.as_str()),
            (200, "application/x-ndjson"),
            "{name}: {body}"
        );
        assert_eq!(body, plain_timemap(out, name), "{name}");
        let rows = body.lines().count();
        assert_eq!(Some(rows as u64), v["mementos"].as_u64(), "{name}");
        assert!(body.contains("\"timestamp\""), "{name}: {body}");
    }

    // A TimeMap of an earlier version's layout: its own file, a line with no pack.
    let name0 = written[0]["file"].as_str().expect("a name").to_string();
    let plain0 = plain_timemap(out, &name0);
    std::fs::write(out.join("timemaps").join(&name0), &plain0).expect("its own file");
    let mut old = lines.clone();
    for v in old.iter_mut().filter(|v| v["file"] == name0.as_str()) {
        for k in ["pack", "offset", "length"] {
            v.as_object_mut().expect("an object").remove(k);
        }
    }
    write_index(out, &old);
    assert_eq!(fetch(&format!("{jobs}/{name0}")).await.2, plain0);
    std::fs::remove_file(out.join("timemaps").join(&name0)).expect("rm");
    write_index(out, &lines);

    // Hostile index lines for the second TimeMap.
    std::fs::write(out.join("timemaps/secret.zst"), SECRET).expect("write");
    std::fs::write(dir.path().join("pack-0001.zst"), SECRET).expect("write");
    let name1 = written[1]["file"].as_str().expect("a name").to_string();
    let pack = written[1]["pack"].as_str().expect("a pack").to_string();
    let size = std::fs::metadata(out.join("timemaps").join(&pack))
        .expect("pack")
        .len();
    let cases: Vec<(&str, Value)> = vec![
        ("past the end", json!({"offset": size - 3})),
        (
            "overflowing",
            json!({"offset": u64::MAX, "length": u64::MAX}),
        ),
        (
            "cut short",
            json!({"length": written[1]["length"].as_u64().expect("n") - 1}),
        ),
        ("a path", json!({"pack": "../../../pack-0001.zst"})),
        ("not a pack", json!({"pack": "secret.zst"})),
        ("absent", json!({"pack": "pack-0777.zst"})),
    ];
    for (what, change) in cases {
        let mut bad = lines.clone();
        for v in bad.iter_mut().filter(|v| v["file"] == name1.as_str()) {
            for (k, x) in change.as_object().expect("an object") {
                v[k] = x.clone();
            }
        }
        write_index(out, &bad);
        let (status, _, body) = fetch(&format!("{jobs}/{name1}")).await;
        assert_eq!(status, 500, "{what}: {body}");
        assert!(
            body.contains(&format!("timemaps/{name1} is damaged")),
            "{what}: {body}"
        );
        assert!(!body.contains(SECRET), "{what}");
        let (status, _, body) = fetch(&format!("{jobs}/{name0}")).await;
        assert_eq!(
            (status, body),
            (200, plain0.clone()),
            "{what}: the others still served"
        );
    }
    job.stop().await;
}
