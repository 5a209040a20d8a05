//! The observation log: one JSON line per fan-out (the core's `ObservationLine`), the raw
//! material `simulations/` replays.

use crate::timemap::answer::Fetch;
use crate::timemap::datetime::{format_14digit, format_rfc3339};
use std::path::{Path, PathBuf};
use tmproxy_core::observation_log::{ArchiveLine, ObservationLine};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

/// An append-only file; one writer at a time so lines never interleave.
pub struct ObservationLog {
    path: PathBuf,
    file: Mutex<tokio::fs::File>,
}

impl ObservationLog {
    pub async fn open(path: &Path) -> std::io::Result<ObservationLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await?;
        }
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await?;
        Ok(ObservationLog {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Appends the fan-out's line. A failed write is logged, never fatal to the request.
    pub async fn append(&self, fetch: &Fetch) {
        let line = ObservationLine {
            uri_r: fetch.uri_r.as_str().into(),
            at: format_rfc3339(fetch.at).into(),
            archives: fetch
                .archives
                .iter()
                .map(|c| ArchiveLine {
                    id: c.archive.as_str().into(),
                    status: c.answer.status.as_str().into(),
                    mementos: c.mementos.len(),
                })
                .collect(),
            // Archive by archive, each oldest first (each memento once, as the fan-out keeps them).
            mementos: fetch
                .archives
                .iter()
                .flat_map(|c| {
                    c.mementos.iter().map(|m| {
                        (
                            c.archive.as_str().into(),
                            format_14digit(m.datetime).into(),
                            (&*m.uri_m).into(),
                        )
                    })
                })
                .collect(),
        };
        let mut bytes = match serde_json::to_vec(&line) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "cannot encode an observation");
                return;
            }
        };
        bytes.push(b'\n');
        let mut file = self.file.lock().await;
        // tokio's File hands writes to a background thread: flush so the line is in the file
        // once the request that made it has been answered.
        if let Err(e) = file.write_all(&bytes).await {
            tracing::error!(path = %self.path.display(), error = %e, "cannot append to the observation log");
        } else if let Err(e) = file.flush().await {
            tracing::error!(path = %self.path.display(), error = %e, "cannot flush the observation log");
        }
    }
}
