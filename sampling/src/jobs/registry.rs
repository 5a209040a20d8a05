//! The jobs of one server: opened from the data directory, submitted, started, cancelled, stopped
//! at a checkpoint, and their output opened. Resuming, feeding, admitting and the status views
//! are further `impl Jobs` blocks in the files beside this one.

use super::bounds::Bounds;
use super::error::JobError;
use super::feed_state::{Feed, Fetcher};
use super::marker;
use super::record::{write_json_atomically, JobRecord, JobState};
use crate::engine::{progress, run_with, Progress, Spec};
use crate::job_files::{self, OpenError, Served};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tmproxy_core::clock::Clock;

pub(super) struct Job {
    pub(super) record: JobRecord,
    pub(super) spec: Spec,
    /// As the run counts it, or as `out/progress.json` left it (a job the server has not run
    /// since it started: finished, or about to resume).
    pub(super) progress: Arc<Progress>,
}

/// Why job `id`'s `file` could not be opened, as the API says it.
pub(super) fn refusal(id: &str, file: &Served, state: JobState, e: OpenError) -> JobError {
    match e {
        OpenError::Missing => JobError::FileMissing {
            id: id.to_string(),
            file: file.shown(),
            state,
        },
        OpenError::Refused(why) => {
            tracing::warn!(job = %id, %why, "job file refused");
            JobError::FileRefused(why)
        }
        OpenError::Io(e) => JobError::Io(e),
    }
}

/// Job `dir`'s progress as its last run saved it (none saved: nothing yet). `starting`: a run
/// is about to resume it, so its stage is "" (not started) until the run moves on, while its
/// stages show the work done so far.
fn saved_progress(dir: &Path, starting: bool) -> Arc<Progress> {
    let saved = Progress::read_saved(&dir.join("out")).map(|s| {
        if !starting {
            return s;
        }
        // The walk's own counters (and the crash marker's line) start again with the run.
        progress::Snapshot {
            stage: String::new(),
            lines: 0,
            candidates: 0,
            cdx_answers: 0,
            sampled: 0,
            timemaps: 0,
            ..s
        }
    });
    Arc::new(
        saved
            .map(|s| Progress::from_snapshot(&s))
            .unwrap_or_default(),
    )
}

/// The jobs of one server.
pub struct Jobs {
    dir: PathBuf,
    pub(super) limits: Bounds,
    pub(super) jobs: Mutex<BTreeMap<String, Job>>,
    next: Mutex<u64>,
    /// Set by [`Jobs::stop_all`]: running jobs stop at their next checkpoint and stay
    /// `running` on disk, so the next start resumes them.
    pub(super) stopping: std::sync::atomic::AtomicBool,
    pub(super) fetcher: Option<Fetcher>,
    pub(super) clock: Arc<dyn Clock>,
    /// Requests per second to the aggregator while feeding (the `[sampling] rate_limit`).
    pub(super) feed_rate: f64,
    pub(super) feeds: Mutex<BTreeMap<String, Feed>>,
    /// Jobs whose feed task is running: a second feed of one is refused (409), not started.
    pub(super) feeding: Mutex<std::collections::HashSet<String>>,
    /// Whether the server writes an observation log (`observe` needs one).
    pub observing: bool,
    /// The job and feed tasks, so a stopping server can wait for them to reach a checkpoint
    /// (finished ones are pruned as new ones start).
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Jobs {
    /// Opens the jobs directory and restarts the jobs a stop interrupted (queued or running).
    pub fn open(
        dir: &Path,
        limits: Bounds,
        fetcher: Option<Fetcher>,
        clock: Arc<dyn Clock>,
        observing: bool,
    ) -> Result<Arc<Jobs>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let jobs = Arc::new(Jobs {
            dir: dir.to_path_buf(),
            jobs: Mutex::new(BTreeMap::new()),
            next: Mutex::new(0),
            stopping: std::sync::atomic::AtomicBool::new(false),
            fetcher,
            clock,
            feed_rate: limits.rate_limit,
            observing,
            feeds: Mutex::new(BTreeMap::new()),
            feeding: Mutex::new(std::collections::HashSet::new()),
            tasks: Mutex::new(Vec::new()),
            limits,
        });
        let mut resume = Vec::new();
        let mut feeds = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let (Ok(spec), Ok(state)) = (
                std::fs::read_to_string(path.join("spec.json")),
                std::fs::read_to_string(path.join("state.json")),
            ) else {
                continue;
            };
            let (Ok(spec), Ok(record)) = (
                serde_json::from_str::<Spec>(&spec),
                serde_json::from_str::<JobRecord>(&state),
            ) else {
                tracing::warn!(path = %path.display(), "unreadable sampling job left alone");
                continue;
            };
            if matches!(record.state, JobState::Queued | JobState::Running) {
                resume.push(record.id.clone());
            }
            if let Some(feed) = std::fs::read_to_string(path.join("feed.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Feed>(&t).ok())
            {
                feeds.push((record.id.clone(), feed));
            }
            if let Ok(mut g) = jobs.jobs.lock() {
                g.insert(
                    record.id.clone(),
                    Job {
                        record,
                        spec,
                        progress: saved_progress(&path, false),
                    },
                );
            }
        }
        jobs.resume_all(resume);
        for (id, feed) in feeds {
            tracing::info!(job = %id, "resuming the feed of sampling job");
            if jobs.claim_feed(&id) {
                jobs.clone().spawn_feed(id, feed, true);
            }
        }
        Ok(jobs)
    }

    pub(super) fn job_dir(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Stores an admitted spec and starts it; returns the job id.
    pub fn submit(self: &Arc<Self>, mut spec: Spec, now: &str) -> Result<String, String> {
        let warnings = self.cap(&mut spec);
        let id = {
            let mut n = self
                .next
                .lock()
                .map_err(|_| "jobs lock poisoned".to_string())?;
            // The counter restarts with the server and a simulated clock stands still: skip ids
            // a previous run already used, never overwrite a job.
            let stamp: String = now.chars().filter(char::is_ascii_digit).collect();
            loop {
                *n += 1;
                let id = format!("{stamp}-{}", *n);
                if !self.job_dir(&id).exists() {
                    break id;
                }
            }
        };
        let dir = self.job_dir(&id);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("spec.json"), text).map_err(|e| e.to_string())?;
        let record = JobRecord {
            id: id.clone(),
            state: JobState::Queued,
            error: None,
            created_at: now.to_string(),
            finished_at: None,
            crashes: 0,
            warnings,
        };
        for w in &record.warnings {
            tracing::warn!(job = %id, "{w}");
        }
        self.save(&record)?;
        if let Ok(mut g) = self.jobs.lock() {
            g.insert(
                id.clone(),
                Job {
                    record,
                    spec,
                    progress: Arc::new(Progress::default()),
                },
            );
        }
        self.clone().start(&id);
        Ok(id)
    }

    pub(super) fn save(&self, record: &JobRecord) -> Result<(), String> {
        write_json_atomically(&self.job_dir(&record.id).join("state.json"), record)
    }

    pub(super) fn set_state(&self, id: &str, state: JobState, error: Option<String>) {
        let record = {
            let Ok(mut g) = self.jobs.lock() else { return };
            let Some(job) = g.get_mut(id) else { return };
            // A cancelled job stays cancelled whatever its task says afterwards.
            if job.record.state == JobState::Cancelled && state != JobState::Cancelled {
                return;
            }
            job.record.state = state;
            job.record.error = error;
            if matches!(
                state,
                JobState::Done | JobState::Failed | JobState::Cancelled
            ) {
                // The server's clock, simulated or not, like every other time a job records.
                job.record.finished_at = Some(tmproxy_core::timemap::datetime::format_rfc3339(
                    self.clock.now(),
                ));
            }
            job.record.clone()
        };
        if let Err(e) = self.save(&record) {
            tracing::error!(job = %id, error = %e, "cannot save the job's state");
        }
    }

    /// Adds the engine's warnings to the job's (saved with its next state).
    fn warn(&self, id: &str, warnings: Vec<String>) {
        if let Ok(mut g) = self.jobs.lock() {
            if let Some(job) = g.get_mut(id) {
                for w in warnings {
                    tracing::warn!(job = %id, "{w}");
                    if !job.record.warnings.contains(&w) {
                        job.record.warnings.push(w);
                    }
                }
            }
        }
    }

    pub(super) fn start(self: Arc<Self>, id: &str) {
        let dir = self.job_dir(id);
        let Some((spec, progress)) = self.jobs.lock().ok().and_then(|mut g| {
            let job = g.get_mut(id)?;
            // A resumed job shows where it was until its run has counted past it.
            job.progress = saved_progress(&dir, true);
            Some((job.spec.clone(), job.progress.clone()))
        }) else {
            return;
        };
        let id = id.to_string();
        let dir = self.job_dir(&id);
        let out = dir.join("out");
        self.set_state(&id, JobState::Running, None);
        let mut marker = marker::Marker {
            work_at_start: marker::work_done(&dir),
            ..marker::Marker::default()
        };
        marker::write_marker(&dir, &marker);
        let jobs = self.clone();
        jobs.track(tokio::spawn(async move {
            let limits = self.limits.limits;
            let run = run_with(&spec, &out, progress.clone(), limits);
            tokio::pin!(run);
            let mut tick = tokio::time::interval(marker::MARK_EVERY);
            let result = loop {
                tokio::select! {
                    r = &mut run => break r,
                    // Not once the server stops: its markers are cleared, a late tick must
                    // not put one back.
                    _ = tick.tick(), if !self.stopping.load(Ordering::Relaxed) => {
                        marker = marker::update_marker(&dir, marker, &progress)
                    }
                }
            };
            // The run ended by itself (done, failed, cancelled, stopped at a checkpoint): not a
            // death of the process.
            marker::clear_marker(&dir);
            match result {
                // Stopped by a shutdown: stays `running` on disk, to be resumed.
                Ok(o) if o.cancelled && self.stopping.load(Ordering::Relaxed) => {}
                Ok(o) if o.cancelled => self.set_state(&id, JobState::Cancelled, None),
                Ok(o) => {
                    self.warn(&id, o.warnings);
                    self.set_state(&id, JobState::Done, None)
                }
                Err(e) => self.set_state(&id, JobState::Failed, Some(e)),
            }
        }));
    }

    pub(super) fn track(&self, task: tokio::task::JoinHandle<()>) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.retain(|t| !t.is_finished());
            tasks.push(task);
        }
    }

    /// The server is stopping: every job stops at its next checkpoint, resumable.
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Ok(g) = self.jobs.lock() {
            for job in g.values() {
                job.progress.cancel.store(true, Ordering::Relaxed);
            }
        }
    }

    /// [`Jobs::stop_all`], then waits at most `within` for every job and feed task to return:
    /// a job at its checkpoint, still `running` on disk. False when some were still going; they
    /// lose nothing when dropped (each CDX answer is in the checkpoint as soon as it arrives,
    /// state files are replaced by rename), only the answers they were still waiting for.
    pub async fn stop_all_and_wait(&self, within: std::time::Duration) -> bool {
        self.stop_all();
        let tasks = self
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        let settled = tokio::time::timeout(within, futures::future::join_all(tasks))
            .await
            .is_ok();
        // A clean stop, even of a job still waiting on an answer: not a crash at the next start.
        let ids: Vec<String> = self
            .jobs
            .lock()
            .map(|g| g.keys().cloned().collect())
            .unwrap_or_default();
        for id in ids {
            marker::clear_marker(&self.job_dir(&id));
        }
        settled
    }

    /// Cancels a job (its checkpoint stays). False when there is no such job.
    pub fn cancel(&self, id: &str) -> bool {
        let progress = self.jobs.lock().ok().and_then(|g| {
            let job = g.get(id)?;
            Some((job.progress.clone(), job.record.state))
        });
        let Some((progress, state)) = progress else {
            return false;
        };
        progress.cancel.store(true, Ordering::Relaxed);
        if matches!(state, JobState::Queued | JobState::Running) {
            self.set_state(id, JobState::Cancelled, None);
        }
        true
    }

    /// Job `id`'s directory (its output is `out/` in it) and its state.
    pub(super) fn output(&self, id: &str) -> Result<(PathBuf, JobState), JobError> {
        let state = self
            .jobs
            .lock()
            .ok()
            .and_then(|g| g.get(id).map(|j| j.record.state))
            .ok_or_else(|| JobError::NoSuchJob(id.to_string()))?;
        Ok((self.job_dir(id), state))
    }

    /// Opens `file` of job `id`'s output, without following a symlink (`job_files::open`);
    /// `need_done` for the sample and the funnel, which are only whole once the job is done.
    /// The report, the logs and the TimeMaps are served as they stand. Blocking: call it off
    /// the async workers.
    pub fn open_output(
        &self,
        id: &str,
        file: &Served,
        need_done: bool,
    ) -> Result<std::fs::File, JobError> {
        let (dir, state) = self.output(id)?;
        if need_done && state != JobState::Done {
            return Err(JobError::NotDone {
                id: id.to_string(),
                state,
            });
        }
        job_files::open(&dir, file).map_err(|e| refusal(id, file, state, e))
    }

    /// Ok when job `id` has finished, else why not (no such job, or its state).
    pub(super) fn done(&self, id: &str) -> Result<(), JobError> {
        let state = self
            .jobs
            .lock()
            .ok()
            .and_then(|g| g.get(id).map(|j| j.record.state))
            .ok_or_else(|| JobError::NoSuchJob(id.to_string()))?;
        if state != JobState::Done {
            return Err(JobError::NotDone {
                id: id.to_string(),
                state,
            });
        }
        Ok(())
    }
}
