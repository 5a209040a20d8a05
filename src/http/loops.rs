//! The Memento routes refuse a request that went, or would go, round a loop of aggregators
//! (`crate::upstream::via`): a 508 before any archive is asked.

use super::gate::Gate;
use super::SharedState;
use crate::error::AppError;
use axum::extract::Request;
use axum::http::header::VIA;
use axum::response::{IntoResponse, Response};

/// A [`Gate`], not `axum::middleware::from_fn`: every request on these routes passes it, cache
/// hits included, and a passed request costs only the look at its `Via` headers.
#[derive(Clone)]
pub struct RefuseLoops(pub SharedState);

impl Gate for RefuseLoops {
    fn refuse(&self, req: &Request) -> Option<Response> {
        let via = req
            .headers()
            .get_all(VIA)
            .iter()
            .filter_map(|v| v.to_str().ok());
        let why = self.0.upstream.loops().refused(via)?;
        Some(AppError::LoopDetected(why).into_response())
    }
}
