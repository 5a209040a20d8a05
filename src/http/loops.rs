//! The Memento routes refuse a request that went, or would go, round a loop of aggregators
//! (`crate::upstream::via`): a 508 before any archive is asked.

use super::SharedState;
use crate::error::AppError;
use axum::extract::{Request, State};
use axum::http::header::VIA;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn refuse_loops(State(state): State<SharedState>, req: Request, next: Next) -> Response {
    let via = req
        .headers()
        .get_all(VIA)
        .iter()
        .filter_map(|v| v.to_str().ok());
    match state.upstream.loops().refused(via) {
        Some(why) => AppError::LoopDetected(why).into_response(),
        None => next.run(req).await,
    }
}
