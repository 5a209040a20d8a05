//! What the jobs API shows of a job: its state, counters, per-stage progress, rate and ETA.

use super::{JobState, Jobs};
use std::sync::atomic::Ordering;

impl Jobs {
    /// Every job's summary.
    pub fn list(&self) -> Vec<serde_json::Value> {
        let ids: Vec<String> = self
            .jobs
            .lock()
            .map(|g| g.keys().cloned().collect())
            .unwrap_or_default();
        ids.iter().filter_map(|id| self.status(id)).collect()
    }

    /// One job: state, stage, counters, per-stage progress, the CDX rate and the ETA
    /// (`engine::progress`).
    pub fn status(&self, id: &str) -> Option<serde_json::Value> {
        let g = self.jobs.lock().ok()?;
        let job = g.get(id)?;
        let p = &job.progress;
        let view = p.view(job.record.state == JobState::Running);
        let funnel = std::fs::read_to_string(self.job_dir(id).join("out/funnel.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        // The job's own (caps) and its run's (an adopted checkpoint, shortfalls), once each.
        let mut warnings = job.record.warnings.clone();
        for w in p.warnings() {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        Some(serde_json::json!({
            "id": id,
            "state": job.record.state,
            "error": job.record.error,
            "created_at": job.record.created_at,
            "finished_at": job.record.finished_at,
            "warnings": warnings,
            "stage": view.stage,
            "counters": {
                "index_lines": p.lines.load(Ordering::Relaxed),
                "candidates": p.candidates.load(Ordering::Relaxed),
                "cdx_answers": p.cdx_answers.load(Ordering::Relaxed),
                "resumed_answers": p.resumed_answers.load(Ordering::Relaxed),
                "sampled": p.sampled.load(Ordering::Relaxed),
                "timemaps": p.timemaps.load(Ordering::Relaxed),
            },
            // First-capture answers fetched from the CDX server per second over the last
            // minute (reused ones never count); 0 when none was.
            "cdx_rate_per_s": view.cdx_rate_per_s.unwrap_or(0.0),
            "eta_seconds": view.eta_seconds,
            "eta_basis": view.eta_basis,
            "stages": view.stages,
            "input": {
                "read_bytes": p.input_read.load(Ordering::Relaxed),
                "size_bytes": p.input_size.load(Ordering::Relaxed),
            },
            "funnel": funnel,
            "feed": self.feeds.lock().ok().and_then(|f| f.get(id).cloned()),
        }))
    }
}
