//! Replays the fuzz seed corpus (`fuzz/corpus/<target>/`) and every committed crash reproducer
//! (`fuzz/regressions/<target>/`) through the same property checks the fuzz targets run, so CI
//! exercises them on stable Rust without cargo-fuzz.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tmproxy_testkit::invariants;

type Check = fn(&[u8]);

const TARGETS: [(&str, Check); 4] = [
    ("link_format", invariants::link_format),
    ("cdx_line", invariants::cdx_line),
    ("surt", invariants::surt),
    ("datetime", invariants::datetime),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files directly under `dir`, sorted; none if it does not exist (the callers require
/// how many there must be, so a moved folder cannot pass unnoticed).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Runs `check` on each file and returns the ones whose check panicked, with the message, so
/// that one failure does not hide the others.
fn replay(paths: &[PathBuf], check: Check) -> Vec<String> {
    let mut failures = Vec::new();
    for path in paths {
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{}: unreadable: {e}", path.display()));
                continue;
            }
        };
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{}: {msg}", path.display()));
        }
    }
    failures
}

#[test]
fn every_seed_and_reproducer_passes_its_target_checks() {
    let mut failures = Vec::new();
    for (target, check) in TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(target));
        // A moved or renamed directory must not turn this test into a silent pass.
        assert!(
            seeds.len() >= 5,
            "only {} seeds for {target} in fuzz/corpus/{target}",
            seeds.len()
        );
        failures.extend(replay(&seeds, check));
        let reproducers = files(&fuzz_dir().join("regressions").join(target));
        // Every target keeps its reproducers (and hostile inputs it must survive) in
        // fuzz/regressions/<target>/: a missing or renamed folder is a failure, not zero files.
        assert!(
            !reproducers.is_empty(),
            "no reproducers for {target} in fuzz/regressions/{target}"
        );
        failures.extend(replay(&reproducers, check));
    }
    assert!(failures.is_empty(), "failed:\n{}", failures.join("\n"));
}

#[test]
fn a_failing_check_is_reported_with_its_file() {
    let seeds = files(&fuzz_dir().join("corpus").join("datetime"));
    let failures = replay(&seeds, |data| {
        assert!(!data.starts_with(b"Sun, 06 Nov 1994"), "planted failure");
    });
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("planted failure"), "{failures:?}");
}
