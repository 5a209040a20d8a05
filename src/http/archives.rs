//! `GET /archives`: each configured archive's health and record since start, as JSON; and
//! `GET /about`: the same in MemGator's plain-text shape. What they say is built in
//! `crate::web::archives`; here is what this server holds now.

use super::json::JsonBody;
use super::SharedState;
use crate::upstream::Upstream;
use crate::web::archives::{about_text, reports, ArchiveReport, Observed};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The reports for this server now.
pub fn current(state: &SharedState) -> Vec<ArchiveReport> {
    let upstream: &Upstream = &state.upstream;
    let health = upstream.health();
    let loads = upstream.loads();
    let enabled = upstream.archives();
    let misses_decided = state.routing.misses_decided();
    let observed = |id: &str| {
        let i = enabled.iter().position(|a| &*a.id == id)?;
        Some(Observed {
            ledger: upstream.ledgers()[i].snapshot(),
            health: &health[i],
            profile_keys: state.routing.size(id).1,
            misses_decided,
            load: loads[i],
        })
    };
    reports(&state.archive_list, observed, upstream.now())
}

pub async fn archives(State(state): State<SharedState>) -> JsonBody<Vec<ArchiveReport>> {
    JsonBody(current(&state))
}

pub async fn about(State(state): State<SharedState>) -> Response {
    let text = about_text(
        &state.public_url,
        &current(&state),
        &state.upstream,
        !state.admin_separate,
    );
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}
