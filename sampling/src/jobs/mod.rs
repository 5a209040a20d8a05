//! Sampling jobs run by the server: submitted over the admin API, persisted in the data
//! directory (`<dir>/<id>/spec.json`, `state.json`, `out/`), resumed after a restart from their
//! checkpoint (the engine's), cancellable. The HTTP boundary of a submitted job is enforced
//! in `admit`: `input` must be a file inside `[sampling] input_dir` (after resolving `..` and symlinks)
//! or a URL under an `allowed_urls` prefix, as must `cdx_api`; concurrency and rate are capped
//! by `[sampling]`, each cap named in the job's `warnings` and logged.

mod admit;
mod bounds;
mod error;
mod feed;
mod feed_state;
mod marker;
mod record;
mod registry;
mod resume;
mod status;
#[cfg(test)]
mod tests;
mod timemap;

// A façade: the types the jobs' files share (bounds, record, feed state, marker) and the jobs
// themselves (registry) are files of their own, so no file imports the one that calls it.
pub use bounds::Bounds;
pub use error::JobError;
pub use feed_state::{Feed, Fetcher};
pub use record::{JobRecord, JobState};
pub use registry::Jobs;
