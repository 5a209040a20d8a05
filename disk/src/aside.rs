//! Damaged things moved aside rather than deleted or read: renamed beside where they were, so
//! the service starts afresh and an operator can still look at (or recover from) what was
//! there. The names are the ones the README gives operators: a cache store directory goes to
//! `<path>.corrupt-<UTC timestamp>` ([`stamped`]), the routing profiles to
//! `profiles.bin.damaged` (named by its caller).

use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

/// `<path>.<label>-<UTC timestamp>`, or, when that is taken (two in one second), the first free
/// `…-2`, `…-3`: an earlier one is never overwritten.
pub fn stamped(path: &Path, label: &str, now: DateTime<Utc>) -> PathBuf {
    let base = path.as_os_str().to_string_lossy();
    let base = base.trim_end_matches('/');
    let stamp = now.format("%Y%m%dT%H%M%SZ");
    let first = PathBuf::from(format!("{base}.{label}-{stamp}"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| PathBuf::from(format!("{base}.{label}-{stamp}-{n}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Renames `path` (a file or a directory) to `aside`, and syncs the directory holding them, so
/// the damaged one is not back in its place after a power cut.
pub fn move_aside(path: &Path, aside: &Path) -> std::io::Result<()> {
    std::fs::rename(path, aside)?;
    crate::atomic::sync_dir(aside);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn names_keep_the_documented_shape_and_never_overwrite() {
        let dir = tempfile::tempdir().expect("dir");
        let now = Utc
            .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .single()
            .expect("time");
        let store = dir.path().join("cache");
        let want = |tail: &str| PathBuf::from(format!("{}{tail}", store.display()));
        let first = stamped(&store, "corrupt", now);
        assert_eq!(first, want(".corrupt-20260102T030405Z"));
        std::fs::create_dir(&first).expect("taken");
        assert_eq!(
            stamped(&store, "corrupt", now),
            want(".corrupt-20260102T030405Z-2")
        );
        let slash = PathBuf::from(format!("{}/", store.display()));
        assert_eq!(
            stamped(&slash, "corrupt", now),
            want(".corrupt-20260102T030405Z-2")
        );
    }

    #[test]
    fn a_file_moved_aside_is_kept_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("profiles.bin");
        std::fs::write(&path, b"damaged").expect("write");
        let aside = dir.path().join("profiles.bin.damaged");
        move_aside(&path, &aside).expect("moved");
        assert!(!path.exists());
        assert_eq!(std::fs::read(&aside).expect("read"), b"damaged");
    }
}
