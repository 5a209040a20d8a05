//! Sampling jobs run by the server: submitted over the admin API, persisted in the data
//! directory (`<dir>/<id>/spec.json`, `state.json`, `out/`), resumed after a restart from their
//! checkpoint (the engine's), cancellable. The HTTP boundary of a submitted job is enforced
//! here: `input` must be a file inside `[sampling] input_dir` (after resolving `..` and symlinks)
//! or a URL under an `allowed_urls` prefix, as must `cdx_api`; concurrency and rate are capped
//! by `[sampling]`, each cap named in the job's `warnings` and logged.

mod feed;
mod resume;

pub use feed::{Feed, Fetcher};

use super::engine::{progress, run_with, Limits, Progress, Spec, SpecError};
use crate::clock::Clock;
use crate::config::SamplingConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

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

struct Job {
    record: JobRecord,
    spec: Spec,
    /// As the run counts it, or as `out/progress.json` left it (a job the server has not run
    /// since it started: finished, or about to resume).
    progress: Arc<Progress>,
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
    limits: SamplingConfig,
    jobs: Mutex<BTreeMap<String, Job>>,
    next: Mutex<u64>,
    /// Set by [`Jobs::stop_all`]: running jobs stop at their next checkpoint and stay
    /// `running` on disk, so the next start resumes them.
    stopping: std::sync::atomic::AtomicBool,
    fetcher: Option<Fetcher>,
    clock: Arc<dyn Clock>,
    /// Requests per second to the aggregator while feeding (the `[sampling] rate_limit`).
    feed_rate: f64,
    feeds: Mutex<BTreeMap<String, Feed>>,
    /// Jobs whose feed task is running: a second feed of one is refused (409), not started.
    feeding: Mutex<std::collections::HashSet<String>>,
    /// Whether the server writes an observation log (`observe` needs one).
    pub observing: bool,
    /// The job and feed tasks, so a stopping server can wait for them to reach a checkpoint
    /// (finished ones are pruned as new ones start).
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Why a submission was refused (a 400 naming the field).
pub type Refused = SpecError;

fn refuse(field: &str, reason: impl Into<String>) -> Refused {
    SpecError {
        field: field.to_string(),
        reason: reason.into(),
    }
}

impl Jobs {
    /// Opens the jobs directory and restarts the jobs a stop interrupted (queued or running).
    pub fn open(
        dir: &Path,
        limits: SamplingConfig,
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

    fn job_dir(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Checks a submitted spec against the boundary (its budget is capped by `submit`, which
    /// says so in the job's `warnings`).
    pub fn admit(&self, mut spec: Spec) -> Result<Spec, Refused> {
        spec.validate()?;
        // What is checked is what is used: the URL as the client that will fetch it reads it.
        let allowed = |u: &str| {
            self.limits
                .allowed_urls
                .iter()
                .find_map(|p| under_prefix(u, p))
        };
        spec.cdx_api = allowed(&spec.cdx_api).ok_or_else(|| {
            refuse(
                "cdx_api",
                format!("{} is not under [sampling] allowed_urls", spec.cdx_api),
            )
        })?;
        if spec.input.contains("://") {
            spec.input = allowed(&spec.input).ok_or_else(|| {
                refuse(
                    "input",
                    format!("{} is not under [sampling] allowed_urls", spec.input),
                )
            })?;
        } else {
            let root = std::fs::canonicalize(&self.limits.input_dir).map_err(|e| {
                refuse(
                    "input",
                    format!("[sampling] input_dir {}: {e}", self.limits.input_dir),
                )
            })?;
            let given = Path::new(&spec.input);
            let candidate = if given.is_absolute() {
                given.to_path_buf()
            } else {
                root.join(given)
            };
            // Resolves `..` and symlinks: what is opened is what is checked.
            let real = std::fs::canonicalize(&candidate)
                .map_err(|e| refuse("input", format!("{}: {e}", spec.input)))?;
            if !real.starts_with(&root) || !real.is_file() {
                return Err(refuse(
                    "input",
                    format!("{} is not a file inside [sampling] input_dir", spec.input),
                ));
            }
            spec.input = real.display().to_string();
        }
        Ok(spec)
    }

    /// Caps the spec's budget by `[sampling]`; says what it changed (the job's `warnings`).
    fn cap(&self, spec: &mut Spec) -> Vec<String> {
        let mut warnings = Vec::new();
        if spec.concurrency > self.limits.concurrency {
            warnings.push(format!(
                "concurrency {} capped to {} by [sampling] concurrency",
                spec.concurrency, self.limits.concurrency
            ));
            spec.concurrency = self.limits.concurrency;
        }
        let cap = self.limits.rate_limit;
        if cap > 0.0 && (spec.rate_limit == 0.0 || spec.rate_limit > cap) {
            let asked = if spec.rate_limit == 0.0 {
                "unlimited".to_string()
            } else {
                format!("{}/s", spec.rate_limit)
            };
            warnings.push(format!(
                "rate_limit {asked} capped to {cap}/s by [sampling] rate_limit"
            ));
            spec.rate_limit = cap;
        }
        warnings
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

    fn save(&self, record: &JobRecord) -> Result<(), String> {
        write_json_atomically(&self.job_dir(&record.id).join("state.json"), record)
    }

    fn set_state(&self, id: &str, state: JobState, error: Option<String>) {
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
                job.record.finished_at =
                    Some(crate::timemap::datetime::format_rfc3339(self.clock.now()));
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

    fn start(self: Arc<Self>, id: &str) {
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
        let mut marker = resume::Marker {
            work_at_start: resume::work_done(&dir),
            ..resume::Marker::default()
        };
        resume::write_marker(&dir, &marker);
        let jobs = self.clone();
        jobs.track(tokio::spawn(async move {
            let limits = Limits::from(&self.limits);
            let run = run_with(&spec, &out, progress.clone(), limits);
            tokio::pin!(run);
            let mut tick = tokio::time::interval(resume::MARK_EVERY);
            let result = loop {
                tokio::select! {
                    r = &mut run => break r,
                    // Not once the server stops: its markers are cleared, a late tick must
                    // not put one back.
                    _ = tick.tick(), if !self.stopping.load(Ordering::Relaxed) => {
                        marker = resume::update_marker(&dir, marker, &progress)
                    }
                }
            };
            // The run ended by itself (done, failed, cancelled, stopped at a checkpoint): not a
            // death of the process.
            resume::clear_marker(&dir);
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

    fn track(&self, task: tokio::task::JoinHandle<()>) {
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
            resume::clear_marker(&self.job_dir(&id));
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

    /// Job `id`'s directory (its output is `out/` in it) and its state. The caller decides what
    /// the state allows: the sample and the funnel wait for `done`, the report, the logs and
    /// the TimeMaps are served as they stand (`sampling::job_files` opens them).
    pub fn output(&self, id: &str) -> Result<(PathBuf, JobState), JobError> {
        let state = self
            .jobs
            .lock()
            .ok()
            .and_then(|g| g.get(id).map(|j| j.record.state))
            .ok_or(JobError::NoSuchJob)?;
        Ok((self.job_dir(id), state))
    }

    /// Ok when job `id` has finished, else why not (no such job, or its state).
    pub(super) fn done(&self, id: &str) -> Result<(), JobError> {
        let state = self
            .jobs
            .lock()
            .ok()
            .and_then(|g| g.get(id).map(|j| j.record.state))
            .ok_or(JobError::NoSuchJob)?;
        if state != JobState::Done {
            return Err(JobError::NotDone(state));
        }
        Ok(())
    }
}

/// Writes, syncs, then renames: a kill or a power cut leaves the old file or the new one, never
/// half of one. (A job's state changes a few times in its life, so the fsyncs cost nothing.)
fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    use std::io::Write as _;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    written.map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    // The rename itself is durable once the directory is synced.
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot sync the job directory");
        }
    }
    Ok(())
}

/// A job request that cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    NoSuchJob,
    NotDone(JobState),
    /// A feed of the job is running (its state given): a second one is not started.
    FeedRunning(Feed),
}

/// `candidate` parsed, when it is under the allowed `prefix`: the same scheme, host and port, no
/// user info (`https://web.archive.org@evil.example/` names the host evil.example), and a path
/// that continues the prefix's at a segment boundary (`/cdx` admits `/cdx` and `/cdx/x`, not
/// `/cdx.evil`); dot segments are resolved first, as any client fetching it would. A prefix
/// with a query admits only URLs whose query starts with it.
pub fn under_prefix(candidate: &str, prefix: &str) -> Option<String> {
    let c = url::Url::parse(candidate.trim()).ok()?;
    let p = url::Url::parse(prefix.trim()).ok()?;
    let same_origin = matches!(c.scheme(), "http" | "https")
        && c.scheme() == p.scheme()
        && c.host() == p.host()
        && c.port_or_known_default() == p.port_or_known_default();
    if !same_origin || !c.username().is_empty() || c.password().is_some() {
        return None;
    }
    let (cp, pp) = (c.path(), p.path());
    let path_ok =
        cp == pp || (cp.starts_with(pp) && (pp.ends_with('/') || cp[pp.len()..].starts_with('/')));
    let query_ok = match p.query() {
        None => true,
        Some(q) => cp == pp && c.query().is_some_and(|cq| cq.starts_with(q)),
    };
    (path_ok && query_ok).then(|| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_prefix_holds_scheme_host_port_and_segment_boundaries() {
        let cdx = "https://web.archive.org/cdx/search/cdx";
        let ok = |u: &str, p: &str| under_prefix(u, p).is_some();
        assert!(ok(cdx, cdx));
        assert!(ok("https://web.archive.org/cdx/search/cdx?url=x", cdx));
        assert!(ok("https://web.archive.org/cdx/search/cdx/sub", cdx));
        assert!(ok("https://web.archive.org:443/cdx/search/cdx", cdx));
        for bad in [
            "https://web.archive.org/cdx/search/cdx.evil.example/x",
            "https://web.archive.org/cdx/search/cdxfoo",
            "https://web.archive.org@evil.example/cdx/search/cdx",
            "https://user:pw@web.archive.org/cdx/search/cdx",
            "https://web.archive.org.evil.example/cdx/search/cdx",
            "https://web.archive.org:8443/cdx/search/cdx",
            "http://web.archive.org/cdx/search/cdx",
            "https://web.archive.org/cdx/search/cdx/../../../web/",
            "https://web.archive.org/cdx/search/cdx/%2e%2e/%2e%2e/x",
            "http://127.0.0.1:9/cdx",
            "http://[::1]/",
            "http://localhost/",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(!ok(bad, cdx), "{bad}");
        }
        // An operator's prefix without a path: any path on that origin, still not another host.
        let origin = "https://web.archive.org";
        assert!(ok("https://web.archive.org/anything", origin));
        for bad in [
            "https://web.archive.org.evil.example/",
            "https://web.archive.org@evil.example/",
            "https://evil.example/?https://web.archive.org",
        ] {
            assert!(!ok(bad, origin), "{bad}");
        }
        // What is used is the resolved form.
        assert_eq!(
            under_prefix("https://web.archive.org/cdx/search/cdx/a/../b", cdx).as_deref(),
            Some("https://web.archive.org/cdx/search/cdx/b")
        );
    }

    #[tokio::test]
    async fn a_restarted_server_never_reuses_a_job_id() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spec: Spec = serde_json::from_str(
            r#"{"input": "/nonexistent/index", "cdx_api": "http://127.0.0.1:9/cdx", "dialect": "ia"}"#,
        )
        .expect("spec");
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::SystemClock);
        let open = || {
            Jobs::open(
                dir.path(),
                SamplingConfig::default(),
                None,
                clock.clone(),
                false,
            )
        };
        let jobs = open().expect("open");
        let first = jobs
            .submit(spec.clone(), "2026-01-01T00:00:00Z")
            .expect("submit");
        drop(jobs);
        // Same (simulated, standing) time after a restart: the counter starts over.
        let jobs = open().expect("reopen");
        let second = jobs.submit(spec, "2026-01-01T00:00:00Z").expect("submit");
        assert_ne!(first, second);
        assert!(dir.path().join(&first).join("spec.json").exists());
        assert!(dir.path().join(&second).join("spec.json").exists());
    }

    #[tokio::test]
    async fn finished_at_is_on_the_servers_clock() {
        let dir = tempfile::tempdir().expect("temp dir");
        // An input that cannot be read: the job fails at once, which finishes it.
        let spec: Spec = serde_json::from_str(
            r#"{"input": "/nonexistent/index", "cdx_api": "http://127.0.0.1:9/cdx", "dialect": "ia"}"#,
        )
        .expect("spec");
        // Far from the machine's time, so a reading of the machine's clock cannot pass.
        let then = chrono::DateTime::from_timestamp(1_335_830_400, 0).expect("valid"); // 2012-05-01
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::SimClock::new(then));
        let jobs =
            Jobs::open(dir.path(), SamplingConfig::default(), None, clock, false).expect("open");
        let id = jobs.submit(spec, "2012-05-01T00:00:00Z").expect("submit");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            let status = jobs.status(&id).expect("status");
            if status["state"] != "queued" && status["state"] != "running" {
                break status;
            }
            assert!(std::time::Instant::now() < deadline, "job never finished");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        assert_eq!(status["state"], "failed");
        assert_eq!(status["finished_at"], "2012-05-01T00:00:00Z");
        let on_disk: JobRecord = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(&id).join("state.json")).expect("state"),
        )
        .expect("record");
        assert_eq!(on_disk.finished_at.as_deref(), Some("2012-05-01T00:00:00Z"));
    }
}
