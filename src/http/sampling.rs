//! `/admin/sampling/jobs`: start, list, watch, cancel sampling jobs and read their sample and
//! funnel, and their report, logs and TimeMaps (`files/{name}`, `timemaps/{name}`: only the
//! names `sampling::job_files` lists, opened without following a symlink; anything else is a
//! 404). Every route wants the admin token (checked by `admin::require_admin`, the admin
//! group's route layer); a bad spec is a 400 naming the field. The jobs' refusals are the
//! sampling crate's `JobError`, given their statuses in `error.rs` like every other failure.

use super::admin::read_body;
use super::json::JsonBody;
use super::SharedState;
use crate::error::AppError;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use tmproxy_sampling::engine::Spec;
use tmproxy_sampling::job_files::{self, Served};
use tmproxy_sampling::jobs::{JobError, Jobs};

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/admin/sampling/jobs", get(list).post(submit))
        .route("/admin/sampling/jobs/{id}", get(status).delete(cancel))
        .route("/admin/sampling/jobs/{id}/sample", get(sample))
        .route("/admin/sampling/jobs/{id}/funnel", get(funnel))
        .route("/admin/sampling/jobs/{id}/feed", axum::routing::post(feed))
        .route("/admin/sampling/jobs/{id}/files/{name}", get(file))
        .route("/admin/sampling/jobs/{id}/timemaps/{name}", get(timemap))
}

/// A job id from the path. axum's own `Path` refuses an id that is not UTF-8 (`%80`) with its
/// own text; this sends that refusal through `error.rs` like every other 400.
struct JobId(String);

impl<S: Send + Sync> FromRequestParts<S> for JobId {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(id)| JobId(id))
            .map_err(|e| AppError::BadParameter(format!("job id: {}", e.body_text())))
    }
}

/// A job id and a file name from the path. A segment that is not UTF-8 (`%80`) names no file
/// the API serves: a 404 like any other unknown name.
struct JobFile(String, String);

impl<S: Send + Sync> FromRequestParts<S> for JobFile {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map(|Path((id, name))| JobFile(id, name))
            .map_err(|_| JobError::NoSuchFile("(not UTF-8)".into()).into())
    }
}

fn jobs(state: &SharedState) -> Result<&Arc<Jobs>, AppError> {
    state
        .jobs
        .as_ref()
        .ok_or(AppError::Sampling(JobError::Unavailable))
}

async fn submit(State(state): State<SharedState>, body: Body) -> Result<Response, AppError> {
    let jobs = jobs(&state)?;
    let body = read_body(body).await?;
    // serde_json names the unknown or missing field, or the one of the wrong type.
    let spec: Spec = serde_json::from_slice(&body).map_err(|e| JobError::BadSpec(e.to_string()))?;
    let spec = jobs.admit(spec).map_err(JobError::from)?;
    let now = crate::timemap::datetime::format_rfc3339(state.clock.now());
    let id = jobs.submit(spec, &now).map_err(AppError::Internal)?;
    Ok((StatusCode::CREATED, JsonBody(serde_json::json!({"id": id}))).into_response())
}

async fn list(State(state): State<SharedState>) -> Result<Response, AppError> {
    Ok(JsonBody(serde_json::json!({"jobs": jobs(&state)?.list()})).into_response())
}

async fn status(State(state): State<SharedState>, JobId(id): JobId) -> Result<Response, AppError> {
    let s = jobs(&state)?.status(&id).ok_or(JobError::NoSuchJob(id))?;
    Ok(JsonBody(s).into_response())
}

async fn cancel(State(state): State<SharedState>, JobId(id): JobId) -> Result<Response, AppError> {
    let jobs = jobs(&state)?;
    if !jobs.cancel(&id) {
        return Err(JobError::NoSuchJob(id).into());
    }
    let s = jobs.status(&id).ok_or(JobError::NoSuchJob(id))?;
    Ok(JsonBody(s).into_response())
}

/// Streams `file` of job `id`'s output; `need_done` for the sample and the funnel, which are
/// only whole once the job is done.
async fn output(
    state: &SharedState,
    id: String,
    file: Served,
    need_done: bool,
) -> Result<Response, AppError> {
    let jobs = jobs(state)?.clone();
    let content_type = file.content_type;
    // Opening walks the job's directory with openat(2): blocking, so off the async workers.
    let file = tokio::task::spawn_blocking(move || jobs.open_output(&id, &file, need_done))
        .await
        .map_err(|e| AppError::Internal(format!("opening a job file: {e}")))??;
    // Streamed: a sample or a TimeMap can be large.
    let body = Body::from_stream(tokio_util_stream(tokio::fs::File::from_std(file)));
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// A file as a stream of chunks.
fn tokio_util_stream(
    file: tokio::fs::File,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    use tokio::io::AsyncReadExt;
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

async fn sample(State(state): State<SharedState>, JobId(id): JobId) -> Result<Response, AppError> {
    output(&state, id, job_files::sample(), true).await
}

async fn funnel(State(state): State<SharedState>, JobId(id): JobId) -> Result<Response, AppError> {
    output(&state, id, job_files::funnel(), true).await
}

/// `report.md`, `set_aside.ndjson`, `errors.ndjson`, `retries.ndjson`, as they stand (a
/// running job's logs are still growing).
async fn file(
    State(state): State<SharedState>,
    JobFile(id, name): JobFile,
) -> Result<Response, AppError> {
    let file = job_files::job_file(&name).ok_or(JobError::NoSuchFile(name))?;
    output(&state, id, file, false).await
}

/// A file of the job's `out/timemaps/`: a TimeMap by its name, decoded from its pack as it is
/// sent (the client sees the plain NDJSON, whichever way the job stored it).
async fn timemap(
    State(state): State<SharedState>,
    JobFile(id, name): JobFile,
) -> Result<Response, AppError> {
    let file = job_files::timemap_file(&name).ok_or(JobError::NoSuchFile(name))?;
    let jobs = jobs(&state)?.clone();
    let content_type = file.content_type;
    // Finding the index line and checking the frame read files: off the async workers.
    let reader = tokio::task::spawn_blocking(move || jobs.open_timemap(&id, &file))
        .await
        .map_err(|e| AppError::Internal(format!("opening a TimeMap: {e}")))??;
    let body = Body::from_stream(blocking_stream(reader));
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// A blocking reader as a stream of chunks, read on a blocking thread two chunks ahead at most;
/// the thread ends when the reader does or the client goes.
fn blocking_stream(
    mut reader: Box<dyn std::io::Read + Send>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    tokio::task::spawn_blocking(move || loop {
        let mut buf = vec![0u8; 64 * 1024];
        let chunk = match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                Ok(Bytes::from(buf))
            }
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        if tx.blocking_send(chunk).is_err() || failed {
            return;
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}

/// `{"warm": true, "observe": "1d"}`: both optional (warm defaults to true, no observe = warm
/// only).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedRequest {
    #[serde(default = "yes")]
    warm: bool,
    #[serde(default)]
    observe: Option<String>,
}

fn yes() -> bool {
    true
}

async fn feed(
    State(state): State<SharedState>,
    JobId(id): JobId,
    body: Body,
) -> Result<Response, AppError> {
    let jobs = jobs(&state)?;
    let body = read_body(body).await?;
    let req: FeedRequest = if body.iter().all(u8::is_ascii_whitespace) {
        FeedRequest {
            warm: true,
            observe: None,
        }
    } else {
        serde_json::from_slice(&body).map_err(|e| JobError::BadSpec(e.to_string()))?
    };
    let observe_secs = match &req.observe {
        None => None,
        Some(text) => {
            let d = crate::config::parse_duration(text)
                .map_err(|e| JobError::BadSpec(format!("observe: {e}")))?;
            if d.as_secs() < 60 {
                return Err(JobError::BadSpec("observe: at least 1m between rounds".into()).into());
            }
            if !jobs.observing {
                return Err(JobError::BadSpec(
                    "observe: the server writes no observation log; set [observe] log".into(),
                )
                .into());
            }
            Some(d.as_secs())
        }
    };
    let fed = jobs.feed(&id, req.warm, observe_secs)?;
    Ok((StatusCode::ACCEPTED, JsonBody(fed)).into_response())
}
