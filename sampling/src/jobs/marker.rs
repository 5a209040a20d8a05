//! The crash marker of a running job: `<job>/running.marker`, written when a run starts (with the
//! work checkpointed so far), its line and stage updated every second, removed when the run ends
//! in any way or the server stops cleanly. Found at the next start, it means the process died
//! while running the job.

use crate::engine::Progress;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// What `running.marker` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Marker {
    /// [`work_done`] when the run started.
    pub(super) work_at_start: u64,
    pub(super) line: u64,
    pub(super) stage: String,
}

/// How often the marker's line and stage are brought up to date.
pub(super) const MARK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

pub(super) fn marker_path(job_dir: &Path) -> PathBuf {
    job_dir.join("running.marker")
}

/// The work a run has checkpointed: the bytes of its first-capture answers and of its TimeMaps'
/// index (a line appended for each TimeMap written, whether to a pack or, by earlier versions,
/// to a file of its own). A run that died after adding to either made progress.
pub(super) fn work_done(job_dir: &Path) -> u64 {
    let out = job_dir.join("out");
    let size = |p: &str| std::fs::metadata(out.join(p)).map_or(0, |m| m.len());
    size("first_captures.ndjson") + size("timemaps/index.ndjson")
}

/// Replaces the marker (renamed into place, not synced: a killed process loses nothing the
/// kernel has, and a power cut at worst forgets one crash).
pub(super) fn write_marker(job_dir: &Path, marker: &Marker) {
    let path = marker_path(job_dir);
    let written = serde_json::to_vec(marker)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            tmproxy_disk::write_atomically(&path, &bytes, tmproxy_disk::Durability::Unsynced)
                .map_err(|e| e.to_string())
        });
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the job's running marker");
    }
}

pub(super) fn update_marker(job_dir: &Path, mut marker: Marker, progress: &Progress) -> Marker {
    marker.line = progress.lines.load(Ordering::Relaxed);
    marker.stage = progress.stage.lock().map(|s| s.clone()).unwrap_or_default();
    write_marker(job_dir, &marker);
    marker
}

pub(super) fn clear_marker(job_dir: &Path) {
    let _ = std::fs::remove_file(marker_path(job_dir));
}
