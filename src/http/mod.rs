//! The public routes: what they read from a request, and the router with CORS and a request span
//! around them.

pub(crate) mod admin;
pub(crate) mod api;
pub(crate) mod archives;
#[cfg(test)]
mod captured_log;
mod choices;
pub mod client;
mod cors;
mod errors;
mod front;
pub(crate) mod gate;
mod headers;
pub(crate) mod json;
pub(crate) mod log;
mod lookup;
mod loops;
mod memento;
mod proxy;
pub(crate) mod rate;
mod router;
pub(crate) mod sampling;
mod state;
pub mod timegate;
pub(crate) mod timemap;
mod trace;
pub(crate) mod ui;

pub use cors::EXPOSED_HEADERS;
pub use front::{front, Front};
pub use headers::{
    answer, PREFERENCE_APPLIED, X_CACHE, X_CACHE_ACTION, X_CACHE_CASE, X_REQUEST_ID,
};
pub use lookup::{
    accept_datetime, cache_headers, check_found, freshness_headers, raw_after, read_lookup,
    serve_lookup, TimeMapRequest,
};
pub use router::{admin_router, router};
pub use state::{AppState, Cache, SharedState};
// The view the routes serve, under the path the tests, examples and benches know.
pub use crate::view;
