//! A job's state as `state.json` keeps it, and the atomic write every job file goes through.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// A job's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    /// The state as `state.json` and the API spell it (`queued`, `done`, …).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// What `state.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub state: JobState,
    #[serde(default)]
    pub error: Option<String>,
    pub created_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Deaths of the process while running this job with no work checkpointed in between (two
    /// fail the job instead of resuming it: see `resume`).
    #[serde(default)]
    pub crashes: u32,
    /// Where the job does not do what its spec asked: concurrency or rate capped by
    /// `[sampling]`, targets its candidate pool could not meet (the engine's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Writes, syncs, then renames: a kill or a power cut leaves the old file or the new one, never
/// half of one. (A job's state changes a few times in its life, so the fsyncs cost nothing.)
pub(super) fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    tmproxy_disk::write_atomically(path, text.as_bytes(), tmproxy_disk::Durability::Synced)
        .map_err(|e| e.to_string())
}
