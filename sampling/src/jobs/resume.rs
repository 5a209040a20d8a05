//! Whether a job interrupted by a stop may run again: not when the process died twice while
//! running it with no work checkpointed in between (a crash loop: the input or the job takes the
//! server down each time), nor when its input or CDX API is no longer inside the boundary it was
//! admitted in (`[sampling] input_dir`, `allowed_urls`: a symlink swapped in while the server was
//! down, a config narrowed).
//!
//! The marker it reads is `marker.rs`'s.

use super::marker::{clear_marker, marker_path, work_done, Marker};
use super::record::{JobRecord, JobState};
use super::registry::Jobs;

/// The crash count after a death found at start: 1 when the dead run had checkpointed work since
/// it started (it was not looping), else one more than before.
pub(super) fn crashes_after(previous: u32, work_at_start: u64, work_now: u64) -> u32 {
    if work_now > work_at_start {
        1
    } else {
        previous.saturating_add(1)
    }
}

impl Jobs {
    /// Ok when job `id`, interrupted, may run again; else why not (it is then failed with that
    /// reason, and never read).
    pub(super) fn may_resume(&self, id: &str) -> Result<(), String> {
        let dir = self.job_dir(id);
        let found = std::fs::read_to_string(marker_path(&dir)).ok();
        if let Some(text) = found {
            // A marker torn or unreadable still says the process died: count it, place unknown.
            let marker: Marker = serde_json::from_str(&text).unwrap_or_default();
            clear_marker(&dir);
            let crashes = self.with_record(id, |r| {
                r.crashes = crashes_after(r.crashes, marker.work_at_start, work_done(&dir));
                r.crashes
            });
            if crashes.unwrap_or(0) >= 2 {
                return Err(format!(
                    "crashed the server twice while at line {} / stage {}; not resumed again",
                    marker.line,
                    if marker.stage.is_empty() {
                        "(not started)"
                    } else {
                        &marker.stage
                    }
                ));
            }
        }
        let spec = self
            .jobs
            .lock()
            .ok()
            .and_then(|g| g.get(id).map(|j| j.spec.clone()))
            .ok_or("no such job")?;
        // The boundary again, as at submission: what it admitted must still be what it admits.
        let again = self
            .admit(spec.clone())
            .map_err(|e| format!("not resumed: {e} (checked again at restart)"))?;
        if again.input != spec.input || again.cdx_api != spec.cdx_api {
            return Err(format!(
                "not resumed: input {} now resolves to {} (checked again at restart)",
                spec.input, again.input
            ));
        }
        Ok(())
    }

    /// Runs `f` on job `id`'s record and saves it.
    fn with_record<T>(&self, id: &str, f: impl FnOnce(&mut JobRecord) -> T) -> Option<T> {
        let (out, record) = {
            let mut g = self.jobs.lock().ok()?;
            let job = g.get_mut(id)?;
            (f(&mut job.record), job.record.clone())
        };
        if let Err(e) = self.save(&record) {
            tracing::error!(job = %id, error = %e, "cannot save the job's state");
        }
        Some(out)
    }

    /// Resumes the interrupted jobs that may run again; fails the others with the reason.
    pub(super) fn resume_all(self: &std::sync::Arc<Self>, ids: Vec<String>) {
        for id in ids {
            match self.may_resume(&id) {
                Ok(()) => {
                    tracing::info!(job = %id, "resuming sampling job");
                    self.clone().start(&id);
                }
                Err(reason) => {
                    tracing::warn!(job = %id, %reason, "sampling job not resumed");
                    self.set_state(&id, JobState::Failed, Some(reason));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deaths_without_progress_in_between_add_up() {
        assert_eq!(crashes_after(0, 100, 100), 1);
        assert_eq!(crashes_after(1, 100, 100), 2, "died again where it was");
        assert_eq!(crashes_after(1, 100, 250), 1, "it had moved on");
        assert_eq!(crashes_after(u32::MAX, 0, 0), u32::MAX);
    }
}
